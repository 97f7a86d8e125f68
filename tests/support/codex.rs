//! The real Codex CLI, offline: a throwaway `HOME` and `CODEX_HOME` whose
//! `config.toml` points it at the fake model API (Responses protocol) and
//! turns off everything that would reach a network (update check,
//! analytics, plugins, apps), and trusts the test's workspace.
//!
//! `codex` is `$CLAWMUX_CODEX` (`.ci/run` installs the pinned release
//! under `target/`); tests skip loudly when it is absent.

use std::path::{Path, PathBuf};

use clawmux::agents::codex::TESTED;
use clawmux::shell::quote_keeping_nul as sh_quote;

/// The variable naming the `codex` binary.
pub const CODEX_BIN_ENV: &str = "CLAWMUX_CODEX";

/// The `codex` binary; the test fails when it is not installed.
pub fn codex_required() -> PathBuf {
    super::program_from_env(CODEX_BIN_ENV).unwrap_or_else(|| {
        super::missing(
            "Codex CLI",
            &format!("set {CODEX_BIN_ENV} (npm install @openai/codex@{TESTED})"),
        )
    })
}

/// A throwaway home for Codex against the fake API at `base_url`.
pub struct CodexEnv {
    root: tempfile::TempDir,
}

impl CodexEnv {
    /// Writes `CODEX_HOME/config.toml` trusting `workspace`.
    pub fn new(base_url: &str, workspace: &Path) -> CodexEnv {
        let root = tempfile::Builder::new()
            .prefix("cdx")
            .tempdir_in("/tmp")
            .expect("codex home");
        let codex_home = root.path().join("codex");
        std::fs::create_dir_all(&codex_home).expect("CODEX_HOME");
        // The model name is one this release knows (an older one opens a
        // migration screen); `wire_api = "responses"` is the only one
        // 0.171 takes; the features listed reach GitHub and ChatGPT hosts.
        let config = format!(
            "model = \"gpt-6-sol\"\n\
             model_provider = \"fake\"\n\
             check_for_update_on_startup = false\n\
             [model_providers.fake]\n\
             name = \"fake\"\n\
             base_url = \"{base_url}/v1\"\n\
             env_key = \"FAKE_API_KEY\"\n\
             wire_api = \"responses\"\n\
             request_max_retries = 2\n\
             stream_max_retries = 1\n\
             [analytics]\n\
             enabled = false\n\
             [projects.{dir:?}]\n\
             trust_level = \"trusted\"\n\
             [features]\n\
             plugins = false\n\
             remote_plugin = false\n\
             apps = false\n\
             plugin_sharing = false\n",
            dir = workspace.display().to_string(),
        );
        std::fs::write(codex_home.join("config.toml"), config).expect("config.toml");
        CodexEnv { root }
    }

    /// Runs `clawmux hooks install --agent codex --write` (`bin`) in this
    /// home: `CODEX_HOME/hooks.json` (Claude Code's schema) makes `Stop` and
    /// `PermissionRequest` run `clawmux hook`, and `config.toml` gets
    /// `notify` running `clawmux hook --from codex-notify`.
    pub fn install_hooks(&self, bin: &Path) {
        let out = std::process::Command::new(bin)
            .args(["hooks", "install", "--agent", "codex", "--write", "--bin"])
            .arg(bin)
            .env("HOME", self.home())
            .env("CODEX_HOME", self.home().join("codex"))
            .output()
            .expect("clawmux hooks install runs");
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{said}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(said.contains("added notify to"), "{said}");
    }

    pub fn home(&self) -> &Path {
        self.root.path()
    }

    /// `env HOME=… CODEX_HOME=… FAKE_API_KEY=… <codex> <args>`: clawmux
    /// adds the permission mode's flags (it knows the program).
    pub fn env_command(&self, codex: &Path, args: &[&str]) -> String {
        let mut line = "env".to_owned();
        for (k, v) in [
            ("HOME", self.home().display().to_string()),
            (
                "CODEX_HOME",
                self.home().join("codex").display().to_string(),
            ),
            ("FAKE_API_KEY", "sk-fake-codex".to_owned()),
            ("NO_COLOR", String::new()),
        ] {
            if !v.is_empty() {
                line.push(' ');
                line.push_str(&sh_quote(&format!("{k}={v}")));
            }
        }
        line.push(' ');
        line.push_str(&sh_quote(&codex.display().to_string()));
        for a in args {
            line.push(' ');
            line.push_str(&sh_quote(a));
        }
        line
    }
}

/// Codex's exec tool input running `cmd` outside the sandbox (so its
/// approval dialog comes up), with `why` as the reason shown.
pub fn exec(cmd: &str, why: &str) -> serde_json::Value {
    let args = serde_json::json!({
        "cmd": cmd,
        "sandbox_permissions": "require_escalated",
        "justification": why,
    });
    serde_json::Value::String(format!(
        "const r = await tools.exec_command({args});\ntext(JSON.stringify(r));"
    ))
}
