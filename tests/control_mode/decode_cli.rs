//! `clawmux decode` on the real tmux 3.3a recording, checked against an
//! independent, deliberately plain decoder written here.

use std::io::Write;
use std::process::{Command, Stdio};

const FIXTURE: &[u8] = include_bytes!("../fixtures/tmux-3.3a-basic.ctl");

/// Pane `pane`'s bytes, decoded the slow obvious way: split lines, skip
/// reply blocks, take `%output` lines and turn each `\ooo` into its byte.
fn plain_decode(stream: &[u8], pane: &str) -> Vec<u8> {
    let prefix = format!("%output {pane} ");
    let mut out = Vec::new();
    let mut open_block: Option<String> = None;
    for line in stream.split(|&b| b == b'\n') {
        let text = String::from_utf8_lossy(line);
        if let Some(fields) = &open_block {
            if text == format!("%end {fields}") || text == format!("%error {fields}") {
                open_block = None;
            }
            continue;
        }
        if let Some(fields) = text.strip_prefix("%begin ") {
            open_block = Some(fields.to_string());
            continue;
        }
        let Some(data) = line.strip_prefix(prefix.as_bytes()) else {
            continue;
        };
        let mut i = 0;
        while i < data.len() {
            if data[i] == b'\\' {
                let digits = std::str::from_utf8(&data[i + 1..i + 4]).unwrap();
                out.push(u8::from_str_radix(digits, 8).unwrap());
                i += 4;
            } else {
                out.push(data[i]);
                i += 1;
            }
        }
    }
    out
}

fn decode(args: &[&str], input: &[u8]) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_clawmux"))
        .arg("decode")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    out
}

#[test]
fn decode_pane_writes_exactly_the_panes_bytes() {
    for pane in ["%0", "%1", "%2"] {
        let out = decode(&["--pane", pane], FIXTURE);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.stdout, plain_decode(FIXTURE, pane), "pane {pane}");
    }
    assert_eq!(plain_decode(FIXTURE, "%0").len(), 11236);
}

#[test]
fn decode_reads_control_control_recordings_too() {
    // The same stream as `tmux -CC` writes it to a tty.
    let mut cc = b"\x1bP1000p".to_vec();
    for line in FIXTURE.strip_suffix(b"\n").unwrap().split(|&b| b == b'\n') {
        cc.extend_from_slice(line);
        cc.extend_from_slice(b"\r\n");
    }
    cc.extend_from_slice(b"\x1b\\");
    let out = decode(&["--pane", "%0"], &cc);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout, plain_decode(FIXTURE, "%0"));
}

#[test]
fn decode_events_prints_one_json_object_per_line() {
    let out = decode(&["--events"], FIXTURE);
    assert!(out.status.success());
    let events: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kind = |k: &str| events.iter().filter(|e| e["kind"] == k).count();
    assert_eq!(kind("session-changed"), 1);
    assert_eq!(kind("exit"), 1);
    let failed: Vec<_> = events
        .iter()
        .filter(|e| e["kind"] == "reply" && e["ok"] == false)
        .collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(
        failed[0]["lines"][0],
        "parse error: unknown command: bogus-command"
    );
}

#[test]
fn decode_reports_bad_input_but_decodes_the_rest() {
    let input = b"%output %0 a\\9\n%output nonsense\n%output %0 b\n";
    let out = decode(&["--pane", "%0"], input);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(out.stdout, b"a\\9b");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("1 bad lines") && stderr.contains("1 malformed escapes"),
        "{stderr}"
    );
}

#[test]
fn decode_rejects_a_bad_pane_id() {
    let out = decode(&["--pane", "0"], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("%N"));
}
