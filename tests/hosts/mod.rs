//! Projects on a second host over a real `ssh` to a private sshd on
//! 127.0.0.1, through the real daemon and the simulated agent: created,
//! approved, finished; the connection cut mid-command and the host down
//! for a while, with nothing lost and the chat told; an unreachable host
//! reported with ssh's own message while local projects go on. And
//! adopting a session clawmux did not create, leaving it as it was.

mod adopt;
mod gsd;

use std::path::Path;

use clawmux::bridge::config::{Config, HostConfig};
use clawmux::bridge::panes::hosts::MAX_LISTED_LINE_CHARS;
use clawmux::bridge::panes::transcript::GAP_LINE;

use crate::support::bridge::Shown;
use crate::support::bridge::{Bridge, button_value, is_send, test_config};
use crate::support::fake_feishu::FakeFeishu;
use crate::support::feishu_serve::{card, feishu_config, image_refused, start};
use crate::support::sshd::{self, Sshd};
use crate::support::tmux::TmuxServer;

/// The daemon's config with host `name` reached by `command`, its projects
/// on the far side's server `remote` (a private socket) in `root`.
fn with_host(
    config: &mut Config,
    name: &str,
    command: Vec<String>,
    remote: &TmuxServer,
    root: &Path,
) {
    config.hosts.insert(
        name.into(),
        HostConfig {
            command,
            socket: Some(remote.socket.clone()),
            workspace_root: Some(root.display().to_string()),
            remote_shell: None,
            timeout_secs: None,
        },
    );
}

/// A daemon with host `box` behind `sshd`; the far side's tmux server.
async fn bridge_with_box(sshd: &Sshd) -> (Bridge, TmuxServer) {
    let local = TmuxServer::new();
    let remote = TmuxServer::new();
    let home = tempfile::tempdir().expect("temp dir");
    let mut config = test_config(&local.socket, home.path());
    let root = home.path().join("box-ws");
    with_host(&mut config, "box", sshd.ssh_tmux(), &remote, &root);
    (Bridge::start_with(local, home, config).await, remote)
}

/// Creates `web@box` from chat oc_1 and waits for its first result.
async fn new_web_on_box(b: &mut Bridge) {
    b.say("oc_1", "ou_alice", "/gsd:new-project web@box").await;
    let ready = b.card_with("Created **web** on host **box**").await;
    assert!(ready.text().contains("box-ws/web"), "{}", ready.text());
    b.card("web's first result", |e| {
        is_send(e)
            && e.text().contains("You said: /gsd:new-project")
            && e.text().contains("web@box: /gsd:new-project")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_on_an_ssh_host_runs_end_to_end() {
    let sshd = sshd::start();
    let (mut b, remote) = bridge_with_box(&sshd).await;
    new_web_on_box(&mut b).await;
    // The session is on the far side's server, made through ssh, and the
    // workspace was made by the pane there.
    remote.ok(&["has-session", "-t", "=cm-web"]);
    assert!(
        !b.tmux
            .run(&["has-session", "-t", "=cm-web"])
            .status
            .success()
    );
    assert!(b.home.path().join("box-ws/web").is_dir());
    let watch = remote.ok(&[
        "list-clients",
        "-F",
        "#{client_session} #{client_control_mode}",
    ]);
    assert_eq!(
        watch.trim(),
        "clawmux-watch 1",
        "one watch client on the host"
    );

    b.say("oc_1", "ou_alice", "/gsd:plan-phase 2").await;
    let approval = b.card_with("Approval needed").await;
    let yes = button_value(&approval, "Yes");
    b.click("oc_1", "ou_alice", yes).await;
    let result = b.sent_with("Plans verified [3/3]").await;
    assert!(
        result.text().contains("web@box: /gsd:plan-phase 2"),
        "{}",
        result.text()
    );

    b.say("oc_1", "ou_alice", "/gsd:status").await;
    let status = b.card_with("| web | idle |").await;
    assert!(status.text().contains("| box |"), "{}", status.text());
    assert!(
        sshd.log().iter().any(|l| l.contains("Accepted publickey")),
        "{:?}",
        sshd.log()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cutting_the_ssh_connection_mid_command_loses_nothing_and_says_so() {
    let sshd = sshd::start();
    let (mut b, _remote) = bridge_with_box(&sshd).await;
    new_web_on_box(&mut b).await;
    b.say("oc_1", "ou_alice", "/gsd:plan-phase 2").await;
    let approval = b.card_with("Approval needed").await;

    // Mid-command (the agent waits at its prompt): the connection dies.
    assert!(sshd.kill_connections() >= 1, "a connection to cut");
    let back = b.card_with("== Reconnected ==").await;
    assert!(back.text().contains("**box**"), "{}", back.text());
    assert!(
        back.text().contains("ssh") || back.text().contains("tmux"),
        "{}",
        back.text()
    );

    // The prompt is the same one: its button still answers it, once.
    let yes = button_value(&approval, "Yes");
    b.click("oc_1", "ou_alice", yes).await;
    let result = b.sent_with("Plans verified [3/3]").await;
    assert!(
        result.text().contains("Ran make build-check-phase-2: ok"),
        "{}",
        result.text()
    );
    let approvals = b
        .seen
        .iter()
        .filter(|e| is_send(e) && e.text().contains("Approval needed"));
    assert_eq!(approvals.count(), 1, "the prompt was not reported twice");
    let events = b.events();
    assert!(events.iter().any(|r| r.kind == "reconnected"));
    assert!(
        !events
            .iter()
            .any(|r| r.kind == "session_lost" || r.kind == "failed")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_down_for_a_while_is_reported_and_reconnected_with_backoff() {
    let mut sshd = sshd::start();
    let (mut b, _remote) = bridge_with_box(&sshd).await;
    new_web_on_box(&mut b).await;
    b.say("oc_1", "ou_alice", "/gsd:plan-phase 2").await;
    let approval = b.card_with("Approval needed").await;

    sshd.stop();
    let down = b.card_with("== Host unreachable ==").await;
    assert!(
        down.text().contains("Connection refused"),
        "ssh's own words: {}",
        down.text()
    );
    sshd.start_again().expect("sshd back");
    b.card_with("== Reconnected ==").await;
    b.click("oc_1", "ou_alice", button_value(&approval, "Yes"))
        .await;
    let result = b.sent_with("Plans verified [3/3]").await;
    assert!(
        result.text().contains("Ran make build-check-phase-2: ok"),
        "{}",
        result.text()
    );
    // Output the agent printed while the host was away is marked, not
    // silently missing.
    assert!(result.text().contains(GAP_LINE), "{}", result.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_host_is_reported_with_ssh_words_and_others_go_on() {
    let local = TmuxServer::new();
    let remote = TmuxServer::new();
    let home = tempfile::tempdir().expect("temp dir");
    let mut config = test_config(&local.socket, home.path());
    let key = home.path().join("no-such-key");
    let root = home.path().join("gone-ws");
    with_host(
        &mut config,
        "gone",
        sshd::ssh_tmux(sshd::closed_port(), &key),
        &remote,
        &root,
    );
    let mut b = Bridge::start_with(local, home, config).await;

    b.say("oc_2", "ou_alice", "/gsd:new-project web@gone").await;
    let failed = b.card_with("== Command failed ==").await;
    assert!(
        failed.text().contains("host gone is unreachable"),
        "{}",
        failed.text()
    );
    assert!(
        failed.text().contains("Connection refused")
            && failed.text().contains("ssh: connect to host 127.0.0.1"),
        "ssh's own message: {}",
        failed.text()
    );

    // A local project is not held up by the dead host.
    b.say("oc_1", "ou_alice", "/gsd:new-project here").await;
    b.card("here's first result", |e| {
        is_send(e) && e.text().contains("here: /gsd:new-project") && e.text().contains("You said")
    })
    .await;
    b.say("oc_2", "ou_alice", "/gsd:new-project web@nowhere")
        .await;
    let unknown = b.card_with("== Unknown host ==").await;
    assert!(
        unknown.text().contains("gone"),
        "names the known hosts: {}",
        unknown.text()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_that_never_answers_or_never_stops_is_bounded_and_hides_no_other() {
    let local = TmuxServer::new();
    let remote = TmuxServer::new();
    let home = tempfile::tempdir().expect("temp dir");
    let mut config = test_config(&local.socket, home.path());
    let root = home.path().join("hung-ws");
    // An ssh that connects to nothing and never gives up (a black-holed
    // route): its tmux arguments are ignored.
    let hang = ["sh", "-c", "exec sleep 600", "ssh"]
        .map(String::from)
        .to_vec();
    with_host(&mut config, "hung", hang, &remote, &root);
    if let Some(host) = config.hosts.get_mut("hung") {
        host.timeout_secs = Some(1);
    }
    // A host that prints without end: cut at its bound, not read whole.
    let endless = ["sh", "-c", "exec yes", "ssh"].map(String::from).to_vec();
    with_host(&mut config, "chatty", endless, &remote, &root);
    // A pane line far longer than a card: cut, not split over cards.
    let long_name = "s".repeat(2_000);
    local.new_session(&long_name, "cat");
    let mut b = Bridge::start_with(local, home, config).await;

    b.say("oc_1", "ou_alice", "/gsd:new-project here").await;
    b.card("here's first result", |e| {
        is_send(e) && e.text().contains("here: /gsd:new-project") && e.text().contains("You said")
    })
    .await;
    // Every host is asked at once; the hung one is named, the others listed.
    b.say("oc_1", "ou_alice", "/gsd:sessions").await;
    let listed = b.card_with("**hung**").await;
    assert!(listed.text().contains("cm-here"), "{}", listed.text());
    assert!(
        listed
            .text()
            .contains("host hung is unreachable: no answer within 1 s"),
        "{}",
        listed.text()
    );
    assert!(
        listed
            .text()
            .contains("host chatty printed more than 4 MiB"),
        "{}",
        listed.text()
    );
    let cut = format!("{}…", "s".repeat(MAX_LISTED_LINE_CHARS));
    assert!(listed.text().contains(&cut), "{}", listed.text());
    assert!(listed.text().len() < 1_500, "{} bytes", listed.text().len());
    // A project there fails in its time, and the chat goes on.
    b.say("oc_2", "ou_alice", "/gsd:new-project web@hung").await;
    let failed = b.card_with("== Command failed ==").await;
    assert!(
        failed.text().contains("no answer within 1 s"),
        "{}",
        failed.text()
    );
    b.say("oc_2", "ou_alice", "/gsd:status").await;
    b.card_with("== Status ==").await;
}

/// An image from chat for a project on an ssh host is refused with the
/// reason told to the chat, nothing typed and nothing written on either
/// side (before, it was saved on the gateway, where the agent cannot read
/// it).
///
/// Passes by `Images::folder` (`src/bridge/channels/chat_images.rs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_for_a_project_on_an_ssh_host_is_refused_with_its_reason() {
    let sshd = sshd::start();
    let fake = FakeFeishu::start().await;
    let local = TmuxServer::new();
    let remote = TmuxServer::new();
    let home = tempfile::tempdir().expect("temp dir");
    let root = home.path().join("box-ws");
    let mut config = feishu_config(&local, home.path(), &fake);
    with_host(&mut config, "box", sshd.ssh_tmux(), &remote, &root);
    let _live = start(&config, home.path()).await;
    assert!(
        fake.wait_connected(1, std::time::Duration::from_secs(60))
            .await,
        "long connection up"
    );

    fake.push_message("oc_1", "ou_alice", "/gsd:new-project web@box");
    card(&fake, "web's first result", |c| {
        c.card_text().contains("You said: /gsd:new-project") && c.title().starts_with("web@box")
    })
    .await;
    image_refused(&fake, home.path(), "web", "runs on").await;
    let screen = remote.capture("=cm-web:");
    assert!(!screen.contains("Image from chat"), "typed:\n{screen}");
    assert!(screen.contains("after the image web"), "{screen}");
    assert!(!root.join("web/.clawmux").exists(), "written on the host");
}
