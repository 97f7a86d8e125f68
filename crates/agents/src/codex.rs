//! OpenAI's Codex CLI as clawmux starts and reads it.
//!
//! Codex draws its transcript inline (no alternate screen) with a `›`
//! input row, says `• Working (0s • esc to interrupt)` only until the
//! model's first output, and closes a turn with `Worked for 5s`; an error
//! ends a turn with one `■ …` row and no `Worked for`. Its approval menus
//! take the letter shown after each option (`(y)`, `(p)`, `(esc)`). Its
//! own state sequence (OSC 7501 `state=working|idle|done|error|blocked`)
//! and its window title say the same as the screen, sooner.

use super::claude::PermissionMode;
use super::{Agent, Signal};

/// The release the real-agent tests run against (`.ci/run` installs it).
pub const TESTED: &str = "0.171.0";

/// Codex CLI as an agent definition (see [`crate`]).
pub static AGENT: Agent = Agent {
    name: "codex",
    title: "Codex CLI",
    program: "codex",
    package: "npm @openai/codex",
    tested: TESTED,
    profile: "codex",
    interrupt: &["Escape"],
    signals: &[
        Signal::StateSequence,
        Signal::Title,
        Signal::Hooks,
        Signal::Notify,
    ],
    mode_args,
    mode_flags: &[
        "-a",
        "--ask-for-approval",
        "--dangerously-bypass-approvals-and-sandbox",
        "--full-auto",
    ],
};

/// `--no-daemon` keeps the session in the pane's own process;
/// `--dangerously-bypass-hook-trust` lets the hooks clawmux installs run
/// without a trust dialog nobody would answer. `-a on-request` (0.171 has
/// only `on-request` and `never`) brings every escalation to the chat.
fn mode_args(mode: PermissionMode) -> &'static [&'static str] {
    match mode {
        PermissionMode::Manual | PermissionMode::AcceptEdits => &[
            "--no-daemon",
            "--dangerously-bypass-hook-trust",
            "-a",
            "on-request",
        ],
        PermissionMode::Plan => &[
            "--no-daemon",
            "--dangerously-bypass-hook-trust",
            "-s",
            "read-only",
            "-a",
            "on-request",
        ],
        PermissionMode::Auto => &[
            "--no-daemon",
            "--dangerously-bypass-hook-trust",
            "-a",
            "never",
        ],
        PermissionMode::BypassPermissions => &[
            "--no-daemon",
            "--dangerously-bypass-hook-trust",
            "--dangerously-bypass-approvals-and-sandbox",
        ],
    }
}
