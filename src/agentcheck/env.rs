//! The offline Claude Code environment: a throwaway `HOME` whose
//! `~/.claude.json` skips onboarding, the API-key question and the folder
//! trust dialog, a project directory, and the environment that points
//! Claude Code at the fake API with telemetry, updates and error reports off.
//!
//! Measured on Claude Code 2.1.197 and 2.1.332: with these settings no onboarding, login,
//! key or trust dialog appears, and nothing but the fake API is contacted.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use rand::Rng;
use serde_json::json;

use super::AgentCheckError;

/// Characters of the key Claude Code keeps in
/// `customApiKeyResponses.approved` to remember that the user accepted it.
const APPROVED_KEY_SUFFIX_CHARS: usize = 20;

/// Environment variable that names the `claude` binary to use.
pub const CLAUDE_BIN_ENV: &str = "CLAWMUX_CLAUDE";

/// A throwaway home and project for one Claude Code run; removed on drop.
pub struct ClaudeEnv {
    root: PathBuf,
    home: PathBuf,
    project: PathBuf,
    api_key: String,
    base_url: String,
    max_retries: Option<u32>,
    extra: Vec<(String, String)>,
    /// More trusted directories than the project (e.g. a daemon's future
    /// workspaces).
    trusted: Vec<PathBuf>,
    keep: bool,
}

impl ClaudeEnv {
    /// Creates `<tmp>/clawmux-claude-<random>/{home,project}` (0700) for a
    /// fake API at `base_url`.
    pub fn new(base_url: &str) -> Result<ClaudeEnv, AgentCheckError> {
        let mut rng = rand::rng();
        let tag: u64 = rng.random();
        let root = std::env::temp_dir().join(format!("clawmux-claude-{tag:016x}"));
        let home = root.join("home");
        let project = root.join("project");
        for dir in [&root, &home, &project] {
            fs::DirBuilder::new()
                .mode(0o700)
                .create(dir)
                .map_err(|e| AgentCheckError::io("create", &dir.display().to_string(), e))?;
        }
        // Claude Code keys projects by their real path.
        let project = project
            .canonicalize()
            .map_err(|e| AgentCheckError::io("resolve", &project.display().to_string(), e))?;
        let key_tail: String = (0..40)
            .map(|_| {
                let n: u8 = rng.random_range(0..36);
                char::from_digit(u32::from(n), 36).unwrap_or('x')
            })
            .collect();
        let env = ClaudeEnv {
            root,
            home,
            project,
            api_key: format!("sk-ant-api03-fake-{key_tail}"),
            base_url: base_url.to_owned(),
            max_retries: None,
            extra: Vec::new(),
            trusted: Vec::new(),
            keep: false,
        };
        env.write_claude_json()?;
        Ok(env)
    }

    /// Sets `CLAUDE_CODE_MAX_RETRIES` (500, 529 and 401 are retried, ten
    /// times by default with a backoff of up to ~40 s).
    pub fn with_max_retries(mut self, retries: u32) -> Self {
        self.max_retries = Some(retries);
        self
    }

    /// Adds one more environment variable (e.g. `CLAWMUX_HOME` for hooks).
    pub fn with_var(mut self, key: &str, value: &str) -> Self {
        self.extra.push((key.to_owned(), value.to_owned()));
        self
    }

    /// Trusts `dir` too (its real path: Claude Code keys projects by it), so
    /// Claude Code started there shows no trust dialog. `dir` need not exist
    /// yet; its parent must.
    pub fn trust(&mut self, dir: &Path) -> Result<(), AgentCheckError> {
        let real = match dir.canonicalize() {
            Ok(p) => p,
            Err(_) => {
                let parent = dir.parent().unwrap_or(Path::new("/"));
                let parent = parent.canonicalize().map_err(|e| {
                    AgentCheckError::io("resolve", &parent.display().to_string(), e)
                })?;
                parent.join(dir.file_name().unwrap_or_default())
            }
        };
        self.trusted.push(real);
        self.write_claude_json()
    }

    /// Leaves the directories in place on drop (for inspection).
    pub fn keep(&mut self) {
        self.keep = true;
    }

    pub fn home(&self) -> &Path {
        &self.home
    }

    /// The trusted project directory Claude Code starts in.
    pub fn project(&self) -> &Path {
        &self.project
    }

    fn write_claude_json(&self) -> Result<(), AgentCheckError> {
        let approved: String = {
            let chars: Vec<char> = self.api_key.chars().collect();
            let from = chars.len().saturating_sub(APPROVED_KEY_SUFFIX_CHARS);
            chars[from..].iter().collect()
        };
        let mut projects = serde_json::Map::new();
        for dir in std::iter::once(&self.project).chain(&self.trusted) {
            projects.insert(
                dir.display().to_string(),
                json!({
                    "hasTrustDialogAccepted": true,
                    "hasCompletedProjectOnboarding": true,
                    "allowedTools": [],
                }),
            );
        }
        let config = json!({
            "hasCompletedOnboarding": true,
            "lastOnboardingVersion": crate::agents::claude::OLDEST_SUPPORTED,
            "theme": "dark",
            "customApiKeyResponses": {"approved": [approved], "rejected": []},
            "projects": projects,
        });
        write_private(
            &self.home.join(".claude.json"),
            config.to_string().as_bytes(),
        )
    }

    /// Writes `<project>/.claude/settings.json` (hooks, for example).
    pub fn write_project_settings(
        &self,
        settings: &serde_json::Value,
    ) -> Result<(), AgentCheckError> {
        let dir = self.project.join(".claude");
        fs::DirBuilder::new()
            .mode(0o700)
            .recursive(true)
            .create(&dir)
            .map_err(|e| AgentCheckError::io("create", &dir.display().to_string(), e))?;
        write_private(&dir.join("settings.json"), settings.to_string().as_bytes())
    }

    /// The variables Claude Code needs, besides `PATH` and `TERM`.
    pub fn vars(&self) -> Vec<(String, String)> {
        let mut vars: Vec<(String, String)> = [
            ("HOME", self.home.display().to_string()),
            ("ANTHROPIC_BASE_URL", self.base_url.clone()),
            ("ANTHROPIC_API_KEY", self.api_key.clone()),
            ("DISABLE_TELEMETRY", "1".into()),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into()),
            ("DISABLE_AUTOUPDATER", "1".into()),
            ("DISABLE_ERROR_REPORTING", "1".into()),
            ("LANG", "C.UTF-8".into()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        if let Some(n) = self.max_retries {
            vars.push(("CLAUDE_CODE_MAX_RETRIES".into(), n.to_string()));
        }
        vars.extend(self.extra.iter().cloned());
        vars
    }

    /// A `sh -c` command line that starts `claude` (with `args`) in the
    /// project directory with [`ClaudeEnv::vars`]; for a tmux pane.
    pub fn shell_command(&self, claude: &Path, args: &[&str]) -> String {
        format!(
            "cd {} && exec {}",
            sh_quote(&self.project.display().to_string()),
            self.env_command(claude, args)
        )
    }

    /// `env K=V … claude args`: starts `claude` with [`ClaudeEnv::vars`] in
    /// whatever directory it is run from (a daemon's agent command).
    pub fn env_command(&self, claude: &Path, args: &[&str]) -> String {
        let mut line = "env".to_owned();
        for (k, v) in self.vars() {
            line.push(' ');
            line.push_str(&sh_quote(&format!("{k}={v}")));
        }
        line.push(' ');
        line.push_str(&sh_quote(&claude.display().to_string()));
        for a in args {
            line.push(' ');
            line.push_str(&sh_quote(a));
        }
        line
    }
}

impl Drop for ClaudeEnv {
    fn drop(&mut self) {
        if !self.keep {
            let _ = fs::remove_dir_all(&self.root);
        }
    }
}

/// Where the `claude` binary is: `$CLAWMUX_CLAUDE`, else `claude` on `PATH`.
pub fn find_claude() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(CLAUDE_BIN_ENV).filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("claude"))
        .find(|p| p.is_file())
}

/// `claude --version`'s first word (`2.1.197`).
pub fn claude_version(claude: &Path) -> Result<String, AgentCheckError> {
    let out = std::process::Command::new(claude)
        .arg("--version")
        .env("DISABLE_AUTOUPDATER", "1")
        .output()
        .map_err(|e| AgentCheckError::io("run", &claude.display().to_string(), e))?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace()
        .next()
        .map(str::to_owned)
        .ok_or_else(|| {
            AgentCheckError::Claude(format!("{} --version printed nothing", claude.display()))
        })
}

fn write_private(path: &Path, bytes: &[u8]) -> Result<(), AgentCheckError> {
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| AgentCheckError::io("write", &path.display().to_string(), e))?;
    f.write_all(bytes)
        .map_err(|e| AgentCheckError::io("write", &path.display().to_string(), e))
}

/// `s` as one `sh` word (a NUL kept: tmux and `exec` refuse the line).
fn sh_quote(s: &str) -> String {
    crate::shell::quote_keeping_nul(s).into_owned()
}
