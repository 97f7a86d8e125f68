//! Aider as clawmux starts and reads it.
//!
//! A line-mode program: `Waiting for <model>` while busy, `Tokens: … sent,
//! … received.` then its prompt (`diff> `) at a turn's end, and yes/no
//! questions (`Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]:`)
//! answered with a word (`yes`, `no`, `don't`) and Enter; Ctrl-C
//! interrupts a turn without a word on screen. `--notifications-command`
//! runs a command whenever it waits for input (not wired).

use super::claude::PermissionMode;
use super::{Agent, Signal};

/// The release the real-agent tests run against (`.ci/run` installs it).
pub const TESTED: &str = "0.86.2";

/// Aider as an agent definition (see [`crate::agents`]).
pub static AGENT: Agent = Agent {
    name: "aider",
    title: "Aider",
    program: "aider",
    package: "PyPI aider-chat",
    tested: TESTED,
    profile: "aider",
    interrupt: &["C-c"],
    signals: &[Signal::NotificationsCommand],
    mode_args,
    mode_flags: &["--yes-always", "--chat-mode"],
};

fn mode_args(mode: PermissionMode) -> &'static [&'static str] {
    match mode {
        PermissionMode::Manual | PermissionMode::AcceptEdits => &[],
        PermissionMode::Plan => &["--chat-mode", "ask"],
        PermissionMode::Auto | PermissionMode::BypassPermissions => &["--yes-always"],
    }
}
