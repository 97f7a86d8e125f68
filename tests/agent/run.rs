//! `clawmux run`, the OpenClaw skill's way in, driving the real Claude Code
//! against the fake API, with no `serve`: each run owns the state directory
//! for its time, so what one run leaves (the project, its pane, the prompt
//! it stopped at) is what the next run, and a later `serve`, find.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use super::serve::ConsoleServe;
use crate::support::claude::{agent_home, bash_no_key, claude_required};
use crate::support::scenarios::{BASH_ANSWER, bash_script};
use crate::support::tmux::TmuxServer;
use clawmux::agentcheck::FakeApi;

/// `clawmux run --project shop --format json ARGS` in `home`.
fn run(home: &Path, args: &[&str]) -> (Value, Output) {
    let out = Command::new(env!("CARGO_BIN_EXE_clawmux"))
        .args(["run", "--project", "shop", "--format", "json"])
        .args(args)
        .env("CLAWMUX_HOME", home)
        .env_remove("FEISHU_APP_ID")
        .env_remove("FEISHU_APP_SECRET")
        .env("CI", "true")
        .output()
        .expect("clawmux run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let json = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        let stderr = String::from_utf8_lossy(&out.stderr);
        panic!("not the JSON outcome ({e}):\n{stdout}\n--- stderr\n{stderr}")
    });
    (json, out)
}

/// Claude Code asks to run Bash: the first run stops at its permission
/// prompt with the dialog's own options; the second answers Yes from the
/// prompt the first left in the state, and gets the model's answer as the
/// result; the event log has the approval and its answer by `run`.
#[test]
fn a_run_stops_at_the_real_prompt_and_the_next_run_answers_it() {
    let claude = claude_required();
    let api = FakeApi::start_paced(bash_script(), std::time::Duration::from_millis(15)).unwrap();
    let (home, env) = agent_home(&api, "shop");
    let tmux = TmuxServer::new();
    let config = format!(
        "workspace_root = {ws:?}\n[tmux]\nsocket = {socket:?}\n\
         [agent]\ncommand = {agent:?}\nprofile = \"claude\"\n",
        ws = home.path().join("ws").display().to_string(),
        socket = tmux.socket,
        agent = env.env_command(&claude, &[]),
    );
    std::fs::write(home.path().join("config.toml"), config).unwrap();

    let (asked, out) = run(home.path(), &["--", "make a marker file"]);
    assert_eq!(out.status.code(), Some(0), "{asked:#}");
    assert_eq!(asked["status"], "approval", "{asked:#}");
    let approval = &asked["approval"];
    assert_eq!(approval["question"], "Do you want to proceed?", "{asked:#}");
    assert_eq!(approval["session"], "cm-shop", "{asked:#}");
    let keys: Vec<&str> = (approval["options"].as_array().into_iter().flatten())
        .filter_map(|o| o["key"].as_str())
        .collect();
    assert_eq!(keys.first(), Some(&"1"), "{asked:#}");
    assert_eq!(keys.last(), Some(&bash_no_key()), "{asked:#}");
    assert!(
        !home.path().join("ws/shop/made-by-bash.txt").exists(),
        "ran before it was approved"
    );

    let (done, out) = run(home.path(), &["--answer", "1"]);
    assert_eq!(out.status.code(), Some(0), "{done:#}");
    assert_eq!(done["status"], "completed", "{done:#}");
    let output = done["output"].as_str().unwrap_or_default();
    assert!(output.contains(BASH_ANSWER), "{done:#}");
    assert!(home.path().join("ws/shop/made-by-bash.txt").exists());
    assert_eq!(
        api.scripted_requests().len(),
        2,
        "one turn, one tool result"
    );

    // Nothing waits now: an answer is bad input, and says why.
    let again = Command::new(env!("CARGO_BIN_EXE_clawmux"))
        .args(["run", "--project", "shop", "--answer", "1"])
        .env("CLAWMUX_HOME", home.path())
        .output()
        .expect("clawmux run");
    assert_eq!(again.status.code(), Some(2), "{again:?}");

    let tail = |kind: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_clawmux"))
            .args(["tail", "--json", "--kind", kind])
            .env("CLAWMUX_HOME", home.path())
            .output()
            .expect("clawmux tail");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let approvals = tail("approval");
    assert_eq!(approvals.lines().count(), 1, "{approvals}");
    let answered = tail("approval_answered");
    assert_eq!(answered.lines().count(), 1, "{answered}");
    assert!(answered.contains("\"by\":\"run\""), "{answered}");
}

/// The same through a running `serve`: the run is served on its socket,
/// the prompt it stops at is in serve's `/gsd:inbox`, no card of the run's
/// is printed on serve's console, and `--answer` ends the turn.
#[test]
fn a_run_through_a_running_serve_shares_its_prompt() {
    let claude = claude_required();
    let api = FakeApi::start_paced(bash_script(), std::time::Duration::from_millis(15)).unwrap();
    let (home, env) = agent_home(&api, "shop");
    let agent = env.env_command(&claude, &[]);
    let mut serve = ConsoleServe::start_with_profile(&agent, home, TmuxServer::new(), "claude");
    let home = serve.home.path().to_path_buf();

    let (asked, out) = run(&home, &["--", "make a marker file"]);
    assert_eq!(out.status.code(), Some(0), "{asked:#}");
    assert_eq!(asked["status"], "approval", "{asked:#}");
    serve.say("/gsd:inbox");
    let at = serve.wait(0, "Do you want to proceed?");
    serve.wait(at, "└─");

    let (done, out) = run(&home, &["--answer", "1"]);
    assert_eq!(out.status.code(), Some(0), "{done:#}");
    assert_eq!(done["status"], "completed", "{done:#}");
    assert!(
        done["output"]
            .as_str()
            .unwrap_or_default()
            .contains(BASH_ANSWER)
    );
    assert!(home.join("ws/shop/made-by-bash.txt").exists());
    let printed = serve.output();
    assert!(
        !printed.contains("== Approval needed ==") && !printed.contains(BASH_ANSWER),
        "the run's cards went to serve's console:\n{printed}"
    );
}
