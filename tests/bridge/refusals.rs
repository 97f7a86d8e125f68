//! A refused sender cannot wipe the event log (issue 48, item 6): the
//! daemon with its real event log (16 MiB a file, 3 rotated) and a
//! stranger sending 80 messages of 1 MB, read back by the log's reader and
//! by `clawmux tail --kind denied` (the real binary).

use std::process::Command;

use clawmux::bridge::access::refusals::MAX_REFUSALS_PER_WINDOW;
use clawmux::store::log_event::DENIED_TEXT_BYTES;
use serde_json::json;

use clawmux::store::state::{OutboxEntry, OutboxOp};

use crate::support::bridge::Bridge;

/// Longest `clawmux tail` line for a refused 1 MB message: its prefix and
/// the line's other fields.
const TAIL_LINE_BYTES: usize = 2 * DENIED_TEXT_BYTES;

/// Is `e` the new card answering chat message `id`?
fn answers(e: &OutboxEntry, id: &str) -> bool {
    matches!(&e.op, OutboxOp::Send { reply_to: Some(r), .. } if r == id)
}

/// Passes by `Denial::with_text` (`crates/store/src/log_event.rs`: a
/// bounded prefix and the length) and the refusal window of
/// `Core::log_denied` (`src/bridge/core/admission.rs`); without them
/// every refusal is a line holding the whole megabyte, the log rotates
/// four times over and an allowed sender's records are gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_flood_leaves_the_log_to_everyone_else() {
    const FLOOD: usize = 80;
    const MESSAGE_BYTES: usize = 1_000_000;
    let mut b = Bridge::start().await;
    let first = b.say("oc_1", "ou_alice", "/gsd:help").await;
    b.card("the help", |e| answers(e, &first)).await;
    let big = "A".repeat(MESSAGE_BYTES);
    for _ in 0..FLOOD {
        b.say("oc_eve", "ou_eve", &big).await;
    }
    // Messages are taken in order: once this is answered, so was the flood.
    let after = b.say("oc_1", "ou_alice", "/gsd:projects").await;
    b.card("the answer after the flood", |e| answers(e, &after))
        .await;

    let records = b.events();
    let alice_said = (records.iter())
        .filter(|r| r.kind == "message" && r.fields["sender"] == "ou_alice")
        .count();
    assert_eq!(alice_said, 2, "alice's records were pushed out of the log");
    assert!(
        records.iter().any(|r| r.kind == "card"),
        "the cards' records were pushed out"
    );
    let eve: Vec<_> = (records.iter())
        .filter(|r| r.kind == "denied" && r.fields["sender"] == "ou_eve")
        .collect();
    assert_eq!(eve.len(), MAX_REFUSALS_PER_WINDOW as usize);
    for r in &eve {
        let text = r.fields["text"].as_str().unwrap_or_default();
        assert_eq!(text, &big[..DENIED_TEXT_BYTES]);
        assert_eq!(r.fields["text_bytes"], json!(MESSAGE_BYTES));
    }

    let tail = Command::new(env!("CARGO_BIN_EXE_clawmux"))
        .args(["tail", "--kind", "denied"])
        .env("CLAWMUX_HOME", b.home.path())
        .output()
        .expect("clawmux tail runs");
    assert!(
        tail.status.success(),
        "{}",
        String::from_utf8_lossy(&tail.stderr)
    );
    let out = String::from_utf8_lossy(&tail.stdout);
    let lines: Vec<&str> = out.lines().filter(|l| l.contains("ou_eve")).collect();
    assert_eq!(lines.len(), MAX_REFUSALS_PER_WINDOW as usize, "{out}");
    for line in lines {
        assert!(
            line.len() <= TAIL_LINE_BYTES,
            "{} bytes: {line}",
            line.len()
        );
        assert!(line.contains("text_bytes"), "{line}");
    }
}
