//! `clawmux run` and `clawmux serve` on one state directory: a run goes
//! through the `serve` that runs (its `run.sock`), or, with none, owns the
//! state directory for its time; either way the projects and prompts it
//! leaves are `serve`'s, and one waits for the other, never both at once.

use std::io::Write;
use std::path::Path;
use std::process::{Output, Stdio};

use clawmux::store::dir_lock::StateLock;

use super::serve_stop::{line_with, lines_of, serve, serve_again};
use super::{WAIT, clawmux, sim_home, wait_exit};
use crate::support::tmux::TmuxServer;

/// `clawmux run --project shop --agent sim <args>` on `home`.
fn run(home: &Path, args: &[&str]) -> Output {
    let mut all = vec!["run", "--project", "shop", "--agent", "sim"];
    all.extend_from_slice(args);
    clawmux(home, &all).output().expect("clawmux run")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The event log's records of `kind`, as `clawmux tail` prints them.
fn tail(home: &Path, kind: &str) -> String {
    let out = clawmux(home, &["tail", "--json", "--kind", kind])
        .output()
        .expect("clawmux tail");
    text(&out.stdout)
}

#[test]
fn a_run_goes_through_the_serve_that_runs_and_leaves_it_the_project_and_the_prompt() {
    let mut served = serve();
    let home = served.home.path().to_path_buf();
    let mut stdin = served.stdin.take().expect("piped stdin");

    let out = run(&home, &["--", "/gsd:plan-phase 2"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("[1] Yes"),
        "{}",
        text(&out.stdout)
    );
    // Taken by serve at once: it never waited for the state directory.
    assert!(
        !text(&out.stderr).contains("another clawmux"),
        "{}",
        text(&out.stderr)
    );

    // serve's chat sees the project and its prompt; the run's cards were
    // not printed on serve's console (the run had its outcome).
    writeln!(stdin, "/gsd:projects").unwrap();
    let mut before = Vec::new();
    loop {
        let line = (served.stdout.recv_timeout(WAIT)).expect("the projects card");
        if line.contains("== Projects ==") {
            break;
        }
        before.push(line);
    }
    line_with(&served.stdout, "shop");
    assert!(
        !(before.iter()).any(|l| l.contains("plan-phase") || l.contains("Approval needed")),
        "{before:#?}"
    );
    writeln!(stdin, "/gsd:inbox").unwrap();
    line_with(&served.stdout, "Inbox: 1 waiting");
    line_with(&served.stdout, "1. shop** · permission");

    let out = run(&home, &["--answer", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("Created 2 plans for phase 2"),
        "{}",
        text(&out.stdout)
    );
    // The core logged the run's command as a chat's (with its job), its
    // prompt once, and its answer by `run`.
    let commands = tail(&home, "command");
    assert!(
        commands.contains("\"sender\":\"run\"") && commands.contains("\"job\":\""),
        "{commands}"
    );
    assert_eq!(tail(&home, "approval").lines().count(), 1);
    assert!(tail(&home, "approval_answered").contains("\"by\":\"run\""));

    drop(stdin);
    let status = wait_exit(served.child).expect("serve exits after end of input");
    assert_eq!(status.code(), Some(0), "{status:?}");
}

#[test]
fn a_project_and_prompt_a_run_left_are_the_next_serves() {
    let tmux = TmuxServer::new();
    let home = sim_home(&tmux);
    let out = run(home.path(), &["--", "/gsd:plan-phase 2"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("[1] Yes"),
        "{}",
        text(&out.stdout)
    );

    let mut served = serve_again(home, tmux);
    assert!(
        served.greeting.contains("Projects found: shop"),
        "{}",
        served.greeting
    );
    let mut stdin = served.stdin.take().expect("piped stdin");
    writeln!(stdin, "/gsd:inbox").unwrap();
    let yes = line_with(&served.stdout, "[1] Yes · /press ");
    let press = yes.rsplit("/press ").next().unwrap_or_default().trim();
    writeln!(stdin, "/press {press}").unwrap();
    line_with(&served.stdout, "Plans verified [3/3]");
    drop(stdin);
    wait_exit(served.child).expect("exits after end of input");
}

/// A run compiles only its own agent's profile: a bad pattern there is
/// bad input (nothing is started), one in a profile it does not use is
/// not its business.
#[test]
fn a_run_refuses_a_bad_pattern_in_its_own_profile_only() {
    let tmux = TmuxServer::new();
    let home = sim_home(&tmux);
    let profiles = home.path().join("profiles.toml");
    let config = home.path().join("config.toml");
    let mut text_of_config = std::fs::read_to_string(&config).unwrap();
    text_of_config.push_str(&format!("[agent]\nprofiles_file = {profiles:?}\n"));
    std::fs::write(&config, text_of_config).unwrap();

    // The sim agent is read with the `gsd` profile.
    std::fs::write(&profiles, "[profiles.gsd]\nbusy = ['(oops']\n").unwrap();
    let out = run(home.path(), &["--", "hello"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("profile \"gsd\", busy: bad pattern \"(oops\""),
        "{}",
        text(&out.stderr)
    );
    assert!(
        !tmux
            .run(&["has-session", "-t", "=cm-shop"])
            .status
            .success()
    );

    std::fs::write(&profiles, "[profiles.aider]\nbusy = ['(oops']\n").unwrap();
    let out = run(home.path(), &["--", "hello"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        tmux.run(&["has-session", "-t", "=cm-shop"])
            .status
            .success()
    );
}

/// One owner at a time: a run and a serve started while the state
/// directory is someone else's wait for it, say so, and then both work.
#[test]
fn a_run_and_a_serve_wait_for_the_state_directorys_owner() {
    let tmux = TmuxServer::new();
    let home = sim_home(&tmux);
    let owner = StateLock::try_take(home.path())
        .expect("lock file")
        .expect("no one owns a new state directory");

    let mut run = clawmux(
        home.path(),
        &["run", "--project", "shop", "--agent", "sim", "--", "hello"],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("clawmux run");
    let run_err = lines_of(run.stderr.take().expect("piped stderr"));
    line_with(&run_err, "another clawmux is using the state directory");
    let mut serve = clawmux(home.path(), &["serve", "--console", "--agent", "sim"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("clawmux serve");
    let serve_out = lines_of(serve.stdout.take().expect("piped stdout"));
    let serve_err = lines_of(serve.stderr.take().expect("piped stderr"));
    line_with(&serve_err, "a clawmux run is using the state directory");

    // Let go: the run runs (by itself, or through the serve that took the
    // directory first), and the serve serves.
    drop(owner);
    let run_out = lines_of(run.stdout.take().expect("piped stdout"));
    line_with(&run_out, "You said: hello");
    let status = wait_exit(run).expect("the run ends");
    assert_eq!(status.code(), Some(0), "{status:?}");
    line_with(&serve_out, "clawmux: serving on the console");
    drop(serve.stdin.take());
    let status = wait_exit(serve).expect("serve exits after end of input");
    assert_eq!(status.code(), Some(0), "{status:?}");
}

/// A serve whose run socket was removed still owns the state directory: a
/// second serve says which process holds it and what to do, and ends,
/// instead of waiting for it forever.
#[test]
fn a_second_serve_refuses_a_serve_whose_run_socket_is_gone_and_names_it() {
    let mut served = serve();
    let home = served.home.path().to_path_buf();
    let first = served.child.id();
    // A line answered: the daemon runs, so it listens on its run socket.
    let mut stdin = served.stdin.take().expect("piped stdin");
    writeln!(stdin, "/gsd:help").unwrap();
    line_with(&served.stdout, "/gsd:new-project");
    std::fs::remove_file(home.join("run.sock")).expect("the run socket was there");

    let mut second = clawmux(&home, &["serve", "--console", "--agent", "sim"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("clawmux serve");
    let mut second_err = second.stderr.take().expect("piped stderr");
    let status = wait_exit(second).expect("the second serve ends by itself");
    let mut err = String::new();
    std::io::Read::read_to_string(&mut second_err, &mut err).expect("its stderr");
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("another clawmux serve (pid {first})")),
        "{err}"
    );
    assert!(err.contains("run.sock does not answer"), "{err}");
    assert!(err.contains(&format!("`kill {first}`")), "{err}");
    assert!(!err.contains("serving once it ends"), "{err}");

    // A run does not wait for it for ever either: it says the same.
    let run = clawmux(
        &home,
        &["run", "--project", "shop", "--agent", "sim", "--", "hi"],
    )
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("clawmux run");
    let out = run.wait_with_output().expect("the run ends by itself");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("`kill {first}`")), "{err}");

    // The first serve is untouched and still stops cleanly.
    drop(stdin);
    let status = wait_exit(served.child).expect("serve exits after end of input");
    assert_eq!(status.code(), Some(0), "{status:?}");
}
