//! Claude Code's own dialogs, which no tool call opens and a pane nobody
//! watches would wait on for ever: folder trust and `/model`, drawn by the
//! real agent, are read as dialogs with their options (kind `dialog` when
//! no rule names it), never as an idle screen.
//!
//! Not read yet (measured on 2.1.332): its folder-trust menu has no option
//! numbers (`❯ No, exit` / `Yes, I trust this folder`), and `/effort` is a
//! slider (`←/→ to adjust`); both answer with arrow keys, which the answer
//! path does not send. The bypass-permissions consent cannot be shown
//! here: Claude Code refuses that mode for root, as this machine runs.

use std::path::Path;
use std::time::{Duration, Instant};

use clawmux::agentcheck::{ClaudeEnv, FakeApi};
use clawmux::agents::claude::PermissionMode;
use clawmux::detect::{DetectorConfig, Millis, PaneWatcher, Profiles};

use crate::support::claude::{STEP_TIMEOUT, claude_or_skip, release_at_least};
use crate::support::tmux::TmuxServer;

/// The dialog the screen of `target` shows, read as the daemon reads a
/// pane it attaches to (from `capture-pane -e`): its question and option
/// labels, once there is one; panics with the screen after the timeout.
fn wait_dialog(tmux: &TmuxServer, target: &str) -> (String, Vec<String>) {
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
        w.feed(
            Millis(0),
            screen.replace('\n', "\r\n").as_bytes(),
            &mut |_| {},
        );
        let look = w.look();
        if let Some(p) = look.prompt {
            let plain = tmux.capture(target);
            let labels = plain
                .lines()
                .filter_map(|r| {
                    let r = r.trim_start().trim_start_matches(['❯', '│', ' ']);
                    let (key, label) = r.split_once(". ")?;
                    p.keys
                        .contains(&key.to_owned())
                        .then(|| label.trim().to_owned())
                })
                .collect();
            return (p.question, labels);
        }
        assert!(
            Instant::now() < deadline,
            "no dialog read on:\n{}",
            tmux.capture(target)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Claude Code started in `dir` with `args`, in a fresh tmux server.
fn start(claude: &Path, env: &ClaudeEnv, dir: &Path, args: &[&str]) -> TmuxServer {
    let tmux = TmuxServer::new();
    let command = format!(
        "cd {} && exec {}",
        clawmux::agentcheck::sh_quote(&dir.display().to_string()),
        env.env_command(claude, args)
    );
    tmux.new_session("agent", &command);
    tmux
}

#[test]
fn folder_trust_is_a_dialog() {
    let Some(claude) = claude_or_skip("agent::native::folder_trust_is_a_dialog") else {
        return;
    };
    if release_at_least("2.1.332") {
        eprintln!(
            "\n*** SKIPPED agent::native::folder_trust_is_a_dialog: {}'s trust menu has no option numbers (see the module doc) ***\n",
            crate::support::claude::release()
        );
        return;
    }
    let api = FakeApi::start(Vec::new()).unwrap();
    let env = ClaudeEnv::new(&api.base_url()).unwrap();
    // A folder nobody trusted yet.
    let dir = env.home().join("untrusted");
    std::fs::create_dir(&dir).unwrap();
    let tmux = start(&claude, &env, &dir, &[]);
    let (question, options) = wait_dialog(&tmux, "agent");
    eprintln!("folder trust: {question:?} {options:?}");
    assert!(
        options.iter().any(|o| o.contains("trust")),
        "{question:?} {options:?}"
    );
    assert!(options.len() >= 2, "{options:?}");
}

/// `/model` typed into an idle agent opens a menu of its own.
#[test]
fn the_model_menu_is_a_dialog() {
    let Some(claude) = claude_or_skip("agent::native::the_model_menu_is_a_dialog") else {
        return;
    };
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
    let (question, options) = wait_dialog(&tmux, "agent");
    eprintln!("{command}: {question:?} {options:?}");
    assert!(options.len() >= 2, "{command}: {question:?} {options:?}");
}
