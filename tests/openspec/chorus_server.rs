//! A local Chorus MCP server (axum on 127.0.0.1) that answers like the real
//! one: JSON-RPC 2.0 `tools/call` on `/api/mcp`, stateless, bearer key
//! (a bad key gets HTTP 401 with `{"error":"Invalid API key"}`, or an empty
//! body when configured so), 406 without `Accept: application/json,
//! text/event-stream`, SSE replies (`event: message` / `data: {json}`) or
//! plain JSON, tool failures as successful replies with `result.isError`,
//! and the backend habit of appending one `\n` to draft content on write.
//! Faults can be injected per tool. Reusable by any test area.

#![allow(dead_code)] // a fixture: each test uses part of it

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State as AxState;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use tokio::sync::oneshot;

/// How successful replies are framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyMode {
    Sse,
    Json,
}

/// A failure the server produces instead of running a tool.
#[derive(Debug, Clone)]
pub enum Fault {
    /// This HTTP status with this body.
    Status(u16, String),
    /// HTTP 200 with an empty body.
    EmptyOk,
    /// A JSON-RPC error object.
    RpcError(i64, String),
    /// A tool failure: `result.isError: true` with this text.
    IsError(String),
    /// A successful-looking result whose JSON text carries an `"error"` key.
    ErrorKey,
    /// HTTP 200 with a body that is not JSON.
    Garbage,
}

#[derive(Debug, Clone)]
pub struct Draft {
    pub proposal: String,
    pub kind: String,
    pub title: String,
    pub content: String,
}

#[derive(Debug, Clone)]
pub struct Document {
    pub project: String,
    pub kind: String,
    pub title: String,
    pub content: String,
    pub version: u64,
}

#[derive(Debug, Clone)]
pub struct Proposal {
    pub project: String,
    pub description: String,
}

#[derive(Debug, Clone)]
pub struct Comment {
    pub target_type: String,
    pub target: String,
    pub content: String,
}

/// Everything the server holds; tests read and change it directly.
#[derive(Debug)]
pub struct ServerState {
    pub api_key: String,
    pub reply: ReplyMode,
    /// Body of a 401; the real server sends `{"error":"Invalid API key"}`.
    pub unauthorized_body: String,
    pub drafts: BTreeMap<String, Draft>,
    pub documents: BTreeMap<String, Document>,
    pub proposals: BTreeMap<String, Proposal>,
    pub comments: Vec<Comment>,
    /// Raw request bodies of every `tools/call`, in order.
    pub requests: Vec<Bytes>,
    pub faults: HashMap<String, Fault>,
    /// Faults that fire once a tool has succeeded this many more times.
    pub faults_after: HashMap<String, (usize, Fault)>,
}

pub struct ChorusServer {
    pub url: String,
    pub api_key: String,
    state: Arc<Mutex<ServerState>>,
    shutdown: Option<oneshot::Sender<()>>,
}

impl ChorusServer {
    /// Starts on an ephemeral 127.0.0.1 port (inside a tokio runtime).
    pub async fn start() -> Self {
        let api_key = format!("cho_test_{}", uuid::Uuid::new_v4().simple());
        let state = Arc::new(Mutex::new(ServerState {
            api_key: api_key.clone(),
            reply: ReplyMode::Sse,
            unauthorized_body: r#"{"error":"Invalid API key"}"#.into(),
            drafts: BTreeMap::new(),
            documents: BTreeMap::new(),
            proposals: BTreeMap::new(),
            comments: Vec::new(),
            requests: Vec::new(),
            faults: HashMap::new(),
            faults_after: HashMap::new(),
        }));
        let app = Router::new()
            .route("/api/mcp", post(handle))
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (tx, rx) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = rx.await;
                })
                .await;
        });
        Self {
            url: format!("http://{addr}"),
            api_key,
            state,
            shutdown: Some(tx),
        }
    }

    pub fn state(&self) -> MutexGuard<'_, ServerState> {
        self.state.lock().expect("state lock")
    }

    pub fn add_proposal(&self, project: &str, description: &str) -> String {
        let id = uuid::Uuid::new_v4().to_string();
        let p = Proposal {
            project: project.into(),
            description: description.into(),
        };
        self.state().proposals.insert(id.clone(), p);
        id
    }

    pub fn add_document(&self, project: &str, kind: &str, title: &str, content: &str) -> String {
        let id = uuid::Uuid::new_v4().to_string();
        let d = Document {
            project: project.into(),
            kind: kind.into(),
            title: title.into(),
            content: content.into(),
            version: 1,
        };
        self.state().documents.insert(id.clone(), d);
        id
    }

    pub fn set_fault(&self, tool: &str, fault: Fault) {
        self.state().faults.insert(tool.into(), fault);
    }

    /// Lets `tool` succeed `successes` more times, then fail with `fault`.
    pub fn set_fault_after(&self, tool: &str, successes: usize, fault: Fault) {
        self.state()
            .faults_after
            .insert(tool.into(), (successes, fault));
    }

    pub fn clear_faults(&self) {
        let mut st = self.state();
        st.faults.clear();
        st.faults_after.clear();
    }

    /// The `arguments.content` strings sent, decoded from the raw request bodies.
    pub fn sent_contents(&self) -> Vec<String> {
        self.state()
            .requests
            .iter()
            .filter_map(|b| serde_json::from_slice::<Value>(b).ok())
            .filter_map(|v| {
                v["params"]["arguments"]["content"]
                    .as_str()
                    .map(str::to_string)
            })
            .collect()
    }
}

impl Drop for ChorusServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

fn rpc_error_body(id: &Value, code: i64, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

async fn handle(
    AxState(state): AxState<Arc<Mutex<ServerState>>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let header = |name: header::HeaderName| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let mut st = state.lock().expect("state lock");
    if header(header::AUTHORIZATION) != format!("Bearer {}", st.api_key) {
        let body = st.unauthorized_body.clone();
        return (
            StatusCode::UNAUTHORIZED,
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response();
    }
    let accept = header(header::ACCEPT);
    if !(accept.contains("application/json") && accept.contains("text/event-stream")) {
        let body = rpc_error_body(
            &Value::Null,
            -32000,
            "Not Acceptable: Client must accept both application/json and text/event-stream",
        );
        return (
            StatusCode::NOT_ACCEPTABLE,
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response();
    }
    if !header(header::CONTENT_TYPE).starts_with("application/json") {
        let body = rpc_error_body(
            &Value::Null,
            -32000,
            "Unsupported Media Type: Content-Type must be application/json",
        );
        return (StatusCode::UNSUPPORTED_MEDIA_TYPE, body).into_response();
    }
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return (
            StatusCode::BAD_REQUEST,
            rpc_error_body(&Value::Null, -32700, "Parse error"),
        )
            .into_response();
    };
    st.requests.push(body.clone());
    let id = request["id"].clone();
    if request["method"] != "tools/call" {
        return reply(st.reply, rpc_error_body(&id, -32601, "Method not found"));
    }
    let tool = request["params"]["name"].as_str().unwrap_or("").to_string();
    let args = request["params"]["arguments"].clone();
    let mut fault = st.faults.get(&tool).cloned();
    if let Some((remaining, later)) = st.faults_after.get_mut(&tool) {
        if *remaining == 0 {
            fault = Some(later.clone());
        } else {
            *remaining -= 1;
        }
    }
    let result = match fault {
        Some(Fault::Status(code, body)) => {
            let code = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            return (code, body).into_response();
        }
        Some(Fault::EmptyOk) => return (StatusCode::OK, "").into_response(),
        Some(Fault::Garbage) => {
            return (StatusCode::OK, "<html>Bad Gateway</html>").into_response();
        }
        Some(Fault::RpcError(code, message)) => {
            return reply(st.reply, rpc_error_body(&id, code, &message));
        }
        Some(Fault::IsError(text)) => Err(text),
        Some(Fault::ErrorKey) => Ok(json!({"success": false, "error": "simulated failure"})),
        None => run_tool(&mut st, &tool, &args),
    };
    let result = match result {
        Ok(v) => json!({"content": [{"type": "text", "text": v.to_string()}]}),
        Err(text) => json!({"content": [{"type": "text", "text": text}], "isError": true}),
    };
    let body = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
    reply(st.reply, body)
}

fn reply(mode: ReplyMode, json_body: String) -> Response {
    match mode {
        ReplyMode::Json => {
            ([(header::CONTENT_TYPE, "application/json")], json_body).into_response()
        }
        ReplyMode::Sse => {
            let framed = format!("event: message\ndata: {json_body}\n\n");
            (
                [
                    (header::CONTENT_TYPE, "text/event-stream"),
                    (header::CACHE_CONTROL, "no-cache"),
                ],
                framed,
            )
                .into_response()
        }
    }
}

fn arg<'a>(args: &'a Value, key: &str) -> Result<&'a str, String> {
    args[key]
        .as_str()
        .ok_or_else(|| format!("Invalid arguments: {key} is required"))
}

fn run_tool(st: &mut ServerState, tool: &str, args: &Value) -> Result<Value, String> {
    let new_id = || uuid::Uuid::new_v4().to_string();
    match tool {
        "chorus_pm_add_document_draft" => {
            let proposal = arg(args, "proposalUuid")?;
            if !st.proposals.contains_key(proposal) {
                return Err(format!("Proposal not found: {proposal}"));
            }
            let id = new_id();
            let draft = Draft {
                proposal: proposal.into(),
                kind: arg(args, "type")?.into(),
                title: arg(args, "title")?.into(),
                content: format!("{}\n", arg(args, "content")?),
            };
            st.drafts.insert(id.clone(), draft);
            Ok(json!({"draftUuid": id}))
        }
        "chorus_pm_update_document_draft" => {
            let id = arg(args, "draftUuid")?;
            let proposal = arg(args, "proposalUuid")?;
            let content = format!("{}\n", arg(args, "content")?);
            match st.drafts.get_mut(id) {
                Some(d) if d.proposal == proposal => {
                    d.content = content;
                    Ok(json!({"draftUuid": id, "updated": true}))
                }
                _ => Err(format!("Document draft not found: {id}")),
            }
        }
        "chorus_pm_update_document" => {
            let id = arg(args, "documentUuid")?;
            let content = arg(args, "content")?.to_string();
            let doc = st
                .documents
                .get_mut(id)
                .ok_or_else(|| format!("Document not found: {id}"))?;
            doc.content = content;
            doc.version += 1;
            Ok(json!({"uuid": id, "version": doc.version}))
        }
        "chorus_get_documents" => {
            let project = arg(args, "projectUuid")?;
            let kind = args["type"].as_str();
            let page = args["page"].as_u64().unwrap_or(1).max(1) as usize;
            let size = args["pageSize"].as_u64().unwrap_or(20).clamp(1, 100) as usize;
            let all: Vec<Value> = st
                .documents
                .iter()
                .filter(|(_, d)| d.project == project && kind.is_none_or(|k| d.kind == k))
                .map(|(id, d)| json!({"uuid": id, "title": d.title, "type": d.kind, "version": d.version}))
                .collect();
            let docs: Vec<Value> = all
                .iter()
                .skip((page - 1) * size)
                .take(size)
                .cloned()
                .collect();
            Ok(json!({"documents": docs, "total": all.len(), "page": page, "pageSize": size}))
        }
        "chorus_get_document" => {
            let id = arg(args, "documentUuid")?;
            let d = st
                .documents
                .get(id)
                .ok_or_else(|| format!("Document not found: {id}"))?;
            Ok(
                json!({"uuid": id, "title": d.title, "type": d.kind, "content": d.content, "version": d.version}),
            )
        }
        "chorus_get_proposal" => {
            let id = arg(args, "proposalUuid")?;
            let p = st
                .proposals
                .get(id)
                .ok_or_else(|| format!("Proposal not found: {id}"))?;
            let drafts: Vec<Value> = st
                .drafts
                .iter()
                .filter(|(_, d)| d.proposal == id)
                .map(|(uuid, d)| json!({"uuid": uuid, "type": d.kind, "title": d.title, "content": d.content}))
                .collect();
            Ok(
                json!({"uuid": id, "projectUuid": p.project, "description": p.description, "status": "approved", "documentDrafts": drafts}),
            )
        }
        "chorus_add_comment" => {
            let comment = Comment {
                target_type: arg(args, "targetType")?.into(),
                target: arg(args, "targetUuid")?.into(),
                content: arg(args, "content")?.into(),
            };
            st.comments.push(comment);
            Ok(json!({"uuid": new_id()}))
        }
        other => Err(format!("Unknown tool: {other}")),
    }
}
