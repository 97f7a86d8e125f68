//! The real OpenCode, offline: a throwaway `HOME` whose
//! `~/.config/opencode/opencode.json` names one openai-compatible provider
//! at the fake model API (Chat Completions protocol), turns off updates
//! and sharing and asks before every shell command; the
//! `@opencode-ai/plugin` package pre-seeded in that directory (OpenCode
//! installs it there at every start otherwise, from a registry); and the
//! environment that keeps it off every network: its `OPENCODE_DISABLE_*`
//! switches, and the npm and bun registries at a closed local port.
//!
//! `opencode` is `$CLAWMUX_OPENCODE` and the pre-seed
//! `$CLAWMUX_OPENCODE_PLUGIN` (a directory holding the package's
//! `package.json` and `node_modules`); `.ci/run` prepares both under
//! `target/`. Tests skip loudly when either is absent.

use std::path::{Path, PathBuf};

use clawmux::agents::opencode::TESTED;
use clawmux::shell::quote_keeping_nul as sh_quote;

/// The variable naming the `opencode` program.
pub const OPENCODE_BIN_ENV: &str = "CLAWMUX_OPENCODE";
/// The variable naming the `@opencode-ai/plugin` pre-seed directory.
pub const OPENCODE_PLUGIN_ENV: &str = "CLAWMUX_OPENCODE_PLUGIN";

/// A registry nobody listens at: a connection is refused at once, where
/// an unreachable one made OpenCode wait more than a minute.
const CLOSED_REGISTRY: &str = "http://127.0.0.1:9/";

/// The model's name in the config, and as OpenCode shows it.
pub const MODEL_NAME: &str = "Fake Model";

/// The `opencode` program and the plugin pre-seed; the test fails when
/// either is not installed.
pub fn opencode_required() -> (PathBuf, PathBuf) {
    let bin = super::program_from_env(OPENCODE_BIN_ENV);
    let seed = std::env::var_os(OPENCODE_PLUGIN_ENV)
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .filter(|p| p.join("node_modules").is_dir());
    bin.zip(seed).unwrap_or_else(|| {
        super::missing(
            "OpenCode",
            &format!(
                "set {OPENCODE_BIN_ENV} and {OPENCODE_PLUGIN_ENV} (npm install \
                 opencode-ai@{TESTED}, and @opencode-ai/plugin@{TESTED} as the pre-seed)"
            ),
        )
    })
}

/// A throwaway home for OpenCode against the fake API at `base_url`.
pub struct OpenCodeEnv {
    root: tempfile::TempDir,
}

impl OpenCodeEnv {
    /// Writes `~/.config/opencode/opencode.json` and copies the plugin
    /// pre-seed from `seed` next to it.
    pub fn new(base_url: &str, seed: &Path) -> OpenCodeEnv {
        let root = tempfile::Builder::new()
            .prefix("ocd")
            .tempdir_in("/tmp")
            .expect("opencode home");
        let env = OpenCodeEnv { root };
        let dir = env.config_dir();
        std::fs::create_dir_all(&dir).expect("~/.config/opencode");
        // `model` and `small_model` (titles) both the fake one; the
        // permission asks before every shell command.
        let config = serde_json::json!({
            "$schema": "https://opencode.ai/config.json",
            "provider": {"fake": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Fake",
                "options": {"baseURL": format!("{base_url}/v1"), "apiKey": "fake-key"},
                "models": {"fake-model": {"name": MODEL_NAME}},
            }},
            "model": "fake/fake-model",
            "small_model": "fake/fake-model",
            "autoupdate": false,
            "share": "disabled",
            "permission": {"bash": "ask"},
        });
        std::fs::write(dir.join("opencode.json"), config.to_string()).expect("opencode.json");
        // A symlinked node_modules is removed and installed again (from
        // the closed registry, so lost): the files themselves are linked.
        std::fs::copy(seed.join("package.json"), dir.join("package.json")).expect("package.json");
        link_tree(&seed.join("node_modules"), &dir.join("node_modules"));
        env
    }

    /// `~/.config/opencode`.
    pub fn config_dir(&self) -> PathBuf {
        self.home().join(".config/opencode")
    }

    /// The clawmux plugin (`bin` is `clawmux`) in the config's `plugin`
    /// directory: OpenCode's events reach `clawmux hook`.
    pub fn install_plugin(&self, bin: &Path) {
        clawmux::hooks::opencode::install_plugin(&self.config_dir(), bin).expect("plugin");
    }

    pub fn home(&self) -> &Path {
        self.root.path()
    }

    /// `env HOME=… OPENCODE_…=1 … <opencode>`: OpenCode keeps its
    /// permissions in its config, so clawmux adds no flag.
    pub fn env_command(&self, opencode: &Path) -> String {
        let mut line = "env".to_owned();
        for (k, v) in [
            ("HOME", self.home().display().to_string()),
            ("OPENCODE_DISABLE_AUTOUPDATE", "1".to_owned()),
            ("OPENCODE_DISABLE_MODELS_FETCH", "1".to_owned()),
            ("OPENCODE_DISABLE_DEFAULT_PLUGINS", "1".to_owned()),
            ("OPENCODE_DISABLE_LSP_DOWNLOAD", "1".to_owned()),
            ("OPENCODE_ENABLE_QUESTION_TOOL", "1".to_owned()),
            ("NPM_CONFIG_REGISTRY", CLOSED_REGISTRY.to_owned()),
            ("BUN_CONFIG_REGISTRY", CLOSED_REGISTRY.to_owned()),
            ("COLORTERM", "truecolor".to_owned()),
        ] {
            line.push(' ');
            line.push_str(&sh_quote(&format!("{k}={v}")));
        }
        line.push(' ');
        line.push_str(&sh_quote(&opencode.display().to_string()));
        line
    }
}

/// `from` recreated at `to`: directories made, files hard-linked (copied
/// where a link cannot be made), symlinks kept.
fn link_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("node_modules");
    for entry in std::fs::read_dir(from).expect("the pre-seed") {
        let entry = entry.expect("a pre-seed entry");
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type().expect("its type");
        if kind.is_dir() {
            link_tree(&src, &dst);
        } else if kind.is_symlink() {
            let target = std::fs::read_link(&src).expect("a link");
            std::os::unix::fs::symlink(target, &dst).expect("the link");
        } else if std::fs::hard_link(&src, &dst).is_err() {
            std::fs::copy(&src, &dst).expect("a pre-seed file");
        }
    }
}

/// OpenCode's shell tool call running `cmd`.
pub fn bash(cmd: &str, why: &str) -> serde_json::Value {
    serde_json::json!({"command": cmd, "description": why})
}
