//! A command whose agent shows nothing but its spinner and timer (Gemini
//! CLI retrying a 500 without end looks so): after `[agent] stall_secs`
//! (shortened to 1 s here) the chat gets a status card, "No output for
//! 1 s", with an Interrupt button; the card says so once output resumes,
//! or the command ends. One card a stall, never an error card.

use clawmux::bridge::channels::chat::ToastLevel;
use clawmux::store::state::{CardHandle, OutboxEntry, OutboxOp};

use crate::support::bridge::{Bridge, Shown, button_value, is_send, test_config};
use crate::support::tmux::TmuxServer;

/// The simulated agent: `wait for the model` works with its spinner up and
/// nothing else drawn for 3.5 s, then answers.
const WAITING: &str = "\
on ~wait for the model
  spin 200 Thinking…
  say ● Asking the model.
  spin 3500 Waiting for the model…
  say ● The model answered.
on *
  spin 200 Thinking…
  say ● You said: $input
";

/// The card shown under `handle` was sent or patched by `e`.
fn of_card(e: &OutboxEntry, card: &CardHandle) -> bool {
    match &e.op {
        OutboxOp::Send { handle, .. } | OutboxOp::Patch { handle } => handle == card,
        OutboxOp::File { .. } | OutboxOp::React { .. } => false,
    }
}

fn handle(e: &OutboxEntry) -> CardHandle {
    match &e.op {
        OutboxOp::Send { handle, .. } => handle.clone(),
        other => panic!("not a new card: {other:?}"),
    }
}

async fn started() -> Bridge {
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().expect("temp dir");
    let mut config = test_config(&tmux.socket, home.path());
    let script = home.path().join("waiting.sim");
    std::fs::write(&script, WAITING).expect("script");
    config.agent.command = format!(
        "{} sim-agent --script {}",
        env!("CARGO_BIN_EXE_clawmux"),
        script.display()
    );
    config.agent.stall_secs = 1;
    let mut b = Bridge::start_with(tmux, home, config).await;
    super::new_project(&mut b, "oc_1", "ou_alice", "demo").await;
    b
}

/// The stall card of the command titled `title`, once sent.
async fn stall_card(b: &mut Bridge, title: &str) -> OutboxEntry {
    let heading = format!("No output: {title}");
    b.card("the stall card", |e| {
        is_send(e) && e.text().contains(&heading)
    })
    .await
}

/// The agent waits 3.5 s with its spinner alone: one status card with
/// Interrupt after the stall time, updated (no button) when the answer
/// comes; the command then finishes as usual, with no error card.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_agent_gets_a_status_card_cleared_when_output_resumes() {
    let mut b = started().await;
    b.say("oc_1", "ou_alice", "wait for the model").await;
    let stalled = stall_card(&mut b, "demo: wait for the model").await;
    let text = stalled.text();
    assert!(text.contains("No output for 1 s"), "{text}");
    let interrupt = button_value(&stalled, "Interrupt");
    assert_eq!(interrupt["action"], "interrupt", "{interrupt}");
    let card = handle(&stalled);
    let resumed = b
        .card("the stall card updated", |e| {
            matches!(e.op, OutboxOp::Patch { .. }) && of_card(e, &card)
        })
        .await;
    assert!(
        resumed.text().contains("Output resumed after"),
        "{}",
        resumed.text()
    );
    assert!(
        !resumed.text().contains("Interrupt"),
        "no button once it resumed:\n{}",
        resumed.text()
    );
    b.sent_with("The model answered.").await;
    let stall_cards = (b.seen.iter())
        .filter(|e| is_send(e) && e.text().contains("No output:"))
        .count();
    assert_eq!(stall_cards, 1, "one card a stall");
    assert!(
        !b.seen
            .iter()
            .any(|e| e.text().contains("reported an error")),
        "a status, not an error"
    );
}

/// The stall card's Interrupt is the progress card's: for an approver it
/// sends the agent's interrupt key (`tests/bridge/keys.rs` follows that key
/// to the stopped turn; the simulated agent goes on through a spinner), and
/// the card is closed once the output resumes: never left offering an
/// Interrupt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stall_cards_interrupt_sends_the_interrupt_key() {
    let mut b = started().await;
    b.say("oc_1", "ou_alice", "wait for the model").await;
    let stalled = stall_card(&mut b, "demo: wait for the model").await;
    let card = handle(&stalled);
    let answer = b
        .click("oc_1", "ou_alice", button_value(&stalled, "Interrupt"))
        .await;
    let level = answer.toast.as_ref().map(|(level, _)| *level);
    assert_eq!(level, Some(ToastLevel::Info), "{answer:?}");
    let sent = |b: &Bridge| {
        (b.events().iter()).any(|r| {
            r.kind == "keys"
                && r.field("by") == Some("ou_alice")
                && r.field("keys") == Some("Esc")
                && r.field("stage") == Some("sent")
        })
    };
    let closed = b
        .card("the stall card closed", |e| {
            matches!(e.op, OutboxOp::Patch { .. }) && of_card(e, &card)
        })
        .await;
    assert!(sent(&b), "the interrupt key went to the agent");
    let said = closed.text();
    assert!(
        said.contains("Output resumed after") || said.contains("The command ended."),
        "{said}"
    );
    assert!(!said.contains("Interrupt"), "{said}");
}
