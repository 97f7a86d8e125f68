//! Claude Code's `Stop` hook as the second signal: with a debounce far too
//! long to fire, the turn still completes when `clawmux hook` reports it.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clawmux::bridge::config::Config;
use clawmux::hooks::HookListener;
use clawmux::hooks::token::{HookKey, TOKEN_ENV};
use clawmux::store::StateFile;
use clawmux::store::state::{ProjectRecord, State};

use crate::support::bridge::Shown;
use crate::support::bridge::{Bridge, is_send, test_config, until};
use crate::support::tmux::TmuxServer;

/// A completion debounce far too long to fire: only a hook ends a turn.
const NEVER: u64 = 600_000;

/// A daemon whose project `demo` has its agent (the sim agent) running
/// already, started as an earlier run of the daemon would have (with the
/// project's hook token), its completion debounce `debounce_ms`. Its hook
/// listener is bound. The agent's pane id and its workspace.
async fn demo_with_hooks(debounce_ms: u64) -> (Bridge, String, String) {
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let mut config = test_config(&tmux.socket, home.path());
    config.agent.debounce_ms = debounce_ms;

    // An existing project whose agent already runs (no start-up wait).
    let workspace = home.path().join("ws/demo");
    std::fs::create_dir_all(&workspace).unwrap();
    let mut state = State::default();
    let record = ProjectRecord {
        workspace: workspace.display().to_string(),
        created_ms: 0,
        last_command: None,
        ..Default::default()
    };
    state
        .projects
        .insert(clawmux::store::ids::project("demo"), record);
    state.chats.insert(
        clawmux::store::ids::chat("oc_1"),
        clawmux::store::ids::project("demo"),
    );
    StateFile::new(home.path().join("state.json"))
        .save(&state)
        .unwrap();
    let sim = format!("{} sim-agent", env!("CARGO_BIN_EXE_clawmux"));
    let ws = workspace.display().to_string();
    // Made by an earlier run of the daemon: with the project's hook token.
    let env = format!(
        "{TOKEN_ENV}={}",
        HookKey::load_or_create(home.path()).token("demo")
    );
    tmux.ok(&[
        "new-session",
        "-d",
        "-s",
        "cm-demo",
        "-e",
        &env,
        "-c",
        &ws,
        "-x",
        "120",
        "-y",
        "40",
        &sim,
    ]);
    tmux.wait_for_screen("=cm-demo:", "? for shortcuts", Duration::from_secs(10));
    let pane = tmux
        .ok(&["display-message", "-p", "-t", "=cm-demo:", "#{pane_id}"])
        .trim()
        .to_string();

    let b = Bridge::start_with(tmux, home, config).await;
    let mut listener = HookListener::bind(b.home.path()).expect("hook socket");
    let hooks = b.hooks.clone();
    tokio::spawn(async move {
        while let Some(h) = listener.next().await {
            let _ = hooks.send(h).await;
        }
    });
    (b, pane, ws)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_hook_completes_the_turn_without_waiting_for_the_debounce() {
    let (mut b, pane, ws) = demo_with_hooks(NEVER).await;

    b.say("oc_1", "ou_alice", "hello hooks").await;
    b.card("started", |e| {
        e.text().contains("demo: hello hooks") && e.text().contains("Running")
    })
    .await;
    b.tmux.wait_for_screen(
        "=cm-demo:",
        "You said: hello hooks",
        Duration::from_secs(10),
    );
    b.tmux
        .wait_for_screen("=cm-demo:", "? for shortcuts", Duration::from_secs(10));

    // What Claude Code runs at the end of the turn, in the agent's pane.
    let payload = format!(
        r#"{{"session_id":"s1","cwd":"{ws}","hook_event_name":"Stop","stop_hook_active":false}}"#
    );
    // The agent's pane has its project's hook token.
    let shown = b
        .tmux
        .ok(&["show-environment", "-t", "=cm-demo", TOKEN_ENV]);
    let token = shown
        .trim()
        .strip_prefix(&format!("{TOKEN_ENV}="))
        .unwrap_or_else(|| panic!("no token in the pane's environment: {shown:?}"))
        .to_string();
    // The same hook from anything else that claims the pane is not taken.
    let forged = Command::new(env!("CARGO_BIN_EXE_clawmux"))
        .arg("hook")
        .env("CLAWMUX_HOME", b.home.path())
        .env("TMUX_PANE", &pane)
        .env_remove(TOKEN_ENV)
        .stdin(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin.take().unwrap().write_all(payload.as_bytes())?;
            c.wait()
        })
        .unwrap();
    assert!(forged.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    while !b.events().iter().any(|r| r.kind == "hook_ignored") {
        assert!(Instant::now() < deadline, "the forged hook was not refused");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let sent = Instant::now();
    let mut hook = Command::new(env!("CARGO_BIN_EXE_clawmux"))
        .arg("hook")
        .env("CLAWMUX_HOME", b.home.path())
        .env("TMUX_PANE", &pane)
        .env(TOKEN_ENV, &token)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    hook.stdin
        .take()
        .unwrap()
        .write_all(payload.as_bytes())
        .unwrap();
    let out = hook.wait_with_output().unwrap();
    assert!(
        out.status.success() && out.stdout.is_empty(),
        "a hook never blocks or talks to Claude Code"
    );

    let result = b
        .card("the result", |e| {
            e.text().contains("You said: hello hooks") && e.text().contains("```")
        })
        .await;
    println!("Stop hook to result card: {:?}", sent.elapsed());
    assert!(result.text().contains("demo: hello hooks"));
    assert!(
        b.events()
            .iter()
            .any(|r| r.kind == "hook" && r.field("event") == Some("Stop"))
    );

    // A hook from a pane clawmux does not manage changes nothing.
    let stray = Command::new(env!("CARGO_BIN_EXE_clawmux"))
        .arg("hook")
        .env("CLAWMUX_HOME", b.home.path())
        .env("TMUX_PANE", "%999")
        .stdin(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin.take().unwrap().write_all(payload.as_bytes())?;
            c.wait()
        })
        .unwrap();
    assert!(stray.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_clawmux_makes_carries_its_projects_hook_token() {
    let mut b = Bridge::start().await;
    b.say("oc_1", "ou_alice", "/gsd:new-project shop").await;
    b.card_with("You said: /gsd:new-project").await;
    let shown = b
        .tmux
        .ok(&["show-environment", "-t", "=cm-shop", TOKEN_ENV]);
    let token = HookKey::load_or_create(b.home.path()).token("shop");
    assert_eq!(shown.trim(), format!("{TOKEN_ENV}={token}"));
}

/// The project's hook token, as its agent's pane has it.
fn pane_token(tmux: &TmuxServer, session: &str) -> String {
    let shown = tmux.ok(&["show-environment", "-t", &format!("={session}"), TOKEN_ENV]);
    shown
        .trim()
        .strip_prefix(&format!("{TOKEN_ENV}="))
        .unwrap_or_else(|| panic!("no token in the pane's environment: {shown:?}"))
        .to_string()
}

/// Runs `clawmux hook` as the agent in `pane` would, `payload` on its
/// stdin, reporting to the daemon whose home is `home`.
fn run_hook(home: &Path, pane: &str, token: &str, payload: &str) {
    let ran = Command::new(env!("CARGO_BIN_EXE_clawmux"))
        .arg("hook")
        .env("CLAWMUX_HOME", home)
        .env("TMUX_PANE", pane)
        .env(TOKEN_ENV, token)
        .stdin(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin.take().unwrap().write_all(payload.as_bytes())?;
            c.wait()
        })
        .unwrap();
    assert!(ran.success());
}

/// What Claude Code 2.1.332 said in its `StopFailure` after a 500.
const API_500: &str = "API Error: 500 Internal server error. This is a server-side issue, usually temporary — try again in a moment.";

fn stop_failure(ws: &str) -> String {
    serde_json::json!({
        "session_id": "s1",
        "cwd": ws,
        "hook_event_name": "StopFailure",
        "error": "server_error",
        "last_assistant_message": API_500,
    })
    .to_string()
}

/// New cards saying the agent reported an error.
fn error_cards(b: &Bridge) -> usize {
    (b.seen.iter())
        .filter(|e| is_send(e) && e.text().contains("The agent reported an error"))
        .count()
}

/// A `StopFailure` hook ends the command as an error though the screen
/// showed none (a release whose error glyph the profile does not know
/// draws an answer-like row): one error card, the command failed, no
/// result card.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_failure_ends_the_command_as_an_error_the_screen_did_not_show() {
    let (mut b, pane, ws) = demo_with_hooks(NEVER).await;
    b.say("oc_1", "ou_alice", "hello hooks").await;
    b.card("started", |e| {
        e.text().contains("demo: hello hooks") && e.text().contains("Running")
    })
    .await;
    b.tmux.wait_for_screen(
        "=cm-demo:",
        "You said: hello hooks",
        Duration::from_secs(10),
    );
    let token = pane_token(&b.tmux, "cm-demo");
    run_hook(b.home.path(), &pane, &token, &stop_failure(&ws));
    let error = b.sent_with("The agent reported an error").await;
    assert!(error.text().contains("API Error: 500"), "{}", error.text());
    b.card_with("Failed after").await;
    assert_eq!(error_cards(&b), 1);
    let results: Vec<String> = (b.seen.iter())
        .filter(|e| is_send(e) && e.text().contains("You said: hello hooks"))
        .map(|e| e.text())
        .collect();
    assert!(results.is_empty(), "a result card: {results:?}");
    assert!(
        !b.seen.iter().any(|e| e.text().contains("Finished")),
        "the command finished"
    );
}

/// The screen shows the error too (the sim agent draws Claude Code's
/// `● API Error: 500 …`, which the profile knows) and the `StopFailure`
/// hook comes as the screen is judged: one error card whichever comes
/// first, the screen's row and the hook's words being the same error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_error_the_screen_shows_too_is_reported_once() {
    let (mut b, pane, ws) = demo_with_hooks(Config::default().agent.debounce_ms).await;
    let token = pane_token(&b.tmux, "cm-demo");
    b.say("oc_1", "ou_alice", "please fail").await;
    b.tmux
        .wait_for_screen("=cm-demo:", "API Error: 500", Duration::from_secs(10));
    run_hook(b.home.path(), &pane, &token, &stop_failure(&ws));
    b.card_with("Failed after").await;
    // The next command: once its result is in, the hook was taken before it.
    b.say("oc_1", "ou_alice", "after the error").await;
    b.card("the next result", |e| {
        e.text().contains("You said: after the error") && e.text().contains("```")
    })
    .await;
    assert!(
        (b.events().iter()).any(|r| r.kind == "hook" && r.field("event") == Some("StopFailure"))
    );
    assert_eq!(error_cards(&b), 1);
}

/// `serve --console` in `home`, its agents' HOME there too (where their
/// transcripts are allowed): stdin held open, stdout collected; killed on
/// drop.
struct ConsoleServe {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    out: std::sync::Arc<std::sync::Mutex<String>>,
}

impl ConsoleServe {
    fn start(home: &Path) -> ConsoleServe {
        use std::io::{BufRead, BufReader};
        let log = std::fs::File::create(home.join("serve.log")).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_clawmux"))
            .args(["serve", "--console"])
            .env("CLAWMUX_HOME", home)
            .env("HOME", home)
            .env_remove("FEISHU_APP_ID")
            .env_remove("CLAUDE_CONFIG_DIR")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("clawmux runs");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let out = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let sink = out.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let mut out = sink.lock().unwrap();
                out.push_str(&line);
                out.push('\n');
            }
        });
        ConsoleServe { child, stdin, out }
    }

    fn say(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn printed(&self) -> String {
        self.out.lock().unwrap().clone()
    }

    /// Waits until `needle` is printed `times` times.
    async fn wait_printed(&self, needle: &str, times: usize) {
        let what = format!("{needle:?} printed {times} time(s):\n{}", self.printed());
        until(|| self.printed().matches(needle).count() >= times, &what).await;
    }
}

impl Drop for ConsoleServe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `Stop` hook whose `transcript_path` is a FIFO named `*.jsonl` (which
/// any program the agent runs can make, with the pane's hook token), in
/// the project's own folder of its agent's config directory or in its
/// workspace: the project's actor refuses it without opening it to wait
/// for a writer, and goes on: `/gsd:screen` is answered and the next
/// command is typed and reported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifo_named_as_the_transcript_never_wedges_its_project() {
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    super::crash::write_config(home, &tmux.socket);
    let mut serve = ConsoleServe::start(home);
    serve.say("/gsd:new-project demo");
    serve.wait_printed("You said: /gsd:new-project", 1).await;

    let ws = home.join("ws/demo");
    // Where Claude Code keeps the workspace's sessions: its path with
    // every character but a letter or digit made `-`.
    let encoded = (ws.display().to_string()).replace(|c: char| !c.is_ascii_alphanumeric(), "-");
    let folder = home.join(".claude/projects").join(encoded);
    std::fs::create_dir_all(&folder).unwrap();
    let fifos = [folder.join("session.jsonl"), ws.join("planted.jsonl")];
    for fifo in &fifos {
        let made = Command::new("mkfifo").arg(fifo).status().unwrap();
        assert!(made.success());
    }
    let pane = tmux
        .ok(&["display-message", "-p", "-t", "=cm-demo:", "#{pane_id}"])
        .trim()
        .to_string();
    let token = pane_token(&tmux, "cm-demo");
    for fifo in &fifos {
        let stop = serde_json::json!({
            "session_id": "s1",
            "cwd": ws,
            "hook_event_name": "Stop",
            "transcript_path": fifo,
            "last_assistant_message": "All done.",
        });
        run_hook(home, &pane, &token, &stop.to_string());
    }
    let refused = || {
        let log = std::fs::read_to_string(home.join("events.jsonl")).unwrap_or_default();
        log.lines().filter(|l| l.contains("hook_ignored")).count()
    };
    until(|| refused() >= 2, "both transcripts refused").await;

    serve.say("/gsd:screen");
    serve.wait_printed("Screen of demo", 1).await;
    serve.say("after the fifo");
    serve.wait_printed("You said: after the fifo", 1).await;
}

/// A `Stop` hook (not `StopFailure`: a release that sends only it) whose
/// transcript ends the turn with Claude Code's API-error entry, as 2.1.332
/// writes it: the command ends as one error, the entry's text never taken
/// for the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transcript_ending_on_an_api_error_ends_the_command_as_an_error() {
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    super::crash::write_config(home, &tmux.socket);
    // Only hooks end turns.
    let config = std::fs::read_to_string(home.join("config.toml")).unwrap();
    let config = config.replace(
        "command = \"sim\"\n",
        &format!("command = \"sim\"\ndebounce_ms = {NEVER}\n"),
    );
    std::fs::write(home.join("config.toml"), config).unwrap();
    let mut serve = ConsoleServe::start(home);
    serve.say("/gsd:new-project demo");
    serve.wait_printed("Running…", 1).await;
    tmux.wait_for_screen(
        "=cm-demo:",
        "You said: /gsd:new-project",
        Duration::from_secs(30),
    );
    let ws = home.join("ws/demo");
    let pane = tmux
        .ok(&["display-message", "-p", "-t", "=cm-demo:", "#{pane_id}"])
        .trim()
        .to_string();
    let token = pane_token(&tmux, "cm-demo");
    let stop = |transcript: Option<&Path>| {
        let mut stop =
            serde_json::json!({"session_id": "s1", "cwd": ws, "hook_event_name": "Stop"});
        if let Some(path) = transcript {
            stop["transcript_path"] = serde_json::json!(path);
            stop["last_assistant_message"] = serde_json::json!(API_500);
        }
        stop.to_string()
    };
    run_hook(home, &pane, &token, &stop(None));
    serve.wait_printed("Finished in", 1).await;

    serve.say("say hello");
    tmux.wait_for_screen("=cm-demo:", "You said: say hello", Duration::from_secs(30));
    // Where Claude Code keeps the workspace's sessions (see the FIFO test).
    let encoded = (ws.display().to_string()).replace(|c: char| !c.is_ascii_alphanumeric(), "-");
    let folder = home.join(".claude/projects").join(encoded);
    std::fs::create_dir_all(&folder).unwrap();
    let session = folder.join("s1.jsonl");
    let lines = [
        serde_json::json!({"type": "user", "sessionId": "s1",
            "message": {"role": "user", "content": "say hello"}}),
        serde_json::json!({"type": "assistant", "sessionId": "s1", "isSidechain": false,
            "message": {"id": "e1", "model": "<synthetic>", "role": "assistant",
                "content": [{"type": "text", "text": API_500}]},
            "error": "server_error", "isApiErrorMessage": true, "apiErrorStatus": 500}),
    ];
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&session, body).unwrap();
    run_hook(home, &pane, &token, &stop(Some(&session)));
    serve.wait_printed("Failed after", 1).await;
    let out = serve.printed();
    assert_eq!(
        out.matches("== The agent reported an error ==").count(),
        1,
        "{out}"
    );
    assert_eq!(out.matches("Finished in").count(), 1, "{out}");
}
