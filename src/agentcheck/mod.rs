//! The real Claude Code, offline, as a test subject: the fake model API
//! (crate `clawmux-fakeapi`, re-exported here), the throwaway environment that
//! points `claude` at it ([`ClaudeEnv`]), and the drift self-test behind
//! `clawmux doctor --agent` ([`selftest`]), which runs the installed `claude`
//! in a private tmux server and says, per signal, whether detection still
//! works on that version.

mod env;
pub mod selftest;

pub use clawmux_fakeapi::{
    FakeApi, FakeApiError, MAX_RECORDED_REQUESTS, MAX_REQUEST_BYTES, PLAN_FILE_PLACEHOLDER,
    Protocol, Request, SIDE_ANSWER, Streaming, ToolUse, Turn, error_type, stream,
};
pub use env::{CLAUDE_BIN_ENV, ClaudeEnv, claude_version, find_claude};

/// What can go wrong setting up or running the agent check.
#[derive(Debug, thiserror::Error)]
pub enum AgentCheckError {
    #[error("cannot {action} {what}: {source}")]
    Io {
        action: &'static str,
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("claude: {0}")]
    Claude(String),
    #[error("tmux: {0}")]
    Tmux(String),
    #[error(transparent)]
    FakeApi(#[from] FakeApiError),
    #[error("the self-check did not finish within {secs} s")]
    TimedOut { secs: u64 },
    #[error("the self-check was stopped")]
    Cancelled,
}

impl AgentCheckError {
    fn io(action: &'static str, what: &str, source: std::io::Error) -> AgentCheckError {
        AgentCheckError::Io {
            action,
            what: what.to_owned(),
            source,
        }
    }
}
