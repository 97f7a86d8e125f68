//! Claude Code hooks as a second, exact signal next to the pane stream.
//!
//! Claude Code runs `clawmux hook` for `Stop`, `StopFailure`, `Notification`,
//! `PermissionRequest`, `SessionStart`, `TaskCreated` and `TaskCompleted`
//! (see [`settings`] for the
//! `.claude/settings.json` entries). The command wraps the JSON payload it gets
//! on stdin in a one-line [`Envelope`] (adding the pane from `TMUX_PANE`, the
//! project's [`token`] from its environment, and a timestamp) and [`forward`]s it over a Unix socket in the state directory
//! ([`clawmux_store::state_dir`]); the daemon's [`HookListener`] turns each
//! line into a typed [`HookEvent`].
//! The hook side never waits on the daemon: a short connect timeout, and a
//! daemon that is down is simply not told. A `Stop` hook's transcript
//! gives the turn's token figures ([`usage`]); it and the agents' other
//! records are read only as regular files that cannot hold the reader up
//! ([`record_file`]).
//!
//! Codex's hooks (`hooks.json`) and Gemini CLI's (`settings.json`) take
//! Claude Code's shape and reach the same command ([`settings`] writes
//! them too); Codex's `notify` program and Aider's notifications command
//! run `clawmux hook --from …` ([`notify`]).
//! OpenCode's events come the same way from a plugin clawmux writes
//! ([`opencode`]).

#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

mod event;
mod forward;
mod kind;
mod listener;
pub mod notify;
pub mod opencode;
pub mod record_file;
pub mod settings;
pub mod token;
mod tool;
pub mod usage;

use std::path::{Path, PathBuf};

pub use event::{Envelope, HookEvent, MAX_LINE_BYTES, MAX_PAYLOAD_BYTES, decode_line};
pub use forward::{CONNECT_TIMEOUT, forward};
pub use kind::{HookKind, HookSignal};
pub use listener::{EVENT_QUEUE, HookListener, MAX_CONNECTIONS, READ_TIMEOUT};
pub use tool::{MAX_OPTIONS, MAX_QUESTIONS, Question, QuestionOption, ToolRequest};

/// File name of the hook socket inside the state directory.
pub const SOCKET_NAME: &str = "hooks.sock";

/// Longest socket path the kernel accepts: `sun_path` is 108 bytes on Linux,
/// including the terminating NUL.
pub const MAX_SOCKET_PATH_BYTES: usize = 107;

/// What can go wrong between `clawmux hook` and the daemon.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    #[error(
        "hook socket path {path} is {len} bytes, longer than the {MAX_SOCKET_PATH_BYTES} a Unix socket allows; set CLAWMUX_HOME to a shorter directory"
    )]
    SocketPathTooLong { path: PathBuf, len: usize },
    #[error("another clawmux daemon is already listening on {0}")]
    InUse(PathBuf),
    #[error("{0} exists and is not a socket; move it away so clawmux can listen there")]
    NotASocket(PathBuf),
    #[error("invalid hook payload: {0}")]
    Payload(String),
    #[error("{path}: {reason}")]
    Settings { path: PathBuf, reason: String },
    #[error("{path}: {source}")]
    Shape {
        path: PathBuf,
        #[source]
        source: settings::ShapeError,
    },
    #[error("cannot {action} {path}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl HookError {
    fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> HookError {
        let path = path.to_path_buf();
        move |source| HookError::Io {
            action,
            path,
            source,
        }
    }
}

/// The hook socket in `state_dir`, checked against the `sun_path` limit.
pub fn socket_path(state_dir: &Path) -> Result<PathBuf, HookError> {
    let path = state_dir.join(SOCKET_NAME);
    let len = path.as_os_str().len();
    if len > MAX_SOCKET_PATH_BYTES {
        return Err(HookError::SocketPathTooLong { path, len });
    }
    Ok(path)
}
