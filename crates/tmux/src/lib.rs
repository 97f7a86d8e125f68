//! tmux process I/O: spawn or attach a control client (`tmux -C`, locally or
//! behind a prefix such as `ssh host`), FIFO command correlation, argument
//! quoting, flow control (`%pause` resync, the flood guard) and a typed end,
//! never a hang; and one short command on a host ([`one_shot`]) within a
//! time and an output bound.

#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

mod client;
mod command;
mod config;
mod error;
mod events;
mod flood;
pub mod one_shot;
mod teardown;

pub use client::{Client, TEXT_ENTER_GAP, connect};
pub use command::{TmuxCommand, quote};
pub use config::{ClientConfig, DEFAULT_STARTUP_TIMEOUT, NewSession, Socket, Start};
pub use error::TmuxError;
pub use events::{ClientEvent, EVENT_CAPACITY, Subscription};
pub use flood::FloodLimits;
pub use teardown::kill_server;
