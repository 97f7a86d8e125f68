//! Pairing under attack (issue 48): a stranger flooding the bot over the
//! local Feishu server gets one pairing card, and many `clawmux pairing
//! approve` processes run at once (the real binary) all keep their
//! approval. Each test names the code that makes it pass.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::Duration;

use clawmux::bridge::access::pairing::{Pairing, PendingPairing};
use clawmux::bridge::access::refusals::MAX_REFUSALS_PER_WINDOW;
use clawmux::bridge::config::DmPolicy;
use serde_json::json;

use crate::support::fake_feishu::{FakeFeishu, Kind, message_event};
use crate::support::feishu_serve::{card, feishu_config, start};
use crate::support::tmux::TmuxServer;

/// How long the local Feishu server's side waits for the connection.
const WAIT: Duration = Duration::from_secs(60);

/// A direct (`p2p`) message from `sender` in chat `chat`, with event and
/// message ids of its own (`om_<name>`), pushed; its message id and the
/// frame it went in.
fn push_direct(
    fake: &FakeFeishu,
    chat: &str,
    sender: &str,
    name: &str,
    text: &str,
) -> (String, String) {
    let message_id = format!("om_{name}");
    let mut payload = message_event(&format!("ev_{name}"), &message_id, chat, sender, text);
    payload["event"]["message"]["chat_type"] = json!("p2p");
    payload["event"]["message"]["mentions"] = json!([]);
    payload["event"]["message"]["content"] = json!(json!({ "text": text }).to_string());
    let frame = fake.push_payload("event", &payload, 1);
    (message_id, frame)
}

/// Item 5: 40 messages from a stranger under `dm_policy = "pairing"`, in
/// one burst: the local Feishu server receives one pairing card, not 40
/// (each spends the app's send quota, which every chat shares); the
/// stranger's lines in the log are its refusal window's few.
///
/// Passes by `Core::pair` (`src/bridge/core/admission.rs`: a card only
/// for a new code, each message counted by `refusal_counted` in
/// `access::refusals`); without it every message is answered with a card.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_from_a_stranger_gets_one_pairing_card() {
    const FLOOD: usize = 40;
    let fake = FakeFeishu::start().await;
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().expect("temp dir");
    let mut config = feishu_config(&tmux, home.path(), &fake);
    config.policy.dm_policy = DmPolicy::Pairing;
    let _live = start(&config, home.path()).await;
    assert!(fake.wait_connected(1, WAIT).await, "long connection up");

    let (flood, frames): (Vec<String>, Vec<String>) = (0..FLOOD)
        .map(|i| push_direct(&fake, "oc_dm", "ou_stranger", &format!("flood_{i}"), "hi"))
        .unzip();
    // Each frame is taken on its own task: once all are acknowledged, all
    // are queued for the daemon. An allowed sender's message in the same
    // chat after them is handled after them, and a chat's cards go in
    // order: once its answer is here, every card for the flood went first.
    for frame in &frames {
        fake.wait_ack(frame, WAIT).await.expect("acknowledged");
    }
    let (after, _) = push_direct(&fake, "oc_dm", "ou_alice", "after", "/gsd:help");
    card(&fake, "the answer after the flood", |c| c.target == after).await;

    let answers: Vec<_> = (fake.sent_cards().into_iter())
        .filter(|c| c.kind == Kind::Reply && flood.contains(&c.target))
        .collect();
    assert_eq!(answers.len(), 1, "cards for the flood:\n{}", fake.listing());
    assert!(
        answers[0].card_text().contains("pairing code"),
        "{}",
        answers[0].card_text()
    );
    let log = clawmux::store::log_read::read_all(home.path()).expect("log reads");
    let stranger_lines = (log.records.iter())
        .filter(|r| r.fields.get("sender").and_then(|s| s.as_str()) == Some("ou_stranger"))
        .count();
    assert_eq!(stranger_lines, MAX_REFUSALS_PER_WINDOW as usize);
}

/// Item 8: 33 `clawmux pairing approve` processes started at once, each
/// approving its own code: each says it approved, and every approval is
/// in `allowed.json` afterwards.
///
/// Passes by the lock `Pairing::approve` holds around its read, change and
/// write of `allowed.json` (`StateFile::lock`) and each save's own temp
/// file (`StateFile::temp`, `crates/store/src/state_file.rs`); without them
/// approvals printed "approved" and were lost (9 of 33 once).
#[test]
fn approvals_run_at_once_are_all_kept() {
    const APPROVALS: usize = 33;
    let home = tempfile::tempdir().expect("temp dir");
    let pairing = Pairing::new(home.path());
    let now = clawmux::store::clock::now_ms();
    let mut codes = BTreeMap::new();
    for i in 0..APPROVALS {
        let (code, sender) = (format!("CODE{i:04}"), format!("ou_{i}"));
        let pending = PendingPairing {
            open_id: sender.clone(),
            created_ms: now,
        };
        pairing.save_pending(&code, pending).expect("code kept");
        codes.insert(code, sender);
    }
    let runs: Vec<_> = (codes.keys())
        .map(|code| {
            Command::new(env!("CARGO_BIN_EXE_clawmux"))
                .args(["pairing", "approve", code])
                .env("CLAWMUX_HOME", home.path())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("clawmux runs")
        })
        .collect();
    for (run, code) in runs.into_iter().zip(codes.keys()) {
        let out = run.wait_with_output().expect("it ends");
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && said.contains("approved"),
            "{code}: {said}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut allowed = pairing.allowed().expect("allowed.json reads");
    allowed.sort();
    let mut wanted: Vec<String> = codes.into_values().collect();
    wanted.sort();
    assert_eq!(allowed, wanted, "approvals lost");
    assert!(pairing.pending().expect("pending reads").is_empty());
    let left: Vec<_> = (std::fs::read_dir(home.path()).expect("the home lists"))
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains(".tmp"))
        .collect();
    assert_eq!(left, Vec::<String>::new(), "temp files left");
}
