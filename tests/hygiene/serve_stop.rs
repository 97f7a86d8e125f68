//! `clawmux serve --console` stops on SIGINT, SIGTERM and end of input,
//! while its stdin is held open and idle (a blocking read on it must not
//! keep the process alive).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::time::Instant;

use clawmux::store::log_read;

use super::{WAIT, clawmux, wait_exit};
use crate::support::tmux::TmuxServer;

pub(super) struct Served {
    pub(super) child: Child,
    /// Lines printed on stdout after the "serving" line.
    pub(super) stdout: std::sync::mpsc::Receiver<String>,
    /// Lines printed on stderr.
    pub(super) stderr: std::sync::mpsc::Receiver<String>,
    pub(super) stdin: Option<ChildStdin>,
    /// The line after "serving on the console": the greeting.
    pub(super) greeting: String,
    pub(super) home: tempfile::TempDir,
    pub(super) tmux: TmuxServer,
}

/// Every line `from` prints, as it comes.
pub(super) fn lines_of(
    from: impl std::io::Read + Send + 'static,
) -> std::sync::mpsc::Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(from).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

/// Starts `serve --console --agent sim` on a private tmux socket and waits
/// until it says it is serving (its signal handlers are in place by then).
pub(super) fn serve() -> Served {
    let tmux = TmuxServer::new();
    let home = super::sim_home(&tmux);
    serve_again(home, tmux)
}

/// [`serve`] on a state directory and tmux server used before.
pub(super) fn serve_again(home: tempfile::TempDir, tmux: TmuxServer) -> Served {
    serve_with(home, tmux, &[])
}

/// [`serve_again`] with these environment variables set.
pub(super) fn serve_with(
    home: tempfile::TempDir,
    tmux: TmuxServer,
    env: &[(&str, &str)],
) -> Served {
    let mut cmd = clawmux(home.path(), &["serve", "--console", "--agent", "sim"]);
    cmd.envs(env.iter().copied());
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("clawmux serve starts");
    let stdout = lines_of(child.stdout.take().expect("piped stdout"));
    let stderr = lines_of(child.stderr.take().expect("piped stderr"));
    loop {
        let line = stdout
            .recv_timeout(WAIT)
            .expect("serve printed that it is serving on the console");
        // In English or, under a Chinese locale, in Chinese.
        if line.starts_with("clawmux: serving on the console")
            || line.starts_with("clawmux：在控制台上服务")
        {
            break;
        }
    }
    let greeting = stdout.recv_timeout(WAIT).unwrap_or_default();
    let stdin = child.stdin.take();
    Served {
        child,
        stdout,
        stderr,
        stdin,
        greeting,
        home,
        tmux,
    }
}

/// Waits for a printed line holding `needle`; fails with what was printed.
pub(super) fn line_with(lines: &std::sync::mpsc::Receiver<String>, needle: &str) -> String {
    let mut seen = Vec::new();
    while let Ok(line) = lines.recv_timeout(WAIT) {
        if line.contains(needle) {
            return line;
        }
        seen.push(line);
    }
    panic!("no line with {needle:?} in:\n{}", seen.join("\n"));
}

fn stop_reason(home: &std::path::Path) -> Option<String> {
    log_read::read_all(home)
        .expect("event log reads")
        .records
        .iter()
        .rev()
        .find(|r| r.kind == "serve_stopped")
        .and_then(|r| r.field("reason").map(str::to_string))
}

fn stops_on_signal(signal: libc::c_int, name: &str) {
    let served = serve();
    let pid = served.child.id() as libc::pid_t;
    let started = Instant::now();
    // SAFETY: kill(2) on our own, not yet reaped child.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
    let status = wait_exit(served.child).unwrap_or_else(|| panic!("still running after {name}"));
    eprintln!("{name}: exited {status:?} after {:?}", started.elapsed());
    assert_eq!(status.code(), Some(0), "{name}: {status:?}");
    assert_eq!(stop_reason(served.home.path()).as_deref(), Some(name));
    // stdin was held open (and idle) the whole time.
    drop(served.stdin);
}

#[test]
fn sigint_stops_serve_with_stdin_open_and_idle() {
    stops_on_signal(libc::SIGINT, "SIGINT");
}

#[test]
fn sigterm_stops_serve_with_stdin_open_and_idle() {
    stops_on_signal(libc::SIGTERM, "SIGTERM");
}

#[test]
fn end_of_input_stops_serve_after_its_last_line() {
    let mut served = serve();
    let mut stdin = served.stdin.take().expect("piped stdin");
    // The last line holds a terminal escape: its card is printed escaped.
    stdin
        .write_all(b"/gsd:help\n/gsd:\x1b]2;title\x07x\n")
        .expect("lines written");
    drop(stdin);
    let status = wait_exit(served.child).expect("exits after end of input");
    assert_eq!(status.code(), Some(0), "{status:?}");
    let reason = stop_reason(served.home.path());
    // Ctrl-D, or a pipe that ended: said as such, never "finished".
    assert_eq!(reason.as_deref(), Some("end of input"));
    // Both lines were answered on the console before the process ended.
    // Every line up to the end of its stdout (the reader thread ends there).
    // (The greeting, which names /gsd:new-project too, was read already.)
    let mut printed = Vec::new();
    while let Ok(line) = served.stdout.recv_timeout(WAIT) {
        printed.push(line);
    }
    let printed = printed.join("\n");
    assert!(
        printed.contains("/gsd:new-project"),
        "the help card:\n{printed}"
    );
    assert!(
        printed.contains(r"/gsd:\x1b]2;title\x07x"),
        "the unknown-command card, escaped:\n{printed}"
    );
    assert!(!printed.contains('\x1b'), "{printed:?}");
    // The line read before the end was handled as a message.
    let log = log_read::read_all(served.home.path()).expect("event log reads");
    assert!(
        log.records
            .iter()
            .any(|r| r.fields.values().any(|v| v.as_str() == Some("/gsd:help"))),
        "{:?}",
        log.records.iter().map(|r| &r.kind).collect::<Vec<_>>()
    );
}

/// The stop names the agents' sessions that still run on the tmux server,
/// whatever the state says: one of a project the state lost (its row
/// unreadable, the database salvaged without it) is named, one whose
/// session was killed is not.
#[test]
fn the_stop_names_the_agent_sessions_that_really_run() {
    let tmux = TmuxServer::new();
    let home = super::sim_home(&tmux);
    for name in ["shop", "cart"] {
        let args = [
            "run",
            "--project",
            name,
            "--new",
            "--agent",
            "sim",
            "--",
            "hello",
        ];
        let out = clawmux(home.path(), &args).output().expect("clawmux run");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    tmux.ok(&["kill-session", "-t", "=cm-cart"]);
    let db = home.path().join("state.db");
    let conn = rusqlite::Connection::open(&db).expect("state.db opens");
    let changed = conn
        .execute("UPDATE projects SET v = 'not json' WHERE k = 'shop'", [])
        .expect("the row changed");
    assert_eq!(changed, 1);
    drop(conn);

    let mut served = serve_again(home, tmux);
    line_with(&served.stderr, "table projects");
    drop(served.stdin.take());
    let stopped = line_with(&served.stderr, "clawmux: stopped (end of input)");
    wait_exit(served.child).expect("exits after end of input");
    // What runs on the server now, as tmux lists it.
    let listed = served.tmux.ok(&["list-sessions", "-F", "#{session_name}"]);
    let running: Vec<&str> = listed.lines().filter(|s| s.starts_with("cm-")).collect();
    assert!(running.contains(&"cm-shop"), "{listed}");
    let named = stopped
        .split("(sessions ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .unwrap_or_else(|| panic!("no sessions named: {stopped}"));
    let mut named: Vec<&str> = named.split(", ").collect();
    named.sort_unstable();
    let mut running = running;
    running.sort_unstable();
    assert_eq!(named, running, "{stopped}");
}
