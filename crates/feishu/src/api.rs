//! Feishu Open API client: tenant token cache, send/reply/patch of cards with
//! retries (jittered backoff on 429/5xx/network, one token refresh on the
//! invalid-token codes, never on permanent codes); Feishu's error codes
//! sorted into permanent, rate-limited, token and transient.
//!
//! Long on purpose: every call (token, send, reply, patch, files, reactions,
//! resources, bot info) shares the one retry loop and error classification.

use rand::Rng;
use reqwest::{Method, StatusCode};
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::Mutex;
use tokio::time::{Duration, Instant};

use super::FeishuConfig;
use super::paginate::MAX_REQUEST_BODY_BYTES;

/// A token is refreshed this long before Feishu says it expires.
pub const TOKEN_REFRESH_MARGIN: Duration = Duration::from_secs(180);
/// App-wide rate limit (Feishu documents HTTP 400 with it; 429 is seen
/// too), usually with `x-ogw-ratelimit-reset`.
pub const RATE_LIMIT_CODE: i64 = 99991400;
/// Message frequency limit of a chat (HTTP 400): back off and retry.
pub const FREQUENCY_LIMIT_CODE: i64 = 230020;

/// What one documented code calls for (a row of [`CODE_TABLE`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Row {
    /// No retry fixes this request (bad content, message gone, card refused).
    Permanent,
    /// No retry fixes it, and the chat or user itself cannot be reached by
    /// the bot: nothing more can be said there, so the operator is told.
    Unreachable,
    /// Slow down: wait (the reset header, or a backoff) and retry.
    RateLimited,
    /// The tenant token was refused: fetch a new one and retry once.
    Token,
    /// Feishu is still busy with the same request: retry with backoff; it
    /// is not a refusal of the request.
    Busy,
}

/// Feishu's codes as its documentation and the official SDKs describe
/// them. Codes not in the table are retried a few times, then counted as
/// refusals by the outbox.
pub const CODE_TABLE: &[(i64, Row)] = &[
    // Server API > Calling guide > Rate limits (频控策略): the app's limit.
    (RATE_LIMIT_CODE, Row::RateLimited),
    // Server API > General error codes (通用错误码): token codes. 99991661
    // no token, 99991663 invalid tenant token, 99991665 invalid
    // tenant_access_token, 99991664 invalid app token, 99991671 token of
    // another app. All: fetch a new tenant token.
    (99991661, Row::Token),
    (99991663, Row::Token),
    (99991664, Row::Token),
    (99991665, Row::Token),
    (99991671, Row::Token),
    // ... and 99992402: a request field failed validation (e.g. a message
    // uuid over 50 characters); the same request fails the same way.
    (99992402, Row::Permanent),
    // Messages > Send message (发送消息), Reply (回复消息) and Update a card
    // (更新应用发送的消息卡片) error tables.
    (FREQUENCY_LIMIT_CODE, Row::RateLimited), // per-chat frequency limit
    (230049, Row::Busy),                      // the message is being sent
    (230001, Row::Permanent),                 // bad parameters
    (230011, Row::Permanent),                 // message recalled
    (231003, Row::Permanent),                 // message deleted
    (230022, Row::Permanent),                 // content contains sensitive information
    (230025, Row::Permanent),                 // body too large (30 KB card, 150 KB text)
    (230028, Row::Permanent),                 // stopped by data loss prevention
    (230031, Row::Permanent),                 // too old to update (14 days)
    (230099, Row::Permanent),                 // card content rejected
    (230110, Row::Permanent),                 // the message was deleted
    (230002, Row::Unreachable),               // the bot is not in the chat
    (230003, Row::Unreachable),               // no permission in the chat
    (230006, Row::Unreachable),               // the bot is disabled
    (230010, Row::Unreachable),               // no permission in the chat
    (230013, Row::Unreachable),               // user outside the app's availability
    (230017, Row::Unreachable),               // bot may not message this user
    (230018, Row::Unreachable),               // group settings forbid the bot
    (230019, Row::Unreachable),               // the chat does not take the bot's messages
    (230021, Row::Unreachable),               // the chat refuses the bot
    (230027, Row::Unreachable),               // no permission to send
    (230029, Row::Unreachable),               // the user resigned
    (230034, Row::Unreachable),               // receive_id is not valid
    (230035, Row::Unreachable),               // no permission to send
    (230038, Row::Unreachable),               // cross-tenant user unreachable
    (230053, Row::Unreachable),               // the user blocked the bot
    (230054, Row::Unreachable),               // the chat is frozen
    (230055, Row::Unreachable),               // the chat is read-only
    (230075, Row::Unreachable),               // the user may not receive messages
    (232009, Row::Unreachable),               // the chat was dissolved
    // Cards > Card entities (卡片实体) and element calls (CardKit): the
    // entity or the card is wrong, whatever is retried. 200740 no such
    // entity, 200750 older than 14 days, 300301 duplicate element_id,
    // 300302 `update_multi` false, 300303 schema not 2.0, 300305 over 200
    // components, 300307 empty card, 300310 only text can be updated.
    (200740, Row::Permanent),
    (200750, Row::Permanent),
    (300301, Row::Permanent),
    (300302, Row::Permanent),
    (300303, Row::Permanent),
    (300305, Row::Permanent),
    (300307, Row::Permanent),
    (300310, Row::Permanent),
    // ... and further CardKit refusals: 200220 card JSON not valid,
    // 200770 the same uuid with another operation, 200860 card over
    // 30 KB, 300311 the entity belongs to another app, 10002 bad
    // parameters; 99991672 (General error codes) the app lacks the scope.
    (200220, Row::Permanent),
    (200770, Row::Permanent),
    (200860, Row::Permanent),
    (300311, Row::Permanent),
    (10002, Row::Permanent),
    (99991672, Row::Permanent),
];

/// The table's row for `code`.
pub fn row_of_code(code: i64) -> Option<Row> {
    CODE_TABLE.iter().find(|(c, _)| *c == code).map(|(_, r)| *r)
}

/// Whether `code` says the chat or user cannot be reached by the bot at
/// all (a notice there would be refused too).
pub fn chat_unreachable(code: i64) -> bool {
    row_of_code(code) == Some(Row::Unreachable)
}

/// Whether `code` is a documented passing state (not a refusal).
pub fn is_busy(code: i64) -> bool {
    row_of_code(code) == Some(Row::Busy)
}

/// What a Feishu failure calls for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// No retry can fix it: move the delivery aside.
    Permanent,
    /// Feishu asks us to slow down: wait (the reset, or a backoff) and retry.
    RateLimited,
    /// The tenant token was refused: fetch a new one and retry once.
    Token,
    /// Network, 5xx, an unclassified answer: retry with backoff.
    Transient,
}

/// The class of a Feishu answer code.
pub fn class_of_code(code: i64) -> ErrorClass {
    match row_of_code(code) {
        Some(Row::Permanent | Row::Unreachable) => ErrorClass::Permanent,
        Some(Row::RateLimited) => ErrorClass::RateLimited,
        Some(Row::Token) => ErrorClass::Token,
        Some(Row::Busy) | None => ErrorClass::Transient,
    }
}
/// One HTTP exchange may take this long before it counts as a network error.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest `x-ogw-ratelimit-reset` honoured, so a bad header cannot park us.
pub const MAX_RATE_LIMIT_WAIT: Duration = Duration::from_secs(60);

/// How hard to retry. The defaults suit Feishu; tests shorten the delays.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Attempts per call, the first included.
    pub max_attempts: u32,
    /// First backoff delay; doubled each retry, then jittered.
    pub base_delay: Duration,
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 6,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(20),
        }
    }
}

impl RetryPolicy {
    /// Delay before retry number `n` (1-based): exponential, with jitter in
    /// [50 %, 100 %] so many clients do not retry in step.
    fn backoff(&self, n: u32) -> Duration {
        let exp = self
            .base_delay
            .saturating_mul(1 << n.saturating_sub(1).min(16));
        let capped = exp.min(self.max_delay);
        capped.mul_f64(rand::rng().random_range(0.5..=1.0))
    }
}

/// Errors from the Feishu API, with Feishu's code and message when it sent one.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum FeishuError {
    #[error("Feishu error {code}: {msg} (HTTP {http_status})")]
    Api {
        code: i64,
        msg: String,
        http_status: u16,
    },
    #[error("HTTP {status} from Feishu: {body}")]
    Http { status: u16, body: String },
    #[error("cannot reach Feishu: {0}")]
    Network(String),
    #[error("unexpected response from Feishu: {0}")]
    BadResponse(String),
    #[error("request body is {0} bytes, over Feishu's {MAX_REQUEST_BODY_BYTES}-byte limit")]
    CardTooLarge(usize),
    #[error("file is {0} bytes, over Feishu's {MAX_UPLOAD_BYTES}-byte limit for file messages")]
    FileTooLarge(usize),
    #[error("image is {0} bytes, over Feishu's {MAX_IMAGE_BYTES}-byte limit for images")]
    ImageTooLarge(usize),
    #[error("gave up after {attempts} attempts: {last}")]
    GaveUp {
        attempts: u32,
        last: Box<FeishuError>,
    },
}

impl FeishuError {
    /// Feishu's error code, if the failure carried one.
    pub fn code(&self) -> Option<i64> {
        match self {
            FeishuError::Api { code, .. } => Some(*code),
            FeishuError::GaveUp { last, .. } => last.code(),
            _ => None,
        }
    }

    /// Retrying cannot help (message gone, card rejected, …).
    pub fn is_permanent(&self) -> bool {
        self.class() == ErrorClass::Permanent
    }

    /// What this failure calls for.
    pub fn class(&self) -> ErrorClass {
        match self {
            FeishuError::CardTooLarge(_)
            | FeishuError::FileTooLarge(_)
            | FeishuError::ImageTooLarge(_) => ErrorClass::Permanent,
            FeishuError::GaveUp { last, .. } => last.class(),
            _ => match self.code() {
                Some(c) => class_of_code(c),
                None => ErrorClass::Transient,
            },
        }
    }

    /// Feishu's message for the failure, when it sent one.
    pub fn feishu_msg(&self) -> Option<&str> {
        match self {
            FeishuError::Api { msg, .. } => Some(msg),
            FeishuError::GaveUp { last, .. } => last.feishu_msg(),
            _ => None,
        }
    }
}

/// Where a message goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReceiveId {
    ChatId(String),
    OpenId(String),
}

impl ReceiveId {
    fn parts(&self) -> (&'static str, &str) {
        match self {
            ReceiveId::ChatId(id) => ("chat_id", id),
            ReceiveId::OpenId(id) => ("open_id", id),
        }
    }
}

/// Feishu's id of a sent message (`om_…`).
pub type MessageId = String;

struct CachedToken {
    token: String,
    refresh_at: Instant,
}

/// The Feishu Open API client. Cheap to share behind an `Arc`.
pub struct Api {
    http: reqwest::Client,
    config: FeishuConfig,
    retry: RetryPolicy,
    token: Mutex<Option<CachedToken>>,
    /// The bot's own open_id, once asked (it never changes for an app).
    bot_open_id: Mutex<Option<String>>,
}

/// What one attempt ended in.
enum Outcome {
    Done(Value),
    /// Retry after the delay (None: the policy's backoff).
    Retry(FeishuError, Option<Duration>),
    InvalidToken(FeishuError),
    Fail(FeishuError),
}

/// What a run of attempts ended in.
enum Finished {
    Value(Value),
    Failed(FeishuError),
    /// The token was refused: the caller may refresh it once.
    InvalidToken(FeishuError),
}

impl Api {
    pub fn new(config: FeishuConfig) -> Self {
        Self::with_retry(config, RetryPolicy::default())
    }

    pub fn with_retry(config: FeishuConfig, retry: RetryPolicy) -> Self {
        let http = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .build()
            .unwrap_or_else(|_| reqwest::Client::new());
        Api {
            http,
            config,
            retry,
            token: Mutex::new(None),
            bot_open_id: Mutex::new(None),
        }
    }

    pub fn config(&self) -> &FeishuConfig {
        &self.config
    }

    /// A valid tenant access token, fetched or from the cache. Concurrent
    /// callers share one fetch.
    pub async fn tenant_token(&self) -> Result<String, FeishuError> {
        let mut cached = self.token.lock().await;
        if let Some(t) = cached.as_ref()
            && Instant::now() < t.refresh_at
        {
            return Ok(t.token.clone());
        }
        let url = format!(
            "{}/open-apis/auth/v3/tenant_access_token/internal",
            self.config.base_url()
        );
        let body = json!({"app_id": self.config.app_id, "app_secret": self.config.app_secret});
        let v = match self
            .run_attempts(|| self.attempt(Method::POST, &url, &body, None))
            .await
        {
            Finished::Value(v) => v,
            Finished::Failed(e) | Finished::InvalidToken(e) => return Err(e),
        };
        let token = v
            .get("tenant_access_token")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                FeishuError::BadResponse("no tenant_access_token in the token response".into())
            })?
            .to_string();
        let expire = Duration::from_secs(v.get("expire").and_then(Value::as_u64).unwrap_or(0));
        let refresh_at = Instant::now() + expire.saturating_sub(TOKEN_REFRESH_MARGIN);
        *cached = Some(CachedToken {
            token: token.clone(),
            refresh_at,
        });
        Ok(token)
    }

    async fn drop_token(&self, stale: &str) {
        let mut cached = self.token.lock().await;
        if cached.as_ref().is_some_and(|t| t.token == stale) {
            *cached = None;
        }
    }

    /// Send a card to a chat or user. `uuid` (at most 50 chars) makes the
    /// send idempotent for an hour: keep it when retrying at a higher level.
    pub async fn send(
        &self,
        to: &ReceiveId,
        card: &(impl Serialize + ?Sized),
        uuid: &str,
    ) -> Result<MessageId, FeishuError> {
        let content = card_content(card);
        let (id_type, id) = to.parts();
        let path = format!("/open-apis/im/v1/messages?receive_id_type={id_type}");
        let body =
            json!({"receive_id": id, "msg_type": "interactive", "content": content, "uuid": uuid});
        check_body(&body)?;
        let data = self.call(Method::POST, &path, &body).await?;
        message_id_of(&data)
    }

    /// Reply to a message with a card.
    pub async fn reply(
        &self,
        message_id: &str,
        card: &(impl Serialize + ?Sized),
        uuid: &str,
    ) -> Result<MessageId, FeishuError> {
        let content = card_content(card);
        let path = format!(
            "/open-apis/im/v1/messages/{}/reply",
            path_segment(message_id)
        );
        let body = json!({"msg_type": "interactive", "content": content, "uuid": uuid});
        check_body(&body)?;
        let data = self.call(Method::POST, &path, &body).await?;
        message_id_of(&data)
    }

    /// Replace a card we sent (needs `update_multi: true`, which every card has).
    pub async fn patch(
        &self,
        message_id: &str,
        card: &(impl Serialize + ?Sized),
    ) -> Result<(), FeishuError> {
        let body = json!({"content": card_content(card)});
        check_body(&body)?;
        let path = format!("/open-apis/im/v1/messages/{}", path_segment(message_id));
        self.call(Method::PATCH, &path, &body).await.map(|_| ())
    }

    /// The bot's own open_id (`GET /open-apis/bot/v3/info`), asked once
    /// and cached: it tells a mention of the bot from one of a colleague.
    pub async fn bot_open_id(&self) -> Result<String, FeishuError> {
        let mut cached = self.bot_open_id.lock().await;
        if let Some(id) = cached.as_ref() {
            return Ok(id.clone());
        }
        // The answer carries `bot` at the top level, not under `data`.
        let v = self
            .call_full(Method::GET, "/open-apis/bot/v3/info", &Value::Null)
            .await?;
        let id = v
            .pointer("/bot/open_id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty())
            .ok_or_else(|| FeishuError::BadResponse("no bot.open_id in the bot info".into()))?
            .to_string();
        *cached = Some(id.clone());
        Ok(id)
    }

    /// Upload a file for a file message (`POST /open-apis/im/v1/files`,
    /// multipart: file_type, file_name, file); returns its `file_key`.
    /// `file_type` is Feishu's: `stream` for any file, or opus, mp4, pdf,
    /// doc, xls, ppt.
    pub async fn upload_file(
        &self,
        file_type: &str,
        file_name: &str,
        bytes: &[u8],
    ) -> Result<String, FeishuError> {
        if bytes.len() > MAX_UPLOAD_BYTES {
            return Err(FeishuError::FileTooLarge(bytes.len()));
        }
        let form = || file_form(file_type, file_name, bytes);
        self.upload("/open-apis/im/v1/files", form, "/data/file_key")
            .await
    }

    /// Upload a PNG (or another image) for a card's `img` element or an
    /// image message (`POST /open-apis/im/v1/images`, multipart:
    /// `image_type=message`, `image`); returns its `image_key`. Feishu
    /// takes at most [`MAX_IMAGE_BYTES`] and no empty image.
    pub async fn upload_image(&self, bytes: &[u8]) -> Result<String, FeishuError> {
        if bytes.len() > MAX_IMAGE_BYTES {
            return Err(FeishuError::ImageTooLarge(bytes.len()));
        }
        let form = || image_form(bytes);
        self.upload("/open-apis/im/v1/images", form, "/data/image_key")
            .await
    }

    /// POSTs the multipart form `form` makes (once per attempt: a form is
    /// consumed by its request) to `path` with the usual retries and one
    /// token refresh; returns the string at `key` in the answer.
    async fn upload(
        &self,
        path: &str,
        form: impl Fn() -> reqwest::multipart::Form,
        key: &str,
    ) -> Result<String, FeishuError> {
        let url = format!("{}{path}", self.config.base_url());
        let mut token_refreshed = false;
        loop {
            let token = self.tenant_token().await?;
            let attempt = || {
                let req = self.http.post(&url).multipart(form());
                self.finish_attempt(req, Some(&token))
            };
            match self.run_attempts(attempt).await {
                Finished::Value(v) => {
                    return v
                        .pointer(key)
                        .and_then(Value::as_str)
                        .filter(|k| !k.is_empty())
                        .map(str::to_string)
                        .ok_or_else(|| {
                            FeishuError::BadResponse(format!("no {key} in the answer"))
                        });
                }
                Finished::InvalidToken(_) if !token_refreshed => {
                    self.drop_token(&token).await;
                    token_refreshed = true;
                }
                Finished::Failed(e) | Finished::InvalidToken(e) => return Err(e),
            }
        }
    }

    /// Send an uploaded file as a file message, as a reply to `reply_to`
    /// when given (threaded under the user's message), else to `to`.
    pub async fn send_file(
        &self,
        to: &ReceiveId,
        reply_to: Option<&str>,
        file_key: &str,
        uuid: &str,
    ) -> Result<MessageId, FeishuError> {
        let content = json!({"file_key": file_key}).to_string();
        let data = match reply_to {
            Some(parent) => {
                let path = format!("/open-apis/im/v1/messages/{}/reply", path_segment(parent));
                let body = json!({"msg_type": "file", "content": content, "uuid": uuid});
                self.call(Method::POST, &path, &body).await?
            }
            None => {
                let (id_type, id) = to.parts();
                let path = format!("/open-apis/im/v1/messages?receive_id_type={id_type}");
                let body =
                    json!({"receive_id": id, "msg_type": "file", "content": content, "uuid": uuid});
                self.call(Method::POST, &path, &body).await?
            }
        };
        message_id_of(&data)
    }

    /// Download an image a user sent (`GET /open-apis/im/v1/messages/
    /// :message_id/resources/:file_key?type=image`), at most
    /// [`MAX_IMAGE_BYTES`]. One try, with one token refresh.
    pub async fn download_image(
        &self,
        message_id: &str,
        image_key: &str,
    ) -> Result<Vec<u8>, FeishuError> {
        let url = format!(
            "{}/open-apis/im/v1/messages/{}/resources/{}?type=image",
            self.config.base_url(),
            path_segment(message_id),
            path_segment(image_key)
        );
        let mut token_refreshed = false;
        loop {
            let token = self.tenant_token().await?;
            let resp = self
                .http
                .get(&url)
                .bearer_auth(&token)
                .send()
                .await
                .map_err(|e| FeishuError::Network(e.to_string()))?;
            let status = resp.status();
            let is_json = resp
                .headers()
                .get(reqwest::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.starts_with("application/json"));
            if status.is_success() && !is_json {
                return read_bounded(resp, MAX_IMAGE_BYTES).await;
            }
            let text = resp.text().await.unwrap_or_default();
            match classify(status, None, &text) {
                Outcome::InvalidToken(_) if !token_refreshed => {
                    self.drop_token(&token).await;
                    token_refreshed = true;
                }
                Outcome::Fail(e) | Outcome::Retry(e, _) | Outcome::InvalidToken(e) => {
                    return Err(e);
                }
                Outcome::Done(_) => {
                    return Err(FeishuError::BadResponse(
                        "a JSON answer instead of the image".into(),
                    ));
                }
            }
        }
    }

    /// Add a reaction (`emoji_type`, e.g. `OnIt`, `DONE`) to a message;
    /// returns the reaction id.
    pub async fn add_reaction(&self, message_id: &str, emoji: &str) -> Result<String, FeishuError> {
        let path = format!(
            "/open-apis/im/v1/messages/{}/reactions",
            path_segment(message_id)
        );
        let body = json!({"reaction_type": {"emoji_type": emoji}});
        let data = self.call(Method::POST, &path, &body).await?;
        Ok(data
            .get("reaction_id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string())
    }

    /// An authenticated call: returns `data` of a `code: 0` answer.
    /// Shared with the CardKit calls (`cardkit`), which use the same retry
    /// loop and error classes.
    pub(super) async fn call(
        &self,
        method: Method,
        path: &str,
        body: &Value,
    ) -> Result<Value, FeishuError> {
        self.call_full(method, path, body)
            .await
            .map(|v| v.get("data").cloned().unwrap_or(Value::Null))
    }

    /// An authenticated call: the whole `code: 0` answer. A `Null` body
    /// sends none (GET).
    async fn call_full(
        &self,
        method: Method,
        path: &str,
        body: &Value,
    ) -> Result<Value, FeishuError> {
        let url = format!("{}{}", self.config.base_url(), path);
        let mut token_refreshed = false;
        loop {
            let token = self.tenant_token().await?;
            match self
                .run_attempts(|| self.attempt(method.clone(), &url, body, Some(&token)))
                .await
            {
                Finished::Value(v) => return Ok(v),
                Finished::InvalidToken(e) if !token_refreshed => {
                    tracing::info!(error = %e, "Feishu token rejected; fetching a new one");
                    self.drop_token(&token).await;
                    token_refreshed = true;
                }
                Finished::Failed(e) | Finished::InvalidToken(e) => return Err(e),
            }
        }
    }

    /// Run attempts until done, a failure, or the retry budget is spent.
    async fn run_attempts<F, Fut>(&self, attempt: F) -> Finished
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Outcome>,
    {
        let mut n = 0;
        loop {
            n += 1;
            match attempt().await {
                Outcome::Done(v) => return Finished::Value(v),
                Outcome::Fail(e) => return Finished::Failed(e),
                Outcome::InvalidToken(e) => return Finished::InvalidToken(e),
                Outcome::Retry(e, wait) => {
                    if n >= self.retry.max_attempts {
                        return Finished::Failed(FeishuError::GaveUp {
                            attempts: n,
                            last: Box::new(e),
                        });
                    }
                    let delay = wait.unwrap_or_else(|| self.retry.backoff(n));
                    tracing::debug!(error = %e, ?delay, attempt = n, "retrying Feishu call");
                    tokio::time::sleep(delay).await;
                }
            }
        }
    }

    async fn attempt(
        &self,
        method: Method,
        url: &str,
        body: &Value,
        token: Option<&str>,
    ) -> Outcome {
        let mut req = self.http.request(method, url);
        if !body.is_null() {
            req = req.json(body);
        }
        self.finish_attempt(req, token).await
    }

    async fn finish_attempt(
        &self,
        mut req: reqwest::RequestBuilder,
        token: Option<&str>,
    ) -> Outcome {
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let resp = match req.send().await {
            Ok(r) => r,
            Err(e) => return Outcome::Retry(FeishuError::Network(e.to_string()), None),
        };
        let status = resp.status();
        let reset = ratelimit_reset(resp.headers());
        let text = match resp.text().await {
            Ok(t) => t,
            Err(e) => return Outcome::Retry(FeishuError::Network(e.to_string()), None),
        };
        classify(status, reset, &text)
    }
}

/// How long Feishu asks us to wait, from `x-ogw-ratelimit-reset`
/// (seconds), at most [`MAX_RATE_LIMIT_WAIT`].
pub(super) fn ratelimit_reset(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    headers
        .get("x-ogw-ratelimit-reset")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(|s| Duration::from_secs_f64(s).min(MAX_RATE_LIMIT_WAIT))
}

/// Decide what an HTTP answer means.
fn classify(status: StatusCode, reset: Option<Duration>, text: &str) -> Outcome {
    let parsed: Option<Value> = serde_json::from_str(text).ok();
    let code = parsed
        .as_ref()
        .and_then(|v| v.get("code"))
        .and_then(Value::as_i64);
    let msg = parsed
        .as_ref()
        .and_then(|v| v.get("msg"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let http_status = status.as_u16();
    let api_err = |code| FeishuError::Api {
        code,
        msg: msg.clone(),
        http_status,
    };
    match code {
        Some(c) if class_of_code(c) == ErrorClass::Token => Outcome::InvalidToken(api_err(c)),
        Some(c) if class_of_code(c) == ErrorClass::Permanent => Outcome::Fail(api_err(c)),
        Some(c) if class_of_code(c) == ErrorClass::RateLimited => {
            // Honour the reset, plus jitter so clients do not return in step;
            // without one (230020 has none) the policy's backoff.
            let jitter = Duration::from_millis(rand::rng().random_range(0..=250));
            Outcome::Retry(api_err(c), reset.map(|r| r + jitter))
        }
        Some(c) if is_busy(c) => Outcome::Retry(api_err(c), None),
        _ if status == StatusCode::TOO_MANY_REQUESTS => {
            let e = FeishuError::Http {
                status: http_status,
                body: snippet(text),
            };
            Outcome::Retry(e, reset)
        }
        _ if status.is_server_error() => {
            let e = match code {
                Some(c) => api_err(c),
                None => FeishuError::Http {
                    status: http_status,
                    body: snippet(text),
                },
            };
            Outcome::Retry(e, None)
        }
        Some(0) => match parsed {
            Some(v) => Outcome::Done(v),
            None => Outcome::Fail(FeishuError::BadResponse(snippet(text))),
        },
        Some(c) => Outcome::Fail(api_err(c)),
        None => Outcome::Fail(FeishuError::Http {
            status: http_status,
            body: snippet(text),
        }),
    }
}

/// Largest image taken from chat, in bytes: Feishu's own limit for images
/// is 10 MB, and a bigger answer is not an image we asked for.
pub const MAX_IMAGE_BYTES: usize = 10 * 1024 * 1024;

/// A response body of at most `max` bytes.
async fn read_bounded(mut resp: reqwest::Response, max: usize) -> Result<Vec<u8>, FeishuError> {
    let mut out = Vec::new();
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| FeishuError::Network(e.to_string()))?
    {
        if out.len() + chunk.len() > max {
            return Err(FeishuError::FileTooLarge(out.len() + chunk.len()));
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

/// Largest file Feishu takes for a file message, in bytes (30 MB).
pub const MAX_UPLOAD_BYTES: usize = 30 * 1024 * 1024;

/// The `im/v1/files` form: `file_type`, `file_name`, then the file, as
/// Feishu's documentation and both SDKs send it.
fn file_form(file_type: &str, file_name: &str, bytes: &[u8]) -> reqwest::multipart::Form {
    use reqwest::multipart::{Form, Part};
    // Quotes and line breaks would end a header value early (reqwest
    // escapes them with backslashes, which Feishu's docs do not mention):
    // they become `_`, in the name field too so both say the same.
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| if c == '"' || c.is_control() { '_' } else { c })
            .collect()
    };
    let name = clean(file_name);
    let file = Part::bytes(bytes.to_vec())
        .file_name(name.clone())
        .mime_str("application/octet-stream")
        .unwrap_or_else(|_| Part::bytes(bytes.to_vec()).file_name(name.clone()));
    Form::new()
        .text("file_type", clean(file_type))
        .text("file_name", name)
        .part("file", file)
}

/// The `im/v1/images` form: `image_type=message` and the image, as
/// Feishu's documentation shows it.
fn image_form(bytes: &[u8]) -> reqwest::multipart::Form {
    use reqwest::multipart::{Form, Part};
    let image = Part::bytes(bytes.to_vec())
        .file_name("screen.png")
        .mime_str("image/png")
        .unwrap_or_else(|_| Part::bytes(bytes.to_vec()).file_name("screen.png"));
    Form::new()
        .text("image_type", "message")
        .part("image", image)
}

/// Longest response body quoted in an error, in bytes.
const ERROR_BODY_BYTES: usize = 300;

fn snippet(text: &str) -> String {
    let mut end = text.len().min(ERROR_BODY_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

/// The message `content` of a card: a [`Card`], or card JSON kept as a
/// `serde_json::Value` (the daemon's outbox).
fn card_content(card: &(impl Serialize + ?Sized)) -> String {
    serde_json::to_string(card).unwrap_or_else(|_| String::from("{}"))
}

/// Refuses a request body over Feishu's limit before sending it: Feishu
/// would refuse it too (230025), and the builders keep under it, so this
/// only catches a card built some other way.
pub(super) fn check_body(body: &Value) -> Result<(), FeishuError> {
    let len = serde_json::to_vec(body).map(|b| b.len()).unwrap_or(0);
    if len > MAX_REQUEST_BODY_BYTES {
        return Err(FeishuError::CardTooLarge(len));
    }
    Ok(())
}

pub(super) fn message_id_of(data: &Value) -> Result<MessageId, FeishuError> {
    data.get("message_id")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| FeishuError::BadResponse("no message_id in the answer".into()))
}

/// Message ids go into URL paths: keep only the characters Feishu ids use.
pub(super) fn path_segment(id: &str) -> String {
    id.chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classify_codes() {
        let ok = classify(
            StatusCode::OK,
            None,
            r#"{"code":0,"data":{"message_id":"om"}}"#,
        );
        assert!(matches!(ok, Outcome::Done(_)));
        let bad_token = classify(
            StatusCode::BAD_REQUEST,
            None,
            r#"{"code":99991663,"msg":"bad"}"#,
        );
        assert!(matches!(bad_token, Outcome::InvalidToken(_)));
        let gone = classify(
            StatusCode::BAD_REQUEST,
            None,
            r#"{"code":230011,"msg":"recalled"}"#,
        );
        assert!(matches!(gone, Outcome::Fail(ref e) if e.is_permanent()));
        let limited = classify(
            StatusCode::TOO_MANY_REQUESTS,
            Some(Duration::from_secs(2)),
            r#"{"code":99991400,"msg":"rate"}"#,
        );
        match limited {
            Outcome::Retry(_, Some(d)) => {
                assert!(d >= Duration::from_secs(2) && d <= Duration::from_millis(2250))
            }
            _ => panic!("429 must retry after the reset"),
        }
        assert!(matches!(
            classify(StatusCode::BAD_GATEWAY, None, "<html>"),
            Outcome::Retry(_, None)
        ));
        assert!(matches!(
            classify(StatusCode::OK, None, "not json"),
            Outcome::Fail(FeishuError::Http { .. })
        ));
        assert!(matches!(
            classify(StatusCode::BAD_REQUEST, None, r#"{"code":10014,"msg":"x"}"#),
            Outcome::Fail(_)
        ));
    }

    #[test]
    fn documented_codes_are_classified() {
        let permanent =
            (CODE_TABLE.iter()).filter(|(_, r)| matches!(r, Row::Permanent | Row::Unreachable));
        for (c, _) in permanent {
            assert_eq!(class_of_code(*c), ErrorClass::Permanent, "{c}");
            let answer = format!(r#"{{"code":{c},"msg":"m"}}"#);
            assert!(matches!(
                classify(StatusCode::BAD_REQUEST, None, &answer),
                Outcome::Fail(ref e) if e.is_permanent()
            ));
        }
        // The documented rows, as the issue lists them.
        for c in [
            230002, 230006, 230013, 230017, 230018, 230019, 230029, 230034, 230035, 230038, 230053,
            230054, 230055, 230075, 232009,
        ] {
            assert!(chat_unreachable(c), "{c}: the chat cannot be reached");
        }
        assert!(
            !chat_unreachable(230022),
            "sensitive content: the chat is fine"
        );
        assert_eq!(class_of_code(230022), ErrorClass::Permanent);
        for c in [230025, 230031, 230110] {
            assert_eq!(class_of_code(c), ErrorClass::Permanent, "{c}");
        }
        for c in [
            200740, 200750, 300301, 300302, 300303, 300305, 300307, 300310,
        ] {
            assert_eq!(class_of_code(c), ErrorClass::Permanent, "CardKit {c}");
        }
        for c in [99991661, 99991663, 99991665] {
            assert_eq!(class_of_code(c), ErrorClass::Token, "{c}");
            let answer = format!(r#"{{"code":{c},"msg":"m"}}"#);
            assert!(matches!(
                classify(StatusCode::BAD_REQUEST, None, &answer),
                Outcome::InvalidToken(_)
            ));
        }
        // 230049, "the message is being sent": retried, never a refusal.
        assert!(is_busy(230049));
        assert!(matches!(
            classify(
                StatusCode::BAD_REQUEST,
                None,
                r#"{"code":230049,"msg":"sending"}"#
            ),
            Outcome::Retry(_, None)
        ));
        let codes: Vec<i64> = CODE_TABLE.iter().map(|(c, _)| *c).collect();
        let unique: std::collections::HashSet<_> = codes.iter().collect();
        assert_eq!(unique.len(), codes.len(), "a code in two rows");
        // 230020 (HTTP 400) backs off with the policy's delay; 99991400 with
        // HTTP 400, as documented, honours the reset header.
        assert!(matches!(
            classify(
                StatusCode::BAD_REQUEST,
                None,
                r#"{"code":230020,"msg":"freq"}"#
            ),
            Outcome::Retry(_, None)
        ));
        assert!(matches!(
            classify(
                StatusCode::BAD_REQUEST,
                Some(Duration::from_secs(3)),
                r#"{"code":99991400,"msg":"rate"}"#
            ),
            Outcome::Retry(_, Some(d)) if d >= Duration::from_secs(3)
        ));
        assert!(FeishuError::CardTooLarge(40_000).is_permanent());
        let gave_up = FeishuError::GaveUp {
            attempts: 6,
            last: Box::new(FeishuError::Api {
                code: 230020,
                msg: "freq".into(),
                http_status: 400,
            }),
        };
        assert_eq!(gave_up.class(), ErrorClass::RateLimited);
        assert_eq!(class_of_code(239_999), ErrorClass::Transient, "unknown");
    }

    /// A form's bytes as reqwest sends them, and its boundary.
    async fn form_bytes(form: reqwest::multipart::Form) -> (String, Vec<u8>) {
        use futures_util::StreamExt;
        let boundary = form.boundary().to_string();
        let mut stream = std::pin::pin!(form.into_stream());
        let mut out = Vec::new();
        while let Some(chunk) = stream.next().await {
            out.extend_from_slice(&chunk.unwrap());
        }
        (boundary, out)
    }

    #[tokio::test]
    async fn file_form_has_the_three_fields_and_cannot_be_broken_by_a_name() {
        let (b, body) = form_bytes(file_form("stream", "a\"b\r\nc.txt", b"\x00data")).await;
        let text = String::from_utf8_lossy(&body);
        assert!(
            text.starts_with(&format!(
                "--{b}\r\nContent-Disposition: form-data; name=\"file_type\"\r\n\r\nstream\r\n"
            )),
            "{text}"
        );
        assert!(
            text.contains("name=\"file_name\"\r\n\r\na_b__c.txt\r\n"),
            "{text}"
        );
        assert!(text.contains(
            "name=\"file\"; filename=\"a_b__c.txt\"\r\nContent-Type: application/octet-stream\r\n\r\n\x00data\r\n"
        ));
        assert!(
            text.ends_with(&format!("\x00data\r\n--{b}--\r\n")),
            "{text}"
        );
    }

    #[tokio::test]
    async fn image_form_names_its_type_and_the_image() {
        let (b, body) = form_bytes(image_form(b"\x89PNG")).await;
        let text = String::from_utf8_lossy(&body);
        assert!(text.starts_with(&format!(
            "--{b}\r\nContent-Disposition: form-data; name=\"image_type\"\r\n\r\nmessage\r\n--{b}\r\n"
        )));
        assert!(text.contains(
            "name=\"image\"; filename=\"screen.png\"\r\nContent-Type: image/png\r\n\r\n"
        ));
        assert!(
            text.ends_with(&format!("\u{fffd}PNG\r\n--{b}--\r\n")),
            "{text}"
        );
    }

    #[test]
    fn backoff_grows_and_is_capped() {
        let p = RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(300),
        };
        for _ in 0..50 {
            let d1 = p.backoff(1);
            assert!(d1 >= Duration::from_millis(50) && d1 <= Duration::from_millis(100));
            let d5 = p.backoff(5);
            assert!(d5 >= Duration::from_millis(150) && d5 <= Duration::from_millis(300));
        }
    }

    #[test]
    fn path_segments_are_sanitised() {
        assert_eq!(path_segment("om_ab-1/../x?y"), "om_ab-1xy");
    }
}
