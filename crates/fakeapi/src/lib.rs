//! A scriptable stand-in for the model APIs on 127.0.0.1, so the real
//! coding agents run offline: Anthropic's Messages API (Claude Code),
//! OpenAI's Responses API (Codex, [`responses`](crate)), Gemini's API
//! (Gemini CLI) and OpenAI's Chat Completions (Aider, OpenCode), on one
//! server answering one script ([`FakeApi`], [`Turn`]). Like the real APIs
//! it streams every answer in small pieces with each protocol's own event
//! framing ([`stream`]). The product uses it on purpose (`clawmux doctor
//! --agent` checks the installed agent against it); the tests drive every
//! agent with it.
//!
//! - `fake_api`: the server, the script, the recorded requests, Anthropic's
//!   SSE encoding.
//! - [`stream`]: how an answer is cut into pieces and paced.
//! - `responses`, `chat`, `gemini`: the other protocols' encodings.

#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

mod chat;
mod fake_api;
mod gemini;
mod responses;
pub mod stream;
mod turn;

pub use fake_api::{
    FakeApi, MAX_RECORDED_REQUESTS, MAX_REQUEST_BYTES, PLAN_FILE_PLACEHOLDER, Protocol, Request,
    error_type,
};
pub use stream::Streaming;
pub use turn::{SIDE_ANSWER, ToolUse, Turn};

/// The fake API could not start: `action` on `what` failed.
#[derive(Debug, thiserror::Error)]
#[error("cannot {action} {what}: {source}")]
pub struct FakeApiError {
    action: &'static str,
    what: String,
    #[source]
    source: std::io::Error,
}

impl FakeApiError {
    fn io(action: &'static str, what: &str, source: std::io::Error) -> FakeApiError {
        FakeApiError {
            action,
            what: what.to_owned(),
            source,
        }
    }
}
