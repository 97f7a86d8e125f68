//! A local Feishu: the Open API endpoints and the long-connection WebSocket,
//! speaking the real wire protocol on 127.0.0.1, with fault knobs. Reusable
//! by every test area and bench (`clawmux_testkit::fake_feishu::FakeFeishu`).
//!
//! ```ignore
//! let fake = FakeFeishu::start().await;
//! let config = fake.config();                      // FeishuConfig pointing at it
//! let api = Api::new(config.clone());
//! let mut intake = Intake::long_connection(config, Arc::new(MemoryDedupe::default()));
//! let pushed = fake.push_message("oc_chat", "ou_user", "/gsd:progress");
//! // … intake.recv() yields MessageReceived; the bot answers with api.send(…)
//! let card = fake.wait_for_card(|r| r.card_text().contains("done"), Duration::from_secs(5)).await;
//! ```
//!
//! What it serves:
//! - `POST /open-apis/auth/v3/tenant_access_token/internal`: tokens `t-<n>`
//!   (expiry set by [`FakeFeishu::set_token_expire`]); a wrong secret gets code 10014.
//! - `POST /open-apis/im/v1/messages`, `POST …/:id/reply`, `PATCH …/:id`:
//!   recorded ([`FakeFeishu::sent_cards`]), deduped on `uuid` like Feishu,
//!   card content validated (JSON 2.0, at most 30 KB, no `action` tag:
//!   otherwise code 230099). A bad token gets code 99991663. Feishu's
//!   limits of 5 a second per chat (sends and replies) and per updated
//!   message are enforced with its code 230020 (HTTP 400).
//! - `POST /callback/ws/endpoint` and a WebSocket speaking `pbbp2` frames:
//!   answers pings with pongs, pushes events (`type=event`) and card actions
//!   (`type=card`), whole or in `sum>1` fragments, records acks, and like
//!   Feishu redelivers unacknowledged events when the client reconnects.
//!
//! - CardKit (`POST /open-apis/cardkit/v1/cards`, `PUT …/elements/:id/content`,
//!   `PATCH …/settings`, `PUT …/cards/:id`) and messages showing an entity by `card_id`, with
//!   Feishu's sequence, uuid, rate and streaming rules (see `cardkit`).
//! - `POST /open-apis/im/v1/images`: uploads checked as Feishu documents
//!   them (type, size, format, resolution; see `images`); a card whose
//!   `img` names a key it did not issue is refused (230099).
//!
//! Faults: [`fail_next`](FakeFeishu::fail_next) (HTTP 500), [`fail_for`](FakeFeishu::fail_for)
//! (503 for a while), [`fail_after_accept_next`](FakeFeishu::fail_after_accept_next)
//! (message stored, then 500), [`rate_limit_next`](FakeFeishu::rate_limit_next)
//! (429 + `x-ogw-ratelimit-reset`), [`outage_for`](FakeFeishu::outage_for)
//! (Feishu down: 500 and 429 in turn, token requests included),
//! [`expire_tokens`](FakeFeishu::expire_tokens),
//! [`drop_ws`](FakeFeishu::drop_ws), [`set_pong`](FakeFeishu::set_pong), [`redeliver`](FakeFeishu::redeliver).

mod cardkit;
pub use cardkit::{CardFault, Entity};
mod images;
pub use images::UploadedImage;

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, patch, post, put};
use base64::Engine;
use clawmux::feishu::pbbp2::{Frame, METHOD_CONTROL, METHOD_DATA};
use clawmux::feishu::{Domain, FeishuConfig};
use futures_util::{SinkExt, StreamExt};
use prost::Message as _;
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};
use tokio::task::JoinHandle;
use tokio::time::{Duration, Instant, timeout_at};
use tokio_tungstenite::tungstenite::Message as WsMessage;

/// Like real app ids: `cli_` and 16 hex digits (the Node SDK refuses others).
pub const APP_ID: &str = "cli_a1b2c3d4e5f60718";
/// The bot's own open id ([`message_event`] mentions it).
pub const BOT_OPEN_ID: &str = "ou_bot";
pub const APP_SECRET: &str = "fake-secret";
/// `service_id` in the WebSocket URL; pings must carry it.
pub const SERVICE_ID: i32 = 33;
/// Feishu's limit on a card message's request body, in bytes (the card JSON
/// is escaped again inside it); over it Feishu answers 230025.
const MAX_BODY_BYTES: usize = 30 * 1024;

/// What kind of API call a [`Recorded`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Send,
    Reply,
    Patch,
    /// A `msg_type: file` message ([`Recorded::card`] is its content).
    File,
}

/// One accepted message call.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub kind: Kind,
    /// The message created (send/reply) or updated (patch).
    pub message_id: String,
    /// `receive_id_type` and `receive_id` of a send; the parent of a reply.
    pub target: String,
    pub uuid: Option<String>,
    /// The card, parsed from `content` (for a card entity: the entity's
    /// card when the message was sent; [`FakeFeishu::entity`] has it now).
    pub card: Value,
    /// The card entity the message shows, when it was sent by `card_id`.
    pub card_id: Option<String>,
    pub at: Instant,
}

impl Recorded {
    /// The markdown text a reader sees, joined by newlines: closed
    /// collapsible panels stay closed (see [`Recorded::panel_text`]).
    pub fn card_text(&self) -> String {
        let mut out = Vec::new();
        collect_markdown(&self.card, &mut out);
        out.join("\n")
    }

    /// The markdown inside the card's collapsible panels, and whether each
    /// is shown expanded.
    pub fn panels(&self) -> Vec<(bool, String)> {
        let elements = self.card["body"]["elements"].as_array();
        (elements.into_iter().flatten())
            .filter(|e| e["tag"] == "collapsible_panel")
            .map(|panel| {
                let mut out = Vec::new();
                collect_markdown(&panel["elements"], &mut out);
                (panel["expanded"] == true, out.join("\n"))
            })
            .collect()
    }

    pub fn title(&self) -> &str {
        self.card["header"]["title"]["content"]
            .as_str()
            .unwrap_or_default()
    }
}

fn collect_markdown(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(o) => {
            if o.get("tag").and_then(Value::as_str) == Some("collapsible_panel")
                && o.get("expanded") != Some(&Value::Bool(true))
            {
                return;
            }
            if o.get("tag").and_then(Value::as_str) == Some("markdown")
                && let Some(c) = o.get("content").and_then(Value::as_str)
            {
                out.push(c.to_string());
            }
            o.values().for_each(|v| collect_markdown(v, out));
        }
        Value::Array(a) => a.iter().for_each(|v| collect_markdown(v, out)),
        _ => {}
    }
}

/// An acknowledgement the client sent for a pushed event.
#[derive(Debug, Clone)]
pub struct Ack {
    /// `code` of the ack payload (200 expected).
    pub code: i64,
    /// The handler's answer (decoded from base64 `data`).
    pub answer: Value,
    pub biz_rt: Option<String>,
    /// Time from the (last) push to the ack.
    pub latency: Duration,
}

/// An event pushed to the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pushed {
    /// The frame's `message_id` header (acks are matched on it).
    pub frame_id: String,
    pub event_id: String,
    /// The chat message id (`om_…`) of a message event.
    pub message_id: String,
}

#[derive(Default)]
struct State_ {
    // auth
    token_seq: u64,
    valid_tokens: HashSet<String>,
    /// When each token handed out stops being valid (its `expire`).
    token_expiry: HashMap<String, Instant>,
    /// The code an invalid or expired tenant token is answered with
    /// (99991663 or 99991665: Feishu uses both).
    invalid_token_code: i64,
    /// Recent sends and replies per chat, for Feishu's 5 QPS per chat;
    /// None: not enforced.
    chat_qps: Option<Qps>,
    /// Recent updates per message, for Feishu's 5 QPS per updated
    /// message; None: not enforced.
    message_qps: Option<Qps>,
    /// The chat each known message is in (`chat_id:oc_…`): a reply counts
    /// toward its parent's chat.
    chat_of: HashMap<String, String>,
    token_expire_secs: u64,
    token_requests: u32,
    // faults
    fail_next: u32,
    fail_until: Option<Instant>,
    fail_after_accept: u32,
    rate_limit_next: u32,
    rate_limit_reset_secs: u64,
    outage_until: Option<Instant>,
    outage_reset_secs: u64,
    /// Answers the outage gave: HTTP 500s and 429s.
    outage_500s: u32,
    outage_429s: u32,
    /// Codes to answer the next message calls with (HTTP 400), in order.
    reject_next: Vec<(i64, String)>,
    /// Uploaded files: file_key -> (name, bytes).
    files: BTreeMap<String, (String, Vec<u8>)>,
    /// Uploaded images, oldest first.
    uploaded_images: Vec<UploadedImage>,
    /// Reactions added: (message id, emoji type).
    reactions: Vec<(String, String)>,
    /// Images users sent, by (message id, file key).
    images: HashMap<(String, String), Vec<u8>>,
    /// How long an image download takes before its bytes come.
    image_delay: Duration,
    bot_info_requests: u32,
    api_attempts: u32,
    attempt_times: Vec<Instant>,
    // messages
    msg_seq: u64,
    by_uuid: HashMap<String, String>,
    existing: HashSet<String>,
    deleted: HashSet<String>,
    recorded: Vec<Recorded>,
    // long connection
    ping_interval_secs: u64,
    reconnect_count: i64,
    reconnect_interval_secs: u64,
    reconnect_nonce_secs: u64,
    /// The endpoint refuses with this code and message.
    refuse_endpoint: Option<(i64, String)>,
    /// The WebSocket handshake is refused: HTTP status, `handshake-autherrcode`, `handshake-msg`.
    refuse_handshake: Option<(u16, i64, String)>,
    endpoint_requests: u32,
    pong: bool,
    connections: u32,
    pings: u32,
    bad_pings: u32,
    frame_seq: u64,
    event_seq: u64,
    unacked: BTreeMap<String, (Vec<Frame>, Instant)>,
    /// Every pushed event's frames, for redelivery.
    history: HashMap<String, Vec<Frame>>,
    acks: HashMap<String, Vec<Ack>>,
    current_ws: Option<mpsc::UnboundedSender<WsCmd>>,
    /// Seconds added to the `Date` header of every HTTP answer (a Feishu
    /// whose clock differs from the host's).
    clock_offset_secs: i64,
    /// Close frames the fake sent, and those the client answered.
    closes_sent: u32,
    closes_answered: u32,
    cardkit: cardkit::CardKit,
}

enum WsCmd {
    Send(Vec<Frame>),
    Drop,
    /// Send a close frame and wait for the client's (RFC 6455 §5.5.1).
    Close,
}

/// How long the fake waits for the client's close frame after its own.
const CLOSE_ANSWER_WAIT: Duration = Duration::from_secs(5);

struct Shared {
    state: Mutex<State_>,
    changed: Notify,
    ws_addr: SocketAddr,
}

impl Shared {
    /// Look without changing anything (waiters are not woken).
    fn read<T>(&self, f: impl FnOnce(&State_) -> T) -> T {
        f(&self.state.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Change the state and wake everyone waiting on it.
    fn with<T>(&self, f: impl FnOnce(&mut State_) -> T) -> T {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let out = f(&mut s);
        drop(s);
        self.changed.notify_waiters();
        out
    }
}

/// The fake Feishu. Stops when dropped.
pub struct FakeFeishu {
    shared: Arc<Shared>,
    http_addr: SocketAddr,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for FakeFeishu {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
        self.shared.with(|s| {
            if let Some(ws) = s.current_ws.take() {
                let _ = ws.send(WsCmd::Drop);
            }
        });
    }
}

impl FakeFeishu {
    /// Start on 127.0.0.1 (ephemeral ports): HTTP API and WebSocket.
    pub async fn start() -> FakeFeishu {
        let http = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind fake Feishu HTTP");
        let ws = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind fake Feishu WS");
        let http_addr = http.local_addr().expect("http addr");
        let ws_addr = ws.local_addr().expect("ws addr");
        let shared = Arc::new(Shared {
            state: Mutex::new(State_ {
                token_expire_secs: 7200,
                invalid_token_code: 99991663,
                chat_qps: Some(Qps::default()),
                message_qps: Some(Qps::default()),
                ping_interval_secs: 120,
                reconnect_count: -1,
                reconnect_interval_secs: 1,
                reconnect_nonce_secs: 0,
                pong: true,
                ..Default::default()
            }),
            changed: Notify::new(),
            ws_addr,
        });
        let app = Router::new()
            .route(
                "/open-apis/auth/v3/tenant_access_token/internal",
                post(token),
            )
            .route("/open-apis/im/v1/messages", post(send))
            .route("/open-apis/im/v1/messages/{id}/reply", post(reply))
            .route("/open-apis/im/v1/messages/{id}", patch(patch_message))
            .route("/open-apis/im/v1/messages/{id}/reactions", post(reaction))
            .route(
                "/open-apis/im/v1/messages/{id}/resources/{key}",
                get(resource),
            )
            .route("/open-apis/im/v1/files", post(upload_file))
            .route(
                "/open-apis/im/v1/images",
                post(images::upload)
                    .layer(axum::extract::DefaultBodyLimit::max(images::MAX_BODY_BYTES)),
            )
            .route("/open-apis/bot/v3/info", get(bot_info))
            .route("/open-apis/cardkit/v1/cards", post(cardkit::create))
            .route(
                "/open-apis/cardkit/v1/cards/{card_id}/elements/{element_id}/content",
                put(cardkit::content),
            )
            .route(
                "/open-apis/cardkit/v1/cards/{card_id}/settings",
                patch(cardkit::settings),
            )
            .route("/open-apis/cardkit/v1/cards/{card_id}", put(cardkit::full))
            .route("/callback/ws/endpoint", post(ws_endpoint))
            .layer(axum::middleware::map_response_with_state(
                Arc::clone(&shared),
                dated,
            ))
            .with_state(Arc::clone(&shared));
        let http_task = tokio::spawn(async move {
            let _ = axum::serve(http, app).await;
        });
        let ws_shared = Arc::clone(&shared);
        let ws_task = tokio::spawn(async move {
            while let Ok((stream, _)) = ws.accept().await {
                tokio::spawn(serve_ws(Arc::clone(&ws_shared), stream));
            }
        });
        FakeFeishu {
            shared,
            http_addr,
            tasks: vec![http_task, ws_task],
        }
    }

    pub fn base_url(&self) -> String {
        format!("http://{}", self.http_addr)
    }

    /// A config with the fake's credentials and URL.
    pub fn config(&self) -> FeishuConfig {
        FeishuConfig::new(APP_ID, APP_SECRET, Domain::Custom(self.base_url()))
    }

    // ---- knobs -----------------------------------------------------------

    /// `expire` (seconds) of the tokens handed out from now on.
    pub fn set_token_expire(&self, secs: u64) {
        self.shared.with(|s| s.token_expire_secs = secs);
    }

    /// Answer an invalid or expired token with `code` (99991663 or
    /// 99991665) from now on.
    pub fn set_invalid_token_code(&self, code: i64) {
        self.shared.with(|s| s.invalid_token_code = code);
    }

    /// Whether sends and replies over 5 a second to one chat are refused
    /// with 230020 (on unless a test turns it off).
    pub fn enforce_chat_qps(&self, on: bool) {
        self.shared.with(|s| s.chat_qps = on.then(Qps::default));
    }

    /// Sends and replies refused with 230020 (over 5 a second to one chat).
    pub fn chat_limited(&self) -> u32 {
        self.shared
            .read(|s| s.chat_qps.as_ref().map_or(0, |q| q.refused))
    }

    /// Whether updates over 5 a second to one message are refused with
    /// 230020 (on unless a test turns it off).
    pub fn enforce_message_qps(&self, on: bool) {
        self.shared.with(|s| s.message_qps = on.then(Qps::default));
    }

    /// Updates refused with 230020 (over 5 a second to one message).
    pub fn patch_limited(&self) -> u32 {
        self.shared
            .read(|s| s.message_qps.as_ref().map_or(0, |q| q.refused))
    }

    /// Invalidate every token handed out so far (as if they expired).
    pub fn expire_tokens(&self) {
        self.shared.with(|s| s.valid_tokens.clear());
    }

    /// Answer the next `n` API requests with HTTP 500.
    pub fn fail_next(&self, n: u32) {
        self.shared.with(|s| s.fail_next = n);
    }

    /// Answer every API request with HTTP 503 for `d`.
    pub fn fail_for(&self, d: Duration) {
        self.shared
            .with(|s| s.fail_until = Some(Instant::now() + d));
    }

    /// Store the next `n` sends/replies, then answer HTTP 500 anyway (the
    /// client cannot know it worked: only `uuid` saves it from a duplicate).
    pub fn fail_after_accept_next(&self, n: u32) {
        self.shared.with(|s| s.fail_after_accept = n);
    }

    /// Answer the next `n` API requests as Feishu limits an app: HTTP 400,
    /// code 99991400 and `x-ogw-ratelimit-reset: reset_secs`.
    pub fn rate_limit_next(&self, n: u32, reset_secs: u64) {
        self.shared.with(|s| {
            s.rate_limit_next = n;
            s.rate_limit_reset_secs = reset_secs;
        });
    }

    /// Feishu down for `d`: every API request (token requests included) is
    /// answered with HTTP 500 and 429 in turn, the 429 as
    /// [`rate_limit_next`](Self::rate_limit_next) gives it (`reset_secs`).
    pub fn outage_for(&self, d: Duration, reset_secs: u64) {
        self.shared.with(|s| {
            s.outage_until = Some(Instant::now() + d);
            s.outage_reset_secs = reset_secs;
        });
    }

    /// Answer the next message calls (send, reply, patch, file) with these
    /// Feishu codes, one each, HTTP 400: e.g. 230002 (bot not in chat).
    pub fn reject_next(&self, codes: &[(i64, &str)]) {
        self.shared.with(|s| {
            s.reject_next
                .extend(codes.iter().map(|(c, m)| (*c, m.to_string())))
        });
    }

    /// The four `ClientConfig` values the endpoint and every pong announce.
    pub fn set_client_config(&self, ping: u64, count: i64, interval: u64, nonce: u64) {
        self.shared.with(|s| {
            s.ping_interval_secs = ping;
            s.reconnect_count = count;
            s.reconnect_interval_secs = interval;
            s.reconnect_nonce_secs = nonce;
        });
    }

    /// The endpoint refuses with `code` (None: serves again).
    pub fn refuse_endpoint(&self, refusal: Option<(i64, &str)>) {
        self.shared
            .with(|s| s.refuse_endpoint = refusal.map(|(c, m)| (c, m.to_string())));
    }

    /// The WebSocket handshake is refused with HTTP `status` and the
    /// `handshake-*` headers (None: accepted again).
    pub fn refuse_handshake(&self, refusal: Option<(u16, i64, &str)>) {
        self.shared
            .with(|s| s.refuse_handshake = refusal.map(|(st, c, m)| (st, c, m.to_string())));
    }

    /// Endpoint requests so far.
    pub fn endpoint_requests(&self) -> u32 {
        self.shared.read(|s| s.endpoint_requests)
    }

    /// Files uploaded: (file_key, file name, bytes).
    pub fn files(&self) -> Vec<(String, String, Vec<u8>)> {
        self.shared.read(|s| {
            s.files
                .iter()
                .map(|(k, (n, b))| (k.clone(), n.clone(), b.clone()))
                .collect()
        })
    }

    /// Reactions added: (message id, emoji type).
    pub fn reactions(&self) -> Vec<(String, String)> {
        self.shared.read(|s| s.reactions.clone())
    }

    /// An image a user sent in message `message_id` (downloadable as a resource).
    pub fn add_image(&self, message_id: &str, file_key: &str, bytes: &[u8]) {
        self.shared.with(|s| {
            s.images.insert(
                (message_id.to_string(), file_key.to_string()),
                bytes.to_vec(),
            )
        });
    }

    /// Image downloads answer only after `delay` (a slow file server).
    pub fn set_image_delay(&self, delay: Duration) {
        self.shared.with(|s| s.image_delay = delay);
    }

    /// Bot info requests so far.
    pub fn bot_info_requests(&self) -> u32 {
        self.shared.read(|s| s.bot_info_requests)
    }

    /// Mark a message recalled: patches get code 230011.
    pub fn delete_message(&self, message_id: &str) {
        self.shared
            .with(|s| s.deleted.insert(message_id.to_string()));
    }

    /// `PingInterval` the endpoint announces (seconds).
    pub fn set_ping_interval(&self, secs: u64) {
        self.shared.with(|s| s.ping_interval_secs = secs);
    }

    /// Whether pings get pongs (false: a half-open connection).
    pub fn set_pong(&self, on: bool) {
        self.shared.with(|s| s.pong = on);
    }

    /// Cut the current WebSocket abruptly (no close frame).
    pub fn drop_ws(&self) {
        self.shared.with(|s| {
            if let Some(ws) = s.current_ws.take() {
                let _ = ws.send(WsCmd::Drop);
            }
        });
    }

    /// Answer with a `Date` `secs` off the host's clock.
    pub fn set_clock_offset(&self, secs: i64) {
        self.shared.with(|s| s.clock_offset_secs = secs);
    }

    /// Close the current WebSocket properly: a close frame, then the
    /// client's answer is awaited ([`closes`](Self::closes)).
    pub fn close_ws(&self) {
        self.shared.with(|s| {
            if let Some(ws) = s.current_ws.take() {
                let _ = ws.send(WsCmd::Close);
            }
        });
    }

    // ---- observations ----------------------------------------------------

    /// (close frames sent, close frames the client answered).
    pub fn closes(&self) -> (u32, u32) {
        self.shared.read(|s| (s.closes_sent, s.closes_answered))
    }

    /// Every accepted send, reply and patch, in order.
    pub fn sent_cards(&self) -> Vec<Recorded> {
        self.shared.read(|s| s.recorded.clone())
    }

    /// Every card received, a line each (for a failing test's message).
    pub fn listing(&self) -> String {
        self.sent_cards()
            .iter()
            .map(|c| format!("{:?} {}: {}", c.kind, c.title(), c.card_text()))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The `uuid`s received more than once (a card sent twice).
    pub fn duplicate_uuids(&self) -> Vec<String> {
        let mut uuids: Vec<String> = self
            .sent_cards()
            .into_iter()
            .filter_map(|c| c.uuid)
            .collect();
        uuids.sort_unstable();
        let mut twice: Vec<String> = uuids
            .windows(2)
            .filter(|w| w[0] == w[1])
            .map(|w| w[0].clone())
            .collect();
        twice.dedup();
        twice
    }

    pub fn token_requests(&self) -> u32 {
        self.shared.read(|s| s.token_requests)
    }

    /// API requests that reached the fault logic (token and messages).
    pub fn api_attempts(&self) -> u32 {
        self.shared.read(|s| s.api_attempts)
    }

    /// What the outage answered so far: (HTTP 500s, HTTP 429s).
    pub fn outage_answers(&self) -> (u32, u32) {
        self.shared.read(|s| (s.outage_500s, s.outage_429s))
    }

    /// When each API request arrived.
    pub fn attempt_times(&self) -> Vec<Instant> {
        self.shared.read(|s| s.attempt_times.clone())
    }

    pub fn connections(&self) -> u32 {
        self.shared.read(|s| s.connections)
    }

    /// Pings received, and how many had a wrong `service` or no `type=ping`.
    pub fn pings(&self) -> (u32, u32) {
        self.shared.read(|s| (s.pings, s.bad_pings))
    }

    /// Wait until `f` returns something, or `timeout` passes.
    pub async fn wait_until<T>(
        &self,
        timeout: Duration,
        mut f: impl FnMut(&FakeFeishu) -> Option<T>,
    ) -> Option<T> {
        let deadline = Instant::now() + timeout;
        loop {
            let notified = self.shared.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(v) = f(self) {
                return Some(v);
            }
            if timeout_at(deadline, notified).await.is_err() {
                return f(self);
            }
        }
    }

    /// The first recorded card matching `pred`, waiting up to `timeout`.
    pub async fn wait_for_card(
        &self,
        pred: impl Fn(&Recorded) -> bool,
        timeout: Duration,
    ) -> Option<Recorded> {
        self.wait_until(timeout, |f| f.sent_cards().into_iter().find(|r| pred(r)))
            .await
    }

    /// The first card matching `pred` among those recorded from index
    /// `from` on, waiting up to `timeout`; scans only those (a long run
    /// records thousands).
    pub async fn wait_for_card_from(
        &self,
        from: usize,
        pred: impl Fn(&Recorded) -> bool,
        timeout: Duration,
    ) -> Option<Recorded> {
        self.wait_until(timeout, |f| {
            f.shared
                .read(|s| s.recorded.iter().skip(from).find(|r| pred(r)).cloned())
        })
        .await
    }

    /// Cards recorded so far.
    pub fn recorded_count(&self) -> usize {
        self.shared.read(|s| s.recorded.len())
    }

    /// Wait until a WebSocket client is connected (at least `n` connections so far).
    pub async fn wait_connected(&self, n: u32, timeout: Duration) -> bool {
        self.wait_until(timeout, |f| {
            f.shared
                .read(|s| (s.connections >= n && s.current_ws.is_some()).then_some(()))
        })
        .await
        .is_some()
    }

    // ---- pushing events --------------------------------------------------

    /// Push `im.message.receive_v1` for a text message in a group chat.
    pub fn push_message(&self, chat_id: &str, open_id: &str, text: &str) -> Pushed {
        self.push_message_fragmented(chat_id, open_id, text, 1)
    }

    /// Same, split into `fragments` frames (`sum`/`seq` headers).
    pub fn push_message_fragmented(
        &self,
        chat_id: &str,
        open_id: &str,
        text: &str,
        fragments: usize,
    ) -> Pushed {
        let (event_id, message_id) = self.shared.with(|s| {
            s.event_seq += 1;
            (
                format!("ev_{}", s.event_seq),
                format!("om_in_{}", s.event_seq),
            )
        });
        let payload = message_event(&event_id, &message_id, chat_id, open_id, text);
        let frame_id = self.push_payload("event", &payload, fragments);
        Pushed {
            frame_id,
            event_id,
            message_id,
        }
    }

    /// Push an image message (`message_type: image`, in a group, with the
    /// bot mentioned) whose image [`add_image`](Self::add_image) serves.
    pub fn push_image_message(&self, chat_id: &str, open_id: &str, image: &[u8]) -> Pushed {
        let (event_id, message_id) = self.shared.with(|s| {
            s.event_seq += 1;
            (
                format!("ev_{}", s.event_seq),
                format!("om_in_{}", s.event_seq),
            )
        });
        let key = format!("img_v3_{event_id}");
        self.add_image(&message_id, &key, image);
        let mut payload = message_event(&event_id, &message_id, chat_id, open_id, "");
        payload["event"]["message"]["message_type"] = json!("image");
        payload["event"]["message"]["content"] = json!(json!({"image_key": key}).to_string());
        let frame_id = self.push_payload("event", &payload, 1);
        Pushed {
            frame_id,
            event_id,
            message_id,
        }
    }

    /// Push a text message (in a group, the bot mentioned) that replies to
    /// message `parent_id`, as Feishu sends a reply to one of the bot's
    /// cards (`parent_id` and `root_id` set).
    pub fn push_reply(&self, chat_id: &str, open_id: &str, text: &str, parent_id: &str) -> Pushed {
        let (event_id, message_id) = self.shared.with(|s| {
            s.event_seq += 1;
            (
                format!("ev_{}", s.event_seq),
                format!("om_in_{}", s.event_seq),
            )
        });
        let mut payload = message_event(&event_id, &message_id, chat_id, open_id, text);
        payload["event"]["message"]["parent_id"] = json!(parent_id);
        payload["event"]["message"]["root_id"] = json!(parent_id);
        let frame_id = self.push_payload("event", &payload, 1);
        Pushed {
            frame_id,
            event_id,
            message_id,
        }
    }

    /// Push a group message that @-mentions someone else (`mentioned`),
    /// not the bot.
    pub fn push_message_mentioning(
        &self,
        chat_id: &str,
        open_id: &str,
        text: &str,
        mentioned: &str,
    ) -> Pushed {
        let (event_id, message_id) = self.shared.with(|s| {
            s.event_seq += 1;
            (
                format!("ev_{}", s.event_seq),
                format!("om_in_{}", s.event_seq),
            )
        });
        let mut payload = message_event(&event_id, &message_id, chat_id, open_id, text);
        payload["event"]["message"]["mentions"] = json!([{"key": "@_user_1",
            "id": {"open_id": mentioned, "union_id": "on_x", "user_id": "x"},
            "name": "colleague", "tenant_key": "tk", "mentioned_type": "user"}]);
        let frame_id = self.push_payload("event", &payload, 1);
        Pushed {
            frame_id,
            event_id,
            message_id,
        }
    }

    /// Push a `card.action.trigger` as real Feishu does: a `type=event`
    /// frame (the official SDKs drop `type=card` frames unacknowledged).
    pub fn push_card_action_frame(&self, open_id: &str, message_id: &str, value: Value) -> Pushed {
        let event_id = self.shared.with(|s| {
            s.event_seq += 1;
            format!("ev_{}", s.event_seq)
        });
        let payload = card_action_event(&event_id, open_id, message_id, "oc_fake", value);
        let frame_id = self.push_payload("event", &payload, 1);
        Pushed {
            frame_id,
            event_id,
            message_id: message_id.to_string(),
        }
    }

    /// Push a card click and wait (up to 5 s) for the client's ack; returns
    /// the handler's answer (`{}`, `{"toast":…}`, `{"card":…}`).
    pub async fn push_card_action(
        &self,
        open_id: &str,
        message_id: &str,
        value: Value,
    ) -> Option<Value> {
        let pushed = self.push_card_action_frame(open_id, message_id, value);
        self.wait_ack(&pushed.frame_id, Duration::from_secs(5))
            .await
            .map(|a| a.answer)
    }

    /// Push any event JSON as `type` (`event` or `card`) frames.
    pub fn push_payload(&self, kind: &str, payload: &Value, fragments: usize) -> String {
        let bytes = payload.to_string().into_bytes();
        let message = &payload["event"]["message"];
        let in_chat = message["message_id"]
            .as_str()
            .zip(message["chat_id"].as_str());
        self.shared.with(|s| {
            if let Some((id, chat)) = in_chat {
                s.chat_of.insert(id.to_string(), format!("chat_id:{chat}"));
            }
            s.frame_seq += 1;
            let frame_id = format!("frame_{}", s.frame_seq);
            let frames = fragment(kind, &frame_id, s.frame_seq, &bytes, fragments.max(1));
            s.unacked
                .insert(frame_id.clone(), (frames.clone(), Instant::now()));
            s.history.insert(frame_id.clone(), frames.clone());
            if let Some(ws) = &s.current_ws {
                let _ = ws.send(WsCmd::Send(frames));
            }
            frame_id
        })
    }

    /// Send a pushed event's frames again, acknowledged or not (Feishu's
    /// duplicate delivery).
    pub fn redeliver(&self, frame_id: &str) {
        self.shared.with(|s| {
            if let (Some(frames), Some(ws)) = (s.history.get(frame_id), &s.current_ws) {
                let _ = ws.send(WsCmd::Send(frames.clone()));
            }
        });
    }

    /// Acks received for a frame id.
    pub fn acks(&self, frame_id: &str) -> Vec<Ack> {
        self.shared
            .read(|s| s.acks.get(frame_id).cloned().unwrap_or_default())
    }

    /// Pushed events not acknowledged yet.
    pub fn unacked(&self) -> usize {
        self.shared.read(|s| s.unacked.len())
    }

    pub async fn wait_ack(&self, frame_id: &str, timeout: Duration) -> Option<Ack> {
        self.wait_until(timeout, |f| f.acks(frame_id).into_iter().next())
            .await
    }
}

/// The JSON of an `im.message.receive_v1` event (schema 2.0).
pub fn message_event(
    event_id: &str,
    message_id: &str,
    chat_id: &str,
    open_id: &str,
    text: &str,
) -> Value {
    json!({
        "schema": "2.0",
        "header": {"event_id": event_id, "event_type": "im.message.receive_v1", "create_time": "1700000000000",
                   "token": "", "app_id": APP_ID, "tenant_key": "tk"},
        "event": {
            "sender": {"sender_id": {"open_id": open_id, "user_id": "u", "union_id": "on"}, "sender_type": "user", "tenant_key": "tk"},
            "message": {"message_id": message_id, "chat_id": chat_id, "chat_type": "group", "message_type": "text",
                        "content": json!({"text": format!("@_user_1 {text}")}).to_string(),
                        "mentions": [{"key": "@_user_1", "id": {"open_id": BOT_OPEN_ID, "union_id": "on_bot", "user_id": ""}, "name": "clawmux", "tenant_key": "tk", "mentioned_type": "bot"}],
                        "create_time": "1700000000000"}
        }
    })
}

/// The JSON of a `card.action.trigger` event (schema 2.0).
pub fn card_action_event(
    event_id: &str,
    open_id: &str,
    message_id: &str,
    chat_id: &str,
    value: Value,
) -> Value {
    json!({
        "schema": "2.0",
        "header": {"event_id": event_id, "event_type": "card.action.trigger", "token": "", "app_id": APP_ID},
        "event": {
            "operator": {"open_id": open_id, "tenant_key": "tk"},
            "token": "c-token",
            "action": {"value": value, "tag": "button"},
            "context": {"open_message_id": message_id, "open_chat_id": chat_id}
        }
    })
}

fn fragment(kind: &str, frame_id: &str, seq_id: u64, bytes: &[u8], n: usize) -> Vec<Frame> {
    let chunk = bytes.len().div_ceil(n).max(1);
    let parts: Vec<&[u8]> = if bytes.is_empty() {
        vec![bytes]
    } else {
        bytes.chunks(chunk).collect()
    };
    let sum = parts.len();
    parts
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            let mut f = Frame {
                seq_id,
                log_id: seq_id,
                service: SERVICE_ID,
                method: METHOD_DATA,
                payload: Some(p.to_vec()),
                ..Frame::default()
            };
            f.set_header("type", kind);
            f.set_header("message_id", frame_id);
            f.set_header("sum", sum.to_string());
            f.set_header("seq", i.to_string());
            f.set_header("trace_id", format!("trace-{frame_id}"));
            f
        })
        .collect()
}

/// Every answer carries a `Date`, as Feishu's do: the host's clock plus
/// the configured offset.
async fn dated(State(sh): St, mut resp: Response) -> Response {
    let offset = sh.read(|s| s.clock_offset_secs);
    let at = jiff::Timestamp::now().as_second().saturating_add(offset);
    let date = jiff::Timestamp::from_second(at).ok().and_then(|at| {
        jiff::fmt::rfc2822::DateTimePrinter::new()
            .timestamp_to_rfc9110_string(&at)
            .ok()
    });
    if let Some(v) = date.and_then(|d| d.parse().ok()) {
        resp.headers_mut().insert("date", v);
    }
    resp
}

async fn serve_ws(shared: Arc<Shared>, stream: tokio::net::TcpStream) {
    use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
    let refusal = shared.read(|s| s.refuse_handshake.clone());
    // A refused handshake carries Feishu's `handshake-*` headers.
    #[allow(clippy::result_large_err)] // tungstenite's callback signature
    let check = move |_: &Request, ok: Response| -> Result<Response, ErrorResponse> {
        match &refusal {
            None => Ok(ok),
            Some((status, code, msg)) => {
                let mut r = ErrorResponse::new(Some(msg.clone()));
                *r.status_mut() = StatusCode::from_u16(*status).unwrap_or(StatusCode::FORBIDDEN);
                let h = r.headers_mut();
                let hv = |v: String| v.parse().unwrap_or_else(|_| "x".parse().expect("ascii"));
                h.insert("handshake-status", hv(status.to_string()));
                h.insert("handshake-msg", hv(msg.clone()));
                h.insert("handshake-autherrcode", hv(code.to_string()));
                Err(r)
            }
        }
    };
    let Ok(ws) = tokio_tungstenite::accept_hdr_async(stream, check).await else {
        return;
    };
    let (mut sink, mut source) = ws.split();
    let (tx, mut rx) = mpsc::unbounded_channel();
    // Register, and redeliver what was never acknowledged (as Feishu does).
    let backlog: Vec<Frame> = shared.with(|s| {
        s.connections += 1;
        if let Some(old) = s.current_ws.replace(tx.clone()) {
            let _ = old.send(WsCmd::Drop);
        }
        s.unacked
            .values()
            .flat_map(|(frames, _)| frames.clone())
            .collect()
    });
    for f in backlog {
        if sink
            .send(WsMessage::binary(f.encode_to_vec()))
            .await
            .is_err()
        {
            return;
        }
    }
    loop {
        tokio::select! {
            cmd = rx.recv() => match cmd {
                Some(WsCmd::Send(frames)) => {
                    for f in frames {
                        if sink.send(WsMessage::binary(f.encode_to_vec())).await.is_err() {
                            return;
                        }
                    }
                }
                Some(WsCmd::Close) => {
                    shared.with(|s| s.closes_sent += 1);
                    if sink.send(WsMessage::Close(None)).await.is_err() {
                        return;
                    }
                    // Data frames may still come; the close answer ends it.
                    let answered = tokio::time::timeout(CLOSE_ANSWER_WAIT, async {
                        while let Some(Ok(m)) = source.next().await {
                            if matches!(m, WsMessage::Close(_)) {
                                return true;
                            }
                        }
                        false
                    })
                    .await;
                    if answered == Ok(true) {
                        shared.with(|s| s.closes_answered += 1);
                    }
                    return;
                }
                Some(WsCmd::Drop) | None => return,
            },
            msg = source.next() => match msg {
                Some(Ok(WsMessage::Binary(b))) => {
                    let Ok(frame) = Frame::decode(b.as_ref()) else { continue };
                    if let Some(pong) = on_client_frame(&shared, frame) {
                        let _ = sink.send(WsMessage::binary(pong.encode_to_vec())).await;
                    }
                }
                Some(Ok(_)) => {}
                _ => {
                    shared.with(|s| {
                        if s.current_ws.as_ref().is_some_and(|c| c.same_channel(&tx)) {
                            s.current_ws = None;
                        }
                    });
                    return;
                }
            },
        }
    }
}

/// Record a ping or an ack; returns the pong to send.
fn on_client_frame(shared: &Shared, frame: Frame) -> Option<Frame> {
    shared.with(|s| {
        if frame.method == METHOD_CONTROL {
            s.pings += 1;
            if frame.header("type") != Some("ping") || frame.service != SERVICE_ID {
                s.bad_pings += 1;
            }
            if !s.pong {
                return None;
            }
            let mut pong = Frame::control("pong", SERVICE_ID);
            pong.payload = Some(client_config(s).to_string().into_bytes());
            return Some(pong);
        }
        let id = frame.header("message_id").unwrap_or_default().to_string();
        let ack_json: Value = frame
            .payload
            .as_deref()
            .and_then(|p| serde_json::from_slice(p).ok())
            .unwrap_or(Value::Null);
        let answer = ack_json["data"]
            .as_str()
            .and_then(|d| base64::engine::general_purpose::STANDARD.decode(d).ok())
            .and_then(|d| serde_json::from_slice(&d).ok())
            .unwrap_or(Value::Null);
        let pushed_at = s
            .unacked
            .remove(&id)
            .map(|(_, t)| t)
            .unwrap_or_else(Instant::now);
        let ack = Ack {
            code: ack_json["code"].as_i64().unwrap_or(-1),
            answer,
            biz_rt: frame.header("biz_rt").map(str::to_string),
            latency: pushed_at.elapsed(),
        };
        s.acks.entry(id).or_default().push(ack);
        None
    })
}

// ---- HTTP handlers ---------------------------------------------------------

type St = State<Arc<Shared>>;

fn api_json(code: i64, msg: &str, data: Value) -> Response {
    axum::Json(json!({"code": code, "msg": msg, "data": data})).into_response()
}

/// Injected faults, in priority order. None: serve normally.
fn fault(s: &mut State_) -> Option<Response> {
    s.api_attempts += 1;
    s.attempt_times.push(Instant::now());
    if s.rate_limit_next > 0 {
        s.rate_limit_next -= 1;
        return Some(rate_limited(s.rate_limit_reset_secs));
    }
    if s.fail_next > 0 {
        s.fail_next -= 1;
        return Some(internal_error());
    }
    if s.outage_until.is_some_and(|t| Instant::now() < t) {
        return Some(if s.outage_500s <= s.outage_429s {
            s.outage_500s += 1;
            internal_error()
        } else {
            s.outage_429s += 1;
            rate_limited(s.outage_reset_secs)
        });
    }
    if s.fail_until.is_some_and(|t| Instant::now() < t) {
        return Some((StatusCode::SERVICE_UNAVAILABLE, "unavailable").into_response());
    }
    None
}

fn internal_error() -> Response {
    (StatusCode::INTERNAL_SERVER_ERROR, "internal error").into_response()
}

/// Feishu's rate-limit answer (Server API > Rate limits): HTTP 429, code
/// 99991400, and when to come back in `x-ogw-ratelimit-reset`.
fn rate_limited(reset_secs: u64) -> Response {
    let mut headers = HeaderMap::new();
    headers.insert("x-ogw-ratelimit-reset", reset_secs.into());
    let body = axum::Json(json!({"code": 99991400, "msg": "request trigger frequency limit"}));
    (StatusCode::TOO_MANY_REQUESTS, headers, body).into_response()
}

/// The `ClientConfig` the endpoint and pongs carry: all four values.
fn client_config(s: &State_) -> Value {
    json!({"PingInterval": s.ping_interval_secs, "ReconnectCount": s.reconnect_count,
           "ReconnectInterval": s.reconnect_interval_secs, "ReconnectNonce": s.reconnect_nonce_secs})
}

/// A refusal queued by [`FakeFeishu::reject_next`], if any.
/// The boundary of a `multipart/form-data` body.
fn multipart_boundary(headers: &HeaderMap) -> Option<String> {
    headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .filter(|v| v.starts_with("multipart/form-data"))
        .and_then(|v| v.split("boundary=").nth(1))
        .map(|b| b.trim_matches('"').to_string())
}

/// What the server answers instead, if anything: an injected fault, a
/// missing or stale token, and (for `sends`) a scripted refusal.
fn refused(s: &mut State_, headers: &HeaderMap, sends: bool) -> Option<Response> {
    if let Some(r) = fault(s) {
        return Some(r);
    }
    if !authorized(s, headers) {
        return Some(invalid_token(s.invalid_token_code));
    }
    if sends { rejection(s) } else { None }
}

fn rejection(s: &mut State_) -> Option<Response> {
    if s.reject_next.is_empty() {
        return None;
    }
    let (code, msg) = s.reject_next.remove(0);
    Some(
        (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"code": code, "msg": msg})),
        )
            .into_response(),
    )
}

/// A token handed out, not invalidated, and not past its `expire`.
fn authorized(s: &State_, headers: &HeaderMap) -> bool {
    let now = Instant::now();
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|t| {
            s.valid_tokens.contains(t) && s.token_expiry.get(t).is_none_or(|at| now < *at)
        })
}

fn invalid_token(code: i64) -> Response {
    (
        StatusCode::BAD_REQUEST,
        axum::Json(json!({"code": code, "msg": "Invalid access token for authorization."})),
    )
        .into_response()
}

/// Feishu's message limits (Server API > Rate limits, the send, reply and
/// update-card pages): 5 sends a second to one chat (shared by every bot in
/// it) and 5 updates a second to one message, both answered with HTTP 400,
/// code 230020, and no reset header.
const QPS_PER_KEY: usize = 5;

/// A sliding one-second window of calls per key (a chat, or a message).
#[derive(Default)]
struct Qps {
    recent: HashMap<String, VecDeque<Instant>>,
    /// Calls refused for going over.
    refused: u32,
}

impl Qps {
    /// Counts a call for `key`; Feishu's 230020 answer when it is one too
    /// many (the refused call is not counted, as Feishu does not).
    fn over(&mut self, key: &str) -> Option<Response> {
        let now = Instant::now();
        let recent = self.recent.entry(key.to_string()).or_default();
        while recent
            .front()
            .is_some_and(|t| now.duration_since(*t) >= Duration::from_secs(1))
        {
            recent.pop_front();
        }
        if recent.len() >= QPS_PER_KEY {
            self.refused += 1;
            return Some(
                (
                    StatusCode::BAD_REQUEST,
                    axum::Json(
                        json!({"code": 230020, "msg": "This operation triggers the frequency limit."}),
                    ),
                )
                    .into_response(),
            );
        }
        recent.push_back(now);
        None
    }
}

/// Longest message `uuid` Feishu takes (a longer one is a field error).
const MAX_MESSAGE_UUID_CHARS: usize = 50;

/// Check a card the way Feishu would; Err is the reason for rejecting it.
fn validate_card(content: &str) -> Result<Value, &'static str> {
    let card: Value = serde_json::from_str(content).map_err(|_| "not JSON")?;
    if card["schema"] != "2.0" || !card["body"]["elements"].is_array() {
        return Err("not a 2.0 card");
    }
    if content.contains("\"tag\":\"action\"") {
        return Err("unknown tag action");
    }
    check_locales(&card)?;
    Ok(card)
}

/// The locale codes card JSON's multi-language fields take (Feishu's
/// "configure multi-language content" page lists these 16).
const CARD_LOCALES: [&str; 16] = [
    "en_us", "zh_cn", "zh_hk", "zh_tw", "ja_jp", "id_id", "vi_vn", "th_th", "pt_br", "es_es",
    "ko_kr", "de_de", "fr_fr", "it_it", "ru_ru", "ms_my",
];

/// A card's multi-language fields checked as Feishu documents them, and
/// stricter where a mistake would show a reader the wrong language:
/// `config.locales` is a non-empty list of distinct known codes;
/// `i18n_content` sits only on a text (`plain_text`, `lark_md`,
/// `markdown`), maps known codes to strings, and names every locale the
/// card declares (a reader of a missing one would get the fallback).
fn check_locales(card: &Value) -> Result<(), &'static str> {
    let declared: Option<Vec<&str>> = match card["config"].get("locales") {
        None => None,
        Some(Value::Array(codes)) => {
            let codes: Vec<&str> = codes.iter().filter_map(Value::as_str).collect();
            let known = codes.iter().all(|c| CARD_LOCALES.contains(c));
            let distinct = codes.iter().collect::<HashSet<_>>().len() == codes.len();
            if codes.is_empty()
                || !known
                || !distinct
                || codes.len() != card["config"]["locales"].as_array().map_or(0, Vec::len)
            {
                return Err("config.locales must be distinct known locale codes");
            }
            Some(codes)
        }
        Some(_) => return Err("config.locales must be an array"),
    };
    fn walk(v: &Value, declared: Option<&[&str]>) -> Result<(), &'static str> {
        match v {
            Value::Object(map) => {
                if let Some(i18n) = map.get("i18n_content") {
                    let text = matches!(
                        map.get("tag").and_then(Value::as_str),
                        Some("plain_text" | "lark_md" | "markdown")
                    );
                    if !text {
                        return Err("i18n_content on an element that is not a text");
                    }
                    let Some(per) = i18n.as_object() else {
                        return Err("i18n_content must be an object");
                    };
                    if per.is_empty() {
                        return Err("i18n_content is empty");
                    }
                    for (code, words) in per {
                        if !CARD_LOCALES.contains(&code.as_str()) {
                            return Err("i18n_content has an unknown locale");
                        }
                        if !words.is_string() {
                            return Err("i18n_content values must be strings");
                        }
                    }
                    if declared.is_some_and(|d| d.iter().any(|c| !per.contains_key(*c))) {
                        return Err("i18n_content lacks a locale of config.locales");
                    }
                }
                map.iter()
                    .filter(|(k, _)| k.as_str() != "i18n_content")
                    .try_for_each(|(_, child)| walk(child, declared))
            }
            Value::Array(items) => items.iter().try_for_each(|c| walk(c, declared)),
            _ => Ok(()),
        }
    }
    walk(card, declared.as_deref())
}

/// Feishu's answer to a rejected card (a permanent error).
fn card_rejected(why: &str) -> Response {
    api_json(
        230099,
        &format!("Failed to create card content, {why}"),
        Value::Null,
    )
}

async fn token(State(sh): St, body: axum::Json<Value>) -> Response {
    sh.with(|s| {
        if let Some(r) = fault(s) {
            return r;
        }
        s.token_requests += 1;
        if body["app_id"] != APP_ID || body["app_secret"] != APP_SECRET {
            return axum::Json(json!({"code": 10014, "msg": "app secret invalid"})).into_response();
        }
        s.token_seq += 1;
        let t = format!("t-{}", s.token_seq);
        s.valid_tokens.insert(t.clone());
        let expires = Instant::now() + Duration::from_secs(s.token_expire_secs);
        s.token_expiry.insert(t.clone(), expires);
        axum::Json(json!({"code": 0, "msg": "ok", "tenant_access_token": t, "expire": s.token_expire_secs})).into_response()
    })
}

/// Feishu's answer to a request body over 30 KB.
fn too_long(len: usize) -> Response {
    (
        StatusCode::BAD_REQUEST,
        axum::Json(json!({"code": 230025, "msg": format!("The message content is too long ({len} bytes).")})),
    )
        .into_response()
}

/// The JSON of a request body, or Feishu's answer to a body it refuses.
#[allow(clippy::result_large_err)] // the Err is the answer, sent at once
fn parse_body(raw: &[u8]) -> Result<Value, Response> {
    if raw.len() > MAX_BODY_BYTES {
        return Err(too_long(raw.len()));
    }
    serde_json::from_slice(raw).map_err(|_| api_json(230001, "invalid request body", Value::Null))
}

/// Store a new message (or find the one with this uuid).
fn create(sh: &Shared, headers: &HeaderMap, raw: &[u8], kind: Kind, target: String) -> Response {
    sh.with(|s| {
        if let Some(r) = refused(s, headers, true) {
            return r;
        }
        let body = match parse_body(raw) {
            Ok(b) => b,
            Err(r) => return r,
        };
        let uuid = body["uuid"].as_str().map(str::to_string);
        if uuid
            .as_ref()
            .is_some_and(|u| u.chars().count() > MAX_MESSAGE_UUID_CHARS)
        {
            return api_json(99992402, "field validation failed: uuid", Value::Null);
        }
        if let Some(id) = uuid.as_ref().and_then(|u| s.by_uuid.get(u)) {
            return api_json(0, "ok", json!({"message_id": id}));
        }
        let content = body["content"].as_str().unwrap_or_default();
        if content.is_empty() {
            return api_json(230001, "content is empty", Value::Null);
        }
        // A reply goes to its parent's chat (a message the fake does not
        // know stands for its own chat).
        let chat = match kind {
            Kind::Reply => s.chat_of.get(&target).cloned().unwrap_or(target.clone()),
            _ => target.clone(),
        };
        if let Some(r) = s.chat_qps.as_mut().and_then(|q| q.over(&chat)) {
            return r;
        }
        let parsed: Value = serde_json::from_str(content).unwrap_or(Value::Null);
        let card_id = (parsed["type"] == "card")
            .then(|| parsed.pointer("/data/card_id").and_then(Value::as_str))
            .flatten()
            .map(str::to_string);
        let (kind, card) = match body["msg_type"].as_str() {
            Some("interactive") => match cardkit::entity_card(s, &parsed) {
                Some(Ok(c)) => (kind, c),
                Some(Err(r)) => return r,
                None => match validate_card(content) {
                    Ok(c) => match images::unknown_image_key(s, &c) {
                        None => (kind, c),
                        Some(r) => return r,
                    },
                    Err(why) => return card_rejected(why),
                },
            },
            Some("file") => {
                let c: Value = serde_json::from_str(content).unwrap_or(Value::Null);
                let known = c["file_key"]
                    .as_str()
                    .is_some_and(|k| s.files.contains_key(k));
                if !known {
                    return api_json(230001, "invalid file_key", Value::Null);
                }
                (Kind::File, c)
            }
            _ => return api_json(230001, "unsupported msg_type", Value::Null),
        };
        s.msg_seq += 1;
        let id = format!("om_{}", s.msg_seq);
        s.existing.insert(id.clone());
        s.chat_of.insert(id.clone(), chat);
        if let Some(u) = &uuid {
            s.by_uuid.insert(u.clone(), id.clone());
        }
        s.recorded.push(Recorded {
            kind,
            message_id: id.clone(),
            target,
            uuid,
            card,
            card_id,
            at: Instant::now(),
        });
        if s.fail_after_accept > 0 {
            s.fail_after_accept -= 1;
            return (StatusCode::INTERNAL_SERVER_ERROR, "stored, then failed").into_response();
        }
        api_json(0, "ok", json!({"message_id": id}))
    })
}

async fn send(
    State(sh): St,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
    raw: Bytes,
) -> Response {
    let id_type = q.get("receive_id_type").cloned().unwrap_or_default();
    let body: Value = serde_json::from_slice(&raw).unwrap_or(Value::Null);
    let target = format!(
        "{id_type}:{}",
        body["receive_id"].as_str().unwrap_or_default()
    );
    create(&sh, &headers, &raw, Kind::Send, target)
}

async fn reply(State(sh): St, Path(id): Path<String>, headers: HeaderMap, raw: Bytes) -> Response {
    create(&sh, &headers, &raw, Kind::Reply, id)
}

async fn patch_message(
    State(sh): St,
    Path(id): Path<String>,
    headers: HeaderMap,
    raw: Bytes,
) -> Response {
    sh.with(|s| {
        if let Some(r) = refused(s, &headers, true) {
            return r;
        }
        let body = match parse_body(&raw) {
            Ok(b) => b,
            Err(r) => return r,
        };
        if s.deleted.contains(&id) {
            return api_json(230011, "The message was withdrawn.", Value::Null);
        }
        if !s.existing.contains(&id) {
            return api_json(230001, "message not found", Value::Null);
        }
        let card = match validate_card(body["content"].as_str().unwrap_or_default()) {
            Ok(c) => c,
            Err(why) => return card_rejected(why),
        };
        if let Some(r) = images::unknown_image_key(s, &card) {
            return r;
        }
        if let Some(r) = s.message_qps.as_mut().and_then(|q| q.over(&id)) {
            return r;
        }
        s.recorded.push(Recorded {
            kind: Kind::Patch,
            message_id: id.clone(),
            target: id,
            uuid: None,
            card,
            card_id: None,
            at: Instant::now(),
        });
        api_json(0, "ok", json!({}))
    })
}

async fn ws_endpoint(State(sh): St, body: axum::Json<Value>) -> Response {
    let (refusal, config) = sh.with(|s| {
        s.endpoint_requests += 1;
        (s.refuse_endpoint.clone(), client_config(s))
    });
    if let Some((code, msg)) = refusal {
        return axum::Json(json!({"code": code, "msg": msg})).into_response();
    }
    if body["AppID"] != APP_ID || body["AppSecret"] != APP_SECRET {
        // Feishu answers a wrong app id or secret with 403.
        return axum::Json(json!({"code": 403, "msg": "app not found or secret wrong"}))
            .into_response();
    }
    let url = format!(
        "ws://{}/ws?device_id=fake-device&service_id={SERVICE_ID}",
        sh.ws_addr
    );
    axum::Json(json!({
        "code": 0,
        "msg": "ok",
        "data": {"URL": url, "ClientConfig": config}
    }))
    .into_response()
}

/// `GET /open-apis/bot/v3/info`: the bot's own identity (`bot` at the top
/// level, not under `data`).
async fn bot_info(State(sh): St, headers: HeaderMap) -> Response {
    sh.with(|s| {
        if let Some(r) = refused(s, &headers, false) {
            return r;
        }
        s.bot_info_requests += 1;
        axum::Json(json!({"code": 0, "msg": "ok", "bot": {
            "activate_status": 2, "app_name": "clawmux", "avatar_url": "", "ip_white_list": [],
            "open_id": BOT_OPEN_ID}}))
        .into_response()
    })
}

/// `POST /open-apis/im/v1/messages/:id/reactions`.
async fn reaction(
    State(sh): St,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: axum::Json<Value>,
) -> Response {
    sh.with(|s| {
        if let Some(r) = refused(s, &headers, false) {
            return r;
        }
        let Some(emoji) = body["reaction_type"]["emoji_type"].as_str() else {
            return api_json(231001, "reaction type is invalid", Value::Null);
        };
        s.reactions.push((id.clone(), emoji.to_string()));
        let n = s.reactions.len();
        api_json(
            0,
            "success",
            json!({"reaction_id": format!("r_{n}"), "reaction_type": {"emoji_type": emoji}}),
        )
    })
}

/// `GET /open-apis/im/v1/messages/:id/resources/:key?type=image`.
async fn resource(
    State(sh): St,
    Path((id, key)): Path<(String, String)>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let delay = sh.read(|s| s.image_delay);
    tokio::time::sleep(delay).await;
    sh.with(|s| {
        if let Some(r) = refused(s, &headers, false) {
            return r;
        }
        if q.get("type").map(String::as_str) != Some("image") {
            return api_json(234001, "invalid type", Value::Null);
        }
        match s.images.get(&(id, key)) {
            Some(bytes) => ([("content-type", "image/png")], bytes.clone()).into_response(),
            None => api_json(234003, "file not found", Value::Null),
        }
    })
}

/// `POST /open-apis/im/v1/files` (multipart: file_type, file_name, file).
async fn upload_file(State(sh): St, headers: HeaderMap, raw: Bytes) -> Response {
    sh.with(|s| {
        if let Some(r) = refused(s, &headers, true) {
            return r;
        }
        let Some(boundary) = multipart_boundary(&headers) else {
            return api_json(234001, "not multipart", Value::Null);
        };
        let parts = multipart_parts(&raw, &boundary);
        let field = |name: &str| {
            parts
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
        };
        let (Some(file_type), Some(file_name), Some(file)) =
            (field("file_type"), field("file_name"), field("file"))
        else {
            return api_json(
                234001,
                "file_type, file_name and file are required",
                Value::Null,
            );
        };
        if file.is_empty() || String::from_utf8_lossy(&file_type).is_empty() {
            return api_json(234001, "empty file", Value::Null);
        }
        let key = format!("file_v3_{}", s.files.len() + 1);
        s.files.insert(
            key.clone(),
            (String::from_utf8_lossy(&file_name).into_owned(), file),
        );
        api_json(0, "success", json!({"file_key": key}))
    })
}

/// The named parts of a multipart/form-data body: (name, bytes).
fn multipart_parts(raw: &[u8], boundary: &str) -> Vec<(String, Vec<u8>)> {
    let delim = format!("--{boundary}");
    let mut out = Vec::new();
    let mut rest = raw;
    while let Some(start) = find(rest, delim.as_bytes()) {
        rest = &rest[start + delim.len()..];
        if rest.starts_with(b"--") {
            break;
        }
        let Some(head_end) = find(rest, b"\r\n\r\n") else {
            break;
        };
        let head = String::from_utf8_lossy(&rest[..head_end]).into_owned();
        let body_start = head_end + 4;
        let Some(next) = find(&rest[body_start..], format!("\r\n{delim}").as_bytes()) else {
            break;
        };
        let name = head
            .split("name=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .unwrap_or_default()
            .to_string();
        out.push((name, rest[body_start..body_start + next].to_vec()));
        rest = &rest[body_start + next + 2..];
    }
    out
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}
