//! tmux process I/O: spawn or attach a control client (`tmux -C`, locally or
//! behind a prefix such as `ssh host`), FIFO command correlation, argument
//! quoting, flow control (`%pause` resync) and a typed end, never a hang.

mod client;
mod command;
mod config;
mod error;
mod events;

pub use client::{Client, TEXT_ENTER_GAP, connect};
pub use command::{TmuxCommand, quote};
pub use config::{ClientConfig, DEFAULT_STARTUP_TIMEOUT, NewSession, Socket, Start};
pub use error::TmuxError;
pub use events::{ClientEvent, EVENT_CAPACITY, Subscription};
