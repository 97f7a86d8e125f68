//! Area `integ`: the OpenClaw skill, the prompt templates and the Claude Code
//! hook path (`clawmux hook` → Unix socket → `HookListener`), driven through
//! the built binary with recorded hook payloads from `payloads/`.

mod hooks;
mod hooks_install;
mod prompt;
mod screenshot;
mod skill;
mod skill_flow;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The binary under test.
const BIN: &str = env!("CARGO_BIN_EXE_clawmux");

/// A file of this repository.
fn repo_file(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

/// `clawmux <args>` without the caller's logging or tmux pane leaking in.
fn clawmux(args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .env_remove("CLAWMUX_LOG")
        .env_remove("TMUX_PANE");
    cmd
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[track_caller]
fn assert_contains(text: &str, needle: &str) {
    assert!(text.contains(needle), "{needle:?} not in:\n{text}");
}
