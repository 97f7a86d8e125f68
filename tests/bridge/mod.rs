//! The bridge end to end: real tmux, the simulated agent, the daemon's
//! router, approvals, progress, policy, state and event log.

mod access;
mod crash;
mod faults;
mod feishu_e2e;
mod files;
mod hooks;
mod inbox;
mod keys;
mod latency;
mod outage;
mod pairing;
mod planning;
mod quickstart;
mod receipts;
mod refusals;
mod screen;
mod soak;
mod stall;
mod streaming;
mod typing_crash;
mod version_watch;

use std::time::Duration;

use clawmux::bridge::channels::chat::ToastLevel;
use clawmux::bridge::panes::transcript::GAP_LINE;
use clawmux::i18n::Lang;
use clawmux::store::state::{ChatTarget, OutboxOp};
use serde_json::json;

use crate::support::bridge::Shown;
use crate::support::bridge::{Bridge, button_value, is_send};
use crate::support::tmux::TmuxServer;

fn target(e: &clawmux::store::state::OutboxEntry) -> Option<&ChatTarget> {
    match &e.op {
        OutboxOp::Send { target, .. } | OutboxOp::File { target, .. } => Some(target),
        OutboxOp::Patch { .. } | OutboxOp::React { .. } => None,
    }
}

/// Creates project `name` from chat `chat` and waits for its first turn.
async fn new_project(b: &mut Bridge, chat: &str, user: &str, name: &str) {
    b.say(chat, user, &format!("/gsd:new-project {name}")).await;
    b.card(&format!("{name} ready"), |e| {
        e.text().contains(&format!("Created **{name}**"))
    })
    .await;
    b.card(&format!("{name} first result"), |e| {
        is_send(e)
            && e.text().contains("You said: /gsd:new-project")
            && e.text().contains(&format!("{name}: /gsd:new-project"))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn command_progress_approval_click_result() {
    let mut b = Bridge::start().await;
    new_project(&mut b, "oc_1", "ou_alice", "demo").await;
    b.say("oc_1", "ou_alice", "/gsd:plan-phase 2").await;

    let progress = b
        .card("a progress update", |e| {
            matches!(e.op, OutboxOp::Patch { .. }) && e.text().contains("PLANNING PHASE 2")
        })
        .await;
    assert!(
        progress.text().contains("demo: /gsd:plan-phase 2"),
        "{}",
        progress.text()
    );
    let approval = b.card_with("Approval needed").await;
    assert!(
        approval.text().contains("Do you want to proceed?"),
        "{}",
        approval.text()
    );
    for label in ["[1] Yes", "[3] No"] {
        assert!(
            approval.text().contains(label),
            "{label} in {}",
            approval.text()
        );
    }
    let yes = button_value(&approval, "Yes");

    // Someone allowed to talk but not to approve: refused, nothing typed.
    let refused = b.click("oc_1", "ou_bob", yes.clone()).await;
    assert_eq!(
        refused.toast.as_ref().map(|t| t.0),
        Some(ToastLevel::Error),
        "{refused:?}"
    );
    assert!(
        b.tmux
            .capture("=cm-demo:")
            .contains("Do you want to proceed?")
    );

    let answered = b.click("oc_1", "ou_alice", yes.clone()).await;
    assert_eq!(
        answered
            .toast
            .map(|(l, t)| (l, t.get(Lang::En).to_string())),
        Some((ToastLevel::Success, "Sending: Yes".into()))
    );
    b.card("the resolved approval", |e| {
        e.text().contains("chose **Yes**")
    })
    .await;
    let again = b.click("oc_1", "ou_alice", yes).await;
    assert_eq!(
        again.toast.as_ref().map(|t| t.0),
        Some(ToastLevel::Warning),
        "single use: {again:?}"
    );

    let result = b.sent_with("Plans verified [3/3]").await;
    assert!(
        result.text().contains("Ran make build-check-phase-2: ok"),
        "{}",
        result.text()
    );
    assert_eq!(
        target(&result),
        Some(&ChatTarget::Chat {
            id: clawmux::store::ids::chat("oc_1")
        })
    );

    let kinds: Vec<String> = b.events().into_iter().map(|r| r.kind).collect();
    for kind in [
        "command",
        "approval",
        "denied",
        "approval_answered",
        "completed",
        "card",
    ] {
        assert!(kinds.iter().any(|k| k == kind), "{kind} logged: {kinds:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_answered_in_the_terminal_after_a_restart_closes_its_card() {
    let mut b = Bridge::start().await;
    new_project(&mut b, "oc_1", "ou_alice", "demo").await;
    b.say("oc_1", "ou_alice", "/gsd:plan-phase 4").await;
    b.card_with("Approval needed").await;
    b.restart().await;
    // The restarted actor finds the prompt again (a new id for it), then
    // someone at the terminal answers it.
    let found_again = || b.events().iter().any(|r| r.kind == "approval_found_again");
    crate::support::bridge::until(found_again, "the restarted daemon found the prompt again").await;
    assert!(
        b.tmux
            .run(&["send-keys", "-t", "=cm-demo:", "1"])
            .status
            .success()
    );
    let gone = b
        .card("the card closed", |e| {
            matches!(e.op, OutboxOp::Patch { .. }) && e.text().contains("Answered in the terminal")
        })
        .await;
    assert!(
        gone.text().contains("Approval no longer pending"),
        "{}",
        gone.text()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_answered_at_the_desk_while_clawmux_was_down_is_closed_at_start() {
    let mut b = Bridge::start().await;
    new_project(&mut b, "oc_1", "ou_alice", "demo").await;
    b.say("oc_1", "ou_alice", "/gsd:plan-phase 4").await;
    let first = b.card_with("Approval needed").await;
    b.stop().await;
    b.tmux.ok(&["send-keys", "-t", "=cm-demo:", "1"]);
    let ran = || {
        b.tmux
            .capture("=cm-demo:")
            .contains("Created 2 plans for phase 4")
    };
    crate::support::bridge::until(ran, "the answer at the desk ran the command").await;
    b.resume().await;
    b.card("the first card closed", |e| {
        matches!(e.op, OutboxOp::Patch { .. })
            && e.op.handle() == first.op.handle()
            && e.text().contains("Approval no longer pending")
    })
    .await;
    let pending = || {
        let state = crate::support::state::read(b.home.path());
        state["approvals"].as_object().map_or(0, |a| a.len())
    };
    crate::support::bridge::until(|| pending() == 0, "no approval left pending").await;
    // The same prompt asked again is a new approval, with its own card.
    b.card("the resumed command finished", |e| {
        e.text().contains("demo: /gsd:plan-phase 4") && e.text().contains("**Finished")
    })
    .await;
    b.say("oc_1", "ou_alice", "/gsd:plan-phase 4").await;
    b.card("a card for the same prompt asked again", |e| {
        is_send(e) && e.text().contains("Approval needed") && e.uuid != first.uuid
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approval_survives_a_daemon_restart() {
    let mut b = Bridge::start().await;
    new_project(&mut b, "oc_1", "ou_alice", "demo").await;
    b.say("oc_1", "ou_alice", "/gsd:plan-phase 3").await;
    let approval = b.card_with("Approval needed").await;
    let yes = button_value(&approval, "Yes");
    // The command's deadline as the state file on disk has it.
    let deadline = |b: &Bridge| {
        let state = crate::support::state::read(b.home.path());
        let jobs = state["jobs"].as_array().cloned().unwrap_or_default();
        let job = jobs.iter().find(|j| j["text"] == "/gsd:plan-phase 3")?;
        job["deadline_ms"].as_u64()
    };
    let before = deadline(&b);
    assert!(
        before.is_some(),
        "a started command has its deadline on disk"
    );

    b.restart().await;
    crate::support::bridge::until(
        || b.events().iter().any(|e| e.kind == "resumed"),
        "the command resumed",
    )
    .await;
    assert_eq!(
        deadline(&b),
        before,
        "a restart does not restart the timeout"
    );
    let answered = b.click("oc_1", "ou_alice", yes).await;
    assert_eq!(
        answered
            .toast
            .map(|(l, t)| (l, t.get(Lang::En).to_string())),
        Some((ToastLevel::Success, "Sending: Yes".into()))
    );
    b.card("the resolved approval", |e| {
        e.text().contains("chose **Yes**")
    })
    .await;
    b.card("the rest of the turn", |e| {
        is_send(e) && e.text().contains("Created 2 plans for phase 3")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_queued_before_a_restart_runs_after_it_and_is_announced_once() {
    let mut b = Bridge::start().await;
    new_project(&mut b, "oc_1", "ou_alice", "demo").await;
    b.say("oc_1", "ou_alice", "/gsd:plan-phase 3").await;
    let approval = b.card_with("Approval needed").await;
    b.say("oc_1", "ou_alice", "waiting its turn").await;
    b.card_with("number 1 in the queue").await;

    // Resumed, the command queues again behind the adopted one: its chat
    // was told already, so no second "Queued" card.
    b.restart().await;
    b.click("oc_1", "ou_alice", button_value(&approval, "Yes"))
        .await;
    b.card("the queued command's result", |e| {
        is_send(e) && e.text().contains("You said: waiting its turn")
    })
    .await;
    let queued = b.seen.iter().filter(|e| e.text().contains("in the queue"));
    assert_eq!(queued.count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tmux_server_killed_mid_command_is_recovered_and_retried_once() {
    let mut b = Bridge::start().await;
    new_project(&mut b, "oc_1", "ou_alice", "demo").await;
    b.say("oc_1", "ou_alice", "/gsd:plan-phase 4").await;
    let first = b.card_with("Approval needed").await;
    b.tmux.run(&["kill-server"]);

    b.card_with("Session lost").await;
    // The old prompt is gone with its server: its card says so.
    b.card("the stale approval closed", |e| {
        e.text().contains("Approval no longer pending")
    })
    .await;
    // The agent got the context back, then the command again: a new prompt.
    let second = b
        .card("a second approval", |e| {
            e.text().contains("Approval needed") && e.uuid != first.uuid
        })
        .await;
    assert!(
        b.tmux
            .capture("=cm-demo:")
            .contains("Do you want to proceed?")
    );
    let typed = b
        .tmux
        .ok(&["capture-pane", "-p", "-S", "-", "-t", "=cm-demo:"]);
    assert!(
        typed.contains("You said: ") && typed.contains("demo"),
        "recovery prompt typed:\n{typed}"
    );
    let yes = button_value(&second, "Yes");
    assert_eq!(
        b.click("oc_1", "ou_alice", yes).await.toast.map(|t| t.0),
        Some(ToastLevel::Success)
    );
    b.card("the result after recovery", |e| {
        is_send(e) && e.text().contains("Created 2 plans for phase 4")
    })
    .await;
    assert!(b.events().iter().any(|r| r.kind == "session_lost"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn denied_sender_gets_one_polite_reply_and_is_logged() {
    let mut b = Bridge::start().await;
    b.say("oc_x", "ou_mallory", "/gsd:new-project evil").await;
    b.say("oc_x", "ou_mallory", "/gsd:help").await;
    b.card_with("not allowed to use this bot").await;
    // Let the daemon handle the second message, then check nothing more came.
    b.say("oc_1", "ou_alice", "/gsd:help").await;
    b.card_with("clawmux help").await;
    let replies = b
        .seen
        .iter()
        .filter(|e| e.text().contains("not allowed"))
        .count();
    assert_eq!(replies, 1);
    let denied = b
        .events()
        .into_iter()
        .filter(|r| r.kind == "denied")
        .count();
    assert_eq!(denied, 2);
    assert!(
        !b.home.path().join("ws/evil").exists(),
        "nothing was created"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_callbacks_change_nothing() {
    let mut b = Bridge::start().await;
    new_project(&mut b, "oc_1", "ou_alice", "demo").await;
    b.say("oc_1", "ou_alice", "/gsd:plan-phase 5").await;
    let approval = b.card_with("Approval needed").await;
    let mut forged = button_value(&approval, "Yes");

    forged["approval_id"] = json!("not-a-real-approval");
    let a = b.click("oc_1", "ou_alice", forged.clone()).await;
    assert_eq!(a.toast.map(|t| t.0), Some(ToastLevel::Warning));

    let mut other = button_value(&approval, "Yes");
    other["project"] = json!("other");
    let a = b.click("oc_1", "ou_alice", other).await;
    assert_eq!(a.toast.map(|t| t.0), Some(ToastLevel::Error));

    let mut bad_key = button_value(&approval, "Yes");
    bad_key["option"] = json!("C-c");
    let a = b.click("oc_1", "ou_alice", bad_key).await;
    assert_eq!(a.toast.map(|t| t.0), Some(ToastLevel::Error));

    let a = b
        .click("oc_1", "ou_alice", json!({"action": "rm -rf"}))
        .await;
    assert_eq!(a.toast.map(|t| t.0), Some(ToastLevel::Error));

    // The prompt is still waiting, untouched.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        b.tmux
            .capture("=cm-demo:")
            .contains("Do you want to proceed?")
    );
    let yes = button_value(&approval, "Yes");
    assert_eq!(
        b.click("oc_1", "ou_alice", yes).await.toast.map(|t| t.0),
        Some(ToastLevel::Success)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_chats_drive_two_projects_at_once() {
    let mut b = Bridge::start().await;
    new_project(&mut b, "oc_1", "ou_alice", "one").await;
    new_project(&mut b, "oc_2", "ou_bob", "two").await;
    b.say("oc_1", "ou_alice", "hello from one").await;
    b.say("oc_2", "ou_bob", "hello from two").await;
    let r1 = b
        .card("one's result", |e| {
            is_send(e) && e.text().contains("You said: hello from one")
        })
        .await;
    let r2 = b
        .card("two's result", |e| {
            is_send(e) && e.text().contains("You said: hello from two")
        })
        .await;
    assert_eq!(
        target(&r1),
        Some(&ChatTarget::Chat {
            id: clawmux::store::ids::chat("oc_1")
        })
    );
    assert_eq!(
        target(&r2),
        Some(&ChatTarget::Chat {
            id: clawmux::store::ids::chat("oc_2")
        })
    );
    assert!(!r1.text().contains("hello from two") && !r2.text().contains("hello from one"));

    // One control client watches both: it is attached to the watch
    // session, which holds both agent windows besides its own.
    let clients = (b.tmux).ok(&[
        "list-clients",
        "-F",
        "#{client_control_mode} #{session_name}",
    ]);
    assert_eq!(clients.trim(), "1 clawmux-watch");
    let format = "#{window_linked_sessions_list}";
    let watched = (b.tmux).ok(&["list-windows", "-t", "=clawmux-watch", "-F", format]);
    let mut watched: Vec<&str> = watched.lines().collect();
    watched.sort();
    assert_eq!(
        watched,
        [
            "clawmux-watch",
            "cm-one,clawmux-watch",
            "cm-two,clawmux-watch"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_chat_text_arrives_literally() {
    let mut b = Bridge::start().await;
    new_project(&mut b, "oc_1", "ou_alice", "demo").await;
    let hostile = r#"C-c Enter ; kill-server $(touch /tmp/pwned) #{pane_id} '"\ %0 ~ `id` Escape"#;
    b.say("oc_1", "ou_alice", hostile).await;
    let result = b
        .card("the echo", |e| {
            is_send(e) && e.text().contains("You said: C-c")
        })
        .await;
    assert!(
        result.text().contains(&format!("You said: {hostile}")),
        "{}",
        result.text()
    );
    assert!(!std::path::Path::new("/tmp/pwned").exists());
    assert!(
        b.tmux
            .run(&["has-session", "-t", "=cm-demo:"])
            .status
            .success(),
        "server alive"
    );

    // Control characters are refused before reaching tmux.
    b.say("oc_1", "ou_alice", "bad\u{1b}[2Jtext").await;
    b.card_with("control character").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_commands_bad_names_and_queueing() {
    let mut b = Bridge::start().await;
    // Not a command name: clawmux suggests its nearest control. (A
    // well-formed unknown name goes to the agent, which answers for its GSD.)
    b.say("oc_1", "ou_alice", "/gsd:Statu").await;
    b.card_with("Did you mean `/gsd:status`").await;
    b.say("oc_1", "ou_alice", "/gsd:new-project Bad_Name").await;
    b.card_with("Invalid project name").await;
    b.say("oc_1", "ou_alice", "/gsd:progress").await;
    b.card_with("No project selected").await;

    new_project(&mut b, "oc_1", "ou_alice", "demo").await;
    b.say("oc_1", "ou_alice", "/gsd:plan-phase 6").await;
    b.card_with("Approval needed").await;
    b.say("oc_1", "ou_alice", "queued one").await;
    b.card_with("number 1 in the queue").await;
    b.say("oc_1", "ou_alice", "/gsd:status").await;
    b.card("status", |e| {
        e.text().contains("| demo | awaiting approval |")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flooding_command_reports_its_end_and_marks_what_it_skipped() {
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let mut config = crate::support::bridge::test_config(&tmux.socket, home.path());
    // Low enough that even a slow, loaded machine floods past it.
    config.tmux.flood_bytes_per_second = 16 * 1024;
    // The whole result as cards (not a summary and a file), to find the mark.
    config.feishu.long_result_bytes = 0;
    let mut b = Bridge::start_with(tmux, home, config).await;
    new_project(&mut b, "oc_1", "ou_alice", "demo").await;
    // 20000 lines as fast as the pane takes them (1.6 MB): the flood guard
    // watches the screen instead of streaming them.
    b.say("oc_1", "ou_alice", "print a flood").await;
    b.card("the flood's result", |e| {
        is_send(e) && e.text().contains("20000 │ generated output line")
    })
    .await;
    // The result may take several cards (how many depends on when the
    // guard switched): the gap mark is somewhere among them, before the end.
    let result: String = b
        .seen
        .iter()
        .filter(|e| is_send(e) && e.text().starts_with("== demo: print a flood"))
        .map(|e| e.text())
        .collect();
    let gap = result
        .find(GAP_LINE)
        .unwrap_or_else(|| panic!("no gap mark in:\n{result}"));
    let end = result.find("20000 │ generated output line");
    assert!(end.is_some_and(|end| gap < end), "{result}");
    let shown = result.matches("generated output line").count();
    assert!(shown < 10_000, "{shown} of 20000 lines were streamed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_with_nothing_running_types_nothing() {
    let mut b = Bridge::start().await;
    new_project(&mut b, "oc_1", "ou_alice", "demo").await;
    b.say("oc_1", "ou_alice", "/gsd:cancel").await;
    let card = b.card_with("Nothing to cancel").await;
    assert!(
        card.text().contains("Nothing is running in **demo**"),
        "{}",
        card.text()
    );
    // An Esc sent anyway would wait in the agent's input and ride along
    // with the next command.
    b.say("oc_1", "ou_alice", "hello").await;
    b.card("hello's result", |e| {
        is_send(e) && e.text().contains("You said: hello\n")
    })
    .await;
    let kinds: Vec<String> = b.events().iter().map(|e| e.kind.clone()).collect();
    assert!(!kinds.iter().any(|k| k == "cancel"), "{kinds:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_stuck_starting_holds_up_no_other_chat() {
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let mut config = crate::support::bridge::test_config(&tmux.socket, home.path());
    // An agent that never shows its prompt: its project stays starting.
    config.projects.insert(
        "stuck".into(),
        clawmux::bridge::config::ProjectConfig {
            agent: Some("sleep 600".into()),
            profile: Some("claude".into()),
            ..Default::default()
        },
    );
    let mut b = Bridge::start_with(tmux, home, config).await;
    b.say("oc_1", "ou_alice", "/gsd:new-project stuck").await;
    b.card_with("Created **stuck**").await;
    // While it starts, another chat gets its status (the project's state
    // comes as soon as its actor reports it) and its own project.
    let mut asked = 0;
    loop {
        b.say("oc_2", "ou_bob", "/gsd:status").await;
        asked += 1;
        let status = b
            .card("a status", |e| {
                e.text().matches("| stuck |").count() == 1 && e.text().contains("== Status")
            })
            .await;
        if status.text().contains("| stuck | starting its agent |") {
            break;
        }
        assert!(
            status.text().contains("| stuck | not attached |") && asked < 50,
            "{}",
            status.text()
        );
        b.seen.retain(|e| !e.text().contains("== Status"));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    new_project(&mut b, "oc_2", "ou_bob", "quick").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_starts_without_the_ci_markers_of_its_tmux_server() {
    let tmux = TmuxServer::new();
    // A server started from a CI job: every pane inherits its variables.
    let started = std::process::Command::new("tmux")
        .args(["-L", &tmux.socket, "-f", "/dev/null", "new-session", "-d"])
        .args(["-s", "keep", "sleep 600"])
        .env("CI", "true")
        .env("GITHUB_ACTIONS", "true")
        .status()
        .expect("tmux runs");
    assert!(started.success());
    let home = tempfile::tempdir().unwrap();
    let mut config = crate::support::bridge::test_config(&tmux.socket, home.path());
    // A shell command line, quotes and all, run as the agent.
    let report = r#"printf '%s|%s|%s|\n' "ci=${CI-unset}" "gha=${GITHUB_ACTIONS-unset}" "${CLAWMUX_AGENT_COMMAND-gone}"; sleep 600"#;
    config.projects.insert(
        "env".into(),
        clawmux::bridge::config::ProjectConfig {
            agent: Some(report.into()),
            profile: Some("claude".into()),
            ..Default::default()
        },
    );
    let mut b = Bridge::start_with(tmux, home, config).await;
    b.say("oc_1", "ou_alice", "/gsd:new-project env").await;
    b.card_with("Created **env**").await;
    let keep = b.tmux.ok(&["show-environment", "-g", "CI"]);
    assert_eq!(keep.trim(), "CI=true", "the server itself keeps its CI");
    let screen = || {
        let out = b.tmux.run(&["capture-pane", "-p", "-t", "=cm-env:"]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    crate::support::bridge::until(
        || screen().contains('|'),
        "the agent printed its environment",
    )
    .await;
    let screen = screen();
    assert!(screen.contains("ci=unset|gha=unset|gone|"), "{screen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_waits_while_a_prompt_nobody_answered_is_on_screen() {
    let mut b = Bridge::start().await;
    new_project(&mut b, "oc_1", "ou_alice", "demo").await;
    // Someone at the terminal starts a command that asks for permission.
    b.tmux
        .ok(&["send-keys", "-t", "cm-demo", "-l", "/gsd:plan-phase 4"]);
    b.tmux.ok(&["send-keys", "-t", "cm-demo", "Enter"]);
    let approval = b.card_with("Approval needed").await;
    // A chat command now must not be typed into that prompt.
    b.say("oc_1", "ou_alice", "hello").await;
    b.card_with("number 1 in the queue").await;
    let screen = b.tmux.capture("cm-demo");
    assert!(
        screen.contains("Do you want to proceed?") && !screen.contains("hello"),
        "{screen}"
    );
    let yes = button_value(&approval, "Yes");
    b.click("oc_1", "ou_alice", yes).await;
    b.card("the queued command's result", |e| {
        is_send(e) && e.text().contains("You said: hello")
    })
    .await;
    let history = b
        .tmux
        .ok(&["capture-pane", "-p", "-S", "-", "-t", "cm-demo"]);
    assert_eq!(
        history.matches("Created 2 plans for phase 4").count(),
        1,
        "{history}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dialog_opened_while_clawmux_was_down_gets_its_card_before_any_key() {
    let mut b = Bridge::start().await;
    new_project(&mut b, "oc_1", "ou_alice", "demo").await;
    b.stop().await;
    // Meanwhile, at the desk, a command that asks for permission.
    b.tmux
        .ok(&["send-keys", "-t", "cm-demo", "-l", "/gsd:plan-phase 4"]);
    b.tmux.ok(&["send-keys", "-t", "cm-demo", "Enter"]);
    let asked = || {
        b.tmux
            .capture("cm-demo")
            .contains("Do you want to proceed?")
    };
    crate::support::bridge::until(asked, "the dialog is up").await;
    // The first message after the restart comes at once: a digit and
    // Enter would answer the dialog.
    b.resume().await;
    b.say("oc_1", "ou_alice", "1").await;
    let approval = b.card_with("Approval needed").await;
    b.card_with("number 1 in the queue").await;
    let screen = b.tmux.capture("cm-demo");
    assert!(screen.contains("Do you want to proceed?"), "{screen}");
    let yes = button_value(&approval, "Yes");
    b.click("oc_1", "ou_alice", yes).await;
    b.card("the held message's result", |e| {
        is_send(e) && e.text().contains("You said: 1")
    })
    .await;
    let kinds: Vec<String> = b.events().iter().map(|e| e.kind.clone()).collect();
    let answered = kinds.iter().filter(|k| *k == "approval_answered").count();
    assert_eq!(answered, 1, "answered by the click alone: {kinds:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn screen_shows_the_pane_as_it_is() {
    let mut b = Bridge::start().await;
    new_project(&mut b, "oc_1", "ou_alice", "demo").await;
    b.say("oc_1", "ou_alice", "/gsd:screen").await;
    let card = b.card_with("== Screen of demo ==").await;
    assert!(
        card.text().contains("You said: /gsd:new-project"),
        "{}",
        card.text()
    );
    assert_eq!(
        target(&card),
        Some(&ChatTarget::Chat {
            id: clawmux::store::ids::chat("oc_1")
        })
    );
}
