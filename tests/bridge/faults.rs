//! Faults around the daemon: the agent's process dies, its session is
//! killed, the watching control client dies, the state database is
//! corrupt at start-up, its writes are refused. Each time: nothing lost,
//! and the user or operator is told.

use clawmux::bridge::channels::chat::ToastLevel;
use clawmux::store::state::OutboxEntry;

use super::is_send;
use crate::support::bridge::Shown;
use crate::support::bridge::{Bridge, button_value, until};

async fn project_with_approval(b: &mut Bridge, phase: u32) -> OutboxEntry {
    b.say("oc_1", "ou_alice", "/gsd:new-project demo").await;
    b.card("first result", |e| {
        e.text().contains("You said: /gsd:new-project")
    })
    .await;
    b.say("oc_1", "ou_alice", &format!("/gsd:plan-phase {phase}"))
        .await;
    b.card_with("Approval needed").await
}

/// The process id of the agent in project demo's pane.
fn agent_pid(b: &Bridge) -> String {
    let pid = b
        .tmux
        .ok(&["display-message", "-p", "-t", "=cm-demo:", "#{pane_pid}"]);
    pid.trim().to_string()
}

fn kill_9(pid: &str) {
    let status = std::process::Command::new("kill")
        .args(["-9", pid])
        .status()
        .unwrap();
    assert!(status.success());
}

/// The user is told the session was lost; the recreated agent asks again.
async fn lost_then_asked_again(b: &mut Bridge, first: &OutboxEntry) -> OutboxEntry {
    b.card_with("Session lost").await;
    b.card("a new approval", |e| {
        e.text().contains("Approval needed") && e.uuid != first.uuid
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_process_killed_mid_command() {
    let mut b = Bridge::start().await;
    let first = project_with_approval(&mut b, 7).await;
    kill_9(&agent_pid(&b));
    let second = lost_then_asked_again(&mut b, &first).await;
    approve_and_see_result(&mut b, &second, 7).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_project_session_takes_its_agent_along_and_is_recovered() {
    let mut b = Bridge::start().await;
    let first = project_with_approval(&mut b, 5).await;
    let agent = std::path::PathBuf::from(format!("/proc/{}", agent_pid(&b)));
    assert!(agent.exists());
    // The agent's window is also linked into the watch session; killing
    // the session the user sees must still end the agent.
    b.tmux.ok(&["kill-session", "-t", "=cm-demo"]);
    let second = lost_then_asked_again(&mut b, &first).await;
    assert!(!agent.exists(), "the old agent still runs");
    approve_and_see_result(&mut b, &second, 5).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_killed_while_clawmux_is_down_loses_its_agent_at_restart() {
    let mut b = Bridge::start().await;
    project_with_approval(&mut b, 3).await;
    let agent = std::path::PathBuf::from(format!("/proc/{}", agent_pid(&b)));
    b.stop().await;
    until(
        || b.tmux.ok(&["list-clients"]).is_empty(),
        "the client detached",
    )
    .await;
    b.tmux.ok(&["kill-session", "-t", "=cm-demo"]);
    // Nobody watches: the window lives on in the watch session alone.
    assert!(agent.exists());

    b.resume().await;
    until(|| !agent.exists(), "the orphaned agent ended").await;
    b.card_with("session cm-demo does not exist").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_watch_client_is_replaced_and_the_command_followed_on() {
    let mut b = Bridge::start().await;
    let approval = project_with_approval(&mut b, 4).await;
    let agent = agent_pid(&b);
    let client = b.tmux.ok(&["list-clients", "-F", "#{client_pid}"]);
    let client = client.trim();
    kill_9(client);
    // The running command's actor attaches a new client at once.
    let clients = || b.tmux.ok(&["list-clients", "-F", "#{client_pid}"]);
    let replaced = || !["", client].contains(&clients().trim());
    until(replaced, "a new client").await;
    assert_eq!(clients().lines().count(), 1, "{}", clients());

    // The click reaches the same agent, through the new client.
    approve_and_see_result(&mut b, &approval, 4).await;
    assert_eq!(agent_pid(&b), agent, "the agent was restarted");
    let texts: Vec<String> = b.seen.iter().map(|e| e.text()).collect();
    assert!(
        !texts.iter().any(|t| t.contains("Session lost")),
        "{texts:?}"
    );
    let prompts = b
        .seen
        .iter()
        .filter(|e| is_send(e) && e.text().contains("Approval needed"));
    assert_eq!(prompts.count(), 1, "the prompt was sent again: {texts:?}");
}

/// Clicks Yes on `approval`: answered at once, then the phase's result card.
async fn approve_and_see_result(b: &mut Bridge, approval: &OutboxEntry, phase: u32) {
    let yes = button_value(approval, "Yes");
    assert_eq!(
        b.click("oc_1", "ou_alice", yes).await.toast.map(|t| t.0),
        Some(ToastLevel::Success)
    );
    let done = format!("Created 2 plans for phase {phase}");
    b.card("the result", |e| {
        e.text().contains(&done) && e.text().contains("```")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_state_table_costs_only_itself() {
    let mut b = Bridge::start().await;
    let approval = project_with_approval(&mut b, 8).await;
    b.stop().await;
    // One row the daemon cannot read, in a table the approval does not
    // need: the database is moved aside and the rest of it kept.
    let db = b.home.path().join("state.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute(
        "INSERT INTO dedupe (k, seq, v) VALUES ('bad', 1000000, 'not json')",
        [],
    )
    .unwrap();
    drop(conn);
    b.resume().await;

    approve_and_see_result(&mut b, &approval, 8).await;
    let recovered = b.events().into_iter().find(|r| r.kind == "state_recovered");
    let recovered = recovered.expect("the operator is told");
    assert!(
        recovered
            .field("problem")
            .unwrap_or_default()
            .contains("table dedupe"),
        "{recovered:?}"
    );
    assert!(b.home.path().join("state.db.corrupt").exists(), "kept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_writes_failing_lose_nothing_and_are_reported() {
    let mut b = Bridge::start().await;
    b.say("oc_1", "ou_alice", "/gsd:new-project demo").await;
    b.card("first result", |e| {
        e.text().contains("You said: /gsd:new-project")
    })
    .await;

    // The database refuses writes: another writer holds its lock (longer
    // than a save waits for it), as a full disk refuses them.
    let blocker = rusqlite::Connection::open(b.home.path().join("state.db")).unwrap();
    blocker
        .busy_timeout(std::time::Duration::from_secs(30))
        .unwrap();
    blocker.execute_batch("BEGIN IMMEDIATE").unwrap();
    b.say("oc_1", "ou_alice", "while the disk is full").await;
    b.card("the echo", |e| {
        e.text().contains("You said: while the disk is full") && e.text().contains("```")
    })
    .await;
    assert!(
        b.events().iter().any(|r| r.kind == "state_error"),
        "the operator is told"
    );

    blocker.execute_batch("ROLLBACK").unwrap();
    drop(blocker);
    b.say("oc_1", "ou_alice", "after the disk is back").await;
    b.card("the next echo", |e| {
        e.text().contains("You said: after the disk is back") && e.text().contains("```")
    })
    .await;
    assert!(b.events().iter().any(|r| r.kind == "state_saved"));
    b.stop().await;
    let saved = crate::support::state::read(b.home.path());
    assert!(
        saved["projects"]["demo"].is_object(),
        "the state written again holds everything: {saved}"
    );
    assert!(
        saved["streams"]
            .to_string()
            .contains("while the disk is full"),
        "the messages handled while writes failed are saved: {saved}"
    );
}

/// A workspace that cannot be made (its parent is a file): the project's
/// pane says so, as an error card naming the workspace, and nothing is
/// typed. The core made the directory itself before; the pane that runs
/// there makes it now, on this machine as on an ssh host.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_that_cannot_be_made_is_an_error_card() {
    let tmux = crate::support::tmux::TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let blocker = home.path().join("not-a-dir");
    std::fs::write(&blocker, b"a file").unwrap();
    let mut config = crate::support::bridge::test_config(&tmux.socket, home.path());
    config.workspace_root = blocker.join("ws").display().to_string();
    let mut b = Bridge::start_with(tmux, home, config).await;
    b.say("oc_1", "ou_alice", "/gsd:new-project demo").await;
    let card = b.card_with("cannot create the workspace").await;
    assert!(card.text().contains("not-a-dir/ws/demo"), "{}", card.text());
    // Nothing was typed anywhere: the command never started.
    let kinds: Vec<String> = b.events().iter().map(|e| e.kind.clone()).collect();
    assert!(!kinds.iter().any(|k| k == "started"), "{kinds:?}");
    assert!(
        b.tmux.run(&["has-session", "-t", "=cm-demo"]).status.code() != Some(0),
        "no session was made"
    );
    b.stop().await;
}
