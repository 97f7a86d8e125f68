//! The soak run (not in CI; `scripts/soak.sh`): `clawmux serve` against the
//! local Feishu server, five projects of the simulated agent doing commands
//! with approvals at once, round after round. Checks that every command got
//! its approval, resolved and result cards, and that the daemon's memory
//! stays flat.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::crash::{serve, write_config_for};
use crate::support::fake_feishu::{FakeFeishu, Kind};
use crate::support::tmux::TmuxServer;

const PROJECTS: usize = 5;
const ROUND_WAIT: Duration = Duration::from_secs(60);

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn subtitle(card: &Value) -> &str {
    card["header"]["subtitle"]["content"].as_str().unwrap_or("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long: run with scripts/soak.sh (CLAWMUX_SOAK_SECS, default 3600)"]
async fn soak_five_projects_with_approvals() {
    let secs: u64 = std::env::var("CLAWMUX_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3600);
    let fake = FakeFeishu::start().await;
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let chats: Vec<String> = (0..PROJECTS).map(|i| format!("oc_{i}")).collect();
    let mut allowed: Vec<&str> = chats.iter().map(String::as_str).collect();
    allowed.push("oc_fake");
    write_config_for(home, &tmux.socket, &allowed);
    let daemon = serve(home, &fake);
    let pid = daemon.0.id();
    assert!(fake.wait_connected(1, ROUND_WAIT).await);

    for (i, chat) in chats.iter().enumerate() {
        fake.push_message(chat, "ou_alice", &format!("/gsd:new-project p{i}"));
    }
    for i in 0..PROJECTS {
        let ready = format!("p{i}: /gsd:new-project");
        let got = fake
            .wait_for_card(
                |c| {
                    c.kind != Kind::Patch
                        && c.title() == ready
                        && c.card_text().contains("You said")
                },
                ROUND_WAIT,
            )
            .await;
        assert!(got.is_some(), "project p{i} started");
    }

    let started = Instant::now();
    let (mut rounds, mut samples) = (0u32, Vec::new());
    while started.elapsed() < Duration::from_secs(secs) {
        rounds += 1;
        // This round's cards come after these.
        let from = fake.recorded_count();
        for (i, chat) in chats.iter().enumerate() {
            fake.push_message(
                chat,
                "ou_alice",
                &format!("/gsd:plan-phase {}", rounds * 10 + i as u32),
            );
        }
        for i in 0..PROJECTS {
            let phase = rounds * 10 + i as u32;
            let wanted = format!("p{i} · ");
            let approval = fake
                .wait_for_card_from(
                    from,
                    |c| {
                        c.kind != Kind::Patch
                            && c.title() == "Approval needed"
                            && subtitle(&c.card).starts_with(&wanted)
                            && c.card_text().contains("Do you want to proceed?")
                    },
                    ROUND_WAIT,
                )
                .await
                .unwrap_or_else(|| {
                    let log =
                        std::fs::read_to_string(home.join("events.jsonl")).unwrap_or_default();
                    let tail: Vec<&str> = log
                        .lines()
                        .filter(|l| !l.contains("\"card\""))
                        .rev()
                        .take(40)
                        .collect();
                    let screen = tmux.capture(&format!("=cm-p{i}:"));
                    panic!(
                        "round {rounds}: approval for p{i}; screen:\n{screen}\nlog tail:\n{}",
                        tail.join("\n")
                    )
                });
            let yes = approval
                .card
                .pointer("/body/elements/1/columns/0/elements/0/behaviors/0/value")
                .cloned()
                .unwrap();
            let answer = fake
                .push_card_action("ou_alice", &approval.message_id, yes)
                .await
                .expect("ack");
            assert_eq!(
                answer["toast"]["type"], "success",
                "round {rounds} p{i}: {answer}"
            );
            let done = format!("Created 2 plans for phase {phase}");
            let result = fake
                .wait_for_card_from(
                    from,
                    |c| c.kind != Kind::Patch && c.card_text().contains(&done),
                    ROUND_WAIT,
                )
                .await;
            assert!(result.is_some(), "round {rounds}: result for p{i}");
        }
        samples.push((started.elapsed().as_secs(), rss_kib(pid)));
        if rounds % 10 == 0 {
            println!(
                "{:>5}s round {rounds}: serve RSS {} KiB, cards so far {}",
                started.elapsed().as_secs(),
                rss_kib(pid),
                fake.recorded_count()
            );
        }
    }

    // Memory flat: the last quarter's peak within 20% (+4 MiB) of the
    // first quarter's peak, after the first rounds' warm-up.
    let quarter = (samples.len() / 4).max(1);
    let first = samples.iter().take(quarter).map(|s| s.1).max().unwrap_or(0);
    let last = samples
        .iter()
        .rev()
        .take(quarter)
        .map(|s| s.1)
        .max()
        .unwrap_or(0);
    println!(
        "{rounds} rounds x {PROJECTS} projects in {secs}s; RSS first quarter peak {first} KiB, last quarter peak {last} KiB"
    );
    assert!(
        last <= first + first / 5 + 4096,
        "memory grew: {first} KiB -> {last} KiB"
    );
    assert_eq!(
        fake.duplicate_uuids(),
        Vec::<String>::new(),
        "no card sent twice"
    );
}
