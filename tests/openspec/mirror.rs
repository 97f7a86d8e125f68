//! Mirror and Chorus client against the local Chorus-protocol server:
//! byte-exact round trips of awkward files, reruns that update instead of
//! duplicating, and every failure signal halting with the body shown.

use std::path::Path;

use clawmux::openspec::chorus::{ChorusClient, ChorusError};
use clawmux::openspec::mirror::{self, Action, STATE_FILE};
use serde_json::json;

use super::chorus_server::{ChorusServer, Fault, ReplyMode};

const SLUG: &str = "add-export-csv";

/// Awkward bytes: backslashes, quotes, CRLF, zero-width characters, a BOM,
/// tabs, control characters, an escaped fence and non-BMP text.
fn awkward() -> String {
    "\u{FEFF}# PRD: \"quoted\" \\ back\\slash \\n not-a-newline\r\n\
     | col | a\u{200B}b | c\u{200D}d |\r\n\u{2028}line sep\ttab\u{1}ctl\u{7F}\n\
     ```md\n\\`\\`\\` escaped fence\n```\n🦀 é 中文 \u{FFFD}\nno trailing newline"
        .to_string()
}

/// A change folder with the awkward proposal, a 1 MB design, two specs and
/// a tasks.md that must never be mirrored.
fn change_folder(root: &Path) -> Vec<(&'static str, String)> {
    let big: String = (0..)
        .map(|i| format!("line {i} \\ \"q\" \t\u{200B}\r\n"))
        .scan(0usize, |len, l| {
            *len += l.len();
            (*len <= 1_048_576).then_some(l)
        })
        .collect();
    let files = vec![
        ("proposal.md", awkward()),
        ("design.md", big),
        ("specs/auth/spec.md", "## ADDED Requirements\n### Requirement: A\nThe system SHALL \\escape \"x\".\n\n#### Scenario: s\n- x\n".to_string()),
        ("specs/area/billing/spec.md", "## REMOVED Requirements\n### Requirement: Old\n\n".to_string()),
        ("tasks.md", "## 1. Do\n- [ ] 1.1 TASKS-MUST-NOT-BE-MIRRORED\n".to_string()),
    ];
    let dir = root.join("openspec/changes").join(SLUG);
    for (rel, content) in &files {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, content).expect("write");
    }
    files
}

async fn setup() -> (
    ChorusServer,
    tempfile::TempDir,
    String,
    Vec<(&'static str, String)>,
) {
    let server = ChorusServer::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let files = change_folder(dir.path());
    let proposal = server.add_proposal("proj-1", &format!("Idea\nOpenSpec change slug: {SLUG}"));
    (server, dir, proposal, files)
}

fn client(server: &ChorusServer) -> ChorusClient {
    ChorusClient::new(&server.url, &server.api_key).expect("client")
}

#[tokio::test]
async fn mirror_round_trips_awkward_files_byte_for_byte() {
    for mode in [ReplyMode::Sse, ReplyMode::Json] {
        let (server, dir, proposal, files) = setup().await;
        server.state().reply = mode;
        let client = client(&server);
        let actions = mirror::mirror(&client, dir.path(), SLUG, &proposal, "Export CSV")
            .await
            .expect("mirror");
        assert_eq!(actions.len(), 4, "{actions:?}");
        assert!(actions.iter().all(|a| matches!(a, Action::Created { .. })));

        let drafts = server.state().drafts.clone();
        assert_eq!(drafts.len(), 4);
        for (rel, content) in files.iter().filter(|(rel, _)| *rel != "tasks.md") {
            let found = drafts
                .values()
                .filter(|d| d.content == format!("{content}\n"))
                .count();
            assert_eq!(
                found, 1,
                "{rel} not stored byte for byte (+ the server's newline)"
            );
        }
        let kinds: Vec<(String, String)> = drafts
            .values()
            .map(|d| (d.kind.clone(), d.title.clone()))
            .collect();
        for expected in [
            ("prd", "PRD: Export CSV"),
            ("tech_design", "Tech design: Export CSV"),
            ("spec", "Spec: auth"),
            ("spec", "Spec: area/billing"),
        ] {
            assert!(
                kinds.contains(&(expected.0.into(), expected.1.into())),
                "{kinds:?}"
            );
        }
        assert!(
            drafts
                .values()
                .all(|d| !d.content.contains("TASKS-MUST-NOT-BE-MIRRORED"))
        );
        // The wire carried the exact bytes (JSON string escaping only).
        let sent = server.sent_contents();
        assert!(sent.contains(&awkward()));
        assert!(sent.iter().any(|c| c.len() > 1_000_000));

        let mismatches = mirror::check(&client, dir.path(), SLUG, &proposal)
            .await
            .expect("check");
        assert!(mismatches.is_empty(), "{mismatches:?}");

        // One changed byte on the server is found.
        let id = drafts
            .iter()
            .find(|(_, d)| d.kind == "prd")
            .map(|(k, _)| k.clone())
            .expect("prd");
        server.state().drafts.get_mut(&id).expect("draft").content =
            awkward().replace('\u{200B}', "") + "\n";
        let mismatches = mirror::check(&client, dir.path(), SLUG, &proposal)
            .await
            .expect("check");
        assert_eq!(mismatches.len(), 1);
        assert_eq!(mismatches[0].rel, "proposal.md");
        assert!(mismatches[0].detail.contains("first difference at byte"));
    }
}

#[tokio::test]
async fn rerun_updates_the_recorded_drafts() {
    let (server, dir, proposal, _) = setup().await;
    let client = client(&server);
    mirror::mirror(&client, dir.path(), SLUG, &proposal, SLUG)
        .await
        .expect("first");
    let change = dir.path().join("openspec/changes").join(SLUG);
    std::fs::write(change.join("proposal.md"), "edited\r\n").expect("edit");
    let actions = mirror::mirror(&client, dir.path(), SLUG, &proposal, SLUG)
        .await
        .expect("second");
    assert!(
        actions.iter().all(|a| matches!(a, Action::Updated { .. })),
        "{actions:?}"
    );
    let st = server.state();
    assert_eq!(st.drafts.len(), 4, "a rerun must not duplicate drafts");
    assert!(
        st.drafts
            .values()
            .any(|d| d.kind == "prd" && d.content == "edited\r\n\n")
    );
    drop(st);
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(change.join(STATE_FILE)).expect("state"))
            .expect("json");
    assert_eq!(record["proposalUuid"], proposal.as_str());
    assert_eq!(record["drafts"].as_object().map(|m| m.len()), Some(4));
}

#[tokio::test]
async fn a_failure_halfway_keeps_the_created_ids() {
    let (server, dir, proposal, _) = setup().await;
    let client = client(&server);
    server.set_fault_after(
        "chorus_pm_add_document_draft",
        2,
        Fault::IsError("boom".into()),
    );
    let err = mirror::mirror(&client, dir.path(), SLUG, &proposal, SLUG)
        .await
        .expect_err("must halt");
    assert!(
        err.to_string().contains("result.isError") && err.to_string().contains("boom"),
        "{err}"
    );
    assert_eq!(server.state().drafts.len(), 2);
    let record = std::fs::read(
        dir.path()
            .join("openspec/changes")
            .join(SLUG)
            .join(STATE_FILE),
    )
    .expect("state");
    let record: serde_json::Value = serde_json::from_slice(&record).expect("json");
    assert_eq!(record["drafts"].as_object().map(|m| m.len()), Some(2));

    server.clear_faults();
    let actions = mirror::mirror(&client, dir.path(), SLUG, &proposal, SLUG)
        .await
        .expect("rerun");
    let updated = actions
        .iter()
        .filter(|a| matches!(a, Action::Updated { .. }))
        .count();
    assert_eq!((updated, actions.len()), (2, 4), "{actions:?}");
    assert_eq!(
        server.state().drafts.len(),
        4,
        "no duplicates after the rerun"
    );
}

#[tokio::test]
async fn every_failure_signal_halts_with_the_body() {
    let faults: Vec<(Fault, &str)> = vec![
        (
            Fault::Status(500, "upstream exploded".into()),
            "HTTP status 500; body: upstream exploded",
        ),
        (Fault::EmptyOk, "empty body (HTTP 200)"),
        (
            Fault::Garbage,
            "invalid JSON); body: <html>Bad Gateway</html>",
        ),
        (
            Fault::RpcError(-32602, "Invalid params".into()),
            "JSON-RPC error -32602: Invalid params",
        ),
        (
            Fault::IsError("Proposal is not in draft status".into()),
            "tool failed (result.isError): Proposal is not in draft status",
        ),
        (Fault::ErrorKey, "\"error\" key in the result; body:"),
    ];
    for (fault, expected) in faults {
        let (server, dir, proposal, _) = setup().await;
        server.set_fault("chorus_pm_add_document_draft", fault.clone());
        let err = mirror::mirror(&client(&server), dir.path(), SLUG, &proposal, SLUG)
            .await
            .expect_err("no failure may pass silently");
        let msg = err.to_string();
        assert!(
            msg.starts_with("chorus_pm_add_document_draft: ") && msg.contains(expected),
            "{fault:?}: {msg}"
        );
        assert!(
            !dir.path()
                .join("openspec/changes")
                .join(SLUG)
                .join(STATE_FILE)
                .exists()
        );
    }
}

#[tokio::test]
async fn a_bad_key_is_a_401_whatever_the_body() {
    for body in [r#"{"error":"Invalid API key"}"#, ""] {
        let server = ChorusServer::start().await;
        server.state().unauthorized_body = body.into();
        let client = ChorusClient::new(&server.url, "wrong-key").expect("client");
        let err = client
            .call_tool("chorus_get_document", json!({"documentUuid": "x"}))
            .await
            .expect_err("401");
        assert!(
            matches!(err, ChorusError::Status { status: 401, .. }),
            "{err}"
        );
        assert!(err.to_string().contains(body), "{err}");
    }
}

#[tokio::test]
async fn a_dead_server_is_a_transport_error() {
    // Nothing listens on a port we bound and released.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let dead = format!("http://{}", listener.local_addr().expect("addr"));
    drop(listener);
    let client = ChorusClient::new(&dead, "k").expect("client");
    let err = client
        .call_tool("chorus_get_document", json!({}))
        .await
        .expect_err("transport");
    assert!(matches!(err, ChorusError::Transport { .. }), "{err}");
    assert!(
        err.to_string()
            .starts_with("chorus_get_document: transport error:"),
        "{err}"
    );
}

#[tokio::test]
async fn the_fixture_rejects_what_the_real_server_rejects() {
    let server = ChorusServer::start().await;
    let http = reqwest::Client::new();
    let body =
        json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}});
    let r = http
        .post(format!("{}/api/mcp", server.url))
        .bearer_auth(&server.api_key)
        .json(&body)
        .send()
        .await
        .expect("send");
    assert_eq!(
        r.status().as_u16(),
        406,
        "a client without the right Accept must be refused"
    );
    let r = http
        .post(format!("{}/api/mcp", server.url))
        .bearer_auth(&server.api_key)
        .header("Accept", "application/json, text/event-stream")
        .json(&body)
        .send()
        .await
        .expect("send");
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    let text = r.text().await.expect("text");
    assert!(
        text.starts_with("event: message\ndata: {") && text.contains("\"isError\":true"),
        "{text}"
    );
}

#[tokio::test]
async fn cli_mirror_and_check_exit_codes() {
    let (server, dir, proposal, _) = setup().await;
    let run = |key: String, extra: &'static [&'static str]| {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_clawmux"));
        cmd.args([
            "openspec",
            "mirror",
            SLUG,
            "--proposal",
            &proposal,
            "--root",
        ])
        .arg(dir.path())
        .args(extra)
        .env("CHORUS_URL", &server.url)
        .env("CHORUS_API_KEY", key);
        cmd.output()
    };
    let out = run(server.api_key.clone(), &[]).await.expect("run");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout)
            .matches("created ")
            .count(),
        4
    );
    let out = run(server.api_key.clone(), &["--check"])
        .await
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = run("bad".into(), &[]).await.expect("run");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("HTTP status 401") && err.contains("Invalid API key"),
        "{err}"
    );
}
