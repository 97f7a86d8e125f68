//! The Gemini protocol of the fake model API (Gemini CLI's wire API):
//! `POST /v1beta/models/<model>:streamGenerateContent?alt=sse`, answered as
//! SSE `data:` chunks of `GenerateContentResponse` JSON (one part a chunk:
//! thoughts, `thought: true`, then text, a few characters each, then whole
//! `functionCall`s, as Gemini sends them), and the non-streamed
//! `…:generateContent`.
//!
//! Gemini CLI asks a small router model which model to use before every
//! main request (a `generateContent` call without `tools` that wants JSON
//! `{reasoning, model_choice}`); that, and any other call without tools,
//! is a side request. A call with `tools` is a step of the user's turn.
//! Shell commands come back as a `functionCall` part named
//! `run_shell_command`; the CLI answers with a `functionResponse` part.

use axum::body::Bytes;
use serde_json::{Value, json};

use super::stream::{Chunker, Parts};
use super::turn::{SIDE_ANSWER, Turn};

/// Whether `path` is a Gemini model call (`/v1beta/models/…:…Content`).
pub(crate) fn is_gemini_path(path: &str) -> bool {
    path.contains("/models/")
        && (path.ends_with(":streamGenerateContent") || path.ends_with(":generateContent"))
}

/// Whether the call is streamed (`:streamGenerateContent`).
pub(crate) fn is_streamed(path: &str) -> bool {
    path.ends_with(":streamGenerateContent")
}

/// Whether a Gemini request is a step of the user's turn: it carries
/// function declarations.
pub(crate) fn is_turn(body: &Value) -> bool {
    body.get("tools")
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty())
}

/// The answer to a side request: the router's JSON choice when the call
/// asks for JSON, a short text otherwise.
pub(crate) fn side_turn(body: &Value) -> Turn {
    let wants_json = body
        .pointer("/generationConfig/responseMimeType")
        .and_then(Value::as_str)
        == Some("application/json");
    if wants_json {
        Turn::text(&json!({"reasoning": SIDE_ANSWER, "model_choice": "flash"}).to_string())
    } else {
        Turn::text(SIDE_ANSWER)
    }
}

/// The `functionResponse` outputs of the last user content, as JSON text.
pub(crate) fn tool_results(body: &Value) -> Vec<String> {
    let Some(last) = body
        .get("contents")
        .and_then(Value::as_array)
        .and_then(|c| c.last())
    else {
        return Vec::new();
    };
    last.get("parts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| p.get("functionResponse"))
        .map(|r| r.get("response").map_or_else(String::new, Value::to_string))
        .collect()
}

/// The model's parts for a turn, text cut by `chunker` (the whole answer
/// passes a chunker that keeps text whole).
fn parts(turn: &Turn, mut chunker: Option<&mut Chunker>) -> Vec<Value> {
    let p = Parts::of(turn);
    let mut out = Vec::new();
    for (text, thought) in [(p.thinking, true), (p.text, false)] {
        let Some(text) = text else { continue };
        let pieces = match chunker.as_deref_mut() {
            Some(c) => c.split(text),
            None => vec![text],
        };
        out.extend(pieces.into_iter().map(|piece| {
            if thought {
                json!({"text": piece, "thought": true})
            } else {
                json!({ "text": piece })
            }
        }));
    }
    for tool in p.tools {
        out.push(json!({"functionCall": {"name": tool.name, "args": tool.input}}));
    }
    out
}

fn usage() -> Value {
    json!({"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110})
}

fn chunk(parts: Vec<Value>, last: bool) -> Value {
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    let mut out = json!({"candidates": [], "modelVersion": "gemini-fake"});
    if last {
        candidate["finishReason"] = json!("STOP");
        out["usageMetadata"] = usage();
    }
    out["candidates"] = json!([candidate]);
    out
}

/// The whole (non-streamed) answer.
pub(crate) fn whole(turn: &Turn) -> Value {
    chunk(parts(turn, None), true)
}

/// The SSE frames of a streamed answer: one part per chunk, the last
/// chunk carrying `finishReason` and usage.
pub(crate) fn sse_frames(turn: &Turn, chunker: &mut Chunker) -> Vec<Bytes> {
    let parts = parts(turn, Some(chunker));
    let n = parts.len();
    let mut frames: Vec<Bytes> = parts
        .into_iter()
        .enumerate()
        .map(|(i, p)| frame(&chunk(vec![p], i + 1 == n)))
        .collect();
    if frames.is_empty() {
        frames.push(frame(&chunk(vec![json!({"text": ""})], true)));
    }
    frames
}

fn frame(v: &Value) -> Bytes {
    Bytes::from(format!("data: {v}\r\n\r\n"))
}

/// Google's JSON error body for an HTTP error.
pub(crate) fn error_body(status: u16, message: &str) -> Value {
    let kind = match status {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        429 => "RESOURCE_EXHAUSTED",
        503 => "UNAVAILABLE",
        _ => "INTERNAL",
    };
    json!({"error": {"code": status, "message": message, "status": kind}})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ToolUse;

    #[test]
    fn model_paths_and_turns_are_told_apart() {
        assert!(is_gemini_path(
            "/v1beta/models/gemini-2.5-pro:streamGenerateContent"
        ));
        assert!(is_gemini_path(
            "/v1beta/models/gemini-2.5-flash-lite:generateContent"
        ));
        assert!(!is_gemini_path("/v1/messages"));
        assert!(is_streamed("/v1beta/models/m:streamGenerateContent"));
        assert!(is_turn(&json!({"tools": [{"functionDeclarations": []}]})));
        let router = json!({"contents": [],
            "generationConfig": {"responseMimeType": "application/json"}});
        assert!(!is_turn(&router));
        let Turn::Text(t) = side_turn(&router) else {
            panic!()
        };
        let choice: Value = serde_json::from_str(&t).unwrap();
        assert_eq!(choice["model_choice"], "flash");
    }

    #[test]
    fn a_tool_call_streams_as_a_function_call_part() {
        let turn = Turn::Tools {
            text: Some("Running it.".into()),
            tools: vec![ToolUse::new(
                "run_shell_command",
                json!({"command": "ls", "description": "list"}),
            )],
        };
        let turn = Turn::think("Hmm, a listing.", turn);
        let chunker = &mut crate::stream::Streaming::default().chunker(2);
        let frames = sse_frames(&turn, chunker);
        let text: Vec<String> = frames
            .iter()
            .map(|f| String::from_utf8_lossy(f).into_owned())
            .collect();
        assert!(text[0].starts_with("data: {"), "{}", text[0]);
        assert!(!text[0].contains("finishReason"));
        let chunks: Vec<Value> = text
            .iter()
            .map(|t| serde_json::from_str(t.trim().strip_prefix("data: ").unwrap()).unwrap())
            .collect();
        let joined = |thought: bool| {
            let pieces: Vec<&str> = chunks
                .iter()
                .map(|c| &c["candidates"][0]["content"]["parts"][0])
                .filter(|p| p["thought"].as_bool().unwrap_or(false) == thought)
                .filter_map(|p| p["text"].as_str())
                .collect();
            assert!(pieces.len() > 1, "{pieces:?}");
            assert!(pieces.iter().all(|p| p.chars().count() <= 8), "{pieces:?}");
            pieces.concat()
        };
        assert_eq!(joined(true), "Hmm, a listing.");
        assert_eq!(joined(false), "Running it.");
        let last = chunks.last().unwrap();
        assert_eq!(
            last["candidates"][0]["content"]["parts"][0]["functionCall"]["name"],
            "run_shell_command"
        );
        assert_eq!(last["candidates"][0]["finishReason"], "STOP");
        let results = tool_results(&json!({"contents": [{"role": "user", "parts": [
            {"functionResponse": {"name": "run_shell_command", "response": {"output": "ok"}}}]}]}));
        assert_eq!(results, [r#"{"output":"ok"}"#]);
    }
}
