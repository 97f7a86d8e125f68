//! A real tmux server running a program in a pane, watched through a real
//! `tmux -C attach` control client: detections arrive as the program draws.

use std::io::Read;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use clawmux::detect::{Detection, DetectionKind, DetectorConfig, Millis, Profiles, StreamWatcher};

use crate::support::tmux::TmuxServer;

/// Window size of the test session (as `TmuxServer::new_session` makes it).
const SIZE: (u16, u16) = (120, 40);
/// How long a test waits for one expected detection before failing.
pub const WAIT: Duration = Duration::from_secs(20);

/// The `clawmux` binary under test.
pub fn clawmux() -> &'static str {
    env!("CARGO_BIN_EXE_clawmux")
}

/// A tmux pane running `command`, watched with a profile.
pub struct Live {
    pub tmux: TmuxServer,
    client: Child,
    _stdin: ChildStdin,
    rx: Receiver<(Instant, Vec<u8>)>,
    watcher: StreamWatcher,
    start: Instant,
    /// Every detection so far, in order.
    pub seen: Vec<Detection>,
}

impl Live {
    /// Starts `command` in session `a` once a control client is attached,
    /// so no output is missed.
    pub fn start(command: &str, profile: &str) -> Live {
        let tmux = TmuxServer::new();
        // The pane waits for our signal: the control client attaches first.
        let gated = format!("tmux wait-for go; exec {command}");
        tmux.new_session("a", &gated);
        let mut client = Command::new("tmux")
            .args([
                "-L",
                &tmux.socket,
                "-f",
                "/dev/null",
                "-C",
                "attach",
                "-t",
                "a",
            ])
            .env("LANG", "C.UTF-8")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("tmux -C attach starts");
        let stdin = client.stdin.take().expect("piped stdin");
        let mut stdout = client.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 || tx.send((Instant::now(), buf[..n].to_vec())).is_err() {
                    break;
                }
            }
        });
        let profile = Profiles::defaults().unwrap().get(profile).unwrap();
        let mut live = Live {
            tmux,
            client,
            _stdin: stdin,
            rx,
            watcher: StreamWatcher::new(profile, DetectorConfig::default(), SIZE),
            start: Instant::now(),
            seen: Vec::new(),
        };
        live.wait_attached();
        live.tmux.ok(&["wait-for", "-S", "go"]);
        live
    }

    /// Starts `clawmux sim-agent` (fast) with optional extra arguments.
    pub fn sim(args: &str, profile: &str) -> Live {
        Live::start(
            &format!("{} sim-agent --speed 4 {args}", clawmux()),
            profile,
        )
    }

    fn wait_attached(&mut self) {
        let deadline = Instant::now() + WAIT;
        let mut got = Vec::new();
        while !got.windows(17).any(|w| w == b"%session-changed ") {
            let left = deadline.saturating_duration_since(Instant::now());
            let (at, bytes) = self.rx.recv_timeout(left).expect("control client attaches");
            got.extend_from_slice(&bytes);
            let now = self.millis(at);
            self.watcher.feed(now, &bytes, &mut |d| self.seen.push(d));
        }
    }

    fn millis(&self, at: Instant) -> Millis {
        Millis(at.saturating_duration_since(self.start).as_millis() as u64)
    }

    /// Types `text` literally into the pane, then Enter.
    pub fn type_line(&self, text: &str) {
        self.tmux.ok(&["send-keys", "-t", "a", "-l", text]);
        self.tmux.ok(&["send-keys", "-t", "a", "Enter"]);
    }

    /// Presses one key (`1`, `Escape`, …).
    pub fn key(&self, key: &str) {
        self.tmux.ok(&["send-keys", "-t", "a", key]);
    }

    /// Processes output and deadlines until a detection satisfies `pred`;
    /// returns it. Panics with everything seen after [`WAIT`].
    pub fn wait_for(&mut self, what: &str, pred: impl Fn(&Detection) -> bool) -> Detection {
        let deadline = Instant::now() + WAIT;
        let mut checked = self.seen.len();
        loop {
            if let Some(d) = self.seen[checked..].iter().find(|d| pred(d)) {
                return d.clone();
            }
            checked = self.seen.len();
            let now = Instant::now();
            assert!(
                now < deadline,
                "timed out waiting for {what}; seen: {:#?}\nscreen:\n{}",
                self.seen,
                self.tmux.capture("a")
            );
            let mut wait = deadline - now;
            if let Some(due) = self.watcher.next_deadline() {
                let due = self.start + Duration::from_millis(due.0);
                wait = wait.min(due.saturating_duration_since(now));
            }
            match self.rx.recv_timeout(wait) {
                Ok((at, bytes)) => {
                    let now = self.millis(at);
                    self.watcher.feed(now, &bytes, &mut |d| self.seen.push(d));
                }
                Err(RecvTimeoutError::Timeout) => {
                    let now = self.millis(Instant::now());
                    self.watcher.tick(now, &mut |d| self.seen.push(d));
                }
                Err(RecvTimeoutError::Disconnected) => panic!(
                    "control client ended while waiting for {what}; seen: {:#?}",
                    self.seen
                ),
            }
        }
    }

    /// Waits for the turn to complete; returns the completion.
    pub fn completed(&mut self) -> Detection {
        self.wait_for("completed", |d| d.kind == DetectionKind::Completed)
    }

    /// The detections seen so far that are approvals.
    pub fn approvals(&self) -> Vec<&Detection> {
        self.seen
            .iter()
            .filter(|d| matches!(d.kind, DetectionKind::Approval { .. }))
            .collect()
    }

    /// The detections seen so far that are errors.
    pub fn errors(&self) -> Vec<&Detection> {
        self.seen
            .iter()
            .filter(|d| matches!(d.kind, DetectionKind::Error { .. }))
            .collect()
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        let _ = self.client.kill();
        let _ = self.client.wait();
    }
}
