//! Outside text (chat messages, pane output, names) made safe to pass on:
//! as shell words for `sh` ([`shell`], by the `shlex` crate) and as text
//! for an operator's terminal ([`text_escape`], control characters made
//! visible).

#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

pub mod shell;
pub mod text_escape;
