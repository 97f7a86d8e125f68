//! Claude Code as clawmux starts and reads it: the releases it is tested
//! with (the one place that names the supported range), the permission
//! mode it is started in, and the mode read back from its footer.
//!
//! Since 2.1.332 Claude Code starts in `auto` mode unless told otherwise:
//! commands and edits then run with no dialog, so no approval reaches the
//! chat. clawmux therefore always says which mode it wants.

use std::time::Duration;

use serde::Deserialize;

/// The oldest Claude Code release the real-agent tests run against.
pub const OLDEST_SUPPORTED: &str = "2.1.197";
/// The newest Claude Code release the real-agent tests run against.
pub const NEWEST_TESTED: &str = "2.1.337";
/// Every release clawmux is tested with, oldest first. `.ci/run` installs
/// the first and the last and runs the real-agent tests on both (the whole
/// agents tier on the newest); each release's recordings
/// (`tests/fixtures/claude-<release>/`) are replayed in the fast tier, so a
/// release between them (2.1.332, the newest before 2.1.337) stays covered
/// without a live run of its own. `scripts/add-claude-version.sh` adds one.
pub const TESTED_VERSIONS: [&str; 3] = [OLDEST_SUPPORTED, "2.1.332", NEWEST_TESTED];

/// Whether `version` (as `claude --version` prints its first word) is one
/// of [`TESTED_VERSIONS`].
pub fn is_tested(version: &str) -> bool {
    TESTED_VERSIONS.contains(&version.trim())
}

/// The environment variable (and its value) that stops Claude Code from
/// updating itself in the background: with it a pinned release stays.
pub const AUTOUPDATER_OFF: (&str, &str) = ("DISABLE_AUTOUPDATER", "1");

/// The npm command that installs `release` pinned, for the whole machine.
pub fn pin_command(release: &str) -> String {
    format!("npm install -g @anthropic-ai/claude-code@{release}")
}

/// The command line that asks the Claude Code a project's `command` starts
/// for its release: the command's words up to its program (`env K=V …`
/// included, so the program is found as the pane finds it) and
/// `--version`. `None` when the command does not start Claude Code.
pub fn version_probe(command: &str) -> Option<Vec<String>> {
    let words = clawmux_text::shell::split(command).ok()?;
    if !starts_claude(&words) {
        return None;
    }
    let at = program_at(&words)?;
    let mut probe = words[..=at].to_vec();
    probe.push("--version".to_owned());
    Some(probe)
}

/// How long a dialog must have been on screen before a key is sent to it:
/// twice the longest delay after which 2.1.332 was seen to drop a key
/// (keys sent within ~0.15–0.2 s of a dialog being drawn are often lost;
/// 2.1.337 alike). The daemon's answers and the self-check both wait it.
pub const DIALOG_SETTLE: Duration = Duration::from_millis(400);

/// Whether release `version` (`2.1.332`) is `min` or later; a version
/// that does not parse is taken as the newest.
pub fn at_least(version: &str, min: &str) -> bool {
    let parse =
        |v: &str| -> Option<Vec<u64>> { v.trim().split('.').map(|n| n.parse().ok()).collect() };
    match (parse(version), parse(min)) {
        (Some(v), Some(m)) => v >= m,
        _ => true,
    }
}

/// The permission mode a project's Claude Code runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PermissionMode {
    /// Every tool that changes something asks first: its dialog reaches the
    /// chat. Called `default` before 2.1.332.
    #[default]
    #[serde(alias = "default")]
    Manual,
    /// The agent decides itself: no dialog, nothing to approve in chat.
    Auto,
    /// Read-only until the plan is approved (the plan's dialog reaches the
    /// chat).
    Plan,
    /// Edits are approved without asking; commands still ask.
    AcceptEdits,
    /// Nothing asks.
    BypassPermissions,
}

impl PermissionMode {
    /// Every mode, in the order `/gsd:mode` lists them.
    pub const ALL: [PermissionMode; 5] = [
        PermissionMode::Manual,
        PermissionMode::Auto,
        PermissionMode::Plan,
        PermissionMode::AcceptEdits,
        PermissionMode::BypassPermissions,
    ];

    /// The mode's name in clawmux's config and chat.
    pub fn name(self) -> &'static str {
        match self {
            PermissionMode::Manual => "manual",
            PermissionMode::Auto => "auto",
            PermissionMode::Plan => "plan",
            PermissionMode::AcceptEdits => "acceptEdits",
            PermissionMode::BypassPermissions => "bypassPermissions",
        }
    }

    /// The mode named `name` (config spelling, `default` too, any case).
    pub fn parse(name: &str) -> Option<PermissionMode> {
        let name = name.trim();
        if name.eq_ignore_ascii_case("default") {
            return Some(PermissionMode::Manual);
        }
        Self::ALL
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(name))
    }

    /// What `--permission-mode` takes for this mode on every tested
    /// release: 2.1.197 refuses `manual`, 2.1.332 still takes `default`.
    pub fn flag(self) -> &'static str {
        match self {
            PermissionMode::Manual => "default",
            other => other.name(),
        }
    }
}

impl std::fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// `command` (a project's agent command line) with the permission mode
/// added when it starts Claude Code and says nothing of the mode itself:
/// `claude` → `claude --permission-mode default`. A command that names its
/// own mode, or another program, is left as it is (its mode is still read
/// back from the footer).
pub fn with_permission_mode(command: &str, mode: PermissionMode) -> String {
    if names_mode(command) || !starts_claude(&shell_words(command)) {
        return command.to_owned();
    }
    format!("{command} --permission-mode {}", mode.flag())
}

/// Whether `command` chooses Claude Code's permission mode itself.
pub fn names_mode(command: &str) -> bool {
    shell_words(command).iter().any(|w| {
        w.starts_with("--permission-mode") || w.starts_with("--dangerously-skip-permissions")
    })
}

/// A POSIX shell command line's words, quotes removed (`'…'`, `"…"`,
/// `\x`): enough to find its program and flags, not an interpreter.
pub(crate) fn shell_words(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quote = None;
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, c) if c.is_whitespace() => words.extend(word.take()),
            (None, '\'' | '"') => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            (Some(q), c) if c == q => quote = None,
            (None | Some('"'), '\\') => {
                word.get_or_insert_with(String::new).extend(chars.next());
            }
            (_, c) => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    words
}

/// Whether a command line's program is `claude` (behind `env K=V …` too).
fn starts_claude(words: &[String]) -> bool {
    program_of(words).is_some_and(|name| name == "claude" || name == "claude.exe")
}

/// The file name of a command line's program, behind `env K=V …` too.
pub(crate) fn program_of(words: &[String]) -> Option<&str> {
    let at = program_at(words)?;
    words[at].rsplit('/').next()
}

/// Where a command line's program is among its words, behind `env K=V …`
/// too.
fn program_at(words: &[String]) -> Option<usize> {
    let mut at = 0;
    while words.get(at)? == "env" {
        at += 1;
        while words
            .get(at)
            .is_some_and(|w| w.contains('=') || w.starts_with('-'))
        {
            at += 1;
        }
    }
    words.get(at).map(|_| at)
}

/// Claude Code as an agent definition (see [`crate`]).
pub static AGENT: super::Agent = super::Agent {
    name: "claude",
    title: "Claude Code",
    program: "claude",
    package: "npm @anthropic-ai/claude-code",
    tested: NEWEST_TESTED,
    profile: "gsd",
    interrupt: &["Escape"],
    signals: &[super::Signal::Hooks],
    mode_args,
    mode_flags: &["--permission-mode", "--dangerously-skip-permissions"],
};

fn mode_args(mode: PermissionMode) -> &'static [&'static str] {
    match mode {
        PermissionMode::Manual => &["--permission-mode", "default"],
        PermissionMode::Auto => &["--permission-mode", "auto"],
        PermissionMode::Plan => &["--permission-mode", "plan"],
        PermissionMode::AcceptEdits => &["--permission-mode", "acceptEdits"],
        PermissionMode::BypassPermissions => &["--permission-mode", "bypassPermissions"],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_is_the_default_and_passes_the_spelling_every_release_takes() {
        assert_eq!(PermissionMode::default(), PermissionMode::Manual);
        assert_eq!(PermissionMode::Manual.flag(), "default");
        assert_eq!(PermissionMode::AcceptEdits.flag(), "acceptEdits");
        assert_eq!(
            PermissionMode::parse("DEFAULT"),
            Some(PermissionMode::Manual)
        );
        assert_eq!(
            PermissionMode::parse("bypasspermissions"),
            Some(PermissionMode::BypassPermissions)
        );
        assert_eq!(PermissionMode::parse("yolo"), None);
        for mode in PermissionMode::ALL {
            assert_eq!(PermissionMode::parse(mode.name()), Some(mode));
        }
    }

    #[test]
    fn the_mode_is_added_to_claude_only_when_the_command_names_none() {
        let m = PermissionMode::Manual;
        assert_eq!(
            with_permission_mode("claude", m),
            "claude --permission-mode default"
        );
        assert_eq!(
            with_permission_mode("claude --model sonnet", PermissionMode::Plan),
            "claude --model sonnet --permission-mode plan"
        );
        assert_eq!(
            with_permission_mode("env HOME=/h A='b c' /opt/x/bin/claude", m),
            "env HOME=/h A='b c' /opt/x/bin/claude --permission-mode default"
        );
        assert_eq!(
            with_permission_mode("env A=1 env B=2 claude", m),
            "env A=1 env B=2 claude --permission-mode default"
        );
        for own in [
            "claude --permission-mode auto",
            "claude --permission-mode=plan",
            "claude --dangerously-skip-permissions",
            "aider --model x",
            "/usr/bin/env",
            "",
        ] {
            assert_eq!(with_permission_mode(own, m), own);
        }
    }

    #[test]
    fn the_tested_releases_run_oldest_to_newest() {
        assert_eq!(TESTED_VERSIONS.first(), Some(&OLDEST_SUPPORTED));
        assert_eq!(TESTED_VERSIONS.last(), Some(&NEWEST_TESTED));
        for pair in TESTED_VERSIONS.windows(2) {
            assert!(!at_least(pair[0], pair[1]), "{pair:?}");
        }
        assert!(is_tested("2.1.337"));
        assert!(is_tested(" 2.1.332\n"));
        assert!(!is_tested("2.1.338"));
        assert!(!is_tested(""));
    }

    #[test]
    fn releases_compare_by_number() {
        assert!(at_least("2.1.332", "2.1.332"));
        assert!(at_least("2.1.332", "2.1.197"));
        assert!(!at_least("2.1.197", "2.1.332"));
        assert!(at_least("2.10.0", "2.9.9"));
        assert!(at_least("next", "2.1.197"));
    }

    #[test]
    fn the_version_probe_runs_the_commands_own_claude() {
        let probe = |c: &str| version_probe(c).map(|w| w.join(" "));
        assert_eq!(probe("claude").as_deref(), Some("claude --version"));
        assert_eq!(
            probe("env HOME=/h 'A=b c' /opt/x/bin/claude --permission-mode default").as_deref(),
            Some("env HOME=/h A=b c /opt/x/bin/claude --version")
        );
        assert_eq!(
            probe("env -i env B=2 claude.exe --model x").as_deref(),
            Some("env -i env B=2 claude.exe --version")
        );
        for other in ["codex", "/usr/bin/env", "env A=1", "", "claude 'unclosed"] {
            assert_eq!(probe(other), None, "{other}");
        }
    }

    #[test]
    fn shell_words_unquote() {
        assert_eq!(
            shell_words(r#"env 'A=b c' B="d e" f\ g  claude"#),
            ["env", "A=b c", "B=d e", "f g", "claude"]
        );
        assert_eq!(shell_words("  "), Vec::<String>::new());
        assert_eq!(shell_words("''"), [""]);
    }

    #[test]
    fn footers_of_both_releases_name_their_mode() {
        let cases = [
            (
                "⏵⏵ auto mode on (shift+tab to cycle)",
                Some(PermissionMode::Auto),
            ),
            (
                "⏸ manual mode on · ? for shortcuts",
                Some(PermissionMode::Manual),
            ),
            (
                "⏸ plan mode on (shift+tab to cycle) · esc to interrupt",
                Some(PermissionMode::Plan),
            ),
            (
                "⏵⏵ accept edits on (shift+tab to cycle)",
                Some(PermissionMode::AcceptEdits),
            ),
            (
                "⏵⏵ bypass permissions on",
                Some(PermissionMode::BypassPermissions),
            ),
            // 2.1.197's default mode shows no mode.
            ("? for shortcuts", Some(PermissionMode::Manual)),
            (
                "esc to interrupt · ctrl+t to show todos",
                Some(PermissionMode::Manual),
            ),
            // A statusline or a half-drawn footer says nothing.
            ("Phase 2 · 40%", None),
            ("⏵⏵", None),
        ];
        // Detection reads the footer with the profile's words; each name
        // it reports is a mode of this definition.
        let profile = clawmux_detect::Profiles::defaults()
            .unwrap()
            .get("gsd")
            .unwrap();
        let footer_mode = |rows: &[&str]| {
            let name = profile.footer_mode(rows.iter().copied())?;
            Some(PermissionMode::parse(&name).unwrap_or_else(|| panic!("{name}")))
        };
        for (row, mode) in cases {
            assert_eq!(footer_mode(&[row]), mode, "{row}");
        }
        assert_eq!(
            footer_mode(&["? for shortcuts", "⏵⏵ accept edits on"]),
            Some(PermissionMode::AcceptEdits)
        );
    }
}
