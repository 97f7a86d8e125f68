//! `clawmux tail` on a large log: memory stays bounded (records are streamed,
//! `--since` scans back from the end), `-f` follows, a torn last line is
//! skipped until it is complete.

use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::process::Stdio;

use clawmux::store::clock;

use super::{WAIT, clawmux};

/// Size of the large log: well above what a streaming reader holds.
const BIG_LOG_BYTES: u64 = 64 << 20;
/// Peak memory allowed for reading it: half its size. Loading the log whole
/// (as records) costs several times its size.
const MAX_RSS_BYTES: u64 = BIG_LOG_BYTES / 2;

/// A `command` record of project `p` from `sender` (a line of the log's
/// schema: `tail` skips any other).
fn record(ts_ms: u64, sender: &str, text: &str) -> String {
    format!(
        "{{\"ts\":\"{}\",\"kind\":\"command\",\"project\":\"p\",\"sender\":\"{sender}\",\"text\":\"{text}\"}}\n",
        clock::rfc3339(ts_ms)
    )
}

/// A chat `message` record.
fn message(ts_ms: u64, text: &str) -> String {
    format!(
        "{{\"ts\":\"{}\",\"kind\":\"message\",\"sender\":\"ou_a\",\"chat\":\"oc_1\",\"text\":\"{text}\"}}\n",
        clock::rfc3339(ts_ms)
    )
}

/// Writes a log of [`BIG_LOG_BYTES`] of old records, then `recent` records
/// from the last minute; returns how many old records it wrote.
fn big_log(home: &std::path::Path, recent: usize) -> usize {
    let now = clock::now_ms();
    let old_ts = now - 30 * 86_400_000;
    let pad = "x".repeat(4000);
    let mut w = BufWriter::new(File::create(home.join("events.jsonl")).unwrap());
    let (mut written, mut n) = (0u64, 0usize);
    while written < BIG_LOG_BYTES {
        let line = message(old_ts + n as u64, &pad);
        w.write_all(line.as_bytes()).unwrap();
        written += line.len() as u64;
        n += 1;
    }
    for i in 0..recent {
        w.write_all(record(now - 1_000 + i as u64, "command", "hi").as_bytes())
            .unwrap();
    }
    w.flush().unwrap();
    n
}

/// Runs `clawmux tail -f <args>` until it has printed `expect` lines (the
/// whole log has been read by then), and returns those lines and the
/// child's peak resident memory in bytes (`VmHWM` of its own address space:
/// `ru_maxrss` would include the test process it was spawned from).
fn tail_rss(home: &std::path::Path, args: &[&str], expect: usize) -> (Vec<String>, u64) {
    let mut all = vec!["tail", "-f"];
    all.extend_from_slice(args);
    let mut child = clawmux(home, &all)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let lines: Vec<String> = (0..expect)
        .map(|_| rx.recv_timeout(WAIT).expect("tail printed the records"))
        .collect();
    let status = fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    let hwm_kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/PID/status");
    (lines, hwm_kib * 1024)
}

#[test]
fn tail_of_a_large_log_streams_in_bounded_memory() {
    let home = tempfile::tempdir().unwrap();
    let old = big_log(home.path(), 3);

    let (lines, rss) = tail_rss(home.path(), &["--since", "1h"], 3);
    eprintln!("tail --since 1h: peak RSS {} KiB", rss / 1024);
    assert!(lines.iter().all(|l| l.contains("command")), "{lines:?}");
    assert!(rss < MAX_RSS_BYTES, "peak RSS {rss} bytes");

    // The whole log read, only the last records printed.
    let (lines, rss) = tail_rss(home.path(), &["--kind", "command", "--json"], 3);
    eprintln!("tail (whole log): peak RSS {} KiB", rss / 1024);
    assert!(lines.iter().all(|l| l.contains("command")), "{lines:?}");
    assert!(rss < MAX_RSS_BYTES, "peak RSS {rss} bytes");

    // Everything printed, in order.
    let (lines, _) = tail_rss(home.path(), &[], old + 3);
    assert!(lines[0].contains("message") && lines[old].contains("command"));
}

#[test]
fn follow_prints_new_records_and_waits_for_a_torn_line_to_complete() {
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join("events.jsonl");
    let now = clock::now_ms();
    // An existing log whose last line is torn (a crash, or being written).
    let torn = record(now, "late", "second half");
    let (head, rest) = torn.split_at(20);
    std::fs::write(&path, record(now, "first", "a") + head).unwrap();

    let mut child = clawmux(home.path(), &["tail", "-f"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let first = rx.recv_timeout(WAIT).expect("the existing record");
    assert!(first.contains("first"), "{first}");

    // The torn line is completed, then a new record follows.
    let mut f = OpenOptions::new().append(true).open(&path).unwrap();
    f.write_all(rest.as_bytes()).unwrap();
    f.write_all(record(now, "next", "b").as_bytes()).unwrap();
    drop(f);
    let late = rx.recv_timeout(WAIT).expect("the completed line");
    let next = rx.recv_timeout(WAIT).expect("the new record");
    assert!(
        late.contains("late") && late.contains("second half"),
        "{late}"
    );
    assert!(next.contains("next"), "{next}");
    child.kill().unwrap();
    let _ = child.wait();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(
        !err.contains("skipped"),
        "the torn line was not counted as bad: {err}"
    );
}

#[test]
fn exit_codes_a_closed_reader_and_an_unreadable_log() {
    let home = tempfile::tempdir().unwrap();
    let now = clock::now_ms();
    let log: String = (0..20_000).map(|i| record(now + i, "many", "x")).collect();
    fs::write(home.path().join("events.jsonl"), log).unwrap();
    // `clawmux tail | head -1`: the reader goes away, tail ends with 0.
    let mut child = clawmux(home.path(), &["tail"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.contains("many"), "{first}");
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");

    // The log cannot be read (a directory in its place): a runtime failure.
    let home = tempfile::tempdir().unwrap();
    fs::create_dir(home.path().join("events.jsonl")).unwrap();
    let out = clawmux(home.path(), &["tail"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("clawmux: event log "), "{err}");
}

#[test]
fn hostile_chat_text_reaches_the_terminal_escaped() {
    let home = tempfile::tempdir().unwrap();
    let line = serde_json::json!({
        "ts": clock::rfc3339(clock::now_ms()),
        "kind": "command",
        "project": "demo",
        "sender": "ou_a",
        "text": "hi \u{1b}]2;owned\u{7}\u{1b}[2J\u{9b}31m\u{202e}there",
    });
    fs::write(home.path().join("events.jsonl"), format!("{line}\n")).unwrap();
    let out = clawmux(home.path(), &["tail"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        !text
            .trim_end_matches('\n')
            .chars()
            .any(|c| c.is_control() || ('\u{202a}'..='\u{202e}').contains(&c)),
        "{text:?}"
    );
    // Text with spaces is shown as a JSON string (C0 escaped by JSON), and
    // what JSON lets through (C1, bidi overrides) is escaped too.
    assert!(
        text.contains(r#"text="hi \u001b]2;owned\u0007\u001b[2J\u{9b}31m\u{202e}there""#),
        "{text}"
    );
    // --json stays the stored JSON: control characters escaped by JSON.
    let out = clawmux(home.path(), &["tail", "--json"]).output().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json, line);
    assert!(!out.stdout.contains(&0x1b));
}

#[test]
fn an_unknown_kind_is_bad_usage_naming_the_kinds() {
    let home = tempfile::tempdir().unwrap();
    let out = clawmux(home.path(), &["tail", "--kind", "bogus"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no event kind `bogus`"), "{stderr}");
    assert!(stderr.contains("approval_answered"), "{stderr}");
}

#[test]
fn no_log_says_where_it_looked() {
    let home = tempfile::tempdir().unwrap();
    let out = clawmux(home.path(), &["tail"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let looked = home.path().join("events.jsonl");
    assert!(
        stderr.contains(&format!("no event log at {}", looked.display())),
        "{stderr}"
    );
}

#[test]
fn a_line_outside_the_schema_is_skipped_and_counted() {
    let home = tempfile::tempdir().unwrap();
    let now = clock::now_ms();
    let ts = clock::rfc3339(now);
    let log = record(now, "ou_a", "kept")
        + &format!("{{\"ts\":\"{ts}\",\"kind\":\"bogus\",\"project\":\"p\"}}\n")
        // A known kind missing a field the schema requires.
        + &format!("{{\"ts\":\"{ts}\",\"kind\":\"command\",\"project\":\"p\"}}\n");
    fs::write(home.path().join("events.jsonl"), log).unwrap();
    let out = clawmux(home.path(), &["tail", "--json"]).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(stdout.contains("kept"), "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("skipped 2 torn or unreadable line(s)"),
        "{stderr}"
    );
}
