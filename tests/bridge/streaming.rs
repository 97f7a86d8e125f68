//! The running turn's answer streamed into a CardKit card, against the
//! local Feishu server: typed in while the agent writes it, closed once
//! with the result's own text, the result card unchanged; through CardKit
//! 5xx/429 and applied-then-failed answers, a CardKit that refuses the card
//! (a patched plain card instead), and `clawmux serve` killed with SIGKILL
//! mid-stream. Each case ends with exactly one answer card, closed once.
//! And as Feishu really behaves: an answer outliving the streaming
//! lifetime (shortened to 2 s), a CardKit whose element updates all fail,
//! and one chat's card rate-limited for 30 s, or its create hung for 30 s,
//! beside another chat's.

use std::path::Path;
use std::time::Duration;

use clawmux::bridge::channels::streaming;

use super::crash::Serve;
use crate::support::fake_feishu::{CardFault, Entity, FakeFeishu, Kind, Recorded};
use crate::support::feishu_serve::{card, feishu_config, start_with};
use crate::support::tmux::TmuxServer;

const WAIT: Duration = Duration::from_secs(30);

/// A sim-agent script whose answer comes a line at a time, the agent busy
/// (its spinner up) in between.
const SLOW_ANSWER: &str = "\
on *
  spin 200 Thinking…
  say ● Streaming answer to $input, line one
  spin 900 Writing…
  say   line two of the answer to $input
  spin 900 Writing…
  say   line three of the answer to $input
  spin 900 Writing…
  say   The end of: $input
";

/// Like [`SLOW_ANSWER`], but writing for about 5 s: longer than two of
/// the shortened streaming lifetimes.
const LONG_ANSWER: &str = "\
on *
  spin 200 Thinking…
  say ● Streaming answer to $input, line one
  spin 1700 Writing…
  say   line two of the answer to $input
  spin 1700 Writing…
  say   line three of the answer to $input
  spin 1700 Writing…
  say   The end of: $input
";

fn agent_command(home: &Path) -> String {
    agent_command_for(home, SLOW_ANSWER)
}

fn agent_command_for(home: &Path, script: &str) -> String {
    let path = home.join("slow.sim");
    std::fs::write(&path, script).unwrap();
    format!(
        "{} sim-agent --script {}",
        env!("CARGO_BIN_EXE_clawmux"),
        path.display()
    )
}

/// Waits until some entity satisfies `pred`.
async fn entity(fake: &FakeFeishu, what: &str, pred: impl Fn(&Entity) -> bool) -> Entity {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if let Some(e) = fake.entities().into_iter().find(|e| pred(e)) {
            return e;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no entity {what}: {:#?}\nsent:\n{}",
            fake.entities(),
            fake.listing()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn answer_text(e: &Entity) -> String {
    e.element_text("answer").unwrap_or_default()
}

/// A new project, ready for commands.
async fn new_project(fake: &FakeFeishu, cardkit: bool) {
    assert!(fake.wait_connected(1, WAIT).await, "long connection up");
    new_project_in(fake, cardkit, "oc_1", "demo", 1).await;
}

/// Project `name` made from chat `chat`, its first turn over: the
/// `n`-th project made in this test.
async fn new_project_in(fake: &FakeFeishu, cardkit: bool, chat: &str, name: &str, n: usize) {
    fake.push_message(chat, "ou_alice", &format!("/gsd:new-project {name}"));
    card(fake, "project ready", |c| {
        c.card_text().contains(&format!("Created **{name}**"))
    })
    .await;
    // Its first turn (the sim answers `/gsd:new-project` too) is over: its
    // result, not a card that only shows the screen (`Not submitted`).
    let first_turn = |c: &Recorded| {
        c.card_text().contains("The end of: /gsd:new-project")
            && !c.card_text().contains("Not submitted")
            && c.card_id.is_none()
            && c.kind != Kind::Patch
    };
    let deadline = tokio::time::Instant::now() + WAIT;
    while fake.sent_cards().iter().filter(|c| first_turn(c)).count() < n {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no first result: {}",
            fake.listing()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    if !cardkit {
        return;
    }
    // And its answer card closed.
    let closed =
        |e: &Entity| !e.streaming && answer_text(e).contains("The end of: /gsd:new-project");
    while fake.entities().iter().filter(|e| closed(e)).count() < n {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no first answer closed: {:#?}",
            fake.entities()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The operations that ended streaming on `e`: settings with streaming
/// off, and full updates.
fn closes(e: &Entity) -> usize {
    e.ops
        .iter()
        .filter(|o| {
            o.kind == "full"
                || (o.kind == "settings" && o.content.contains("\"streaming_mode\":false"))
        })
        .count()
}

/// No message showing an entity was ever patched through `im/v1`, and
/// no error card was sent.
fn assert_no_entity_patch_nor_error(fake: &FakeFeishu) {
    let sent = fake.sent_cards();
    let entity_messages: Vec<&String> = (sent.iter())
        .filter(|c| c.card_id.is_some())
        .map(|c| &c.message_id)
        .collect();
    assert!(
        !sent
            .iter()
            .any(|c| c.kind == Kind::Patch && entity_messages.contains(&&c.message_id)),
        "an entity's message was patched through im/v1: {}",
        fake.listing()
    );
    assert!(
        !sent.iter().any(|c| c.card["header"]["template"] == "red"),
        "an error card: {}",
        fake.listing()
    );
}

/// Waits for an entity made after the ones there now.
async fn new_entity(fake: &FakeFeishu, what: &str, pred: impl Fn(&Entity) -> bool) -> Entity {
    let before: Vec<String> = fake.entities().into_iter().map(|e| e.card_id).collect();
    entity(fake, what, |e| !before.contains(&e.card_id) && pred(e)).await
}

/// What every answer card must be at the end: closed once, its sequence
/// strictly growing, no operation over Feishu's rate, its final text the
/// result card's answer, shown by one message; and one result card.
fn assert_exactly_one_final(fake: &FakeFeishu, needle: &str) {
    let entities: Vec<Entity> = fake
        .entities()
        .into_iter()
        .filter(|e| answer_text(e).contains(needle))
        .collect();
    assert_eq!(entities.len(), 1, "one answer entity: {entities:#?}");
    let e = &entities[0];
    assert!(!e.streaming, "closed: {e:#?}");
    assert_eq!(closes(e), 1, "closed once: {:#?}", e.ops);
    let seqs: Vec<u32> = e.ops.iter().skip(1).map(|o| o.sequence).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    assert_eq!(e.limited, 0, "no operation over 10/s");
    let shows: Vec<Recorded> = fake
        .sent_cards()
        .into_iter()
        .filter(|c| c.card_id.as_deref() == Some(&e.card_id))
        .collect();
    assert_eq!(shows.len(), 1, "one message shows it: {}", fake.listing());
    let results: Vec<Recorded> = fake
        .sent_cards()
        .into_iter()
        .filter(|c| c.card_id.is_none() && c.kind != Kind::Patch)
        .filter(|c| c.card_text().contains(needle))
        .collect();
    assert_eq!(results.len(), 1, "one result card: {}", fake.listing());
    let final_text = answer_text(e);
    assert!(
        results[0].card_text().contains(final_text.trim()),
        "the answer card ends with the result's text:\n{final_text}\n---\n{}",
        results[0].card_text()
    );
    assert!(final_text.contains("The end of:"), "{final_text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_answer_streams_into_a_card_and_closes_with_the_result() {
    let fake = FakeFeishu::start().await;
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let mut config = feishu_config(&tmux, home.path(), &fake);
    config.agent.command = agent_command(home.path());
    let _live = start_with(&config, home.path(), true).await;
    new_project(&fake, true).await;

    let asked = fake.push_message("oc_1", "ou_alice", "stream please");
    // Typed in while the turn runs: line two shown, the end not yet.
    let mid = new_entity(&fake, "showing line two while streaming", |e| {
        let t = answer_text(e);
        e.streaming && t.contains("line two") && !t.contains("The end of: stream please")
    })
    .await;
    assert!(
        answer_text(&mid).contains("line one"),
        "the whole answer so far"
    );
    let shown = card(&fake, "the answer card", |c| {
        c.card_id.as_deref() == Some(&mid.card_id)
    })
    .await;
    assert_eq!(shown.kind, Kind::Reply, "it answers the command");
    assert_eq!(shown.target, asked.message_id);
    assert_eq!(shown.title(), "Answer: demo: stream please");

    entity(&fake, "closed", |e| {
        e.card_id == mid.card_id && !e.streaming
    })
    .await;
    card(&fake, "the result", |c| {
        c.card_id.is_none() && c.card_text().contains("The end of: stream please")
    })
    .await;
    assert_exactly_one_final(&fake, "The end of: stream please");
    // The result card's footer: the turn's duration (the sim agent reports
    // no tokens, cost or context, so none are shown).
    let result = card(&fake, "the result", |c| {
        c.card_id.is_none() && c.card_text().contains("The end of: stream please")
    })
    .await;
    let text = result.card_text();
    let footer = text.lines().last().unwrap_or_default();
    assert!(
        footer.starts_with("⏱ ") && footer.ends_with(" s") && !footer.contains("tokens"),
        "{text}"
    );
    let e = fake.entity(&mid.card_id).unwrap();
    let texts = e.ops.iter().filter(|o| o.kind == "content").count();
    assert!(texts >= 2, "the text came in steps: {:#?}", e.ops);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cardkit_5xx_429_and_lost_answers_still_give_one_final_answer() {
    let fake = FakeFeishu::start().await;
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let mut config = feishu_config(&tmux, home.path(), &fake);
    config.agent.command = agent_command(home.path());
    let _live = start_with(&config, home.path(), true).await;
    new_project(&fake, true).await;

    fake.push_message("oc_1", "ou_alice", "through faults");
    let first = new_entity(&fake, "streaming", |e| e.streaming).await;
    // Operations applied but answered 500 (the client cannot know they
    // took), then 500s, then 429s.
    fake.cardkit_fail_after_apply_next(2);
    fake.cardkit_fail_next(2);
    fake.cardkit_rate_limit_next(2);
    entity(&fake, "closed", |e| {
        e.card_id == first.card_id && !e.streaming
    })
    .await;
    assert_eq!(fake.cardkit_faults_left(), (0, 0, 0), "every fault was met");
    card(&fake, "the result", |c| {
        c.card_id.is_none() && c.card_text().contains("The end of: through faults")
    })
    .await;
    assert_exactly_one_final(&fake, "The end of: through faults");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_cardkit_falls_back_to_a_patched_card() {
    let fake = FakeFeishu::start().await;
    fake.refuse_cardkit(Some((99991672, "Access denied: cardkit:card:write")));
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let mut config = feishu_config(&tmux, home.path(), &fake);
    config.agent.command = agent_command(home.path());
    let _live = start_with(&config, home.path(), true).await;
    new_project(&fake, false).await;

    fake.push_message("oc_1", "ou_alice", "no cardkit here");
    let plain = card(&fake, "the plain answer card", |c| {
        c.title() == "Answer: demo: no cardkit here" && c.kind == Kind::Reply
    })
    .await;
    assert!(fake.entities().is_empty(), "no entity was made");
    let last = card(&fake, "its final patch", |c| {
        c.kind == Kind::Patch
            && c.message_id == plain.message_id
            && c.card["header"]["template"] == "green"
    })
    .await;
    let result = card(&fake, "the result", |c| {
        c.kind != Kind::Patch
            && c.title() != "Answer: demo: no cardkit here"
            && c.card_text().contains("The end of: no cardkit here")
    })
    .await;
    assert!(result.card_text().contains(last.card_text().trim()));
    // Settled: no later patch of the answer card.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let patches: Vec<Recorded> = fake
        .sent_cards()
        .into_iter()
        .filter(|c| c.kind == Kind::Patch && c.message_id == plain.message_id)
        .collect();
    let finals = patches
        .iter()
        .filter(|c| c.card["header"]["template"] == "green")
        .count();
    assert_eq!(finals, 1, "one final patch: {}", fake.listing());
    assert!(
        patches.len() as u32 <= streaming::MAX_INTERIM_PATCHES + 1,
        "patches bounded"
    );
}

/// Feishu ends streaming 10 minutes after it was turned on; here after
/// 2 s, while the answer takes 5: `clawmux serve` turns it on again each
/// time (Feishu's answer to 200850) and the card ends on the answer's last
/// line through CardKit, closed once, its message never patched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_outliving_the_streaming_lifetime_ends_on_its_last_line() {
    let fake = FakeFeishu::start().await;
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    write_serve_config_for(home, &tmux.socket, LONG_ANSWER);
    let _daemon = super::crash::serve(home, &fake);
    new_project(&fake, true).await;
    fake.set_streaming_lifetime(Duration::from_secs(2));

    fake.push_message("oc_1", "ou_alice", "outlive it");
    let mid = new_entity(&fake, "streaming", |e| e.streaming).await;
    let result = card(&fake, "the result", |c| {
        c.card_id.is_none() && c.card_text().contains("The end of: outlive it")
    })
    .await;
    let e = entity(&fake, "closed on the last line", |e| {
        e.card_id == mid.card_id && !e.streaming && closes(e) == 1
    })
    .await;
    assert!(
        answer_text(&e)
            .trim_end()
            .ends_with("The end of: outlive it"),
        "{}",
        answer_text(&e)
    );
    let reopens = (e.ops.iter())
        .filter(|o| o.kind == "settings" && o.content.contains("\"streaming_mode\":true"))
        .count();
    assert!(reopens >= 1, "streaming turned on again: {:#?}", e.ops);
    eprintln!(
        "measured: streaming turned on again {reopens} times, {} operations",
        e.ops.len()
    );
    assert!(
        e.ops
            .iter()
            .filter(|o| o.kind == "content")
            .any(|o| o.content.contains("line three")),
        "typed in after a reopen: {:#?}",
        e.ops
    );
    assert!(result.card_text().contains(answer_text(&e).trim()));
    assert_exactly_one_final(&fake, "The end of: outlive it");
    assert_no_entity_patch_nor_error(&fake);
}

/// Every element update failing (5xx) from the first: the card is
/// finalised by one full update soon after the result card, never left
/// "streaming", never patched through `im/v1`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cardkit_outage_ends_in_a_full_update_soon_after_the_result() {
    let fake = FakeFeishu::start().await;
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let mut config = feishu_config(&tmux, home.path(), &fake);
    config.agent.command = agent_command(home.path());
    let _live = start_with(&config, home.path(), true).await;
    new_project(&fake, true).await;

    let outage = Duration::from_secs(600);
    fake.cardkit_fault(None, Some("content"), CardFault::Status(503), outage);
    fake.push_message("oc_1", "ou_alice", "through an outage");
    let mid = new_entity(&fake, "made", |_| true).await;
    let result = card(&fake, "the result", |c| {
        c.card_id.is_none() && c.card_text().contains("The end of: through an outage")
    })
    .await;
    // The deadline counts from the result card: no later than 10 s after
    // it, the card must be final.
    let deadline = result.at + Duration::from_secs(10);
    let e = loop {
        let e = fake.entity(&mid.card_id).unwrap();
        if !e.streaming {
            break e;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "still streaming 10 s after the result: {e:#?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(fake.cardkit_fault_state().0 > 0, "the updates did fail");
    let full: Vec<_> = e.ops.iter().filter(|o| o.kind == "full").collect();
    assert_eq!(full.len(), 1, "one full update: {:#?}", e.ops);
    assert!(full[0].at <= deadline, "final by the deadline");
    eprintln!(
        "measured: the full update {} ms after the result card, after {} failed updates",
        full[0].at.saturating_duration_since(result.at).as_millis(),
        fake.cardkit_fault_state().0
    );
    assert_eq!(e.card["header"]["template"], "green", "shown final");
    assert_exactly_one_final(&fake, "The end of: through an outage");
    assert_no_entity_patch_nor_error(&fake);
}

/// One chat's card rate-limited for 30 s (429, `x-ogw-ratelimit-reset:
/// 30`): another chat's answer card streams and closes while the first is
/// still limited.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_cards_rate_limit_does_not_hold_another_chats_card() {
    let fake = FakeFeishu::start().await;
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let mut config = feishu_config(&tmux, home.path(), &fake);
    config.agent.command = agent_command(home.path());
    let _live = start_with(&config, home.path(), true).await;
    new_project(&fake, true).await;
    new_project_in(&fake, true, "oc_fake", "other", 2).await;

    fake.push_message("oc_1", "ou_alice", "limited one");
    let limited = new_entity(&fake, "the first chat's card", |e| e.streaming).await;
    let limit = Duration::from_secs(30);
    fake.cardkit_fault(Some(&limited.card_id), None, CardFault::RateLimit, limit);
    // The first card hits its limit before the other chat asks.
    let deadline = tokio::time::Instant::now() + WAIT;
    while fake.cardkit_fault_state().0 == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the limited card made no call"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    fake.push_message("oc_fake", "ou_alice", "free two");
    let other = new_entity(&fake, "the other chat's card", |e| {
        answer_text(e).contains("free two")
    })
    .await;
    let closed = entity(&fake, "the other card closed", |e| {
        e.card_id == other.card_id && !e.streaming && closes(e) == 1
    })
    .await;
    let (refused, until) = fake.cardkit_fault_state();
    assert!(
        until.is_some(),
        "the other card closed only after the first card's limit ended"
    );
    assert!(refused >= 1);
    let ends = until.unwrap_or_else(tokio::time::Instant::now);
    eprintln!(
        "measured: the other card closed {:.1} s before the first card's limit ends ({refused} calls refused)",
        ends.saturating_duration_since(tokio::time::Instant::now())
            .as_secs_f64()
    );
    assert!(answer_text(&closed).contains("The end of: free two"));
    assert!(
        fake.entity(&limited.card_id).unwrap().streaming,
        "the limited card waits out its reset"
    );
    assert_no_entity_patch_nor_error(&fake);
}

/// One chat's card entity create hangs for 30 s: another chat's answer
/// card streams and closes while it hangs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_cards_hung_create_does_not_hold_another_chats_card() {
    let fake = FakeFeishu::start().await;
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let mut config = feishu_config(&tmux, home.path(), &fake);
    config.agent.command = agent_command(home.path());
    let _live = start_with(&config, home.path(), true).await;
    new_project(&fake, true).await;
    new_project_in(&fake, true, "oc_fake", "other", 2).await;

    let hang = Duration::from_secs(30);
    fake.cardkit_fault_n(None, Some("create"), CardFault::Hang, hang, Some(1));
    fake.push_message("oc_1", "ou_alice", "hung one");
    let deadline = tokio::time::Instant::now() + WAIT;
    while fake.cardkit_fault_state().0 == 0 {
        assert!(tokio::time::Instant::now() < deadline, "no create hung");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    fake.push_message("oc_fake", "ou_alice", "free three");
    let closed = entity(&fake, "the other card closed", |e| {
        answer_text(e).contains("The end of: free three") && !e.streaming && closes(e) == 1
    })
    .await;
    assert!(
        fake.cardkit_fault_state().1.is_some(),
        "the other card closed only after the hung create ended"
    );
    eprintln!(
        "measured: the other card closed {:.1} s before the hung create ends",
        fake.cardkit_fault_state()
            .1
            .unwrap_or_else(tokio::time::Instant::now)
            .saturating_duration_since(tokio::time::Instant::now())
            .as_secs_f64()
    );
    assert_eq!(closed.limited, 0);
    assert_no_entity_patch_nor_error(&fake);
}

/// `clawmux serve`'s config for the SIGKILL test.
fn write_serve_config(home: &Path, socket: &str) {
    write_serve_config_for(home, socket, SLOW_ANSWER)
}

/// `clawmux serve`'s config, the agent answering with `script`.
fn write_serve_config_for(home: &Path, socket: &str, script: &str) {
    let config = format!(
        r#"workspace_root = "{ws}"
[tmux]
socket = "{socket}"
width = 120
height = 40
[agent]
command = "{agent}"
[progress]
interval_secs = 1
[policy]
dm_policy = "allowlist"
allow_from = ["ou_alice"]
group_policy = "allowlist"
group_allow_from = ["oc_1"]
approvers = ["ou_alice"]
rate_per_minute = 600
"#,
        ws = home.join("ws").display(),
        agent = agent_command_for(home, script),
    );
    std::fs::write(home.join("config.toml"), config).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_stream_still_gives_one_final_answer() {
    let fake = FakeFeishu::start().await;
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    write_serve_config(home, &tmux.socket);
    let daemon = super::crash::serve(home, &fake);
    new_project(&fake, true).await;

    fake.push_message("oc_1", "ou_alice", "survive a crash");
    // Mid-stream, with an applied operation whose answer is lost.
    let mid = new_entity(&fake, "streaming", |e| e.streaming).await;
    fake.cardkit_fail_after_apply_next(1);
    entity(&fake, "line two shown, still streaming", |e| {
        e.card_id == mid.card_id && e.streaming && answer_text(e).contains("line two")
    })
    .await;
    drop::<Serve>(daemon); // SIGKILL
    fake.cardkit_fail_after_apply_next(0);

    let _daemon = super::crash::serve(home, &fake);
    assert!(fake.wait_connected(2, WAIT).await, "reconnected");
    entity(&fake, "closed", |e| {
        e.card_id == mid.card_id && !e.streaming
    })
    .await;
    card(&fake, "the result", |c| {
        c.card_id.is_none() && c.card_text().contains("The end of: survive a crash")
    })
    .await;
    assert_exactly_one_final(&fake, "The end of: survive a crash");
}

/// The console shows the same stream as text: `serve --console` prints the
/// answer's new lines as they come, each once, then ends it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_prints_the_stream_as_text() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Command;

    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    std::fs::write(
        home.join("config.toml"),
        format!(
            "workspace_root = {:?}\n[tmux]\nsocket = {:?}\n[agent]\ncommand = {:?}\n",
            home.join("ws").display().to_string(),
            tmux.socket,
            agent_command(home),
        ),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_clawmux"))
        .args(["serve", "--console"])
        .env("CLAWMUX_HOME", home)
        .env_remove("FEISHU_APP_ID")
        .env_remove("FEISHU_APP_SECRET")
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("serve starts");
    let stdout = child.stdout.take().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let _kill = Serve(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    writeln!(stdin, "/gsd:new-project demo").unwrap();
    let mut seen = Vec::new();
    let until_line = |want: &str, seen: &mut Vec<String>| {
        let deadline = std::time::Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    let hit = line.contains(want);
                    seen.push(line);
                    if hit {
                        return seen.len() - 1;
                    }
                }
                Err(_) => panic!("no line with {want:?}; printed:\n{}", seen.join("\n")),
            }
        }
    };
    until_line("└─ (answer complete)", &mut seen);
    writeln!(stdin, "console stream").unwrap();
    let head = until_line("┌─ (streaming) Answer: demo: console stream", &mut seen);
    // The stream and the result card are printed by two tasks: read until
    // both are complete, then look at the order within the stream.
    let find = |seen: &[String], from: usize, pred: &dyn Fn(&str) -> bool| {
        seen.iter()
            .skip(from)
            .position(|l| pred(l))
            .map(|i| i + from)
    };
    let done = |seen: &[String]| {
        let end = find(seen, head, &|l| l == "└─ (answer complete)");
        let result = find(seen, head, &|l| l == "  The end of: console stream");
        end.zip(result)
    };
    while done(&seen).is_none() {
        until_line("", &mut seen);
    }
    let (end, _result) = done(&seen).unwrap();
    let stream: Vec<&String> = seen[head..end]
        .iter()
        .filter(|l| l.starts_with("│ "))
        .collect();
    let want = [
        "│ ● Streaming answer to console stream, line one",
        "│   line two of the answer to console stream",
        "│   line three of the answer to console stream",
        "│   The end of: console stream",
    ];
    assert_eq!(
        stream,
        want,
        "each new line once, in order: {}",
        seen.join("\n")
    );
}
