//! The real Gemini CLI, offline: a throwaway `HOME` whose
//! `~/.gemini/settings.json` picks API-key auth, turns off folder trust,
//! update checks, usage statistics, telemetry and the IDE integration, and
//! turns its OSC 777 notifications on as `clawmux hooks install --agent
//! gemini` does, and the environment that points it at the fake model API
//! (`GOOGLE_GEMINI_BASE_URL`, Gemini protocol); and a recorded run of it
//! in a real tmux pane ([`GeminiRun`]).
//!
//! `gemini` is `$CLAWMUX_GEMINI` (`.ci/run` installs the pinned release
//! under `target/`); tests skip loudly when it is absent.

use std::path::{Path, PathBuf};

use clawmux::agents::gemini::TESTED;
use clawmux::bridge::panes::answering::ANSWER_SETTLE;
use clawmux::hooks::settings::GEMINI_SETTINGS;
use clawmux::shell::quote_keeping_nul as sh_quote;
use clawmux::tmux::TEXT_ENTER_GAP;

/// The variable naming the `gemini` program.
pub const GEMINI_BIN_ENV: &str = "CLAWMUX_GEMINI";

/// The `gemini` program; the test fails when it is not installed.
pub fn gemini_required() -> PathBuf {
    super::program_from_env(GEMINI_BIN_ENV).unwrap_or_else(|| {
        super::missing(
            "Gemini CLI",
            &format!("set {GEMINI_BIN_ENV} (npm install @google/gemini-cli@{TESTED})"),
        )
    })
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
        // Its notifications on, as `clawmux hooks install --agent gemini`
        // sets them: a second signal in the pane's output.
        for (section, key, value) in GEMINI_SETTINGS {
            settings[section][key] = value.json();
        }
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

/// The real Gemini CLI in a real tmux pane against the fake API, recorded
/// with `clawmux record` from its first byte (for fixtures under
/// `tests/fixtures/gemini-<release>/`).
pub struct GeminiRun {
    pub api: clawmux::agentcheck::FakeApi,
    pub env: GeminiEnv,
    pub tmux: super::tmux::TmuxServer,
    pub target: String,
    recording: PathBuf,
    recorder: Option<std::process::Child>,
    _dir: tempfile::TempDir,
}

/// What Gemini's idle input box shows while it is empty.
pub const INPUT_PLACEHOLDER: &str = "Type your message";

impl GeminiRun {
    /// Starts the recorder on a placeholder pane, then Gemini CLI (manual
    /// approvals) in that pane against `script`, and waits for its input
    /// box.
    pub fn start(gemini: &Path, script: Vec<clawmux::agentcheck::Turn>) -> GeminiRun {
        let api =
            clawmux::agentcheck::FakeApi::start_paced(script, std::time::Duration::from_millis(15))
                .expect("fake API starts");
        let env = GeminiEnv::new(&api.base_url());
        let tmux = super::tmux::TmuxServer::new();
        let target = "agent".to_owned();
        let dir = tempfile::tempdir().expect("tempdir");
        // The recorder attaches before Gemini writes its first byte.
        let (recording, recorder) = super::claude::recorded_placeholder(&tmux, &target, dir.path());
        // A Gemini that exits leaves its last screen (and the server) for
        // the failure to show.
        tmux.ok(&["set-option", "-t", &target, "remain-on-exit", "on"]);
        let command = env.env_command(gemini, &["--approval-mode", "default"]);
        let workspace = env.home().join("ws");
        std::fs::create_dir_all(&workspace).expect("workspace");
        // Without the variables of a CI job (`.ci/run` sets `CI`): Gemini
        // seeing them goes headless, as clawmux's own panes know.
        let cd = format!(
            "cd {} && exec env -u CI -u CONTINUOUS_INTEGRATION -u GITHUB_ACTIONS {command}",
            sh_quote(&workspace.display().to_string())
        );
        tmux.ok(&["respawn-pane", "-k", "-t", &target, &cd]);
        let run = GeminiRun {
            api,
            env,
            tmux,
            target,
            recording,
            recorder: Some(recorder),
            _dir: dir,
        };
        run.wait_for(INPUT_PLACEHOLDER);
        run
    }

    /// Waits until the screen shows `needle`; panics with the screen.
    pub fn wait_for(&self, needle: &str) -> String {
        self.tmux
            .wait_for_screen(&self.target, needle, super::claude::STEP_TIMEOUT)
    }

    pub fn screen(&self) -> String {
        self.tmux.capture(&self.target)
    }

    /// Waits until the recording so far holds `needle` (as recorded: a
    /// control-mode line, octal escapes and all).
    pub fn wait_recorded(&self, needle: &str) {
        // Bytes: a character cut across two `%output` lines is no UTF-8.
        let deadline = std::time::Instant::now() + super::claude::STEP_TIMEOUT;
        let needle = needle.as_bytes();
        loop {
            let recorded = std::fs::read(&self.recording).unwrap_or_default();
            if recorded.windows(needle.len()).any(|w| w == needle) {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "timed out waiting for {:?} in the recording",
                String::from_utf8_lossy(needle)
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// Types `text` literally, then Enter on its own as clawmux does
    /// ([`TEXT_ENTER_GAP`] later: an Enter that comes with the text is
    /// taken as part of a paste).
    pub fn prompt(&self, text: &str) {
        self.tmux.ok(&["send-keys", "-t", &self.target, "-l", text]);
        self.wait_for(text);
        std::thread::sleep(TEXT_ENTER_GAP);
        self.tmux.ok(&["send-keys", "-t", &self.target, "Enter"]);
    }

    /// Waits until the screen has been still for [`ANSWER_SETTLE`], as
    /// clawmux waits before it answers a dialog.
    pub fn settle(&self) {
        let timeout = super::claude::STEP_TIMEOUT;
        (self.tmux).wait_still(&self.target, ANSWER_SETTLE, timeout);
    }

    /// Sends tmux key names (`1`, `Enter`, `Escape`).
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", self.target.as_str()];
        args.extend_from_slice(keys);
        self.tmux.ok(&args);
    }

    /// Stops the recorder and returns the recording (bytes: a character
    /// can be split across two `%output` lines).
    pub fn finish(&mut self) -> Vec<u8> {
        if let Some(child) = self.recorder.take() {
            super::claude::stop(child);
        }
        std::fs::read(&self.recording).expect("recording readable")
    }

    /// Copies the recording to `tests/fixtures/gemini-<TESTED>/NAME.rec`
    /// when `CLAWMUX_UPDATE_FIXTURES=1`.
    pub fn maybe_save_fixture(&self, name: &str) {
        super::claude::save_fixture_if_asked(&self.recording, &fixtures_dir(), name);
    }
}

impl Drop for GeminiRun {
    fn drop(&mut self) {
        if let Some(child) = self.recorder.take() {
            super::claude::stop(child);
        }
    }
}

/// The committed recordings of the tested Gemini CLI release.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(format!("gemini-{TESTED}"))
}

/// The `%output` bytes of every pane in a recording, with their times in
/// milliseconds, in order.
pub fn pane_output(recording: &[u8]) -> Vec<(u64, Vec<u8>)> {
    use clawmux::control::recording::RecordingReader;
    use clawmux::control::{Decoder, Event, Notification};
    let mut reader = RecordingReader::new(recording).expect("a recording");
    let mut decoder = Decoder::new();
    let mut out = Vec::new();
    let mut now = 0;
    while let Some(chunk) = reader.next_chunk().expect("well-formed") {
        now = chunk.at_ms.unwrap_or(now);
        decoder.feed(chunk.bytes, &mut |e| {
            if let Event::Notification(Notification::Output { data, .. }) = e {
                out.push((now, data.to_vec()));
            }
        });
    }
    out
}

/// The notifications (title, body) a pane model reads in a recording's
/// output, in order.
pub fn notifications(recording: &[u8]) -> Vec<(String, String)> {
    use clawmux::pane::{Pane, signal::Signal};
    let mut pane = Pane::new(120, 40);
    let mut found = Vec::new();
    for (_, bytes) in pane_output(recording) {
        pane.feed(&bytes);
        for signal in pane.take_signals() {
            if let Signal::Notification { title, body } = signal {
                found.push((title, body));
            }
        }
    }
    found
}
