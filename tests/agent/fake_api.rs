//! The fake Messages API over real HTTP, as a client sees it.

use clawmux::agentcheck::{FakeApi, SIDE_ANSWER, ToolUse, Turn};
use serde_json::{Value, json};

/// `(event name, data)` pairs of an SSE body.
fn sse(body: &str) -> Vec<(String, Value)> {
    body.split("\n\n")
        .filter(|frame| !frame.trim().is_empty())
        .map(|frame| {
            let mut name = String::new();
            let mut data = Value::Null;
            for line in frame.lines() {
                if let Some(n) = line.strip_prefix("event: ") {
                    name = n.to_owned();
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data = serde_json::from_str(d).expect("data is JSON");
                }
            }
            (name, data)
        })
        .collect()
}

fn turn_request(stream: bool, tool_result: Option<&str>) -> Value {
    let mut messages = vec![json!({"role": "user", "content": "hi"})];
    if let Some(r) = tool_result {
        messages.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": r}
        ]}));
    }
    json!({"model": "m", "stream": stream, "max_tokens": 100, "messages": messages,
           "tools": [{"name": "Bash", "input_schema": {"type": "object"}}]})
}

#[tokio::test]
async fn scripted_turns_stream_errors_carry_anthropic_bodies_and_side_requests_do_not_consume() {
    let api = FakeApi::start(vec![
        Turn::Tools {
            text: Some("Let me run it.".into()),
            tools: vec![ToolUse::new("Bash", json!({"command": "echo hi"}))],
        },
        Turn::error(529, "Overloaded", 2),
        Turn::text("done"),
    ])
    .unwrap();
    let url = format!("{}/v1/messages?beta=true", api.base_url());
    let http = reqwest::Client::new();

    let head = http.head(api.base_url()).send().await.unwrap();
    assert_eq!(head.status(), 200);

    // A side request (no tools) gets the harmless answer, script untouched.
    let side: Value = http
        .post(&url)
        .json(&json!({"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "title?"}]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(side["content"][0]["text"], SIDE_ANSWER);
    assert_eq!(api.remaining(), 3);

    let response = http
        .post(&url)
        .json(&turn_request(true, None))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let events = sse(&response.text().await.unwrap());
    // Each event's data names its own type, as the real API does.
    for (name, data) in &events {
        assert_eq!(data["type"], name.as_str());
    }
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names[..3], ["message_start", "ping", "content_block_start"]);
    assert_eq!(names[names.len() - 2..], ["message_delta", "message_stop"]);
    // Two blocks, each streamed in pieces of at most 8 characters that
    // rejoin to the scripted text and tool input.
    let joined = |index: u64, field: &str| {
        let pieces: Vec<&str> = events
            .iter()
            .filter(|(n, d)| n == "content_block_delta" && d["index"] == index)
            .map(|(_, d)| d["delta"][field].as_str().unwrap())
            .collect();
        assert!(pieces.len() > 1, "{pieces:?}");
        assert!(pieces.iter().all(|p| p.chars().count() <= 8), "{pieces:?}");
        pieces.concat()
    };
    assert_eq!(joined(0, "text"), "Let me run it.");
    let tool = events
        .iter()
        .find(|(n, d)| n == "content_block_start" && d["index"] == 1)
        .unwrap();
    assert_eq!(tool.1["content_block"]["name"], "Bash");
    let input: Value = serde_json::from_str(&joined(1, "partial_json")).unwrap();
    assert_eq!(input, json!({"command": "echo hi"}));
    assert_eq!(
        events[events.len() - 2].1["delta"]["stop_reason"],
        "tool_use"
    );

    // The error turn answers twice (a try and a retry), then the script goes on.
    for _ in 0..2 {
        let response = http
            .post(&url)
            .json(&turn_request(true, Some("hi\n")))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 529);
        let body: Value = response.json().await.unwrap();
        assert_eq!(
            body,
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
        );
    }
    let done: Value = http
        .post(&url)
        .json(&turn_request(false, Some("hi\n")))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(done["content"][0]["text"], "done");
    assert_eq!(done["stop_reason"], "end_turn");
    assert_eq!(api.remaining(), 0);
    assert_eq!(api.exhausted(), 0);

    // An exhausted script still ends the turn, and says so.
    let extra = http
        .post(&url)
        .json(&turn_request(false, None))
        .send()
        .await
        .unwrap();
    assert_eq!(extra.status(), 200);
    assert_eq!(api.exhausted(), 1);

    let requests = api.requests();
    assert_eq!(requests.len(), 7);
    assert_eq!(requests[0].method, "HEAD");
    assert!(!requests[1].scripted);
    let scripted = api.scripted_requests();
    assert_eq!(scripted.len(), 5);
    assert_eq!(scripted[1].tool_results(), ["hi\n"]);
    assert!(scripted[0].tool_results().is_empty());

    let unknown = http
        .get(format!("{}/v1/models", api.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);
}

#[test]
fn listens_on_loopback_only() {
    let api = FakeApi::start(Vec::new()).unwrap();
    assert!(api.addr().ip().is_loopback());
    assert!(api.base_url().starts_with("http://127.0.0.1:"));
}
