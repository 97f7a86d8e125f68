//! Claude Code's hooks as 2.1.197 sends them: `clawmux hooks install` in the
//! project, the real `clawmux hook` run by the real agent, lines received on
//! the hook socket and decoded by [`clawmux::hooks::decode_line`].
//!
//! With `CLAWMUX_UPDATE_FIXTURES=1` the payloads are saved under
//! `tests/integ/payloads/claude-2.1.197/` (the decoding tests in
//! `tests/integ/hooks.rs` read them).

use std::io::{BufRead, BufReader};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clawmux::agentcheck::{FakeApi, Turn};
use clawmux::hooks::{HookEvent, HookKind, decode_line};
use serde_json::{Value, json};

use crate::support::claude::{ClaudeRun, RunOptions, STEP_TIMEOUT, agent_home, claude_required};
use crate::support::tmux::TmuxServer;

use crate::support::scenarios;

/// The hook socket of a fake daemon: every line `clawmux hook` writes.
struct HookSink {
    home: tempfile::TempDir,
    lines: Arc<Mutex<Vec<Vec<u8>>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl HookSink {
    fn new() -> HookSink {
        // Short: a Unix socket path has at most 107 bytes.
        let home = tempfile::Builder::new()
            .prefix("cmx")
            .tempdir_in("/tmp")
            .expect("tempdir");
        let listener = UnixListener::bind(home.path().join("hooks.sock")).expect("bind");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (lines, stop) = (lines.clone(), stop.clone());
            std::thread::spawn(move || {
                for conn in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(conn) = conn else { continue };
                    let mut line = Vec::new();
                    if BufReader::new(conn).read_until(b'\n', &mut line).is_ok() && !line.is_empty()
                    {
                        lines.lock().unwrap().push(line);
                    }
                }
            })
        };
        HookSink {
            home,
            lines,
            stop,
            thread: Some(thread),
        }
    }

    fn options(&self) -> RunOptions {
        RunOptions {
            hooks: Some(self.home.path().to_path_buf()),
            ..RunOptions::default()
        }
    }

    /// The raw payloads (Claude Code's JSON objects) received so far.
    fn payloads(&self) -> Vec<Value> {
        self.lines
            .lock()
            .unwrap()
            .iter()
            .map(|l| {
                let wire: Value = serde_json::from_slice(l).expect("a wire line");
                wire["payload"].clone()
            })
            .collect()
    }

    /// Decoded events so far.
    fn events(&self) -> Vec<HookEvent> {
        self.lines
            .lock()
            .unwrap()
            .iter()
            .map(|l| decode_line(l).expect("decodes"))
            .collect()
    }

    /// Waits for a payload with this `hook_event_name`.
    fn wait(&self, name: &str) -> Value {
        let deadline = Instant::now() + STEP_TIMEOUT;
        loop {
            if let Some(p) = self
                .payloads()
                .into_iter()
                .find(|p| p["hook_event_name"] == name)
            {
                return p;
            }
            assert!(
                Instant::now() < deadline,
                "no {name} hook; got {:?}",
                self.names()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn names(&self) -> Vec<String> {
        self.payloads()
            .iter()
            .map(|p| p["hook_event_name"].as_str().unwrap_or("").to_owned())
            .collect()
    }

    /// Saves the first payload named `event` (matching `pick`) as a fixture
    /// when `CLAWMUX_UPDATE_FIXTURES=1`.
    fn save(&self, file: &str, event: &str, pick: impl Fn(&Value) -> bool) {
        if std::env::var("CLAWMUX_UPDATE_FIXTURES").as_deref() != Ok("1") {
            return;
        }
        let payload = self
            .payloads()
            .into_iter()
            .find(|p| p["hook_event_name"] == event && pick(p))
            .unwrap_or_else(|| panic!("no {event} payload to save"));
        let dir = payloads_dir();
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{file}.json"));
        std::fs::write(
            &path,
            serde_json::to_string_pretty(&payload).unwrap() + "\n",
        )
        .unwrap();
        eprintln!("saved {}", path.display());
    }
}

impl Drop for HookSink {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = UnixStream::connect(self.home.path().join("hooks.sock"));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn payloads_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/integ/payloads/claude-2.1.197")
}

fn tool_input(p: &Value) -> &Value {
    &p["tool_input"]
}

#[test]
fn bash_permission_hooks() {
    let claude = claude_required();
    let sink = HookSink::new();
    let run = ClaudeRun::start(
        &claude,
        vec![
            Turn::tool(
                "Bash",
                json!({"command": "touch made-by-bash.txt", "description": "Create a marker file"}),
            ),
            Turn::text(scenarios::BASH_ANSWER),
        ],
        sink.options(),
    );
    let start = sink.wait("SessionStart");
    assert_eq!(start["source"], "startup");
    run.prompt("make a marker file");
    run.wait_for("Do you want to proceed?");
    let request = sink.wait("PermissionRequest");
    assert_eq!(request["tool_name"], "Bash");
    assert_eq!(tool_input(&request)["command"], "touch made-by-bash.txt");
    assert_eq!(tool_input(&request)["description"], "Create a marker file");
    // Left unanswered, the dialog is notified a few seconds later.
    let note = sink.wait("Notification");
    assert_eq!(note["notification_type"], "permission_prompt");
    run.keys(&["1"]);
    run.wait_idle_with(scenarios::BASH_ANSWER);
    let stop = sink.wait("Stop");
    assert_eq!(stop["last_assistant_message"], scenarios::BASH_ANSWER);

    let events = sink.events();
    let stop = events
        .iter()
        .find(|e| matches!(e.event, HookKind::Stop { .. }))
        .unwrap();
    assert_eq!(
        stop.event,
        HookKind::Stop {
            stop_hook_active: false,
            last_assistant_message: Some(scenarios::BASH_ANSWER.into()),
        }
    );
    assert_eq!(stop.tmux_pane.as_deref(), Some("%0"));
    sink.save("session_start", "SessionStart", |_| true);
    sink.save("permission_request_bash", "PermissionRequest", |_| true);
    sink.save("notification_permission_prompt", "Notification", |_| true);
    sink.save("stop", "Stop", |_| true);
}

#[test]
fn question_plan_edit_and_create_hooks() {
    let claude = claude_required();
    let sink = HookSink::new();
    let done = scenarios::ask_question(&claude, &sink.options());
    drop(done);
    let q = sink.wait("PermissionRequest");
    assert_eq!(q["tool_name"], "AskUserQuestion");
    let question = &tool_input(&q)["questions"][0];
    assert_eq!(question["question"], scenarios::QUESTION);
    assert_eq!(question["options"][1]["label"], "SQLite");
    assert_eq!(
        question["options"][1]["description"],
        "Embedded file, zero setup"
    );
    sink.save(
        "permission_request_ask_user_question",
        "PermissionRequest",
        |_| true,
    );

    let sink = HookSink::new();
    drop(scenarios::plan_mode(&claude, &sink.options()));
    let plan = sink
        .payloads()
        .into_iter()
        .find(|p| p["hook_event_name"] == "PermissionRequest" && p["tool_name"] == "ExitPlanMode")
        .unwrap_or_else(|| panic!("no ExitPlanMode request: {:?}", sink.names()));
    assert_eq!(tool_input(&plan)["plan"], scenarios::PLAN);
    assert!(
        tool_input(&plan)["planFilePath"]
            .as_str()
            .is_some_and(|p| p.contains("/.claude/plans/")),
        "{plan}"
    );
    sink.save(
        "permission_request_exit_plan_mode",
        "PermissionRequest",
        |p| p["tool_name"] == "ExitPlanMode",
    );

    let sink = HookSink::new();
    drop(scenarios::edit_file(&claude, &sink.options()));
    let edit = sink.wait("PermissionRequest");
    assert_eq!(edit["tool_name"], "Edit");
    assert!(
        tool_input(&edit)["file_path"]
            .as_str()
            .unwrap()
            .ends_with("/notes.txt")
    );
    sink.save("permission_request_edit", "PermissionRequest", |_| true);

    let sink = HookSink::new();
    drop(scenarios::create_file(&claude, &sink.options()));
    let write = sink.wait("PermissionRequest");
    assert_eq!(write["tool_name"], "Write");
    assert!(
        tool_input(&write)["file_path"]
            .as_str()
            .unwrap()
            .ends_with("/hello.py")
    );
    sink.save("permission_request_write_new", "PermissionRequest", |_| {
        true
    });
}

#[test]
fn api_errors_end_with_stop_failure() {
    let claude = claude_required();
    for (status, message, shows, error) in [
        (
            500,
            "Internal server error",
            "API Error: 500",
            "server_error",
        ),
        (
            401,
            "invalid x-api-key",
            "Invalid API key",
            "authentication_failed",
        ),
        (
            400,
            "messages: text content blocks must be non-empty",
            "API Error: 400",
            "unknown",
        ),
    ] {
        let sink = HookSink::new();
        // Alive until its hooks came: killed at once, Claude Code could be
        // gone before its StopFailure hook ran (CI, 2.1.197, 1 run in 2).
        let _claude = scenarios::api_error(&claude, &sink.options(), status, message, shows);
        let failure = sink.wait("StopFailure");
        assert!(
            !sink.names().contains(&"Stop".to_owned()),
            "{:?}",
            sink.names()
        );
        let got = failure["error"].as_str().unwrap_or("");
        assert_eq!(got, error, "{status}");
        let last = failure["last_assistant_message"].as_str().unwrap_or("");
        assert!(last.contains(shows), "{status}: {last:?}");
        sink.save(&format!("stop_failure_{status}"), "StopFailure", |_| true);
        let decoded = sink
            .events()
            .into_iter()
            .find(|e| matches!(e.event, HookKind::StopFailure { .. }))
            .unwrap();
        let HookKind::StopFailure { error: e, .. } = &decoded.event else {
            unreachable!()
        };
        assert_eq!(e.as_deref(), Some(error));
    }
}

#[test]
fn task_hooks() {
    let claude = claude_required();
    let sink = HookSink::new();
    drop(scenarios::task_list(&claude, &sink.options()));
    let names = sink.names();
    assert_eq!(
        names.iter().filter(|n| *n == "TaskCreated").count(),
        2,
        "{names:?}"
    );
    assert_eq!(
        names.iter().filter(|n| *n == "TaskCompleted").count(),
        2,
        "{names:?}"
    );
    let created = sink.wait("TaskCreated");
    assert_eq!(created["task_subject"], "Write the parser");
    sink.save("task_created", "TaskCreated", |_| true);
    sink.save("task_completed", "TaskCompleted", |_| true);
    let subjects: Vec<String> = sink
        .events()
        .into_iter()
        .filter_map(|e| match e.event {
            HookKind::TaskCompleted { task_subject, .. } => task_subject,
            _ => None,
        })
        .collect();
    assert_eq!(subjects, ["Write the parser", "Test the parser"]);
}

/// With clawmux's hooks installed, a turn that failed on an API error is
/// an error because Claude Code says so (its `StopFailure` hook), not
/// because the screen's error row was recognised: here the profile's
/// error rows are overridden so that none matches (as a release drawing
/// its error with a new glyph, 2.1.337's `∷ API Error: 500 …`, looks to a
/// profile that does not know it), and the fake API answers 500. One
/// error card, and the command never "Finished".
#[test]
fn an_api_error_is_one_error_card_though_the_screen_is_not_recognised() {
    use super::serve::{ConsoleServe, cards, finished, new_cards};
    let claude = claude_required();
    let api = FakeApi::start_paced(
        vec![Turn::error(500, "Internal server error", 2)],
        Duration::from_millis(15),
    )
    .expect("fake API starts");
    let (home, env) = agent_home(&api, "shop");
    // One retry: the turn gives up within seconds.
    let env = env.with_max_retries(1);
    let workspace = home.path().join("ws/shop");
    std::fs::create_dir(&workspace).unwrap();
    let install = Command::new(env!("CARGO_BIN_EXE_clawmux"))
        .args(["hooks", "install", "--write", "--dir"])
        .arg(&workspace)
        .arg("--bin")
        .arg(env!("CARGO_BIN_EXE_clawmux"))
        .output()
        .unwrap();
    assert!(install.status.success(), "{install:?}");
    // Project `shop` exists already: the first chat line is its command.
    let mut state = clawmux::store::state::State::default();
    state.projects.insert(
        clawmux::store::ids::project("shop"),
        clawmux::store::state::ProjectRecord {
            workspace: workspace.display().to_string(),
            ..Default::default()
        },
    );
    clawmux::store::StateFile::new(home.path().join("state.json"))
        .save(&state)
        .unwrap();
    let profiles = home.path().join("profiles.toml");
    std::fs::write(
        &profiles,
        "[profiles.claude]\nturn_errors = ['^no agent draws this row$']\n",
    )
    .unwrap();
    let agent = format!(
        "env CLAWMUX_HOME={} {}",
        home.path().display(),
        env.env_command(&claude, &[])
    );
    let lines = format!("profiles_file = {:?}\n", profiles.display().to_string());
    let mut serve = ConsoleServe::start_configured(
        &agent,
        home,
        TmuxServer::new(),
        "claude",
        (120, 40),
        &lines,
    );
    let title = "say hello";
    serve.say("/gsd:use shop");
    serve.say(title);
    let at = serve.wait(0, "== The agent reported an error ==");
    serve.wait(at, "Failed after");
    let out = serve.output();
    let all = cards(&out);
    let errors = new_cards(&all, "== The agent reported an error ==");
    assert_eq!(errors.len(), 1, "{out}");
    assert!(errors[0].contains("API Error: 500"), "{out}");
    assert_eq!(finished(&out, title), 0, "{out}");
    // The error came from the hook: the screen's rows were not recognised.
    let tail = Command::new(env!("CARGO_BIN_EXE_clawmux"))
        .args(["tail", "--json"])
        .env("CLAWMUX_HOME", serve.home.path())
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&tail.stdout);
    assert!(log.contains("\"event\":\"StopFailure\""), "{log}");
}
