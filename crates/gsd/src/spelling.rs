//! Which spelling a project's installed GSD accepts, and a chat command
//! rewritten into it.
//!
//! - The global install (GSD's default) writes skills
//!   `~/.claude/skills/gsd-<name>/SKILL.md` in the agent's HOME: typed
//!   `/gsd-<name>`.
//! - The project-local install writes `.claude/commands/gsd/<name>.md` in
//!   the project: typed `/gsd:<name>`.
//!
//! Claude Code refuses the other spelling, and without arguments its picker
//! runs a fuzzy match instead (`/gsd:next` ran another skill), so the
//! rewrite matters. The decision is a pure function of the two directory
//! listings ([`Install::from_listings`]); [`probe_local`] makes those
//! listings on this machine.
//!
//! GSD installs for other agents in their own places (measured on 1.42.3,
//! `install.js --gemini` / `--codex`):
//!
//! - Gemini CLI: commands `~/.gemini/commands/gsd/<name>.toml` (global) or
//!   `.gemini/commands/gsd/<name>.toml` in the project (local), typed
//!   `/gsd:<name>` (Gemini names a command in a subdirectory `dir:name`).
//! - Codex CLI: skills `$CODEX_HOME/skills/gsd-<name>/SKILL.md` (global,
//!   `CODEX_HOME` defaulting to `~/.codex`), typed `$gsd-<name>` (Codex
//!   calls a skill by mentioning it with `$`).
//!
//! `host::probe` probes the places of the agent the project runs.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use clawmux_text::shell;

/// At most this many directory entries are read per listing: GSD 1.42.3
/// installs 67; a directory far larger is not GSD's and reading it whole
/// would stall the project's actor.
pub const MAX_LISTING_ENTRIES: usize = 1024;

/// The two ways a GSD command is typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spelling {
    /// `/gsd-<name>`: global (or project) skills.
    Dash,
    /// `/gsd:<name>`: project-local commands; Gemini CLI's commands.
    Colon,
    /// `$gsd-<name>`: Codex CLI's skills.
    Dollar,
}

impl Spelling {
    pub fn prefix(self) -> &'static str {
        match self {
            Spelling::Dash => "/gsd-",
            Spelling::Colon => "/gsd:",
            Spelling::Dollar => "$gsd-",
        }
    }
}

/// The GSD commands a project's agent has, by spelling.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Install {
    /// Names installed as skills (`gsd-<name>` directories).
    pub skills: BTreeSet<String>,
    /// Names installed as project commands (`<name>.md` in `commands/gsd/`).
    pub commands: BTreeSet<String>,
    /// Names installed as Codex skills (typed `$gsd-<name>`).
    pub mentions: BTreeSet<String>,
}

impl Install {
    /// From directory listings: `skill_dirs` are entry names of
    /// `.claude/skills/` (the agent HOME's and the project's), `command_files`
    /// entry names of the project's `.claude/commands/gsd/`.
    pub fn from_listings<'a>(
        skill_dirs: impl IntoIterator<Item = &'a str>,
        command_files: impl IntoIterator<Item = &'a str>,
    ) -> Install {
        let skills = skill_dirs
            .into_iter()
            .filter_map(|d| d.strip_prefix("gsd-"))
            .filter(|n| is_command_name(n))
            .map(str::to_string)
            .collect();
        let commands = command_files
            .into_iter()
            .filter_map(|f| f.strip_suffix(".md"))
            .filter(|n| is_command_name(n))
            .map(str::to_string)
            .collect();
        Install {
            skills,
            commands,
            mentions: BTreeSet::new(),
        }
    }

    /// Gemini CLI's install from the entry names of its `commands/gsd/`
    /// directories (`<name>.toml`).
    pub fn from_gemini_listing<'a>(command_files: impl IntoIterator<Item = &'a str>) -> Install {
        let commands = command_files
            .into_iter()
            .filter_map(|f| f.strip_suffix(".toml"))
            .filter(|n| is_command_name(n))
            .map(str::to_string)
            .collect();
        Install {
            commands,
            ..Install::default()
        }
    }

    /// Codex CLI's install from the entry names of its `skills/`
    /// directories (`gsd-<name>`).
    pub fn from_codex_listing<'a>(skill_dirs: impl IntoIterator<Item = &'a str>) -> Install {
        let mentions = skill_dirs
            .into_iter()
            .filter_map(|d| d.strip_prefix("gsd-"))
            .filter(|n| is_command_name(n))
            .map(str::to_string)
            .collect();
        Install {
            mentions,
            ..Install::default()
        }
    }

    pub fn is_empty(&self) -> bool {
        self.skills.is_empty() && self.commands.is_empty() && self.mentions.is_empty()
    }

    /// The spelling `name` takes. The project's own commands win over the
    /// agent HOME's skills: they are the version installed for this project.
    pub fn spelling_of(&self, name: &str) -> Option<Spelling> {
        if self.commands.contains(name) {
            Some(Spelling::Colon)
        } else if self.skills.contains(name) {
            Some(Spelling::Dash)
        } else if self.mentions.contains(name) {
            Some(Spelling::Dollar)
        } else {
            None
        }
    }

    /// `text` with its GSD command in the spelling this install accepts.
    /// Text that is not a GSD command, or names a command this install
    /// lacks, is returned unchanged (the agent then says what it thinks).
    pub fn rewrite(&self, text: &str) -> String {
        let Some((name, args)) = split_command(text) else {
            return text.to_string();
        };
        match self.spelling_of(name) {
            Some(s) => format!("{}{name}{args}", s.prefix()),
            None => text.to_string(),
        }
    }
}

/// The GSD command name of a chat message as typed, name unchecked
/// (`plan-phase` for `/gsd:plan-phase 2`).
pub fn gsd_name(text: &str) -> Option<&str> {
    let rest = text.trim_start();
    let rest = rest
        .strip_prefix("/gsd:")
        .or_else(|| rest.strip_prefix("/gsd-"))?;
    let name = rest.split(char::is_whitespace).next().unwrap_or("");
    (!name.is_empty()).then_some(name)
}

/// `("plan-phase", " 2")` for `/gsd:plan-phase 2`, `/gsd-plan-phase 2`
/// or `$gsd-plan-phase 2` (leading blanks allowed; the arguments keep their
/// leading blank).
pub fn split_command(text: &str) -> Option<(&str, &str)> {
    let rest = text.trim_start();
    let rest = rest
        .strip_prefix("/gsd:")
        .or_else(|| rest.strip_prefix("/gsd-"))
        .or_else(|| rest.strip_prefix("$gsd-"))?;
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let (name, args) = rest.split_at(end);
    is_command_name(name).then_some((name, args))
}

/// GSD's command names: lower-case letters, digits and inner dashes.
pub fn is_command_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('-')
        && !name.ends_with('-')
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// The HOME the agent command runs with: a `HOME=` assignment of a leading
/// `env` (as in `env HOME=/x claude`, quoted or not), else `default` (the
/// daemon's own HOME, which the pane inherits).
pub fn agent_home(command: &str, default: Option<PathBuf>) -> Option<PathBuf> {
    shell::env_assignment(command, "HOME")
        .map(PathBuf::from)
        .or(default)
}

/// The install seen from this machine's file system: the agent HOME's and
/// the project's `.claude/skills/`, and the project's
/// `.claude/commands/gsd/`. Missing directories are no install.
pub fn probe_local(workspace: &Path, home: Option<&Path>) -> Install {
    let mut skills = Vec::new();
    if let Some(home) = home {
        skills.extend(list(&home.join(".claude/skills")));
    }
    skills.extend(list(&workspace.join(".claude/skills")));
    let commands = list(&workspace.join(".claude/commands/gsd"));
    Install::from_listings(
        skills.iter().map(String::as_str),
        commands.iter().map(String::as_str),
    )
}

/// Up to [`MAX_LISTING_ENTRIES`] entry names of `dir` (none if unreadable).
fn list(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .take(MAX_LISTING_ENTRIES)
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect()
}

/// Gemini CLI's GSD commands: the agent HOME's and the project's
/// `.gemini/commands/gsd/`.
pub fn probe_gemini(workspace: &Path, home: Option<&Path>) -> Install {
    let mut files = Vec::new();
    if let Some(home) = home {
        files.extend(list(&home.join(".gemini/commands/gsd")));
    }
    files.extend(list(&workspace.join(".gemini/commands/gsd")));
    Install::from_gemini_listing(files.iter().map(String::as_str))
}

/// Codex CLI's GSD skills in `codex_home/skills/`.
pub fn probe_codex(codex_home: Option<&Path>) -> Install {
    let dirs = codex_home
        .map(|h| list(&h.join("skills")))
        .unwrap_or_default();
    Install::from_codex_listing(dirs.iter().map(String::as_str))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn global() -> Install {
        let dirs: Vec<String> = crate::COMMANDS_1_42_3
            .iter()
            .map(|n| format!("gsd-{n}"))
            .collect();
        Install::from_listings(dirs.iter().map(String::as_str), [])
    }

    fn local() -> Install {
        let files: Vec<String> = crate::COMMANDS_1_42_3
            .iter()
            .map(|n| format!("{n}.md"))
            .collect();
        Install::from_listings([], files.iter().map(String::as_str))
    }

    #[test]
    fn gsd_names() {
        assert_eq!(gsd_name("/gsd:plan-phase 2"), Some("plan-phase"));
        assert_eq!(gsd_name("/gsd-quick"), Some("quick"));
        assert_eq!(gsd_name("/gsd:"), None);
        assert_eq!(gsd_name("hello /gsd:x"), None);
    }

    #[test]
    fn global_skills_take_the_dash() {
        let g = global();
        assert_eq!(g.rewrite("/gsd:plan-phase 2"), "/gsd-plan-phase 2");
        assert_eq!(g.rewrite("/gsd-plan-phase 2"), "/gsd-plan-phase 2");
        assert_eq!(g.rewrite("/gsd:progress"), "/gsd-progress");
        assert_eq!(g.rewrite("  /gsd:quick fix it"), "/gsd-quick fix it");
    }

    #[test]
    fn local_commands_take_the_colon() {
        let l = local();
        assert_eq!(l.rewrite("/gsd-plan-phase 2"), "/gsd:plan-phase 2");
        assert_eq!(
            l.rewrite("/gsd-code-review --fix"),
            "/gsd:code-review --fix"
        );
        assert_eq!(l.rewrite("/gsd:help"), "/gsd:help");
    }

    #[test]
    fn the_projects_commands_win_over_home_skills() {
        let both = Install {
            skills: global().skills,
            commands: ["spike".to_string()].into(),
            mentions: BTreeSet::new(),
        };
        assert_eq!(both.rewrite("/gsd-spike x"), "/gsd:spike x");
        assert_eq!(both.rewrite("/gsd:ship"), "/gsd-ship");
    }

    #[test]
    fn what_is_not_installed_is_left_alone() {
        let none = Install::default();
        assert!(none.is_empty());
        assert_eq!(none.rewrite("/gsd:next"), "/gsd:next");
        assert_eq!(global().rewrite("/gsd:next"), "/gsd:next");
        assert_eq!(global().rewrite("fix /gsd:ship"), "fix /gsd:ship");
        assert_eq!(global().rewrite("/gsd:"), "/gsd:");
        assert_eq!(global().rewrite("/gsd:Ship"), "/gsd:Ship");
    }

    #[test]
    fn listings_ignore_what_is_not_gsd() {
        let i = Install::from_listings(
            ["gsd-ship", "other-skill", "gsd-", "gsd-Bad!", "gsd-ok-2"],
            ["quick.md", "notes.txt", ".md", "x-.md"],
        );
        assert_eq!(
            i.skills.iter().map(String::as_str).collect::<Vec<_>>(),
            ["ok-2", "ship"]
        );
        assert_eq!(
            i.commands.iter().map(String::as_str).collect::<Vec<_>>(),
            ["quick"]
        );
    }

    #[test]
    fn the_agents_home_from_its_command() {
        let d = Some(PathBuf::from("/home/me"));
        assert_eq!(
            agent_home("env 'HOME=/tmp/a b' 'PATH=/x' /bin/claude", d.clone()),
            Some(PathBuf::from("/tmp/a b"))
        );
        assert_eq!(
            agent_home("env -i HOME=\"/tmp/q\" claude", d.clone()),
            Some(PathBuf::from("/tmp/q"))
        );
        assert_eq!(agent_home("claude", d.clone()), d);
        // A HOME= after the command is the command's argument.
        assert_eq!(agent_home("env A=1 claude HOME=/no", d.clone()), d);
        assert_eq!(agent_home("", None), None);
        // A line `sh` would refuse to run sets nothing.
        assert_eq!(agent_home("env 'HOME=/unterminated", d.clone()), d);
    }

    #[test]
    fn gemini_commands_take_the_colon_and_codex_skills_the_dollar() {
        let names: Vec<String> = (crate::COMMANDS_1_42_3.iter())
            .map(|n| format!("{n}.toml"))
            .collect();
        let gemini = Install::from_gemini_listing(names.iter().map(String::as_str));
        assert_eq!(gemini.rewrite("/gsd-plan-phase 2"), "/gsd:plan-phase 2");
        assert_eq!(gemini.rewrite("/gsd:progress"), "/gsd:progress");
        let dirs: Vec<String> = (crate::COMMANDS_1_42_3.iter())
            .map(|n| format!("gsd-{n}"))
            .collect();
        let codex = Install::from_codex_listing(dirs.iter().map(String::as_str));
        assert_eq!(codex.rewrite("/gsd:plan-phase 2"), "$gsd-plan-phase 2");
        assert_eq!(codex.rewrite("/gsd-quick fix it"), "$gsd-quick fix it");
        assert_eq!(codex.rewrite("$gsd-help"), "$gsd-help");
        assert_eq!(codex.rewrite("/gsd:nope"), "/gsd:nope");
        assert!(Install::from_gemini_listing(["x.md", "gsd-a"]).is_empty());
    }

    #[test]
    fn probing_reads_both_layouts() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join(".claude/skills/gsd-ship")).unwrap();
        std::fs::create_dir_all(ws.path().join(".claude/commands/gsd")).unwrap();
        std::fs::write(ws.path().join(".claude/commands/gsd/quick.md"), "x").unwrap();
        let i = probe_local(ws.path(), Some(home.path()));
        assert_eq!(i.spelling_of("ship"), Some(Spelling::Dash));
        assert_eq!(i.spelling_of("quick"), Some(Spelling::Colon));
        assert_eq!(
            probe_local(&ws.path().join("missing"), None),
            Install::default()
        );
    }
}
