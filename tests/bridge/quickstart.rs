//! The README's quick start, pasted line by line as a newcomer would: the
//! chat lines are read from README.md itself, so the test and the page
//! cannot drift apart.

use super::new_project;
use crate::support::bridge::Shown;
use crate::support::bridge::{Bridge, is_send};

const README: &str = include_str!("../../README.md");

/// The chat lines of the quick start: the fenced block after "Type these
/// lines".
fn chat_lines() -> Vec<&'static str> {
    let after = README
        .split_once("Type these lines")
        .expect("README's quick start says `Type these lines`")
        .1;
    let block = after
        .split("```")
        .nth(1)
        .expect("a fenced block of chat lines");
    block
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_quick_start_pasted_line_by_line() {
    let lines = chat_lines();
    assert_eq!(
        lines,
        [
            "/gsd:new-project demo",
            "/gsd:plan-phase 2",
            "/gsd:answer 1",
            "/gsd:status"
        ],
        "each line a command alone, nothing after it"
    );
    let mut b = Bridge::start().await;
    new_project(&mut b, "oc_1", "ou_alice", "demo").await;
    b.say("oc_1", "ou_alice", lines[1]).await;
    b.card_with("Approval needed").await;
    b.say("oc_1", "ou_alice", lines[2]).await;
    b.card("the answered approval", |e| {
        e.text().contains("chose **Yes**")
    })
    .await;
    b.sent_with("Plans verified [3/3]").await;
    b.say("oc_1", "ou_alice", lines[3]).await;
    let status = b
        .card("the status", |e| {
            is_send(e) && e.text().contains("demo") && e.text().contains("Status")
        })
        .await;
    assert!(
        !status.text().contains("Missing argument"),
        "{}",
        status.text()
    );

    // Nothing but the lines themselves reached the agent (`/gsd:new-project
    // demo` runs GSD's own `/gsd:new-project` in the new project).
    let typed: Vec<String> = (b.events().into_iter())
        .filter(|r| r.kind == "command")
        .filter_map(|r| r.field("text").map(str::to_string))
        .collect();
    assert!(
        typed
            .iter()
            .all(|t| lines.iter().any(|l| l.starts_with(t.as_str()))),
        "{typed:?}"
    );
    assert!(typed.iter().any(|t| t == "/gsd:plan-phase 2"), "{typed:?}");
}
