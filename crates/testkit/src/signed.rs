//! Requests to a webhook made the way Feishu makes them when the app has
//! an encrypt key: the event encrypted (AES-256-CBC, key SHA-256 of the
//! encrypt key, IV prepended, base64) and signed (`X-Lark-Signature`).

use std::time::{SystemTime, UNIX_EPOCH};

use aes::cipher::{BlockEncryptMut, KeyIvInit, block_padding::Pkcs7};
use base64::Engine;
use clawmux::feishu::webhook::signature_of;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// Encrypts `plain` as Feishu does with encrypt key `key`.
pub fn encrypt(key: &str, plain: &[u8]) -> String {
    let k: [u8; 32] = Sha256::digest(key.as_bytes()).into();
    let iv: [u8; 16] = rand::random();
    let mut buf = plain.to_vec();
    buf.resize(plain.len() + 16, 0);
    let ct = cbc::Encryptor::<aes::Aes256>::new_from_slices(&k, &iv)
        .expect("key and iv sizes")
        .encrypt_padded_mut::<Pkcs7>(&mut buf, plain.len())
        .expect("buffer has room for padding")
        .to_vec();
    base64::engine::general_purpose::STANDARD.encode([iv.as_slice(), &ct].concat())
}

/// Seconds since the epoch, as Feishu stamps a request.
pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Posts `payload` (its `header.token` set to `token`) encrypted with
/// `key` and signed with it, now. Returns the HTTP status and the body.
pub async fn post_event(
    url: &str,
    key: &str,
    token: &str,
    payload: &Value,
) -> Result<(u16, String), reqwest::Error> {
    post_event_at(url, key, token, payload, now()).await
}

/// [`post_event`] stamped `ts` (seconds since the epoch), as a Feishu
/// whose clock differs from this host's would.
pub async fn post_event_at(
    url: &str,
    key: &str,
    token: &str,
    payload: &Value,
    ts: u64,
) -> Result<(u16, String), reqwest::Error> {
    let mut payload = payload.clone();
    payload["header"]["token"] = json!(token);
    let body = json!({"encrypt": encrypt(key, payload.to_string().as_bytes())}).to_string();
    let ts = ts.to_string();
    let answer = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("X-Lark-Request-Timestamp", &ts)
        .header("X-Lark-Request-Nonce", "nonce-1")
        .header(
            "X-Lark-Signature",
            signature_of(&ts, "nonce-1", key, body.as_bytes()),
        )
        .body(body)
        .send()
        .await?;
    let status = answer.status().as_u16();
    Ok((status, answer.text().await?))
}
