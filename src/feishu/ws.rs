//! The long-connection client: asks `/callback/ws/endpoint` for a URL, speaks
//! `pbbp2` frames over the WebSocket (pings every `PingInterval`, a missing
//! pong means a half-open socket), reassembles fragments, acknowledges every
//! data frame (`type=event` and `type=card`) with `biz_rt` and the handler's
//! answer, and reconnects with jittered backoff.

use std::sync::Arc;

use base64::Engine;
use futures_util::{SinkExt, StreamExt};
use prost::Message as _;
use rand::Rng;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::{Duration, Instant, sleep, sleep_until};
use tokio_tungstenite::tungstenite::Message as WsMessage;

use super::FeishuConfig;
use super::intake::Dispatcher;
use super::pbbp2::{Frame, METHOD_CONTROL, METHOD_DATA, Reassembler};

/// Ping interval when Feishu does not say (its documented default).
pub const DEFAULT_PING_INTERVAL: Duration = Duration::from_secs(120);
/// Longest wait for a pong before the socket counts as half-open (capped by
/// the ping interval, so short test intervals detect it quickly).
pub const PONG_TIMEOUT: Duration = Duration::from_secs(30);
/// First reconnect delay; doubled per failed attempt, jittered.
pub const RECONNECT_BASE: Duration = Duration::from_millis(500);
/// Longest reconnect delay.
pub const RECONNECT_MAX: Duration = Duration::from_secs(30);
/// Frames queued for sending on one connection (acks and pings).
const OUTGOING_FRAMES: usize = 64;
/// Time allowed for the endpoint request and the WebSocket handshake.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a connection ended.
#[derive(Debug, thiserror::Error)]
pub enum WsError {
    #[error("endpoint request failed: {0}")]
    Endpoint(String),
    #[error("Feishu refused the long connection: code {code}: {msg}")]
    Refused { code: i64, msg: String },
    #[error("WebSocket error: {0}")]
    Socket(String),
    #[error("connection closed by the server")]
    Closed,
    #[error("no pong within {0:?}: half-open connection")]
    HalfOpen(Duration),
}

#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
struct ClientConfig {
    ping_interval: Option<u64>,
}

/// The endpoint's answer.
struct Endpoint {
    url: String,
    service_id: i32,
    ping_interval: Duration,
}

/// Connect, serve, reconnect: forever (the intake aborts the task on drop).
pub(crate) async fn run(config: FeishuConfig, dispatcher: Arc<Dispatcher>) {
    let http = reqwest::Client::builder()
        .timeout(CONNECT_TIMEOUT)
        .build()
        .unwrap_or_else(|_| reqwest::Client::new());
    let mut failures: u32 = 0;
    loop {
        let healthy = match connect_and_serve(&config, &http, &dispatcher).await {
            (healthy, Ok(())) => healthy,
            (healthy, Err(e)) => {
                tracing::warn!(error = %e, "Feishu long connection ended");
                healthy
            }
        };
        failures = if healthy {
            0
        } else {
            failures.saturating_add(1)
        };
        sleep(reconnect_delay(failures)).await;
    }
}

/// Jittered exponential delay before reconnect attempt after `failures`
/// unhealthy connections in a row (0: after a healthy one).
fn reconnect_delay(failures: u32) -> Duration {
    let exp = RECONNECT_BASE
        .saturating_mul(1 << failures.min(16))
        .min(RECONNECT_MAX);
    exp.mul_f64(rand::rng().random_range(0.5..=1.0))
}

async fn endpoint(config: &FeishuConfig, http: &reqwest::Client) -> Result<Endpoint, WsError> {
    let url = format!("{}/callback/ws/endpoint", config.base_url());
    let body = json!({"AppID": config.app_id, "AppSecret": config.app_secret});
    let resp = http
        .post(url)
        .header("locale", "zh")
        .json(&body)
        .send()
        .await
        .map_err(|e| WsError::Endpoint(e.to_string()))?;
    let v: Value = resp
        .json()
        .await
        .map_err(|e| WsError::Endpoint(e.to_string()))?;
    let code = v.get("code").and_then(Value::as_i64).unwrap_or(-1);
    if code != 0 {
        let msg = v
            .get("msg")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        return Err(WsError::Refused { code, msg });
    }
    let data = v.get("data").cloned().unwrap_or(Value::Null);
    let url = data
        .get("URL")
        .and_then(Value::as_str)
        .ok_or_else(|| WsError::Endpoint("no URL in the endpoint answer".into()))?
        .to_string();
    let parsed = reqwest::Url::parse(&url)
        .map_err(|e| WsError::Endpoint(format!("bad URL {url:?}: {e}")))?;
    let service_id = parsed
        .query_pairs()
        .find(|(k, _)| k == "service_id")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let cc: ClientConfig = data
        .get("ClientConfig")
        .and_then(|c| serde_json::from_value(c.clone()).ok())
        .unwrap_or_default();
    Ok(Endpoint {
        url,
        service_id,
        ping_interval: ping_interval(&cc).unwrap_or(DEFAULT_PING_INTERVAL),
    })
}

/// Ask for a long-connection endpoint once (for `clawmux doctor`).
pub async fn check_endpoint(config: &FeishuConfig) -> Result<(), WsError> {
    let http = reqwest::Client::builder()
        .timeout(CONNECT_TIMEOUT)
        .build()
        .map_err(|e| WsError::Endpoint(e.to_string()))?;
    endpoint(config, &http).await.map(|_| ())
}

fn ping_interval(cc: &ClientConfig) -> Option<Duration> {
    cc.ping_interval.filter(|s| *s > 0).map(Duration::from_secs)
}

/// One connection. Returns whether it was healthy (got a pong), and why it ended.
async fn connect_and_serve(
    config: &FeishuConfig,
    http: &reqwest::Client,
    dispatcher: &Arc<Dispatcher>,
) -> (bool, Result<(), WsError>) {
    let ep = match endpoint(config, http).await {
        Ok(ep) => ep,
        Err(e) => return (false, Err(e)),
    };
    let connect = tokio::time::timeout(
        CONNECT_TIMEOUT,
        tokio_tungstenite::connect_async(ep.url.as_str()),
    )
    .await;
    let ws = match connect {
        Ok(Ok((ws, _))) => ws,
        Ok(Err(e)) => return (false, Err(WsError::Socket(e.to_string()))),
        Err(_) => return (false, Err(WsError::Socket("handshake timed out".into()))),
    };
    tracing::info!("Feishu long connection established");
    let mut conn = Connection {
        service_id: ep.service_id,
        ping_every: ep.ping_interval,
        healthy: false,
        reassembler: Reassembler::default(),
    };
    let result = conn.serve(ws, dispatcher).await;
    (conn.healthy, result)
}

struct Connection {
    service_id: i32,
    ping_every: Duration,
    healthy: bool,
    reassembler: Reassembler,
}

impl Connection {
    fn pong_timeout(&self) -> Duration {
        PONG_TIMEOUT.min(self.ping_every)
    }

    async fn serve<S>(&mut self, ws: S, dispatcher: &Arc<Dispatcher>) -> Result<(), WsError>
    where
        S: futures_util::Stream<Item = Result<WsMessage, tokio_tungstenite::tungstenite::Error>>
            + futures_util::Sink<WsMessage, Error = tokio_tungstenite::tungstenite::Error>
            + Unpin,
    {
        let (mut sink, mut stream) = ws.split();
        let (out_tx, mut out_rx) = mpsc::channel::<Frame>(OUTGOING_FRAMES);
        let mut next_ping = Instant::now();
        let mut pong_deadline: Option<Instant> = None;
        loop {
            let deadline = pong_deadline;
            tokio::select! {
                _ = sleep_until(next_ping) => {
                    let ping = Frame::control("ping", self.service_id);
                    send(&mut sink, &ping).await?;
                    let now = Instant::now();
                    next_ping = now + self.ping_every;
                    pong_deadline.get_or_insert(now + self.pong_timeout());
                }
                _ = sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() => {
                    return Err(WsError::HalfOpen(self.pong_timeout()));
                }
                Some(frame) = out_rx.recv() => send(&mut sink, &frame).await?,
                msg = stream.next() => match msg {
                    None | Some(Ok(WsMessage::Close(_))) => return Err(WsError::Closed),
                    Some(Err(e)) => return Err(WsError::Socket(e.to_string())),
                    Some(Ok(WsMessage::Binary(bytes))) => match Frame::decode(bytes.as_ref()) {
                        Ok(frame) => {
                            if self.on_frame(frame, dispatcher, &out_tx) {
                                pong_deadline = None;
                            }
                        }
                        Err(e) => tracing::warn!(error = %e, "undecodable frame from Feishu"),
                    },
                    // Text, WebSocket-level ping/pong (answered by tungstenite).
                    Some(Ok(_)) => {}
                },
            }
        }
    }

    /// Handle one frame; true if it was a pong.
    fn on_frame(
        &mut self,
        frame: Frame,
        dispatcher: &Arc<Dispatcher>,
        out: &mpsc::Sender<Frame>,
    ) -> bool {
        match (frame.method, frame.header("type")) {
            (METHOD_CONTROL, Some("pong")) => {
                self.healthy = true;
                let cc: Option<ClientConfig> = frame
                    .payload
                    .as_deref()
                    .and_then(|p| serde_json::from_slice(p).ok());
                if let Some(every) = cc.as_ref().and_then(ping_interval) {
                    self.ping_every = every;
                }
                true
            }
            (METHOD_DATA, Some("event" | "card")) => {
                let started = Instant::now();
                match self.reassembler.add(&frame, started) {
                    Ok(Some(payload)) => {
                        let dispatcher = Arc::clone(dispatcher);
                        let out = out.clone();
                        tokio::spawn(async move {
                            let ack = answer(&dispatcher, frame, &payload, started).await;
                            // The connection may be gone: Feishu then redelivers.
                            let _ = out.send(ack).await;
                        });
                    }
                    Ok(None) => {}
                    Err(e) => tracing::warn!(error = %e, "dropping fragment"),
                }
                false
            }
            (method, kind) => {
                tracing::debug!(method, ?kind, "ignoring frame");
                false
            }
        }
    }
}

async fn send<S>(sink: &mut S, frame: &Frame) -> Result<(), WsError>
where
    S: futures_util::Sink<WsMessage, Error = tokio_tungstenite::tungstenite::Error> + Unpin,
{
    sink.send(WsMessage::binary(frame.encode_to_vec()))
        .await
        .map_err(|e| WsError::Socket(e.to_string()))
}

/// Run the handler and build the ack: the same frame with `biz_rt` (handler
/// time in ms) and `{"code":200,"headers":null,"data":"<base64 answer>"}`.
async fn answer(
    dispatcher: &Dispatcher,
    mut frame: Frame,
    payload: &[u8],
    started: Instant,
) -> Frame {
    let fallback_id = frame.header("message_id").unwrap_or_default().to_string();
    let reply = match serde_json::from_slice::<Value>(payload) {
        Ok(v) => dispatcher.handle(&v, &fallback_id).await,
        Err(e) => {
            tracing::warn!(error = %e, "event payload is not JSON");
            json!({})
        }
    };
    let data = base64::engine::general_purpose::STANDARD.encode(reply.to_string());
    let ack = json!({"code": 200, "headers": null, "data": data});
    frame.set_header("biz_rt", started.elapsed().as_millis().to_string());
    frame.payload = Some(ack.to_string().into_bytes());
    frame
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconnect_delay_is_jittered_and_capped() {
        for _ in 0..50 {
            let d0 = reconnect_delay(0);
            assert!(d0 >= RECONNECT_BASE / 2 && d0 <= RECONNECT_BASE);
            let big = reconnect_delay(40);
            assert!(big >= RECONNECT_MAX / 2 && big <= RECONNECT_MAX);
        }
    }
}
