//! The coding agents clawmux drives, as data: one module each, and the
//! table ([`AGENTS`]) that says for each how it is started with a
//! permission mode, which detection profile reads its screen, how its
//! dialogs are answered and interrupted, and which second signals (window
//! titles, OSC state sequences, hooks) it gives besides its screen.
//!
//! A project names its agent with `agent = "codex"` (config) or
//! `/gsd:new-project web --agent gemini` (chat); anything that is not an
//! agent's name is taken as a command line, as before.

#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

pub mod aider;
pub mod aider_history;
pub mod claude;
pub mod claude_transcript;
pub mod codex;
pub mod gemini;
pub mod opencode;
pub mod record;

use claude::PermissionMode;

/// A second signal an agent gives besides the text on its screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// The window title (OSC 0/2) says working / waiting / ready.
    Title,
    /// OSC 7501 `state=…:app=…` sequences in the output (Codex).
    StateSequence,
    /// OSC 777 `notify;…` desktop notifications in the output.
    Notification,
    /// Hooks in the agent's settings run `clawmux hook`.
    Hooks,
    /// A `notify` program the agent runs at every turn end (Codex).
    Notify,
    /// A plugin the agent loads reports its events (OpenCode).
    Plugin,
    /// A command run whenever the agent waits for input (Aider).
    NotificationsCommand,
}

impl Signal {
    /// The signal's name in the README's table and `clawmux` output.
    pub fn name(self) -> &'static str {
        match self {
            Signal::Title => "title",
            Signal::StateSequence => "osc-7501",
            Signal::Notification => "osc-777",
            Signal::Hooks => "hooks",
            Signal::Notify => "notify",
            Signal::Plugin => "plugin",
            Signal::NotificationsCommand => "notifications-command",
        }
    }
}

/// One agent clawmux knows. Agents are compared by name.
#[derive(Debug)]
pub struct Agent {
    /// Its name in config and chat (`codex`).
    pub name: &'static str,
    /// What the chat calls it (`Codex CLI`).
    pub title: &'static str,
    /// The program started for it, found on `PATH`.
    pub program: &'static str,
    /// The package it is installed from, and the release tested.
    pub package: &'static str,
    pub tested: &'static str,
    /// The detection profile that reads its screen.
    pub profile: &'static str,
    /// tmux key names that interrupt a turn (pressed one by one).
    pub interrupt: &'static [&'static str],
    /// The second signals it gives.
    pub signals: &'static [Signal],
    /// The arguments that start it in a permission mode.
    mode_args: fn(PermissionMode) -> &'static [&'static str],
    /// The flags that name a mode already: a command with one of them is
    /// left as it is.
    mode_flags: &'static [&'static str],
}

impl PartialEq for Agent {
    fn eq(&self, other: &Agent) -> bool {
        self.name == other.name
    }
}

impl Eq for Agent {}

impl Agent {
    /// The command line that starts this agent in `mode`: `program` with
    /// the mode's arguments.
    pub fn command(&self, mode: PermissionMode) -> String {
        with_args(self.program, (self.mode_args)(mode))
    }

    /// `command` (a command line starting this agent) with the mode's
    /// arguments added, unless it names a mode itself.
    pub fn with_mode(&self, command: &str, mode: PermissionMode) -> String {
        // A line the shell cannot split names no mode: the shell refuses it.
        let words = clawmux_text::shell::split(command).unwrap_or_default();
        let names_mode = words.iter().any(|w| {
            self.mode_flags
                .iter()
                .any(|f| w == f || w.strip_prefix(f).is_some_and(|r| r.starts_with('=')))
        });
        if names_mode {
            return command.to_owned();
        }
        with_args(command, (self.mode_args)(mode))
    }
}

/// The keys that interrupt a turn of an agent clawmux does not know (the
/// simulated agent, a shell command): Escape, as for Claude Code.
pub const DEFAULT_INTERRUPT: &[&str] = &["Escape"];

/// How a person calls tmux keys (`Escape C-c` → `Esc, Ctrl-C`).
pub fn key_names(keys: &[&str]) -> String {
    let names: Vec<String> = keys
        .iter()
        .map(|k| match *k {
            "Escape" => "Esc".to_owned(),
            k => match k.strip_prefix("C-") {
                Some(c) => format!("Ctrl-{}", c.to_uppercase()),
                None => k.to_owned(),
            },
        })
        .collect();
    names.join(", ")
}

fn with_args(command: &str, args: &[&str]) -> String {
    let mut out = command.to_owned();
    for a in args {
        out.push(' ');
        out.push_str(a);
    }
    out
}

/// The shell words that run clawmux, read off the command line of its
/// simulated agent (`'<clawmux>' sim-agent`, the daemon's own binary,
/// quoted); `clawmux` on PATH when it is some other program.
fn clawmux_of(sim_agent: &str) -> &str {
    sim_agent
        .strip_suffix(" sim-agent")
        .filter(|p| !p.trim().is_empty())
        .unwrap_or("clawmux")
}

/// Every agent, Claude Code first (the default).
pub static AGENTS: [&Agent; 5] = [
    &claude::AGENT,
    &codex::AGENT,
    &gemini::AGENT,
    &opencode::AGENT,
    &aider::AGENT,
];

/// The name of the built-in simulated agent (demos and tests).
pub const SIM: &str = "sim";

/// The agent named `name` (`codex`, any case).
pub fn by_name(name: &str) -> Option<&'static Agent> {
    let name = name.trim();
    AGENTS
        .iter()
        .copied()
        .find(|a| a.name.eq_ignore_ascii_case(name))
}

/// The agent a command line starts: its program's file name (behind
/// `env K=V …` too) is an agent's program.
pub fn of_command(command: &str) -> Option<&'static Agent> {
    let words = clawmux_text::shell::split(command).ok()?;
    let program = claude::program_of(&words)?;
    AGENTS
        .iter()
        .copied()
        .find(|a| program == a.program || (a.name == "claude" && program == "claude.exe"))
}

/// Every agent's name, for messages (`claude, codex, …, sim`).
pub fn names() -> String {
    let mut names: Vec<&str> = AGENTS.iter().map(|a| a.name).collect();
    names.push(SIM);
    names.join(", ")
}

/// What a project's `agent` setting means: the simulated agent, a known
/// agent by name, or a command line (which may start a known agent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice<'a> {
    Sim,
    Named(&'static Agent),
    Command(&'a str),
}

impl<'a> Choice<'a> {
    /// Reads a project's `agent` setting.
    pub fn of(setting: &'a str) -> Choice<'a> {
        if setting.trim() == SIM {
            return Choice::Sim;
        }
        match by_name(setting) {
            Some(agent) => Choice::Named(agent),
            None => Choice::Command(setting),
        }
    }

    /// The agent this choice runs, when clawmux knows it.
    pub fn agent(self) -> Option<&'static Agent> {
        match self {
            Choice::Sim => None,
            Choice::Named(a) => Some(a),
            Choice::Command(c) => of_command(c),
        }
    }

    /// The command line that starts it in `mode` (`sim_agent` for the
    /// simulated agent). A command line for an unknown program is run as
    /// it is.
    ///
    /// Aider also gets its notifications command running `clawmux hook
    /// --from aider-waiting` ([`aider::with_notifications`]), with the
    /// clawmux that `sim_agent` runs.
    pub fn start(self, mode: PermissionMode, sim_agent: &str) -> String {
        let line = match self {
            Choice::Sim => return sim_agent.to_owned(),
            Choice::Named(a) => a.command(mode),
            Choice::Command(c) => match of_command(c) {
                Some(a) => a.with_mode(c, mode),
                None => return c.to_owned(),
            },
        };
        match self.agent() {
            Some(a) if a == &aider::AGENT => {
                aider::with_notifications(&line, clawmux_of(sim_agent))
            }
            _ => line,
        }
    }

    /// The detection profile its screen is read with, when the agent
    /// decides it (Claude Code's projects keep the configured one: `gsd`
    /// or `claude`).
    pub fn profile(self) -> Option<&'static str> {
        self.agent()
            .filter(|a| a.name != "claude")
            .map(|a| a.profile)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_commands_choose_the_agent() {
        assert_eq!(Choice::of("sim"), Choice::Sim);
        assert_eq!(Choice::of("Codex").agent().map(|a| a.name), Some("codex"));
        let c = Choice::of("env A=1 /opt/bin/gemini --model x");
        assert_eq!(c.agent().map(|a| a.name), Some("gemini"));
        assert_eq!(Choice::of("bash").agent(), None);
        assert_eq!(Choice::of("claude").profile(), None);
        assert_eq!(Choice::of("aider").profile(), Some("aider"));
        assert_eq!(key_names(aider::AGENT.interrupt), "Ctrl-C");
        assert_eq!(key_names(opencode::AGENT.interrupt), "Esc, Esc");
        for a in AGENTS {
            assert_eq!(by_name(a.name).map(|x| x.name), Some(a.name));
            assert!(!a.interrupt.is_empty(), "{}", a.name);
        }
    }

    #[test]
    fn each_agent_starts_in_the_mode_asked_for() {
        let m = PermissionMode::Manual;
        assert_eq!(
            Choice::of("claude").start(m, "x"),
            "claude --permission-mode default"
        );
        assert_eq!(
            Choice::of("codex").start(m, "x"),
            "codex --no-daemon --dangerously-bypass-hook-trust -a on-request"
        );
        assert_eq!(
            Choice::of("codex").start(PermissionMode::BypassPermissions, "x"),
            "codex --no-daemon --dangerously-bypass-hook-trust --dangerously-bypass-approvals-and-sandbox"
        );
        assert_eq!(
            Choice::of("gemini").start(PermissionMode::Auto, "x"),
            "gemini --approval-mode auto_edit"
        );
        assert_eq!(
            Choice::of("sim").start(m, "clawmux sim-agent"),
            "clawmux sim-agent"
        );
        assert_eq!(
            Choice::of("aider").start(m, "'/b in/clawmux' sim-agent"),
            r#"aider --notifications --notifications-command "'/b in/clawmux' hook --from aider-waiting""#
        );
        assert_eq!(
            Choice::of("env A=1 aider").start(PermissionMode::Auto, "other"),
            "env A=1 aider --yes-always --notifications --notifications-command 'clawmux hook --from aider-waiting'"
        );
        // A command naming its own mode is left alone.
        assert_eq!(Choice::of("codex -a never").start(m, "x"), "codex -a never");
        assert_eq!(Choice::of("make run").start(m, "x"), "make run");
    }
}
