//! A chat message of several lines reaches the real Claude Code whole: one
//! prompt with its line breaks, not one prompt a line (tmux pastes it
//! bracketed, as Claude Code asks for), and it is submitted once.

use std::time::Duration;

use clawmux::agentcheck::{FakeApi, Turn};

use crate::support::bridge::{Bridge, Shown, test_config};
use crate::support::claude::{agent_home, claude_required};
use crate::support::tmux::TmuxServer;

const ANSWER: &str = "Got all three lines.";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_line_message_arrives_whole_and_once() {
    let claude = claude_required();
    let api = FakeApi::start_paced(vec![Turn::text(ANSWER)], Duration::from_millis(15)).unwrap();
    let tmux = TmuxServer::new();
    let (home, env) = agent_home(&api, "shop");
    let mut config = test_config(&tmux.socket, home.path());
    config.agent.command = env.env_command(&claude, &[]);
    config.agent.profile = "claude".into();
    let mut b = Bridge::start_with(tmux, home, config).await;

    b.say("oc_1", "ou_alice", "/gsd:new-project shop").await;
    // GSD is not installed for this agent: it refuses, and says so.
    b.card_with("The agent refused").await;
    let message = "first line: keep it\nsecond line: $(not run)\nthird line";
    b.say("oc_1", "ou_alice", message).await;
    let result = b.card_with(ANSWER).await;
    assert!(
        result.text().contains("shop: first line"),
        "{}",
        result.text()
    );

    let turns = api.scripted_requests();
    assert_eq!(turns.len(), 1, "one prompt, not one a line");
    let sent = turns[0].body["messages"].to_string();
    let whole = serde_json::to_string(message).unwrap();
    let whole = whole.trim_matches('"');
    assert!(sent.contains(whole), "the prompt Claude Code sent: {sent}");
    let kinds: Vec<String> = b.events().iter().map(|e| e.kind.clone()).collect();
    assert!(!kinds.iter().any(|k| k == "not_submitted"), "{kinds:?}");
}
