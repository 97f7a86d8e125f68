//! The long-connection client: asks `/callback/ws/endpoint` for a URL, speaks
//! `pbbp2` frames over the WebSocket (pings every `PingInterval`, a missing
//! pong means a half-open socket), reassembles fragments, acknowledges every
//! data frame (`type=event` and `type=card`) with `biz_rt` and the handler's
//! answer, and reconnects as the official SDKs do: after a connection ends,
//! first a random wait in [0, ReconnectNonce), then a try every
//! ReconnectInterval, giving up after ReconnectCount tries unless that is
//! negative. The endpoint's ClientConfig sets the four values and every pong
//! updates them. Refusals are sorted as both official SDKs sort them (the
//! Python SDK's `_parse_ws_conn_exception` and `_get_conn_url`, the Node
//! WSClient): the endpoint's codes 1 (busy) and 1000040343 (internal
//! error) are retried and every other non-zero code is final; a handshake
//! refused with `handshake-status` 514 is retried unless its
//! `handshake-autherrcode` is 1000040350 (too many connections), 403 is
//! final, anything else is retried. A final refusal stops the client with
//! a clear error instead of retrying for ever. A close frame from the
//! server is answered with one (RFC 6455 §5.5.1) before reconnecting.

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
use super::dispatch::Dispatcher;
use super::pbbp2::{Frame, METHOD_CONTROL, METHOD_DATA, Reassembler};

/// Ping interval when Feishu does not say (its documented default).
pub const DEFAULT_PING_INTERVAL: Duration = Duration::from_secs(120);
/// Longest wait for a pong before the socket counts as half-open (capped by
/// the ping interval, so short test intervals detect it quickly).
pub const PONG_TIMEOUT: Duration = Duration::from_secs(30);
/// Tries after a connection ends before giving up, until Feishu says
/// (ReconnectCount; negative: for ever). The SDKs' default.
pub const DEFAULT_RECONNECT_COUNT: i64 = -1;
/// Wait between tries until Feishu says (ReconnectInterval). The SDKs' default.
pub const DEFAULT_RECONNECT_INTERVAL: Duration = Duration::from_secs(120);
/// Upper bound of the random first wait until Feishu says (ReconnectNonce).
/// The SDKs' default.
pub const DEFAULT_RECONNECT_NONCE: Duration = Duration::from_secs(30);
/// Longest interval, nonce or ping interval taken from Feishu, so a bad
/// value cannot park the client for days.
pub const MAX_POLICY_SECS: u64 = 3600;
/// Endpoint codes worth retrying (both SDKs): system busy (1) and
/// internal error (1000040343). Every other non-zero code is final.
pub const RETRYABLE_CODES: [i64; 2] = [1, 1000040343];
/// `handshake-status` of a refused authentication: retried, unless its
/// `handshake-autherrcode` is [`TOO_MANY_CONNECTIONS`].
pub const HANDSHAKE_AUTH_FAILED: i64 = 514;
/// `handshake-status` of a forbidden connection: final.
pub const HANDSHAKE_FORBIDDEN: i64 = 403;
/// `handshake-autherrcode` (and endpoint code) of an app at its limit of
/// long connections (50): final.
pub const TOO_MANY_CONNECTIONS: i64 = 1000040350;
/// Frames queued for sending on one connection (acks and pings).
const OUTGOING_FRAMES: usize = 64;
/// Longest wait to write the close frame that answers the server's.
const CLOSE_REPLY_WAIT: Duration = Duration::from_secs(5);
/// Time allowed for the endpoint request and the WebSocket handshake.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a connection ended.
#[derive(Debug, thiserror::Error)]
pub enum WsError {
    #[error("endpoint request failed: {0}")]
    Endpoint(String),
    #[error("Feishu refused the long connection: code {code}: {msg}")]
    Refused { code: i64, msg: String },
    #[error(
        "Feishu refused the WebSocket handshake: HTTP {status}, handshake-status {handshake_status:?}, handshake-autherrcode {auth_code:?}, handshake-msg {msg:?}"
    )]
    Handshake {
        status: u16,
        handshake_status: Option<i64>,
        auth_code: Option<i64>,
        msg: String,
    },
    #[error("gave up after {tries} reconnect tries (ReconnectCount): {last}")]
    GaveUp { tries: u32, last: Box<WsError> },
    #[error("WebSocket error: {0}")]
    Socket(String),
    #[error("connection closed by the server")]
    Closed,
    #[error("no pong within {0:?}: half-open connection")]
    HalfOpen(Duration),
}

impl WsError {
    /// The Feishu code a refusal carried (the auth code wins over the status).
    pub fn code(&self) -> Option<i64> {
        match self {
            WsError::Refused { code, .. } => Some(*code),
            WsError::Handshake {
                handshake_status,
                auth_code,
                ..
            } => auth_code.or(*handshake_status),
            WsError::GaveUp { last, .. } => last.code(),
            _ => None,
        }
    }

    /// No retry can fix it: stop and tell the operator. As the SDKs: an
    /// endpoint code other than the retryable ones; a handshake refused
    /// with 403, or with 514 and the connection-limit auth code.
    pub fn is_fatal(&self) -> bool {
        match self {
            WsError::GaveUp { .. } => true,
            WsError::Refused { code, .. } => !RETRYABLE_CODES.contains(code),
            WsError::Handshake {
                handshake_status,
                auth_code,
                ..
            } => match handshake_status {
                Some(HANDSHAKE_FORBIDDEN) => true,
                Some(HANDSHAKE_AUTH_FAILED) => *auth_code == Some(TOO_MANY_CONNECTIONS),
                _ => false,
            },
            _ => false,
        }
    }

    /// What the operator should do about a fatal refusal.
    pub fn advice(&self) -> &'static str {
        match self.code() {
            Some(403) => {
                "the app may not use the long connection: enable \"receive events through persistent connection\" in the app's console, or use webhook mode"
            }
            Some(514) => "authentication failed: check FEISHU_APP_ID and FEISHU_APP_SECRET",
            Some(10003 | 10014) => "check FEISHU_APP_ID and FEISHU_APP_SECRET",
            Some(1000040350) => {
                "the app has too many long connections open (at most 50): stop other clawmux instances of this app"
            }
            Some(1000040344) => {
                "Feishu refused this app's long connection: check the app's console"
            }
            _ => "check the app's console and the network",
        }
    }
}

/// `ClientConfig` of the endpoint answer and of pongs.
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
struct ClientConfig {
    ping_interval: Option<i64>,
    reconnect_count: Option<i64>,
    reconnect_interval: Option<i64>,
    reconnect_nonce: Option<i64>,
}

/// How to ping and reconnect, as Feishu last said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    pub ping_interval: Duration,
    /// Tries before giving up; negative: for ever.
    pub reconnect_count: i64,
    pub reconnect_interval: Duration,
    pub reconnect_nonce: Duration,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            ping_interval: DEFAULT_PING_INTERVAL,
            reconnect_count: DEFAULT_RECONNECT_COUNT,
            reconnect_interval: DEFAULT_RECONNECT_INTERVAL,
            reconnect_nonce: DEFAULT_RECONNECT_NONCE,
        }
    }
}

impl Policy {
    /// Takes every value `cc` carries (seconds), bounded.
    fn update(&mut self, cc: &ClientConfig) {
        let secs = |v: Option<i64>| {
            v.filter(|s| *s >= 0)
                .map(|s| Duration::from_secs((s as u64).min(MAX_POLICY_SECS)))
        };
        if let Some(p) = secs(cc.ping_interval).filter(|p| !p.is_zero()) {
            self.ping_interval = p;
        }
        if let Some(c) = cc.reconnect_count {
            self.reconnect_count = c;
        }
        if let Some(i) = secs(cc.reconnect_interval) {
            self.reconnect_interval = i;
        }
        if let Some(n) = secs(cc.reconnect_nonce) {
            self.reconnect_nonce = n;
        }
    }

    /// The first wait after a connection ends: `fraction` (in [0, 1)) of
    /// the nonce.
    pub fn first_wait(&self, fraction: f64) -> Duration {
        self.reconnect_nonce.mul_f64(fraction.clamp(0.0, 1.0))
    }

    /// Whether `tries` failed tries are all the policy allows.
    pub fn exhausted(&self, tries: u32) -> bool {
        self.reconnect_count >= 0 && i64::from(tries) >= self.reconnect_count
    }
}

/// The endpoint's answer.
struct Endpoint {
    url: String,
    service_id: i32,
}

/// Connect, serve, reconnect as the SDKs do. Returns only on a fatal
/// refusal or when the tries allowed are spent (the intake aborts the task
/// on drop); the error says why.
pub(crate) async fn run(config: FeishuConfig, dispatcher: Arc<Dispatcher>) -> WsError {
    let http = reqwest::Client::builder()
        .timeout(CONNECT_TIMEOUT)
        .build()
        .unwrap_or_else(|_| reqwest::Client::new());
    let mut policy = Policy::default();
    let mut first = true;
    loop {
        if !first {
            let fraction: f64 = rand::rng().random_range(0.0..1.0);
            sleep(policy.first_wait(fraction)).await;
        }
        first = false;
        let mut tries: u32 = 0;
        loop {
            tries += 1;
            match connect_and_serve(&config, &http, &dispatcher, &mut policy).await {
                Ok(ended) => {
                    tracing::warn!(error = %ended, "Feishu long connection ended; reconnecting");
                    break;
                }
                Err(e) if e.is_fatal() => {
                    tracing::error!(error = %e, advice = e.advice(), "Feishu refused the long connection for good; no more events will arrive");
                    return e;
                }
                Err(e) if policy.exhausted(tries) => {
                    let e = WsError::GaveUp {
                        tries,
                        last: Box::new(e),
                    };
                    tracing::error!(error = %e, "Feishu long connection given up; no more events will arrive");
                    return e;
                }
                Err(e) => {
                    tracing::warn!(error = %e, tries, retry_in = ?policy.reconnect_interval, "Feishu long connection failed");
                    sleep(policy.reconnect_interval).await;
                }
            }
        }
    }
}

async fn endpoint(
    config: &FeishuConfig,
    http: &reqwest::Client,
    policy: &mut Policy,
) -> Result<Endpoint, WsError> {
    let url = format!("{}/callback/ws/endpoint", config.base_url());
    let body = json!({"AppID": config.app_id, "AppSecret": config.app_secret});
    let resp = http
        .post(url)
        .header("locale", "zh")
        .json(&body)
        .send()
        .await
        .map_err(|e| WsError::Endpoint(e.to_string()))?;
    let status = resp.status();
    if !status.is_success() {
        // As the SDKs: an HTTP failure is the server's, worth retrying.
        return Err(WsError::Endpoint(format!("HTTP {status}")));
    }
    let v: Value = resp
        .json()
        .await
        .map_err(|e| WsError::Endpoint(e.to_string()))?;
    let code = (v.get("code").and_then(Value::as_i64))
        .ok_or_else(|| WsError::Endpoint("no code in the endpoint answer".into()))?;
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
    if let Some(cc) = data
        .get("ClientConfig")
        .and_then(|c| serde_json::from_value::<ClientConfig>(c.clone()).ok())
    {
        policy.update(&cc);
    }
    Ok(Endpoint { url, service_id })
}

/// Ask for a long-connection endpoint and open the WebSocket once, then
/// close it (for `clawmux doctor`). A fatal refusal says so ([`WsError::is_fatal`]).
pub async fn check_endpoint(config: &FeishuConfig) -> Result<(), WsError> {
    let http = reqwest::Client::builder()
        .timeout(CONNECT_TIMEOUT)
        .build()
        .map_err(|e| WsError::Endpoint(e.to_string()))?;
    let ep = endpoint(config, &http, &mut Policy::default()).await?;
    let mut ws = handshake(&ep.url).await?;
    let _ = ws.close(None).await;
    Ok(())
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Open the WebSocket; a refusal's `handshake-*` headers go into the error.
async fn handshake(url: &str) -> Result<Ws, WsError> {
    use tokio_tungstenite::tungstenite::Error as TError;
    let connect =
        tokio::time::timeout(CONNECT_TIMEOUT, tokio_tungstenite::connect_async(url)).await;
    match connect {
        Ok(Ok((ws, _))) => Ok(ws),
        Ok(Err(TError::Http(resp))) => {
            let header = |k: &str| {
                resp.headers()
                    .get(k)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string)
            };
            let num = |k: &str| header(k).and_then(|v| v.trim().parse::<i64>().ok());
            Err(WsError::Handshake {
                status: resp.status().as_u16(),
                handshake_status: num("handshake-status"),
                auth_code: num("handshake-autherrcode"),
                msg: header("handshake-msg").unwrap_or_default(),
            })
        }
        Ok(Err(e)) => Err(WsError::Socket(e.to_string())),
        Err(_) => Err(WsError::Socket("handshake timed out".into())),
    }
}

/// One connection: Err if it could not be opened (a failed try), Ok with
/// why it ended once it was.
async fn connect_and_serve(
    config: &FeishuConfig,
    http: &reqwest::Client,
    dispatcher: &Arc<Dispatcher>,
    policy: &mut Policy,
) -> Result<WsError, WsError> {
    let ep = endpoint(config, http, policy).await?;
    let ws = handshake(&ep.url).await?;
    tracing::info!("Feishu long connection established");
    let mut conn = Connection {
        service_id: ep.service_id,
        policy,
        reassembler: Reassembler::default(),
    };
    Ok(match conn.serve(ws, dispatcher).await {
        Ok(()) => WsError::Closed,
        Err(e) => e,
    })
}

struct Connection<'a> {
    service_id: i32,
    /// Updated by every pong.
    policy: &'a mut Policy,
    reassembler: Reassembler,
}

impl Connection<'_> {
    fn pong_timeout(&self) -> Duration {
        PONG_TIMEOUT.min(self.policy.ping_interval)
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
                    next_ping = now + self.policy.ping_interval;
                    pong_deadline.get_or_insert(now + self.pong_timeout());
                }
                _ = sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() => {
                    return Err(WsError::HalfOpen(self.pong_timeout()));
                }
                Some(frame) = out_rx.recv() => send(&mut sink, &frame).await?,
                msg = stream.next() => match msg {
                    Some(Ok(WsMessage::Close(_))) => {
                        // tungstenite queued the answering close frame;
                        // write it out before the socket is dropped.
                        let _ = tokio::time::timeout(CLOSE_REPLY_WAIT, sink.close()).await;
                        return Err(WsError::Closed);
                    }
                    None => return Err(WsError::Closed),
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
                // A pong carries a whole ClientConfig: all four values.
                let cc: Option<ClientConfig> = frame
                    .payload
                    .as_deref()
                    .and_then(|p| serde_json::from_slice(p).ok());
                if let Some(cc) = cc {
                    self.policy.update(&cc);
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

    fn cc(v: serde_json::Value) -> ClientConfig {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_client_config_updates_all_four_values_within_bounds() {
        let mut p = Policy::default();
        p.update(&cc(json!({"PingInterval": 10, "ReconnectCount": 3, "ReconnectInterval": 7, "ReconnectNonce": 2})));
        assert_eq!(
            p,
            Policy {
                ping_interval: Duration::from_secs(10),
                reconnect_count: 3,
                reconnect_interval: Duration::from_secs(7),
                reconnect_nonce: Duration::from_secs(2),
            }
        );
        // Missing values stay; absurd ones are bounded; a zero ping is ignored.
        p.update(&cc(
            json!({"PingInterval": 0, "ReconnectInterval": 999999999}),
        ));
        assert_eq!(p.ping_interval, Duration::from_secs(10));
        assert_eq!(p.reconnect_interval, Duration::from_secs(MAX_POLICY_SECS));
        assert_eq!(p.first_wait(0.5), Duration::from_secs(1));
        assert!(!p.exhausted(2) && p.exhausted(3));
        p.update(&cc(json!({"ReconnectCount": -1})));
        assert!(!p.exhausted(u32::MAX), "negative: for ever");
    }

    #[test]
    fn fatal_and_retryable_codes() {
        let refused = |code| WsError::Refused {
            code,
            msg: String::new(),
        };
        for c in RETRYABLE_CODES {
            assert!(!refused(c).is_fatal(), "{c}");
        }
        // The SDKs stop on every other endpoint code.
        for c in [403, 514, 1000040344, TOO_MANY_CONNECTIONS, 10014, 99999] {
            assert!(refused(c).is_fatal(), "{c}");
        }
        let hs = |status, auth| WsError::Handshake {
            status: 400,
            handshake_status: status,
            auth_code: auth,
            msg: "m".into(),
        };
        assert!(hs(Some(514), Some(TOO_MANY_CONNECTIONS)).is_fatal());
        assert!(
            !hs(Some(514), Some(1000040343)).is_fatal(),
            "514 with another auth code is retried"
        );
        assert!(!hs(Some(514), None).is_fatal(), "514 alone is retried");
        assert!(hs(Some(403), None).is_fatal());
        assert!(!hs(Some(500), None).is_fatal());
        assert!(!hs(None, None).is_fatal(), "no handshake headers: retried");
        assert_eq!(
            hs(Some(514), Some(TOO_MANY_CONNECTIONS)).code(),
            Some(TOO_MANY_CONNECTIONS)
        );
        assert!(refused(TOO_MANY_CONNECTIONS).advice().contains("too many"));
    }
}
