//! The webhook intake: an axum router Feishu posts events to. Answers
//! `url_verification`, decrypts `{"encrypt":…}` bodies (AES-256-CBC, key =
//! SHA-256 of the encrypt key, IV = first 16 bytes), checks
//! `X-Lark-Signature` over the raw body in constant time, rejects stale
//! timestamps. Bad signature: 401; garbage: 400; never a panic.
//!
//! Two signature schemes: events and 2.0 callbacks (`schema` set) are
//! signed hex(sha256(timestamp + nonce + encrypt_key + body)); old (1.0)
//! card callbacks, encrypted or not, only ever
//! hex(sha1(timestamp + nonce + verification_token + body)) over the body
//! as received (Feishu never signs them with the encrypt key; the SDK's
//! card handler decrypts first to see what it got, then checks the sha1).
//! Both secrets are required (the webhook does not start without them)
//! and every request but the URL check must carry a valid signature: an
//! unsigned body, of either shape, could otherwise name any user, an
//! approver included.
//!
//! The timestamp window ([`MAX_TIMESTAMP_SKEW_SECS`]) is clawmux's own
//! replay guard (neither Feishu's docs nor its SDKs bound it): the host's
//! clock must be within it of Feishu's, and an event refused for skew is
//! logged with the skew.
//!
//! The server ([`serve`]) is bounded as a public HTTP server must be: at
//! most [`MAX_CONNECTIONS`] connections (never more than a share of the
//! process's file descriptors; at the limit the oldest connection not
//! handling a request gives way), headers within [`HEADER_READ_TIMEOUT`],
//! a body within [`BODY_READ_TIMEOUT`]; anyone can connect to the port, so
//! slow or half-sent requests must not hold it.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aes::cipher::{BlockDecryptMut, KeyIvInit, block_padding::Pkcs7};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use base64::Engine;
use serde_json::{Value, json};
use sha1::{Digest as _, Sha1};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::FeishuConfig;
use super::dispatch::Dispatcher;
use super::event::token_of;

/// Largest accepted body, in bytes (events are a few KB).
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
/// Signed requests older or newer than this are rejected (replay window),
/// in seconds. Our own bound: the host clock must be this close to Feishu's.
pub const MAX_TIMESTAMP_SKEW_SECS: u64 = 300;
/// Connections open at once at most (each costs a file descriptor).
/// Feishu posts one event per request and few at a time. Capped at a
/// quarter of the process's open-file limit ([`connection_limit`]) so the
/// port can never starve tmux, the state and the log of descriptors.
pub const MAX_CONNECTIONS: usize = 256;
/// Time a connection has to send a request's headers, from its first byte.
/// Feishu sends a request whole in milliseconds; a client still sending
/// headers after this is slow on purpose and is cut off.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);
/// Time a request has to send its body (at most [`MAX_BODY_BYTES`]).
pub const BODY_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest a connection stays open, idle keep-alive included: a slot held
/// by a client that never sends is freed after it.
pub const MAX_CONNECTION_LIFETIME: Duration = Duration::from_secs(60);
/// Wait after a failed accept (e.g. out of file descriptors) before the next.
const ACCEPT_RETRY: Duration = Duration::from_millis(100);

/// Why a request was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WebhookError {
    #[error("bad signature")]
    BadSignature,
    #[error("stale or missing timestamp")]
    StaleTimestamp,
    /// Signed correctly (so Feishu sent it), but its timestamp is
    /// `skew_secs` from this host's clock (positive: Feishu is ahead),
    /// outside the window: most likely this host's clock is off.
    #[error(
        "its timestamp is {skew_secs} s from this host's clock, outside the ±{MAX_TIMESTAMP_SKEW_SECS} s window; check the host clock (NTP)"
    )]
    ClockSkew { skew_secs: i64 },
    #[error("the request body did not arrive in time")]
    SlowBody,
    #[error("verification token mismatch")]
    BadToken,
    #[error("body is not a Feishu event: {0}")]
    Garbage(String),
    #[error("cannot decrypt: {0}")]
    Decrypt(String),
    #[error(
        "the webhook needs both FEISHU_ENCRYPT_KEY and FEISHU_VERIFICATION_TOKEN (set them in the app's Events and callbacks page): without them any request that reaches the port could post as any user"
    )]
    Unverifiable,
}

impl IntoResponse for WebhookError {
    fn into_response(self) -> Response {
        let status = match self {
            // A ciphertext that does not decrypt to an event was not made
            // with our key: refused like a bad signature.
            WebhookError::BadSignature
            | WebhookError::StaleTimestamp
            | WebhookError::ClockSkew { .. }
            | WebhookError::BadToken
            | WebhookError::Decrypt(_) => StatusCode::UNAUTHORIZED,
            WebhookError::Garbage(_) => StatusCode::BAD_REQUEST,
            WebhookError::SlowBody => StatusCode::REQUEST_TIMEOUT,
            WebhookError::Unverifiable => StatusCode::INTERNAL_SERVER_ERROR,
        };
        (status, self.to_string()).into_response()
    }
}

struct WebhookState {
    encrypt_key: String,
    verification_token: String,
    dispatcher: Arc<Dispatcher>,
}

/// The router (any path, POST). The daemon may mount it in its own server.
/// Refused without both secrets: nothing could be verified.
pub(crate) fn router(
    config: FeishuConfig,
    dispatcher: Arc<Dispatcher>,
) -> Result<Router, WebhookError> {
    let secret = |s: Option<String>| s.filter(|s| !s.trim().is_empty());
    let (Some(encrypt_key), Some(verification_token)) = (
        secret(config.encrypt_key),
        secret(config.verification_token),
    ) else {
        return Err(WebhookError::Unverifiable);
    };
    let state = Arc::new(WebhookState {
        encrypt_key,
        verification_token,
        dispatcher,
    });
    Ok(Router::new()
        .route("/", post(handle))
        .route("/{*path}", post(handle))
        .layer(axum::extract::DefaultBodyLimit::disable())
        .with_state(state))
}

/// Serve `app` on `listener` until it fails: at most
/// [`connection_limit`] connections open at once, each bounded in time.
/// At the limit a new connection takes the slot of the oldest one that is
/// not handling a request (a client still sending headers, or idle), so
/// clients that connect and stall can never lock Feishu out; when every
/// slot is handling a request, the new connection is closed (Feishu
/// redelivers).
pub(crate) async fn serve(listener: tokio::net::TcpListener, app: Router) -> std::io::Result<()> {
    use hyper::service::Service as _;
    use hyper_util::rt::{TokioIo, TokioTimer};
    use hyper_util::service::TowerToHyperService;
    let limit = connection_limit();
    let slots = Arc::new(std::sync::Mutex::new(Slots::default()));
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of descriptors or a connection reset before accept:
                // the listener is still good.
                tracing::warn!(error = %e, "webhook accept failed");
                tokio::time::sleep(ACCEPT_RETRY).await;
                continue;
            }
        };
        let Some((id, busy, evicted)) = lock(&slots).admit(limit) else {
            tracing::warn!(
                limit,
                "webhook: every connection is handling a request; closing a new one"
            );
            continue;
        };
        let inner = TowerToHyperService::new(app.clone());
        let service = hyper::service::service_fn(move |req| {
            let guard = Busy::enter(Arc::clone(&busy));
            let answer = inner.call(req);
            async move {
                let answer = answer.await;
                drop(guard);
                answer
            }
        });
        let slots = Arc::clone(&slots);
        tokio::spawn(async move {
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                _ = tokio::time::timeout(MAX_CONNECTION_LIFETIME, conn) => {}
                _ = evicted => {}
            }
            lock(&slots).open.remove(&id);
        });
    }
}

fn lock(slots: &std::sync::Mutex<Slots>) -> std::sync::MutexGuard<'_, Slots> {
    slots.lock().unwrap_or_else(|p| p.into_inner())
}

/// The open connections, oldest first.
#[derive(Default)]
struct Slots {
    next_id: u64,
    /// id -> (requests in progress, eviction signal).
    open: std::collections::BTreeMap<
        u64,
        (
            Arc<std::sync::atomic::AtomicUsize>,
            tokio::sync::oneshot::Sender<()>,
        ),
    >,
}

type Admitted = (
    u64,
    Arc<std::sync::atomic::AtomicUsize>,
    tokio::sync::oneshot::Receiver<()>,
);

impl Slots {
    /// A slot for a new connection, evicting the oldest connection not
    /// handling a request when all `limit` are taken; None when every one is.
    fn admit(&mut self, limit: usize) -> Option<Admitted> {
        use std::sync::atomic::Ordering;
        if self.open.len() >= limit {
            let idle = (self.open.iter())
                .find(|(_, (busy, _))| busy.load(Ordering::Acquire) == 0)
                .map(|(id, _)| *id)?;
            if let Some((_, evict)) = self.open.remove(&idle) {
                let _ = evict.send(());
            }
        }
        self.next_id += 1;
        let busy = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.open.insert(self.next_id, (Arc::clone(&busy), tx));
        Some((self.next_id, busy, rx))
    }
}

/// Marks a connection as handling a request while alive.
struct Busy(Arc<std::sync::atomic::AtomicUsize>);

impl Busy {
    fn enter(n: Arc<std::sync::atomic::AtomicUsize>) -> Busy {
        n.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        Busy(n)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

/// [`MAX_CONNECTIONS`], or a quarter of the open-file limit when that is
/// lower (at least 1).
pub fn connection_limit() -> usize {
    use rustix::process::{Resource, getrlimit};
    // `None`: no limit.
    let quarter = getrlimit(Resource::Nofile)
        .current
        .map_or(usize::MAX, |n| usize::try_from(n / 4).unwrap_or(usize::MAX));
    MAX_CONNECTIONS.min(quarter).max(1)
}

async fn handle(
    State(st): State<Arc<WebhookState>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, WebhookError> {
    let body = match tokio::time::timeout(
        BODY_READ_TIMEOUT,
        axum::body::to_bytes(body, MAX_BODY_BYTES),
    )
    .await
    {
        Ok(Ok(b)) => b,
        Ok(Err(e)) => return Ok((StatusCode::PAYLOAD_TOO_LARGE, e.to_string()).into_response()),
        Err(_) => return Err(WebhookError::SlowBody),
    };
    let body: Bytes = body;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let key = st.encrypt_key.as_str();
    let token = st.verification_token.as_str();
    let Decoded { payload, scheme } = decode_body(&body, Some(key), Some(token))?;
    if payload.get("type").and_then(Value::as_str) == Some("url_verification") {
        // Feishu does not sign the URL check; its token (and, encrypted,
        // the key) proves it, and the answer is only the challenge.
        let challenge = payload.get("challenge").cloned().unwrap_or(Value::Null);
        return Ok(axum::Json(json!({"challenge": challenge})).into_response());
    }
    let secret = match scheme {
        Scheme::Event => key,
        Scheme::CardV1 => token,
    };
    if let Err(e) = check_signature(&headers, scheme, secret, &body, now) {
        if let WebhookError::ClockSkew { skew_secs } = e {
            tracing::warn!(skew_secs, "refused a signed Feishu event: {e}");
            st.dispatcher.clock_skew(skew_secs, MAX_TIMESTAMP_SKEW_SECS);
        }
        return Err(e);
    }
    let fallback = payload
        .get("token")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let answer = st.dispatcher.handle(&payload, &fallback).await;
    Ok(axum::Json(answer).into_response())
}

/// A request body, decoded.
#[derive(Debug, PartialEq)]
pub struct Decoded {
    pub payload: Value,
    /// How the request must be signed.
    pub scheme: Scheme,
}

/// The event payload a body carries: the JSON object, decrypted first when
/// it is `{"encrypt":…}`, its verification token checked when one is
/// configured (not for a 1.0 card callback: its signature proves it). The
/// signature is checked after (it needs the headers and the clock). Pure,
/// so the fuzz target reaches it.
#[doc(hidden)]
pub fn decode_body(
    body: &[u8],
    encrypt_key: Option<&str>,
    verification_token: Option<&str>,
) -> Result<Decoded, WebhookError> {
    let outer: Value =
        serde_json::from_slice(body).map_err(|e| WebhookError::Garbage(e.to_string()))?;
    let encrypted = outer.get("encrypt").and_then(Value::as_str);
    let payload = match encrypted {
        Some(enc) => {
            let key = encrypt_key.ok_or_else(|| {
                WebhookError::Decrypt("encrypted body but no encrypt key configured".into())
            })?;
            let plain = decrypt(key, enc)?;
            serde_json::from_slice(&plain)
                .map_err(|e| WebhookError::Decrypt(format!("not JSON once decrypted: {e}")))?
        }
        None => outer,
    };
    if !payload.is_object() {
        return Err(WebhookError::Garbage("not a JSON object".into()));
    }
    // A 1.0 card callback's `token` is the card's update token, not the
    // verification token: its sha1 signature proves that one instead.
    let scheme = scheme_of(&payload);
    if let Some(expected) = verification_token
        && scheme != Scheme::CardV1
    {
        let got = token_of(&payload).unwrap_or_default();
        if !bool::from(got.as_bytes().ct_eq(expected.as_bytes())) {
            return Err(WebhookError::BadToken);
        }
    }
    Ok(Decoded { payload, scheme })
}

/// How a request is signed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// Events and 2.0 callbacks: sha256 with the encrypt key.
    Event,
    /// Old (1.0) card callbacks: sha1 with the verification token.
    CardV1,
}

/// The scheme of a request, from its (decrypted) payload: one with
/// `schema` is an event or 2.0 callback; one shaped like an old card
/// callback (`action` and `open_message_id` at the top), encrypted or
/// not, is a 1.0 card callback.
fn scheme_of(payload: &Value) -> Scheme {
    let old_card = payload.get("schema").is_none()
        && payload.get("action").is_some()
        && payload.get("open_message_id").is_some();
    if old_card {
        Scheme::CardV1
    } else {
        Scheme::Event
    }
}

/// Verify `X-Lark-Signature` with `secret` (the encrypt key or the
/// verification token, by scheme); no signature is a bad one.
fn check_signature(
    headers: &HeaderMap,
    scheme: Scheme,
    secret: &str,
    body: &[u8],
    now: u64,
) -> Result<(), WebhookError> {
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let Some(signature) = get("x-lark-signature") else {
        return Err(WebhookError::BadSignature);
    };
    let ts = get("x-lark-request-timestamp").unwrap_or_default();
    let nonce = get("x-lark-request-nonce").unwrap_or_default();
    let expected = match scheme {
        Scheme::Event => signature_of(ts, nonce, secret, body),
        Scheme::CardV1 => card_v1_signature_of(ts, nonce, secret, body),
    };
    if !bool::from(
        expected
            .as_bytes()
            .ct_eq(signature.trim().to_ascii_lowercase().as_bytes()),
    ) {
        return Err(WebhookError::BadSignature);
    }
    let ts: u64 = ts.parse().map_err(|_| WebhookError::StaleTimestamp)?;
    if ts.abs_diff(now) > MAX_TIMESTAMP_SKEW_SECS {
        // Signed correctly, so Feishu sent it: most likely this host's
        // clock is off. Say by how much (positive: Feishu is ahead).
        let skew = i128::from(ts) - i128::from(now);
        let skew_secs = i64::try_from(skew).unwrap_or(if skew < 0 { i64::MIN } else { i64::MAX });
        return Err(WebhookError::ClockSkew { skew_secs });
    }
    Ok(())
}

/// hex(sha256(timestamp + nonce + encrypt_key + body)).
pub fn signature_of(timestamp: &str, nonce: &str, encrypt_key: &str, body: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(timestamp.as_bytes());
    h.update(nonce.as_bytes());
    h.update(encrypt_key.as_bytes());
    h.update(body);
    hex::encode(h.finalize())
}

/// hex(sha1(timestamp + nonce + verification_token + body)): old card callbacks.
pub fn card_v1_signature_of(
    timestamp: &str,
    nonce: &str,
    verification_token: &str,
    body: &[u8],
) -> String {
    let mut h = Sha1::new();
    h.update(timestamp.as_bytes());
    h.update(nonce.as_bytes());
    h.update(verification_token.as_bytes());
    h.update(body);
    hex::encode(h.finalize())
}

/// Decrypt an `encrypt` field.
pub fn decrypt(encrypt_key: &str, encrypted_b64: &str) -> Result<Vec<u8>, WebhookError> {
    let data = base64::engine::general_purpose::STANDARD
        .decode(encrypted_b64.trim())
        .map_err(|e| WebhookError::Decrypt(format!("base64: {e}")))?;
    if data.len() < 32 || data.len() % 16 != 0 {
        return Err(WebhookError::Decrypt(format!(
            "{} bytes is not IV + whole blocks",
            data.len()
        )));
    }
    let key: [u8; 32] = Sha256::digest(encrypt_key.as_bytes()).into();
    let (iv, ct) = data.split_at(16);
    let mut buf = ct.to_vec();
    let dec = cbc::Decryptor::<aes::Aes256>::new_from_slices(&key, iv)
        .map_err(|e| WebhookError::Decrypt(e.to_string()))?;
    let plain = dec
        .decrypt_padded_mut::<Pkcs7>(&mut buf)
        .map_err(|_| WebhookError::Decrypt("bad padding (wrong key?)".into()))?;
    Ok(plain.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_server_evicts_the_oldest_idle_connection_never_a_busy_one() {
        use std::sync::atomic::Ordering;
        let mut slots = Slots::default();
        let (a, a_busy, mut a_evicted) = slots.admit(2).unwrap();
        let (b, _b_busy, mut b_evicted) = slots.admit(2).unwrap();
        a_busy.fetch_add(1, Ordering::AcqRel);
        // Full: the oldest idle one (b, since a handles a request) goes.
        let (c, c_busy, _) = slots.admit(2).unwrap();
        assert!(b_evicted.try_recv().is_ok(), "b evicted");
        assert!(a_evicted.try_recv().is_err(), "a kept: it is answering");
        assert_eq!(slots.open.keys().copied().collect::<Vec<_>>(), [a, c]);
        assert!(b < c);
        c_busy.fetch_add(1, Ordering::AcqRel);
        assert!(slots.admit(2).is_none(), "every slot is answering");
    }

    #[test]
    fn decrypt_rejects_garbage_without_panicking() {
        assert!(decrypt("k", "%%%").is_err());
        assert!(decrypt("k", "AAAA").is_err());
        let b64 = base64::engine::general_purpose::STANDARD.encode([0u8; 48]);
        assert!(matches!(decrypt("k", &b64), Err(WebhookError::Decrypt(_))));
    }

    #[test]
    fn signature_is_hex_sha256_of_concatenation() {
        let s = signature_of("1", "n", "k", b"{}");
        let mut h = Sha256::new();
        h.update(b"1nk{}");
        assert_eq!(s, hex::encode(h.finalize()));
    }

    #[test]
    fn stale_and_forged_signatures_refused() {
        let mut headers = HeaderMap::new();
        headers.insert("x-lark-request-timestamp", "1000".parse().unwrap());
        headers.insert("x-lark-request-nonce", "n".parse().unwrap());
        let good = signature_of("1000", "n", "k", b"{}");
        headers.insert("x-lark-signature", good.parse().unwrap());
        let ev = Scheme::Event;
        assert_eq!(check_signature(&headers, ev, "k", b"{}", 1000), Ok(()));
        assert_eq!(
            check_signature(&headers, ev, "k", b"{}", 1000 + MAX_TIMESTAMP_SKEW_SECS + 1),
            Err(WebhookError::ClockSkew { skew_secs: -301 })
        );
        // Feishu ahead of this host: a positive skew.
        assert_eq!(
            check_signature(&headers, ev, "k", b"{}", 1000 - MAX_TIMESTAMP_SKEW_SECS - 5),
            Err(WebhookError::ClockSkew { skew_secs: 305 })
        );
        assert_eq!(
            check_signature(&headers, ev, "k", b"{}", 1000 + MAX_TIMESTAMP_SKEW_SECS),
            Ok(())
        );
        assert_eq!(
            check_signature(&headers, ev, "k", b"{ }", 1000),
            Err(WebhookError::BadSignature)
        );
        // The right secret in the wrong scheme is a forgery.
        assert_eq!(
            check_signature(&headers, Scheme::CardV1, "k", b"{}", 1000),
            Err(WebhookError::BadSignature)
        );
        assert_eq!(
            check_signature(&HeaderMap::new(), ev, "k", b"{}", 1000),
            Err(WebhookError::BadSignature)
        );
    }
}
