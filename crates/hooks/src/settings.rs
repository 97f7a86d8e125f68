//! The hook configuration clawmux needs from each agent, and merging it into
//! the agent's file without disturbing anything else there.
//!
//! Shape (Claude Code's settings): `{"hooks": {"<Event>": [{"matcher"?, "hooks":
//! [{"type": "command", "command": "clawmux hook", "timeout": 5}]}]}}`.
//! Codex's `CODEX_HOME/hooks.json` and Gemini CLI's `~/.gemini/settings.json`
//! take the same shape with their own event names ([`Agent`]); Gemini's
//! timeout is in milliseconds, and its settings also get its terminal
//! notifications turned on ([`Agent::settings`]). Codex also gets its
//! `notify` program in `config.toml` ([`codex_notify_line`]).

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::HookError;

/// Seconds Claude Code lets the hook run before killing it. `clawmux hook`
/// returns in milliseconds; this is only a ceiling.
pub const HOOK_TIMEOUT_SECS: u64 = 5;

/// The notifications that carry a signal (`notification_type`).
pub const NOTIFICATION_MATCHER: &str = "permission_prompt|idle_prompt";

/// The events clawmux listens to, with their matcher. Claude Code 2.1.x
/// ends a turn that failed on an API error with `StopFailure` instead of
/// `Stop`, and reports its task list with `TaskCreated`/`TaskCompleted`.
pub const HOOK_EVENTS: [(&str, Option<&str>); 7] = [
    ("Stop", None),
    ("StopFailure", None),
    ("Notification", Some(NOTIFICATION_MATCHER)),
    ("PermissionRequest", None),
    ("SessionStart", None),
    ("TaskCreated", None),
    ("TaskCompleted", None),
];

/// Codex's events: a turn's end and a permission dialog (measured on
/// 0.171.0: both reach `clawmux hook` with Claude Code's payload fields).
pub const CODEX_HOOK_EVENTS: [(&str, Option<&str>); 2] =
    [("Stop", None), ("PermissionRequest", None)];

/// Gemini CLI's events: `AfterAgent` ends a turn (its `prompt_response` is
/// the final text), `Notification` says a tool waits for permission, and
/// `BeforeTool` of its `ask_user` tool says what a question offers (its
/// box shows only what the pane has room for).
pub const GEMINI_HOOK_EVENTS: [(&str, Option<&str>); 3] = [
    ("AfterAgent", None),
    ("Notification", None),
    ("BeforeTool", Some("ask_user")),
];

/// Gemini CLI's hook timeout, in milliseconds (its unit).
pub const GEMINI_HOOK_TIMEOUT_MS: u64 = 5000;

/// Gemini CLI's settings clawmux needs besides its hooks, as (section,
/// key, value): its terminal notifications (off by default) on, as OSC
/// 777 in the pane's output (`auto` sends OSC 9 or a bare bell in some
/// terminals), which clawmux reads as a second signal (see
/// `agents::gemini`).
pub const GEMINI_SETTINGS: [(&str, &str, Setting); 2] = [
    ("general", "enableNotifications", Setting::Bool(true)),
    ("general", "notificationMethod", Setting::Str("osc777")),
];

/// A settings value clawmux sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    Bool(bool),
    Str(&'static str),
}

impl Setting {
    /// The value as JSON.
    pub fn json(self) -> Value {
        match self {
            Setting::Bool(b) => b.into(),
            Setting::Str(s) => s.into(),
        }
    }
}

/// The agent whose hook file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Agent {
    /// Claude Code: the project's `.claude/settings.json`.
    #[default]
    Claude,
    /// Codex CLI: `CODEX_HOME/hooks.json` (and `notify` in `config.toml`).
    Codex,
    /// Gemini CLI: `~/.gemini/settings.json`.
    Gemini,
}

impl Agent {
    /// The events installed, each with its matcher.
    pub fn events(self) -> &'static [(&'static str, Option<&'static str>)] {
        match self {
            Agent::Claude => &HOOK_EVENTS,
            Agent::Codex => &CODEX_HOOK_EVENTS,
            Agent::Gemini => &GEMINI_HOOK_EVENTS,
        }
    }

    /// Settings set besides the hooks, as (section, key, value).
    pub fn settings(self) -> &'static [(&'static str, &'static str, Setting)] {
        match self {
            Agent::Claude | Agent::Codex => &[],
            Agent::Gemini => &GEMINI_SETTINGS,
        }
    }

    /// The `timeout` value of each hook, in the agent's unit.
    pub fn timeout(self) -> u64 {
        match self {
            Agent::Claude | Agent::Codex => HOOK_TIMEOUT_SECS,
            Agent::Gemini => GEMINI_HOOK_TIMEOUT_MS,
        }
    }
}

/// Largest settings file read; real ones are a few KiB.
const MAX_SETTINGS_BYTES: u64 = 4 << 20;

/// The hook command line: `clawmux hook`, or `<bin> hook` with `bin`
/// shell-quoted when it needs to be.
pub fn hook_command(bin: Option<&Path>) -> String {
    match bin {
        None => "clawmux hook".to_owned(),
        Some(bin) => format!("{} hook", shell_quote(&bin.to_string_lossy())),
    }
}

/// The `{"hooks": …}` object for `command` (Claude Code's).
pub fn hooks_config(command: &str) -> Value {
    hooks_config_for(Agent::Claude, command)
}

/// The `{"hooks": …}` object `agent` gets for `command`, with its other
/// settings ([`Agent::settings`]).
pub fn hooks_config_for(agent: Agent, command: &str) -> Value {
    let hooks: Map<String, Value> = (agent.events().iter())
        .map(|&(event, matcher)| {
            let group = matcher_group(matcher, command, agent.timeout());
            (event.to_owned(), json!([group]))
        })
        .collect();
    let mut config = json!({ "hooks": hooks });
    for &(section, key, value) in agent.settings() {
        config[section][key] = value.json();
    }
    config
}

fn matcher_group(matcher: Option<&str>, command: &str, timeout: u64) -> Value {
    let mut group = Map::new();
    if let Some(m) = matcher {
        group.insert("matcher".into(), m.into());
    }
    group.insert(
        "hooks".into(),
        json!([{"type": "command", "command": command, "timeout": timeout}]),
    );
    Value::Object(group)
}

/// What a merge changed, by event name.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct MergeReport {
    /// Events that had no clawmux hook and got one.
    pub added: Vec<&'static str>,
    /// Events whose clawmux hook ran another command (e.g. another `--bin`).
    pub updated: Vec<&'static str>,
    /// Other settings set ([`Agent::settings`]), as `section.key`.
    pub set: Vec<String>,
}

impl MergeReport {
    pub fn changed(&self) -> bool {
        !self.added.is_empty() || !self.updated.is_empty() || !self.set.is_empty()
    }
}

/// The part of a settings file whose JSON is not the shape hooks go into.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShapeError {
    #[error("the file is not a JSON object")]
    NotAnObject,
    #[error("\"{0}\" is not an object")]
    NotATable(&'static str),
    #[error("\"hooks.{0}\" is not an array")]
    NotAList(&'static str),
}

/// Adds clawmux's hooks to a parsed settings object, keeping every other
/// key, group and hook. Running it twice changes nothing the second time.
/// `Err` names the part of `settings` that has an unexpected shape, and
/// `settings` is left as it was.
pub fn merge_into(settings: &mut Value, command: &str) -> Result<MergeReport, ShapeError> {
    merge_into_for(Agent::Claude, settings, command)
}

/// [`merge_into`] with `agent`'s events.
pub fn merge_into_for(
    agent: Agent,
    settings: &mut Value,
    command: &str,
) -> Result<MergeReport, ShapeError> {
    let mut merged = settings.clone();
    let report = merge(agent, &mut merged, command)?;
    *settings = merged;
    Ok(report)
}

fn merge(agent: Agent, settings: &mut Value, command: &str) -> Result<MergeReport, ShapeError> {
    let root = settings.as_object_mut().ok_or(ShapeError::NotAnObject)?;
    let hooks = root
        .entry("hooks")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or(ShapeError::NotATable("hooks"))?;
    let mut report = MergeReport::default();
    for &(event, matcher) in agent.events() {
        let groups = hooks
            .entry(event)
            .or_insert_with(|| json!([]))
            .as_array_mut()
            .ok_or(ShapeError::NotAList(event))?;
        let ours = groups
            .iter_mut()
            .filter_map(|g| g.get_mut("hooks")?.as_array_mut())
            .flatten()
            .filter_map(|h| h.get_mut("command"))
            .find(|c| c.as_str().is_some_and(is_clawmux_hook));
        match ours {
            Some(existing) if existing.as_str() == Some(command) => {}
            Some(existing) => {
                *existing = command.into();
                report.updated.push(event);
            }
            None => {
                groups.push(matcher_group(matcher, command, agent.timeout()));
                report.added.push(event);
            }
        }
    }
    for &(section, key, value) in agent.settings() {
        let table = root
            .entry(section)
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .ok_or(ShapeError::NotATable(section))?;
        if table.get(key) != Some(&value.json()) {
            table.insert(key.to_owned(), value.json());
            report.set.push(format!("{section}.{key}"));
        }
    }
    Ok(report)
}

/// Merges clawmux's hooks into `project_dir/.claude/settings.json`
/// (created if missing), writing atomically and only when something changed.
/// Returns the file path and what changed.
pub fn install(project_dir: &Path, command: &str) -> Result<(PathBuf, MergeReport), HookError> {
    if !project_dir.is_dir() {
        return Err(HookError::Settings {
            path: project_dir.to_path_buf(),
            reason: "not a directory".into(),
        });
    }
    install_file(
        Agent::Claude,
        &project_dir.join(".claude/settings.json"),
        command,
    )
}

/// Merges `agent`'s hooks into the JSON file at `path` (created, with its
/// directory, if missing), writing atomically and only when something
/// changed. Used for Codex's `hooks.json` and Gemini's `settings.json`.
pub fn install_file(
    agent: Agent,
    path: &Path,
    command: &str,
) -> Result<(PathBuf, MergeReport), HookError> {
    let path = path.to_path_buf();
    let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
    let (mut settings, permissions) = match fs::File::open(&path) {
        Ok(file) => {
            let permissions = file
                .metadata()
                .map_err(HookError::io("stat", &path))?
                .permissions();
            (read_settings(file, &path)?, Some(permissions))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (json!({}), None),
        Err(e) => return Err(HookError::io("open", &path)(e)),
    };
    let report =
        merge_into_for(agent, &mut settings, command).map_err(|source| HookError::Shape {
            path: path.clone(),
            source,
        })?;
    if report.changed() {
        fs::create_dir_all(&dir).map_err(HookError::io("create", &dir))?;
        let mut text =
            serde_json::to_string_pretty(&settings).map_err(|e| HookError::Settings {
                path: path.clone(),
                reason: e.to_string(),
            })?;
        text.push('\n');
        // Write through a symlinked settings file (dotfiles) instead of
        // replacing the link.
        let target = fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
        write_atomically(&target, text.as_bytes(), permissions)?;
    }
    Ok((path, report))
}

/// The arguments after the program in Codex's `notify` for clawmux.
pub const CODEX_NOTIFY_ARGS: [&str; 3] = ["hook", "--from", "codex-notify"];

/// Codex's `notify` argv: `bin` (or `clawmux` on PATH) and
/// [`CODEX_NOTIFY_ARGS`]. Codex runs it without a shell, adding its JSON
/// as the last argument.
pub fn codex_notify_argv(bin: Option<&Path>) -> Vec<String> {
    let program = bin.map_or_else(
        || "clawmux".to_owned(),
        |b| b.to_string_lossy().into_owned(),
    );
    std::iter::once(program)
        .chain(CODEX_NOTIFY_ARGS.iter().map(|a| (*a).to_owned()))
        .collect()
}

/// The `notify = [...]` line for `argv`, in TOML.
pub fn codex_notify_line(argv: &[String]) -> String {
    let array = toml::Value::Array(argv.iter().cloned().map(toml::Value::String).collect());
    format!("notify = {array}")
}

/// What [`install_codex_notify`] found or did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotifyReport {
    /// The line was added.
    Added,
    /// The same `notify` was there already.
    Present,
    /// Another `notify` is configured (Codex runs one program only); it is
    /// left alone and shown here.
    Kept(String),
}

/// Puts clawmux's `notify` into Codex's `config.toml` at `path` (created if
/// missing) unless one is configured. The line goes first in the file, where
/// a key is always top-level; the rest of the file (comments, order) stays
/// byte for byte.
pub fn install_codex_notify(path: &Path, argv: &[String]) -> Result<NotifyReport, HookError> {
    let invalid = |reason: String| HookError::Settings {
        path: path.to_path_buf(),
        reason,
    };
    let (text, permissions) = match fs::File::open(path) {
        Ok(file) => {
            let permissions = file
                .metadata()
                .map_err(HookError::io("stat", path))?
                .permissions();
            let mut text = String::new();
            file.take(MAX_SETTINGS_BYTES + 1)
                .read_to_string(&mut text)
                .map_err(HookError::io("read", path))?;
            if text.len() as u64 > MAX_SETTINGS_BYTES {
                return Err(invalid(format!("larger than {MAX_SETTINGS_BYTES} bytes")));
            }
            (text, Some(permissions))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (String::new(), None),
        Err(e) => return Err(HookError::io("open", path)(e)),
    };
    let table: toml::Table = text.parse().map_err(|e| {
        invalid(format!(
            "not valid TOML ({e}); fix or remove it, nothing was changed"
        ))
    })?;
    if let Some(existing) = table.get("notify") {
        let same = existing.as_array().is_some_and(|a| {
            a.len() == argv.len() && a.iter().zip(argv).all(|(v, w)| v.as_str() == Some(w))
        });
        return Ok(if same {
            NotifyReport::Present
        } else {
            NotifyReport::Kept(existing.to_string())
        });
    }
    let new = format!("{}\n{text}", codex_notify_line(argv));
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(HookError::io("create", dir))?;
    }
    let target = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    write_atomically(&target, new.as_bytes(), permissions)?;
    Ok(NotifyReport::Added)
}

fn read_settings(file: fs::File, path: &Path) -> Result<Value, HookError> {
    let mut text = String::new();
    file.take(MAX_SETTINGS_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(HookError::io("read", path))?;
    let invalid = |reason: String| HookError::Settings {
        path: path.to_path_buf(),
        reason,
    };
    if text.len() as u64 > MAX_SETTINGS_BYTES {
        return Err(invalid(format!("larger than {MAX_SETTINGS_BYTES} bytes")));
    }
    if text.trim().is_empty() {
        return Ok(json!({}));
    }
    serde_json::from_str(&text).map_err(|e| {
        invalid(format!(
            "not valid JSON ({e}); fix or remove it, nothing was changed"
        ))
    })
}

/// Temp file in the same directory, fsync, rename: readers see the old file
/// or the new one, never half of it.
fn write_atomically(
    path: &Path,
    bytes: &[u8],
    permissions: Option<fs::Permissions>,
) -> Result<(), HookError> {
    let tmp = path.with_extension("json.clawmux-tmp");
    let result = (|| {
        let mut file = fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        if let Some(p) = permissions {
            file.set_permissions(p)?;
        }
        file.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.map_err(HookError::io("write", path))
}

/// Whether a hook command line runs `clawmux hook` (any path to clawmux).
fn is_clawmux_hook(command: &str) -> bool {
    command.strip_suffix(" hook").is_some_and(|program| {
        let program = shell_unquote(program.trim());
        Path::new(&program)
            .file_name()
            .is_some_and(|n| n == "clawmux")
    })
}

/// POSIX single quotes, only when `s` has characters the shell would act on.
fn shell_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:@%,".contains(&b));
    if plain {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

fn shell_unquote(s: &str) -> String {
    match s.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')) {
        Some(inner) => inner.replace(r"'\''", "'"),
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_matches_the_reference_shape() {
        let config = hooks_config("clawmux hook");
        let reference: Value = serde_json::from_str(
            r#"{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"clawmux hook","timeout":5}]}],"Notification":[{"matcher":"permission_prompt|idle_prompt","hooks":[{"type":"command","command":"clawmux hook","timeout":5}]}]}}"#,
        )
        .unwrap();
        for event in ["Stop", "Notification"] {
            assert_eq!(config["hooks"][event], reference["hooks"][event], "{event}");
        }
        for event in [
            "StopFailure",
            "PermissionRequest",
            "SessionStart",
            "TaskCreated",
            "TaskCompleted",
        ] {
            assert_eq!(
                config["hooks"][event], reference["hooks"]["Stop"],
                "{event}"
            );
        }
        assert_eq!(config["hooks"].as_object().unwrap().len(), 7);
    }

    #[test]
    fn bin_paths_are_quoted_for_the_shell_and_recognised_again() {
        assert_eq!(
            hook_command(Some(Path::new("/usr/local/bin/clawmux"))),
            "/usr/local/bin/clawmux hook"
        );
        let odd = hook_command(Some(Path::new("/opt/my tools/it's/clawmux")));
        assert_eq!(odd, r"'/opt/my tools/it'\''s/clawmux' hook");
        for cmd in ["clawmux hook", "/usr/local/bin/clawmux hook", &odd] {
            assert!(is_clawmux_hook(cmd), "{cmd}");
        }
        for cmd in [
            "other hook",
            "clawmux hooks",
            "clawmux serve",
            "notclawmux hook",
        ] {
            assert!(!is_clawmux_hook(cmd), "{cmd}");
        }
    }

    #[test]
    fn merge_keeps_everything_and_is_idempotent() {
        let mut settings = json!({
            "permissions": {"allow": ["Bash(git status)"]},
            "hooks": {
                "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
                "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard"}]}]
            }
        });
        let before = settings.clone();
        let report = merge_into(&mut settings, "clawmux hook").unwrap();
        assert_eq!(
            report.added,
            [
                "Stop",
                "StopFailure",
                "Notification",
                "PermissionRequest",
                "SessionStart",
                "TaskCreated",
                "TaskCompleted"
            ]
        );
        assert_eq!(settings["permissions"], before["permissions"]);
        assert_eq!(
            settings["hooks"]["PreToolUse"],
            before["hooks"]["PreToolUse"]
        );
        assert_eq!(settings["hooks"]["Stop"][0], before["hooks"]["Stop"][0]);
        assert_eq!(
            settings["hooks"]["Stop"][1]["hooks"][0]["command"],
            "clawmux hook"
        );

        let once = settings.clone();
        assert_eq!(
            merge_into(&mut settings, "clawmux hook").unwrap(),
            MergeReport::default()
        );
        assert_eq!(settings, once);

        let report = merge_into(&mut settings, "/opt/clawmux hook").unwrap();
        assert_eq!(report.updated.len(), 7);
        assert!(report.added.is_empty());
        assert_eq!(
            settings["hooks"]["Stop"][1]["hooks"][0]["command"],
            "/opt/clawmux hook"
        );
    }

    #[test]
    fn merge_refuses_unexpected_shapes() {
        for bad in [
            json!([]),
            json!({"hooks": []}),
            json!({"hooks": {"SessionStart": {}}}),
        ] {
            let mut settings = bad.clone();
            assert!(merge_into(&mut settings, "clawmux hook").is_err(), "{bad}");
            assert_eq!(settings, bad);
        }
    }

    #[test]
    fn codex_and_gemini_configs_are_the_documented_json() {
        let codex: Value = serde_json::from_str(
            r#"{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"clawmux hook","timeout":5}]}],"PermissionRequest":[{"hooks":[{"type":"command","command":"clawmux hook","timeout":5}]}]}}"#,
        )
        .unwrap();
        assert_eq!(hooks_config_for(Agent::Codex, "clawmux hook"), codex);
        let gemini: Value = serde_json::from_str(
            r#"{"hooks":{"AfterAgent":[{"hooks":[{"type":"command","command":"clawmux hook","timeout":5000}]}],"Notification":[{"hooks":[{"type":"command","command":"clawmux hook","timeout":5000}]}],"BeforeTool":[{"matcher":"ask_user","hooks":[{"type":"command","command":"clawmux hook","timeout":5000}]}]},"general":{"enableNotifications":true,"notificationMethod":"osc777"}}"#,
        )
        .unwrap();
        assert_eq!(hooks_config_for(Agent::Gemini, "clawmux hook"), gemini);
    }

    #[test]
    fn gemini_settings_keep_the_users_and_gsds_entries() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".gemini/settings.json");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let before = json!({
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "general": {"enableAutoUpdate": false, "enableNotifications": false},
            "hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "node gsd-check-update.js"}]}],
                      "AfterAgent": [{"hooks": [{"type": "command", "command": "say done"}]}]}
        });
        std::fs::write(&path, before.to_string()).unwrap();
        let (_, report) = install_file(Agent::Gemini, &path, "clawmux hook").unwrap();
        assert_eq!(report.added, ["AfterAgent", "Notification", "BeforeTool"]);
        assert_eq!(
            report.set,
            ["general.enableNotifications", "general.notificationMethod"]
        );
        let after: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(after["security"], before["security"]);
        // Its notifications on, as OSC 777; its other general settings kept.
        assert_eq!(
            after["general"],
            json!({"enableAutoUpdate": false, "enableNotifications": true, "notificationMethod": "osc777"})
        );
        assert_eq!(
            after["hooks"]["SessionStart"],
            before["hooks"]["SessionStart"]
        );
        assert_eq!(
            after["hooks"]["AfterAgent"][0],
            before["hooks"]["AfterAgent"][0]
        );
        assert_eq!(
            after["hooks"]["AfterAgent"][1]["hooks"][0],
            json!({"type": "command", "command": "clawmux hook", "timeout": 5000})
        );
        let (_, again) = install_file(Agent::Gemini, &path, "clawmux hook").unwrap();
        assert!(!again.changed());
        // A missing file (and directory) is created.
        let fresh = dir.path().join("codex-home/hooks.json");
        let (_, report) = install_file(Agent::Codex, &fresh, "clawmux hook").unwrap();
        assert_eq!(report.added, ["Stop", "PermissionRequest"]);
        let written: Value =
            serde_json::from_str(&std::fs::read_to_string(&fresh).unwrap()).unwrap();
        assert_eq!(written, hooks_config_for(Agent::Codex, "clawmux hook"));
    }

    #[test]
    fn codex_notify_goes_first_and_never_replaces_another() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        let argv = codex_notify_argv(Some(Path::new("/opt/c mux/clawmux")));
        assert_eq!(
            codex_notify_line(&argv),
            r#"notify = ["/opt/c mux/clawmux", "hook", "--from", "codex-notify"]"#
        );
        let user = "# my settings\nmodel = \"gpt-6-sol\"\n[features]\nhooks = true\n";
        std::fs::write(&path, user).unwrap();
        assert_eq!(
            install_codex_notify(&path, &argv).unwrap(),
            NotifyReport::Added
        );
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, format!("{}\n{user}", codex_notify_line(&argv)));
        let table: toml::Table = text.parse().unwrap();
        assert_eq!(table["features"]["hooks"].as_bool(), Some(true));
        assert_eq!(table["notify"].as_array().map(Vec::len), Some(4));
        assert_eq!(
            install_codex_notify(&path, &argv).unwrap(),
            NotifyReport::Present
        );
        std::fs::write(&path, "notify = [\"notify-send\"]\n").unwrap();
        assert!(matches!(
            install_codex_notify(&path, &argv).unwrap(),
            NotifyReport::Kept(other) if other.contains("notify-send")
        ));
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "notify = [\"notify-send\"]\n"
        );
        std::fs::write(&path, "not = = toml").unwrap();
        assert!(install_codex_notify(&path, &argv).is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "not = = toml");
        let missing = dir.path().join("new/config.toml");
        assert_eq!(
            install_codex_notify(&missing, &argv).unwrap(),
            NotifyReport::Added
        );
    }
}
