//! A real tmux server on a unique `-L` socket, killed (and its socket file
//! removed) when dropped.

use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

static NEXT: AtomicU32 = AtomicU32::new(0);

/// A private tmux server for one test. The server starts with the first
/// session a test creates and is killed (with its panes) on drop.
pub struct TmuxServer {
    pub socket: String,
}

impl Default for TmuxServer {
    fn default() -> Self {
        Self::new()
    }
}

impl TmuxServer {
    pub fn new() -> Self {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let socket = format!("clawmux-test-{}-{}", std::process::id(), n);
        TmuxServer { socket }
    }

    /// Runs `tmux -L <socket> -f /dev/null <args>` and returns its output.
    pub fn run(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .args(["-L", &self.socket, "-f", "/dev/null"])
            .args(args)
            .env("LANG", "C.UTF-8")
            .output()
            .expect("tmux is installed (see .ci/run)")
    }

    /// Runs a tmux command that must succeed and returns its stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "tmux {:?} failed: {}",
            args,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Starts a detached session running `command` in a fixed-size window.
    pub fn new_session(&self, name: &str, command: &str) {
        self.ok(&[
            "new-session",
            "-d",
            "-s",
            name,
            "-x",
            "120",
            "-y",
            "40",
            command,
        ]);
    }

    /// What the pane shows now (`capture-pane -p`).
    pub fn capture(&self, target: &str) -> String {
        self.ok(&["capture-pane", "-p", "-t", target])
    }

    /// Waits until `capture-pane` of `target` contains `needle`, or panics
    /// with the last screen after `timeout`.
    pub fn wait_for_screen(&self, target: &str, needle: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let screen = self.capture(target);
            if screen.contains(needle) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {needle:?} in {target}; screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until the screen of `target` has been still for `still` (at
    /// most `timeout`), as a person waits before answering a dialog:
    /// Claude Code 2.1.332 drops keys sent within ~0.2 s of drawing one.
    pub fn wait_still(&self, target: &str, still: Duration, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        let mut screen = self.capture(target);
        let mut still_since = Instant::now();
        while still_since.elapsed() < still && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
            let now = self.capture(target);
            if now != screen {
                screen = now;
                still_since = Instant::now();
            }
        }
    }
}

impl Drop for TmuxServer {
    fn drop(&mut self) {
        clawmux::tmux::kill_server(&self.socket);
    }
}
