//! OpenCode as clawmux starts and reads it.
//!
//! A full-screen app drawn in panels: busy shows as `esc interrupt` in its
//! status bar, a finished turn ends with `▣  Build · <model> · 7.8s` (a
//! stopped or failed one with the same row without its time), and its
//! permission dialog's buttons (`Allow once   Allow always   Reject`) tell
//! the selected one only by background colour: the `opencode` profile
//! reads the screen's colours (`crates/detect/src/cells.rs`). API errors but a
//! 400 are retried for ever (`[retrying in 8s attempt #3]`), reported as
//! stuck. Its permissions live in its config (`permission.bash = "ask"`),
//! not on its command line, so the mode adds no flag. A plugin clawmux
//! writes (`clawmux_hooks::opencode`) reports its session events.

use super::claude::PermissionMode;
use super::{Agent, Signal};

/// The release the real-agent tests run against (`.ci/run` installs it).
pub const TESTED: &str = "1.18.33";

/// OpenCode as an agent definition (see [`crate`]).
pub static AGENT: Agent = Agent {
    name: "opencode",
    title: "OpenCode",
    program: "opencode",
    package: "npm opencode-ai",
    tested: TESTED,
    profile: "opencode",
    // One Escape asks, the second interrupts.
    interrupt: &["Escape", "Escape"],
    signals: &[Signal::Plugin],
    mode_args,
    mode_flags: &[],
};

fn mode_args(_mode: PermissionMode) -> &'static [&'static str] {
    &[]
}
