//! `/gsd:file` against the local Feishu server: a workspace file is
//! uploaded (`im/v1/files`) and sent as a file message replying to the
//! command; a path outside the workspace (`..`, a symlink, an absolute
//! path) is refused with the same answer as a missing one.

use std::time::Duration;

use crate::support::fake_feishu::{FakeFeishu, Kind};
use crate::support::feishu_serve::{card, demo_project, feishu_config, start};
use crate::support::tmux::TmuxServer;

const WAIT: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_file_is_sent_and_nothing_outside_it() {
    let fake = FakeFeishu::start().await;
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let config = feishu_config(&tmux, home.path(), &fake);
    let _live = start(&config, home.path()).await;
    assert!(fake.wait_connected(1, WAIT).await, "long connection up");
    demo_project(&fake).await;
    let ws = home.path().join("ws/demo");
    std::fs::write(ws.join("report.md"), b"# Report\nall good\n").unwrap();
    std::fs::write(home.path().join("secret.txt"), b"not for chat").unwrap();
    std::os::unix::fs::symlink(home.path().join("secret.txt"), ws.join("escape")).unwrap();

    let asked = fake.push_message("oc_1", "ou_alice", "/gsd:file report.md");
    let sent = card(&fake, "the file message", |c| c.kind == Kind::File).await;
    assert_eq!(sent.target, asked.message_id, "it replies to the command");
    let files = fake.files();
    assert_eq!(files.len(), 1, "one upload");
    assert_eq!(files[0].1, "report.md");
    assert_eq!(files[0].2, b"# Report\nall good\n");

    // Outside (`..`, a symlink, an absolute path) and missing: one answer,
    // so a chat cannot tell which paths exist on the host.
    let mut answers = Vec::new();
    for path in [
        "../../secret.txt",
        "../../no-secret.txt",
        "escape",
        "/etc/passwd",
        "/etc/no-such-file",
        "nothing-here.txt",
    ] {
        fake.push_message("oc_1", "ou_alice", &format!("/gsd:file {path}"));
        let refused = card(&fake, "a refusal", |c| {
            c.title() == "File not sent" && c.card_text().contains(&format!("`{path}`"))
        })
        .await;
        let text = refused.card_text().replace(path, "PATH");
        assert!(
            text.contains("`PATH` is not in the project's workspace"),
            "{text}"
        );
        answers.push(text);
    }
    answers.dedup();
    assert_eq!(answers.len(), 1, "one answer: {answers:?}");
    assert_eq!(fake.files().len(), 1, "nothing else was uploaded");
}
