//! The daemon's configuration: a TOML file (every key optional, unknown keys
//! rejected with their line) overlaid with the `FEISHU_*` environment
//! variables. `clawmux.example.toml` at the repository root documents it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::agents::claude::PermissionMode;
use crate::tmux::FloodLimits;

/// Longest command budget accepted in the config: a day; longer is a typo.
const MAX_TIMEOUT_SECS: u64 = 86_400;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("config {path}: {message}")]
    Invalid {
        path: PathBuf,
        message: InvalidConfig,
    },
}

/// What is wrong in a configuration, naming the key (and the line).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidConfig(pub String);

impl From<String> for InvalidConfig {
    fn from(message: String) -> Self {
        InvalidConfig(message)
    }
}

/// Reads as its message.
impl std::ops::Deref for InvalidConfig {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl From<&str> for InvalidConfig {
    fn from(message: &str) -> Self {
        InvalidConfig(message.to_string())
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub tmux: TmuxConfig,
    pub agent: AgentConfig,
    /// Where project workspaces are created (`~` expands to $HOME).
    pub workspace_root: String,
    pub timeouts: TimeoutConfig,
    pub progress: ProgressConfig,
    pub policy: PolicyConfig,
    pub feishu: FeishuSettings,
    /// Pictures of panes (`[screen]`).
    pub screen: ScreenSettings,
    /// The chat's language (`[chat]`).
    pub chat: ChatSettings,
    /// Per-project overrides, by project name.
    pub projects: BTreeMap<String, ProjectConfig>,
    /// Other tmux servers (usually other machines over `ssh`), by host name.
    pub hosts: BTreeMap<String, HostConfig>,
}

/// One more tmux server projects can run on: a command prefix (`ssh box
/// tmux`), its socket and its workspace root. Pane size and flood guard
/// are the `[tmux]` ones.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostConfig {
    /// The program and leading arguments that run tmux on the host, e.g.
    /// `["ssh", "-o", "BatchMode=yes", "box", "tmux"]`.
    pub command: Vec<String>,
    /// The `-L` socket name on the host (default: the `[tmux]` one); `""`
    /// is tmux's default server, where the user's own sessions usually are.
    pub socket: Option<String>,
    /// Where projects on this host get their workspaces, as the host sees
    /// it: an absolute path (default: the local `workspace_root`).
    pub workspace_root: Option<String>,
    /// Whether `command` hands tmux's arguments to a remote shell, so they
    /// are quoted for it (default: when the program is `ssh`).
    pub remote_shell: Option<bool>,
    /// Seconds the host has to answer one command, connecting included
    /// (default 15): past it the host is taken as unreachable and the chat
    /// is told so.
    pub timeout_secs: Option<u64>,
}

impl HostConfig {
    /// How long the host has to answer one command.
    pub fn timeout(&self) -> std::time::Duration {
        self.timeout_secs
            .map(std::time::Duration::from_secs)
            .unwrap_or(crate::tmux::one_shot::ONE_SHOT_TIMEOUT)
    }

    /// Whether arguments go through a remote POSIX shell.
    pub fn remote_shell(&self) -> bool {
        self.remote_shell.unwrap_or_else(|| {
            self.command
                .first()
                .and_then(|p| Path::new(p).file_name())
                .is_some_and(|name| name == "ssh")
        })
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TmuxConfig {
    /// The `-L` socket name of the tmux server clawmux manages.
    pub socket: String,
    /// Command prefix to run tmux, e.g. `["ssh", "build-host", "tmux"]`.
    pub command: Vec<String>,
    /// Fixed pane size, so line wrapping (and detection) is stable.
    pub width: u16,
    pub height: u16,
    /// A pane writing faster than this (bytes a second) is watched through
    /// its screen instead of streamed (see `tmux::FloodLimits`); 0 streams
    /// every byte, whatever it costs the agent's speed.
    pub flood_bytes_per_second: u64,
}

impl TmuxConfig {
    /// The flood guard's settings, if on.
    pub fn flood_limits(&self) -> Option<FloodLimits> {
        (self.flood_bytes_per_second > 0)
            .then(|| FloodLimits::per_second(self.flood_bytes_per_second))
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentConfig {
    /// The agent: a name (`claude`, `codex`, `gemini`, `opencode`,
    /// `aider`, or `sim`, the built-in simulated agent) started in the
    /// permission mode with the agent's own flags, or any command line.
    pub command: String,
    /// Detection profile: `claude`, `gsd` or `shell`.
    pub profile: String,
    /// A TOML file that overrides or extends the detection profiles.
    pub profiles_file: Option<PathBuf>,
    /// Completion debounce: the idle prompt must stay this long.
    pub debounce_ms: u64,
    /// A working agent whose screen shows nothing new but its busy row
    /// (a spinner, a timer) this long is reported stalled, with a way to
    /// interrupt it; 0 never.
    pub stall_secs: u64,
    /// The permission mode Claude Code is started in (`manual`, `auto`,
    /// `plan`, `acceptEdits`, `bypassPermissions`): `manual` sends every
    /// approval to the chat.
    pub permission_mode: PermissionMode,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProjectConfig {
    /// This project's agent, named or as a command line (see
    /// [`AgentConfig::command`]); its profile follows unless `profile` says.
    pub agent: Option<String>,
    pub profile: Option<String>,
    /// The `[hosts.NAME]` the project runs on (default: the `[tmux]` server).
    pub host: Option<String>,
    /// This project's permission mode (default: `[agent]`'s).
    pub permission_mode: Option<PermissionMode>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TimeoutConfig {
    /// Seconds a command may run before the timeout card.
    pub default_secs: u64,
    /// Per GSD command name (`plan-phase`, …), seconds.
    pub commands: BTreeMap<String, u64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProgressConfig {
    /// Minimum seconds between two updates of a progress card.
    pub interval_secs: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DmPolicy {
    /// Unknown senders get a code the operator approves with `clawmux pairing approve`.
    Pairing,
    Allowlist,
    Open,
    Disabled,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GroupPolicy {
    Allowlist,
    Open,
    Disabled,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PolicyConfig {
    pub dm_policy: DmPolicy,
    /// Open ids allowed to send (`*` only together with `dm_policy = "open"`).
    pub allow_from: Vec<String>,
    pub group_policy: GroupPolicy,
    /// Group chat ids allowed with `group_policy = "allowlist"`.
    pub group_allow_from: Vec<String>,
    /// In groups, act only on messages that mention the bot.
    pub require_mention: bool,
    /// Open ids that may answer approvals. Empty: anyone allowed to send.
    pub approvers: Vec<String>,
    /// Reply once to a denied sender (otherwise stay silent).
    pub reply_to_denied: bool,
    /// Messages a sender may send per minute.
    pub rate_per_minute: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IntakeMode {
    /// Feishu's long connection (WebSocket): no public URL needed.
    Websocket,
    Webhook,
}

/// `[chat]`: the chat's language. Cards carry English and Chinese and each
/// reader's Feishu client shows its own; `locale` is the one shown where a
/// text has room for one language only: a card's fallback `content` (what a
/// client in a third language, or one that ignores `i18n_content`, shows).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ChatSettings {
    /// `en_us` (default) or `zh_cn`.
    pub locale: crate::i18n::Lang,
}

/// `[screen]`: pictures of a pane on Feishu.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScreenSettings {
    /// `/gsd:screen` on Feishu carries a PNG of the pane, the text in a
    /// closed panel under it. On by default.
    pub picture: bool,
    /// Approval cards carry a PNG of the pane too. Off by default: one
    /// upload per prompt.
    pub approval_picture: bool,
    /// Font files to use instead of the ones found (`[screen.fonts]`:
    /// `mono`, `cjk`, `symbols`).
    pub fonts: crate::render::FontPaths,
}

impl Default for ScreenSettings {
    fn default() -> Self {
        ScreenSettings {
            picture: true,
            approval_picture: false,
            fonts: crate::render::FontPaths::default(),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FeishuSettings {
    /// `feishu`, `lark`, or a base URL (tests).
    pub domain: String,
    pub app_id: Option<String>,
    pub app_secret: Option<String>,
    pub encrypt_key: Option<String>,
    pub verification_token: Option<String>,
    pub mode: IntakeMode,
    /// Address the webhook server listens on.
    pub webhook_bind: String,
    /// Results longer than this (bytes) reach a chat as a summary card and
    /// a file; 0 sends every result as cards.
    pub long_result_bytes: usize,
    /// Stream each running command's answer into a card as it is
    /// written (CardKit on Feishu, text on the console). On by default.
    pub stream_answers: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            tmux: TmuxConfig::default(),
            agent: AgentConfig::default(),
            workspace_root: "~/clawmux-projects".into(),
            timeouts: TimeoutConfig::default(),
            progress: ProgressConfig::default(),
            policy: PolicyConfig::default(),
            feishu: FeishuSettings::default(),
            screen: ScreenSettings::default(),
            chat: ChatSettings::default(),
            projects: BTreeMap::new(),
            hosts: BTreeMap::new(),
        }
    }
}

impl Default for TmuxConfig {
    fn default() -> Self {
        TmuxConfig {
            socket: "clawmux".into(),
            command: vec!["tmux".into()],
            width: 160,
            height: 48,
            flood_bytes_per_second: FloodLimits::default().per_second_rate(),
        }
    }
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            command: "claude".into(),
            profile: "gsd".into(),
            profiles_file: None,
            debounce_ms: crate::detect::DEFAULT_DEBOUNCE.as_millis() as u64,
            stall_secs: crate::detect::DEFAULT_STALL_QUIET.as_secs(),
            permission_mode: PermissionMode::default(),
        }
    }
}

impl Default for TimeoutConfig {
    fn default() -> Self {
        let long = [
            "plan-phase",
            "execute-phase",
            "autonomous",
            "new-project",
            "map-codebase",
            "verify-work",
        ];
        TimeoutConfig {
            default_secs: 600,
            commands: long.iter().map(|c| (c.to_string(), 1800)).collect(),
        }
    }
}

/// Default seconds between two updates of one progress card: Feishu
/// takes at most 5 updates a second to one message, and a card that moves
/// every second follows a 13 s phase step by step (10 s showed only its
/// last position).
pub const DEFAULT_PROGRESS_INTERVAL_SECS: u64 = 1;

impl Default for ProgressConfig {
    fn default() -> Self {
        ProgressConfig {
            interval_secs: DEFAULT_PROGRESS_INTERVAL_SECS,
        }
    }
}

impl Default for PolicyConfig {
    fn default() -> Self {
        PolicyConfig {
            dm_policy: DmPolicy::Pairing,
            allow_from: Vec::new(),
            group_policy: GroupPolicy::Allowlist,
            group_allow_from: Vec::new(),
            require_mention: true,
            approvers: Vec::new(),
            reply_to_denied: true,
            rate_per_minute: 20,
        }
    }
}

impl Default for FeishuSettings {
    fn default() -> Self {
        FeishuSettings {
            domain: "feishu".into(),
            app_id: None,
            app_secret: None,
            encrypt_key: None,
            verification_token: None,
            mode: IntakeMode::Websocket,
            webhook_bind: "127.0.0.1:8787".into(),
            long_result_bytes: crate::bridge::outbox_files::DEFAULT_LONG_RESULT_BYTES,
            stream_answers: true,
        }
    }
}

impl Config {
    /// Loads `path` (or the defaults when `None`), then the environment.
    pub fn load(path: Option<&Path>) -> Result<Config, ConfigError> {
        let mut config = match path {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
                    path: path.to_path_buf(),
                    source,
                })?;
                Config::parse(&text).map_err(|message| ConfigError::Invalid {
                    path: path.to_path_buf(),
                    message,
                })?
            }
            None => Config::default(),
        };
        config.apply_env(|k| std::env::var(k).ok().filter(|v| !v.is_empty()));
        let origin = path
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("(defaults)"));
        config.validate().map_err(|message| ConfigError::Invalid {
            path: origin,
            message,
        })?;
        Ok(config)
    }

    /// Parses TOML text; the error names the key and line.
    pub fn parse(text: &str) -> Result<Config, InvalidConfig> {
        toml::from_str(text).map_err(|e| InvalidConfig(e.to_string().trim_end().to_string()))
    }

    /// Environment variables win over the file (secrets stay out of files).
    pub fn apply_env(&mut self, get: impl Fn(&str) -> Option<String>) {
        let f = &mut self.feishu;
        for (var, slot) in [
            ("FEISHU_APP_ID", &mut f.app_id),
            ("FEISHU_APP_SECRET", &mut f.app_secret),
            ("FEISHU_ENCRYPT_KEY", &mut f.encrypt_key),
            ("FEISHU_VERIFICATION_TOKEN", &mut f.verification_token),
        ] {
            if let Some(v) = get(var) {
                *slot = Some(v);
            }
        }
        if let Some(d) = get("FEISHU_DOMAIN") {
            f.domain = d;
        }
    }

    fn validate(&self) -> Result<(), InvalidConfig> {
        let p = &self.policy;
        if p.allow_from.iter().any(|a| a == "*") && p.dm_policy != DmPolicy::Open {
            return Err(
                "policy.allow_from = [\"*\"] is only allowed with dm_policy = \"open\"".into(),
            );
        }
        if self.tmux.command.is_empty() {
            return Err("tmux.command must name a program, e.g. [\"tmux\"]".into());
        }
        if !(20..=1000).contains(&self.tmux.width) || !(10..=500).contains(&self.tmux.height) {
            return Err("tmux.width must be 20..=1000 and tmux.height 10..=500".into());
        }
        let timeouts =
            std::iter::once(&self.timeouts.default_secs).chain(self.timeouts.commands.values());
        if timeouts
            .into_iter()
            .any(|&t| t == 0 || t > MAX_TIMEOUT_SECS)
        {
            return Err(
                format!("timeouts must be between 1 and {MAX_TIMEOUT_SECS} seconds").into(),
            );
        }
        if self.progress.interval_secs == 0 {
            return Err(
                "progress.interval_secs must be at least 1 (Feishu allows 5 updates/s per card)"
                    .into(),
            );
        }
        if p.rate_per_minute == 0 {
            return Err("policy.rate_per_minute must be at least 1".into());
        }
        for name in self.projects.keys() {
            crate::bridge::names::validate_project(name)
                .map_err(|e| format!("[projects.{name}]: {e}"))?;
        }
        for (name, host) in &self.hosts {
            crate::bridge::names::validate_host(name)
                .map_err(|e| format!("[hosts.{name}]: {e}"))?;
            if host.command.is_empty() {
                return Err(format!(
                    "[hosts.{name}]: command must name a program, e.g. [\"ssh\", \"{name}\", \"tmux\"]"
                ).into());
            }
            if let Some(root) = &host.workspace_root
                && !root.starts_with('/')
            {
                return Err(format!(
                    "[hosts.{name}]: workspace_root must be an absolute path on the host, not {root:?}"
                ).into());
            }
        }
        for (project, p) in &self.projects {
            if let Some(host) = &p.host
                && !self.hosts.contains_key(host)
            {
                return Err(format!(
                    "[projects.{project}]: host {host:?} is not one of the [hosts] ({})",
                    self.hosts.keys().cloned().collect::<Vec<_>>().join(", ")
                )
                .into());
            }
        }
        Ok(())
    }

    /// Feishu credentials present: use Feishu, else the console.
    pub fn has_feishu(&self) -> bool {
        self.feishu.app_id.is_some() && self.feishu.app_secret.is_some()
    }

    /// The agent command line for `project`.
    pub fn agent_for(&self, project: &str) -> &str {
        self.projects
            .get(project)
            .and_then(|p| p.agent.as_deref())
            .unwrap_or(&self.agent.command)
    }

    /// The host `project` is configured on (`None`: the `[tmux]` server).
    /// The permission mode project `project`'s agent starts in.
    pub fn permission_mode_for(&self, project: &str) -> PermissionMode {
        self.projects
            .get(project)
            .and_then(|p| p.permission_mode)
            .unwrap_or(self.agent.permission_mode)
    }

    pub fn host_for(&self, project: &str) -> Option<&str> {
        self.projects.get(project).and_then(|p| p.host.as_deref())
    }

    /// The detection profile for `project`.
    pub fn profile_for(&self, project: &str) -> &str {
        self.projects
            .get(project)
            .and_then(|p| p.profile.as_deref())
            .or(crate::agents::Choice::of(self.agent_for(project)).profile())
            .unwrap_or(&self.agent.profile)
    }

    /// The time budget of a message: by its GSD command name, else the default.
    pub fn timeout_for(&self, text: &str) -> Duration {
        let secs = crate::gsd::spelling::gsd_name(text)
            .and_then(|name| self.timeouts.commands.get(name))
            .copied()
            .unwrap_or(self.timeouts.default_secs);
        Duration::from_secs(secs)
    }

    /// The workspace root with `~` expanded.
    pub fn workspace_root(&self) -> PathBuf {
        match self.workspace_root.strip_prefix("~/") {
            Some(rest) => std::env::var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_default()
                .join(rest),
            None => PathBuf::from(&self.workspace_root),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_projects_agent_brings_its_profile_unless_it_names_one() {
        let c = Config::parse(
            "[projects.api]\nagent = \"codex\"\n[projects.web]\nagent = \"codex\"\nprofile = \"shell\"\n",
        )
        .expect("config parses");
        assert_eq!(c.profile_for("api"), "codex");
        assert_eq!(c.profile_for("web"), "shell");
        assert_eq!(c.profile_for("other"), "gsd");
        assert_eq!(
            crate::agents::Choice::of(c.agent_for("api"))
                .start(c.permission_mode_for("api"), "sim"),
            "codex --no-daemon --dangerously-bypass-hook-trust -a on-request"
        );
    }

    #[test]
    fn the_example_config_is_valid_and_is_the_defaults() {
        let example = include_str!("../../clawmux.example.toml");
        let c = Config::parse(example).unwrap();
        c.validate().unwrap();
        let d = Config::default();
        assert_eq!(
            (c.tmux.width, c.tmux.height, c.progress.interval_secs),
            (d.tmux.width, d.tmux.height, d.progress.interval_secs)
        );
        assert_eq!(
            d.progress.interval_secs, 1,
            "a card paced by Feishu's limit"
        );
        assert_eq!(c.timeouts.commands, d.timeouts.commands);
        assert_eq!(c.policy.rate_per_minute, d.policy.rate_per_minute);
        assert_eq!(c.tmux.flood_bytes_per_second, d.tmux.flood_bytes_per_second);
        assert_eq!(
            (c.screen.picture, c.screen.approval_picture, &c.screen.fonts),
            (d.screen.picture, d.screen.approval_picture, &d.screen.fonts)
        );
    }

    #[test]
    fn the_flood_limit_is_a_rate_and_zero_turns_the_guard_off() {
        let c = Config::parse("[tmux]\nflood_bytes_per_second = 1048576\n").unwrap();
        let limits = c.tmux.flood_limits().unwrap();
        assert_eq!(
            limits.bytes,
            128 * 1024,
            "an eighth of it per 125 ms window"
        );
        assert_eq!(limits.per_second_rate(), 1024 * 1024);
        let default = Config::default().tmux.flood_limits().unwrap();
        assert_eq!(default, FloodLimits::default());
        let off = Config::parse("[tmux]\nflood_bytes_per_second = 0\n").unwrap();
        assert_eq!(off.tmux.flood_limits(), None);
    }

    #[test]
    fn empty_file_is_the_defaults() {
        let c = Config::parse("").unwrap();
        assert_eq!(c.tmux.socket, "clawmux");
        assert_eq!(c.policy.dm_policy, DmPolicy::Pairing);
        assert!(!c.has_feishu());
    }

    #[test]
    fn unknown_keys_and_bad_values_are_clear_errors() {
        let e = Config::parse("[policy]\ndm_polcy = \"open\"\n").unwrap_err();
        assert!(e.contains("dm_polcy") && e.contains("line 2"), "{e}");
        let e = Config::parse("[policy]\ndm_policy = \"sometimes\"\n").unwrap_err();
        assert!(e.contains("sometimes"), "{e}");
    }

    #[test]
    fn the_chat_locale_is_en_us_by_default_and_checked() {
        use crate::i18n::Lang;
        assert_eq!(Config::parse("").unwrap().chat.locale, Lang::En);
        let c = Config::parse("[chat]\nlocale = \"zh_cn\"\n").unwrap();
        assert_eq!(c.chat.locale, Lang::Zh);
        let e = Config::parse("[chat]\nlocale = \"zh_CN\"\n").unwrap_err();
        assert!(
            e.contains("zh_CN")
                && e.contains("zh_cn")
                && e.contains("en_us")
                && e.contains("line 2"),
            "{e}"
        );
    }

    #[test]
    fn validation_rejects_wildcard_without_open_and_bad_projects() {
        let mut c = Config::parse("[policy]\nallow_from = [\"*\"]\n").unwrap();
        assert!(c.validate().unwrap_err().contains("dm_policy = \"open\""));
        c.policy.dm_policy = DmPolicy::Open;
        assert!(c.validate().is_ok());
        let c = Config::parse("[projects.\"Bad Name\"]\nagent = \"sim\"\n").unwrap();
        assert!(c.validate().unwrap_err().contains("Bad Name"));
    }

    #[test]
    fn hosts_are_validated_and_projects_name_known_hosts() {
        let text = "[hosts.box]\ncommand = [\"ssh\", \"-o\", \"BatchMode=yes\", \"box\", \"tmux\"]\nworkspace_root = \"/srv/ws\"\n[projects.web]\nhost = \"box\"\n";
        let c = Config::parse(text).unwrap();
        c.validate().unwrap();
        assert_eq!(c.host_for("web"), Some("box"));
        assert_eq!(c.host_for("other"), None);
        assert!(c.hosts["box"].remote_shell());
        let local = Config::parse("[hosts.desk]\ncommand = [\"tmux\"]\nsocket = \"\"\n").unwrap();
        assert!(!local.hosts["desk"].remote_shell());
        let e = Config::parse("[projects.web]\nhost = \"nowhere\"\n")
            .unwrap()
            .validate()
            .unwrap_err();
        assert!(e.contains("nowhere"), "{e}");
        let e = Config::parse("[hosts.\"Bad Host\"]\ncommand = [\"ssh\"]\n")
            .unwrap()
            .validate()
            .unwrap_err();
        assert!(e.contains("Bad Host"), "{e}");
        let e = Config::parse("[hosts.box]\ncommand = []\n")
            .unwrap()
            .validate()
            .unwrap_err();
        assert!(e.contains("command"), "{e}");
        let e = Config::parse("[hosts.box]\ncommand = [\"ssh\"]\nworkspace_root = \"~/ws\"\n")
            .unwrap()
            .validate()
            .unwrap_err();
        assert!(e.contains("absolute"), "{e}");
        let e = Config::parse("[hosts.box]\ncommand = [\"ssh\"]\nsokcet = \"x\"\n").unwrap_err();
        assert!(e.contains("sokcet"), "{e}");
    }

    #[test]
    fn env_overrides_and_timeouts_by_command() {
        let mut c =
            Config::parse("[timeouts]\ndefault_secs = 60\n[timeouts.commands]\nquick = 5\n")
                .unwrap();
        c.apply_env(|k| {
            (k == "FEISHU_APP_ID" || k == "FEISHU_APP_SECRET").then(|| "x".to_string())
        });
        assert!(c.has_feishu());
        assert_eq!(c.timeout_for("/gsd:quick fix it"), Duration::from_secs(5));
        assert_eq!(c.timeout_for("/gsd-quick"), Duration::from_secs(5));
        assert_eq!(c.timeout_for("/gsd:progress"), Duration::from_secs(60));
        assert_eq!(c.timeout_for("hello"), Duration::from_secs(60));
    }
}
