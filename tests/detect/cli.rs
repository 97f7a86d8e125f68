//! `clawmux detect` on recordings: deterministic JSON lines, clear errors.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use super::live::clawmux;

fn detect(args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(clawmux())
        .arg("detect")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

/// A control-mode recording in tmux's own escaping.
fn recording(outputs: &[&str]) -> Vec<u8> {
    let mut rec = b"%begin 1 1 0\n%end 1 1 0\n%session-changed $0 a\n".to_vec();
    for o in outputs {
        rec.extend_from_slice(b"%output %3 ");
        rec.extend_from_slice(&clawmux::control::escape(o.as_bytes()));
        rec.push(b'\n');
    }
    rec
}

#[test]
fn prints_detections_as_json_lines() {
    let idle = "\r\n──────────\r\n❯ \r\n──────────\r\n  ? for shortcuts";
    let rec = recording(&[
        "\r\x1b[2K✶ Working… (0s · esc to interrupt)",
        "\r\x1b[2K⏺ API Error: 401 Invalid API key · Please run /login\r\n",
        "Progress: ████░░ 60%\r\n",
        &format!("✻ Churned for 1s\r\n{idle}"),
    ]);
    let out = detect(&["--profile", "claude"], &rec);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = lines.iter().map(|l| l["kind"].as_str().unwrap()).collect();
    // The agent's error row is judged at the end of the turn.
    assert_eq!(kinds, ["busy", "progress", "error", "completed"]);
    assert!(lines.iter().all(|l| l["pane"] == "%3"));
    assert_eq!(lines[1]["percent"], 60);
    // Deterministic: the same input gives the same bytes.
    assert_eq!(
        detect(&["--profile", "claude"], &rec).stdout,
        detect(&["--profile", "claude"], &rec).stdout
    );
}

#[test]
fn bad_profile_or_pattern_is_a_usage_error() {
    let out = detect(&["--profile", "nope"], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown profile \"nope\""));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.toml");
    std::fs::write(&path, "[profiles.claude]\nerrors = ['(oops']\n").unwrap();
    let out = detect(&["--profiles", path.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("profile \"claude\", errors: bad pattern \"(oops\""),
        "{err}"
    );
}
