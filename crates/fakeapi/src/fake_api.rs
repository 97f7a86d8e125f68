//! A scriptable stand-in for the model APIs on 127.0.0.1, so the real
//! agents run offline: Anthropic's Messages API (Claude Code) here, and
//! OpenAI's Responses API (Codex, `responses`), Gemini's API (Gemini CLI,
//! `gemini`) and OpenAI's Chat Completions (Aider, OpenCode, `chat`) on
//! the same server and script.
//!
//! Claude Code sends `HEAD /` at start-up and one `POST /v1/messages` per
//! model call. A call that carries `tools` is a step of the user's turn and
//! is answered from the script: the next [`Turn`] (text, tool calls, or an
//! HTTP error). A call without `tools` is a side request (the session title,
//! a summary) and gets a short harmless answer without consuming the script.
//! Every request is kept ([`FakeApi::requests`]) so a test can check, say,
//! the `tool_result` Claude Code sent back.
//!
//! The server runs on its own thread and runtime, so synchronous tests and
//! the `doctor --agent` command use it alike; dropping the handle stops it.
//!
//! Long on purpose: the server and the SSE encoding of each content block
//! it streams are one protocol.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::Response;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use super::FakeApiError;
use super::stream::{Chunker, Pacer, Parts, Streaming};
use super::turn::{SIDE_ANSWER, ToolUse, Turn};

/// Largest request body accepted. Claude Code's requests carry the system
/// prompt, the tool schemas and the whole conversation: a few hundred KiB
/// in a test; 32 MiB leaves room for long transcripts and stays bounded.
pub const MAX_REQUEST_BYTES: usize = 32 << 20;

/// Requests kept for inspection; older ones are dropped first. A scenario
/// makes a few dozen.
pub const MAX_RECORDED_REQUESTS: usize = 512;

/// SSE events buffered between the script and the socket.
const SSE_QUEUE: usize = 64;

/// In a scripted tool input, replaced by the plan file path Claude Code
/// names in plan mode (`…/.claude/plans/<slug>.md`, a new name per
/// session), so a script can write the plan and call `ExitPlanMode`.
pub const PLAN_FILE_PLACEHOLDER: &str = "{{plan_file}}";

/// The directory part every plan file path has.
const PLAN_DIR_MARK: &str = "/.claude/plans/";

/// The model name the fake API reports.
const MODEL: &str = "claude-sonnet-4-5";

/// Anthropic's `error.type` for an HTTP status.
pub fn error_type(status: u16) -> &'static str {
    match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    }
}

/// The protocol a request spoke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// Anthropic Messages (`POST /v1/messages`).
    Messages,
    /// OpenAI Responses (`POST …/responses`).
    Responses,
    /// Gemini (`POST …/models/<m>:streamGenerateContent`, `…:generateContent`).
    Gemini,
    /// OpenAI Chat Completions (`POST …/chat/completions`).
    Chat,
    /// Anything else (`HEAD /`, unknown paths).
    Other,
}

/// One request the fake API received.
#[derive(Debug, Clone)]
pub struct Request {
    pub protocol: Protocol,
    pub method: String,
    pub path: String,
    /// The JSON body, `Value::Null` when there was none or it was not JSON.
    pub body: Value,
    /// Whether the request was answered from the script.
    pub scripted: bool,
}

impl Request {
    /// The `tool_result` blocks of the last user message, as text.
    pub fn tool_results(&self) -> Vec<String> {
        match self.protocol {
            Protocol::Responses => return super::responses::tool_results(&self.body),
            Protocol::Gemini => return super::gemini::tool_results(&self.body),
            Protocol::Chat => return super::chat::tool_results(&self.body),
            _ => {}
        }
        let Some(messages) = self.body.get("messages").and_then(Value::as_array) else {
            return Vec::new();
        };
        let Some(last) = messages.last() else {
            return Vec::new();
        };
        let Some(blocks) = last.get("content").and_then(Value::as_array) else {
            return Vec::new();
        };
        blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
            .map(|b| match b.get("content") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Array(parts)) => parts
                    .iter()
                    .filter_map(|p| p.get("text").and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join("\n"),
                _ => String::new(),
            })
            .collect()
    }
}

#[derive(Default)]
struct Shared {
    script: VecDeque<Turn>,
    requests: VecDeque<Request>,
    /// Scripted calls that found the script empty.
    exhausted: u64,
    /// When each scripted answer's last frame was sent, oldest first
    /// (bounded like `requests`): where the model's turn ended, for
    /// latency measured from there.
    answered: VecDeque<Instant>,
    next_id: u64,
}

#[derive(Clone)]
struct AppState {
    shared: Arc<Mutex<Shared>>,
    streaming: Streaming,
}

/// A running fake API. Dropping it stops the server.
pub struct FakeApi {
    addr: SocketAddr,
    shared: Arc<Mutex<Shared>>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeApi {
    /// Starts the server on 127.0.0.1 (a free port) with `script`,
    /// streaming as a model does ([`Streaming::default`]).
    pub fn start(script: Vec<Turn>) -> Result<FakeApi, FakeApiError> {
        FakeApi::start_streaming(script, Streaming::default())
    }

    /// Like [`FakeApi::start`], with at least `pace` between streamed
    /// events, so the agent shows its busy spinner for longer.
    pub fn start_paced(script: Vec<Turn>, pace: Duration) -> Result<FakeApi, FakeApiError> {
        FakeApi::start_streaming(script, Streaming::paced(pace))
    }

    /// Like [`FakeApi::start`], streaming as `streaming` says.
    pub fn start_streaming(
        script: Vec<Turn>,
        streaming: Streaming,
    ) -> Result<FakeApi, FakeApiError> {
        let shared = Arc::new(Mutex::new(Shared {
            script: script.into(),
            ..Shared::default()
        }));
        let std_listener = std::net::TcpListener::bind(("127.0.0.1", 0))
            .map_err(|e| FakeApiError::io("bind the fake API on", "127.0.0.1:0", e))?;
        let addr = std_listener
            .local_addr()
            .map_err(|e| FakeApiError::io("read the address of", "the fake API", e))?;
        std_listener
            .set_nonblocking(true)
            .map_err(|e| FakeApiError::io("configure", "the fake API socket", e))?;
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let state = AppState {
            shared: shared.clone(),
            streaming,
        };
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), std::io::Error>>();
        let thread = std::thread::Builder::new()
            .name("fake-anthropic-api".into())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(r) => r,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                runtime.block_on(async move {
                    let listener = match tokio::net::TcpListener::from_std(std_listener) {
                        Ok(l) => l,
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return;
                        }
                    };
                    let _ = ready_tx.send(Ok(()));
                    let app = Router::new()
                        .fallback(handle)
                        .with_state(state)
                        .layer(axum::extract::DefaultBodyLimit::max(MAX_REQUEST_BYTES));
                    let _ = axum::serve(listener, app)
                        .with_graceful_shutdown(async {
                            let _ = stop_rx.await;
                        })
                        .await;
                });
            })
            .map_err(|e| FakeApiError::io("start a thread for", "the fake API", e))?;
        match ready_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(FakeApiError::io("start", "the fake API", e)),
            Err(_) => {
                return Err(FakeApiError::io(
                    "start",
                    "the fake API",
                    std::io::Error::other("its thread ended early"),
                ));
            }
        }
        Ok(FakeApi {
            addr,
            shared,
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }

    /// `http://127.0.0.1:PORT`, for `ANTHROPIC_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Appends turns to the script.
    pub fn push(&self, turns: impl IntoIterator<Item = Turn>) {
        lock(&self.shared).script.extend(turns);
    }

    /// Turns not yet answered.
    pub fn remaining(&self) -> usize {
        lock(&self.shared).script.len()
    }

    /// Scripted calls that came when the script was empty (answered with a
    /// short text so the agent ends its turn).
    pub fn exhausted(&self) -> u64 {
        lock(&self.shared).exhausted
    }

    /// When each scripted answer finished streaming (its last frame sent),
    /// oldest first.
    pub fn answered(&self) -> Vec<Instant> {
        lock(&self.shared).answered.iter().copied().collect()
    }

    /// The requests received so far, oldest first.
    pub fn requests(&self) -> Vec<Request> {
        lock(&self.shared).requests.iter().cloned().collect()
    }

    /// The requests answered from the script, oldest first.
    pub fn scripted_requests(&self) -> Vec<Request> {
        lock(&self.shared)
            .requests
            .iter()
            .filter(|r| r.scripted)
            .cloned()
            .collect()
    }
}

impl Drop for FakeApi {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The state lock; a panic elsewhere while holding it does not make the
/// script unreadable.
fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    shared
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What to answer a request with, decided under the lock.
enum Answer {
    Empty(StatusCode),
    Turn(Turn),
    Side,
}

async fn handle(
    State(state): State<AppState>,
    method: Method,
    uri: Uri,
    _headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_owned();
    let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let protocol = match () {
        _ if method == Method::POST && path == "/v1/messages" => Protocol::Messages,
        _ if method == Method::POST && path.ends_with("/responses") => Protocol::Responses,
        _ if method == Method::POST && super::gemini::is_gemini_path(&path) => Protocol::Gemini,
        _ if method == Method::POST && super::chat::is_chat_path(&path) => Protocol::Chat,
        _ => Protocol::Other,
    };
    let is_messages = protocol != Protocol::Other;
    let has_tools = match protocol {
        Protocol::Responses => super::responses::is_turn(&json),
        Protocol::Gemini => super::gemini::is_turn(&json),
        Protocol::Chat => super::chat::is_turn(&json),
        _ => json
            .get("tools")
            .and_then(Value::as_array)
            .is_some_and(|t| !t.is_empty()),
    };
    let streaming = json.get("stream").and_then(Value::as_bool) == Some(true);
    let (answer, id) = {
        let mut shared = lock(&state.shared);
        shared.next_id += 1;
        let id = shared.next_id;
        let answer = if !is_messages {
            match method {
                Method::HEAD | Method::GET if path == "/" => Answer::Empty(StatusCode::OK),
                _ => Answer::Empty(StatusCode::NOT_FOUND),
            }
        } else if !has_tools {
            Answer::Side
        } else {
            let turn = next_turn(&mut shared);
            Answer::Turn(match plan_file(&body) {
                Some(path) => with_plan_file(turn, &path),
                None => turn,
            })
        };
        if shared.requests.len() >= MAX_RECORDED_REQUESTS {
            shared.requests.pop_front();
        }
        shared.requests.push_back(Request {
            protocol,
            method: method.to_string(),
            path: path.clone(),
            body: json.clone(),
            scripted: matches!(answer, Answer::Turn(_)),
        });
        (answer, id)
    };
    let mut chunker = state.streaming.chunker(id);
    let scripted = matches!(answer, Answer::Turn(_));
    let (turn, pacer) = match answer {
        Answer::Empty(status) => return plain(status, Body::empty(), "text/plain"),
        // Side requests are answered in pieces too, without gaps, in the
        // protocol's own words.
        Answer::Side => {
            let side = match protocol {
                Protocol::Responses => super::responses::side_turn(&json),
                Protocol::Gemini => super::gemini::side_turn(&json),
                Protocol::Chat => super::chat::side_turn(),
                Protocol::Messages | Protocol::Other => Turn::text(SIDE_ANSWER),
            };
            let unpaced = Streaming {
                min_gap: Duration::ZERO,
                max_gap: Duration::ZERO,
                ..state.streaming
            };
            (side, unpaced.pacer(id))
        }
        Answer::Turn(turn) => (turn, state.streaming.pacer(id)),
    };
    let stream = Stream {
        chunker: &mut chunker,
        pacer,
        done: scripted.then(|| state.shared.clone()),
    };
    match protocol {
        Protocol::Responses => responses_reply(turn, id, stream),
        Protocol::Gemini => gemini_reply(turn, super::gemini::is_streamed(&path), stream),
        Protocol::Chat => chat_reply(turn, id, streaming, stream),
        Protocol::Messages | Protocol::Other => reply(turn, id, streaming, stream),
    }
}

/// How one answer streams: its pieces and its gaps, and where to note
/// its end (scripted answers only).
struct Stream<'a> {
    chunker: &'a mut Chunker,
    pacer: Pacer,
    done: Option<Arc<Mutex<Shared>>>,
}

/// An HTTP error `status` with `body` (each protocol words its own).
fn error_response(status: u16, body: Value) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    plain(status, Body::from(body.to_string()), "application/json")
}

/// A Responses answer: an HTTP error with OpenAI's error body, or the
/// turn streamed as SSE.
fn responses_reply(turn: Turn, id: u64, stream: Stream<'_>) -> Response {
    if let Turn::Error {
        status, message, ..
    } = &turn
    {
        return error_response(*status, super::responses::error_body(*status, message));
    }
    let frames = super::responses::sse_frames(&turn, id, stream.chunker);
    sse_response(frames, stream.pacer, stream.done)
}

/// A Gemini answer: an HTTP error with Google's error body, the whole
/// answer, or the turn streamed as SSE.
fn gemini_reply(turn: Turn, streamed: bool, stream: Stream<'_>) -> Response {
    if let Turn::Error {
        status, message, ..
    } = &turn
    {
        return error_response(*status, super::gemini::error_body(*status, message));
    }
    if !streamed {
        let body = super::gemini::whole(&turn).to_string();
        return plain(StatusCode::OK, Body::from(body), "application/json");
    }
    let frames = super::gemini::sse_frames(&turn, stream.chunker);
    sse_response(frames, stream.pacer, stream.done)
}

/// A Chat Completions answer: an HTTP error with OpenAI's error body, the
/// whole answer, or the turn streamed as SSE.
fn chat_reply(turn: Turn, id: u64, streaming: bool, stream: Stream<'_>) -> Response {
    if let Turn::Error {
        status, message, ..
    } = &turn
    {
        return error_response(*status, super::responses::error_body(*status, message));
    }
    if !streaming {
        let body = super::chat::whole(&turn, id).to_string();
        return plain(StatusCode::OK, Body::from(body), "application/json");
    }
    let frames = super::chat::sse_frames(&turn, id, stream.chunker);
    sse_response(frames, stream.pacer, stream.done)
}

/// Streams `frames` as `text/event-stream`, each followed by the gap
/// `pacer` draws.
fn sse_response(
    frames: Vec<Bytes>,
    mut pacer: Pacer,
    done: Option<Arc<Mutex<Shared>>>,
) -> Response {
    let (tx, rx) = mpsc::channel::<Result<Bytes, std::convert::Infallible>>(SSE_QUEUE);
    tokio::spawn(async move {
        let last = frames.len();
        for (i, frame) in frames.into_iter().enumerate() {
            if tx.send(Ok(frame)).await.is_err() {
                return;
            }
            if i + 1 == last {
                break;
            }
            let gap = pacer.next_gap();
            if !gap.is_zero() {
                tokio::time::sleep(gap).await;
            }
        }
        if let Some(shared) = done {
            let mut shared = lock(&shared);
            if shared.answered.len() >= MAX_RECORDED_REQUESTS {
                shared.answered.pop_front();
            }
            shared.answered.push_back(Instant::now());
        }
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    let mut response = plain(
        StatusCode::OK,
        Body::from_stream(stream),
        "text/event-stream",
    );
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-cache"),
    );
    response
}

/// Takes the next scripted turn; an error turn with `times > 1` stays at the
/// head with one fewer.
fn next_turn(shared: &mut Shared) -> Turn {
    match shared.script.front_mut() {
        Some(Turn::Error {
            status,
            message,
            times,
        }) if *times > 1 => {
            *times -= 1;
            Turn::Error {
                status: *status,
                message: message.clone(),
                times: 1,
            }
        }
        Some(_) => shared
            .script
            .pop_front()
            .unwrap_or(Turn::Text(String::new())),
        None => {
            shared.exhausted += 1;
            Turn::text("(the fake API's script is exhausted)")
        }
    }
}

/// The plan file path named in a request body: the `….md` path around
/// [`PLAN_DIR_MARK`].
fn plan_file(body: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(body).ok()?;
    let mark = text.find(PLAN_DIR_MARK)?;
    let start = text[..mark]
        .rfind(|c: char| c.is_whitespace() || c == '"' || c == '`')
        .map_or(0, |i| i + 1);
    let end = mark + text[mark..].find(".md")? + 3;
    let path = &text[start..end];
    (!path.contains(char::is_whitespace)).then(|| path.to_owned())
}

/// Replaces [`PLAN_FILE_PLACEHOLDER`] in the turn's tool inputs.
fn with_plan_file(turn: Turn, path: &str) -> Turn {
    fn walk(v: Value, path: &str) -> Value {
        match v {
            Value::String(s) => Value::String(s.replace(PLAN_FILE_PLACEHOLDER, path)),
            Value::Array(a) => a.into_iter().map(|x| walk(x, path)).collect(),
            Value::Object(o) => o.into_iter().map(|(k, x)| (k, walk(x, path))).collect(),
            other => other,
        }
    }
    match turn {
        Turn::Tools { text, tools } => Turn::Tools {
            text,
            tools: tools
                .into_iter()
                .map(|t| ToolUse {
                    input: walk(t.input, path),
                    name: t.name,
                })
                .collect(),
        },
        Turn::Thought { thinking, answer } => Turn::Thought {
            thinking,
            answer: Box::new(with_plan_file(*answer, path)),
        },
        other => other,
    }
}

fn plain(status: StatusCode, body: Body, content_type: &str) -> Response {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    if let Ok(v) = content_type.parse() {
        response.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    response
}

fn reply(turn: Turn, id: u64, streaming: bool, stream: Stream<'_>) -> Response {
    if let Turn::Error {
        status, message, ..
    } = &turn
    {
        let body = json!({
            "type": "error",
            "error": {"type": error_type(*status), "message": message},
        });
        let mut response = error_response(*status, body);
        if let Ok(v) = format!("req_fake_{id}").parse() {
            response.headers_mut().insert("request-id", v);
        }
        return response;
    }
    if !streaming {
        return plain(
            StatusCode::OK,
            Body::from(whole_message(&turn, id).to_string()),
            "application/json",
        );
    }
    let frames = sse_events(&turn, id, stream.chunker)
        .into_iter()
        .map(|(name, data)| Bytes::from(format!("event: {name}\ndata: {data}\n\n")))
        .collect();
    sse_response(frames, stream.pacer, stream.done)
}

/// The signature a thinking block carries (Claude Code sends it back).
const THINKING_SIGNATURE: &str = "fake-signature";

/// The content blocks of a text or tools turn.
fn blocks(turn: &Turn, id: u64) -> (Vec<Value>, &'static str) {
    let parts = Parts::of(turn);
    let stop = if parts.tools.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    };
    let mut blocks = Vec::new();
    if let Some(thinking) = parts.thinking {
        blocks.push(json!({"type": "thinking", "thinking": thinking,
            "signature": THINKING_SIGNATURE}));
    }
    if let Some(text) = parts.text {
        blocks.push(json!({"type": "text", "text": text}));
    }
    for (i, tool) in parts.tools.iter().enumerate() {
        blocks.push(json!({
            "type": "tool_use",
            "id": format!("toolu_fake{id:04}{i:02}"),
            "name": tool.name,
            "input": tool.input,
        }));
    }
    (blocks, stop)
}

fn usage(output_tokens: usize) -> Value {
    json!({
        "input_tokens": 100,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    })
}

fn whole_message(turn: &Turn, id: u64) -> Value {
    let (content, stop) = blocks(turn, id);
    json!({
        "id": format!("msg_fake{id:06}"),
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": null,
        "usage": usage(10),
    })
}

/// One `content_block_delta` event.
fn delta(index: usize, delta: Value) -> (&'static str, String) {
    (
        "content_block_delta",
        json!({"type": "content_block_delta", "index": index, "delta": delta}).to_string(),
    )
}

/// The SSE events (name, JSON data) of a streamed answer: each block's
/// text, thinking or tool input in pieces `chunker` cuts.
fn sse_events(turn: &Turn, id: u64, chunker: &mut Chunker) -> Vec<(&'static str, String)> {
    let (content, stop) = blocks(turn, id);
    let mut events = vec![
        (
            "message_start",
            json!({"type": "message_start", "message": {
                "id": format!("msg_fake{id:06}"),
                "type": "message",
                "role": "assistant",
                "model": MODEL,
                "content": [],
                "stop_reason": null,
                "stop_sequence": null,
                "usage": usage(1),
            }})
            .to_string(),
        ),
        ("ping", json!({"type": "ping"}).to_string()),
    ];
    let mut output_tokens = 1;
    for (index, block) in content.iter().enumerate() {
        let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
        let start = match kind {
            "text" => json!({"type": "text", "text": ""}),
            "thinking" => json!({"type": "thinking", "thinking": "", "signature": ""}),
            _ => json!({"type": "tool_use", "id": block.get("id"),
                "name": block.get("name"), "input": {}}),
        };
        events.push((
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": start})
                .to_string(),
        ));
        let (body, field, delta_type) = match kind {
            "text" => (
                block
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
                "text",
                "text_delta",
            ),
            "thinking" => (
                block
                    .get("thinking")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
                "thinking",
                "thinking_delta",
            ),
            _ => (
                block.get("input").cloned().unwrap_or(json!({})).to_string(),
                "partial_json",
                "input_json_delta",
            ),
        };
        for piece in chunker.split(&body) {
            output_tokens += 1 + piece.len() / 4;
            events.push(delta(index, json!({"type": delta_type, field: piece})));
        }
        if kind == "thinking" {
            events.push(delta(
                index,
                json!({"type": "signature_delta", "signature": THINKING_SIGNATURE}),
            ));
        }
        events.push((
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}).to_string(),
        ));
    }
    events.push((
        "message_delta",
        json!({"type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": null},
            "usage": {"output_tokens": output_tokens}})
        .to_string(),
    ));
    events.push(("message_stop", json!({"type": "message_stop"}).to_string()));
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_turn_answers_times_calls() {
        let mut shared = Shared {
            script: vec![Turn::error(529, "Overloaded", 2), Turn::text("ok")].into(),
            ..Shared::default()
        };
        assert!(matches!(
            next_turn(&mut shared),
            Turn::Error { status: 529, .. }
        ));
        assert!(matches!(
            next_turn(&mut shared),
            Turn::Error { status: 529, .. }
        ));
        assert_eq!(next_turn(&mut shared), Turn::text("ok"));
        assert_eq!(shared.exhausted, 0);
        next_turn(&mut shared);
        assert_eq!(shared.exhausted, 1);
    }

    #[test]
    fn the_plan_file_placeholder_takes_the_path_from_the_request() {
        let body = br#"{"messages":[{"content":"You should create your plan at /tmp/h/.claude/plans/plan-it-falcon.md using the Write tool"}]}"#;
        assert_eq!(
            plan_file(body).as_deref(),
            Some("/tmp/h/.claude/plans/plan-it-falcon.md")
        );
        let turn = Turn::tool(
            "Write",
            json!({"file_path": PLAN_FILE_PLACEHOLDER, "content": "x"}),
        );
        assert_eq!(
            with_plan_file(turn, "/p.md"),
            Turn::tool("Write", json!({"file_path": "/p.md", "content": "x"}))
        );
        assert_eq!(plan_file(b"no plans here"), None);
    }

    /// The deltas of one kind, joined.
    fn joined(events: &[(&str, String)], delta_type: &str, field: &str) -> (String, usize) {
        let pieces: Vec<String> = events
            .iter()
            .filter(|(n, _)| *n == "content_block_delta")
            .map(|(_, d)| serde_json::from_str::<Value>(d).unwrap())
            .filter(|d| d["delta"]["type"] == delta_type)
            .map(|d| d["delta"][field].as_str().unwrap().to_owned())
            .collect();
        assert!(pieces.iter().all(|p| p.chars().count() <= 8), "{pieces:?}");
        (pieces.concat(), pieces.len())
    }

    #[test]
    fn text_thinking_and_tool_input_stream_in_small_pieces() {
        let turn = Turn::think(
            "Let me think about the shop.",
            Turn::Tools {
                text: Some("I will list the files now.".into()),
                tools: vec![ToolUse::new("Bash", json!({"command": "ls -la"}))],
            },
        );
        let events = sse_events(&turn, 7, &mut Streaming::default().chunker(7));
        let (thinking, n) = joined(&events, "thinking_delta", "thinking");
        assert_eq!(thinking, "Let me think about the shop.");
        assert!(n >= 4, "{n} pieces");
        let (text, n) = joined(&events, "text_delta", "text");
        assert_eq!(text, "I will list the files now.");
        assert!(n >= 4, "{n} pieces");
        let (input, n) = joined(&events, "input_json_delta", "partial_json");
        assert_eq!(
            serde_json::from_str::<Value>(&input).unwrap(),
            json!({"command": "ls -la"})
        );
        assert!(n >= 3, "{n} pieces");
        assert!(events.iter().any(|(_, d)| d.contains("signature_delta")));
        let whole = whole_message(&turn, 7);
        assert_eq!(whole["content"][0]["type"], "thinking");
        assert_eq!(whole["content"][1]["text"], "I will list the files now.");
        assert_eq!(whole["stop_reason"], "tool_use");
    }

    #[test]
    fn tool_use_streams_its_input_as_json() {
        let turn = Turn::tool("Bash", json!({"command": "echo hi"}));
        let events = sse_events(&turn, 7, &mut Streaming::default().chunker(7));
        let names: Vec<&str> = events.iter().map(|(n, _)| *n).collect();
        assert_eq!(names[..3], ["message_start", "ping", "content_block_start"]);
        assert_eq!(
            names[names.len() - 3..],
            ["content_block_stop", "message_delta", "message_stop"]
        );
        let (partial, _) = joined(&events, "input_json_delta", "partial_json");
        assert_eq!(
            serde_json::from_str::<Value>(&partial).unwrap(),
            json!({"command": "echo hi"})
        );
        let stop: Value = serde_json::from_str(&events[events.len() - 2].1).unwrap();
        assert_eq!(stop["delta"]["stop_reason"], "tool_use");
    }
}
