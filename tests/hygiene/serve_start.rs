//! What `clawmux serve` (and `clawmux run`) does at start with a state
//! directory it cannot simply use: a database of a newer clawmux is
//! refused and left as it is; a database lost after the state of an
//! earlier version was migrated into it is not rebuilt from that state.

use std::path::Path;
use std::process::{Output, Stdio};

use clawmux::store::db::{self, StateDb};
use clawmux::store::ids::project;
use clawmux::store::state::{ChatTarget, Job, ProjectRecord, State};
use clawmux::store::{StateFile, log_read};
use sha1::{Digest, Sha1};

use super::serve_stop::serve_again;
use super::{clawmux, sim_home, wait_exit};
use crate::support::tmux::TmuxServer;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `clawmux <args>` on `home` with no input, waited for (killed if it
/// does not end in time: then `None`).
fn run_to_end(home: &Path, args: &[&str]) -> Option<Output> {
    let child = clawmux(home, args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("clawmux starts");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(super::WAIT) {
        Ok(out) => out.ok(),
        Err(_) => {
            // SAFETY: kill(2) on our own child, not reaped (its waiter
            // has not reported).
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            None
        }
    }
}

/// The SHA-1 of every file in `dir` whose name starts with `state.db`.
fn hashes(dir: &Path) -> Vec<(String, String)> {
    let mut all: Vec<(String, String)> = (std::fs::read_dir(dir).expect("state dir"))
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("state.db") && !name.ends_with("-shm"))
        .map(|name| {
            let bytes = std::fs::read(dir.join(&name)).expect("readable");
            (name, hex::encode(Sha1::digest(&bytes)))
        })
        .collect();
    all.sort();
    all
}

#[test]
fn a_database_of_a_newer_clawmux_is_refused_and_left_byte_for_byte() {
    let tmux = TmuxServer::new();
    let home = sim_home(&tmux);
    let mut state = State::default();
    state
        .projects
        .insert(project("shop"), ProjectRecord::default());
    let (mut made, _, _) = StateDb::open(home.path()).expect("a new database");
    made.save(&state).expect("saved");
    drop(made);
    let path = home.path().join(db::DB_FILE);
    let conn = rusqlite::Connection::open(&path).expect("opened");
    // One past this release's (1): what a newer clawmux writes.
    conn.pragma_update(None, "user_version", 2)
        .expect("a newer schema");
    drop(conn);
    let before = hashes(home.path());

    let serve = ["serve", "--console", "--agent", "sim"];
    let run = ["run", "--project", "shop", "--agent", "sim", "--", "hi"];
    for args in [&serve[..], &run[..]] {
        let out = run_to_end(home.path(), args).expect("it ends by itself");
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("has schema version 2, newer than the version 1 this clawmux reads"),
            "{args:?}: {err}"
        );
        assert!(err.contains("Run the newer clawmux again"), "{err}");
        assert!(
            !text(&out.stdout).contains("serving on the console"),
            "{}",
            text(&out.stdout)
        );
        assert_eq!(hashes(home.path()), before, "{args:?}: state.db changed");
    }
    assert!(!home.path().join("state.db.corrupt").exists());
}

/// The names of the state directory's files of an earlier version.
fn json_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = (std::fs::read_dir(dir).expect("state dir"))
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(db::JSON_FILE))
        .collect();
    names.sort();
    names
}

/// An earlier version's state with a command queued for `shop`.
fn queued_for_shop(home: &Path) -> State {
    let mut state = State::default();
    let workspace = home.join("ws/shop");
    state.projects.insert(
        project("shop"),
        ProjectRecord {
            workspace: workspace.display().to_string(),
            ..Default::default()
        },
    );
    let job = Job::new(
        &project("shop"),
        "echo once",
        ChatTarget::Console,
        None,
        60,
        0,
    );
    state.jobs.push(job);
    state
}

/// Migrated once, with its backups; the database removed afterwards: the
/// next start is empty and says why, never the old state again.
#[test]
fn a_state_file_and_its_backups_migrate_together_and_only_once() {
    let tmux = TmuxServer::new();
    let home = sim_home(&tmux);
    let state = queued_for_shop(home.path());
    let json = StateFile::new(home.path().join(db::JSON_FILE));
    // A save a minute: `.1` and `.2` are generations of their own.
    let bytes = serde_json::to_vec(&state).expect("JSON");
    for minute in 1..=3 {
        json.save_bytes(
            &bytes,
            minute * clawmux::store::state_file::BACKUP_INTERVAL_MS,
        )
        .expect("saved");
    }

    let served = serve_again(home, tmux);
    assert!(
        served.greeting.starts_with("Projects found: shop"),
        "{}",
        served.greeting
    );
    drop(served.stdin);
    wait_exit(served.child).expect("exits after end of input");
    let home = served.home;
    assert_eq!(
        json_files(home.path()),
        [
            "state.json.migrated",
            "state.json.migrated.1",
            "state.json.migrated.2"
        ]
    );

    for name in ["state.db", "state.db-wal", "state.db-shm"] {
        let _ = std::fs::remove_file(home.path().join(name));
    }
    let served = serve_again(home, served.tmux);
    assert!(
        served.greeting.starts_with("Type /gsd:help"),
        "{}",
        served.greeting
    );
    super::serve_stop::line_with(&served.stderr, "is missing, though an earlier start");
    drop(served.stdin);
    wait_exit(served.child).expect("exits after end of input");
}

/// What an earlier release's migration left (`state.json` renamed, its
/// backups not), then the database lost: the backup's queued command is
/// not brought back.
#[test]
fn a_lost_database_is_not_rebuilt_from_the_state_migrated_into_it() {
    let tmux = TmuxServer::new();
    let home = sim_home(&tmux);
    let state = queued_for_shop(home.path());
    let json = StateFile::new(home.path().join(db::JSON_FILE));
    json.save(&state).expect("saved");
    json.save(&state).expect("saved again: a backup");
    std::fs::rename(json.path(), home.path().join("state.json.migrated")).expect("renamed");
    assert!(home.path().join("state.json.1").exists());

    let served = serve_again(home, tmux);
    // Nothing of the old state: no project, so nothing typed.
    assert!(
        served.greeting.starts_with("Type /gsd:help"),
        "{}",
        served.greeting
    );
    let note = super::serve_stop::line_with(&served.stderr, "is missing, though an earlier start");
    assert!(note.contains("state.json.migrated"), "{note}");
    assert!(note.contains("starting with empty state"), "{note}");
    let log = log_read::read_all(served.home.path()).expect("event log reads");
    let missing = (log.records.iter()).find(|r| r.kind == "state_db_missing");
    let missing = missing.expect("the event log says so");
    assert!(
        (missing.field("db").unwrap_or_default()).ends_with("state.db"),
        "{missing:?}"
    );
    assert!(
        !log.records.iter().any(|r| r.kind == "state_migrated"),
        "migrated again"
    );
    drop(served.stdin);
    let status = wait_exit(served.child).expect("exits after end of input");
    assert_eq!(status.code(), Some(0), "{status:?}");
}
