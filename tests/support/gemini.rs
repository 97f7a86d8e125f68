//! The real Gemini CLI, offline: a throwaway `HOME` whose
//! `~/.gemini/settings.json` picks API-key auth and turns off folder
//! trust, update checks, usage statistics, telemetry and the IDE
//! integration, and the environment that points it at the fake model API
//! (`GOOGLE_GEMINI_BASE_URL`, Gemini protocol).
//!
//! `gemini` is `$CLAWMUX_GEMINI` (`.ci/run` installs the pinned release
//! under `target/`); tests skip loudly when it is absent.

use std::path::{Path, PathBuf};

use clawmux::agentcheck::sh_quote;
use clawmux::agents::gemini::TESTED;

/// The variable naming the `gemini` program.
pub const GEMINI_BIN_ENV: &str = "CLAWMUX_GEMINI";

/// The `gemini` program, or `None` after a loud message saying `test` is
/// skipped.
pub fn gemini_or_skip(test: &str) -> Option<PathBuf> {
    let found = std::env::var_os(GEMINI_BIN_ENV)
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .filter(|p| p.is_file());
    if found.is_none() {
        eprintln!(
            "\n*** SKIPPED {test}: Gemini CLI is not installed (set {GEMINI_BIN_ENV}; \
             .ci/run installs @google/gemini-cli@{TESTED} under target/) ***\n"
        );
    }
    found
}

/// A throwaway home for Gemini CLI against the fake API at `base_url`.
pub struct GeminiEnv {
    root: tempfile::TempDir,
    base_url: String,
}

impl GeminiEnv {
    /// Writes `~/.gemini/settings.json`.
    pub fn new(base_url: &str) -> GeminiEnv {
        let root = tempfile::Builder::new()
            .prefix("gem")
            .tempdir_in("/tmp")
            .expect("gemini home");
        let env = GeminiEnv {
            root,
            base_url: base_url.to_owned(),
        };
        env.write_settings(serde_json::json!({}));
        env
    }

    /// `settings.json` with `extra` (e.g. `hooks`) merged at the top.
    pub fn write_settings(&self, extra: serde_json::Value) {
        let dir = self.home().join(".gemini");
        std::fs::create_dir_all(&dir).expect(".gemini");
        // Without `selectedType` it opens an auth dialog; folder trust
        // opens a trust dialog; the rest reach Google hosts.
        let mut settings = serde_json::json!({
            "security": {
                "auth": {"selectedType": "gemini-api-key"},
                "folderTrust": {"enabled": false},
            },
            "general": {
                "enableAutoUpdate": false,
                "enableAutoUpdateNotification": false,
                "disableAutoUpdate": true,
                "disableUpdateNag": true,
            },
            "privacy": {"usageStatisticsEnabled": false},
            "telemetry": {"enabled": false},
            "ide": {"enabled": false},
        });
        if let (Some(s), Some(e)) = (settings.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                s.insert(k.clone(), v.clone());
            }
        }
        std::fs::write(dir.join("settings.json"), settings.to_string()).expect("settings.json");
    }

    /// Runs `clawmux hooks install --agent gemini --write` (`bin`) in this
    /// home: `settings.json` gets hooks running `clawmux hook` for
    /// `AfterAgent` (a turn's end) and `Notification` (`ToolPermission`: an
    /// approval waits), merged with the settings written before.
    pub fn install_hooks(&self, bin: &Path) {
        let out = std::process::Command::new(bin)
            .args(["hooks", "install", "--agent", "gemini", "--write", "--bin"])
            .arg(bin)
            .env("HOME", self.home())
            .output()
            .expect("clawmux hooks install runs");
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{said}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(said.contains("added AfterAgent hook"), "{said}");
    }

    pub fn home(&self) -> &Path {
        self.root.path()
    }

    /// `env HOME=… GEMINI_API_KEY=… GOOGLE_GEMINI_BASE_URL=… <gemini>
    /// <args>`: clawmux adds the permission mode's flags (it knows the
    /// program).
    pub fn env_command(&self, gemini: &Path, args: &[&str]) -> String {
        let mut line = "env".to_owned();
        for (k, v) in [
            ("HOME", self.home().display().to_string()),
            ("GEMINI_API_KEY", "fake-gemini-key".to_owned()),
            ("GOOGLE_GEMINI_BASE_URL", self.base_url.clone()),
            ("COLORTERM", "truecolor".to_owned()),
        ] {
            line.push(' ');
            line.push_str(&sh_quote(&format!("{k}={v}")));
        }
        line.push(' ');
        line.push_str(&sh_quote(&gemini.display().to_string()));
        for a in args {
            line.push(' ');
            line.push_str(&sh_quote(a));
        }
        line
    }
}

/// Gemini's shell tool call running `cmd`.
pub fn shell(cmd: &str, why: &str) -> serde_json::Value {
    serde_json::json!({"command": cmd, "description": why})
}
