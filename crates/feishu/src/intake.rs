//! One bounded stream of [`IntakeEvent`]s, whichever way Feishu delivers them
//! (long connection or webhook): it starts the transport and hands it the
//! dispatcher that turns payloads into events.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;
use tokio_util::task::AbortOnDropHandle;

use super::FeishuConfig;
pub use super::dispatch::CARD_ANSWER_WAIT;
use super::dispatch::Dispatcher;
use super::event::{Dedupe, IntakeEvent};
use super::{webhook, ws};

/// Events buffered between intake and the bridge; when full, message intake
/// waits (Feishu redelivers anything left unacknowledged).
pub const INTAKE_CHANNEL_CAPACITY: usize = 256;

/// Chat events from Feishu. Drop it to stop receiving.
pub struct Intake {
    rx: mpsc::Receiver<IntakeEvent>,
    local_addr: Option<SocketAddr>,
    /// Why the transport stopped by itself, set before the stream ends.
    ended: Arc<Mutex<Option<String>>>,
    /// The connection or server: stopped when the intake is dropped.
    _task: AbortOnDropHandle<()>,
}

impl Intake {
    /// Long connection (WebSocket; needs no public URL). Reconnects as
    /// Feishu's policy says; on a fatal refusal it logs why and what to do,
    /// and the intake ends ([`recv`](Self::recv) gives `None`, then
    /// [`ended`](Self::ended) says why).
    /// Must be called inside a tokio runtime.
    pub fn long_connection(config: FeishuConfig, dedupe: Arc<dyn Dedupe>) -> Intake {
        let (tx, rx) = mpsc::channel(INTAKE_CHANNEL_CAPACITY);
        // Held until the reason is recorded: the stream ends only after.
        let keep = tx.clone();
        let dispatcher = Arc::new(Dispatcher::new(tx, dedupe));
        let ended = Arc::new(Mutex::new(None));
        let task = tokio::spawn({
            let ended = Arc::clone(&ended);
            async move {
                let e = ws::run(config, dispatcher).await;
                let why = match &e {
                    ws::WsError::GaveUp { .. } => format!(
                        "the long connection was given up as Feishu's ReconnectCount says ({e})"
                    ),
                    _ => format!(
                        "Feishu refused the long connection for good ({e}): {}",
                        e.advice()
                    ),
                };
                *ended.lock().unwrap_or_else(|p| p.into_inner()) = Some(why);
                drop(keep);
            }
        });
        Intake {
            rx,
            local_addr: None,
            ended,
            _task: AbortOnDropHandle::new(task),
        }
    }

    /// Webhook: an HTTP server on `bind` that Feishu posts events to.
    /// Refused (`InvalidInput`) without both the encrypt key and the
    /// verification token: every request is verified with them.
    pub async fn webhook(
        config: FeishuConfig,
        bind: SocketAddr,
        dedupe: Arc<dyn Dedupe>,
    ) -> std::io::Result<Intake> {
        let (tx, rx) = mpsc::channel(INTAKE_CHANNEL_CAPACITY);
        let keep = tx.clone();
        let dispatcher = Arc::new(Dispatcher::new(tx, dedupe));
        let app = webhook::router(config, dispatcher)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        let listener = tokio::net::TcpListener::bind(bind).await?;
        let local_addr = listener.local_addr()?;
        let ended = Arc::new(Mutex::new(None));
        let task = tokio::spawn({
            let ended = Arc::clone(&ended);
            async move {
                let why = match webhook::serve(listener, app).await {
                    Ok(()) => "the webhook server stopped".to_string(),
                    Err(e) => format!("the webhook server stopped: {e}"),
                };
                tracing::error!(why, "no more Feishu events will arrive");
                *ended.lock().unwrap_or_else(|p| p.into_inner()) = Some(why);
                drop(keep);
            }
        });
        Ok(Intake {
            rx,
            local_addr: Some(local_addr),
            ended,
            _task: AbortOnDropHandle::new(task),
        })
    }

    /// The next event; `None` once the intake has stopped.
    pub async fn recv(&mut self) -> Option<IntakeEvent> {
        self.rx.recv().await
    }

    /// Why the intake stopped by itself (a final refusal of the long
    /// connection, the webhook server failing), once [`recv`](Self::recv)
    /// has given `None`.
    pub fn ended(&self) -> Option<String> {
        self.ended.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Where the webhook listens (None for the long connection).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.local_addr
    }
}
