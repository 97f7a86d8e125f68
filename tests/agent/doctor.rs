//! `clawmux doctor --agent`: the drift self-test with the real Claude Code.

use std::process::Command;

use crate::support::claude::claude_required;

fn doctor_agent(claude: &std::path::Path) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_clawmux"))
        .args(["doctor", "--agent"])
        .env("CLAWMUX_CLAUDE", claude)
        .output()
        .expect("clawmux doctor runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The line for `signal`: `ok: <signal>: …` or `FAILED: <signal>: …`.
fn line<'a>(out: &'a str, signal: &str) -> &'a str {
    out.lines()
        .find(|l| {
            l.strip_prefix("ok: ")
                .or_else(|| l.strip_prefix("FAILED: "))
                .is_some_and(|rest| rest.starts_with(&format!("{signal}: ")))
        })
        .unwrap_or_else(|| panic!("no line for {signal}:\n{out}"))
}

/// Each signal gets its line; those today's detector handles say ok, with
/// what was detected.
#[test]
fn reports_each_signal_on_the_installed_version() {
    let claude = claude_required();
    let (_, out, err) = doctor_agent(&claude);
    let release = crate::support::claude::release();
    assert!(
        out.starts_with(&format!("claude {release} at ")),
        "{out}\n{err}"
    );
    let permission = line(&out, "permission prompt");
    assert!(
        permission.starts_with("ok: permission prompt: \"Do you want to proceed?\" with options [1. Yes, 2. Yes, and always allow access to "),
        "{permission}"
    );
    let no = format!(", {}. No]", crate::support::claude::bash_no_key());
    assert!(permission.ends_with(&no), "{permission}");
    assert_eq!(
        line(&out, "completion"),
        "ok: completion: the turn's end was detected"
    );
    assert!(line(&out, "question").contains("Which self-test answer do you pick?"));
    assert!(line(&out, "API error").contains("API Error: 500 Internal server error."));
}

#[test]
fn every_signal_is_detected_on_the_tested_version() {
    let claude = claude_required();
    let (code, out, err) = doctor_agent(&claude);
    assert_eq!(code, Some(0), "{out}\n{err}");
    for signal in ["permission prompt", "completion", "question", "API error"] {
        assert!(line(&out, signal).starts_with("ok: "), "{out}");
    }
    let works = format!(
        "detection works with Claude Code {}",
        crate::support::claude::release()
    );
    assert!(out.contains(&works), "{out}");
}

/// A wrong `CLAWMUX_CLAUDE` is named, not silently replaced by PATH.
#[test]
fn a_missing_claude_is_a_clear_failure() {
    let (code, out, err) = doctor_agent(std::path::Path::new("/nonexistent/claude"));
    assert_eq!(code, Some(1), "{out}");
    assert!(
        err.contains("Claude Code not found: set CLAWMUX_CLAUDE"),
        "{err}"
    );
}
