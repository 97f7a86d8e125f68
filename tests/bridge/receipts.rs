//! Delivery receipts: after typing, the screen must show that the agent
//! took the command (its input box emptied). An agent that ignores the
//! first Enter gets one more; one that never takes the input leaves the
//! chat told, with the screen.

use std::path::PathBuf;

use crate::support::bridge::Shown;
use crate::support::bridge::{Bridge, test_config};
use crate::support::tmux::TmuxServer;

fn stubborn_agent(ignore: &str) -> String {
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/bridge/agents/stubborn_agent.py");
    format!("python3 {} {ignore}", script.display())
}

async fn bridge_with_agent(ignore: &str) -> Bridge {
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let mut config = test_config(&tmux.socket, home.path());
    config.agent.command = stubborn_agent(ignore);
    config.agent.profile = "claude".into();
    Bridge::start_with(tmux, home, config).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ignored_enter_is_pressed_again_and_the_command_runs() {
    let mut b = bridge_with_agent("1").await;
    b.say("oc_1", "ou_alice", "/gsd:new-project demo").await;
    let result = b.card_with("You said: /gsd:new-project").await;
    assert!(
        result.text().contains("demo: /gsd:new-project"),
        "{}",
        result.text()
    );
    let kinds: Vec<String> = b.events().iter().map(|e| e.kind.clone()).collect();
    assert_eq!(
        kinds.iter().filter(|k| *k == "enter_pressed_again").count(),
        1,
        "{kinds:?}"
    );
    assert!(!kinds.iter().any(|k| k == "not_submitted"), "{kinds:?}");
    let screen = b.tmux.capture("cm-demo");
    assert_eq!(
        screen.matches("● You said: /gsd:new-project").count(),
        1,
        "{screen}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_the_agent_never_takes_is_reported_with_the_screen() {
    let mut b = bridge_with_agent("never").await;
    b.say("oc_1", "ou_alice", "/gsd:new-project demo").await;
    let card = b.card_with("Not submitted").await;
    assert!(
        card.text().contains("demo: /gsd:new-project"),
        "{}",
        card.text()
    );
    assert!(
        card.text().contains("❯ /gsd:new-project"),
        "the screen: {}",
        card.text()
    );
    let kinds: Vec<String> = b.events().iter().map(|e| e.kind.clone()).collect();
    assert!(kinds.iter().any(|k| k == "not_submitted"), "{kinds:?}");
    assert!(!kinds.iter().any(|k| k == "completed"), "{kinds:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_redraws_late_is_not_reported_not_submitted() {
    // Takes the command at once but shows it 8 s later: past both Enters.
    let mut b = bridge_with_agent("late:8").await;
    b.say("oc_1", "ou_alice", "/gsd:new-project demo").await;
    let result = b.card_with("You said: /gsd:new-project").await;
    assert!(
        result.text().contains("demo: /gsd:new-project"),
        "{}",
        result.text()
    );
    assert!(
        !b.seen.iter().any(|e| e.text().contains("Not submitted")),
        "reported not submitted"
    );
    let screen = b.tmux.capture("cm-demo");
    assert_eq!(
        screen.matches("● You said: /gsd:new-project").count(),
        1,
        "{screen}"
    );
}

/// A line-mode agent (read with Aider's profile) that takes a line and
/// draws nothing for 5 s, as Aider did on a loaded machine: the typed line
/// is still the last text on screen, but the cursor left it, so it was
/// taken. No second Enter: it would reach the agent as an empty line once
/// it reads again (or as the `[Yes]` of its next question).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_mode_agent_slow_to_draw_gets_one_enter() {
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let script = home.path().join("slow_line_agent.sh");
    std::fs::write(
        &script,
        "while :; do\n\
           printf 'diff> '\n\
           IFS= read -r line || exit 0\n\
           sleep 5\n\
           [ -z \"$line\" ] && echo 'an empty line came in'\n\
           echo \"You said: $line\"\n\
           echo 'Tokens: 1 sent, 1 received.'\n\
           echo '────────'\n\
         done\n",
    )
    .unwrap();
    let mut config = test_config(&tmux.socket, home.path());
    config.agent.command = format!("bash {}", script.display());
    config.agent.profile = "aider".into();
    let mut b = Bridge::start_with(tmux, home, config).await;
    b.say("oc_1", "ou_alice", "/gsd:new-project demo").await;
    b.card_with("Project ready").await;
    b.say("oc_1", "ou_alice", "hello there").await;
    let result = b.card_with("You said: hello there").await;
    assert!(
        result.text().contains("demo: hello there"),
        "{}",
        result.text()
    );
    let kinds: Vec<String> = b.events().iter().map(|e| e.kind.clone()).collect();
    assert!(
        !kinds.iter().any(|k| k == "enter_pressed_again"),
        "{kinds:?}"
    );
    // Long enough for a second Enter to have come out as an empty line.
    tokio::time::sleep(std::time::Duration::from_secs(6)).await;
    let screen = b.tmux.capture("cm-demo");
    assert!(!screen.contains("an empty line came in"), "{screen}");
}
