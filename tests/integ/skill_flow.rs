//! The skill's approval flow, run as SKILL.md tells the agent to, against
//! the simulated Claude Code + GSD agent in a real (private) tmux server:
//! a command that stops at a permission prompt, the answer taken from the
//! result's `Answer with:` line, then a Feishu-format result.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use super::skill::{check_command_line, shell_words};
use super::{assert_contains, clawmux, stderr, stdout};
use crate::support::tmux::TmuxServer;

/// `clawmux run --project shop …` with this test's state dir and tmux
/// server, in English.
fn run(home: &Path, args: &[&str]) -> Output {
    run_in("C.UTF-8", home, args)
}

/// [`run`] under the locale `lang` (`LANG`; the ones before it cleared).
fn run_in(lang: &str, home: &Path, args: &[&str]) -> Output {
    let mut all = vec!["run", "--project", "shop", "--agent", "sim"];
    all.extend_from_slice(args);
    clawmux(&all)
        .env("CLAWMUX_HOME", home)
        .env_remove("LC_ALL")
        .env_remove("LC_MESSAGES")
        .env("LANG", lang)
        .output()
        .expect("run clawmux")
}

/// A state directory whose config puts projects and the tmux server in
/// this test's own places.
fn configured() -> (TmuxServer, tempfile::TempDir) {
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let config = format!(
        "workspace_root = \"{}\"\n[tmux]\nsocket = \"{}\"\n",
        home.path().join("projects").display(),
        tmux.socket
    );
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    (tmux, home)
}

#[test]
fn approval_answered_from_the_answer_with_line_then_a_card() {
    let (_tmux, home) = configured();

    let out = run(
        home.path(),
        &["--format", "markdown", "--", "/gsd:plan-phase 2"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert_contains(&text, "[1] Yes");
    // The progress the turn made before the prompt comes along with it.
    assert_contains(&text, "Progress so far: ");
    let answer_line = text
        .lines()
        .find_map(|l| l.strip_prefix("Answer with: clawmux "))
        .unwrap_or_else(|| panic!("no `Answer with:` line in:\n{text}"));
    // The line the agent copies names real flags.
    check_command_line(&shell_words(answer_line));
    let keys = answer_line.rsplit(' ').next().unwrap_or("");
    let first = keys.split('|').next().unwrap_or("");
    assert_eq!(keys.split('|').count(), 3, "{answer_line}");
    // The prompt the answer is for, as the skill passes it.
    let words = shell_words(answer_line);
    let prompt = (words.iter())
        .position(|w| w == "--prompt")
        .and_then(|at| words.get(at + 1))
        .unwrap_or_else(|| panic!("no --prompt in {answer_line}"))
        .clone();

    // Waiting is shown on stderr, one plain line a step off a terminal.
    assert_contains(&stderr(&out), "clawmux: shop: sent, waiting for the agent");

    let out = run(
        home.path(),
        &[
            "--format", "markdown", "--prompt", &prompt, "--answer", first,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let result = stdout(&out);
    assert_contains(&result, "Created 2 plans for phase 2");
    assert_contains(&stderr(&out), "clawmux: progress: ");
    // No closed panel a shell can't open.
    assert!(!result.contains('▸'), "{result}");

    // The event log tells the approval and its answer, as it does the
    // daemon's.
    let tail = |kind: &str| {
        let out = (clawmux(&["tail", "--json", "--kind", kind]))
            .env("CLAWMUX_HOME", home.path())
            .output()
            .expect("run clawmux tail");
        stdout(&out)
    };
    let asked = tail("approval");
    assert_eq!(asked.lines().count(), 1, "{asked}");
    assert_contains(&asked, "\"project\":\"shop\"");
    let answered = tail("approval_answered");
    assert_eq!(answered.lines().count(), 1, "{answered}");
    assert_contains(&answered, "\"by\":\"run\"");

    // Nothing waits for an answer now: bad input, exit 2, one line why.
    let out = run(home.path(), &["--answer", first]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
    assert_contains(&stderr(&out), "clawmux: ");

    let out = run(home.path(), &["--format", "card", "--", "/gsd-progress"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let cards: Value = serde_json::from_str(&stdout(&out)).expect("a JSON array of cards");
    let cards = cards.as_array().expect("an array");
    assert!(!cards.is_empty());
    for card in cards {
        assert_eq!(card["schema"], "2.0", "{card}");
    }
    assert_contains(&cards[0].to_string(), "Project status");
}

#[test]
fn a_bad_project_name_runs_nothing_and_says_why() {
    let home = tempfile::tempdir().unwrap();
    let out = clawmux(&["run", "--project", "My App", "--", "/gsd:progress"])
        .env("CLAWMUX_HOME", home.path())
        .output()
        .expect("run clawmux");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stdout(&out), "");
    assert!(stderr(&out).starts_with("clawmux: "), "{}", stderr(&out));
}

/// A misspelt project is not made (no workspace, session or agent): the
/// nearest known one is named, exit 2; `--new` makes it.
#[test]
fn a_misspelt_project_is_refused_with_the_nearest_name_and_made_only_with_new() {
    let (tmux, home) = configured();
    let out = run(home.path(), &["--", "/gsd:plan-phase 2"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let typo = |extra: &[&str]| {
        let mut all = vec!["run", "--project", "shpo", "--agent", "sim"];
        all.extend_from_slice(extra);
        all.extend_from_slice(&["--", "/gsd:progress"]);
        clawmux(&all)
            .env("CLAWMUX_HOME", home.path())
            .env("LANG", "C.UTF-8")
            .output()
            .expect("run clawmux")
    };
    let session = || {
        std::process::Command::new("tmux")
            .args(["-L", &tmux.socket, "has-session", "-t", "=cm-shpo"])
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let out = typo(&[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_contains(&stderr(&out), "no project shpo; did you mean shop?");
    assert_contains(&stderr(&out), "--new");
    assert!(!stderr(&out).contains("sent"), "{}", stderr(&out));
    assert!(!session(), "a misspelt name started an agent");
    assert!(!home.path().join("projects/shpo").exists());

    // `--lang` is the language of what clawmux says, whatever LANG says.
    let out = typo(&["--lang", "zh_cn"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let out = typo(&["--lang", "fr_fr"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_contains(&stderr(&out), "fr_fr");

    let out = typo(&["--new"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(session());
}

/// `/gsd:status`, `/gsd:screen` and `/gsd:cancel` through `clawmux run`
/// are answered by clawmux (no daemon needed), never typed as prompts.
#[test]
fn status_screen_and_cancel_without_the_daemon() {
    let (tmux, home) = configured();

    // No project yet: nothing is started to look at it.
    let out = run(home.path(), &["--format", "plain", "--", "/gsd:status"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_contains(&stdout(&out), "cm-shop does not exist");
    let exists = std::process::Command::new("tmux")
        .args(["-L", &tmux.socket, "has-session", "-t", "=cm-shop"])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(!exists, "a look started the project");

    let out = run(home.path(), &["--", "/gsd:plan-phase 2"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = run(home.path(), &["--format", "plain", "--", "/gsd:status"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_contains(
        &stdout(&out),
        "waiting for an answer: Do you want to proceed?",
    );
    let out = run(home.path(), &["--format", "plain", "--", "/gsd:screen"]);
    assert_contains(&stdout(&out), "1. Yes");
    assert!(!tmux.capture("=cm-shop:").contains("/gsd:status"));

    let out = run(home.path(), &["--format", "plain", "--", "/gsd:cancel"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_contains(&stdout(&out), "Sent Esc to the agent");
    tmux.wait_for_screen(
        "=cm-shop:",
        "Interrupted",
        std::time::Duration::from_secs(20),
    );
    let out = run(home.path(), &["--format", "plain", "--", "/gsd:status"]);
    assert_contains(&stdout(&out), "idle");
    assert_contains(&stdout(&out), "Interrupted");
}

/// What `clawmux run` says itself for a look or a cancel is in the
/// caller's language; the agent's own text (the question) is as it was.
#[test]
fn status_and_cancel_speak_the_callers_language() {
    let (tmux, home) = configured();
    let zh = |args: &[&str]| run_in("zh_CN.UTF-8", home.path(), args);
    let out = zh(&["--format", "plain", "--", "/gsd:status"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_contains(&stdout(&out), "会话 cm-shop 不存在");
    // `--lang` overrides LANG.
    let out = zh(&["--lang", "en_us", "--format", "plain", "--", "/gsd:status"]);
    assert_contains(&stdout(&out), "cm-shop does not exist");
    let out = zh(&["--", "/gsd:plan-phase 2"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = zh(&["--format", "plain", "--", "/gsd:status"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_contains(&stdout(&out), "等待回答：Do you want to proceed?");
    let out = zh(&["--format", "plain", "--", "/gsd:cancel"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_contains(&stdout(&out), "已向智能体发送 Esc");
    tmux.wait_for_screen(
        "=cm-shop:",
        "Interrupted",
        std::time::Duration::from_secs(20),
    );
    let out = zh(&["--format", "plain", "--", "/gsd:status"]);
    assert_contains(&stdout(&out), "空闲");
}
