//! Aider as clawmux starts and reads it.
//!
//! A line-mode program: `Waiting for <model>` while busy, `Tokens: … sent,
//! … received.` then its prompt (`diff> `) at a turn's end, and yes/no
//! questions (`Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]:`)
//! answered with a word (`yes`, `no`, `don't`) and Enter; Ctrl-C
//! interrupts a turn without a word on screen. When clawmux starts it,
//! `--notifications --notifications-command` runs `clawmux hook --from
//! aider-waiting` whenever it waits for the user after a model call (see
//! [`with_notifications`]).

use super::claude::PermissionMode;
use super::{Agent, Signal};

/// The release the real-agent tests run against (`.ci/run` installs it).
pub const TESTED: &str = "0.86.2";

/// Aider as an agent definition (see [`crate`]).
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

/// The flags Aider's notifications take; a command naming one is left as
/// it is (the user chose their own).
const NOTIFICATION_FLAGS: [&str; 3] = [
    "--notifications",
    "--no-notifications",
    "--notifications-command",
];

/// `command` (starting Aider) with `--notifications --notifications-command
/// '<clawmux> hook --from aider-waiting'`, `clawmux` being the shell words
/// that run this clawmux. Aider runs the command through the shell with its
/// own environment, so the hook gets the pane and the project's token.
pub fn with_notifications(command: &str, clawmux: &str) -> String {
    // A line the shell cannot split names no flag: the shell refuses it.
    let words = clawmux_text::shell::split(command).unwrap_or_default();
    let named = words.iter().any(|w| {
        NOTIFICATION_FLAGS
            .iter()
            .any(|f| w == f || w.strip_prefix(f).is_some_and(|r| r.starts_with('=')))
    });
    if named {
        return command.to_owned();
    }
    let hook = format!("{clawmux} hook --from aider-waiting");
    format!(
        "{command} --notifications --notifications-command {}",
        clawmux_text::shell::quote_keeping_nul(&hook)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notifications_run_clawmux_hook_unless_the_command_names_them() {
        assert_eq!(
            with_notifications("aider --yes-always", "'/opt/my bin/clawmux'"),
            r#"aider --yes-always --notifications --notifications-command "'/opt/my bin/clawmux' hook --from aider-waiting""#
        );
        let words = clawmux_text::shell::split(&with_notifications("aider", "clawmux")).unwrap();
        assert_eq!(
            words,
            [
                "aider",
                "--notifications",
                "--notifications-command",
                "clawmux hook --from aider-waiting"
            ]
        );
        for own in [
            "aider --no-notifications",
            "aider --notifications-command=notify-send",
        ] {
            assert_eq!(with_notifications(own, "clawmux"), own);
        }
    }
}
