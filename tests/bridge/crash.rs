//! `clawmux serve` killed with SIGKILL while an approval is pending and the
//! outbox holds cards that Feishu refused, then started again: nothing is
//! lost and nothing is sent twice.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use clawmux::store::state::OutboxEntry;

use crate::support::bridge::until;
use crate::support::fake_feishu::{FakeFeishu, Kind, Recorded};
use crate::support::tmux::TmuxServer;

const WAIT: Duration = Duration::from_secs(20);

/// The daemon process, killed on drop.
pub struct Serve(pub Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn serve(home: &Path, fake: &FakeFeishu) -> Serve {
    let config = fake.config();
    let log = std::fs::File::options()
        .create(true)
        .append(true)
        .open(home.join("serve.log"))
        .unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_clawmux"))
        .arg("serve")
        .env("CLAWMUX_HOME", home)
        .env("FEISHU_APP_ID", &config.app_id)
        .env("FEISHU_APP_SECRET", &config.app_secret)
        .env("FEISHU_DOMAIN", fake.base_url())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("clawmux runs");
    Serve(child)
}

pub fn write_config(home: &Path, socket: &str) {
    write_config_for(home, socket, &["oc_1", "oc_fake"]);
}

/// The daemon's config file, allowing these group chats.
pub fn write_config_for(home: &Path, socket: &str, chats: &[&str]) {
    let chats: Vec<String> = chats.iter().map(|c| format!("{c:?}")).collect();
    let config = format!(
        r#"workspace_root = "{ws}"
[tmux]
socket = "{socket}"
width = 120
height = 40
[agent]
command = "sim"
[progress]
interval_secs = 1
[policy]
dm_policy = "allowlist"
allow_from = ["ou_alice"]
group_policy = "allowlist"
group_allow_from = [{chats}]
approvers = ["ou_alice"]
rate_per_minute = 600
"#,
        ws = home.join("ws").display(),
        chats = chats.join(", ")
    );
    std::fs::write(home.join("config.toml"), config).unwrap();
}

async fn card(
    fake: &FakeFeishu,
    home: &Path,
    what: &str,
    pred: impl Fn(&Recorded) -> bool,
) -> Recorded {
    match fake.wait_for_card(&pred, WAIT).await {
        Some(c) => c,
        None => {
            let log = std::fs::read_to_string(home.join("serve.log")).unwrap_or_default();
            panic!(
                "no card {what}; sent:\n{}\nserve log:\n{log}",
                fake.listing()
            )
        }
    }
}

/// New cards (not updates of a card) whose text holds `needle`.
/// Cards sent holding `needle`, patches and the streamed answer card aside
/// (whether a turn's answer streams before its result is a matter of
/// timing: a loaded machine streams a 0 s turn's answer too).
fn count(fake: &FakeFeishu, needle: &str) -> usize {
    fake.sent_cards()
        .iter()
        .filter(|c| c.kind != Kind::Patch && !c.title().starts_with("Answer: "))
        .filter(|c| c.card_text().contains(needle))
        .count()
}

/// The texts of the cards in the outbox, as the state on disk has them.
fn outbox(home: &Path) -> Vec<String> {
    let state = crate::support::state::read(home);
    let entries = state["outbox"].as_array().cloned().unwrap_or_default();
    entries
        .iter()
        .filter_map(|e| {
            serde_json::from_value::<OutboxEntry>(e.clone())
                .ok()?
                .message
        })
        .map(|m| m.to_text())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_with_a_pending_approval_and_a_full_outbox() {
    let fake = FakeFeishu::start().await;
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    write_config(home, &tmux.socket);

    let daemon = serve(home, &fake);
    assert!(fake.wait_connected(1, WAIT).await, "long connection up");
    fake.push_message("oc_1", "ou_alice", "/gsd:new-project demo");
    card(&fake, home, "first result", |c| {
        c.card_text().contains("You said: /gsd:new-project")
    })
    .await;
    fake.push_message("oc_1", "ou_alice", "/gsd:plan-phase 2");
    let approval = card(&fake, home, "approval", |c| c.title() == "Approval needed").await;

    // Feishu goes down; the next command's cards pile up in the outbox.
    fake.fail_for(Duration::from_secs(600));
    fake.push_message("oc_1", "ou_alice", "held while down");
    let queued = || {
        outbox(home)
            .iter()
            .any(|t| t.contains("number 1 in the queue"))
    };
    until(queued, "the queued card in the outbox").await;
    drop(daemon); // SIGKILL

    fake.fail_for(Duration::ZERO);
    let _daemon = serve(home, &fake);
    assert!(fake.wait_connected(2, WAIT).await, "reconnected");
    card(&fake, home, "the held card", |c| {
        c.card_text().contains("number 1 in the queue")
    })
    .await;

    let yes = approval
        .card
        .pointer("/body/elements/1/columns/0/elements/0/behaviors/0/value")
        .cloned()
        .expect("Yes button");
    let answer = fake
        .push_card_action("ou_alice", &approval.message_id, yes)
        .await
        .expect("ack");
    assert_eq!(answer["toast"]["type"], "success", "{answer}");
    card(&fake, home, "plan result", |c| {
        c.card_text().contains("Created 2 plans for phase 2")
    })
    .await;
    card(&fake, home, "queued result", |c| {
        c.card_text().contains("You said: held while down")
    })
    .await;

    for needle in [
        "number 1 in the queue",
        "Created 2 plans for phase 2",
        "You said: held while down",
    ] {
        let all: Vec<String> = fake
            .sent_cards()
            .iter()
            .map(|c| format!("{:?} {}: {}", c.kind, c.title(), c.card_text()))
            .collect();
        assert_eq!(
            count(&fake, needle),
            1,
            "{needle:?} delivered once:\n{}",
            all.join("\n----\n")
        );
    }
    until(|| outbox(home).is_empty(), "the outbox drains").await;
}
