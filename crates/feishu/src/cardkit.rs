//! CardKit card entities, for cards whose text streams in as it is written:
//! create the entity, send it as a message, push one element's full text
//! (Feishu types out what was added), turn streaming on again before (or
//! when) Feishu ends it, and close it at the end, or replace the whole card.
//!
//! CardKit calls are single attempts with their own short timeout
//! ([`CARDKIT_REQUEST_TIMEOUT`]); the caller (one task per card) retries on
//! its own schedule and honours a rate limit's reset for that card only,
//! so one card's trouble never waits inside a call another card needs.
//! The message that shows an entity goes through [`Api`]'s retry loop.
//!
//! Each operation on an entity carries a `sequence` that must grow strictly
//! (Feishu answers [`SEQUENCE_CODE`] otherwise) and a `uuid` that makes a
//! replay of the same operation a no-op, so an operation retried after a
//! timeout, a 5xx or a crash is sent again with the same pair.
//!
//! Streaming mode ends by itself [`STREAMING_LIFETIME`] after it was last
//! turned on; the next element update answers 200850, later ones 300309
//! ([`STREAMING_CLOSED_CODES`]). Only `cardkit/v1` routes update an entity:
//! a message showing one is never patched through `im/v1`.

use std::sync::OnceLock;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tokio::time::Duration;

use super::api::{
    Api, ErrorClass, FeishuError, MessageId, ReceiveId, check_body, class_of_code, message_id_of,
    path_segment, ratelimit_reset,
};

/// Operations per second Feishu allows on one card entity.
pub const MAX_OPS_PER_SEC_PER_CARD: u32 = 10;
/// Longest text one element content update takes, in chars (Feishu's
/// documented bound on `content`).
pub const MAX_CONTENT_CHARS: usize = 100_000;
/// Feishu ends an entity's streaming mode this long after it was last
/// turned on (飞书卡片 › 流式更新卡片).
pub const STREAMING_LIFETIME: Duration = Duration::from_secs(600);
/// The sequence did not grow strictly since the entity's last operation.
pub const SEQUENCE_CODE: i64 = 300317;
/// The same uuid came with a different operation.
pub const UUID_CONFLICT_CODE: i64 = 200770;
/// Streaming mode ended: 200850 timed out (the first update after the
/// lifetime), 300309 closed. Turn it on again and resend.
pub const STREAMING_CLOSED_CODES: [i64; 2] = [200850, 300309];
/// The entity is gone (200740) or older than 14 days (200750): nothing
/// can update it any more.
pub const ENTITY_GONE_CODES: [i64; 2] = [200740, 200750];
/// One CardKit request may take this long: a hung call holds only its
/// own card, and only this long, before the card's task retries.
pub const CARDKIT_REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// Whether a CardKit failure means: stop using CardKit for this card.
/// The client's one error table says so: a code no retry can fix (the
/// card or operation refused, no permission, the entity gone).
pub fn calls_for_fallback(e: &FeishuError) -> bool {
    e.code()
        .is_some_and(|c| class_of_code(c) == ErrorClass::Permanent)
}

/// Whether a CardKit failure says streaming mode has ended.
pub fn streaming_closed(e: &FeishuError) -> bool {
    e.code()
        .is_some_and(|c| STREAMING_CLOSED_CODES.contains(&c))
}

/// A failed single CardKit attempt.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{error}")]
pub struct CardKitError {
    pub error: FeishuError,
    /// Feishu asked us to slow down: come back after this (its
    /// `x-ogw-ratelimit-reset`, at most [`MAX_RATE_LIMIT_WAIT`](super::api::MAX_RATE_LIMIT_WAIT)).
    pub rate_limited: Option<Duration>,
}

impl From<FeishuError> for CardKitError {
    fn from(error: FeishuError) -> Self {
        CardKitError {
            error,
            rate_limited: None,
        }
    }
}

/// The HTTP client CardKit calls share: its own timeout, shorter than the
/// message client's.
fn http() -> &'static reqwest::Client {
    static HTTP: OnceLock<reqwest::Client> = OnceLock::new();
    HTTP.get_or_init(|| {
        reqwest::Client::builder()
            .timeout(CARDKIT_REQUEST_TIMEOUT)
            .build()
            .unwrap_or_else(|_| reqwest::Client::new())
    })
}

/// What one CardKit answer means.
fn classify(
    status: StatusCode,
    reset: Option<Duration>,
    text: &str,
) -> Result<Value, CardKitError> {
    let parsed: Option<Value> = serde_json::from_str(text).ok();
    let code = parsed.as_ref().and_then(|v| v["code"].as_i64());
    let msg = parsed
        .as_ref()
        .and_then(|v| v["msg"].as_str())
        .unwrap_or_default()
        .to_string();
    let http_status = status.as_u16();
    let error = match code {
        Some(0) if status.is_success() => {
            return Ok(parsed.map(|v| v["data"].clone()).unwrap_or(Value::Null));
        }
        Some(code) => FeishuError::Api {
            code,
            msg,
            http_status,
        },
        None => FeishuError::Http {
            status: http_status,
            body: text.chars().take(200).collect(),
        },
    };
    let limited = code.is_some_and(|c| class_of_code(c) == ErrorClass::RateLimited)
        || status == StatusCode::TOO_MANY_REQUESTS;
    Err(CardKitError {
        error,
        // Without a reset, a second: Feishu counts operations per second.
        rate_limited: limited.then(|| reset.unwrap_or(Duration::from_secs(1))),
    })
}

impl Api {
    /// One CardKit call, one attempt (see the module doc). A refused token
    /// is fetched again and the call made once more through the client's
    /// own loop.
    async fn cardkit_once(
        &self,
        method: Method,
        path: &str,
        body: &Value,
    ) -> Result<Value, CardKitError> {
        let token = self.tenant_token().await?;
        let url = format!("{}{}", self.config().base_url(), path);
        let resp = http()
            .request(method.clone(), url)
            .bearer_auth(token)
            .json(body)
            .send()
            .await
            .map_err(|e| FeishuError::Network(e.to_string()))?;
        let status = resp.status();
        let reset = ratelimit_reset(resp.headers());
        let text = resp
            .text()
            .await
            .map_err(|e| FeishuError::Network(e.to_string()))?;
        match classify(status, reset, &text) {
            Err(e)
                if e.error
                    .code()
                    .is_some_and(|c| class_of_code(c) == ErrorClass::Token) =>
            {
                Ok(self.call(method, path, body).await?)
            }
            other => other,
        }
    }

    /// Creates a card entity from card JSON 2.0 (`POST
    /// /open-apis/cardkit/v1/cards`, `type: card_json`); returns its id.
    pub async fn create_card_entity(&self, card: &Value) -> Result<String, CardKitError> {
        let body = json!({"type": "card_json", "data": card.to_string()});
        check_body(&body)?;
        let data = self
            .cardkit_once(Method::POST, "/open-apis/cardkit/v1/cards", &body)
            .await?;
        Ok(data
            .get("card_id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty())
            .map(str::to_string)
            .ok_or_else(|| FeishuError::BadResponse("no card_id in the answer".into()))?)
    }

    /// Sends the card entity `card_id` as a message, as a reply to
    /// `reply_to` when given. `uuid` dedupes the send for an hour.
    pub async fn send_card_entity(
        &self,
        to: &ReceiveId,
        reply_to: Option<&str>,
        card_id: &str,
        uuid: &str,
    ) -> Result<MessageId, FeishuError> {
        let content = json!({"type": "card", "data": {"card_id": card_id}}).to_string();
        let data = match reply_to {
            Some(parent) => {
                let path = format!("/open-apis/im/v1/messages/{}/reply", path_segment(parent));
                let body = json!({"msg_type": "interactive", "content": content, "uuid": uuid});
                self.call(Method::POST, &path, &body).await?
            }
            None => {
                let (id_type, id) = match to {
                    ReceiveId::ChatId(id) => ("chat_id", id),
                    ReceiveId::OpenId(id) => ("open_id", id),
                };
                let path = format!("/open-apis/im/v1/messages?receive_id_type={id_type}");
                let body = json!({"receive_id": id, "msg_type": "interactive",
                                  "content": content, "uuid": uuid});
                self.call(Method::POST, &path, &body).await?
            }
        };
        message_id_of(&data)
    }

    /// Replaces the text of element `element_id` (`PUT …/elements/:id/content`).
    pub async fn stream_element_text(
        &self,
        card_id: &str,
        element_id: &str,
        content: &str,
        sequence: u32,
        uuid: &str,
    ) -> Result<(), CardKitError> {
        let path = format!(
            "/open-apis/cardkit/v1/cards/{}/elements/{}/content",
            path_segment(card_id),
            path_segment(element_id)
        );
        let body = json!({"content": content, "sequence": sequence, "uuid": uuid});
        self.cardkit_once(Method::PUT, &path, &body)
            .await
            .map(|_| ())
    }

    /// Sets the entity's streaming mode (`PATCH …/settings`): `true` turns
    /// it on again (Feishu's answer to 200850), `false` ends it with
    /// `summary` as the chat list preview.
    pub async fn set_streaming(
        &self,
        card_id: &str,
        on: bool,
        summary: Option<&str>,
        sequence: u32,
        uuid: &str,
    ) -> Result<(), CardKitError> {
        let path = format!(
            "/open-apis/cardkit/v1/cards/{}/settings",
            path_segment(card_id)
        );
        let mut settings = json!({"config": {"streaming_mode": on}});
        if let Some(summary) = summary {
            settings["config"]["summary"] = json!({"content": summary});
        }
        let body = json!({"settings": settings.to_string(), "sequence": sequence, "uuid": uuid});
        self.cardkit_once(Method::PATCH, &path, &body)
            .await
            .map(|_| ())
    }

    /// Replaces the whole entity with `card` (`PUT …/cards/:card_id`,
    /// 全量更新卡片实体): the way to a final card when element updates
    /// keep failing.
    pub async fn replace_card_entity(
        &self,
        card_id: &str,
        card: &Value,
        sequence: u32,
        uuid: &str,
    ) -> Result<(), CardKitError> {
        let path = format!("/open-apis/cardkit/v1/cards/{}", path_segment(card_id));
        let body = json!({"card": {"type": "card_json", "data": card.to_string()},
                          "sequence": sequence, "uuid": uuid});
        check_body(&body)?;
        self.cardkit_once(Method::PUT, &path, &body)
            .await
            .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fallback_codes_are_told_from_transient_ones() {
        let refused = FeishuError::Api {
            code: 99991672,
            msg: "no scope".into(),
            http_status: 400,
        };
        assert!(calls_for_fallback(&refused));
        let gave_up = FeishuError::GaveUp {
            attempts: 6,
            last: Box::new(FeishuError::Http {
                status: 503,
                body: String::new(),
            }),
        };
        assert!(
            !calls_for_fallback(&gave_up),
            "an outage is retried, not a fallback"
        );
        let seq = FeishuError::Api {
            code: SEQUENCE_CODE,
            msg: "sequence".into(),
            http_status: 400,
        };
        assert!(!calls_for_fallback(&seq));
        let timeout = FeishuError::Api {
            code: 200850,
            msg: "streaming timeout".into(),
            http_status: 400,
        };
        assert!(streaming_closed(&timeout) && !calls_for_fallback(&timeout));
        // Every documented CardKit refusal is in the one table, and ends
        // CardKit for the card.
        for code in [
            99991672, 300311, 200860, 300302, 200220, 300307, 300303, 300305, 300301, 300310,
            10002, 200740, 200750, 200770, 99992402,
        ] {
            let e = FeishuError::Api {
                code,
                msg: String::new(),
                http_status: 400,
            };
            assert!(calls_for_fallback(&e), "{code}");
        }
        // A rate limit and a busy answer are not refusals.
        for code in [99991400, 230049] {
            let e = FeishuError::Api {
                code,
                msg: String::new(),
                http_status: 400,
            };
            assert!(!calls_for_fallback(&e), "{code}");
        }
    }

    #[test]
    fn a_rate_limit_carries_its_reset_and_a_5xx_none() {
        let limited = classify(
            StatusCode::TOO_MANY_REQUESTS,
            Some(Duration::from_secs(30)),
            r#"{"code":99991400,"msg":"limit"}"#,
        );
        let e = limited.unwrap_err();
        assert_eq!(e.rate_limited, Some(Duration::from_secs(30)));
        assert_eq!(e.error.code(), Some(crate::api::RATE_LIMIT_CODE));
        let down = classify(StatusCode::BAD_GATEWAY, None, "bad gateway").unwrap_err();
        assert_eq!(down.rate_limited, None);
        assert_eq!(down.error.code(), None);
        let ok = classify(StatusCode::OK, None, r#"{"code":0,"data":{"card_id":"c"}}"#);
        assert_eq!(ok.unwrap()["card_id"], "c");
    }
}
