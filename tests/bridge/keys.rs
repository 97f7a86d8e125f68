//! Keys from chat, against the local Feishu server: the Interrupt button
//! of a running command's progress card (approvers only) sends the agent's
//! interrupt key, which the screen confirms (the turn ends "Stopped"), and
//! `/gsd:keys` steers a dialog by named keys, for approvers only; each
//! logged before and after.

use std::time::Duration;

use clawmux::store::log_read;

use crate::support::fake_feishu::{FakeFeishu, Kind};
use crate::support::feishu_serve::{
    card, demo_project, feishu_config, find_button as button, start,
};
use crate::support::tmux::TmuxServer;

const WAIT: Duration = Duration::from_secs(20);

/// `keys` lines in the event log: (by, keys, stage).
fn keys_logged(home: &std::path::Path) -> Vec<(String, String, String)> {
    let f = |r: &clawmux::store::EventRecord, k: &str| r.field(k).unwrap_or_default().to_string();
    (log_read::read_all(home).expect("log").records.iter())
        .filter(|r| r.kind == "keys")
        .map(|r| (f(r, "by"), f(r, "keys"), f(r, "stage")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_interrupt_button_stops_the_turn_for_approvers_only() {
    let fake = FakeFeishu::start().await;
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let config = feishu_config(&tmux, home.path(), &fake);
    let _live = start(&config, home.path()).await;
    assert!(fake.wait_connected(1, WAIT).await, "long connection up");
    demo_project(&fake).await;

    fake.push_message("oc_1", "ou_alice", "/gsd:plan-phase 2");
    let progress = card(&fake, "the progress card", |c| {
        c.kind == Kind::Reply
            && c.title() == "demo: /gsd:plan-phase 2"
            && c.card_text().contains("Running…")
    })
    .await;
    let interrupt = button(&progress.card, "Interrupt").expect("an Interrupt button");
    card(&fake, "the approval", |c| c.title() == "Approval needed").await;

    let refused = fake
        .push_card_action("ou_bob", &progress.message_id, interrupt.clone())
        .await
        .expect("ack");
    assert_eq!(refused["toast"]["type"], "error", "{refused}");
    assert!(keys_logged(home.path()).is_empty(), "nothing sent for bob");

    let answer = fake
        .push_card_action("ou_alice", &progress.message_id, interrupt.clone())
        .await
        .expect("ack");
    assert_eq!(answer["toast"]["type"], "info", "{answer}");
    // The screen confirms it: the agent says it was interrupted.
    card(&fake, "stopped", |c| {
        c.title().starts_with("Stopped: demo: /gsd:plan-phase 2")
    })
    .await;
    card(&fake, "cancelled", |c| c.title() == "Cancelled").await;
    let finished = card(&fake, "the progress card closed", |c| {
        c.kind == Kind::Patch
            && c.message_id == progress.message_id
            && c.card_text().contains("Stopped after")
    })
    .await;
    assert!(
        button(&finished.card, "Interrupt").is_none(),
        "no Interrupt on an ended command"
    );
    assert_eq!(
        keys_logged(home.path()),
        [
            ("ou_alice".into(), "interrupt".into(), "intent".into()),
            ("ou_alice".into(), "Esc".into(), "sent".into())
        ]
    );

    // A click after the command ended is stale.
    let stale = fake
        .push_card_action("ou_alice", &progress.message_id, interrupt)
        .await
        .expect("ack");
    assert_eq!(stale["toast"]["type"], "warning", "{stale}");
}

/// An agent that goes on after its interrupt keys: the chat is told the
/// interrupt was not confirmed, and the log says so, instead of a
/// "Cancelled" that stopped nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_the_screen_does_not_confirm_is_told() {
    let fake = FakeFeishu::start().await;
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let config = feishu_config(&tmux, home.path(), &fake);
    let _live = start(&config, home.path()).await;
    assert!(fake.wait_connected(1, WAIT).await, "long connection up");
    demo_project(&fake).await;
    // The sim's spinner takes no keys: Esc changes nothing on its screen.
    fake.push_message("oc_1", "ou_alice", "a job that ignores Esc");
    let progress = card(&fake, "the progress card", |c| {
        c.kind == Kind::Reply
            && c.title() == "demo: a job that ignores Esc"
            && c.card_text().contains("Running…")
    })
    .await;
    let interrupt = button(&progress.card, "Interrupt").expect("an Interrupt button");
    let answer = fake
        .push_card_action("ou_alice", &progress.message_id, interrupt)
        .await
        .expect("ack");
    assert_eq!(answer["toast"]["type"], "info", "{answer}");
    let told = card(&fake, "not confirmed", |c| {
        c.title() == "Interrupt not confirmed"
    })
    .await;
    assert!(
        told.card_text().contains("its turn still runs"),
        "{}",
        told.card_text()
    );
    let stages: Vec<String> = keys_logged(home.path()).into_iter().map(|k| k.2).collect();
    assert_eq!(stages, ["intent", "sent", "not_confirmed"]);
    // The turn's own end is still reported.
    card(&fake, "the job's result", |c| {
        c.card_text().contains("The long job is done.")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gsd_keys_steers_a_dialog_for_approvers_and_is_logged() {
    let fake = FakeFeishu::start().await;
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let config = feishu_config(&tmux, home.path(), &fake);
    let _live = start(&config, home.path()).await;
    assert!(fake.wait_connected(1, WAIT).await, "long connection up");
    demo_project(&fake).await;
    fake.push_message("oc_1", "ou_alice", "/gsd:plan-phase 2");
    card(&fake, "the approval", |c| c.title() == "Approval needed").await;

    fake.push_message("oc_1", "ou_bob", "/gsd:keys Enter");
    card(&fake, "bob refused", |c| {
        c.title() == "Not allowed" && c.card_text().contains("Only approvers may send keys")
    })
    .await;
    fake.push_message("oc_1", "ou_alice", "/gsd:keys Enter rm");
    card(&fake, "a word that is no key", |c| {
        c.card_text().contains("`rm` is not a key clawmux sends")
    })
    .await;
    assert!(keys_logged(home.path()).is_empty(), "nothing sent yet");

    // Enter takes the dialog's highlighted option (Yes): the plan goes on.
    fake.push_message("oc_1", "ou_alice", "/gsd:keys Enter");
    card(&fake, "keys sent", |c| {
        c.title() == "Keys sent" && c.card_text().contains("Sent `Enter`")
    })
    .await;
    card(&fake, "the plan's result", |c| {
        c.card_text().contains("Created 2 plans for phase 2")
    })
    .await;
    let by = |stage: &str| {
        (
            "ou_alice".to_string(),
            "Enter".to_string(),
            stage.to_string(),
        )
    };
    assert_eq!(keys_logged(home.path()), [by("intent"), by("sent")]);
}
