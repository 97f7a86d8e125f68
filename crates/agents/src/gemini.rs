//! Google's Gemini CLI as clawmux starts and reads it.
//!
//! Gemini draws no turn-end row: the spinner row (`⠦ Thinking... (esc to
//! cancel, 3s)`) empties and the input box is back. Its approvals are
//! boxed numbered menus answered by the digit alone (the cursor moves onto
//! the option at once, the box closes ~0.4 s later). HTTP 500 and 429 are
//! retried without end, with only the spinner showing (reported as stuck
//! by the `gemini` profile). Its window title (`◇  Ready`, `✦  Working…`,
//! `✋  Action Required`) is read as its state, and so are its OSC 777
//! notifications (`Gemini CLI needs your attention` while a dialog waits,
//! `Gemini CLI session complete` at a turn's end; sent only with
//! `general.enableNotifications`, which `clawmux hooks install --agent
//! gemini` sets with `notificationMethod = "osc777"`; inside tmux wrapped
//! in tmux's passthrough), so a turn still ends with the title's icons off
//! (`ui.dynamicWindowTitle = false`). Its hooks (`AfterAgent`,
//! `Notification`) reach `clawmux hook`.

use super::claude::PermissionMode;
use super::{Agent, Signal};

/// The release the real-agent tests run against (`.ci/run` installs it).
pub const TESTED: &str = "0.61.0";

/// Gemini CLI as an agent definition (see [`crate`]).
pub static AGENT: Agent = Agent {
    name: "gemini",
    title: "Gemini CLI",
    program: "gemini",
    package: "npm @google/gemini-cli",
    tested: TESTED,
    profile: "gemini",
    interrupt: &["Escape"],
    signals: &[Signal::Title, Signal::Notification, Signal::Hooks],
    mode_args,
    mode_flags: &["--approval-mode", "--yolo", "-y"],
};

fn mode_args(mode: PermissionMode) -> &'static [&'static str] {
    match mode {
        PermissionMode::Manual => &["--approval-mode", "default"],
        PermissionMode::AcceptEdits => &["--approval-mode", "auto_edit"],
        PermissionMode::Auto => &["--approval-mode", "auto_edit"],
        PermissionMode::Plan => &["--approval-mode", "plan"],
        PermissionMode::BypassPermissions => &["--approval-mode", "yolo"],
    }
}
