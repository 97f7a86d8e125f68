//! `clawmux serve`'s daemon in the test process over the Feishu protocol:
//! its config against the local Feishu server, starting it (with or without
//! the CardKit answer stream), and waiting for the cards it sends.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use clawmux::bridge::access::policy::RateWindow;
use clawmux::bridge::channels::{feishu as feishu_channel, outbox, streaming};
use clawmux::bridge::config::{Config, GroupPolicy};
use clawmux::bridge::daemon::{Daemon, DaemonSetup};
use clawmux::detect::Profiles;
use clawmux::store::SharedState;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::support::bridge::{Running, test_config};
use crate::support::fake_feishu::{FakeFeishu, Recorded};
use crate::support::tmux::TmuxServer;
use tokio_util::task::TaskTracker;

const WAIT: Duration = Duration::from_secs(30);

pub fn feishu_config(tmux: &TmuxServer, home: &std::path::Path, fake: &FakeFeishu) -> Config {
    let mut config = test_config(&tmux.socket, home);
    config.feishu.domain = fake.base_url();
    config.feishu.app_id = Some(fake.config().app_id);
    config.feishu.app_secret = Some(fake.config().app_secret);
    config.policy.group_policy = GroupPolicy::Allowlist;
    config.policy.group_allow_from = vec!["oc_1".into(), "oc_fake".into()];
    config
}

/// Creates project `demo` from chat `oc_1` and waits for its first result.
pub async fn demo_project(fake: &FakeFeishu) {
    fake.push_message("oc_1", "ou_alice", "/gsd:new-project demo");
    card(fake, "first result", |c| {
        c.card_text().contains("You said: /gsd:new-project")
    })
    .await;
}

pub async fn start(config: &Config, home: &std::path::Path) -> Running {
    start_with(config, home, false).await
}

/// The daemon in this process, its Feishu channel and outbox, and with
/// `streaming` the CardKit answer stream.
pub async fn start_with(config: &Config, home: &std::path::Path, streaming: bool) -> Running {
    let (shared, _) = SharedState::open(home).expect("state");
    let (chat_tx, chat_rx) = mpsc::channel(64);
    let (_hook_tx, hook_rx) = mpsc::channel(4);
    let rates = RateWindow::default();
    let (courier, intake) = feishu_channel::start(config, &shared, home, chat_tx, rates.clone())
        .await
        .expect("feishu channel");
    let setup = DaemonSetup {
        config: Arc::new(config.clone()),
        shared: shared.clone(),
        profiles: Profiles::defaults().expect("profiles"),
        state_dir: home.to_path_buf(),
        sim_agent: format!("{} sim-agent", env!("CARGO_BIN_EXE_clawmux")),
        rates,
        actors: TaskTracker::new(),
    };
    let actors = setup.actors.clone();
    let daemon = tokio::spawn(async move {
        let _keep = _hook_tx;
        Daemon::new(setup).run(chat_rx, hook_rx).await
    });
    // Aborting the wrapper drops the handle, which aborts the intake.
    let intake = tokio_util::task::AbortOnDropHandle::new(intake);
    let intake = tokio::spawn(async move {
        let _ = intake.await;
    });
    let mut tasks = vec![daemon, intake];
    if streaming {
        tasks.push(tokio::spawn(streaming::run(
            shared.clone(),
            streaming::FeishuStream(courier.api()),
        )));
    }
    tasks.push(tokio::spawn(outbox::run(shared, courier)));
    Running { tasks, actors }
}

/// Waits for a card satisfying `pred`; fails with every card sent.
pub async fn card(fake: &FakeFeishu, what: &str, pred: impl Fn(&Recorded) -> bool) -> Recorded {
    match fake.wait_for_card(&pred, WAIT).await {
        Some(c) => c,
        None => {
            panic!("no card {what}; sent:\n{}", fake.listing())
        }
    }
}

/// The value of the button labelled `label` in `card`, if it has one.
pub fn find_button(card: &Value, label: &str) -> Option<Value> {
    fn walk<'a>(v: &'a Value, label: &str) -> Option<&'a Value> {
        if v.get("tag").and_then(Value::as_str) == Some("button")
            && v.pointer("/text/content").and_then(Value::as_str) == Some(label)
        {
            return v.pointer("/behaviors/0/value");
        }
        match v {
            Value::Array(a) => a.iter().find_map(|i| walk(i, label)),
            Value::Object(o) => o.values().find_map(|i| walk(i, label)),
            _ => None,
        }
    }
    walk(card, label).cloned()
}

pub fn button(card: &Value, label: &str) -> Value {
    find_button(card, label).unwrap_or_else(|| panic!("no button {label} in {card}"))
}

/// A PNG's first bytes and a little more.
pub fn png() -> Vec<u8> {
    [&[0x89, b'P', b'N', b'G', 0x0d, 0x0a][..], &[7u8; 100]].concat()
}

/// Every file under `dir` named `name`.
pub fn files_named(dir: &Path, name: &str) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            found.extend(files_named(&path, name));
        } else if entry.file_name() == name {
            found.push(path);
        }
    }
    found
}

/// Sends an image from alice to `oc_1` (whose project is `project`) and
/// checks it was refused with `reason` told to the chat, nothing typed
/// (the next message's echo is the next thing the agent got) and nothing
/// written under `home` or in the daemon's working directory.
pub async fn image_refused(fake: &FakeFeishu, home: &Path, project: &str, reason: &str) {
    let image = fake.push_image_message("oc_1", "ou_alice", &png());
    let refused = card(fake, "the image refused", |c| {
        c.target == image.message_id && c.title() == "Image not saved"
    })
    .await;
    let text = refused.card_text();
    assert!(text.contains(reason), "{text}");
    assert!(text.contains(project), "{text}");
    let after = fake.push_message("oc_1", "ou_alice", &format!("after the image {project}"));
    card(fake, "the next message's echo", |c| {
        c.target == after.message_id && c.card_text().contains("You said: after the image")
    })
    .await;
    let listing = fake.listing();
    assert!(!listing.contains("You said: Image"), "{listing}");
    let name = format!("{}.png", image.message_id);
    assert_eq!(files_named(home, &name), Vec::<std::path::PathBuf>::new());
    let cwd = std::env::current_dir().expect("cwd").join(".clawmux");
    assert_eq!(files_named(&cwd, &name), Vec::<std::path::PathBuf>::new());
}
