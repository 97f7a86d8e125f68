//! The real Claude Code in a real tmux pane against the fake Messages API,
//! recorded with `clawmux record` from its first byte.
//!
//! `claude` is `$CLAWMUX_CLAUDE` or `claude` on `PATH` (`.ci/run` installs the
//! pinned version); tests skip loudly only when it is absent.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use clawmux::agentcheck::{ClaudeEnv, FakeApi, Turn, claude_version, find_claude};
use clawmux::agents::claude::{NEWEST_TESTED, OLDEST_SUPPORTED, PermissionMode, at_least};
use clawmux::bridge::panes::answering::ANSWER_SETTLE;

use super::tmux::TmuxServer;

/// The installed Claude Code's release (`claude --version`), or the newest
/// tested when none is installed (the tests that need it skip then).
pub fn release() -> &'static str {
    static RELEASE: OnceLock<String> = OnceLock::new();
    RELEASE.get_or_init(|| {
        find_claude()
            .and_then(|c| claude_version(&c).ok())
            .unwrap_or_else(|| NEWEST_TESTED.to_owned())
    })
}

/// Whether the installed release is `min` or later.
pub fn release_at_least(min: &str) -> bool {
    at_least(release(), min)
}

/// Session `target` of `tmux` on a placeholder that waits (`cat`),
/// recorded by `clawmux record` into `dir/run.rec` from its first byte: the
/// agent is started into it afterwards (`respawn-pane`). The recording's
/// path and the recorder, once it is attached.
pub fn recorded_placeholder(tmux: &TmuxServer, target: &str, dir: &Path) -> (PathBuf, Child) {
    tmux.new_session(target, "cat");
    let recording = dir.join("run.rec");
    let recorder = Command::new(env!("CARGO_BIN_EXE_clawmux"))
        .args(["record", "-L", &tmux.socket, "-t", target, "-o"])
        .arg(&recording)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("clawmux record starts");
    wait_file(&recording, "%session-changed", STEP_TIMEOUT);
    (recording, recorder)
}

/// The home of a daemon that drives the real agent: `ws/` holds the
/// workspaces, and the agent's environment (against `api`) trusts
/// `ws/<project>`. Short, under /tmp: a Unix socket path has at most 107
/// bytes.
pub fn agent_home(api: &FakeApi, project: &str) -> (tempfile::TempDir, ClaudeEnv) {
    let home = tempfile::Builder::new()
        .prefix("cmx")
        .tempdir_in("/tmp")
        .expect("home");
    std::fs::create_dir(home.path().join("ws")).expect("workspace root");
    let mut env = ClaudeEnv::new(&api.base_url()).expect("claude env");
    env.trust(&home.path().join("ws").join(project))
        .expect("trust the project");
    (home, env)
}

/// The key of a Bash dialog's `No`: `3` before 2.1.332, `4` since (`3.
/// Yes, and switch to auto mode` came in).
pub fn bash_no_key() -> &'static str {
    bash_no_key_of(release())
}

/// [`bash_no_key`] on `release`.
pub fn bash_no_key_of(release: &str) -> &'static str {
    if at_least(release, "2.1.332") {
        "4"
    } else {
        "3"
    }
}

/// Whether the installed release retries HTTP 400 (2.1.332 and later).
pub fn retries_400() -> bool {
    release_at_least("2.1.332")
}

/// Where the committed recordings of `release` live.
pub fn fixtures_dir_of(release: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(format!("claude-{release}"))
}

/// Where the recordings of the installed release go.
pub fn fixtures_dir() -> PathBuf {
    fixtures_dir_of(release())
}

/// The `claude` binary; the test fails when it is not installed.
pub fn claude_required() -> PathBuf {
    find_claude().unwrap_or_else(|| {
        super::missing(
            "Claude Code",
            &format!(
                "set CLAWMUX_CLAUDE or put `claude` on PATH \
                 (npm install @anthropic-ai/claude-code@{NEWEST_TESTED}, or @{OLDEST_SUPPORTED})"
            ),
        )
    })
}

/// Longest a scenario step waits for the screen. Claude Code starts in ~2 s
/// here; a loaded machine shares 2 cores with other builds.
pub const STEP_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a finished scenario waits for the live watcher's completion:
/// it comes a debounce (300 ms) after the last output.
pub const COMPLETION_WAIT: Duration = Duration::from_secs(5);

/// Options for one run.
#[derive(Default, Clone)]
pub struct RunOptions {
    pub max_retries: Option<u32>,
    /// Delay between streamed SSE events, so the busy spinner shows.
    pub pace: Option<Duration>,
    /// Extra `claude` arguments (e.g. `--permission-mode plan`).
    pub args: Vec<&'static str>,
    /// Install clawmux's hooks (`clawmux hooks install --write`) in the
    /// project, forwarding to the hook socket in this `CLAWMUX_HOME`.
    pub hooks: Option<PathBuf>,
    /// Watch live with `clawmux watch --json --profile claude` next to the
    /// recorder.
    pub watch: bool,
}

/// A running Claude Code session with its recorder.
pub struct ClaudeRun {
    pub api: FakeApi,
    pub env: ClaudeEnv,
    pub tmux: TmuxServer,
    pub target: String,
    recording: PathBuf,
    /// Recordings made with hooks installed are not fixtures.
    save_fixture: bool,
    recorder: Option<Child>,
    watcher: Option<Child>,
    watch_out: PathBuf,
    _dir: tempfile::TempDir,
}

impl ClaudeRun {
    /// Starts the recorder on a placeholder pane, then Claude Code in that
    /// pane, and waits for its input box.
    pub fn start(claude: &Path, script: Vec<Turn>, options: RunOptions) -> ClaudeRun {
        ClaudeRun::start_with(claude, options, |_| script)
    }

    /// Like [`ClaudeRun::start`]; `prepare` gets the project directory
    /// before Claude Code starts and returns the script.
    pub fn start_with(
        claude: &Path,
        options: RunOptions,
        prepare: impl FnOnce(&Path) -> Vec<Turn>,
    ) -> ClaudeRun {
        let api = FakeApi::start_paced(
            Vec::new(),
            options.pace.unwrap_or(Duration::from_millis(15)),
        )
        .expect("fake API starts");
        // Task tools are off by default since 2.1.332: the task scenario
        // needs them.
        let mut env = ClaudeEnv::new(&api.base_url())
            .expect("claude env")
            .with_var("CLAUDE_CODE_ENABLE_TODO_TOOLS", "1");
        if let Some(n) = options.max_retries {
            env = env.with_max_retries(n);
        }
        if let Some(home) = &options.hooks {
            env = env.with_var("CLAWMUX_HOME", &home.display().to_string());
            let project = env.project().display().to_string();
            let out = Command::new(env!("CARGO_BIN_EXE_clawmux"))
                .args(["hooks", "install", "--write", "--dir", &project, "--bin"])
                .arg(env!("CARGO_BIN_EXE_clawmux"))
                .output()
                .expect("clawmux hooks install");
            assert!(
                out.status.success(),
                "hooks install: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        api.push(prepare(env.project()));
        let tmux = TmuxServer::new();
        let target = "agent".to_owned();
        let dir = tempfile::tempdir().expect("tempdir");
        // The recorder attaches before Claude Code writes its first byte.
        let (recording, recorder) = recorded_placeholder(&tmux, &target, dir.path());
        let watch_out = dir.path().join("watch.jsonl");
        let watcher = options.watch.then(|| {
            let out = std::fs::File::create(&watch_out).expect("watch output");
            Command::new(env!("CARGO_BIN_EXE_clawmux"))
                .args([
                    "watch",
                    "-L",
                    &tmux.socket,
                    "-t",
                    &target,
                    "--json",
                    "--profile",
                    "claude",
                ])
                .stdin(Stdio::null())
                .stdout(out)
                .stderr(std::fs::File::create(dir.path().join("watch.err")).expect("watch errors"))
                .spawn()
                .expect("clawmux watch starts")
        });
        if options.watch {
            // Attached once tmux lists the second control client.
            let deadline = Instant::now() + STEP_TIMEOUT;
            while tmux
                .ok(&["list-clients", "-F", "#{client_control_mode}"])
                .lines()
                .count()
                < 2
            {
                assert!(Instant::now() < deadline, "clawmux watch did not attach");
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        // The mode is clawmux's decision, as the daemon makes it: manual,
        // unless the scenario names its own.
        let mut args = options.args.clone();
        if !args.iter().any(|a| a.starts_with("--permission-mode")) {
            args.extend(["--permission-mode", PermissionMode::Manual.flag()]);
        }
        let command = env.shell_command(claude, &args);
        tmux.ok(&["respawn-pane", "-k", "-t", &target, &command]);
        let run = ClaudeRun {
            api,
            env,
            tmux,
            target,
            recording,
            save_fixture: options.hooks.is_none(),
            recorder: Some(recorder),
            watcher,
            watch_out,
            _dir: dir,
        };
        run.wait_until("the input box", is_idle_footer);
        run
    }

    /// Waits until the screen shows `needle`; panics with the screen.
    pub fn wait_for(&self, needle: &str) -> String {
        self.tmux
            .wait_for_screen(&self.target, needle, STEP_TIMEOUT)
    }

    /// Waits until the screen no longer shows `needle`.
    pub fn wait_gone(&self, needle: &str) -> String {
        let deadline = Instant::now() + STEP_TIMEOUT;
        loop {
            let screen = self.screen();
            if !screen.contains(needle) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {needle:?} to leave the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits for the idle input box after a turn: the answer `needle` on
    /// screen, no busy footer.
    pub fn wait_idle_with(&self, needle: &str) -> String {
        let deadline = Instant::now() + STEP_TIMEOUT;
        loop {
            let screen = self.screen();
            if screen.contains(needle) && is_idle_footer(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for an idle screen with {needle:?}:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until `ready` holds for the screen.
    pub fn wait_until(&self, what: &str, ready: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + STEP_TIMEOUT;
        loop {
            let screen = self.screen();
            if ready(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn screen(&self) -> String {
        self.tmux.capture(&self.target)
    }

    /// Types `text` literally and presses Enter, as the bridge does.
    pub fn prompt(&self, text: &str) {
        self.tmux.ok(&["send-keys", "-t", &self.target, "-l", text]);
        // Claude Code reads a paste and a key in one read as a paste; the
        // Enter must come on its own.
        self.wait_for(text.lines().next().unwrap_or(text));
        self.tmux.ok(&["send-keys", "-t", &self.target, "Enter"]);
    }

    /// The key of the dialog option on screen labelled `label` (`No` is 3
    /// before 2.1.332 and 4 since).
    pub fn option_key(&self, label: &str) -> String {
        let screen = self.screen();
        screen
            .lines()
            .rev()
            .find_map(|row| {
                let row = row.trim_start().trim_start_matches('❯').trim();
                let (key, rest) = row.split_once(". ")?;
                (rest.trim() == label && key.chars().all(|c| c.is_ascii_digit()))
                    .then(|| key.to_owned())
            })
            .unwrap_or_else(|| panic!("no option {label:?} on screen:\n{screen}"))
    }

    /// Sends tmux key names (`1`, `Enter`, `Escape`, `S-Tab`).
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", self.target.as_str()];
        args.extend_from_slice(keys);
        self.tmux.ok(&args);
    }

    /// With a watcher: waits until its last detection is a completion, or
    /// [`COMPLETION_WAIT`] passed (then the caller's checks say what it
    /// reported instead).
    pub fn wait_for_watch_completion(&self) {
        if self.watcher.is_none() {
            return;
        }
        let deadline = Instant::now() + COMPLETION_WAIT;
        while Instant::now() < deadline {
            let last = self
                .watch_lines()
                .into_iter()
                .rfind(|v| v.get("at_ms").is_some());
            if last.is_some_and(|d| d["kind"] == "completed") {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits as a person does before answering a dialog: with a watcher,
    /// until it reported the dialog (up to [`COMPLETION_WAIT`]), then until
    /// the screen has been still for [`ANSWER_SETTLE`]. Claude Code 2.1.332
    /// drops keys sent within ~0.2 s of drawing a dialog; no person is that
    /// quick, and clawmux waits the same before it types an answer.
    pub fn wait_for_watch_approval(&self) {
        if self.watcher.is_some() {
            let deadline = Instant::now() + COMPLETION_WAIT;
            while Instant::now() < deadline {
                if self
                    .watch_lines()
                    .iter()
                    .any(|v| v.get("at_ms").is_some() && v["kind"] == "approval")
                {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        (self.tmux).wait_still(&self.target, ANSWER_SETTLE, STEP_TIMEOUT);
    }

    /// Stops the recorder (and the watcher) and returns the recording. Bytes,
    /// not text: a UTF-8 character can be split across two `%output` lines.
    pub fn finish(&mut self) -> Vec<u8> {
        for child in [self.recorder.take(), self.watcher.take()]
            .into_iter()
            .flatten()
        {
            stop(child);
        }
        std::fs::read(&self.recording).expect("recording readable")
    }

    /// What `clawmux watch --json` printed (after [`ClaudeRun::finish`]).
    pub fn watch_lines(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(&self.watch_out)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// What `clawmux watch` said on stderr (its start line, or why it ended).
    pub fn watch_errors(&self) -> String {
        std::fs::read_to_string(self.watch_out.with_file_name("watch.err")).unwrap_or_default()
    }

    pub fn recording_path(&self) -> &Path {
        &self.recording
    }

    /// Copies the recording to the fixtures when `CLAWMUX_UPDATE_FIXTURES=1`.
    pub fn maybe_save_fixture(&self, name: &str) {
        if self.save_fixture {
            save_fixture_if_asked(&self.recording, &fixtures_dir(), name);
        }
    }
}

/// Copies `recording` to `dir/NAME.rec` when `CLAWMUX_UPDATE_FIXTURES=1`
/// (how a tested release's recordings are refreshed).
pub fn save_fixture_if_asked(recording: &Path, dir: &Path, name: &str) {
    if std::env::var("CLAWMUX_UPDATE_FIXTURES").as_deref() == Ok("1") {
        std::fs::create_dir_all(dir).expect("fixtures dir");
        let to = dir.join(format!("{name}.rec"));
        std::fs::copy(recording, &to).expect("fixture written");
        eprintln!("saved {}", to.display());
    }
}

impl Drop for ClaudeRun {
    fn drop(&mut self) {
        for child in [self.recorder.take(), self.watcher.take()]
            .into_iter()
            .flatten()
        {
            stop(child);
        }
    }
}

/// The input box's footer when Claude Code waits for input: `? for
/// shortcuts`, or a mode line (`⏸ plan mode on (shift+tab to cycle)`),
/// without the busy `esc to interrupt`.
pub fn is_idle_footer(screen: &str) -> bool {
    (screen.contains("? for shortcuts") || screen.contains("(shift+tab to cycle)"))
        && !screen.contains("esc to interrupt")
}

/// SIGTERM, then wait (the recorder flushes and exits).
pub fn stop(mut child: Child) {
    // SAFETY: plain kill(2) on a child we spawned and have not reaped.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
    let _ = child.wait();
}

/// Waits until the file at `path` contains `needle`.
pub fn wait_file(path: &Path, needle: &str, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    loop {
        if std::fs::read_to_string(path).is_ok_and(|t| t.contains(needle)) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {needle:?} in {}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Runs `clawmux <args>` with `input` on stdin; returns (exit code, stdout, stderr).
pub fn clawmux_stdin(args: &[&str], input: &[u8]) -> (i32, String, String) {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_clawmux"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("clawmux runs");
    let mut stdin = child.stdin.take().expect("stdin");
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().expect("clawmux output");
    let _ = writer.join();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
