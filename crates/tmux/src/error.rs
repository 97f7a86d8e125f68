//! Why a tmux command or the whole client failed.

use bytes::Bytes;

use clawmux_control::{PaneId, WindowId};

/// A failure talking to tmux. `Clone` so the end of a client can be told to
/// every subscriber and every waiting command.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TmuxError {
    #[error("could not start `{program}`: {reason}")]
    Spawn { program: String, reason: String },
    #[error("tmux did not finish start-up within {seconds} s")]
    StartupTimeout { seconds: u64 },
    #[error("tmux refused to start the control client: {message}")]
    Startup { message: String },
    #[error("command refused before sending ({why}): {command}")]
    InvalidCommand { command: String, why: String },
    #[error("tmux command failed: {message}")]
    Command { command: String, message: String },
    #[error("tmux ended the control client (%exit{})", reason.as_deref().map(|r| format!(" {r}")).unwrap_or_default())]
    Exited { reason: Option<String> },
    #[error("the tmux process ended without %exit ({status}){}", if stderr.is_empty() { String::new() } else { format!(": {stderr}") })]
    ProcessDied { status: String, stderr: String },
    #[error("I/O error talking to tmux: {0}")]
    Io(String),
    /// The pane's window closed (its program exited, or it was killed);
    /// the client goes on.
    #[error("pane {pane} is gone: its window {window} closed")]
    PaneClosed { pane: PaneId, window: WindowId },
    /// The pane under the attached id is not the one attached: another
    /// program runs in it (`respawn-pane`) or it moved to another window.
    /// Nothing is sent to it.
    #[error("pane {pane} is not the one attached: {why}")]
    PaneReplaced { pane: PaneId, why: String },
}

impl TmuxError {
    /// A failed reply, with tmux's own message (its reply lines).
    pub(crate) fn command(command: &str, lines: &[Bytes]) -> Self {
        let message = lines
            .iter()
            .map(|l| String::from_utf8_lossy(l))
            .collect::<Vec<_>>()
            .join("; ");
        TmuxError::Command {
            command: command.to_string(),
            message,
        }
    }

    /// Whether the client is gone (as opposed to one command failing).
    pub fn is_client_end(&self) -> bool {
        matches!(
            self,
            TmuxError::Exited { .. } | TmuxError::ProcessDied { .. } | TmuxError::Io(_)
        )
    }
}
