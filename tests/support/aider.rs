//! The real Aider, offline: a throwaway `HOME` whose litellm price list is
//! seeded (else Aider fetches one at every start), the environment that
//! points litellm's OpenAI client at the fake model API (Chat Completions)
//! and the flags that turn off update checks, release notes and analytics.
//! Aider wants a git repository: [`git_workspace`] makes one.
//!
//! `aider` is `$CLAWMUX_AIDER` (`.ci/run` installs the pinned release in a
//! venv under `target/`); tests skip loudly when it is absent.

use std::path::{Path, PathBuf};

use clawmux::agentcheck::sh_quote;
use clawmux::agents::aider::TESTED;

/// The variable naming the `aider` program.
pub const AIDER_BIN_ENV: &str = "CLAWMUX_AIDER";

/// The model name Aider is started with (litellm's `openai/` provider).
pub const MODEL: &str = "fake-model";

/// The `aider` program, or `None` after a loud message saying `test` is
/// skipped.
pub fn aider_or_skip(test: &str) -> Option<PathBuf> {
    let found = std::env::var_os(AIDER_BIN_ENV)
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .filter(|p| p.is_file());
    if found.is_none() {
        eprintln!(
            "\n*** SKIPPED {test}: Aider is not installed (set {AIDER_BIN_ENV}; \
             .ci/run installs aider-chat=={TESTED} in a venv under target/) ***\n"
        );
    }
    found
}

/// Makes `dir` a git repository with one empty commit (Aider commits its
/// edits there).
pub fn git_workspace(dir: &Path) {
    std::fs::create_dir_all(dir).expect("workspace");
    for args in [
        &["init", "-q"][..],
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "init",
        ],
    ] {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .status()
            .expect("git")
            .success();
        assert!(ok, "git {args:?}");
    }
}

/// A throwaway home for Aider against the fake API at `base_url`.
pub struct AiderEnv {
    root: tempfile::TempDir,
    base_url: String,
}

impl AiderEnv {
    /// Seeds `~/.aider/caches/model_prices_and_context_window.json` with
    /// the fake model (an empty or missing file is fetched again).
    pub fn new(base_url: &str) -> AiderEnv {
        let root = tempfile::Builder::new()
            .prefix("aid")
            .tempdir_in("/tmp")
            .expect("aider home");
        let caches = root.path().join(".aider/caches");
        std::fs::create_dir_all(&caches).expect("caches");
        let prices = serde_json::json!({MODEL: {
            "max_input_tokens": 128000, "max_tokens": 4096, "max_output_tokens": 4096,
            "input_cost_per_token": 0, "output_cost_per_token": 0,
            "litellm_provider": "openai", "mode": "chat",
        }});
        std::fs::write(
            caches.join("model_prices_and_context_window.json"),
            prices.to_string(),
        )
        .expect("price list");
        AiderEnv {
            root,
            base_url: base_url.to_owned(),
        }
    }

    pub fn home(&self) -> &Path {
        self.root.path()
    }

    /// `env HOME=… OPENAI_API_BASE=… … <aider> --model openai/fake-model
    /// --edit-format diff …`: clawmux adds the permission mode's flags (it
    /// knows the program).
    pub fn env_command(&self, aider: &Path) -> String {
        let mut line = "env".to_owned();
        for (k, v) in [
            ("HOME", self.home().display().to_string()),
            ("OPENAI_API_BASE", format!("{}/v1", self.base_url)),
            ("OPENAI_API_KEY", "sk-fake-aider".to_owned()),
            ("LITELLM_LOCAL_MODEL_COST_MAP", "True".to_owned()),
            ("GIT_AUTHOR_NAME", "aider".to_owned()),
            ("GIT_AUTHOR_EMAIL", "aider@localhost".to_owned()),
            ("GIT_COMMITTER_NAME", "aider".to_owned()),
            ("GIT_COMMITTER_EMAIL", "aider@localhost".to_owned()),
        ] {
            line.push(' ');
            line.push_str(&sh_quote(&format!("{k}={v}")));
        }
        line.push(' ');
        line.push_str(&sh_quote(&aider.display().to_string()));
        for a in [
            "--model",
            &format!("openai/{MODEL}"),
            "--edit-format",
            "diff",
            "--no-check-update",
            "--no-show-release-notes",
            "--analytics-disable",
            "--no-gitignore",
            "--no-show-model-warnings",
        ] {
            line.push(' ');
            line.push_str(&sh_quote(a));
        }
        line
    }
}

/// A reply in Aider's diff edit format that creates `file` holding `text`.
pub fn create_file(file: &str, text: &str) -> String {
    format!(
        "I will create {file}.\n\n{file}\n```\n<<<<<<< SEARCH\n=======\n{text}\n>>>>>>> REPLACE\n```\n"
    )
}

/// A reply suggesting one shell command (Aider asks before it runs it).
pub fn shell_reply(cmd: &str) -> String {
    format!("Run this:\n\n```bash\n{cmd}\n```\n")
}
