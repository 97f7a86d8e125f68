//! One bounded stream of [`IntakeEvent`]s, whichever way Feishu delivers them
//! (long connection or webhook): it starts the transport and hands it the
//! dispatcher that turns payloads into events.

use std::net::SocketAddr;
use std::sync::Arc;

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
    /// Refused (`InvalidInput`) without both the encrypt key and the
    /// verification token: every request is verified with them.
    pub async fn webhook(
        config: FeishuConfig,
        bind: SocketAddr,
        dedupe: Arc<dyn Dedupe>,
    ) -> std::io::Result<Intake> {
        let (tx, rx) = mpsc::channel(INTAKE_CHANNEL_CAPACITY);
        let dispatcher = Arc::new(Dispatcher::new(tx, dedupe));
        let app = webhook::router(config, dispatcher)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        let listener = tokio::net::TcpListener::bind(bind).await?;
        let local_addr = listener.local_addr()?;
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
