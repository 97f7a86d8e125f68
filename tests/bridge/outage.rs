//! Feishu down for a full minute (issue 8): every API call, token requests
//! included, is answered 500 or 429 in turn while chat messages keep arriving
//! over the long connection and commands run. Afterwards every card arrives
//! once, in the order it was made, nothing is dropped, and the event log
//! shows the operator the failures and the recovery.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use clawmux::feishu::api::TOKEN_REFRESH_MARGIN;
use clawmux::store::event_log::EventRecord;
use clawmux::store::log_read;
use clawmux::store::state::{ChatTarget, OutboxEntry, OutboxOp, State};
use tokio::time::Instant;

use crate::support::bridge::Shown;
use crate::support::bridge::button_value;
use crate::support::fake_feishu::{FakeFeishu, Kind, Recorded};
use crate::support::feishu_serve::{feishu_config, start};
use crate::support::tmux::TmuxServer;

/// How long Feishu is down: the "for a minute".
const OUTAGE: Duration = Duration::from_secs(60);
/// The outage's 429s ask the client to come back after this many seconds.
const RATE_LIMIT_RESET_SECS: u64 = 1;
/// Most API requests the outage may see: one a second. By design a delivery
/// attempt is at most 6 tries spread over at least 5.5 s of backoff, and the
/// outbox waits between attempts, so about half that; a client retrying in a
/// tight loop against a local server would make thousands.
const MAX_REQUESTS_DURING_OUTAGE: u32 = 60;
/// Waiting for the daemon to act on a message.
const WAIT: Duration = Duration::from_secs(20);
/// Waiting for the first card after the outage: its rest, then at most the
/// outbox's longest wait (10 s) and one delivery attempt, with room to spare.
const RECOVERY_WAIT: Duration = Duration::from_secs(100);
/// How often the saved state is looked at (a test gets no change signal).
const POLL: Duration = Duration::from_millis(50);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_minute_of_500_and_429_loses_nothing_and_sends_nothing_twice() {
    let fake = FakeFeishu::start().await;
    // Tokens that need refreshing at once: every call fetches one, so the
    // outage hits the token endpoint too (a token expiring mid-outage).
    fake.set_token_expire(TOKEN_REFRESH_MARGIN.as_secs());
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let config = feishu_config(&tmux, home, &fake);
    let _live = start(&config, home).await;
    assert!(fake.wait_connected(1, WAIT).await, "long connection up");

    fake.push_message("oc_1", "ou_alice", "/gsd:new-project demo");
    state_until(home, "the first command done and delivered", |s| {
        s.projects.contains_key("demo") && s.jobs.is_empty() && s.outbox.is_empty()
    })
    .await;
    let before = fake.sent_cards().len();

    // Feishu goes down. Messages keep coming; commands run and make cards.
    fake.outage_for(OUTAGE, RATE_LIMIT_RESET_SECS);
    let hi = fake.push_message("oc_1", "ou_alice", "say hi while Feishu is down");
    fake.redeliver(&hi.frame_id);
    state_until(home, "the echo made", |s| {
        s.jobs.is_empty() && queued(s, "You said: say hi while Feishu is down")
    })
    .await;
    fake.push_message("oc_1", "ou_alice", "/gsd:plan-phase 2");
    state_until(home, "the approval and a progress update made", |s| {
        queued(s, "Approval needed")
            && s.outbox
                .iter()
                .any(|e| is_patch(e) && e.text().contains("PLANNING PHASE 2"))
    })
    .await;
    fake.push_message("oc_1", "ou_alice", "queued while down");
    fake.push_message("oc_fake", "ou_bob", "/gsd:help");
    let made = state_until(home, "the queue notice and the help made", |s| {
        queued(s, "number 1 in the queue") && queued(s, "clawmux help")
    })
    .await
    .outbox;
    // Reactions on the commands are not cards: checked apart.
    let (reactions, made): (Vec<OutboxEntry>, Vec<OutboxEntry>) = made
        .into_iter()
        .partition(|e| matches!(e.op, OutboxOp::React { .. }));
    assert_eq!(
        fake.sent_cards().len(),
        before,
        "nothing got through while Feishu was down"
    );

    // Feishu is back: what was made arrives in order, chat by chat (chats
    // take turns), each card once.
    let arrived = fake
        .wait_until(RECOVERY_WAIT, |f| {
            let sent = f.sent_cards();
            (sent.len() >= before + made.len()).then(|| sent[before..].to_vec())
        })
        .await
        .unwrap_or_else(|| panic!("the cards made during the outage never all arrived"));
    let message_ids = saved_state(home).cards;
    // Each card's chat: its send's target; an update's, its card's.
    let mut chat_of_card = HashMap::new();
    let mut chat_of_uuid = HashMap::new();
    for e in &made {
        if let OutboxOp::Send { target, handle, .. } = &e.op {
            chat_of_card.insert(handle.clone(), target.clone());
            chat_of_uuid.insert(e.uuid.clone(), target.clone());
        }
    }
    let made_chat = |e: &OutboxEntry| chat_of_card.get(e.op.handle()).cloned();
    let everything = fake.sent_cards();
    let arrived_chat = |c: &Recorded| {
        let send = everything
            .iter()
            .find(|s| s.kind != Kind::Patch && s.message_id == c.message_id)?;
        chat_of_uuid.get(send.uuid.as_deref()?).cloned()
    };
    let mut chats: Vec<ChatTarget> = Vec::new();
    for e in &made {
        let chat = made_chat(e).expect("every update's card was made too");
        if !chats.contains(&chat) {
            chats.push(chat);
        }
    }
    assert_eq!(chats.len(), 2, "{chats:?}");
    let pairs = chats.iter().flat_map(|chat| {
        let want = made.iter().filter(|e| made_chat(e).as_ref() == Some(chat));
        let got = arrived
            .iter()
            .filter(|c| arrived_chat(c).as_ref() == Some(chat));
        want.zip(got)
    });
    assert_eq!(pairs.clone().count(), made.len(), "{}", fake.listing());
    for (i, (want, got)) in pairs.enumerate() {
        let at = format!("card {i} after the outage: {}", want.text());
        match &want.op {
            OutboxOp::Send { .. } => {
                assert_ne!(got.kind, Kind::Patch, "{at}");
                assert_eq!(got.uuid.as_deref(), Some(want.uuid.as_str()), "{at}");
                assert_eq!(got.card, want.card(), "{at}");
            }
            OutboxOp::Patch { handle } => {
                // A queued patch takes the latest content; the card it updates is fixed.
                assert_eq!(got.kind, Kind::Patch, "{at}");
                assert_eq!(Some(&got.message_id), message_ids.get(handle), "{at}");
            }
            OutboxOp::File { .. } | OutboxOp::React { .. } => {
                panic!("{at}: the outage test makes only cards and reactions")
            }
        }
    }

    // The reactions made during the outage arrive too, each once.
    let want: Vec<(String, String)> = reactions
        .iter()
        .filter_map(|e| match &e.op {
            OutboxOp::React {
                message_id, emoji, ..
            } => Some((message_id.clone(), emoji.clone())),
            _ => None,
        })
        .collect();
    let got = fake
        .wait_until(WAIT, |f| {
            let r = f.reactions();
            want.iter().all(|w| r.contains(w)).then_some(r)
        })
        .await
        .unwrap_or_else(|| {
            panic!(
                "reactions {want:?} never all arrived: {:?}",
                fake.reactions()
            )
        });
    for w in &want {
        assert_eq!(got.iter().filter(|g| *g == w).count(), 1, "{w:?} twice");
    }

    // The approval made during the outage is answered after it.
    let approval = made
        .iter()
        .find(|e| e.text().contains("Approval needed"))
        .expect("approval made");
    let approval_id = message_ids
        .get(approval.op.handle())
        .expect("the approval card was delivered");
    let answer = fake
        .push_card_action("ou_alice", approval_id, button_value(approval, "Yes"))
        .await
        .expect("ack");
    assert_eq!(answer["toast"]["type"], "success", "{answer}");
    for (what, needle) in [
        ("the resolved approval", "chose **Yes**"),
        ("the plan's result", "Created 2 plans for phase 2"),
        ("the queued message's result", "You said: queued while down"),
    ] {
        let found = fake.wait_for_card(|c| text(c).contains(needle), WAIT).await;
        assert!(found.is_some(), "{what}:\n{}", fake.listing());
    }
    state_until(home, "everything delivered", |s| {
        s.jobs.is_empty() && s.outbox.is_empty()
    })
    .await;

    // Each card once; each message typed during the outage ran once.
    let sent = fake.sent_cards();
    assert_eq!(
        fake.duplicate_uuids(),
        Vec::<String>::new(),
        "a card sent twice:\n{}",
        fake.listing()
    );
    let log = events(home);
    for text in [
        "say hi while Feishu is down",
        "/gsd:plan-phase 2",
        "queued while down",
    ] {
        let commands = log
            .iter()
            .filter(|r| r.kind == "command" && r.fields["text"] == text)
            .count();
        assert_eq!(commands, 1, "{text:?} ran once");
    }
    for needle in [
        "You said: say hi while Feishu is down",
        "Created 2 plans for phase 2",
        "You said: queued while down",
        "number 1 in the queue",
        "clawmux help",
    ] {
        // Counted among the cards since the outage began: the first command
        // may have been queued behind GSD's project setup before it.
        let cards = sent[before..]
            .iter()
            .filter(|c| c.kind != Kind::Patch && text(c).contains(needle))
            .count();
        assert_eq!(cards, 1, "{needle:?} once:\n{}", fake.listing());
    }

    // The operator's view: failures named, the recovery logged, nothing dropped.
    let kinds =
        |kind: &str| -> Vec<&EventRecord> { log.iter().filter(|r| r.kind == kind).collect() };
    assert!(
        kinds("card_dropped").is_empty(),
        "{:?}",
        kinds("card_dropped")
    );
    assert!(
        kinds("card_dead_letter").is_empty(),
        "an outage is not a refusal: {:?}",
        kinds("card_dead_letter")
    );
    let retries = kinds("card_retry");
    assert!(!retries.is_empty(), "the failures are logged");
    for r in &retries {
        let error = r.fields["error"].as_str().unwrap_or_default();
        // Feishu's rate limit comes as HTTP 400 with code 99991400.
        assert!(
            error.contains("HTTP 500") || error.contains("99991400"),
            "the status or code is named: {error}"
        );
    }
    let recovered = kinds("card_delivery_recovered");
    assert_eq!(
        recovered.len(),
        1,
        "one outage, one recovery: {recovered:?}"
    );
    assert_eq!(recovered[0].fields["failed_attempts"], retries.len());
    // The recovering delivery is a reaction or the first card some chat
    // made during the outage.
    let heads: Vec<&str> = (chats.iter())
        .filter_map(|chat| made.iter().find(|e| made_chat(e).as_ref() == Some(chat)))
        .chain(&reactions)
        .map(|e| e.uuid.as_str())
        .collect();
    let first = recovered[0].fields["uuid"].as_str().unwrap_or_default();
    assert!(heads.contains(&first), "{first} not one of {heads:?}");

    // Backed off: far fewer requests than a retry loop, both faults served.
    let (errors, limits) = fake.outage_answers();
    assert!(errors > 0 && limits > 0, "500s {errors}, 429s {limits}");
    assert!(
        errors + limits <= MAX_REQUESTS_DURING_OUTAGE,
        "{} requests during the outage",
        errors + limits
    );
}

fn is_patch(e: &OutboxEntry) -> bool {
    matches!(e.op, OutboxOp::Patch { .. })
}

/// Whether the outbox holds a new card containing `needle`.
fn queued(s: &State, needle: &str) -> bool {
    s.outbox
        .iter()
        .any(|e| !is_patch(e) && e.text().contains(needle))
}

/// The daemon's saved state (each save a transaction, so any read is whole).
fn saved_state(home: &Path) -> State {
    crate::support::state::saved(home).unwrap_or_default()
}

/// Waits until the saved state satisfies `pred`; returns that state.
async fn state_until(home: &Path, what: &str, pred: impl Fn(&State) -> bool) -> State {
    let deadline = Instant::now() + WAIT;
    loop {
        let s = saved_state(home);
        if pred(&s) {
            return s;
        }
        if Instant::now() >= deadline {
            let outbox: Vec<String> = s.outbox.iter().map(|e| e.text()).collect();
            panic!(
                "{what}: not within {WAIT:?}; outbox:\n{}",
                outbox.join("\n----\n")
            );
        }
        tokio::time::sleep(POLL).await;
    }
}

fn events(home: &Path) -> Vec<EventRecord> {
    log_read::read_all(home).expect("event log").records
}

/// A card's title and text.
fn text(c: &Recorded) -> String {
    format!("{}: {}", c.title(), c.card_text())
}
