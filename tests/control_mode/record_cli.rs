//! `clawmux record` on a plain shell pane: the format, both ways of
//! stopping, and bad input.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clawmux::control::recording::RecordingReader;

use crate::support::tmux::TmuxServer;

fn record(tmux: &TmuxServer, session: &str, out: &std::path::Path) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_clawmux"))
        .args(["record", "-L", &tmux.socket, "-t", session, "-o"])
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("clawmux record")
}

fn wait_for_file(path: &std::path::Path, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.contains(needle) {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "{needle:?} not in {}:\n{text}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The session ends: tmux sends `%exit`, the recorder finishes by itself
/// with every line timed and the file private.
#[test]
fn records_until_the_session_ends() {
    let tmux = TmuxServer::new();
    tmux.new_session("rec", "cat");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.rec");
    let child = record(&tmux, "rec", &out);
    wait_for_file(&out, "%session-changed");
    tmux.ok(&[
        "respawn-pane",
        "-k",
        "-t",
        "rec",
        "printf 'first\\n'; sleep 0.3; printf 'second\\n'; sleep 0.2",
    ]);
    let result = child.wait_with_output().unwrap();
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    let text = std::fs::read_to_string(&out).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    assert!(
        header.starts_with(
            "# clawmux-recording v1 {\"session\":\"rec\",\"cols\":120,\"rows\":40,\"tmux\":\"tmux "
        ),
        "{header}"
    );
    assert!(lines.all(|l| l.starts_with('+')), "{text}");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&out).unwrap().permissions().mode() & 0o777,
        0o600
    );

    // The times are the arrival times: `second` was printed 300 ms after
    // `first`, whose arrival a loaded machine can delay (CI: 298 ms apart).
    let time_of = |word: &str| -> u64 {
        text.lines()
            .find(|l| l.contains("%output") && l.contains(word))
            .and_then(|l| l[1..].split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no output line with {word}:\n{text}"))
    };
    assert!(time_of("second") >= time_of("first") + 200, "{text}");
    assert!(text.lines().last().unwrap().ends_with(" %exit"), "{text}");

    // decode reads it like a plain capture.
    let mut reader = RecordingReader::new(text.as_bytes()).unwrap();
    assert_eq!(reader.header().unwrap().size(), Some((120, 40)));
    let mut n = 0;
    while reader.next_chunk().unwrap().is_some() {
        n += 1;
    }
    assert_eq!(n, text.lines().count() - 1);
}

/// SIGTERM (and Ctrl-C) stop the recorder cleanly; what arrived is kept.
#[test]
fn sigterm_stops_and_keeps_everything() {
    let tmux = TmuxServer::new();
    tmux.new_session("rec", "cat");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.rec");
    let child = record(&tmux, "rec", &out);
    wait_for_file(&out, "%session-changed");
    tmux.ok(&["send-keys", "-t", "rec", "-l", "typed-into-cat"]);
    wait_for_file(&out, "typed-into-cat");
    // SAFETY: kill(2) on our own child.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
    let result = child.wait_with_output().unwrap();
    assert!(result.status.success());
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(stderr.contains("recorded "), "{stderr}");
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("typed-into-cat"));
    // The session lives on.
    assert!(tmux.capture("rec").contains("typed-into-cat"));
}

#[test]
fn a_missing_session_is_bad_input() {
    let tmux = TmuxServer::new();
    tmux.new_session("rec", "cat");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.rec");
    let result = record(&tmux, "nope", &out).wait_with_output().unwrap();
    assert_eq!(result.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(stderr.contains("no session \"nope\""), "{stderr}");
    assert!(!out.exists(), "no file for a session that is not there");
}

/// Started while something is already on screen, the recording begins with
/// that screen, so a replay does not start from a blank pane.
#[test]
fn a_recording_begins_with_the_screen_as_it_was() {
    let tmux = TmuxServer::new();
    tmux.new_session("rec", "printf 'already on screen\\n'; exec cat");
    tmux.wait_for_screen("rec", "already on screen", Duration::from_secs(20));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.rec");
    let child = record(&tmux, "rec", &out);
    wait_for_file(&out, "%session-changed");
    // SAFETY: kill(2) on our own child.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
    assert!(child.wait_with_output().unwrap().status.success());
    let bytes = std::fs::read(&out).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    let first = text.lines().nth(1).unwrap();
    assert!(
        first.starts_with("+0 %output %0 \\033[H\\033[2J"),
        "{first}"
    );
    let (code, pane, err) =
        crate::support::claude::clawmux_stdin(&["decode", "--pane", "%0"], &bytes);
    assert_eq!(code, 0, "{err}");
    assert!(pane.contains("already on screen"), "{pane:?}");
}
