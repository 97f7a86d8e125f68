//! The bridge's own latency with the local Feishu server (run on demand:
//! `cargo test --release --test tests bridge::latency -- --ignored --nocapture`):
//! from a chat message to its keys in the pane, and from the agent's prompt
//! to the approval card request leaving clawmux. A second control client
//! watches the pane to time what the pane shows.

use std::time::Duration;

use tokio::time::Instant;

use clawmux::bridge::config::ProjectConfig;
use clawmux::tmux::{self, ClientConfig, ClientEvent, Socket};

use crate::support::fake_feishu::{FakeFeishu, Recorded};
use crate::support::feishu_serve::{feishu_config, start};
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

/// A second control client on `session`, to see what the pane shows.
async fn observe(server: &TmuxServer, session: &str) -> tmux::Subscription {
    let mut observer = ClientConfig::attach(Some(session));
    observer.socket = Some(Socket::Name(server.socket.clone()));
    let client = tmux::connect(observer).await.expect("observer attaches");
    let events = client.subscribe();
    // The subscription outlives this handle; the client ends with the test.
    std::mem::forget(client);
    events
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
    let mut config = feishu_config(&server, home.path(), &fake);
    // Keys are timed in a shell, whose line editor echoes every key as it
    // arrives (the simulated agent draws its input box on its own schedule).
    let shell = ProjectConfig {
        agent: Some("bash --norc --noprofile".into()),
        profile: Some("shell".into()),
        ..Default::default()
    };
    config.projects.insert("keys".into(), shell);
    config.policy.rate_per_minute = 1000;
    let _live = start(&config, home.path()).await;
    assert!(fake.wait_connected(1, WAIT).await);
    fake.push_message("oc_1", "ou_alice", "/gsd:new-project keys");
    let ready =
        |c: &Recorded| c.title() == "keys: /gsd:new-project" && c.card_text().contains("```");
    fake.wait_for_card(ready, WAIT).await.expect("shell ready");
    let mut keys = observe(&server, "=cm-keys").await;
    let mut buf = String::new();
    let mut to_keys = Vec::new();
    for n in 0..SAMPLES {
        let text = format!("echo key-{n}");
        let sent = Instant::now();
        fake.push_message("oc_1", "ou_alice", &text);
        to_keys.push(seen(&mut keys, &mut buf, &text).await - sent);
        let title = format!("keys: {text}");
        fake.wait_for_card(
            |c| c.title() == title && c.card_text().contains("```"),
            WAIT,
        )
        .await
        .expect("echoed");
    }

    fake.push_message("oc_1", "ou_alice", "/gsd:new-project demo");
    fake.wait_for_card(
        |c| c.card_text().contains("You said: /gsd:new-project"),
        WAIT,
    )
    .await
    .expect("project");
    let mut events = observe(&server, "=cm-demo").await;
    let mut to_card = Vec::new();
    for n in 0..SAMPLES {
        let text = format!("/gsd:plan-phase {}", 100 + n);
        fake.push_message("oc_1", "ou_alice", &text);
        let prompt = seen(&mut events, &mut buf, "Do you want to proceed?").await;
        // The n-th approval card of the run is this command's.
        let card = fake
            .wait_until(WAIT, |f| {
                let mut approvals = f
                    .sent_cards()
                    .into_iter()
                    .filter(|c| c.title() == "Approval needed");
                approvals.nth(n)
            })
            .await
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
