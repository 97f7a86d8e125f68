//! The OpenAI Responses protocol of the fake model API (Codex CLI's wire
//! API): `POST /v1/responses` with `stream: true`, answered as SSE
//! `response.created`, `response.output_item.added|done`, the deltas
//! (`response.output_text.delta`, `response.reasoning_summary_text.delta`,
//! `response.function_call_arguments.delta`,
//! `response.custom_tool_call_input.delta`, each a few characters) and
//! `response.completed`.
//!
//! Codex sends its tools inside the input (an `additional_tools` item) and
//! runs shell commands through a freeform `exec` tool whose input is
//! JavaScript (`await tools.exec_command({cmd, …})`): a scripted tool call
//! whose input is a JSON string is sent as such a `custom_tool_call`, one
//! with an object input as a `function_call` with JSON arguments. Its side
//! requests (the thread's title) ask for a JSON schema answer.

use axum::body::Bytes;
use serde_json::{Value, json};

use super::stream::{Chunker, Parts};
use super::turn::{SIDE_ANSWER, Turn};

/// Whether a Responses request is a step of the user's turn: it carries
/// tools (as `tools` or an `additional_tools` input item) and does not ask
/// for a structured (JSON schema) answer, as the title request does.
pub(crate) fn is_turn(body: &Value) -> bool {
    let structured = body
        .pointer("/text/format/type")
        .and_then(Value::as_str)
        .is_some_and(|t| t == "json_schema");
    let tools = body
        .get("tools")
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty())
        || body
            .get("input")
            .and_then(Value::as_array)
            .is_some_and(|items| {
                items
                    .iter()
                    .any(|i| i.get("type").and_then(Value::as_str) == Some("additional_tools"))
            });
    tools && !structured
}

/// The answer to a side request: the JSON a title schema asks for.
pub(crate) fn side_turn(body: &Value) -> Turn {
    let structured =
        body.pointer("/text/format/type").and_then(Value::as_str) == Some("json_schema");
    if structured {
        Turn::text(&json!({ "title": SIDE_ANSWER }).to_string())
    } else {
        Turn::text(SIDE_ANSWER)
    }
}

/// The outputs of tool calls the last request sent back.
pub(crate) fn tool_results(body: &Value) -> Vec<String> {
    let Some(items) = body.get("input").and_then(Value::as_array) else {
        return Vec::new();
    };
    items
        .iter()
        .filter(|i| {
            matches!(
                i.get("type").and_then(Value::as_str),
                Some("function_call_output" | "custom_tool_call_output")
            )
        })
        .map(|i| match i.get("output") {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        })
        .collect()
}

/// The output items of a turn: reasoning, message, tool calls.
fn items(turn: &Turn, id: u64) -> Vec<Value> {
    let parts = Parts::of(turn);
    let mut items = Vec::new();
    if let Some(thinking) = parts.thinking {
        items.push(json!({
            "type": "reasoning", "id": format!("rs_fake{id:06}"),
            "summary": [{"type": "summary_text", "text": thinking}],
        }));
    }
    if let Some(text) = parts.text {
        items.push(json!({
            "type": "message", "role": "assistant", "id": format!("msg_fake{id:06}"),
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }));
    }
    for (i, tool) in parts.tools.iter().enumerate() {
        let call = format!("call_fake{id:04}{i:02}");
        items.push(match &tool.input {
            Value::String(input) => json!({
                "type": "custom_tool_call", "id": format!("ctc_fake{id:04}{i:02}"),
                "status": "completed", "call_id": call, "name": tool.name, "input": input,
            }),
            input => json!({
                "type": "function_call", "id": format!("fc_fake{id:04}{i:02}"),
                "status": "completed", "call_id": call, "name": tool.name,
                "arguments": input.to_string(),
            }),
        });
    }
    items
}

/// The item as `response.output_item.added` announces it: its streamed
/// body empty.
fn announced(item: &Value) -> Value {
    let mut added = item.clone();
    match item.get("type").and_then(Value::as_str) {
        Some("message") => added["content"] = json!([]),
        Some("reasoning") => added["summary"] = json!([]),
        Some("function_call") => added["arguments"] = json!(""),
        Some("custom_tool_call") => added["input"] = json!(""),
        _ => {}
    }
    if added.get("status").is_some() {
        added["status"] = json!("in_progress");
    }
    added
}

/// The delta events of one item, its body in pieces `chunker` cuts.
fn deltas(item: &Value, index: usize, chunker: &mut Chunker) -> Vec<Value> {
    let id = &item["id"];
    let mut events = Vec::new();
    let mut stream = |body: &str, delta: &str, done: Value, extra: Value| {
        for piece in chunker.split(body) {
            let mut e = json!({"type": delta, "item_id": id, "output_index": index,
                "delta": piece});
            merge(&mut e, &extra);
            events.push(e);
        }
        let mut done = done;
        merge(&mut done, &json!({"item_id": id, "output_index": index}));
        merge(&mut done, &extra);
        events.push(done);
    };
    match item.get("type").and_then(Value::as_str) {
        Some("reasoning") => {
            let text = item.pointer("/summary/0/text").and_then(Value::as_str);
            let part = json!({"summary_index": 0});
            stream(
                text.unwrap_or(""),
                "response.reasoning_summary_text.delta",
                json!({"type": "response.reasoning_summary_text.done", "text": text}),
                part,
            );
        }
        Some("message") => {
            let text = item.pointer("/content/0/text").and_then(Value::as_str);
            stream(
                text.unwrap_or(""),
                "response.output_text.delta",
                json!({"type": "response.output_text.done", "text": text}),
                json!({"content_index": 0}),
            );
        }
        Some("function_call") => {
            let args = item.get("arguments").and_then(Value::as_str);
            stream(
                args.unwrap_or(""),
                "response.function_call_arguments.delta",
                json!({"type": "response.function_call_arguments.done", "arguments": args}),
                json!({}),
            );
        }
        Some("custom_tool_call") => {
            let input = item.get("input").and_then(Value::as_str);
            stream(
                input.unwrap_or(""),
                "response.custom_tool_call_input.delta",
                json!({"type": "response.custom_tool_call_input.done", "input": input}),
                json!({}),
            );
        }
        _ => {}
    }
    events
}

/// Copies `extra`'s fields into `into` (both objects).
fn merge(into: &mut Value, extra: &Value) {
    if let (Some(into), Some(extra)) = (into.as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            into.insert(k.clone(), v.clone());
        }
    }
}

/// The SSE frames of a streamed answer.
pub(crate) fn sse_frames(turn: &Turn, id: u64, chunker: &mut Chunker) -> Vec<Bytes> {
    let response_id = format!("resp_fake{id:06}");
    let mut events = vec![json!({
        "type": "response.created",
        "response": {"id": response_id, "status": "in_progress", "output": []},
    })];
    let items = items(turn, id);
    for (index, item) in items.iter().enumerate() {
        events.push(
            json!({"type": "response.output_item.added", "output_index": index,
            "item": announced(item)}),
        );
        events.extend(deltas(item, index, chunker));
        events.push(
            json!({"type": "response.output_item.done", "output_index": index, "item": item}),
        );
    }
    events.push(json!({
        "type": "response.completed",
        "response": {
            "id": response_id, "status": "completed", "output": items,
            "usage": {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 10, "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 110},
        },
    }));
    events
        .into_iter()
        .map(|e| {
            let name = e
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("message")
                .to_owned();
            Bytes::from(format!("event: {name}\ndata: {e}\n\n"))
        })
        .collect()
}

/// The JSON error body OpenAI's APIs answer an HTTP error with.
pub(crate) fn error_body(status: u16, message: &str) -> Value {
    let kind = match status {
        429 => "rate_limit_exceeded",
        401 => "invalid_api_key",
        400 => "invalid_request_error",
        _ => "server_error",
    };
    json!({"error": {"message": message, "type": kind, "code": kind, "param": null}})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ToolUse;
    use crate::stream::Streaming;

    /// The events of a frame list, as JSON.
    fn events(frames: &[Bytes]) -> Vec<Value> {
        frames
            .iter()
            .map(|f| {
                let text = String::from_utf8_lossy(f);
                let data = text.lines().find_map(|l| l.strip_prefix("data: ")).unwrap();
                serde_json::from_str(data).unwrap()
            })
            .collect()
    }

    /// The `delta`s of events of `kind`, joined, each at most 8 characters.
    fn joined(events: &[Value], kind: &str) -> String {
        let pieces: Vec<&str> = events
            .iter()
            .filter(|e| e["type"] == kind)
            .map(|e| e["delta"].as_str().unwrap())
            .collect();
        assert!(pieces.len() > 1, "{kind}: {pieces:?}");
        assert!(pieces.iter().all(|p| p.chars().count() <= 8), "{pieces:?}");
        pieces.concat()
    }

    #[test]
    fn text_reasoning_and_arguments_stream_in_pieces() {
        let turn = Turn::think(
            "Thinking it over.",
            Turn::Tools {
                text: Some("Running the listing.".into()),
                tools: vec![
                    ToolUse::new("exec", json!("await tools.exec_command({cmd: 'ls'})")),
                    ToolUse::new("shell", json!({"command": ["ls", "-la"]})),
                ],
            },
        );
        let all = events(&sse_frames(&turn, 4, &mut Streaming::default().chunker(4)));
        assert_eq!(
            joined(&all, "response.reasoning_summary_text.delta"),
            "Thinking it over."
        );
        assert_eq!(
            joined(&all, "response.output_text.delta"),
            "Running the listing."
        );
        assert_eq!(
            joined(&all, "response.custom_tool_call_input.delta"),
            "await tools.exec_command({cmd: 'ls'})"
        );
        assert_eq!(
            joined(&all, "response.function_call_arguments.delta"),
            r#"{"command":["ls","-la"]}"#
        );
        let added: Vec<&Value> = all
            .iter()
            .filter(|e| e["type"] == "response.output_item.added")
            .collect();
        assert_eq!(added[0]["item"]["type"], "reasoning");
        assert_eq!(added[2]["item"]["input"], "");
        assert_eq!(all.last().unwrap()["type"], "response.completed");
    }

    #[test]
    fn codex_turns_and_title_requests_are_told_apart() {
        let turn =
            json!({"input": [{"type": "additional_tools", "tools": []}, {"type": "message"}]});
        assert!(is_turn(&turn));
        let title = json!({"input": [{"type": "additional_tools"}],
            "text": {"format": {"type": "json_schema"}}});
        assert!(!is_turn(&title));
        assert!(!is_turn(&json!({"input": []})));
        let Turn::Text(t) = side_turn(&title) else {
            panic!()
        };
        assert_eq!(t, r#"{"title":"Scripted session"}"#);
    }

    #[test]
    fn a_string_input_is_a_custom_tool_call() {
        let turn = Turn::Tools {
            text: None,
            tools: vec![
                ToolUse::new("exec", json!("await tools.exec_command({cmd: 'ls'})")),
                ToolUse::new("shell", json!({"command": ["ls"]})),
            ],
        };
        let frames = sse_frames(&turn, 7, &mut Streaming::default().chunker(7));
        let text: String = frames
            .iter()
            .map(|f| String::from_utf8_lossy(f).into_owned())
            .collect();
        assert!(text.contains(r#""type":"custom_tool_call""#), "{text}");
        assert!(
            text.contains(r#""arguments":"{\"command\":[\"ls\"]}""#),
            "{text}"
        );
        assert!(text.ends_with("\n\n"));
        assert!(text.contains("event: response.completed"));
        let results = tool_results(&json!({"input": [
            {"type": "custom_tool_call_output", "output": "done"},
            {"type": "message"}]}));
        assert_eq!(results, ["done"]);
    }
}
