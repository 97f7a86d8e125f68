//! The fake's CardKit: card entities created from card JSON 2.0, sent as
//! messages by `card_id`, their elements' text replaced while streaming
//! mode is on, and streaming closed through the settings. As Feishu
//! documents them: each operation's `sequence` must grow strictly per
//! entity (300317), a replayed `uuid` with the same operation is a no-op
//! and with another one a conflict (200770), an unknown entity is 200740,
//! text after streaming closed is 300309, content must be 1..=100000
//! chars (10002), and at most 10 operations a second reach one entity
//! (more are answered as Feishu limits: 99991400 with a reset).
//!
//! Faults: [`FakeFeishu::cardkit_fail_next`] (HTTP 500, nothing applied),
//! [`FakeFeishu::cardkit_fail_after_apply_next`] (applied, then HTTP 500),
//! [`FakeFeishu::cardkit_rate_limit_next`] (429), and
//! [`FakeFeishu::refuse_cardkit`] (every create refused with a code, as
//! for an app without the CardKit permission).

use std::collections::{HashMap, VecDeque};

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::time::{Duration, Instant};

use super::{FakeFeishu, St, State_, api_json, parse_body, validate_card};

/// Operations one entity takes per second (Feishu's documented limit).
pub const MAX_OPS_PER_SEC: usize = 10;
/// Longest element content, in chars.
const MAX_CONTENT_CHARS: usize = 100_000;

/// One operation an entity took.
#[derive(Debug, Clone, PartialEq)]
pub struct CardOp {
    /// `create`, `content` or `settings`.
    pub kind: &'static str,
    pub sequence: u32,
    pub uuid: Option<String>,
    /// The element text a `content` set; the settings JSON of `settings`;
    /// the card JSON of `create`.
    pub content: String,
    pub at: Instant,
}

/// A card entity as the fake holds it.
#[derive(Debug, Clone)]
pub struct Entity {
    pub card_id: String,
    pub card: Value,
    pub streaming: bool,
    pub last_sequence: u32,
    /// Every operation taken, create first.
    pub ops: Vec<CardOp>,
    /// uuid -> the operation it named (kind, sequence, content).
    uuids: HashMap<String, (String, u32, String)>,
    /// When recent operations arrived (the rate window).
    recent: VecDeque<Instant>,
    /// Operations refused for going over the rate.
    pub limited: u32,
}

impl Entity {
    /// The text of element `id`.
    pub fn element_text(&self, id: &str) -> Option<String> {
        find_element(&self.card, id)
            .and_then(|e| e.get("content"))
            .and_then(Value::as_str)
            .map(str::to_string)
    }
}

#[derive(Default)]
pub(super) struct CardKit {
    seq: u64,
    pub(super) entities: HashMap<String, Entity>,
    fail_next: u32,
    fail_after_apply: u32,
    rate_limit_next: u32,
    refuse: Option<(i64, String)>,
}

fn find_element<'a>(v: &'a Value, id: &str) -> Option<&'a Value> {
    match v {
        Value::Object(o) => {
            if o.get("element_id").and_then(Value::as_str) == Some(id) {
                return Some(v);
            }
            o.values().find_map(|v| find_element(v, id))
        }
        Value::Array(a) => a.iter().find_map(|v| find_element(v, id)),
        _ => None,
    }
}

fn find_element_mut<'a>(v: &'a mut Value, id: &str) -> Option<&'a mut Value> {
    if v.get("element_id").and_then(Value::as_str) == Some(id) {
        return Some(v);
    }
    match v {
        Value::Object(o) => o.values_mut().find_map(|v| find_element_mut(v, id)),
        Value::Array(a) => a.iter_mut().find_map(|v| find_element_mut(v, id)),
        _ => None,
    }
}

fn error(code: i64, msg: &str) -> Response {
    (
        StatusCode::BAD_REQUEST,
        axum::Json(json!({"code": code, "msg": msg})),
    )
        .into_response()
}

/// Faults and auth shared by every CardKit call.
fn precheck(s: &mut State_, headers: &HeaderMap) -> Option<Response> {
    if let Some(r) = super::refused(s, headers, false) {
        return Some(r);
    }
    let ck = &mut s.cardkit;
    if ck.rate_limit_next > 0 {
        ck.rate_limit_next -= 1;
        let mut h = HeaderMap::new();
        h.insert("x-ogw-ratelimit-reset", 1u64.into());
        let body = axum::Json(json!({"code": 99991400, "msg": "request trigger frequency limit"}));
        return Some((StatusCode::TOO_MANY_REQUESTS, h, body).into_response());
    }
    if ck.fail_next > 0 {
        ck.fail_next -= 1;
        return Some(super::internal_error());
    }
    None
}

/// After an operation was applied: the injected "applied, then 500".
fn answer_applied(s: &mut State_) -> Response {
    if s.cardkit.fail_after_apply > 0 {
        s.cardkit.fail_after_apply -= 1;
        return (StatusCode::INTERNAL_SERVER_ERROR, "applied, then failed").into_response();
    }
    api_json(0, "success", json!({}))
}

/// The rate window: Some(answer) when this operation is one too many.
fn over_rate(e: &mut Entity) -> Option<Response> {
    let now = Instant::now();
    while e
        .recent
        .front()
        .is_some_and(|t| now.duration_since(*t) >= Duration::from_secs(1))
    {
        e.recent.pop_front();
    }
    if e.recent.len() >= MAX_OPS_PER_SEC {
        e.limited += 1;
        let mut h = HeaderMap::new();
        h.insert("x-ogw-ratelimit-reset", 1u64.into());
        let body = axum::Json(json!({"code": 99991400, "msg": "card operation frequency limit"}));
        return Some((StatusCode::TOO_MANY_REQUESTS, h, body).into_response());
    }
    e.recent.push_back(now);
    None
}

/// Sequence and uuid rules: Ok(true) = a replay to answer ok without
/// applying, Ok(false) = apply, Err = the refusal.
#[allow(clippy::result_large_err)]
fn order(
    e: &Entity,
    kind: &str,
    sequence: u32,
    uuid: Option<&str>,
    content: &str,
) -> Result<bool, Response> {
    if let Some(u) = uuid
        && let Some(named) = e.uuids.get(u)
    {
        if named == &(kind.to_string(), sequence, content.to_string()) {
            return Ok(true);
        }
        return Err(error(200770, "UUID conflict"));
    }
    if sequence == 0 || sequence <= e.last_sequence {
        return Err(error(
            300317,
            "The sequence number for operating on the card did not increment consecutively",
        ));
    }
    Ok(false)
}

pub(super) async fn create(State(sh): St, headers: HeaderMap, raw: Bytes) -> Response {
    sh.with(|s| {
        if let Some(r) = precheck(s, &headers) {
            return r;
        }
        if let Some((code, msg)) = s.cardkit.refuse.clone() {
            return error(code, &msg);
        }
        let body = match parse_body(&raw) {
            Ok(b) => b,
            Err(r) => return r,
        };
        if body["type"] != "card_json" {
            return error(10002, "type must be card_json");
        }
        let Some(data) = body["data"].as_str().filter(|d| !d.is_empty()) else {
            return error(300307, "The card DSL is empty");
        };
        let card = match validate_card(data) {
            Ok(c) => c,
            Err(_) => return error(200220, "Failed to generate card content"),
        };
        if card["config"]["update_multi"] == false {
            return error(300302, "update_multi property is false");
        }
        s.cardkit.seq += 1;
        let card_id = format!("7355439197{:010}", s.cardkit.seq);
        let streaming = card["config"]["streaming_mode"] == true;
        let mut entity = Entity {
            card_id: card_id.clone(),
            card,
            streaming,
            last_sequence: 0,
            ops: vec![CardOp {
                kind: "create",
                sequence: 0,
                uuid: None,
                content: data.to_string(),
                at: Instant::now(),
            }],
            uuids: HashMap::new(),
            recent: VecDeque::new(),
            limited: 0,
        };
        entity.recent.push_back(Instant::now());
        s.cardkit.entities.insert(card_id.clone(), entity);
        api_json(0, "success", json!({"card_id": card_id}))
    })
}

pub(super) async fn content(
    State(sh): St,
    Path((card_id, element_id)): Path<(String, String)>,
    headers: HeaderMap,
    raw: Bytes,
) -> Response {
    sh.with(|s| {
        if let Some(r) = precheck(s, &headers) {
            return r;
        }
        let body = match parse_body(&raw) {
            Ok(b) => b,
            Err(r) => return r,
        };
        let Some(text) = body["content"].as_str() else {
            return error(10002, "content is required");
        };
        let chars = text.chars().count();
        if chars == 0 || chars > MAX_CONTENT_CHARS {
            return error(10002, "content must be 1 to 100000 characters");
        }
        let Some(sequence) = body["sequence"]
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
        else {
            return error(10002, "sequence must be a positive int32");
        };
        let uuid = body["uuid"].as_str().map(str::to_string);
        let Some(e) = s.cardkit.entities.get_mut(&card_id) else {
            return error(200740, "The card entity does not exist");
        };
        if let Some(r) = over_rate(e) {
            return r;
        }
        match order(e, "content", sequence, uuid.as_deref(), text) {
            Ok(true) => return api_json(0, "success", json!({})),
            Ok(false) => {}
            Err(r) => return r,
        }
        if !e.streaming {
            return error(300309, "Card streaming closed");
        }
        let Some(el) = find_element_mut(&mut e.card, &element_id) else {
            return error(
                300313,
                "Failed to update element properties: element not found",
            );
        };
        if !matches!(el["tag"].as_str(), Some("markdown") | Some("plain_text")) {
            return error(300310, "Only update text");
        }
        el["content"] = Value::String(text.to_string());
        e.last_sequence = sequence;
        if let Some(u) = &uuid {
            e.uuids
                .insert(u.clone(), ("content".into(), sequence, text.to_string()));
        }
        e.ops.push(CardOp {
            kind: "content",
            sequence,
            uuid,
            content: text.to_string(),
            at: Instant::now(),
        });
        answer_applied(s)
    })
}

pub(super) async fn settings(
    State(sh): St,
    Path(card_id): Path<String>,
    headers: HeaderMap,
    raw: Bytes,
) -> Response {
    sh.with(|s| {
        if let Some(r) = precheck(s, &headers) {
            return r;
        }
        let body = match parse_body(&raw) {
            Ok(b) => b,
            Err(r) => return r,
        };
        let Some(settings_text) = body["settings"].as_str() else {
            return error(10002, "settings is required");
        };
        let Ok(settings) = serde_json::from_str::<Value>(settings_text) else {
            return error(10002, "settings is not JSON");
        };
        let Some(sequence) = body["sequence"]
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
        else {
            return error(10002, "sequence must be a positive int32");
        };
        let uuid = body["uuid"].as_str().map(str::to_string);
        let Some(e) = s.cardkit.entities.get_mut(&card_id) else {
            return error(200740, "The card entity does not exist");
        };
        if let Some(r) = over_rate(e) {
            return r;
        }
        match order(e, "settings", sequence, uuid.as_deref(), settings_text) {
            Ok(true) => return api_json(0, "success", json!({})),
            Ok(false) => {}
            Err(r) => return r,
        }
        if let Some(mode) = settings
            .pointer("/config/streaming_mode")
            .and_then(Value::as_bool)
        {
            e.streaming = mode;
            e.card["config"]["streaming_mode"] = Value::Bool(mode);
        }
        if let Some(summary) = settings.pointer("/config/summary") {
            e.card["config"]["summary"] = summary.clone();
        }
        e.last_sequence = sequence;
        if let Some(u) = &uuid {
            e.uuids.insert(
                u.clone(),
                ("settings".into(), sequence, settings_text.to_string()),
            );
        }
        e.ops.push(CardOp {
            kind: "settings",
            sequence,
            uuid,
            content: settings_text.to_string(),
            at: Instant::now(),
        });
        answer_applied(s)
    })
}

impl FakeFeishu {
    /// Answer the next `n` CardKit calls with HTTP 500, applying nothing.
    pub fn cardkit_fail_next(&self, n: u32) {
        self.shared.with(|s| s.cardkit.fail_next = n);
    }

    /// Apply the next `n` CardKit content/settings operations, then answer
    /// HTTP 500 anyway: only the sequence and uuid save a retry.
    pub fn cardkit_fail_after_apply_next(&self, n: u32) {
        self.shared.with(|s| s.cardkit.fail_after_apply = n);
    }

    /// Answer the next `n` CardKit calls with HTTP 429, code 99991400.
    pub fn cardkit_rate_limit_next(&self, n: u32) {
        self.shared.with(|s| s.cardkit.rate_limit_next = n);
    }

    /// Refuse every card entity create with this code (None: serve).
    pub fn refuse_cardkit(&self, refusal: Option<(i64, &str)>) {
        self.shared
            .with(|s| s.cardkit.refuse = refusal.map(|(c, m)| (c, m.to_string())));
    }

    /// CardKit faults injected and not yet served: (fail, fail after
    /// apply, rate limit).
    pub fn cardkit_faults_left(&self) -> (u32, u32, u32) {
        self.shared.read(|s| {
            let c = &s.cardkit;
            (c.fail_next, c.fail_after_apply, c.rate_limit_next)
        })
    }

    /// Every card entity, in creation order.
    pub fn entities(&self) -> Vec<Entity> {
        let mut all: Vec<Entity> = self
            .shared
            .read(|s| s.cardkit.entities.values().cloned().collect());
        all.sort_by(|a, b| a.card_id.cmp(&b.card_id));
        all
    }

    /// The entity `card_id`.
    pub fn entity(&self, card_id: &str) -> Option<Entity> {
        self.shared
            .read(|s| s.cardkit.entities.get(card_id).cloned())
    }
}

/// The card a `{"type":"card","data":{"card_id":…}}` message shows, or
/// why it cannot be sent.
pub(super) fn entity_card(s: &State_, content: &Value) -> Option<Result<Value, Response>> {
    if content["type"] != "card" {
        return None;
    }
    let id = content
        .pointer("/data/card_id")
        .and_then(Value::as_str)
        .unwrap_or_default();
    Some(match s.cardkit.entities.get(id) {
        Some(e) => Ok(e.card.clone()),
        None => Err(error(200740, "The card entity does not exist")),
    })
}
