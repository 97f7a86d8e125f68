//! CardKit card entities, for cards whose text streams in as it is written:
//! create the entity, send it as a message, push one element's full text
//! (Feishu types out what was added), and close streaming at the end.
//!
//! Every call goes through [`Api`]'s one retry loop. Each operation on an
//! entity carries a `sequence` that must grow strictly (Feishu answers
//! [`SEQUENCE_CODE`] otherwise) and a `uuid` that makes a replay of the
//! same operation a no-op, so an operation retried after a timeout, a 5xx
//! or a crash is sent again with the same pair, never a new one.

use reqwest::Method;
use serde_json::{Value, json};

use super::api::{Api, FeishuError, MessageId, ReceiveId, check_body, message_id_of, path_segment};

/// Operations per second Feishu allows on one card entity.
pub const MAX_OPS_PER_SEC_PER_CARD: u32 = 10;
/// Longest text one element content update takes, in chars (Feishu's
/// documented bound on `content`).
pub const MAX_CONTENT_CHARS: usize = 100_000;
/// The sequence did not grow strictly since the entity's last operation.
pub const SEQUENCE_CODE: i64 = 300317;
/// The same uuid came with a different operation.
pub const UUID_CONFLICT_CODE: i64 = 200770;
/// Codes saying CardKit will not stream this card, whatever we retry: no
/// permission (99991672 app scope missing, 300311 not the creator's app),
/// the entity is gone or expired (200740, 200750), streaming closed or
/// timed out (300309, 200850), the card is refused (200860 over 30 KB,
/// 300302 `update_multi` false, 200220 bad card JSON, 300307 empty, 10002
/// bad parameters). The stream falls back to patching a plain card.
pub const FALLBACK_CODES: [i64; 11] = [
    99991672, 300311, 200740, 200750, 300309, 200850, 200860, 300302, 200220, 300307, 10002,
];

/// Whether a CardKit failure means: stop using CardKit for this card.
pub fn calls_for_fallback(e: &FeishuError) -> bool {
    e.code().is_some_and(|c| FALLBACK_CODES.contains(&c))
}

impl Api {
    /// Creates a card entity from card JSON 2.0 (`POST
    /// /open-apis/cardkit/v1/cards`, `type: card_json`); returns its id.
    pub async fn create_card_entity(&self, card: &Value) -> Result<String, FeishuError> {
        let body = json!({"type": "card_json", "data": card.to_string()});
        check_body(&body)?;
        let data = self
            .call(Method::POST, "/open-apis/cardkit/v1/cards", &body)
            .await?;
        data.get("card_id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty())
            .map(str::to_string)
            .ok_or_else(|| FeishuError::BadResponse("no card_id in the answer".into()))
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
    ) -> Result<(), FeishuError> {
        let path = format!(
            "/open-apis/cardkit/v1/cards/{}/elements/{}/content",
            path_segment(card_id),
            path_segment(element_id)
        );
        let body = json!({"content": content, "sequence": sequence, "uuid": uuid});
        self.call(Method::PUT, &path, &body).await.map(|_| ())
    }

    /// Ends streaming mode on the entity (`PATCH …/settings`,
    /// `streaming_mode: false`), with `summary` as the chat list preview.
    pub async fn close_streaming(
        &self,
        card_id: &str,
        summary: &str,
        sequence: u32,
        uuid: &str,
    ) -> Result<(), FeishuError> {
        let path = format!(
            "/open-apis/cardkit/v1/cards/{}/settings",
            path_segment(card_id)
        );
        let settings =
            json!({"config": {"streaming_mode": false, "summary": {"content": summary}}});
        let body = json!({"settings": settings.to_string(), "sequence": sequence, "uuid": uuid});
        self.call(Method::PATCH, &path, &body).await.map(|_| ())
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
    }
}
