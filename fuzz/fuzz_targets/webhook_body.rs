//! The Feishu webhook body decoder and event parser on arbitrary bodies:
//! never panics, every refusal is a typed error, and encryption is
//! transparent. The first byte chooses the body:
//! - 0: the bytes as the body (plain JSON, url_verification, garbage);
//! - 1: `{"encrypt":"<bytes>"}` (arbitrary base64 text);
//! - 2: `{"encrypt":"<base64 of bytes>"}` (arbitrary IV + ciphertext);
//! - 3: the bytes encrypted like Feishu (AES-256-CBC): decoding gives
//!   exactly what decoding them as a plain body gives.
//!
//! Bit 2 configures a verification token as well.
#![no_main]

use aes::cipher::{BlockEncryptMut, KeyIvInit, block_padding::Pkcs7};
use base64::Engine;
use clawmux::feishu::event::{EventError, Parsed, parse};
use clawmux::feishu::webhook::{Scheme, WebhookError, decode_body};
use libfuzzer_sys::fuzz_target;
use serde_json::json;
use sha2::{Digest, Sha256};

const KEY: &str = "fuzz-encrypt-key";
const TOKEN: &str = "fuzz-token";

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Encrypts like Feishu, with a fixed IV (the decoder takes any).
fn encrypt(plain: &[u8]) -> String {
    let key: [u8; 32] = Sha256::digest(KEY.as_bytes()).into();
    let iv = [7u8; 16];
    let mut buf = plain.to_vec();
    buf.resize(plain.len() + 16, 0);
    let ct = cbc::Encryptor::<aes::Aes256>::new_from_slices(&key, &iv)
        .expect("key and iv sizes")
        .encrypt_padded_mut::<Pkcs7>(&mut buf, plain.len())
        .expect("room for padding");
    b64(&[iv.as_slice(), ct].concat())
}

fn encrypted_body(field: &str) -> Vec<u8> {
    json!({ "encrypt": field }).to_string().into_bytes()
}

fuzz_target!(|data: &[u8]| {
    let [mode, rest @ ..] = data else {
        return;
    };
    let token = (mode & 4 != 0).then_some(TOKEN);
    let body = match mode & 3 {
        0 => rest.to_vec(),
        1 => encrypted_body(&String::from_utf8_lossy(rest)),
        2 => encrypted_body(&b64(rest)),
        _ => encrypted_body(&encrypt(rest)),
    };
    let decoded = decode_body(&body, Some(KEY), token);
    if mode & 3 == 3 {
        // Decryption is transparent, except that a decrypted body is not
        // decrypted again, a ciphertext that is no event is refused like a
        // forgery (`Decrypt`), and only a plain body can be a 1.0 card
        // callback (whose token is not the verification token).
        let plain = decode_body(rest, None, token);
        // (A plain body with an `encrypt` field fails here: no key.)
        if !matches!(plain, Err(WebhookError::Decrypt(_))) {
            match (&decoded, &plain) {
                (Ok(a), Ok(b)) => assert_eq!(a.payload, b.payload),
                (Err(WebhookError::Decrypt(_)), Err(WebhookError::Garbage(_)))
                | (Err(WebhookError::Garbage(_)), Err(WebhookError::Garbage(_)))
                | (Err(WebhookError::BadToken), Err(WebhookError::BadToken)) => {}
                (Err(WebhookError::BadToken), Ok(b)) if b.scheme == Scheme::CardV1 => {}
                _ => panic!("encrypted {decoded:?} but plain {plain:?}"),
            }
        }
    }
    let payload = match decoded {
        Ok(decoded) => decoded.payload,
        Err(
            WebhookError::Garbage(_)
            | WebhookError::Decrypt(_)
            | WebhookError::BadToken
            | WebhookError::BadSignature
            | WebhookError::StaleTimestamp,
        ) => return,
    };
    assert!(payload.is_object());
    match parse(&payload, "fallback") {
        Ok(Parsed::Message(_) | Parsed::CardAction { .. } | Parsed::Other(_)) => {}
        Err(EventError::Missing(_) | EventError::NotJson(_)) => {}
    }
});
