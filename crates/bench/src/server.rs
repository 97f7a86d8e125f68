//! A private tmux server for one bench run: unique `-L` socket, no user
//! configuration, one session per pane (as the daemon has one session per
//! project), killed when dropped.

use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};

use super::BenchError;

static NEXT: AtomicU32 = AtomicU32::new(0);

/// A running tmux server.
pub struct BenchServer {
    pub socket: String,
    /// The server process (its own CPU is the work clients cause).
    pub pid: u32,
}

impl BenchServer {
    /// Starts a server with one detached `width` x `height` session per
    /// `(name, command)`.
    pub fn start(
        tag: &str,
        sessions: &[(String, String)],
        (width, height): (u16, u16),
    ) -> Result<Self, BenchError> {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let socket = format!("clawmux-bench-{}-{n}-{tag}", std::process::id());
        // Killed on drop even if start-up fails half-way.
        let mut server = BenchServer { socket, pid: 0 };
        let (w, h) = (width.to_string(), height.to_string());
        for (name, command) in sessions {
            server.ok(&["new-session", "-d", "-s", name, "-x", &w, "-y", &h, command])?;
        }
        let info = server.ok(&["display-message", "-p", "#{pid}"])?;
        server.pid = (info.trim())
            .parse()
            .map_err(|_| BenchError::Role(format!("tmux gave no server pid: {info:?}")))?;
        Ok(server)
    }

    /// Runs a tmux command on this server; its stdout, or why it failed.
    pub fn ok(&self, args: &[&str]) -> Result<String, BenchError> {
        let out = self.run(args)?;
        if !out.status.success() {
            return Err(BenchError::Tmux {
                args: args.join(" "),
                message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Presses Enter in every session's pane with one tmux command, so the
    /// writers start together.
    pub fn press_enter(&self, sessions: &[(String, String)]) -> Result<(), BenchError> {
        let targets: Vec<String> = sessions
            .iter()
            .map(|(name, _)| format!("={name}:"))
            .collect();
        let mut args = Vec::new();
        for target in &targets {
            if !args.is_empty() {
                args.push(";");
            }
            args.extend(["send-keys", "-t", target, "Enter"]);
        }
        self.ok(&args).map(drop)
    }

    fn run(&self, args: &[&str]) -> Result<Output, BenchError> {
        Command::new("tmux")
            .args(["-L", &self.socket, "-f", "/dev/null"])
            .args(args)
            .env("LANG", "C.UTF-8")
            .output()
            .map_err(|e| BenchError::io("running tmux (is it installed?)", e))
    }
}

impl Drop for BenchServer {
    fn drop(&mut self) {
        clawmux::tmux::kill_server(&self.socket);
    }
}
