//! Durable state: the append-only event log operators tail, the state
//! database (projects, chats, pending approvals, dedupe ids, outbox; see
//! [`db`]), the atomic JSON files (the pairing lists, and `state.json`
//! before it is migrated) and where they live on disk (a 0700 directory of
//! 0600 files, see [`private`]).

#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

pub mod clock;
pub mod db;
pub mod dir_lock;
pub mod event_log;
pub mod ids;
pub mod log_event;
pub mod log_read;
pub mod private;
mod saved_card;
pub mod shared;
pub mod state;
pub mod state_file;
pub mod stream;

use std::path::PathBuf;

pub use event_log::{EventLog, EventRecord, LogError};
pub use log_event::{Denial, LogEvent};
pub use shared::SharedState;
pub use state::State;
pub use state_file::{StateError, StateFile};

/// The state directory: `$CLAWMUX_HOME`, else `~/.local/state/clawmux`.
pub fn state_dir() -> PathBuf {
    if let Some(home) = std::env::var_os("CLAWMUX_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(home);
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    home.join(".local/state/clawmux")
}
