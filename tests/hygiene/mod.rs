//! Area `hygiene`: clean starts and stops of the real `clawmux serve`
//! binary, private state files, bounded memory on large logs, the event
//! log on a full disk, and commands whose reader went away.

mod closed_stdout;
mod config_place;
mod console;
mod inherited_fds;
mod layers;
mod private_state;
mod run_and_serve;
mod serve_start;
mod serve_stop;
mod tail_log;

use std::path::Path;
use std::process::{Child, Command, ExitStatus};
use std::sync::mpsc;
use std::time::Duration;

/// The binary under test.
const BIN: &str = env!("CARGO_BIN_EXE_clawmux");

/// How long a child may take to do what a test waits for before the test
/// fails (a failure bound, not a speed requirement).
const WAIT: Duration = Duration::from_secs(20);

/// `clawmux <args>` with its state in `home` and nothing of the caller's
/// environment (log filter, tmux pane, Feishu credentials, locale) leaking in.
fn clawmux(home: &Path, args: &[&str]) -> Command {
    clawmux_via(BIN, home, args)
}

/// A state directory whose config puts workspaces and the tmux server in
/// this test's own places.
fn sim_home(tmux: &crate::support::tmux::TmuxServer) -> tempfile::TempDir {
    let home = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "workspace_root = {:?}\n[tmux]\nsocket = {:?}\n",
            home.path().join("ws").display().to_string(),
            tmux.socket
        ),
    )
    .expect("config written");
    home
}

/// [`clawmux`] through another program (e.g. `sh` to set a umask first).
fn clawmux_via(program: &str, home: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .env("CLAWMUX_HOME", home)
        .env_remove("CLAWMUX_LOG")
        .env_remove("TMUX_PANE")
        .env_remove("TMUX")
        .env_remove("FEISHU_APP_ID")
        .env_remove("FEISHU_APP_SECRET")
        // English, as the tests read it, whatever the caller's locale.
        .env_remove("LC_ALL")
        .env_remove("LC_MESSAGES")
        .env("LANG", "C.UTF-8");
    cmd
}

/// Waits for `child` to exit, at most [`WAIT`]; `None` if it did not (the
/// child is then killed so the test leaves nothing behind).
fn wait_exit(mut child: Child) -> Option<ExitStatus> {
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    match rx.recv_timeout(WAIT) {
        Ok(status) => {
            let _ = waiter.join();
            status.ok()
        }
        Err(_) => {
            // SAFETY: kill(2) on the pid of our own child, which the waiter
            // thread has not reaped (it would have reported).
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            let _ = waiter.join();
            None
        }
    }
}
