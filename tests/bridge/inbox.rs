//! `/gsd:inbox` and reminders against the local Feishu server: the inbox
//! lists what waits, oldest first, with buttons that answer it; a chat that
//! asked for reminders gets one per prompt that waited too long, once.

use std::time::Duration;

use serde_json::Value;

use crate::support::fake_feishu::{FakeFeishu, Kind};
use crate::support::feishu_serve::{card, demo_project, feishu_config, start};
use crate::support::tmux::TmuxServer;

const WAIT: Duration = Duration::from_secs(20);

/// Every button's (label, value) on a card, in order.
fn buttons(card: &Value) -> Vec<(String, Value)> {
    fn walk(v: &Value, out: &mut Vec<(String, Value)>) {
        if v.get("tag").and_then(Value::as_str) == Some("button") {
            let label = v.pointer("/text/content").and_then(Value::as_str);
            let value = v.pointer("/behaviors/0/value");
            if let (Some(l), Some(val)) = (label, value) {
                out.push((l.to_string(), val.clone()));
            }
        }
        match v {
            Value::Array(a) => a.iter().for_each(|i| walk(i, out)),
            Value::Object(o) => o.values().for_each(|i| walk(i, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(card, &mut out);
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inbox_answers_what_waits_and_a_reminder_comes_once() {
    let fake = FakeFeishu::start().await;
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let config = feishu_config(&tmux, home.path(), &fake);
    let _live = start(&config, home.path()).await;
    assert!(fake.wait_connected(1, WAIT).await, "long connection up");
    demo_project(&fake).await;

    fake.push_message("oc_1", "ou_alice", "/gsd:inbox");
    card(&fake, "an empty inbox", |c| {
        c.title() == "Inbox: 0 waiting" && c.card_text().contains("Nothing waits")
    })
    .await;

    fake.push_message("oc_1", "ou_alice", "/gsd:remind 2s");
    card(&fake, "reminders on", |c| c.title() == "Reminders").await;
    fake.push_message("oc_1", "ou_alice", "/gsd:plan-phase 2");
    let approval = card(&fake, "the approval", |c| c.title() == "Approval needed").await;

    fake.push_message("oc_1", "ou_alice", "/gsd:inbox");
    let inbox = card(&fake, "the inbox", |c| c.title() == "Inbox: 1 waiting").await;
    let text = inbox.card_text();
    assert!(text.contains("1. demo"), "{text}");
    assert!(text.contains("Do you want to proceed?"), "{text}");
    let on_inbox = buttons(&inbox.card);
    let on_approval = buttons(&approval.card);
    assert_eq!(
        on_inbox, on_approval,
        "the inbox item has the prompt's buttons"
    );

    // Waited over 2 s: reminded, once.
    let reminder = card(&fake, "the reminder", |c| {
        c.title().starts_with("Still waiting")
    })
    .await;
    assert_eq!(buttons(&reminder.card), on_approval);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let reminders = (fake.sent_cards().iter())
        .filter(|c| c.kind != Kind::Patch && c.title().starts_with("Still waiting"))
        .count();
    assert_eq!(reminders, 1, "one reminder: {}", fake.listing());

    // The inbox's Yes answers the prompt.
    let yes = on_inbox
        .iter()
        .find(|(l, _)| l == "Yes")
        .map(|(_, v)| v.clone())
        .expect("a Yes button");
    let answer = fake
        .push_card_action("ou_alice", &inbox.message_id, yes)
        .await
        .expect("ack");
    assert_eq!(answer["toast"]["type"], "success", "{answer}");
    card(&fake, "the plan's result", |c| {
        c.card_text().contains("Created 2 plans for phase 2")
    })
    .await;
    fake.push_message("oc_1", "ou_alice", "/gsd:inbox");
    let empty = || {
        (fake.sent_cards().iter())
            .filter(|c| c.title() == "Inbox: 0 waiting")
            .count()
    };
    crate::support::bridge::until(|| empty() == 2, "the inbox empty again").await;
}
