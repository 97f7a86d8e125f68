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
//! Streaming mode ends by itself [`DEFAULT_STREAMING_LIFETIME`] after it
//! was last turned on ([`FakeFeishu::set_streaming_lifetime`] shortens
//! it): the next content update is 200850, later ones 300309, until the
//! settings turn it on again. A full update (`PUT …/cards/:id`) replaces
//! the card. Fields as documented: uuid at most 64 chars, element ids
//! unique (300301) and well-formed, at most 200 components (300305), an
//! entity sent as a message once.
//!
//! Faults: [`FakeFeishu::cardkit_fault`] (per card and per operation, for
//! a while: an HTTP status, a rate limit with its reset, or a hang),
//! [`FakeFeishu::cardkit_fail_next`] (HTTP 500, nothing applied),
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
pub(super) const MAX_OPS_PER_SEC: usize = 10;
/// Longest element content, in chars.
const MAX_CONTENT_CHARS: usize = 100_000;
/// Longest CardKit `uuid`, in chars.
const MAX_UUID_CHARS: usize = 64;
/// Components one card holds at most (300305 beyond).
const MAX_COMPONENTS: usize = 200;
/// Longest `element_id`, in chars.
const MAX_ELEMENT_ID_CHARS: usize = 20;
/// Feishu ends streaming mode this long after it was last turned on.
pub(super) const DEFAULT_STREAMING_LIFETIME: Duration = Duration::from_secs(600);

/// What an injected CardKit fault answers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CardFault {
    /// This HTTP status, nothing applied.
    Status(u16),
    /// HTTP 429, code 99991400, `x-ogw-ratelimit-reset` = the seconds left.
    RateLimit,
    /// No answer until the fault ends (then served as usual).
    Hang,
}

/// A fault on some CardKit calls until `until`.
#[derive(Debug, Clone)]
struct Fault {
    /// Only this entity's calls (None: every entity, creates included).
    card_id: Option<String>,
    /// Only this operation (`create`, `content`, `settings`, `full`).
    kind: Option<&'static str>,
    what: CardFault,
    until: Instant,
    /// Calls it may still answer (None: every one until `until`).
    left: Option<u32>,
    served: u32,
}

/// One operation an entity took.
#[derive(Debug, Clone, PartialEq)]
pub struct CardOp {
    /// `create`, `content`, `settings` or `full`.
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
    /// Streaming mode as set; see [`Entity::streaming_now`].
    pub streaming: bool,
    /// When streaming was last turned on.
    pub streaming_on: Instant,
    /// The 200850 of a lifetime that ran out was answered (300309 since).
    pub timed_out: bool,
    /// Messages that showed it (Feishu allows one).
    pub sent: u32,
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
    /// None: [`DEFAULT_STREAMING_LIFETIME`].
    lifetime: Option<Duration>,
    faults: Vec<Fault>,
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

/// The injected fault matching this call, if any (expired ones dropped),
/// counted as served when `take` says this kind of fault is answered here.
fn fault_for(
    ck: &mut CardKit,
    card_id: Option<&str>,
    kind: &str,
    take: impl Fn(CardFault) -> bool,
) -> Option<(CardFault, Instant)> {
    let now = Instant::now();
    ck.faults.retain(|f| f.until > now);
    let f = ck.faults.iter_mut().find(|f| {
        f.left != Some(0)
            && f.kind.is_none_or(|k| k == kind)
            && f.card_id.as_deref().is_none_or(|c| Some(c) == card_id)
    })?;
    if !take(f.what) {
        return None;
    }
    f.served += 1;
    if let Some(n) = &mut f.left {
        *n -= 1;
    }
    Some((f.what, f.until))
}

/// A hang injected on this call: waits it out (as a silent server would).
async fn hang(sh: &super::Shared, card_id: Option<&str>, kind: &str) {
    let until = sh.with(|s| {
        fault_for(&mut s.cardkit, card_id, kind, |w| w == CardFault::Hang).map(|(_, u)| u)
    });
    if let Some(until) = until {
        tokio::time::sleep_until(until).await;
    }
}

/// Faults and auth shared by every CardKit call.
fn precheck(
    s: &mut State_,
    headers: &HeaderMap,
    card_id: Option<&str>,
    kind: &str,
) -> Option<Response> {
    if let Some(r) = super::refused(s, headers, false) {
        return Some(r);
    }
    match fault_for(&mut s.cardkit, card_id, kind, |w| w != CardFault::Hang) {
        Some((CardFault::Status(code), _)) => {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            return Some((status, "injected fault").into_response());
        }
        Some((CardFault::RateLimit, until)) => {
            let left = until.saturating_duration_since(Instant::now());
            return Some(rate_limited(left.as_secs_f64().ceil() as u64));
        }
        Some((CardFault::Hang, _)) | None => {}
    }
    let ck = &mut s.cardkit;
    if ck.rate_limit_next > 0 {
        ck.rate_limit_next -= 1;
        return Some(rate_limited(1));
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
        return Some(rate_limited(1));
    }
    e.recent.push_back(now);
    None
}

/// Feishu's frequency answer: HTTP 429, code 99991400, the reset in seconds.
fn rate_limited(reset_secs: u64) -> Response {
    let mut h = HeaderMap::new();
    h.insert("x-ogw-ratelimit-reset", reset_secs.into());
    let body = axum::Json(json!({"code": 99991400, "msg": "request trigger frequency limit"}));
    (StatusCode::TOO_MANY_REQUESTS, h, body).into_response()
}

/// The uuid of a body, refused when over [`MAX_UUID_CHARS`].
#[allow(clippy::result_large_err)]
fn uuid_of(body: &Value) -> Result<Option<String>, Response> {
    match body["uuid"].as_str() {
        Some(u) if u.chars().count() > MAX_UUID_CHARS => {
            Err(error(10002, "uuid must be at most 64 characters"))
        }
        u => Ok(u.map(str::to_string)),
    }
}

/// A card entity's JSON as create and full update check it: 2.0, not
/// empty, `update_multi` not false, element ids unique and well-formed,
/// at most [`MAX_COMPONENTS`] components.
#[allow(clippy::result_large_err)]
fn checked_card(card: &Value) -> Result<Value, Response> {
    if card["type"] != "card_json" {
        return Err(error(10002, "type must be card_json"));
    }
    let Some(data) = card["data"].as_str().filter(|d| !d.is_empty()) else {
        return Err(error(300307, "The card DSL is empty"));
    };
    let Ok(parsed) = serde_json::from_str::<Value>(data) else {
        return Err(error(200220, "Failed to generate card content"));
    };
    if parsed["schema"] != "2.0" {
        return Err(error(300303, "The card schema is not 2.0"));
    }
    let card = validate_card(data).map_err(|_| error(200220, "Failed to generate card content"))?;
    if card["config"]["update_multi"] == false {
        return Err(error(300302, "update_multi property is false"));
    }
    let mut ids = Vec::new();
    let mut components = 0;
    walk_components(&card["body"], &mut ids, &mut components);
    if components > MAX_COMPONENTS {
        return Err(error(300305, "The card has more than 200 components"));
    }
    for (i, id) in ids.iter().enumerate() {
        let ok = id.chars().count() <= MAX_ELEMENT_ID_CHARS
            && id.starts_with(|c: char| c.is_ascii_alphabetic())
            && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ok {
            return Err(error(10002, "invalid element_id"));
        }
        if ids[..i].contains(id) {
            return Err(error(300301, "Duplicate element_id"));
        }
    }
    Ok(card)
}

fn walk_components(v: &Value, ids: &mut Vec<String>, n: &mut usize) {
    match v {
        Value::Object(o) => {
            if o.contains_key("tag") {
                *n += 1;
            }
            if let Some(id) = o.get("element_id").and_then(Value::as_str) {
                ids.push(id.to_string());
            }
            o.values().for_each(|v| walk_components(v, ids, n));
        }
        Value::Array(a) => a.iter().for_each(|v| walk_components(v, ids, n)),
        _ => {}
    }
}

impl Entity {
    /// Whether streaming is still on, Feishu's lifetime counted.
    pub fn streaming_now(&self, lifetime: Duration) -> bool {
        self.streaming && self.streaming_on.elapsed() < lifetime
    }
}

impl CardKit {
    fn lifetime(&self) -> Duration {
        self.lifetime.unwrap_or(DEFAULT_STREAMING_LIFETIME)
    }
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
    hang(&sh, None, "create").await;
    sh.with(|s| {
        if let Some(r) = precheck(s, &headers, None, "create") {
            return r;
        }
        if let Some((code, msg)) = s.cardkit.refuse.clone() {
            return error(code, &msg);
        }
        let body = match parse_body(&raw) {
            Ok(b) => b,
            Err(r) => return r,
        };
        let card = match checked_card(&body) {
            Ok(c) => c,
            Err(r) => return r,
        };
        let data = body["data"].as_str().unwrap_or_default();
        s.cardkit.seq += 1;
        let card_id = format!("7355439197{:010}", s.cardkit.seq);
        let streaming = card["config"]["streaming_mode"] == true;
        let mut entity = Entity {
            card_id: card_id.clone(),
            card,
            streaming,
            streaming_on: Instant::now(),
            timed_out: false,
            sent: 0,
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
    hang(&sh, Some(&card_id), "content").await;
    sh.with(|s| {
        if let Some(r) = precheck(s, &headers, Some(&card_id), "content") {
            return r;
        }
        let lifetime = s.cardkit.lifetime();
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
        let uuid = match uuid_of(&body) {
            Ok(u) => u,
            Err(r) => return r,
        };
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
        if e.streaming && !e.streaming_now(lifetime) {
            // Feishu's lifetime ran out: told once, closed since.
            e.streaming = false;
            e.timed_out = true;
            return error(200850, "Card streaming timeout");
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
    hang(&sh, Some(&card_id), "settings").await;
    sh.with(|s| {
        if let Some(r) = precheck(s, &headers, Some(&card_id), "settings") {
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
        let uuid = match uuid_of(&body) {
            Ok(u) => u,
            Err(r) => return r,
        };
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
            if mode {
                e.streaming_on = Instant::now();
                e.timed_out = false;
            }
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

/// `PUT /open-apis/cardkit/v1/cards/:card_id`: the whole card replaced
/// (全量更新卡片实体), streaming as its config says.
pub(super) async fn full(
    State(sh): St,
    Path(card_id): Path<String>,
    headers: HeaderMap,
    raw: Bytes,
) -> Response {
    hang(&sh, Some(&card_id), "full").await;
    sh.with(|s| {
        if let Some(r) = precheck(s, &headers, Some(&card_id), "full") {
            return r;
        }
        let body = match parse_body(&raw) {
            Ok(b) => b,
            Err(r) => return r,
        };
        let card = match checked_card(&body["card"]) {
            Ok(c) => c,
            Err(r) => return r,
        };
        let data = body["card"]["data"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let Some(sequence) = body["sequence"]
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
        else {
            return error(10002, "sequence must be a positive int32");
        };
        let uuid = match uuid_of(&body) {
            Ok(u) => u,
            Err(r) => return r,
        };
        let Some(e) = s.cardkit.entities.get_mut(&card_id) else {
            return error(200740, "The card entity does not exist");
        };
        if let Some(r) = over_rate(e) {
            return r;
        }
        match order(e, "full", sequence, uuid.as_deref(), &data) {
            Ok(true) => return api_json(0, "success", json!({})),
            Ok(false) => {}
            Err(r) => return r,
        }
        let streaming = card["config"]["streaming_mode"] == true;
        if streaming && !e.streaming {
            e.streaming_on = Instant::now();
            e.timed_out = false;
        }
        e.streaming = streaming;
        e.card = card;
        e.last_sequence = sequence;
        if let Some(u) = &uuid {
            e.uuids
                .insert(u.clone(), ("full".into(), sequence, data.clone()));
        }
        e.ops.push(CardOp {
            kind: "full",
            sequence,
            uuid,
            content: data,
            at: Instant::now(),
        });
        answer_applied(s)
    })
}

impl FakeFeishu {
    /// Streaming mode ends this long after it was last turned on
    /// (Feishu: 10 minutes).
    pub fn set_streaming_lifetime(&self, lifetime: Duration) {
        self.shared.with(|s| s.cardkit.lifetime = Some(lifetime));
    }

    /// Answer CardKit calls on `card_id` (None: every entity, and creates)
    /// of operation `kind` (None: every one) with `what` for `for_`.
    pub fn cardkit_fault(
        &self,
        card_id: Option<&str>,
        kind: Option<&'static str>,
        what: CardFault,
        for_: Duration,
    ) {
        self.cardkit_fault_n(card_id, kind, what, for_, None);
    }

    /// As [`FakeFeishu::cardkit_fault`], for the next `n` matching calls
    /// at most (None: all of them); it stays in force (for
    /// [`FakeFeishu::cardkit_fault_state`]) until `for_` is over.
    pub fn cardkit_fault_n(
        &self,
        card_id: Option<&str>,
        kind: Option<&'static str>,
        what: CardFault,
        for_: Duration,
        n: Option<u32>,
    ) {
        let f = Fault {
            card_id: card_id.map(str::to_string),
            kind,
            what,
            until: Instant::now() + for_,
            left: n,
            served: 0,
        };
        self.shared.with(|s| s.cardkit.faults.push(f));
    }

    /// Calls answered by injected faults still in force, and when the
    /// last of them ends (None: no fault in force).
    pub fn cardkit_fault_state(&self) -> (u32, Option<Instant>) {
        self.shared.read(|s| {
            let now = Instant::now();
            let live = s.cardkit.faults.iter().filter(|f| f.until > now);
            let served = live.clone().map(|f| f.served).sum();
            (served, live.map(|f| f.until).max())
        })
    }

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
    /// `streaming` is as of now: false once Feishu's lifetime ran out.
    pub fn entities(&self) -> Vec<Entity> {
        let mut all: Vec<Entity> = self.shared.read(|s| {
            let lifetime = s.cardkit.lifetime();
            (s.cardkit.entities.values())
                .map(|e| Entity {
                    streaming: e.streaming_now(lifetime),
                    ..e.clone()
                })
                .collect()
        });
        all.sort_by(|a, b| a.card_id.cmp(&b.card_id));
        all
    }

    /// The entity `card_id`.
    pub fn entity(&self, card_id: &str) -> Option<Entity> {
        self.entities().into_iter().find(|e| e.card_id == card_id)
    }
}

/// The card a `{"type":"card","data":{"card_id":…}}` message shows, or
/// why it cannot be sent: an unknown entity, or one sent already (Feishu
/// sends an entity once; the code is the card-refused one, 230099). The
/// caller has already answered a replayed message uuid.
pub(super) fn entity_card(s: &mut State_, content: &Value) -> Option<Result<Value, Response>> {
    if content["type"] != "card" {
        return None;
    }
    let id = content
        .pointer("/data/card_id")
        .and_then(Value::as_str)
        .unwrap_or_default();
    Some(match s.cardkit.entities.get_mut(id) {
        Some(e) if e.sent > 0 => Err(error(230099, "The card entity was sent already")),
        Some(e) => {
            e.sent += 1;
            Ok(e.card.clone())
        }
        None => Err(error(200740, "The card entity does not exist")),
    })
}
