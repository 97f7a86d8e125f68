//! `clawmux doctor --agent`: the drift self-test
//! ([`clawmux::agentcheck::selftest`]) with the installed Claude Code, one
//! line per signal; exit 1 when a signal is no longer detected.

use super::out;
use std::process::ExitCode;

use clawmux::agentcheck::{self, CLAUDE_BIN_ENV, selftest};
use clawmux::agents::claude::{
    AUTOUPDATER_OFF, NEWEST_TESTED, TESTED_VERSIONS, is_tested, pin_command,
};

pub fn run() -> anyhow::Result<ExitCode> {
    let Some(claude) = agentcheck::find_claude() else {
        anyhow::bail!(
            "Claude Code not found: set {CLAUDE_BIN_ENV} or put `claude` on PATH (npm install -g @anthropic-ai/claude-code@{NEWEST_TESTED})"
        );
    };
    let version = agentcheck::claude_version(&claude)?;
    let tested = if is_tested(&version) {
        "a tested release"
    } else {
        "not a tested release"
    };
    out!(
        "claude {version} at {} ({tested}; clawmux is tested with {}); running it offline against a fake API…",
        claude.display(),
        TESTED_VERSIONS.join(", ")
    );
    let report = selftest::run(&claude, &version)?;
    for s in &report.signals {
        let status = if s.ok { "ok" } else { "FAILED" };
        out!("{status}: {}: {}", s.signal.name(), s.detail);
    }
    if report.all_ok() {
        out!("detection works with Claude Code {version}");
        Ok(ExitCode::SUCCESS)
    } else {
        let (var, value) = AUTOUPDATER_OFF;
        out!(
            "detection no longer works for every signal with Claude Code {version}: pin a tested release ({}): `{}`, and start it with `{var}={value}` (Claude Code updates itself otherwise); or record its pane while it misbehaves (`clawmux record -L clawmux -t cm-<project> -o claude-{version}.rec`) and attach the file to a bug report",
            TESTED_VERSIONS.join(", "),
            pin_command(NEWEST_TESTED)
        );
        Ok(ExitCode::from(1))
    }
}
