//! What a script answers: one model call's answer (`Turn`, its tool calls),
//! and the answer to side requests. Below the server (`fake_api`) and the
//! protocols that frame a turn (`chat`, `gemini`, `responses`, `stream`).

use serde_json::Value;

/// The answer to side requests (no `tools`): short, and not a prompt or an
/// error a detector could mistake.
pub const SIDE_ANSWER: &str = "Scripted session";

/// One tool call in a scripted answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolUse {
    pub name: String,
    pub input: Value,
}

impl ToolUse {
    pub fn new(name: &str, input: Value) -> Self {
        ToolUse {
            name: name.to_owned(),
            input,
        }
    }
}

/// The answer to one scripted model call.
#[derive(Debug, Clone, PartialEq)]
pub enum Turn {
    /// Text, then `stop_reason: end_turn`.
    Text(String),
    /// Optional text, then tool calls, `stop_reason: tool_use`.
    Tools {
        text: Option<String>,
        tools: Vec<ToolUse>,
    },
    /// An HTTP error with Anthropic's JSON error body, answered to the next
    /// `times` scripted calls (Claude Code retries 500, 529 and 401).
    Error {
        status: u16,
        message: String,
        times: u32,
    },
    /// Thinking streamed first (Anthropic `thinking_delta`, Responses
    /// reasoning summary, Chat `reasoning_content`, Gemini `thought`
    /// parts), then `answer` (text or tools).
    Thought { thinking: String, answer: Box<Turn> },
}

impl Turn {
    pub fn text(text: &str) -> Turn {
        Turn::Text(text.to_owned())
    }

    /// One tool call without preceding text.
    pub fn tool(name: &str, input: Value) -> Turn {
        Turn::Tools {
            text: None,
            tools: vec![ToolUse::new(name, input)],
        }
    }

    /// `answer` preceded by `thinking`.
    pub fn think(thinking: &str, answer: Turn) -> Turn {
        Turn::Thought {
            thinking: thinking.to_owned(),
            answer: Box::new(answer),
        }
    }

    /// An HTTP error answered `times` times in a row.
    pub fn error(status: u16, message: &str, times: u32) -> Turn {
        Turn::Error {
            status,
            message: message.to_owned(),
            times: times.max(1),
        }
    }
}
