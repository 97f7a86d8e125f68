//! The real GSD (`get-shit-done-cc`, pinned) installed the way its users
//! install it, into a test's agent HOME (global: skills, hooks, statusline,
//! the `gsd-sdk` link) or into a project (local: `.claude/commands/gsd/`).
//!
//! The package is `$CLAWMUX_GSD` (its directory) or what `.ci/run` installs
//! under `target/gsd-<version>`; tests skip loudly without it.

use std::path::{Path, PathBuf};
use std::process::Command;

use clawmux::agentcheck::ClaudeEnv;

/// The GSD release `.ci/run` installs and these tests were written against.
pub const GSD_VERSION: &str = clawmux::gsd::TESTED_VERSION;

/// The installed package's directory; the test fails when it is not there.
pub fn gsd_required() -> PathBuf {
    let dir = std::env::var_os("CLAWMUX_GSD")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
                "target/gsd-{GSD_VERSION}/node_modules/get-shit-done-cc"
            ))
        });
    if !dir.join("bin/install.js").is_file() {
        super::missing(
            &format!("GSD at {}", dir.display()),
            &format!("set CLAWMUX_GSD (npm install get-shit-done-cc@{GSD_VERSION})"),
        );
    }
    dir
}

/// Which layout to install.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `--claude --global` (GSD's default): skills in `~/.claude/skills`,
    /// typed `/gsd-<name>`.
    Global,
    /// `--claude --local` in the project: `.claude/commands/gsd/`, typed
    /// `/gsd:<name>`.
    Local,
}

/// Runs GSD's installer with `home` as HOME, in `dir` (the project, for
/// the local layout). Stdin is not a terminal, as in CI.
pub fn install(package: &Path, layout: Layout, home: &Path, dir: &Path) {
    let flag = match layout {
        Layout::Global => "--global",
        Layout::Local => "--local",
    };
    std::fs::create_dir_all(dir).expect("install dir");
    let out = Command::new("node")
        .arg(package.join("bin/install.js"))
        .args(["--claude", flag])
        .env("HOME", home)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("node runs GSD's installer");
    assert!(
        out.status.success(),
        "GSD's installer failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let installed = match layout {
        Layout::Global => home.join(".claude/skills/gsd-plan-phase/SKILL.md"),
        Layout::Local => dir.join(".claude/commands/gsd/plan-phase.md"),
    };
    assert!(installed.is_file(), "no {}", installed.display());
}

/// Runs GSD's installer for Gemini CLI (`--gemini --global`) with `home`
/// as HOME: commands `~/.gemini/commands/gsd/<name>.toml` (typed
/// `/gsd:<name>`), its workflows, agents and hooks, merged into the
/// `settings.json` already there.
pub fn install_gemini(package: &Path, home: &Path) {
    let out = Command::new("node")
        .arg(package.join("bin/install.js"))
        .args(["--gemini", "--global"])
        .env("HOME", home)
        .current_dir(home)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("node runs GSD's installer");
    assert!(
        out.status.success(),
        "GSD's installer failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let installed = home.join(".gemini/commands/gsd/plan-phase.toml");
    assert!(installed.is_file(), "no {}", installed.display());
}

/// The agent's environment for GSD: `gsd-sdk` (linked into
/// `~/.local/bin` by the global install) on PATH, and npm offline, so the
/// SessionStart update check (`npm view get-shit-done-cc version`) fails
/// at once instead of reaching the registry.
pub fn agent_env(env: ClaudeEnv) -> ClaudeEnv {
    let path = format!(
        "{}:{}",
        env.home().join(".local/bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    env.with_var("PATH", &path)
        .with_var("npm_config_offline", "true")
}
