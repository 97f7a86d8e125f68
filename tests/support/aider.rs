//! The real Aider, offline: a throwaway `HOME` whose litellm price list is
//! seeded (else Aider fetches one at every start), the environment that
//! points litellm's OpenAI client at the fake model API (Chat Completions)
//! and the flags that turn off update checks, release notes and analytics.
//! Aider wants a git repository: [`git_workspace`] makes one.
//!
//! `aider` is `$CLAWMUX_AIDER` (`.ci/run` installs the pinned release in a
//! venv under `target/`); tests skip loudly when it is absent.

use std::path::{Path, PathBuf};

use clawmux::agents::aider::TESTED;
use clawmux::shell::quote_keeping_nul as sh_quote;

/// The variable naming the `aider` program.
pub const AIDER_BIN_ENV: &str = "CLAWMUX_AIDER";

/// The model name Aider is started with (litellm's `openai/` provider).
pub const MODEL: &str = "fake-model";

/// The `aider` program; the test fails when it is not installed.
pub fn aider_required() -> PathBuf {
    super::program_from_env(AIDER_BIN_ENV).unwrap_or_else(|| {
        super::missing(
            "Aider",
            &format!("set {AIDER_BIN_ENV} (pip install aider-chat=={TESTED} in a venv)"),
        )
    })
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

/// The committed recordings of the tested Aider release.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(format!("aider-{TESTED}"))
}

/// Aider in a tmux pane recorded from its first byte by `clawmux record`
/// (the way `tests/fixtures/aider-<release>/*.rec` are made), driven by
/// keys as clawmux types them.
pub struct AiderRun {
    pub api: clawmux::agentcheck::FakeApi,
    pub env: AiderEnv,
    pub tmux: super::tmux::TmuxServer,
    pub target: String,
    pub workspace: PathBuf,
    recording: PathBuf,
    recorder: Option<std::process::Child>,
    _dir: tempfile::TempDir,
}

impl AiderRun {
    /// Starts the recorder on a placeholder pane, then Aider (asking
    /// before it acts) in a git workspace holding `files` (committed),
    /// against `script`; waits for its prompt.
    pub fn start(
        aider: &Path,
        script: Vec<clawmux::agentcheck::Turn>,
        files: &[(&str, &str)],
    ) -> AiderRun {
        let api =
            clawmux::agentcheck::FakeApi::start_paced(script, std::time::Duration::from_millis(15))
                .expect("fake API starts");
        let env = AiderEnv::new(&api.base_url());
        let tmux = super::tmux::TmuxServer::new();
        let target = "agent".to_owned();
        let dir = tempfile::tempdir().expect("tempdir");
        // The recorder attaches before Aider writes its first byte.
        let (recording, recorder) = super::claude::recorded_placeholder(&tmux, &target, dir.path());
        tmux.ok(&["set-option", "-t", &target, "remain-on-exit", "on"]);
        let workspace = env.home().join("ws");
        git_workspace(&workspace);
        for (name, text) in files {
            std::fs::write(workspace.join(name), text).expect("workspace file");
        }
        if !files.is_empty() {
            let git = |args: &[&str]| {
                let ok = std::process::Command::new("git")
                    .args(["-c", "user.name=t", "-c", "user.email=t@t"])
                    .args(args)
                    .current_dir(&workspace)
                    .status()
                    .expect("git")
                    .success();
                assert!(ok, "git {args:?}");
            };
            git(&["add", "-A"]);
            git(&["commit", "-q", "-m", "files"]);
        }
        let cd = format!(
            "cd {} && exec {}",
            sh_quote(&workspace.display().to_string()),
            env.env_command(aider)
        );
        tmux.ok(&["respawn-pane", "-k", "-t", &target, &cd]);
        let run = AiderRun {
            api,
            env,
            tmux,
            target,
            workspace,
            recording,
            recorder: Some(recorder),
            _dir: dir,
        };
        run.wait_for("diff>");
        run
    }

    /// Waits until the screen shows `needle`; panics with the screen.
    pub fn wait_for(&self, needle: &str) -> String {
        self.tmux
            .wait_for_screen(&self.target, needle, super::claude::STEP_TIMEOUT)
    }

    /// Waits until the screen has stood still for clawmux's settle time.
    pub fn settle(&self) {
        use clawmux::bridge::panes::answering::ANSWER_SETTLE;
        (self.tmux).wait_still(&self.target, ANSWER_SETTLE, super::claude::STEP_TIMEOUT);
    }

    /// Types `text` literally, then Enter on its own, as clawmux does.
    pub fn say(&self, text: &str) {
        self.tmux.ok(&["send-keys", "-t", &self.target, "-l", text]);
        self.wait_for(text);
        std::thread::sleep(clawmux::tmux::TEXT_ENTER_GAP);
        self.tmux.ok(&["send-keys", "-t", &self.target, "Enter"]);
    }

    /// Stops the recorder and returns the recording.
    pub fn finish(&mut self) -> Vec<u8> {
        if let Some(child) = self.recorder.take() {
            super::claude::stop(child);
        }
        std::fs::read(&self.recording).expect("recording readable")
    }

    /// Copies the recording to `tests/fixtures/aider-<TESTED>/NAME.rec`
    /// when `CLAWMUX_UPDATE_FIXTURES=1`.
    pub fn maybe_save_fixture(&self, name: &str) {
        super::claude::save_fixture_if_asked(&self.recording, &fixtures_dir(), name);
    }
}

impl Drop for AiderRun {
    fn drop(&mut self) {
        if let Some(child) = self.recorder.take() {
            super::claude::stop(child);
        }
    }
}
