//! One bounded stream of [`IntakeEvent`]s, whichever way Feishu delivers them
//! (long connection or webhook), deduplicated on `event_id` and `message_id`,
//! with card actions answered within Feishu's 3 s window.

use std::net::SocketAddr;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio::time::{Duration, Instant, timeout_at};
use tokio_util::task::AbortOnDropHandle;

use super::FeishuConfig;
use super::event::{self, CardAction, CardResponse, Dedupe, IntakeEvent, Parsed, ToastKind};
use super::{webhook, ws};

/// Events buffered between intake and the bridge; when full, message intake
/// waits (Feishu redelivers anything left unacknowledged).
pub const INTAKE_CHANNEL_CAPACITY: usize = 256;

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
                let action = CardAction {
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

/// Chat events from Feishu. Drop it to stop receiving.
pub struct Intake {
    rx: mpsc::Receiver<IntakeEvent>,
    local_addr: Option<SocketAddr>,
    /// The connection or server: stopped when the intake is dropped.
    _task: AbortOnDropHandle<()>,
}

impl Intake {
    /// Long connection (WebSocket; needs no public URL). Reconnects as
    /// Feishu's policy says; on a fatal refusal it logs why and what to do,
    /// and the intake ends ([`recv`](Self::recv) gives `None`).
    /// Must be called inside a tokio runtime.
    pub fn long_connection(config: FeishuConfig, dedupe: Arc<dyn Dedupe>) -> Intake {
        let (tx, rx) = mpsc::channel(INTAKE_CHANNEL_CAPACITY);
        let dispatcher = Arc::new(Dispatcher::new(tx, dedupe));
        let task = tokio::spawn(async move {
            // Logged with its advice where it happens.
            let _fatal = ws::run(config, dispatcher).await;
        });
        Intake {
            rx,
            local_addr: None,
            _task: AbortOnDropHandle::new(task),
        }
    }

    /// Webhook: an HTTP server on `bind` that Feishu posts events to.
    pub async fn webhook(
        config: FeishuConfig,
        bind: SocketAddr,
        dedupe: Arc<dyn Dedupe>,
    ) -> std::io::Result<Intake> {
        let (tx, rx) = mpsc::channel(INTAKE_CHANNEL_CAPACITY);
        let dispatcher = Arc::new(Dispatcher::new(tx, dedupe));
        let listener = tokio::net::TcpListener::bind(bind).await?;
        let local_addr = listener.local_addr()?;
        let app = webhook::router(config, dispatcher);
        let task = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::error!(error = %e, "webhook server stopped");
            }
        });
        Ok(Intake {
            rx,
            local_addr: Some(local_addr),
            _task: AbortOnDropHandle::new(task),
        })
    }

    /// The next event; `None` once the intake has stopped.
    pub async fn recv(&mut self) -> Option<IntakeEvent> {
        self.rx.recv().await
    }

    /// Where the webhook listens (None for the long connection).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.local_addr
    }
}
