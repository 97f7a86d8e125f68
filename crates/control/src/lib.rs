//! tmux control-mode protocol, sans-IO: bytes in, typed events out.
//!
//! Two layers, as tmux writes them: [`Framer`] cuts the byte stream into
//! bounded lines, [`parse_line`] turns one whole line into a [`Notification`]
//! (nom, private to this module), and [`Decoder`] joins the two and assembles
//! `%begin`…`%end` reply blocks. `%output` data is unescaped exactly, as bytes
//! ([`unescape()`]): a pane's program may write anything, UTF-8 or not.
//! [`recording`] reads and writes timed recordings (`clawmux record`).

#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

mod decoder;
mod framer;
mod ids;
mod parse;
pub mod recording;
mod unescape;

pub use decoder::{
    Counters, Decoder, Event, MAX_REPLY_BYTES, MAX_REPLY_LINES, REPLY_LINE_OVERHEAD_BYTES, Reply,
};
pub use framer::{Frame, Framer, MAX_LINE_BYTES};
pub use ids::{IdError, PaneId, SessionId, WindowId};
pub use parse::{Guard, Notification, ParseError, parse_line};
pub use unescape::{escape, unescape};
