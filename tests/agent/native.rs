//! Claude Code's own dialogs, which no tool call opens and a pane nobody
//! watches would wait on for ever: folder trust, `/model` and `/effort`,
//! drawn by the real agent, are read as dialogs with their options (kind
//! `dialog` when no rule names it), never as an idle screen, and the keys
//! clawmux presses for an option choose it, whether the menu is numbered
//! or (2.1.332's folder trust, its `/effort` slider) answered with arrows.
//!
//! The bypass-permissions consent is drawn with `IS_SANDBOX=1`: Claude
//! Code refuses that mode for root (as CI runs) unless it is told it runs
//! in a sandbox. The resume-from-summary question is not drawn here: it is
//! behind a feature flag Claude Code fetches from its servers (off without
//! them); its screen is checked as built from the release's own strings in
//! the detector's unit tests.

use std::path::Path;
use std::time::{Duration, Instant};

use clawmux::agentcheck::{ClaudeEnv, FakeApi};
use clawmux::agents::claude::PermissionMode;
use clawmux::bridge::panes::answering::ANSWER_SETTLE;
use clawmux::detect::{
    DetectionKind, DetectorConfig, MenuSelect, Millis, PaneWatcher, Profiles, ShownPrompt,
};

use crate::support::claude::{STEP_TIMEOUT, claude_required, release_at_least};
use crate::support::tmux::TmuxServer;

/// A dialog read from the screen of `target`, as the daemon reads a pane
/// it attaches to (from `capture-pane -e`).
struct Shown {
    question: String,
    labels: Vec<String>,
    prompt: ShownPrompt,
}

/// The dialog on the screen of `target`, once there is one; panics with
/// the screen after the timeout.
fn wait_dialog(tmux: &TmuxServer, target: &str) -> Shown {
    let profile = Profiles::defaults().unwrap().get("claude").unwrap();
    let deadline = Instant::now() + STEP_TIMEOUT;
    loop {
        let screen = tmux.ok(&["capture-pane", "-p", "-e", "-t", target]);
        let mut w = PaneWatcher::new(
            "%0".parse().unwrap(),
            profile.clone(),
            DetectorConfig::default(),
            120,
            40,
        );
        let mut seen = Vec::new();
        let bytes = screen.replace('\n', "\r\n");
        w.feed(Millis(0), bytes.as_bytes(), &mut |d| seen.push(d));
        // The detector reports a dialog once it has been still a while.
        w.tick(Millis(10_000), &mut |d| seen.push(d));
        let approval = seen.into_iter().find_map(|d| match d.kind {
            DetectionKind::Approval {
                question, options, ..
            } => Some((question, options)),
            _ => None,
        });
        if let (Some((question, options)), Some(prompt)) = (approval, w.look().prompt) {
            let labels = options.into_iter().map(|o| o.label).collect();
            return Shown {
                question,
                labels,
                prompt,
            };
        }
        assert!(
            Instant::now() < deadline,
            "no dialog read on:\n{}",
            tmux.capture(target)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Chooses option `label` of `shown` with the keys the answer path sends,
/// once the screen is still, as the answer path waits.
fn choose(tmux: &TmuxServer, target: &str, shown: &Shown, label: &str) {
    tmux.wait_still(target, ANSWER_SETTLE, STEP_TIMEOUT);
    let at = shown.labels.iter().position(|l| l == label);
    let at = at.unwrap_or_else(|| panic!("no {label:?} in {:?}", shown.labels));
    let key = &shown.prompt.keys[at];
    match shown.prompt.select.presses(key) {
        Some(presses) => {
            let mut args = vec!["send-keys", "-t", target];
            args.extend(presses);
            tmux.ok(&args);
        }
        None => {
            tmux.ok(&["send-keys", "-t", target, "-l", key]);
        }
    }
}

/// Claude Code started in `dir` with `args`, in a fresh tmux server.
fn start(claude: &Path, env: &ClaudeEnv, dir: &Path, args: &[&str]) -> TmuxServer {
    let tmux = TmuxServer::new();
    let command = format!(
        "cd {} && exec {}",
        clawmux::shell::quote_keeping_nul(&dir.display().to_string()),
        env.env_command(claude, args)
    );
    tmux.new_session("agent", &command);
    tmux
}

#[test]
fn folder_trust_is_a_dialog_answered_from_its_options() {
    let claude = claude_required();
    let api = FakeApi::start(Vec::new()).unwrap();
    let env = ClaudeEnv::new(&api.base_url()).unwrap();
    // A folder nobody trusted yet.
    let dir = env.home().join("untrusted");
    std::fs::create_dir(&dir).unwrap();
    let mode = PermissionMode::Manual.flag();
    let tmux = start(&claude, &env, &dir, &["--permission-mode", mode]);
    let shown = wait_dialog(&tmux, "agent");
    eprintln!("folder trust: {:?} {:?}", shown.question, shown.labels);
    let trust = shown.labels.iter().find(|o| o.contains("trust"));
    let trust = trust.unwrap_or_else(|| panic!("{:?} {:?}", shown.question, shown.labels));
    assert!(shown.labels.len() >= 2, "{:?}", shown.labels);
    if release_at_least("2.1.332") {
        // Its menu has no numbers: chosen with arrows from the cursor.
        assert_eq!(shown.labels, ["No, exit", "Yes, I trust this folder"]);
        assert!(shown.question.contains("trust?"), "{}", shown.question);
        assert_ne!(shown.prompt.select, MenuSelect::Typed);
    }
    let trust = trust.clone();
    choose(&tmux, "agent", &shown, &trust);
    // Trusted: the agent starts and shows its input box.
    tmux.wait_for_screen("agent", "for shortcuts", STEP_TIMEOUT);
}

/// Bypass-permissions mode asks for consent before the agent starts: a
/// menu without numbers whose cursor starts on "No, exit". Accepting it
/// from its options starts the agent in that mode.
#[test]
fn bypass_consent_is_a_dialog_answered_from_its_options() {
    let claude = claude_required();
    let api = FakeApi::start(Vec::new()).unwrap();
    let env = ClaudeEnv::new(&api.base_url())
        .unwrap()
        .with_var("IS_SANDBOX", "1");
    let mode = PermissionMode::BypassPermissions.flag();
    let tmux = start(&claude, &env, env.project(), &["--permission-mode", mode]);
    let shown = wait_dialog(&tmux, "agent");
    eprintln!("bypass consent: {:?} {:?}", shown.question, shown.labels);
    assert_eq!(shown.labels, ["No, exit", "Yes, I accept"]);
    assert!(
        shown.question.contains("Bypass Permissions mode"),
        "{}",
        shown.question
    );
    if release_at_least("2.1.332") {
        // Its menu has no numbers: chosen with arrows from the cursor.
        assert_ne!(shown.prompt.select, MenuSelect::Typed);
    }
    choose(&tmux, "agent", &shown, "Yes, I accept");
    // Accepted: the agent starts, its footer naming the mode.
    tmux.wait_for_screen("agent", "bypass permissions on", STEP_TIMEOUT);
}

/// `/model` typed into an idle agent opens a menu of its own.
#[test]
fn the_model_menu_is_a_dialog() {
    let claude = claude_required();
    let api = FakeApi::start(Vec::new()).unwrap();
    let env = ClaudeEnv::new(&api.base_url()).unwrap();
    let mode = PermissionMode::Manual.flag();
    let command = "/model";
    let tmux = start(&claude, &env, env.project(), &["--permission-mode", mode]);
    tmux.wait_for_screen("agent", "for shortcuts", STEP_TIMEOUT);
    tmux.ok(&["send-keys", "-t", "agent", "-l", command]);
    tmux.wait_for_screen("agent", command, STEP_TIMEOUT);
    std::thread::sleep(Duration::from_millis(300));
    tmux.ok(&["send-keys", "-t", "agent", "Enter"]);
    let shown = wait_dialog(&tmux, "agent");
    eprintln!("{command}: {:?} {:?}", shown.question, shown.labels);
    assert!(
        shown.question.starts_with("Select model"),
        "{}",
        shown.question
    );
    // Its columns: the model's name is the label, what it is the description.
    for model in ["Opus", "Sonnet", "Haiku"] {
        assert!(
            shown.labels.iter().any(|l| l == model),
            "no {model} in {:?}",
            shown.labels
        );
    }
}

/// `/effort` on 2.1.332 is a slider; the level chosen in chat is set.
/// Older releases have no slider: `.ci/run` leaves this test out of their
/// pass by name, and run on one it fails rather than pass unchecked.
#[test]
fn the_effort_slider_is_a_dialog_answered_from_its_options() {
    let claude = claude_required();
    assert!(
        release_at_least("2.1.332"),
        "Claude Code {} has no /effort slider: run this test on 2.1.332 or later",
        crate::support::claude::release()
    );
    let api = FakeApi::start(Vec::new()).unwrap();
    let env = ClaudeEnv::new(&api.base_url()).unwrap();
    let mode = PermissionMode::Manual.flag();
    let tmux = start(&claude, &env, env.project(), &["--permission-mode", mode]);
    tmux.wait_for_screen("agent", "for shortcuts", STEP_TIMEOUT);
    // From wherever its marker stands: up to the top, then down to the end.
    for level in ["max", "low"] {
        tmux.ok(&["send-keys", "-t", "agent", "-l", "/effort"]);
        tmux.wait_for_screen("agent", "/effort", STEP_TIMEOUT);
        std::thread::sleep(Duration::from_millis(300));
        tmux.ok(&["send-keys", "-t", "agent", "Enter"]);
        let shown = wait_dialog(&tmux, "agent");
        assert_eq!(shown.question, "Effort");
        assert_eq!(shown.labels, ["low", "medium", "high", "xhigh", "max"]);
        choose(&tmux, "agent", &shown, level);
        let set = format!("Set effort level to {level}");
        tmux.wait_for_screen("agent", &set, STEP_TIMEOUT);
        tmux.wait_for_screen("agent", "for shortcuts", STEP_TIMEOUT);
    }
}
