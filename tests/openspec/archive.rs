//! The archive flow against the local Chorus server and the real `openspec`
//! CLI (tests that need the CLI say so and stop when it is not on PATH; CI
//! installs it).

use std::path::Path;

use clawmux::openspec::archive::{self, ArchiveError, Outcome};
use clawmux::openspec::chorus::ChorusClient;
use clawmux::openspec::cli::OpenSpecCli;

use super::chorus_server::{ChorusServer, Fault};

const SLUG: &str = "add-logout";
const PROJECT: &str = "proj-9";

const MAIN_AUTH: &str = "# auth Specification\n\n## Purpose\nAuthentication of the users of the service, kept long enough.\n\n## Requirements\n\n### Requirement: Login\nThe system SHALL let users log in.\n\n#### Scenario: Valid password\n- **WHEN** the password is right\n- **THEN** the user is in\n";
const DELTA_OK: &str = "## MODIFIED Requirements\n\n### Requirement: Login\nThe system SHALL let users log in with \"quotes\" and \\ backslashes.\n\n#### Scenario: Valid password\n- **WHEN** the password is right\n- **THEN** the user is in\n\n#### Scenario: Locked\n- **WHEN** locked\n- **THEN** refused\n\n## ADDED Requirements\n\n### Requirement: Logout\nThe system SHALL let users log out.\n\n#### Scenario: Click\n- **WHEN** they click\n- **THEN** they are out\n";
/// Drops the current spec's scenario: archive refuses it.
const DELTA_DROPS: &str = "## MODIFIED Requirements\n\n### Requirement: Login\nThe system SHALL log in.\n\n#### Scenario: Other\n- **WHEN** x\n- **THEN** y\n";

fn project(delta: &str, tasks: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let write = |rel: &str, content: &str| {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, content).expect("write");
    };
    write("openspec/specs/auth/spec.md", MAIN_AUTH);
    write(
        &format!("openspec/changes/{SLUG}/proposal.md"),
        "## Why\nLogout.\n",
    );
    write(
        &format!("openspec/changes/{SLUG}/specs/auth/spec.md"),
        delta,
    );
    write(&format!("openspec/changes/{SLUG}/tasks.md"), tasks);
    dir
}

/// The real OpenSpec CLI must be on PATH: the archive is its.
fn require_cli() {
    if OpenSpecCli::default().version().is_none() {
        crate::support::missing("The OpenSpec CLI", "npm install -g @fission-ai/openspec");
    }
}

struct World {
    server: ChorusServer,
    client: ChorusClient,
    proposal: String,
    doc: String,
}

async fn world(description: &str) -> World {
    let server = ChorusServer::start().await;
    let client = ChorusClient::new(&server.url, &server.api_key).expect("client");
    let proposal = server.add_proposal(PROJECT, description);
    // Same title, wrong type or project: must not be picked.
    server.add_document(PROJECT, "prd", "Spec: auth", "not me");
    server.add_document("other-project", "spec", "Spec: auth", "not me either");
    let doc = server.add_document(PROJECT, "spec", "Spec: auth", "old");
    World {
        server,
        client,
        proposal,
        doc,
    }
}

impl World {
    async fn archive(&self, root: &Path) -> Result<Outcome, ArchiveError> {
        archive::archive(
            &self.client,
            &OpenSpecCli::default(),
            root,
            SLUG,
            &self.proposal,
        )
        .await
    }
}

fn described() -> String {
    format!("Add logout.\n\nOpenSpec change slug: {SLUG}\n")
}

fn change_exists(root: &Path) -> bool {
    root.join("openspec/changes").join(SLUG).is_dir()
}

#[tokio::test]
async fn open_tasks_mean_no_archive() {
    let dir = project(DELTA_OK, "## 1. W\n- [x] 1.1 a\n- [ ] 1.2 b\n");
    let w = world(&described()).await;
    let out = w.archive(dir.path()).await.expect("runs");
    assert!(
        matches!(&out, Outcome::NotReady(r) if r.contains("1 of 2 tasks")),
        "{out:?}"
    );
    assert!(change_exists(dir.path()));
    assert!(w.server.state().comments.is_empty());
    assert_eq!(
        w.server.state().requests.len(),
        0,
        "nothing asked of Chorus before the tasks are done"
    );
}

#[tokio::test]
async fn no_slug_line_means_no_archive() {
    let dir = project(DELTA_OK, "- [x] 1.1 a\n");
    for description in [
        "Add logout.",
        "OpenSpec change slug: other-change",
        "openspec change slug: add-logout",
    ] {
        let w = world(description).await;
        let out = w.archive(dir.path()).await.expect("runs");
        assert!(
            matches!(&out, Outcome::NotReady(r) if r.contains("OpenSpec change slug: add-logout")),
            "{out:?}"
        );
        assert!(change_exists(dir.path()));
    }
}

#[tokio::test]
async fn archive_mirrors_the_merged_spec_byte_for_byte() {
    require_cli();
    let dir = project(DELTA_OK, "## 1. W\n- [x] 1.1 a\n- [X] 1.2 b\n");
    let w = world(&described()).await;
    let out = w.archive(dir.path()).await.expect("archive");
    assert_eq!(
        out,
        Outcome::Archived {
            mirrored: vec![("auth".into(), w.doc.clone())]
        }
    );
    assert!(
        !change_exists(dir.path()),
        "openspec archive moves the change"
    );
    let merged =
        std::fs::read_to_string(dir.path().join("openspec/specs/auth/spec.md")).expect("merged");
    assert!(
        merged.contains("### Requirement: Logout") && merged.contains("#### Scenario: Locked"),
        "{merged}"
    );
    let st = w.server.state();
    assert_eq!(st.documents[&w.doc].content, merged);
    assert_eq!(st.documents[&w.doc].version, 2);
    assert!(
        st.documents
            .values()
            .filter(|d| d.content.starts_with("not me"))
            .count()
            == 2
    );
    assert!(st.comments.is_empty());
}

#[tokio::test]
async fn a_refused_archive_is_commented_on_the_proposal() {
    require_cli();
    let dir = project(DELTA_DROPS, "- [x] 1.1 a\n");
    let w = world(&described()).await;
    let err = w
        .archive(dir.path())
        .await
        .expect_err("archive must refuse to drop a scenario");
    assert!(
        matches!(&err, ArchiveError::Failed { step, comment: Ok(()), .. } if step == "openspec archive"),
        "{err}"
    );
    assert!(change_exists(dir.path()));
    let st = w.server.state();
    assert_eq!(st.comments.len(), 1);
    let c = &st.comments[0];
    assert_eq!(
        (c.target_type.as_str(), c.target.as_str()),
        ("proposal", w.proposal.as_str())
    );
    assert!(
        c.content.contains("openspec archive") && c.content.contains("Valid password"),
        "{}",
        c.content
    );
    assert_eq!(st.documents[&w.doc].content, "old");
}

#[tokio::test]
async fn a_failed_document_update_is_commented_and_stops() {
    require_cli();
    let dir = project(DELTA_OK, "- [x] 1.1 a\n");
    let w = world(&described()).await;
    w.server.set_fault(
        "chorus_pm_update_document",
        Fault::Status(500, "db down".into()),
    );
    let err = w.archive(dir.path()).await.expect_err("must halt");
    let msg = err.to_string();
    assert!(
        msg.contains("HTTP status 500")
            && msg.contains("db down")
            && msg.contains("posted as a comment"),
        "{msg}"
    );
    let st = w.server.state();
    assert_eq!(st.comments.len(), 1);
    assert!(st.comments[0].content.contains("db down"));
}

#[tokio::test]
async fn a_missing_document_is_commented_and_a_failed_comment_is_reported() {
    require_cli();
    let dir = project(DELTA_OK, "- [x] 1.1 a\n");
    let w = world(&described()).await;
    w.server
        .state()
        .documents
        .retain(|_, d| d.kind != "spec" || d.project != PROJECT);
    w.server.set_fault("chorus_add_comment", Fault::EmptyOk);
    let err = w.archive(dir.path()).await.expect_err("must halt");
    let msg = err.to_string();
    assert!(
        msg.contains("no spec document titled \"Spec: auth\""),
        "{msg}"
    );
    assert!(
        msg.contains("posting the failure comment ALSO failed") && msg.contains("empty body"),
        "{msg}"
    );
}
