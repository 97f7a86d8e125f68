//! The OpenAI Chat Completions protocol of the fake model API: `POST
//! /v1/chat/completions`, streamed as SSE `chat.completion.chunk`s ending
//! in `data: [DONE]`, or whole. Streamed text, thinking
//! (`reasoning_content`) and tool call arguments come a few characters
//! per chunk. Aider (through litellm) speaks it without
//! tools: it reads edits and commands out of the reply's text. OpenCode
//! (through `@ai-sdk/openai-compatible`) speaks it with tools.
//!
//! Side requests are told by what they ask for, not by tools (Aider never
//! sends any): a commit message, a conversation summary or a session
//! title. Everything else is a step of the user's turn.

use axum::body::Bytes;
use serde_json::{Value, json};

use super::stream::{Chunker, Parts};
use super::turn::{SIDE_ANSWER, Turn};

/// What the system prompt of a side request says (lower case): Aider's
/// commit message and summary prompts, OpenCode's title generator.
const SIDE_MARKS: [&str; 4] = [
    "commit message",
    "summarize",
    "title generator",
    "generate a title",
];

/// Whether `path` is a Chat Completions call.
pub(crate) fn is_chat_path(path: &str) -> bool {
    path.ends_with("/chat/completions")
}

/// The system prompt of a request (its `system` messages joined).
fn system_text(body: &Value) -> String {
    body.get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("system"))
        .map(|m| content_text(m.get("content")))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A message's `content` as text: a string, or the text of its parts.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Whether a Chat Completions request is a step of the user's turn.
pub(crate) fn is_turn(body: &Value) -> bool {
    let has_tools = body
        .get("tools")
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty());
    if has_tools {
        return true;
    }
    let system = system_text(body).to_lowercase();
    !SIDE_MARKS.iter().any(|m| system.contains(m))
}

/// The outputs of tool calls sent back since the last assistant message.
pub(crate) fn tool_results(body: &Value) -> Vec<String> {
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return Vec::new();
    };
    let from = messages
        .iter()
        .rposition(|m| m.get("role").and_then(Value::as_str) == Some("assistant"))
        .map_or(0, |i| i + 1);
    messages[from..]
        .iter()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("tool"))
        .map(|m| content_text(m.get("content")))
        .collect()
}

fn tool_call(id: u64, i: usize, tool: &super::ToolUse) -> Value {
    json!({
        "id": format!("call_fake{id:04}{i:02}"),
        "type": "function",
        "function": {"name": tool.name, "arguments": tool.input.to_string()},
    })
}

fn usage() -> Value {
    json!({"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110})
}

/// The whole (non-streamed) answer.
pub(crate) fn whole(turn: &Turn, id: u64) -> Value {
    let parts = Parts::of(turn);
    let (text, tools) = (parts.text, parts.tools);
    let mut message = json!({"role": "assistant", "content": text});
    if let Some(thinking) = parts.thinking {
        message["reasoning_content"] = json!(thinking);
    }
    let finish = if tools.is_empty() {
        "stop"
    } else {
        message["tool_calls"] = tools
            .iter()
            .enumerate()
            .map(|(i, t)| tool_call(id, i, t))
            .collect();
        "tool_calls"
    };
    json!({
        "id": format!("chatcmpl-fake{id:06}"), "object": "chat.completion",
        "created": 0, "model": "fake-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage(),
    })
}

/// The answer to a side request.
pub(crate) fn side_turn() -> Turn {
    Turn::text(SIDE_ANSWER)
}

/// The SSE frames of a streamed answer: the role, the thinking and the
/// text in pieces, each tool call (its name, then its arguments in
/// pieces), the finish reason, the usage, `[DONE]`.
pub(crate) fn sse_frames(turn: &Turn, id: u64, chunker: &mut Chunker) -> Vec<Bytes> {
    let parts = Parts::of(turn);
    let (text, tools) = (parts.text, parts.tools);
    let chunk = |delta: Value, finish: Option<&str>| {
        json!({
            "id": format!("chatcmpl-fake{id:06}"), "object": "chat.completion.chunk",
            "created": 0, "model": "fake-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        })
    };
    let mut events = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    if let Some(thinking) = parts.thinking {
        for piece in chunker.split(thinking) {
            events.push(chunk(json!({ "reasoning_content": piece }), None));
        }
    }
    if let Some(text) = text {
        for piece in chunker.split(text) {
            events.push(chunk(json!({ "content": piece }), None));
        }
    }
    for (i, tool) in tools.iter().enumerate() {
        let mut call = tool_call(id, i, tool);
        call["index"] = json!(i);
        call["function"]["arguments"] = json!("");
        events.push(chunk(json!({ "tool_calls": [call] }), None));
        for piece in chunker.split(&tool.input.to_string()) {
            let part = json!({"index": i, "function": {"arguments": piece}});
            events.push(chunk(json!({ "tool_calls": [part] }), None));
        }
    }
    let finish = if tools.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    events.push(chunk(json!({}), Some(finish)));
    events.push(json!({
        "id": format!("chatcmpl-fake{id:06}"), "object": "chat.completion.chunk",
        "created": 0, "model": "fake-model", "choices": [], "usage": usage(),
    }));
    let mut frames: Vec<Bytes> = events
        .iter()
        .map(|e| Bytes::from(format!("data: {e}\n\n")))
        .collect();
    frames.push(Bytes::from_static(b"data: [DONE]\n\n"));
    frames
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn side_requests_are_told_by_what_they_ask() {
        let turn = json!({"messages": [
            {"role": "system", "content": "Act as an expert software developer."},
            {"role": "user", "content": "make a file"}]});
        assert!(is_turn(&turn));
        let commit = json!({"messages": [{"role": "system",
            "content": "You are an expert software engineer that generates concise, one-line Git commit messages"}]});
        assert!(!is_turn(&commit));
        let title = json!({"messages": [{"role": "system",
            "content": [{"type": "text", "text": "You are a title generator."}]}]});
        assert!(!is_turn(&title));
        let tools = json!({"tools": [{"type": "function"}], "messages": title["messages"]});
        assert!(is_turn(&tools));
        assert!(is_chat_path("/v1/chat/completions"));
    }

    #[test]
    fn tool_calls_stream_and_results_are_read() {
        let turn = Turn::think(
            "Which files?",
            Turn::Tools {
                text: Some("Listing them.".into()),
                tools: vec![crate::ToolUse::new("bash", json!({"command": "ls"}))],
            },
        );
        let chunker = &mut crate::stream::Streaming::default().chunker(3);
        let frames: Vec<String> = sse_frames(&turn, 3, chunker)
            .iter()
            .map(|f| String::from_utf8_lossy(f).into_owned())
            .collect();
        assert_eq!(frames.last().map(String::as_str), Some("data: [DONE]\n\n"));
        let deltas: Vec<Value> = frames[..frames.len() - 1]
            .iter()
            .map(|f| serde_json::from_str(f.trim().strip_prefix("data: ").unwrap()).unwrap())
            .filter_map(|c: Value| c.pointer("/choices/0/delta").cloned())
            .collect();
        let joined = |pointer: &str| {
            let pieces: Vec<&str> = deltas
                .iter()
                .filter_map(|d| d.pointer(pointer).and_then(Value::as_str))
                .filter(|p| !p.is_empty())
                .collect();
            assert!(pieces.len() > 1, "{pointer}: {pieces:?}");
            assert!(pieces.iter().all(|p| p.chars().count() <= 8), "{pieces:?}");
            pieces.concat()
        };
        assert_eq!(joined("/reasoning_content"), "Which files?");
        assert_eq!(joined("/content"), "Listing them.");
        assert_eq!(
            joined("/tool_calls/0/function/arguments"),
            r#"{"command":"ls"}"#
        );
        let named: Vec<&Value> = deltas
            .iter()
            .filter(|d| d.pointer("/tool_calls/0/function/name").is_some())
            .collect();
        assert_eq!(named.len(), 1, "the name comes once, with the id");
        assert_eq!(named[0]["tool_calls"][0]["id"], "call_fake000300");
        let all = frames.concat();
        assert!(all.contains(r#""finish_reason":"tool_calls""#), "{all}");
        let whole = whole(&Turn::text("hi"), 1);
        assert_eq!(whole["choices"][0]["message"]["content"], "hi");
        let body = json!({"messages": [
            {"role": "assistant", "content": null, "tool_calls": []},
            {"role": "tool", "tool_call_id": "c", "content": "done"}]});
        assert_eq!(tool_results(&body), ["done"]);
    }
}
