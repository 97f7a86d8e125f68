//! How long an idle chat's card waits while other chats have a backlog,
//! against the local Feishu server with the real courier and its pacing
//! (5 sends a second per chat, 50 for the app): 500 messages for 20 busy
//! chats arrive over 10 s, each making the cards a command makes (its
//! "Running" card, an update of it, its result); half way, one card (a
//! `/gsd:status` answer) for a chat that sent nothing. Measured with chats served in turn and,
//! as the baseline in the same run, with the one queue the outbox had
//! before (oldest first, whatever the chat).
//!
//! `cargo bench --bench outbox_fairness` (env `CLAWMUX_FAIR_MESSAGES`,
//! default 500).

#[path = "../tests/feishu/fake_server.rs"]
#[allow(unused_imports)] // a test fixture: the bench uses part of it
mod fake_server;

use std::time::Duration;

use clawmux::bridge::channels::feishu as feishu_channel;
use clawmux::bridge::channels::outbox::{self, Order};
use clawmux::bridge::config::Config;
use clawmux::bridge::present;
use clawmux::store::SharedState;
use clawmux::store::state::{ChatTarget, OutboxEntry, OutboxOp};
use fake_server::FakeFeishu;
use tokio::sync::mpsc;
use tokio::time::Instant;

const BUSY_CHATS: usize = 20;
const SPREAD: Duration = Duration::from_secs(10);
/// Longest one run may take (the baseline drains the whole backlog).
const RUN_LIMIT: Duration = Duration::from_secs(240);

/// Cards one message makes: its card, an update of it, its result.
const CARDS_PER_MESSAGE: usize = 3;

fn messages() -> usize {
    std::env::var("CLAWMUX_FAIR_MESSAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500)
}

fn card_to(chat: &str, uuid: String, text: &str) -> OutboxEntry {
    let card = present::info_card("Status", text);
    OutboxEntry {
        op: OutboxOp::Send {
            target: ChatTarget::Chat { id: chat.into() },
            handle: format!("h-{uuid}").into(),
            reply_to: None,
            image: None,
        },
        uuid,
        card: serde_json::to_value(&card).unwrap_or_default(),
        text: card.to_text(),
        created_ms: 0,
    }
}

/// One run: how long the idle chat's card took, and how long all took.
async fn run(order: Order, n: usize) -> (Duration, Duration) {
    let fake = FakeFeishu::start().await;
    let home = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
    let mut config = Config::parse("").unwrap_or_else(|e| panic!("defaults: {e:?}"));
    config.feishu.domain = fake.base_url();
    config.feishu.app_id = Some(fake.config().app_id);
    config.feishu.app_secret = Some(fake.config().app_secret);
    let (shared, _) = SharedState::open(home.path()).unwrap_or_else(|e| panic!("state: {e}"));
    let (chat_tx, _chat_rx) = mpsc::channel(64);
    let (courier, intake) =
        feishu_channel::start(&config, &shared, home.path(), chat_tx, Default::default())
            .await
            .unwrap_or_else(|e| panic!("feishu channel: {e}"));
    let delivery = tokio::spawn(outbox::run_in(shared.clone(), courier, order));

    let start = Instant::now();
    let gap = SPREAD / u32::try_from(n).unwrap_or(u32::MAX).max(1);
    let mut asked = None;
    for i in 0..n {
        let chat = format!("oc_busy{}", i % BUSY_CHATS);
        let running = card_to(&chat, format!("b{i}"), "Running…");
        let mut update = card_to(&chat, format!("u{i}"), "50%");
        update.op = OutboxOp::Patch {
            handle: running.op.handle().clone(),
        };
        let result = card_to(&chat, format!("r{i}"), "Finished");
        shared.update(|s| s.outbox.extend([running, update, result]));
        if i == n / 2 {
            let idle = card_to("oc_idle", "idle".into(), "idle-status: nothing running");
            shared.update(|s| s.outbox.push_back(idle));
            asked = Some(Instant::now());
        }
        tokio::time::sleep_until(start + gap * u32::try_from(i + 1).unwrap_or(u32::MAX)).await;
    }
    let asked = asked.unwrap_or(start);
    let answered = fake
        .wait_for_card(
            &|c: &fake_server::Recorded| c.card_text().contains("idle-status"),
            RUN_LIMIT,
        )
        .await
        .unwrap_or_else(|| panic!("the idle chat's card never came"));
    let deadline = Instant::now() + RUN_LIMIT;
    while shared.read(|s| !s.outbox.is_empty()) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let all = start.elapsed();
    delivery.abort();
    intake.abort();
    (answered.at.saturating_duration_since(asked), all)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let n = messages();
    let (fair, fair_all) = run(Order::Fair, n).await;
    let (queue, queue_all) = run(Order::OneQueue, n).await;
    println!(
        "{n} messages ({} cards) for {BUSY_CHATS} chats over {} s, one card for an idle chat half way:",
        n * CARDS_PER_MESSAGE,
        SPREAD.as_secs()
    );
    println!(
        "  chats in turn:   idle chat's card after {:>7.0} ms (all delivered in {:.1} s)",
        fair.as_secs_f64() * 1e3,
        fair_all.as_secs_f64()
    );
    println!(
        "  one queue (baseline): after {:>7.0} ms (all delivered in {:.1} s)",
        queue.as_secs_f64() * 1e3,
        queue_all.as_secs_f64()
    );
    println!(
        "ratio baseline / chats in turn: {:.1}x sooner",
        queue.as_secs_f64() / fair.as_secs_f64().max(1e-3)
    );
}
