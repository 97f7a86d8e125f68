//! GSD on a project behind ssh: its install and planning files are on the
//! host, read there through the host's own command (a private sshd on
//! 127.0.0.1, whose "host" file system is this one).

use crate::support::bridge::Shown;
use crate::support::bridge::{button_value, is_send};
use crate::support::sshd;

use super::{bridge_with_box, new_web_on_box};

/// A project-local GSD install in the host's workspace (`.claude/commands/
/// gsd/`): `/gsd-plan-phase 2` is typed `/gsd:plan-phase 2` in its pane; a
/// STATE.md written there mid-run shows on the progress card, and
/// `/gsd:status` shows the position it holds afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ssh_projects_gsd_install_and_planning_are_read_on_its_host() {
    let sshd = sshd::start();
    let (mut b, remote) = bridge_with_box(&sshd).await;
    new_web_on_box(&mut b).await;
    let workspace = b.home.path().join("box-ws/web");
    let commands = workspace.join(".claude/commands/gsd");
    std::fs::create_dir_all(&commands).unwrap();
    std::fs::write(commands.join("plan-phase.md"), "# plan-phase\n").unwrap();

    b.say("oc_1", "ou_alice", "/gsd-plan-phase 2").await;
    let approval = b.card_with("Approval needed").await;
    let screen = remote.capture("cm-web");
    assert!(
        screen.contains("/gsd:plan-phase 2") && !screen.contains("/gsd-plan-phase 2"),
        "typed in the host's install's spelling:\n{screen}"
    );
    // Mid-run, GSD writes its position on the host: the watch reads it
    // there, and the progress card shows it with nothing printed.
    let planning = workspace.join(".planning");
    std::fs::create_dir_all(&planning).unwrap();
    std::fs::write(
        planning.join("STATE.md"),
        "# Project State\n\nPhase: 1 of 3 (Catalogue)\nStatus: planning\n",
    )
    .unwrap();
    let card = b.card_with("GSD: phase 1 of 3 (Catalogue)").await;
    assert!(
        !is_send(&card),
        "the progress card, updated: {}",
        card.text()
    );
    b.click("oc_1", "ou_alice", button_value(&approval, "Yes"))
        .await;
    b.sent_with("Plans verified [3/3]").await;

    std::fs::write(
        planning.join("STATE.md"),
        "# Project State\n\nPhase: 2 of 3 (Cart)\nPlan: 1 of 2 in current phase\nStatus: executing\n",
    )
    .unwrap();
    b.say("oc_1", "ou_alice", "/gsd:status").await;
    let status = b
        .card("the status card", |e| {
            is_send(e) && e.text().contains("| web |") && e.text().contains("GSD planning")
        })
        .await;
    assert!(
        status
            .text()
            .contains("**web**: phase 2 of 3 (Cart) · plan 1 of 2 · executing"),
        "{}",
        status.text()
    );
}

/// `/gsd:file` for a project behind ssh reads the file on its host, with
/// the rules of this machine: inside the workspace (no symlink out), a
/// regular file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_of_an_ssh_project_is_read_on_its_host() {
    use clawmux::store::state::OutboxOp;
    let sshd = sshd::start();
    let (mut b, _remote) = bridge_with_box(&sshd).await;
    new_web_on_box(&mut b).await;
    let workspace = b.home.path().join("box-ws/web");
    std::fs::write(workspace.join("report.md"), b"# Report\nfrom the box\n").unwrap();
    std::fs::write(b.home.path().join("secret.txt"), b"not for chat").unwrap();
    std::os::unix::fs::symlink(b.home.path().join("secret.txt"), workspace.join("escape")).unwrap();

    b.say("oc_1", "ou_alice", "/gsd:file report.md").await;
    let sent = b
        .card("the file", |e| matches!(e.op, OutboxOp::File { .. }))
        .await;
    let OutboxOp::File {
        path, file_name, ..
    } = &sent.op
    else {
        unreachable!()
    };
    assert_eq!(file_name, "report.md");
    assert_eq!(std::fs::read(path).unwrap(), b"# Report\nfrom the box\n");

    // Outside and missing are one answer there too.
    for (asked, why) in [
        ("escape", "is not in the project's workspace"),
        ("../../secret.txt", "is not in the project's workspace"),
        ("nope.md", "is not in the project's workspace"),
    ] {
        b.say("oc_1", "ou_alice", &format!("/gsd:file {asked}"))
            .await;
        let refused = b
            .card(asked, |e| {
                e.text().contains("File not sent") && e.text().contains(asked)
            })
            .await;
        assert!(refused.text().contains(why), "{asked}: {}", refused.text());
    }
}
