//! The webhook intake: an axum router Feishu posts events to. Answers
//! `url_verification`, decrypts `{"encrypt":…}` bodies (AES-256-CBC, key =
//! SHA-256 of the encrypt key, IV = first 16 bytes), checks
//! `X-Lark-Signature` over the raw body in constant time, rejects stale
//! timestamps. Bad signature: 401; garbage: 400; never a panic.
//!
//! Two signature schemes: events and 2.0 callbacks (`schema` set, or an
//! encrypted body) are signed hex(sha256(timestamp + nonce + encrypt_key +
//! body)); old (1.0) card callbacks are signed
//! hex(sha1(timestamp + nonce + verification_token + body)). Both secrets
//! are required (the webhook does not start without them) and every
//! request but the URL check must carry a valid signature: an unsigned
//! body, of either shape, could otherwise name any user, an approver
//! included.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use aes::cipher::{BlockDecryptMut, KeyIvInit, block_padding::Pkcs7};
use axum::Router;
use axum::body::Bytes;
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
/// Signed requests older or newer than this are rejected (replay window), in seconds.
pub const MAX_TIMESTAMP_SKEW_SECS: u64 = 300;

/// Why a request was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WebhookError {
    #[error("bad signature")]
    BadSignature,
    #[error("stale or missing timestamp")]
    StaleTimestamp,
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
            | WebhookError::BadToken
            | WebhookError::Decrypt(_) => StatusCode::UNAUTHORIZED,
            WebhookError::Garbage(_) => StatusCode::BAD_REQUEST,
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
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state))
}

async fn handle(
    State(st): State<Arc<WebhookState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, WebhookError> {
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
    check_signature(&headers, scheme, secret, &body, now)?;
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
    let was_encrypted = encrypted.is_some();
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
    let scheme = scheme_of(was_encrypted, &payload);
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

/// The scheme of a request: an encrypted body or one with `schema` is an
/// event or 2.0 callback; a plain body shaped like an old card callback
/// (`action` and `open_message_id` at the top) is a 1.0 card callback.
fn scheme_of(encrypted: bool, payload: &Value) -> Scheme {
    let old_card = payload.get("schema").is_none()
        && payload.get("action").is_some()
        && payload.get("open_message_id").is_some();
    if !encrypted && old_card {
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
        return Err(WebhookError::StaleTimestamp);
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
            Err(WebhookError::StaleTimestamp)
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
