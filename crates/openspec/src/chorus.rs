//! Chorus MCP client: one JSON-RPC 2.0 `tools/call` per request to
//! `$CHORUS_URL/api/mcp` (stateless server, no session), bearer key, JSON or
//! SSE replies. Every failure signal halts with a [`ChorusError`] naming the
//! signal and showing the body: transport error, non-2xx status (401
//! included), empty body, unparsable body, JSON-RPC `error`, `result.isError`,
//! or an `"error"` key in any object of the result (including the JSON a
//! text content carries). Nothing passes silently.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

/// Whole-request timeout: a Chorus call that takes longer is treated as a
/// transport failure rather than left hanging the authoring flow.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// Largest reply accepted, in bytes: documents are markdown, 64 MiB is far
/// beyond any real one and bounds memory against a runaway server.
pub const MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;
/// How much of a reply body an error message shows, in bytes.
pub const MAX_BODY_IN_ERROR: usize = 4096;

/// Which failure signal fired, with what the server said.
#[derive(Debug, thiserror::Error)]
pub enum ChorusError {
    #[error("{tool}: transport error: {message}")]
    Transport { tool: String, message: String },
    #[error("{tool}: HTTP status {status}; body: {}", shown(body))]
    Status {
        tool: String,
        status: u16,
        body: String,
    },
    #[error("{tool}: empty body (HTTP {status})")]
    EmptyBody { tool: String, status: u16 },
    #[error("{tool}: reply larger than {MAX_RESPONSE_BYTES} bytes")]
    TooLarge { tool: String },
    #[error(
        "{tool}: body is not a JSON-RPC reply ({reason}); body: {}",
        shown(body)
    )]
    Malformed {
        tool: String,
        reason: String,
        body: String,
    },
    #[error("{tool}: JSON-RPC error {code}: {message}; body: {}", shown(body))]
    Rpc {
        tool: String,
        code: i64,
        message: String,
        body: String,
    },
    #[error("{tool}: tool failed (result.isError): {text}; body: {}", shown(body))]
    Tool {
        tool: String,
        text: String,
        body: String,
    },
    #[error("{tool}: \"error\" key in the result; body: {}", shown(body))]
    ErrorKey { tool: String, body: String },
    #[error("{tool}: result lacks {what}; body: {}", shown(body))]
    Missing {
        tool: String,
        what: String,
        body: String,
    },
}

/// The body, cut to [`MAX_BODY_IN_ERROR`] bytes on a character boundary.
fn shown(body: &str) -> String {
    if body.len() <= MAX_BODY_IN_ERROR {
        return body.to_string();
    }
    let mut end = MAX_BODY_IN_ERROR;
    while !body.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} more bytes)", &body[..end], body.len() - end)
}

/// A successful tool result and the raw body it came in.
#[derive(Debug, Clone)]
pub struct ToolOutput {
    pub result: Value,
    pub body: String,
}

impl ToolOutput {
    /// The first text content, parsed as JSON (Chorus tools answer that way).
    pub fn json(&self, tool: &str) -> Result<Value, ChorusError> {
        first_text(&self.result)
            .and_then(|t| serde_json::from_str(t).ok())
            .ok_or_else(|| ChorusError::Missing {
                tool: tool.to_string(),
                what: "a JSON text content".into(),
                body: self.body.clone(),
            })
    }

    /// A string field of the JSON text content.
    pub fn field(&self, tool: &str, key: &str) -> Result<String, ChorusError> {
        self.json(tool)?
            .get(key)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| ChorusError::Missing {
                tool: tool.to_string(),
                what: format!("a string \"{key}\""),
                body: self.body.clone(),
            })
    }
}

fn first_text(result: &Value) -> Option<&str> {
    result["content"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "text")?["text"]
        .as_str()
}

/// Client for one Chorus server.
#[derive(Debug)]
pub struct ChorusClient {
    http: reqwest::Client,
    endpoint: String,
    api_key: String,
    next_id: AtomicU64,
}

impl ChorusClient {
    /// `base_url` is `$CHORUS_URL` (the endpoint is `<base>/api/mcp`).
    pub fn new(base_url: &str, api_key: &str) -> Result<Self, ChorusError> {
        let http = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .build()
            .map_err(|e| ChorusError::Transport {
                tool: "client".into(),
                message: e.to_string(),
            })?;
        Ok(Self {
            http,
            endpoint: format!("{}/api/mcp", base_url.trim_end_matches('/')),
            api_key: api_key.to_string(),
            next_id: AtomicU64::new(1),
        })
    }

    /// Calls one tool and returns its result, or the failure signal that fired.
    pub async fn call_tool(&self, tool: &str, arguments: Value) -> Result<ToolOutput, ChorusError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let request = json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        });
        let transport = |e: reqwest::Error| ChorusError::Transport {
            tool: tool.to_string(),
            message: error_chain(&e),
        };
        let mut response = self
            .http
            .post(&self.endpoint)
            .bearer_auth(&self.api_key)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(
                reqwest::header::ACCEPT,
                "application/json, text/event-stream",
            )
            .json(&request)
            .send()
            .await
            .map_err(transport)?;
        let status = response.status().as_u16();
        let is_sse = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(transport)? {
            if bytes.len() + chunk.len() > MAX_RESPONSE_BYTES {
                return Err(ChorusError::TooLarge {
                    tool: tool.to_string(),
                });
            }
            bytes.extend_from_slice(&chunk);
        }
        let body = String::from_utf8_lossy(&bytes).into_owned();
        check_reply(tool, id, status, is_sse, body)
    }
}

/// The error and its sources, one line (reqwest hides the cause otherwise).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

/// Applies every failure signal to a reply. Sans-IO, so each signal is
/// testable alone.
pub fn check_reply(
    tool: &str,
    id: u64,
    status: u16,
    is_sse: bool,
    body: String,
) -> Result<ToolOutput, ChorusError> {
    let tool_s = tool.to_string();
    if !(200..300).contains(&status) {
        return Err(ChorusError::Status {
            tool: tool_s,
            status,
            body,
        });
    }
    if body.trim().is_empty() {
        return Err(ChorusError::EmptyBody {
            tool: tool_s,
            status,
        });
    }
    let message = if is_sse {
        sse_reply(&body, id)
    } else {
        serde_json::from_str(&body).ok()
    };
    let Some(message) = message else {
        let reason = if is_sse {
            "no JSON-RPC reply among the SSE events"
        } else {
            "invalid JSON"
        };
        return Err(ChorusError::Malformed {
            tool: tool_s,
            reason: reason.into(),
            body,
        });
    };
    if let Some(error) = message.get("error") {
        return Err(ChorusError::Rpc {
            tool: tool_s,
            code: error["code"].as_i64().unwrap_or_default(),
            message: error["message"]
                .as_str()
                .unwrap_or("(no message)")
                .to_string(),
            body,
        });
    }
    let Some(result) = message.get("result").cloned() else {
        return Err(ChorusError::Malformed {
            tool: tool_s,
            reason: "no \"result\"".into(),
            body,
        });
    };
    if result["isError"] == Value::Bool(true) {
        let text = first_text(&result).unwrap_or("(no text)").to_string();
        return Err(ChorusError::Tool {
            tool: tool_s,
            text,
            body,
        });
    }
    let text_json = first_text(&result).and_then(|t| serde_json::from_str::<Value>(t).ok());
    if has_error_key(&result) || text_json.as_ref().is_some_and(has_error_key) {
        return Err(ChorusError::ErrorKey { tool: tool_s, body });
    }
    Ok(ToolOutput { result, body })
}

/// Whether any object in `v` has an `"error"` key.
fn has_error_key(v: &Value) -> bool {
    match v {
        Value::Object(map) => map.contains_key("error") || map.values().any(has_error_key),
        Value::Array(items) => items.iter().any(has_error_key),
        _ => false,
    }
}

/// The JSON-RPC reply among SSE events: `data:` lines of one event joined
/// with newlines; the event whose message has our id (or, failing that, the
/// last one with a result or error).
fn sse_reply(body: &str, id: u64) -> Option<Value> {
    let mut replies = Vec::new();
    let mut data: Vec<&str> = Vec::new();
    let mut flush = |data: &mut Vec<&str>| {
        if !data.is_empty() {
            if let Ok(v) = serde_json::from_str::<Value>(&data.join("\n"))
                && (v.get("result").is_some() || v.get("error").is_some())
            {
                replies.push(v);
            }
            data.clear();
        }
    };
    for line in body.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            flush(&mut data);
        } else if let Some(rest) = line.strip_prefix("data:") {
            data.push(rest.strip_prefix(' ').unwrap_or(rest));
        }
    }
    flush(&mut data);
    let pos = replies.iter().position(|v| v["id"] == json!(id));
    match pos {
        Some(p) => Some(replies.swap_remove(p)),
        None => replies.pop(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok_body(text: &str) -> String {
        json!({"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":text}]}})
            .to_string()
    }

    #[test]
    fn json_and_sse_replies_are_read() {
        let out = check_reply("t", 1, 200, false, ok_body(r#"{"draftUuid":"d1"}"#));
        assert_eq!(
            out.ok()
                .and_then(|o| o.field("t", "draftUuid").ok())
                .as_deref(),
            Some("d1")
        );
        let sse = format!(
            "event: message\r\ndata: {}\r\n\r\n",
            ok_body(r#"{"uuid":"u"}"#)
        );
        let out = check_reply("t", 1, 200, true, sse);
        assert_eq!(
            out.ok().and_then(|o| o.field("t", "uuid").ok()).as_deref(),
            Some("u")
        );
    }

    #[test]
    fn every_failure_signal_halts() {
        let cases: Vec<(u16, bool, String, &str)> = vec![
            (401, false, r#"{"error":"Invalid API key"}"#.into(), "HTTP status 401"),
            (401, false, String::new(), "HTTP status 401"),
            (200, false, " \n".into(), "empty body"),
            (200, false, "<html>".into(), "invalid JSON"),
            (200, true, "event: message\n\n".into(), "no JSON-RPC reply"),
            (200, false, r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"nope"}}"#.into(), "JSON-RPC error -32601"),
            (200, false, json!({"jsonrpc":"2.0","id":1,"result":{"isError":true,"content":[{"type":"text","text":"Draft not found"}]}}).to_string(), "Draft not found"),
            (200, false, ok_body(r#"{"data":{"error":"quota"}}"#), "\"error\" key"),
            (200, false, json!({"jsonrpc":"2.0","id":1,"result":{"error":"x"}}).to_string(), "\"error\" key"),
            (200, false, r#"{"jsonrpc":"2.0","id":1}"#.into(), "no \"result\""),
        ];
        for (status, sse, body, expect) in cases {
            match check_reply("chorus_x", 1, status, sse, body.clone()) {
                Ok(_) => panic!("passed silently: {status} {body}"),
                Err(e) => {
                    let msg = e.to_string();
                    assert!(msg.contains(expect) && msg.starts_with("chorus_x"), "{msg}");
                    assert!(msg.contains(body.trim()), "body not shown: {msg}");
                }
            }
        }
    }

    #[test]
    fn long_bodies_are_cut_in_messages() {
        let s = shown(&"é".repeat(MAX_BODY_IN_ERROR));
        assert!(s.len() < MAX_BODY_IN_ERROR + 40 && s.contains("more bytes"));
    }
}
