//! From one Feishu event payload to an [`IntakeEvent`] for the bridge and
//! the JSON answer for Feishu: deduplicated on `event_id` and `message_id`,
//! card actions answered within Feishu's 3 s window. Both transports (the
//! long connection in `ws`, the webhook in `webhook`) hand their payloads
//! here; `intake` wires a transport to it. It knows neither transport.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio::time::{Duration, Instant, timeout_at};

use super::event::{self, ActionEvent, CardResponse, Dedupe, IntakeEvent, Parsed, ToastKind};

/// How long a card action waits for the bridge's answer: Feishu wants one
/// within 3 s, and the ack still has to travel.
pub const CARD_ANSWER_WAIT: Duration = Duration::from_millis(2500);
const _: () = assert!(CARD_ANSWER_WAIT.as_millis() < 3000, "Feishu's limit is 3 s");

/// Turns event payloads into [`IntakeEvent`]s and computes Feishu's answer.
pub(crate) struct Dispatcher {
    tx: mpsc::Sender<IntakeEvent>,
    dedupe: Arc<dyn Dedupe>,
}

impl Dispatcher {
    pub(crate) fn new(tx: mpsc::Sender<IntakeEvent>, dedupe: Arc<dyn Dedupe>) -> Self {
        Dispatcher { tx, dedupe }
    }

    /// Reports a signed event refused because its timestamp is `skew_secs`
    /// from this host's clock (outside ±`window_secs`), so the daemon can
    /// log it where operators look. Never waits: when the intake is full
    /// the report is dropped (the transport has logged it already), and
    /// Feishu's retries of the event report it again.
    pub(crate) fn clock_skew(&self, skew_secs: i64, window_secs: u64) {
        let event = IntakeEvent::ClockSkew {
            skew_secs,
            window_secs,
        };
        if self.tx.try_send(event).is_err() {
            tracing::debug!("intake full or gone; clock-skew report dropped");
        }
    }

    /// Handle one event payload; returns the JSON answer for Feishu.
    /// `fallback_id` names events that carry no event id (old card callbacks).
    pub(crate) async fn handle(&self, payload: &Value, fallback_id: &str) -> Value {
        match event::parse(payload, fallback_id) {
            Err(e) => {
                // Acknowledged anyway: a malformed event will not get better
                // by being redelivered.
                tracing::warn!(error = %e, "dropping malformed Feishu event");
                json!({})
            }
            Ok(Parsed::Other(kind)) => {
                tracing::debug!(kind, "ignoring Feishu event");
                json!({})
            }
            Ok(Parsed::Message(m)) => {
                let fresh = self.dedupe.first_seen(&format!("event:{}", m.event_id))
                    && self.dedupe.first_seen(&format!("message:{}", m.message_id));
                if fresh && self.tx.send(IntakeEvent::MessageReceived(m)).await.is_err() {
                    tracing::warn!("intake receiver is gone; message dropped");
                }
                json!({})
            }
            Ok(Parsed::CardAction {
                event_id,
                operator_open_id,
                value,
                option,
                message_id,
                chat_id,
            }) => {
                if !self.dedupe.first_seen(&format!("event:{event_id}")) {
                    return json!({});
                }
                let deadline = Instant::now() + CARD_ANSWER_WAIT;
                let (respond, answer) = oneshot::channel();
                let action = ActionEvent {
                    event_id,
                    operator_open_id,
                    value,
                    option,
                    message_id,
                    chat_id,
                    respond,
                };
                match timeout_at(deadline, self.tx.send(IntakeEvent::CardAction(action))).await {
                    Ok(Ok(())) => {}
                    _ => {
                        let busy =
                            CardResponse::toast(ToastKind::Warning, "Busy, please try again.");
                        return busy.to_json();
                    }
                }
                match timeout_at(deadline, answer).await {
                    Ok(Ok(response)) => response.to_json(),
                    // No answer in time (or the handler dropped it): `{}` now,
                    // the work goes on and can update the card later.
                    _ => json!({}),
                }
            }
        }
    }
}
