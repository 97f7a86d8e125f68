//! Adopting a session the user made (not clawmux): watched without
//! resizing or restarting it, an approval and a result through chat, then
//! released with the pane, its window and the session's windows exactly as
//! they were.

use std::time::Duration;

use crate::support::bridge::Shown;
use crate::support::bridge::{Bridge, button_value, until};
use crate::support::tmux::TmuxServer;

/// The user's panes and windows as tmux reports them: ids, sizes, pids.
fn layout(tmux: &TmuxServer) -> (String, String) {
    let panes = tmux.ok(&[
        "list-panes",
        "-a",
        "-F",
        "#{pane_id} #{pane_width}x#{pane_height} #{pane_pid}",
    ]);
    let windows = tmux.ok(&[
        "list-windows",
        "-a",
        "-F",
        "#{session_name} #{window_id} #{window_index} #{window_name} #{window_width}x#{window_height} #{window_layout}",
    ]);
    (panes, windows)
}

fn clients(tmux: &TmuxServer) -> String {
    tmux.ok(&["list-clients", "-F", "#{client_session} #{client_flags}"])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adopt_and_release_a_session_clawmux_did_not_create() {
    let tmux = TmuxServer::new();
    // The user's own session, two windows, an odd size no clawmux default
    // has, the agent in window 1.
    let sim = format!("{} sim-agent", env!("CARGO_BIN_EXE_clawmux"));
    tmux.ok(&[
        "new-session",
        "-d",
        "-s",
        "work",
        "-n",
        "shell",
        "-x",
        "97",
        "-y",
        "31",
        "sh",
    ]);
    tmux.ok(&["new-window", "-t", "=work:", "-n", "agent", &sim]);
    tmux.wait_for_screen("=work:agent", "❯", Duration::from_secs(20));
    let before = layout(&tmux);

    let home = tempfile::tempdir().expect("temp dir");
    let config = crate::support::bridge::test_config(&tmux.socket, home.path());
    let mut b = Bridge::start_with(tmux, home, config).await;

    // Only approvers adopt.
    b.say("oc_1", "ou_bob", "/gsd:adopt work:1.0 as mine").await;
    b.card_with("Only approvers may adopt").await;

    b.say("oc_1", "ou_alice", "/gsd:sessions").await;
    let sessions = b.card_with("== Sessions ==").await;
    assert!(sessions.text().contains("work:1.0"), "{}", sessions.text());

    b.say("oc_1", "ou_alice", "/gsd:adopt work:1.0 as mine")
        .await;
    let adopted = b.card_with("== Adopted ==").await;
    assert!(adopted.text().contains("97x31"), "{}", adopted.text());
    until(
        || clients(&b.tmux).contains("ignore-size"),
        "the watching client attached",
    )
    .await;
    assert_eq!(layout(&b.tmux), before, "adopting changed nothing");

    // Detections, approvals and results flow as for a created project.
    b.say("oc_1", "ou_alice", "/gsd:plan-phase 2").await;
    let approval = b.card_with("Approval needed").await;
    b.click("oc_1", "ou_alice", button_value(&approval, "Yes"))
        .await;
    let result = b.sent_with("Plans verified [3/3]").await;
    assert!(
        result.text().contains("mine: /gsd:plan-phase 2"),
        "{}",
        result.text()
    );
    assert_eq!(layout(&b.tmux), before, "watching changed nothing");

    b.say("oc_1", "ou_alice", "/gsd:status").await;
    let status = b.card_with("| mine | idle |").await;
    assert!(
        status.text().contains("| local (adopted work:%"),
        "{}",
        status.text()
    );

    // A non-approver cannot release.
    b.say("oc_1", "ou_bob", "/gsd:release mine").await;
    b.say("oc_1", "ou_alice", "/gsd:release mine").await;
    b.card_with("== Released ==").await;
    let refused = b
        .seen
        .iter()
        .filter(|e| e.text().contains("Only approvers may adopt"));
    assert_eq!(refused.count(), 2, "bob's adopt and release both refused");
    until(
        || clients(&b.tmux).trim().is_empty(),
        "the watching client gone",
    )
    .await;
    assert_eq!(layout(&b.tmux), before, "released as it was");
    b.tmux.ok(&["has-session", "-t", "=work"]);
    assert!(
        !b.tmux
            .run(&["has-session", "-t", "=clawmux-watch"])
            .status
            .success(),
        "no watch session was made on the user's server"
    );

    // Messages no longer reach the pane.
    b.say("oc_1", "ou_alice", "hello").await;
    b.card_with("No project selected").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clawmux_adopt_prints_the_detections_of_a_pane_and_lets_go() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    let tmux = TmuxServer::new();
    let sim = format!("{} sim-agent", env!("CARGO_BIN_EXE_clawmux"));
    tmux.ok(&[
        "new-session",
        "-d",
        "-s",
        "desk",
        "-n",
        "agent",
        "-x",
        "101",
        "-y",
        "33",
        &sim,
    ]);
    tmux.wait_for_screen("=desk:agent", "❯", Duration::from_secs(20));
    let before = layout(&tmux);
    let home = tempfile::tempdir().expect("temp dir");
    let config = home.path().join("config.toml");
    std::fs::write(&config, format!("[tmux]\nsocket = \"{}\"\n", tmux.socket)).unwrap();

    let mut child = Command::new(env!("CARGO_BIN_EXE_clawmux"))
        .args(["adopt", "desk:0.0", "--json", "--config"])
        .arg(&config)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("clawmux adopt starts");
    let stdout = child.stdout.take().expect("stdout");
    let (lines_tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = lines_tx.send(line);
        }
    });
    until(
        || clients(&tmux).contains("ignore-size"),
        "clawmux adopt attached",
    )
    .await;
    assert_eq!(layout(&tmux), before, "attaching changed nothing");

    // The user types in their own terminal; clawmux sees the prompt.
    tmux.ok(&["send-keys", "-t", "=desk:agent", "-l", "/gsd:plan-phase 4"]);
    tmux.ok(&["send-keys", "-t", "=desk:agent", "Enter"]);
    let deadline = std::time::Instant::now() + crate::support::bridge::CARD_WAIT;
    let approval = loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let line = lines
            .recv_timeout(left)
            .expect("an approval detection in time");
        let value: serde_json::Value = serde_json::from_str(&line).expect("JSON lines");
        if value["kind"] == "approval" {
            break value;
        }
    };
    assert!(
        approval["question"]
            .as_str()
            .unwrap_or("")
            .contains("proceed"),
        "{approval}"
    );
    assert_eq!(layout(&tmux), before, "watching changed nothing");

    // Ctrl-C lets go: the client detaches, the pane is as it was.
    let pid = child.id().to_string();
    Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .expect("kill runs");
    let status = child.wait().expect("clawmux adopt exits");
    assert!(status.success(), "{status}");
    until(|| clients(&tmux).trim().is_empty(), "the client gone").await;
    assert_eq!(layout(&tmux), before, "let go as it was");
    assert!(
        tmux.capture("=desk:agent")
            .contains("Do you want to proceed?")
    );
}

/// After the user's tmux server restarts, the adopted pane's id belongs to
/// whatever started first, here in a session of the same name: it is not
/// the pane adopted, and gets no key and shows no screen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pane_with_the_adopted_id_on_a_restarted_server_is_not_typed_into() {
    let tmux = TmuxServer::new();
    let sim = format!("{} sim-agent", env!("CARGO_BIN_EXE_clawmux"));
    tmux.new_session("work", &sim);
    tmux.wait_for_screen("=work:", "❯", Duration::from_secs(20));
    let home = tempfile::tempdir().expect("temp dir");
    let config = crate::support::bridge::test_config(&tmux.socket, home.path());
    let mut b = Bridge::start_with(tmux, home, config).await;
    b.say("oc_1", "ou_alice", "/gsd:adopt work as mine").await;
    b.card_with("== Adopted ==").await;

    b.stop().await;
    b.tmux.ok(&["kill-server"]);
    // The new server's first pane is `%0` again, in a session named `work`
    // (tried again while the old server still shuts down).
    let new_pane = "sh -c 'echo a-secret-of-the-new-pane; exec cat'";
    let new_session = [
        "new-session",
        "-d",
        "-s",
        "work",
        "-x",
        "120",
        "-y",
        "40",
        new_pane,
    ];
    until(
        || b.tmux.run(&new_session).status.success(),
        "a new tmux server",
    )
    .await;
    let pane = b
        .tmux
        .ok(&["display-message", "-p", "-t", "=work:", "#{pane_id}"]);
    assert_eq!(pane.trim(), "%0");
    b.tmux.wait_for_screen(
        "=work:",
        "a-secret-of-the-new-pane",
        Duration::from_secs(10),
    );
    b.resume().await;

    b.say("oc_1", "ou_alice", "hello from chat").await;
    let refused = b.card_with("no longer the pane adopted").await;
    assert!(
        refused.text().contains("tmux server restarted"),
        "{}",
        refused.text()
    );
    b.say("oc_1", "ou_alice", "/gsd:screen").await;
    b.card("the screen refused", |e| {
        e.text().contains("no longer the pane adopted") && e.uuid != refused.uuid
    })
    .await;
    let screen = b.tmux.capture("=work:");
    assert!(!screen.contains("hello from chat"), "typed into:\n{screen}");
    let shown = b
        .seen
        .iter()
        .filter(|e| e.text().contains("a-secret-of-the-new-pane"));
    assert_eq!(shown.count(), 0, "the new pane's screen reached the chat");
}

/// A pane adopted on an ssh host has no workspace of clawmux's: its
/// record's is empty, and the host's fetch script used to start where ssh
/// logged in, so `/gsd:file` read the login's home, for a group member who
/// is not an approver too. No file is served from an adopted pane, whoever
/// asks; the chat is told why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_file_is_served_from_a_pane_adopted_on_an_ssh_host() {
    use clawmux::store::state::OutboxOp;
    let sshd = super::sshd::start();
    let (mut b, remote) = super::bridge_with_box(&sshd).await;
    remote.new_session("work", "sh");
    // A file in the ssh login's home (this user's), standing for its keys.
    let home = std::env::var_os("HOME").expect("HOME is set");
    let mut secret = tempfile::Builder::new()
        .prefix(".clawmux-test-secret-")
        .tempfile_in(&home)
        .expect("a file in the home");
    std::io::Write::write_all(&mut secret, b"-----BEGIN OPENSSH PRIVATE KEY-----\n").unwrap();
    let name = secret
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();

    b.say("oc_1", "ou_alice", "/gsd:adopt work@box as mine")
        .await;
    b.card_with("== Adopted ==").await;
    for who in ["ou_bob", "ou_alice"] {
        let asked = b.say("oc_1", who, &format!("/gsd:file {name}")).await;
        let refused = b
            .card(&format!("{who}'s refusal"), |e| {
                matches!(&e.op, OutboxOp::Send { reply_to: Some(r), .. } if *r == asked)
                    || matches!(&e.op, OutboxOp::File { reply_to: Some(r), .. } if *r == asked)
            })
            .await;
        assert!(
            refused.text().contains("File not sent")
                && refused.text().contains("adopted from a terminal"),
            "{who}: {}",
            refused.text()
        );
    }
    let files = b
        .seen
        .iter()
        .filter(|e| matches!(e.op, OutboxOp::File { .. }));
    assert_eq!(files.count(), 0, "nothing from the login's home was sent");
}
