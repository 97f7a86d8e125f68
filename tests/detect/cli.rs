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

#[test]
fn a_profiles_file_without_end_is_refused() {
    let out = detect(&["--profiles", "/dev/zero"], b"");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("/dev/zero is larger than 1048576 bytes"),
        "{err}"
    );
}

#[test]
fn input_that_is_not_control_mode_is_bad_input() {
    let out = detect(&["--profile", "claude"], b"just some text\nand more\n");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no control-mode line (2 other lines)"),
        "{err}"
    );
    // Mixed input: the control-mode part is read, the rest counted.
    let mut rec = recording(&["hi\r\n"]);
    rec.extend_from_slice(b"stray text\n");
    let out = detect(&["--profile", "shell"], &rec);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("1 lines were not control mode"), "{err}");
}

#[test]
fn endless_pane_ids_are_bounded_with_a_warning() {
    let mut rec = Vec::new();
    for id in 0..200_000u32 {
        rec.extend_from_slice(format!("%output %{id} x\n").as_bytes());
    }
    let out = detect(&["--profile", "shell"], &rec);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    let refused = 200_000 - clawmux::detect::MAX_PANES_PER_STREAM;
    assert!(
        err.contains(&format!(
            "more than {} panes: {refused} outputs",
            clawmux::detect::MAX_PANES_PER_STREAM
        )),
        "{err}"
    );
}

#[test]
fn detections_hold_nothing_a_terminal_would_obey() {
    // A pane printing controls around an error line: C1 CSI (U+009B), DEL,
    // BEL, an OSC title and a raw ESC sequence.
    let rec = recording(&["error: x\u{9b}2J\x7f\x07\x1b]0;owned\x07\x1b[31mred\r\n"]);
    let out = detect(&["--profile", "shell"], &rec);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("\"kind\":\"error\""), "{text}");
    assert!(
        !text
            .chars()
            .any(|c| c != '\n' && (c.is_control() || ('\u{7f}'..='\u{9f}').contains(&c))),
        "{text:?}"
    );
}

#[test]
fn decode_refuses_input_that_is_not_control_mode() {
    let run = |input: &[u8]| {
        let mut child = Command::new(clawmux())
            .args(["decode", "--pane", "%3"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input).unwrap();
        child.wait_with_output().unwrap()
    };
    let out = run(b"plain text\nmore\nand more\n");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no control-mode line (3 other lines)"),
        "{err}"
    );
    // Mixed: the pane's bytes exactly (stdout is not a terminal), the
    // other lines counted.
    let mut rec = recording(&["a\x1b[1mb\r\n"]);
    rec.extend_from_slice(b"stray\n");
    let out = run(&rec);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout, b"a\x1b[1mb\r\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("1 lines were not control mode"), "{err}");
}
