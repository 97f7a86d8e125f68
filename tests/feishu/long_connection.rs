//! The long-connection intake against the fake's pbbp2 WebSocket: acks,
//! fragments, card actions (as `type=event` frames, as Feishu sends them,
//! and older `type=card` frames), duplicates, drops, half-open sockets, and
//! the reconnect policy.

use std::collections::HashSet;
use std::sync::Arc;

use clawmux::feishu::card::{self, Template};
use clawmux::feishu::event::{CardResponse, ToastKind};
use clawmux::feishu::intake::CARD_ANSWER_WAIT;
use clawmux::feishu::ws::{self, WsError};
use clawmux::feishu::{Dedupe, Intake, IntakeEvent, MemoryDedupe};
use serde_json::json;
use tokio::time::{Duration, Instant, timeout};

use crate::support::fake_feishu::FakeFeishu;

const WAIT: Duration = Duration::from_secs(10);

async fn next_event(intake: &mut Intake) -> IntakeEvent {
    timeout(WAIT, intake.recv())
        .await
        .expect("no event in time")
        .expect("intake stopped")
}

async fn connected(fake: &FakeFeishu) -> (Intake, Arc<MemoryDedupe>) {
    let dedupe = Arc::new(MemoryDedupe::default());
    let intake = Intake::long_connection(fake.config(), dedupe.clone());
    assert!(fake.wait_connected(1, WAIT).await, "client never connected");
    (intake, dedupe)
}

#[tokio::test]
async fn message_is_delivered_and_acked() {
    let fake = FakeFeishu::start().await;
    let (mut intake, _) = connected(&fake).await;
    let pushed = fake.push_message("oc_1", "ou_alice", "/gsd:progress");
    let IntakeEvent::MessageReceived(m) = next_event(&mut intake).await else {
        panic!("expected a message")
    };
    assert_eq!(m.text, "/gsd:progress");
    assert_eq!(
        (m.chat_id.as_str(), m.sender_open_id.as_str()),
        ("oc_1", "ou_alice")
    );
    assert_eq!(
        (m.event_id.as_str(), m.message_id.as_str()),
        (pushed.event_id.as_str(), pushed.message_id.as_str())
    );
    assert!(m.mentions_bot);
    let ack = fake.wait_ack(&pushed.frame_id, WAIT).await.expect("ack");
    assert_eq!(ack.code, 200);
    assert_eq!(ack.answer, json!({}));
    assert!(
        ack.biz_rt
            .as_deref()
            .is_some_and(|v| v.parse::<u64>().is_ok()),
        "biz_rt header: {:?}",
        ack.biz_rt
    );
    let pinged = fake
        .wait_until(WAIT, |f| (f.pings().0 >= 1).then_some(()))
        .await;
    assert!(pinged.is_some(), "the client pings on connect");
    assert_eq!(
        fake.pings().1,
        0,
        "pings carry type=ping and the service id"
    );
}

#[tokio::test]
async fn fragmented_frames_are_reassembled() {
    let fake = FakeFeishu::start().await;
    let (mut intake, _) = connected(&fake).await;
    let long = "x".repeat(5000);
    let pushed = fake.push_message_fragmented("oc_1", "ou_a", &long, 4);
    let IntakeEvent::MessageReceived(m) = next_event(&mut intake).await else {
        panic!("expected a message")
    };
    assert_eq!(m.text, long);
    assert_eq!(
        fake.wait_ack(&pushed.frame_id, WAIT)
            .await
            .expect("ack")
            .code,
        200
    );
}

#[tokio::test]
async fn card_frames_are_handled_and_answered() {
    let fake = Arc::new(FakeFeishu::start().await);
    let (mut intake, _) = connected(&fake).await;
    let answer = tokio::spawn({
        let fake = Arc::clone(&fake);
        let value = json!({"action": "approval", "approval_id": "a1", "option": "1"});
        async move { fake.push_card_action("ou_a", "om_card", value).await }
    });
    let IntakeEvent::CardAction(action) = next_event(&mut intake).await else {
        panic!("expected a card action")
    };
    assert_eq!(action.value["approval_id"], "a1");
    assert_eq!(
        (action.operator_open_id.as_str(), action.message_id.as_str()),
        ("ou_a", "om_card")
    );
    let resolved = card::Card::new("Approval answered", Template::Grey);
    let _ = action
        .respond
        .send(CardResponse::toast(ToastKind::Success, "Sent 1").with_card(resolved));
    let answer = answer.await.expect("join").expect("ack with answer");
    assert_eq!(
        answer["toast"],
        json!({"type": "success", "content": "Sent 1"})
    );
    assert_eq!(answer["card"]["data"]["header"]["template"], "grey");
}

#[tokio::test]
async fn an_older_type_card_frame_is_still_handled_and_acked() {
    let fake = FakeFeishu::start().await;
    let (mut intake, _) = connected(&fake).await;
    let payload = crate::support::fake_feishu::card_action_event(
        "ev_card_frame",
        "ou_a",
        "om_card",
        "oc_1",
        json!({"action": "x"}),
    );
    let frame_id = fake.push_payload("card", &payload, 1);
    let IntakeEvent::CardAction(action) = next_event(&mut intake).await else {
        panic!("expected a card action")
    };
    assert_eq!(action.event_id, "ev_card_frame");
    let _ = action.respond.send(CardResponse::default());
    let ack = fake.wait_ack(&frame_id, WAIT).await.expect("acked");
    assert_eq!(ack.code, 200);
}

#[tokio::test]
async fn unanswered_card_action_is_acked_at_the_answer_wait() {
    let fake = FakeFeishu::start().await;
    let (mut intake, _) = connected(&fake).await;
    let pushed = fake.push_card_action_frame("ou_a", "om_card", json!({"action": "slow"}));
    // Hold the action without answering, as slow work would.
    let IntakeEvent::CardAction(_held) = next_event(&mut intake).await else {
        panic!("expected a card action")
    };
    let ack = fake
        .wait_ack(&pushed.frame_id, Duration::from_secs(30))
        .await
        .expect("acked");
    assert_eq!(ack.answer, json!({}));
    // Acked when the wait ended (under Feishu's 3 s: a compile-time check in
    // the intake), not before.
    assert!(ack.latency >= CARD_ANSWER_WAIT, "{:?}", ack.latency);
}

#[tokio::test]
async fn duplicate_deliveries_yield_one_event() {
    let fake = FakeFeishu::start().await;
    let (mut intake, _) = connected(&fake).await;
    let first = fake.push_message("oc_1", "ou_a", "once");
    fake.wait_ack(&first.frame_id, WAIT).await.expect("ack");
    fake.redeliver(&first.frame_id);
    fake.redeliver(&first.frame_id);
    let sentinel = fake.push_message("oc_1", "ou_a", "sentinel");
    let mut texts = Vec::new();
    while texts.last().map(String::as_str) != Some("sentinel") {
        if let IntakeEvent::MessageReceived(m) = next_event(&mut intake).await {
            texts.push(m.text);
        }
    }
    assert_eq!(texts, ["once", "sentinel"]);
    fake.wait_ack(&sentinel.frame_id, WAIT).await.expect("ack");
    // Duplicates are acknowledged too, or Feishu would keep sending them.
    let acks = fake
        .wait_until(WAIT, |f| (f.acks(&first.frame_id).len() == 3).then_some(()))
        .await;
    assert!(acks.is_some(), "every delivery is acked");
}

#[tokio::test]
async fn dedupe_state_survives_a_restart() {
    let fake = FakeFeishu::start().await;
    let dedupe = Arc::new(MemoryDedupe::default());
    let mut intake = Intake::long_connection(fake.config(), dedupe.clone());
    assert!(fake.wait_connected(1, WAIT).await);
    let first = fake.push_message("oc_1", "ou_a", "before restart");
    assert!(matches!(
        next_event(&mut intake).await,
        IntakeEvent::MessageReceived(_)
    ));
    fake.wait_ack(&first.frame_id, WAIT).await.expect("ack");
    drop(intake);
    // A new process with the persisted dedupe state.
    let mut intake = Intake::long_connection(fake.config(), dedupe.clone() as Arc<dyn Dedupe>);
    assert!(fake.wait_connected(2, WAIT).await);
    fake.redeliver(&first.frame_id);
    fake.push_message("oc_1", "ou_a", "after restart");
    let IntakeEvent::MessageReceived(m) = next_event(&mut intake).await else {
        panic!()
    };
    assert_eq!(
        m.text, "after restart",
        "the redelivered message was not handled twice"
    );
}

#[tokio::test]
async fn half_open_socket_is_detected_and_replaced() {
    let fake = FakeFeishu::start().await;
    fake.set_ping_interval(1);
    let (mut intake, _) = connected(&fake).await;
    fake.set_pong(false);
    // No pong within the 1 s ping interval: the client reconnects.
    assert!(
        fake.wait_connected(2, WAIT).await,
        "half-open socket not detected"
    );
    fake.set_pong(true);
    fake.push_message("oc_1", "ou_a", "still here");
    let IntakeEvent::MessageReceived(m) = next_event(&mut intake).await else {
        panic!()
    };
    assert_eq!(m.text, "still here");
}

/// Events pushed while the socket is dropped every ~1.5 s: Feishu redelivers
/// what was not acked; the bridge must see each exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_connections_lose_and_duplicate_nothing() {
    let fake = Arc::new(FakeFeishu::start().await);
    let (mut intake, _) = connected(&fake).await;
    const N: usize = 150;
    let pusher = tokio::spawn({
        let fake = Arc::clone(&fake);
        async move {
            let mut last_drop = Instant::now();
            for i in 0..N {
                let fragments = if i % 7 == 0 { 3 } else { 1 };
                fake.push_message_fragmented("oc_1", "ou_a", &format!("m{i}"), fragments);
                if i % 11 == 0 {
                    // A duplicate of an earlier (maybe acked) event.
                    fake.redeliver(&format!("frame_{}", i / 2 + 1));
                }
                if last_drop.elapsed() > Duration::from_millis(1500) {
                    fake.drop_ws();
                    last_drop = Instant::now();
                }
                tokio::time::sleep(Duration::from_millis(30)).await;
            }
        }
    });
    let mut seen = Vec::new();
    while seen.len() < N {
        if let IntakeEvent::MessageReceived(m) = next_event(&mut intake).await {
            seen.push(m.text);
        }
    }
    pusher.await.expect("pusher");
    let unique: HashSet<_> = seen.iter().cloned().collect();
    assert_eq!(unique.len(), N, "duplicates delivered");
    let expected: HashSet<_> = (0..N).map(|i| format!("m{i}")).collect();
    assert_eq!(unique, expected);
    assert!(
        fake.connections() >= 3,
        "the test should have dropped the socket ({} connections)",
        fake.connections()
    );
    // Everything is eventually acknowledged, and nothing more arrives.
    assert!(
        fake.wait_until(WAIT, |f| (f.unacked() == 0).then_some(()))
            .await
            .is_some(),
        "unacked events remain"
    );
    let sentinel = fake.push_message("oc_1", "ou_a", "sentinel");
    loop {
        if let IntakeEvent::MessageReceived(m) = next_event(&mut intake).await {
            assert_eq!(
                m.text, "sentinel",
                "a duplicate arrived after all {N} events"
            );
            break;
        }
    }
    fake.wait_ack(&sentinel.frame_id, WAIT)
        .await
        .expect("sentinel ack");
}

/// The intake ends (the client stopped) within the wait.
async fn stops(intake: &mut Intake) -> bool {
    matches!(timeout(WAIT, intake.recv()).await, Ok(None))
}

#[tokio::test]
async fn a_fatal_endpoint_code_stops_the_client_without_retrying() {
    let fake = FakeFeishu::start().await;
    fake.refuse_endpoint(Some((1000040350, "exceed conn limit")));
    let mut intake = Intake::long_connection(fake.config(), Arc::new(MemoryDedupe::default()));
    assert!(stops(&mut intake).await, "the client kept going");
    assert_eq!(fake.endpoint_requests(), 1);
}

#[tokio::test]
async fn handshake_headers_are_read_into_the_error_and_a_fatal_one_stops() {
    let fake = FakeFeishu::start().await;
    fake.refuse_handshake(Some((403, 1000040350, "exceed conn limit")));
    let err = ws::check_endpoint(&fake.config())
        .await
        .expect_err("the handshake is refused");
    match &err {
        WsError::Handshake {
            status,
            handshake_status,
            auth_code,
            msg,
        } => {
            assert_eq!(*status, 403);
            assert_eq!(*handshake_status, Some(403));
            assert_eq!(*auth_code, Some(1000040350));
            assert_eq!(msg, "exceed conn limit");
        }
        other => panic!("{other:?}"),
    }
    assert!(err.is_fatal());
    let mut intake = Intake::long_connection(fake.config(), Arc::new(MemoryDedupe::default()));
    assert!(stops(&mut intake).await, "the client kept going");
    // The doctor's try, then the client's one.
    assert_eq!(fake.endpoint_requests(), 2);
}

#[tokio::test]
async fn a_pong_updates_the_reconnect_policy_and_the_count_is_honoured() {
    let fake = FakeFeishu::start().await;
    // The endpoint says: retry for ever, no waits, ping every second.
    fake.set_client_config(1, -1, 0, 0);
    let (mut intake, _) = connected(&fake).await;
    // Later pongs say: one try only.
    fake.set_client_config(1, 1, 0, 0);
    let pongs_after = fake.pings().0 + 1;
    fake.wait_until(WAIT, |f| Some(()).filter(|_| f.pings().0 > pongs_after))
        .await
        .expect("a pong with the new config");
    // Retryable refusals from now on; the connection drops.
    fake.refuse_endpoint(Some((1000040343, "internal error")));
    let before = fake.endpoint_requests();
    fake.drop_ws();
    assert!(stops(&mut intake).await, "the client kept retrying");
    assert_eq!(
        fake.endpoint_requests() - before,
        1,
        "one try, as the pong said (the endpoint said for ever)"
    );
}

#[tokio::test]
async fn retryable_refusals_are_retried_until_they_stop() {
    let fake = FakeFeishu::start().await;
    fake.set_client_config(120, -1, 0, 0);
    let (mut intake, _) = connected(&fake).await;
    fake.refuse_endpoint(Some((1, "system busy")));
    fake.drop_ws();
    fake.wait_until(WAIT, |f| Some(()).filter(|_| f.endpoint_requests() >= 4))
        .await
        .expect("retried");
    fake.refuse_endpoint(None);
    assert!(fake.wait_connected(2, WAIT).await, "reconnected");
    let pushed = fake.push_message("oc_1", "ou_alice", "/gsd:progress");
    let IntakeEvent::MessageReceived(m) = next_event(&mut intake).await else {
        panic!("expected a message")
    };
    assert_eq!(m.message_id, pushed.message_id);
}

#[tokio::test]
async fn a_514_handshake_is_retried_unless_it_says_too_many_connections() {
    let fake = FakeFeishu::start().await;
    // Retry for ever, without waits, as the endpoint says.
    fake.set_client_config(120, -1, 0, 0);
    // 514 with another auth code: the SDKs retry (a server-side failure).
    fake.refuse_handshake(Some((514, 1000040343, "auth failed, try again")));
    let mut intake = Intake::long_connection(fake.config(), Arc::new(MemoryDedupe::default()));
    fake.wait_until(WAIT, |f| Some(()).filter(|_| f.endpoint_requests() >= 3))
        .await
        .expect("a 514 is retried");
    fake.refuse_handshake(None);
    assert!(
        fake.wait_connected(1, WAIT).await,
        "connected once accepted"
    );
    let pushed = fake.push_message("oc_1", "ou_alice", "/gsd:progress");
    let IntakeEvent::MessageReceived(m) = next_event(&mut intake).await else {
        panic!("expected a message")
    };
    assert_eq!(m.message_id, pushed.message_id);
    drop(intake);

    // 514 with 1000040350 (too many connections): final, one try.
    let fake = FakeFeishu::start().await;
    fake.set_client_config(120, -1, 0, 0);
    fake.refuse_handshake(Some((514, 1000040350, "exceed conn limit")));
    let mut intake = Intake::long_connection(fake.config(), Arc::new(MemoryDedupe::default()));
    assert!(stops(&mut intake).await, "the client kept going");
    assert_eq!(fake.endpoint_requests(), 1);
    let why = intake.ended().expect("why it stopped");
    assert!(
        why.contains("1000040350") && why.contains("too many long connections"),
        "{why}"
    );
}

#[tokio::test]
async fn an_unknown_endpoint_code_is_final_as_in_the_sdks() {
    let fake = FakeFeishu::start().await;
    fake.refuse_endpoint(Some((1000040999, "something new")));
    let mut intake = Intake::long_connection(fake.config(), Arc::new(MemoryDedupe::default()));
    assert!(
        stops(&mut intake).await,
        "the client retried an unknown code"
    );
    assert_eq!(fake.endpoint_requests(), 1);
    assert!(intake.ended().is_some_and(|w| w.contains("1000040999")));
}

#[tokio::test]
async fn a_close_frame_from_the_server_is_answered_then_the_client_reconnects() {
    let fake = FakeFeishu::start().await;
    fake.set_client_config(120, -1, 0, 0);
    let (mut intake, _) = connected(&fake).await;
    fake.close_ws();
    let answered = fake
        .wait_until(WAIT, |f| Some(()).filter(|_| f.closes() == (1, 1)))
        .await;
    assert!(
        answered.is_some(),
        "closes (sent, answered): {:?}",
        fake.closes()
    );
    assert!(fake.wait_connected(2, WAIT).await, "reconnected");
    let pushed = fake.push_message("oc_1", "ou_alice", "/gsd:progress");
    let IntakeEvent::MessageReceived(m) = next_event(&mut intake).await else {
        panic!("expected a message")
    };
    assert_eq!(m.message_id, pushed.message_id);
}
