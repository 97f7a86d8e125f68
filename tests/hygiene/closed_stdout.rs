//! Commands whose reader went away (`clawmux … | head -0`): each ends
//! successfully and quietly instead of panicking on the closed pipe.

use clawmux::bridge::access::pairing::{Pairing, PendingPairing};

use super::clawmux;

#[test]
fn a_closed_stdout_is_not_a_panic() {
    let home = tempfile::tempdir().expect("temp dir");
    // Something for `pairing list` to print.
    let pending = PendingPairing {
        open_id: "ou_waiting".into(),
        created_ms: clawmux::store::clock::now_ms(),
    };
    Pairing::new(home.path())
        .save_pending("ABCDEFGH", pending)
        .expect("a pending code");
    let root = home.path().to_str().expect("utf-8 temp dir");
    let commands: [&[&str]; 3] = [
        &["pairing", "list"],
        &["openspec", "slug-line", "add-cart"],
        &["openspec", "detect", "--root", root],
    ];
    for args in commands {
        let (reader, writer) = std::io::pipe().expect("pipe");
        drop(reader);
        let out = clawmux(home.path(), args)
            .stdout(writer)
            .output()
            .expect("run clawmux");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {out:?}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

/// Diagnostics written to a redirected stderr carry no colour codes, and
/// `sim-agent --help` reads as user text, not as a Rust module path.
#[test]
fn help_and_logs_are_plain_text() {
    let home = tempfile::tempdir().expect("temp dir");
    let out = clawmux(home.path(), &["sim-agent", "--help"])
        .output()
        .expect("run clawmux");
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(!help.contains("clawmux::"), "{help}");
    // No serve to forward to: the hook logs that at debug level.
    let out = clawmux(home.path(), &["hook"])
        .env("CLAWMUX_LOG", "debug")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run clawmux");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("hook not forwarded"), "{stderr}");
    assert!(!stderr.contains('\u{1b}'), "{stderr:?}");
}

/// `clawmux detect | head`: detections written to a closed pipe end the
/// command quietly with exit 0.
#[test]
fn detect_into_a_closed_pipe_ends_quietly() {
    use std::io::Write;
    let home = tempfile::tempdir().expect("temp dir");
    let recording = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/claude-2.1.197/api_error_400.rec");
    let bytes = std::fs::read(&recording).expect("a recording");
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let mut child = clawmux(home.path(), &["detect", "--profile", "claude"])
        .stdin(std::process::Stdio::piped())
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run clawmux");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(&bytes).expect("the recording written");
    drop(stdin);
    let out = child.wait_with_output().expect("clawmux ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{out:?}");
    assert!(stderr.is_empty(), "{stderr}");
}
