//! The webhook intake over real HTTP: verification, encryption, signatures,
//! garbage, duplicates and card actions.

use std::sync::Arc;

use clawmux::feishu::event::{CardResponse, ToastKind};
use clawmux::feishu::intake::CARD_ANSWER_WAIT;
use clawmux::feishu::webhook::signature_of;
use clawmux::feishu::{Domain, FeishuConfig, Intake, IntakeEvent, MemoryDedupe};
use serde_json::{Value, json};
use tokio::time::{Duration, timeout};

use crate::support::fake_feishu::{card_action_event, message_event};
use crate::support::signed::{encrypt, now};

const KEY: &str = "test-encrypt-key";
const TOKEN: &str = "verify-token";

struct Hook {
    intake: Intake,
    url: String,
    http: reqwest::Client,
}

impl Hook {
    async fn start(encrypt_key: Option<&str>) -> Hook {
        let mut config =
            FeishuConfig::new("cli_x", "s", Domain::Custom("http://127.0.0.1:9".into()));
        config.encrypt_key = encrypt_key.map(str::to_string);
        config.verification_token = Some(TOKEN.into());
        let intake = Intake::webhook(
            config,
            "127.0.0.1:0".parse().expect("addr"),
            Arc::new(MemoryDedupe::default()),
        )
        .await
        .expect("bind webhook");
        let addr = intake.local_addr().expect("webhook address");
        Hook {
            intake,
            url: format!("http://{addr}/webhook/event"),
            http: reqwest::Client::new(),
        }
    }

    /// POST `body` signed with `ts` (None: no signature headers) and `sign_key`.
    async fn post(&self, body: &str, signed: Option<(u64, &str)>) -> (u16, String) {
        let mut req = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .body(body.to_string());
        if let Some((ts, key)) = signed {
            let ts = ts.to_string();
            req = req
                .header("X-Lark-Request-Timestamp", &ts)
                .header("X-Lark-Request-Nonce", "nonce-1")
                .header(
                    "X-Lark-Signature",
                    signature_of(&ts, "nonce-1", key, body.as_bytes()),
                );
        }
        let resp = req.send().await.expect("POST");
        let status = resp.status().as_u16();
        (status, resp.text().await.unwrap_or_default())
    }

    async fn post_encrypted(&self, payload: &Value) -> (u16, String) {
        let body = json!({"encrypt": encrypt(KEY, payload.to_string().as_bytes())}).to_string();
        self.post(&body, Some((now(), KEY))).await
    }

    async fn next(&mut self) -> IntakeEvent {
        timeout(Duration::from_secs(5), self.intake.recv())
            .await
            .expect("no event")
            .expect("intake stopped")
    }
}

fn with_token(mut v: Value) -> Value {
    v["header"]["token"] = json!(TOKEN);
    v
}

#[tokio::test]
async fn url_verification_plain_and_encrypted() {
    let plain = Hook::start(Some(KEY)).await;
    let body =
        json!({"challenge": "c-123", "token": TOKEN, "type": "url_verification"}).to_string();
    let (status, text) = plain.post(&body, None).await;
    assert_eq!(
        (status, serde_json::from_str::<Value>(&text).ok()),
        (200, Some(json!({"challenge": "c-123"})))
    );
    let bad = json!({"challenge": "c", "token": "wrong", "type": "url_verification"}).to_string();
    assert_eq!(plain.post(&bad, None).await.0, 401);

    let enc = Hook::start(Some(KEY)).await;
    let body = json!({"encrypt": encrypt(KEY, body.as_bytes())}).to_string();
    let (status, text) = enc.post(&body, None).await;
    assert_eq!(
        (status, serde_json::from_str::<Value>(&text).ok()),
        (200, Some(json!({"challenge": "c-123"})))
    );
}

#[tokio::test]
async fn encrypted_signed_message_is_delivered_once() {
    let mut hook = Hook::start(Some(KEY)).await;
    let event = with_token(message_event("ev_1", "om_1", "oc_1", "ou_a", "/gsd:help"));
    assert_eq!(hook.post_encrypted(&event).await.0, 200);
    let IntakeEvent::MessageReceived(m) = hook.next().await else {
        panic!("expected a message")
    };
    assert_eq!(m.text, "/gsd:help");
    // Redelivered twice, then a new one: only the new one comes out.
    assert_eq!(hook.post_encrypted(&event).await.0, 200);
    assert_eq!(hook.post_encrypted(&event).await.0, 200);
    let next = with_token(message_event("ev_2", "om_2", "oc_1", "ou_a", "next"));
    assert_eq!(hook.post_encrypted(&next).await.0, 200);
    let IntakeEvent::MessageReceived(m) = hook.next().await else {
        panic!("expected a message")
    };
    assert_eq!(m.text, "next");
    // Same message redelivered under a new event id: still a duplicate.
    let again = with_token(message_event("ev_3", "om_2", "oc_1", "ou_a", "next"));
    assert_eq!(hook.post_encrypted(&again).await.0, 200);
    let last = with_token(message_event("ev_4", "om_4", "oc_1", "ou_a", "last"));
    assert_eq!(hook.post_encrypted(&last).await.0, 200);
    let IntakeEvent::MessageReceived(m) = hook.next().await else {
        panic!("expected a message")
    };
    assert_eq!(m.text, "last");
}

#[tokio::test]
async fn forged_stale_unsigned_and_garbage_requests_are_refused() {
    let mut hook = Hook::start(Some(KEY)).await;
    let event = with_token(message_event("ev_1", "om_1", "oc_1", "ou_a", "forged"));
    let body = json!({"encrypt": encrypt(KEY, event.to_string().as_bytes())}).to_string();
    assert_eq!(
        hook.post(&body, Some((now(), "not-the-key"))).await.0,
        401,
        "forged signature"
    );
    assert_eq!(
        hook.post(&body, Some((now() - 3600, KEY))).await.0,
        401,
        "stale timestamp"
    );
    assert_eq!(hook.post(&body, None).await.0, 401, "unsigned");
    assert_eq!(
        hook.post("not json at all", Some((now(), KEY))).await.0,
        400,
        "garbage"
    );
    assert_eq!(
        hook.post("[1,2]", Some((now(), KEY))).await.0,
        400,
        "not an object"
    );
    let wrong_key =
        json!({"encrypt": encrypt("other-key", event.to_string().as_bytes())}).to_string();
    // What does not decrypt with our key was not sent by Feishu for us.
    assert_eq!(
        hook.post(&wrong_key, Some((now(), KEY))).await.0,
        401,
        "encrypted with another key"
    );
    let junk = json!({"encrypt": "!!!not base64"}).to_string();
    assert_eq!(hook.post(&junk, Some((now(), KEY))).await.0, 401);
    let bad_token = message_event("ev_9", "om_9", "oc_1", "ou_a", "bad token");
    assert_eq!(
        hook.post_encrypted(&bad_token).await.0,
        401,
        "wrong verification token"
    );
    // None of that reached the bridge as an event: the stale one only as
    // a report of the clock skew (for the event log); a good event does.
    let good = with_token(message_event("ev_2", "om_2", "oc_1", "ou_a", "good"));
    assert_eq!(hook.post_encrypted(&good).await.0, 200);
    let IntakeEvent::ClockSkew {
        skew_secs,
        window_secs,
    } = hook.next().await
    else {
        panic!("the stale event was not reported as clock skew")
    };
    assert!((-3601..=-3599).contains(&skew_secs), "{skew_secs}");
    assert_eq!(window_secs, 300);
    let IntakeEvent::MessageReceived(m) = hook.next().await else {
        panic!()
    };
    assert_eq!(m.text, "good");
}

#[tokio::test]
async fn card_action_answered_with_toast_or_empty_in_time() {
    let mut hook = Hook::start(Some(KEY)).await;
    let url = hook.url.clone();
    let post = |payload: Value| {
        let url = url.clone();
        tokio::spawn(async move {
            let started = std::time::Instant::now();
            let (status, body) = crate::support::signed::post_event(&url, KEY, TOKEN, &payload)
                .await
                .expect("POST");
            assert_eq!(status, 200, "{body}");
            let v: Value = serde_json::from_str(&body).expect("json answer");
            (v, started.elapsed())
        })
    };
    let click = with_token(card_action_event(
        "ev_c1",
        "ou_a",
        "om_card",
        "oc_1",
        json!({"action": "retry"}),
    ));
    let answer = post(click);
    let IntakeEvent::CardAction(action) = hook.next().await else {
        panic!("expected a card action")
    };
    assert_eq!(action.value, json!({"action": "retry"}));
    let _ = action
        .respond
        .send(CardResponse::toast(ToastKind::Info, "Retrying"));
    let (v, _) = answer.await.expect("join");
    assert_eq!(v, json!({"toast": {"type": "info", "content": "Retrying"}}));

    let slow = with_token(card_action_event(
        "ev_c2",
        "ou_a",
        "om_card",
        "oc_1",
        json!({"action": "slow"}),
    ));
    let answer = post(slow);
    let IntakeEvent::CardAction(_held) = hook.next().await else {
        panic!("expected a card action")
    };
    let (v, took) = answer.await.expect("join");
    assert_eq!(v, json!({}));
    // Answered by the wait's end (under Feishu's 3 s: a compile-time check
    // in the intake), not before, and not left open.
    assert!(took >= CARD_ANSWER_WAIT, "answered after {took:?}");
}

/// Without both secrets nothing could be verified: the webhook does not
/// start, and says which settings it needs.
#[tokio::test]
async fn the_webhook_refuses_to_start_without_both_secrets() {
    for (key, token) in [
        (None, None),
        (Some(KEY), None),
        (None, Some(TOKEN)),
        (Some(KEY), Some(" ")),
    ] {
        let mut config =
            FeishuConfig::new("cli_x", "s", Domain::Custom("http://127.0.0.1:9".into()));
        config.encrypt_key = key.map(str::to_string);
        config.verification_token = token.map(str::to_string);
        let started = Intake::webhook(
            config,
            "127.0.0.1:0".parse().expect("addr"),
            Arc::new(MemoryDedupe::default()),
        )
        .await;
        let err = started
            .err()
            .unwrap_or_else(|| panic!("started with {key:?} {token:?}"));
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
        assert!(
            err.to_string().contains("FEISHU_ENCRYPT_KEY")
                && err.to_string().contains("FEISHU_VERIFICATION_TOKEN"),
            "{err}"
        );
    }
}

/// The attack: a plain body shaped like an old (1.0) card callback, or a
/// plain 2.0 event, naming an approver and carrying no signature, is
/// refused and reaches nobody; the same body signed with the wrong secret
/// too. Only what Feishu signed is handled.
#[tokio::test]
async fn unsigned_bodies_of_any_shape_are_refused() {
    let mut hook = Hook::start(Some(KEY)).await;
    let old_card = json!({
        "open_id": "ou_approver",
        "open_message_id": "om_card",
        "token": TOKEN,
        "action": {"value": {"approval": "ap1", "option": "1"}}
    })
    .to_string();
    assert_eq!(
        hook.post(&old_card, None).await.0,
        401,
        "unsigned 1.0 callback"
    );
    // Signed with the encrypt key in the event scheme: not its scheme.
    assert_eq!(hook.post(&old_card, Some((now(), KEY))).await.0, 401);
    let event = with_token(message_event(
        "ev_u",
        "om_u",
        "oc_1",
        "ou_approver",
        "rm -rf /",
    ));
    assert_eq!(
        hook.post(&event.to_string(), None).await.0,
        401,
        "unsigned event"
    );
    // Nothing came through; the next signed message does.
    let good = with_token(message_event("ev_g", "om_g", "oc_1", "ou_a", "signed"));
    assert_eq!(hook.post_encrypted(&good).await.0, 200);
    let IntakeEvent::MessageReceived(m) = hook.next().await else {
        panic!("expected a message")
    };
    assert_eq!(m.text, "signed");
}

/// An old (1.0) card callback arrives encrypted when the app has an
/// encrypt key, and Feishu still signs it only as sha1(timestamp + nonce +
/// verification token + body): decrypted first, then that sha1 checked.
/// Signed with the encrypt key instead, it is a forgery.
#[tokio::test]
async fn an_encrypted_1_0_card_callback_is_checked_as_feishu_signs_it() {
    use clawmux::feishu::webhook::card_v1_signature_of;
    let mut hook = Hook::start(Some(KEY)).await;
    let old_card = json!({
        "open_id": "ou_a",
        "open_message_id": "om_card",
        "open_chat_id": "oc_1",
        "token": "c-update-token",
        "action": {"value": {"action": "retry"}, "tag": "button"}
    });
    let body = json!({"encrypt": encrypt(KEY, old_card.to_string().as_bytes())}).to_string();
    // With the event scheme's sha256 and the encrypt key: refused.
    assert_eq!(hook.post(&body, Some((now(), KEY))).await.0, 401);
    let ts = now().to_string();
    let post = hook
        .http
        .post(&hook.url)
        .header("content-type", "application/json")
        .header("X-Lark-Request-Timestamp", &ts)
        .header("X-Lark-Request-Nonce", "n1")
        .header(
            "X-Lark-Signature",
            card_v1_signature_of(&ts, "n1", TOKEN, body.as_bytes()),
        )
        .body(body.clone())
        .send();
    let answer = tokio::spawn(post);
    let IntakeEvent::CardAction(action) = hook.next().await else {
        panic!("expected a card action")
    };
    assert_eq!(action.value, json!({"action": "retry"}));
    assert_eq!(action.message_id, "om_card");
    let _ = action.respond.send(CardResponse::default());
    let resp = answer.await.expect("join").expect("POST");
    assert_eq!(resp.status().as_u16(), 200);
    // The sha1 with the encrypt key in place of the token: refused.
    let ts = now().to_string();
    let forged = hook
        .http
        .post(&hook.url)
        .header("X-Lark-Request-Timestamp", &ts)
        .header("X-Lark-Request-Nonce", "n2")
        .header(
            "X-Lark-Signature",
            card_v1_signature_of(&ts, "n2", KEY, body.as_bytes()),
        )
        .body(body)
        .send()
        .await
        .expect("POST");
    assert_eq!(forged.status().as_u16(), 401);
}

/// A real `clawmux serve --agent sim` in `home`, taking Feishu's events
/// by webhook on a free local port against `fake`, started by `sh` after
/// `prefix` (`ulimit -n 128 && `); the daemon, its port and events URL.
fn webhook_serve(
    fake: &crate::support::fake_feishu::FakeFeishu,
    home: &std::path::Path,
    prefix: &str,
    stderr: std::process::Stdio,
) -> (tokio::process::Child, u16, String) {
    use crate::support::fake_feishu::{APP_ID, APP_SECRET};
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    std::fs::write(
        home.join("config.toml"),
        format!("[feishu]\nmode = \"webhook\"\nwebhook_bind = \"127.0.0.1:{port}\"\n"),
    )
    .expect("config");
    let daemon = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{prefix}exec \"$0\" serve --agent sim"))
        .arg(env!("CARGO_BIN_EXE_clawmux"))
        .env("CLAWMUX_HOME", home)
        .env("FEISHU_APP_ID", APP_ID)
        .env("FEISHU_APP_SECRET", APP_SECRET)
        .env("FEISHU_DOMAIN", fake.base_url())
        .env("FEISHU_ENCRYPT_KEY", KEY)
        .env("FEISHU_VERIFICATION_TOKEN", TOKEN)
        .stdout(std::process::Stdio::null())
        .stderr(stderr)
        .kill_on_drop(true)
        .spawn()
        .expect("start serve");
    let url = format!("http://127.0.0.1:{port}/webhook/event");
    (daemon, port, url)
}

/// Attack 6: 300 clients that connect and send half their headers, then
/// hang, against a real `clawmux serve` in webhook mode whose open-file
/// limit (128) is below what they would take without bounds. A signed
/// Feishu event sent after them is still answered: slow connections give
/// way, and the daemon never runs out of descriptors.
#[tokio::test]
async fn a_signed_event_is_answered_while_300_slow_clients_hang() {
    use crate::support::fake_feishu::FakeFeishu;
    use tokio::io::AsyncWriteExt;
    const SLOW_CLIENTS: usize = 300;
    let fake = FakeFeishu::start().await;
    let home = tempfile::tempdir().expect("tempdir");
    let (mut daemon, port, url) = webhook_serve(
        &fake,
        home.path(),
        "ulimit -n 128 && ",
        std::process::Stdio::piped(),
    );
    // Up: a signed event is answered.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let probe = with_token(message_event("ev_p", "om_p", "oc_1", "ou_a", "hello"));
    loop {
        let sent = crate::support::signed::post_event(&url, KEY, TOKEN, &probe).await;
        if matches!(sent, Ok((200, _))) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "serve never answered: {sent:?}"
        );
        assert!(daemon.try_wait().expect("wait").is_none(), "serve exited");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut slow = Vec::with_capacity(SLOW_CLIENTS);
    for _ in 0..SLOW_CLIENTS {
        // A server that stopped accepting fills its backlog: connects then
        // hang, and the loop stops there.
        let connect = tokio::net::TcpStream::connect(("127.0.0.1", port));
        let Ok(Ok(mut s)) = timeout(Duration::from_secs(1), connect).await else {
            break;
        };
        let _ = s
            .write_all(b"POST /webhook/event HTTP/1.1\r\nHost: x\r\nContent-Type: appl")
            .await;
        slow.push(s);
    }
    let event = with_token(message_event("ev_s", "om_s", "oc_1", "ou_a", "still here"));
    let answered = timeout(
        Duration::from_secs(10),
        crate::support::signed::post_event(&url, KEY, TOKEN, &event),
    )
    .await;
    assert!(
        matches!(answered, Ok(Ok((200, _)))),
        "the signed event got no answer while {} slow clients hang: {answered:?}",
        slow.len()
    );
    // More than the daemon's whole open-file limit hung on it.
    assert!(
        slow.len() > 128,
        "only {} slow clients connected",
        slow.len()
    );
    drop(slow);
    // A Feishu whose clock is 10 minutes behind: refused, and the log
    // says by how much.
    let stale = with_token(message_event("ev_t", "om_t", "oc_1", "ou_a", "late"));
    let refused = crate::support::signed::post_event_at(
        &url,
        KEY,
        TOKEN,
        &stale,
        crate::support::signed::now() - 600,
    )
    .await
    .expect("POST");
    assert_eq!(refused.0, 401);
    let _ = daemon.start_kill();
    let out = daemon.wait_with_output().await.expect("serve output");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        ["-599 s", "-600 s", "-601 s"]
            .iter()
            .any(|skew| stderr.contains(&format!("its timestamp is {skew} from this host's clock"))),
        "{stderr}"
    );
}

/// A signed event from a Feishu whose clock is 10 minutes behind this
/// host's, posted to a real `clawmux serve` in webhook mode: refused
/// (401), and the event log holds a `clock_skew` line with the skew in
/// seconds, which `clawmux tail --kind clock_skew` shows.
#[tokio::test]
async fn an_event_refused_for_clock_skew_is_in_the_event_log() {
    use crate::support::fake_feishu::FakeFeishu;
    let fake = FakeFeishu::start().await;
    let home = tempfile::tempdir().expect("tempdir");
    let (mut daemon, _, url) = webhook_serve(&fake, home.path(), "", std::process::Stdio::null());
    let stale = with_token(message_event("ev_t", "om_t", "oc_1", "ou_a", "late"));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let at = crate::support::signed::now() - 600;
        let sent = crate::support::signed::post_event_at(&url, KEY, TOKEN, &stale, at).await;
        if let Ok((status, _)) = sent {
            assert_eq!(status, 401, "a skewed event was not refused");
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "serve never answered: {sent:?}"
        );
        assert!(daemon.try_wait().expect("wait").is_none(), "serve exited");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Written by the daemon after the answer: wait for it.
    let tail = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_clawmux"))
            .args(["tail", "--json", "--kind", "clock_skew"])
            .env("CLAWMUX_HOME", home.path())
            .output()
            .expect("run clawmux tail")
    };
    let line = loop {
        let out = tail();
        assert!(out.status.success(), "{out:?}");
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        if let Some(line) = text.lines().next() {
            break serde_json::from_str::<serde_json::Value>(line).expect("a JSON line");
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no clock_skew line in the event log"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(line["kind"], "clock_skew", "{line}");
    let skew = line["skew_secs"].as_i64().expect("skew_secs");
    // `now` was read a moment before the daemon read its clock.
    assert!((-602..=-599).contains(&skew), "{line}");
    assert_eq!(line["window_secs"], 300, "{line}");
    // The readable form says it too.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_clawmux"))
        .args(["tail", "--kind", "clock_skew"])
        .env("CLAWMUX_HOME", home.path())
        .output()
        .expect("run clawmux tail");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("clock_skew") && text.contains(&skew.to_string()),
        "{text}"
    );
    let _ = daemon.start_kill();
}
