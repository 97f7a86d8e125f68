//! The bridge's own latency with the local Feishu server (run on demand:
//! `cargo test --release --test tests bridge::latency -- --ignored --nocapture`):
//! from a chat message to its keys in the pane, and from the agent's prompt
//! to the approval card request leaving clawmux. A second control client
//! watches the pane to time what the pane shows.

use std::time::Duration;

use tokio::time::Instant;

use clawmux::tmux::{self, ClientConfig, ClientEvent, Socket};

use super::feishu_e2e::{feishu_config, start};
use crate::feishu::fake_server::FakeFeishu;
use crate::support::tmux::TmuxServer;

const SAMPLES: usize = 30;
const WAIT: Duration = Duration::from_secs(20);

/// Waits until the observed pane output contains `needle`; when it arrived.
async fn seen(events: &mut tmux::Subscription, buf: &mut String, needle: &str) -> Instant {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if let Some(at) = buf.find(needle) {
            buf.drain(..at + needle.len());
            return Instant::now();
        }
        match tokio::time::timeout_at(deadline, events.recv()).await {
            Ok(Some(ClientEvent::Output { data, .. })) => {
                buf.push_str(&String::from_utf8_lossy(&data))
            }
            Ok(Some(_)) => {}
            _ => panic!("{needle:?} never appeared in the pane"),
        }
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: run with --ignored --nocapture (release build)"]
async fn chat_to_keys_and_prompt_to_card() {
    let fake = FakeFeishu::start().await;
    let server = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let config = feishu_config(&server, home.path(), &fake);
    let _live = start(&config, home.path()).await;
    assert!(fake.wait_connected(1, WAIT).await);
    fake.push_message("oc_1", "ou_alice", "/gsd:new-project demo");
    fake.wait_for_card(
        |c| c.card_text().contains("You said: /gsd:new-project"),
        WAIT,
    )
    .await
    .expect("project");

    let mut observer = ClientConfig::attach(Some("=cm-demo"));
    observer.socket = Some(Socket::Name(server.socket.clone()));
    let observer = tmux::connect(observer).await.expect("observer attaches");
    let mut events = observer.subscribe();
    let mut buf = String::new();

    let (mut to_keys, mut to_card) = (Vec::new(), Vec::new());
    for n in 0..SAMPLES {
        let text = format!("/gsd:plan-phase {}", 100 + n);
        let sent = Instant::now();
        fake.push_message("oc_1", "ou_alice", &text);
        to_keys.push(seen(&mut events, &mut buf, &text).await - sent);
        let prompt = seen(&mut events, &mut buf, "Do you want to proceed?").await;
        let phase = format!("make build-check-phase-{}", 100 + n);
        let card = fake
            .wait_for_card(
                |c| c.title() == "Approval needed" && c.card_text().contains(&phase),
                WAIT,
            )
            .await
            .or_else(|| {
                let all = fake.sent_cards();
                all.into_iter()
                    .rev()
                    .find(|c| c.title() == "Approval needed")
            })
            .expect("approval card");
        to_card.push(card.at.saturating_duration_since(prompt));
        let yes = card
            .card
            .pointer("/body/elements/1/columns/0/elements/0/behaviors/0/value")
            .cloned()
            .unwrap();
        fake.push_card_action("ou_alice", &card.message_id, yes)
            .await
            .expect("ack");
        let done = format!("Created 2 plans for phase {}", 100 + n);
        fake.wait_for_card(
            |c| c.title().starts_with("demo: /gsd:plan-phase") && c.card_text().contains(&done),
            WAIT,
        )
        .await
        .expect("result");
    }
    to_keys.sort();
    to_card.sort();
    for (what, v) in [
        ("chat message -> keys in the pane", &to_keys),
        ("agent prompt -> approval card request", &to_card),
    ] {
        println!(
            "{what}: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms ({SAMPLES} samples)",
            percentile(v, 0.5).as_secs_f64() * 1e3,
            percentile(v, 0.99).as_secs_f64() * 1e3,
            v[v.len() - 1].as_secs_f64() * 1e3
        );
    }
    assert_eq!((to_keys.len(), to_card.len()), (SAMPLES, SAMPLES));
}
