//! Claude Code's `Stop` hook as the second signal: with a debounce far too
//! long to fire, the turn still completes when `clawmux hook` reports it.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clawmux::hooks::HookListener;
use clawmux::hooks::token::{HookKey, TOKEN_ENV};
use clawmux::store::StateFile;
use clawmux::store::state::{ProjectRecord, State};

use crate::support::bridge::Shown;
use crate::support::bridge::{Bridge, test_config};
use crate::support::tmux::TmuxServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_hook_completes_the_turn_without_waiting_for_the_debounce() {
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let mut config = test_config(&tmux.socket, home.path());
    config.agent.debounce_ms = 600_000;

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

    let mut b = Bridge::start_with(tmux, home, config).await;
    let mut listener = HookListener::bind(b.home.path()).expect("hook socket");
    let hooks = b.hooks.clone();
    tokio::spawn(async move {
        while let Some(h) = listener.next().await {
            let _ = hooks.send(h).await;
        }
    });

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
