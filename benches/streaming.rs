//! The streamed answer card's delay, against the local Feishu server: a
//! real tmux pane runs the simulated agent, which writes its answer one
//! marked line at a time; a control-mode client on the same session notes
//! when each line is drawn, and the local server when a CardKit operation
//! first carries it. The baseline, measured in the same run, is the card
//! the chat had before streaming: the result card at the turn's end.
//! Also printed: CardKit operations per second on the card (mean and the
//! busiest second) against Feishu's documented 10 per card.
//!
//! `cargo bench --bench streaming` (env `CLAWMUX_STREAM_LINES`, default 24).

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clawmux::bridge::access::policy::RateWindow;
use clawmux::bridge::channels::{feishu as feishu_channel, outbox, streaming};
use clawmux::bridge::config::{Config, GroupPolicy};
use clawmux::bridge::daemon::{Daemon, DaemonSetup};
use clawmux::detect::Profiles;
use clawmux::feishu::cardkit::MAX_OPS_PER_SEC_PER_CARD;
use clawmux::store::SharedState;
use clawmux_testkit::fake_feishu::FakeFeishu;
use clawmux_testkit::tmux::TmuxServer;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::task::TaskTracker;

/// Longest the run may take.
const RUN_LIMIT: Duration = Duration::from_secs(240);

fn lines() -> usize {
    std::env::var("CLAWMUX_STREAM_LINES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(24)
}

/// The agent's script: `n` marked lines, the agent busy in between.
fn script(n: usize) -> String {
    let mut s = String::from("on /gsd:new-project\n  spin 200 Setting up…\n  say ● Ready.\n");
    s.push_str("on *\n  spin 200 Thinking…\n  say ● Answer mark0000 begins\n");
    for k in 1..n {
        s.push_str(&format!(
            "  spin {} Writing…\n  say   line mark{k:04} of the answer\n",
            150 + (k * 37) % 200
        ));
    }
    s.push_str("  spin 300 Finishing…\n  say   The end.\n");
    s
}

/// When each marked line was first drawn, seen by a control-mode client.
fn watch(socket: String, session: String, drawn: Arc<Mutex<HashMap<String, Instant>>>) {
    let child = Command::new("tmux")
        .args([
            "-L",
            &socket,
            "-f",
            "/dev/null",
            "-C",
            "attach",
            "-t",
            &session,
        ])
        .env("LANG", "C.UTF-8")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        eprintln!("cannot attach tmux -C to {session}");
        return;
    };
    let Some(out) = child.stdout.take() else {
        return;
    };
    let mark = regex::Regex::new(r"mark(\d{4})").unwrap_or_else(|e| unreachable!("{e}"));
    for line in BufReader::new(out).lines() {
        let Ok(line) = line else { break };
        if !line.starts_with("%output ") {
            continue;
        }
        let now = Instant::now();
        let mut d = drawn.lock().unwrap_or_else(|p| p.into_inner());
        for c in mark.captures_iter(&line) {
            d.entry(c[0].to_string()).or_insert(now);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn summary(name: &str, mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let (p50, p90, max) = (
        percentile(&v, 0.5),
        percentile(&v, 0.9),
        v.last().copied().unwrap_or(f64::NAN),
    );
    println!(
        "{name:<34} n={:<3} p50 {p50:>8.1} ms  p90 {p90:>8.1} ms  max {max:>8.1} ms",
        v.len()
    );
    p50
}

async fn wait<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + RUN_LIMIT;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let n = lines();
    let home = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
    let home = home.path();
    // Killed when dropped, a panicking wait included.
    let tmux = TmuxServer::new();
    let socket = tmux.socket.clone();
    let script_path = home.join("bench.sim");
    std::fs::write(&script_path, script(n)).unwrap_or_else(|e| panic!("script: {e}"));
    let fake = FakeFeishu::start().await;

    let mut config = Config::parse("").unwrap_or_else(|e| panic!("defaults: {e:?}"));
    config.tmux.socket = socket.clone();
    config.tmux.width = 120;
    config.tmux.height = 40;
    config.workspace_root = home.join("ws").display().to_string();
    config.agent.command = format!(
        "{} sim-agent --script {}",
        env!("CARGO_BIN_EXE_clawmux"),
        script_path.display()
    );
    config.feishu.domain = fake.base_url();
    config.feishu.app_id = Some(fake.config().app_id);
    config.feishu.app_secret = Some(fake.config().app_secret);
    config.policy.group_policy = GroupPolicy::Allowlist;
    config.policy.group_allow_from = vec!["oc_1".into()];
    config.policy.allow_from = vec!["ou_alice".into()];

    let (shared, _) = SharedState::open(home).unwrap_or_else(|e| panic!("state: {e}"));
    let (chat_tx, chat_rx) = mpsc::channel(64);
    let (_hook_tx, hook_rx) = mpsc::channel(4);
    let rates = RateWindow::default();
    let (courier, _intake) = feishu_channel::start(&config, &shared, home, chat_tx, rates.clone())
        .await
        .unwrap_or_else(|e| panic!("feishu channel: {e}"));
    let setup = DaemonSetup {
        config: Arc::new(config.clone()),
        shared: shared.clone(),
        profiles: Profiles::defaults().unwrap_or_else(|e| panic!("profiles: {e}")),
        state_dir: home.to_path_buf(),
        sim_agent: format!("{} sim-agent", env!("CARGO_BIN_EXE_clawmux")),
        rates,
        actors: TaskTracker::new(),
    };
    let daemon = tokio::spawn(Daemon::new(setup).run(chat_rx, hook_rx));
    let stream = tokio::spawn(streaming::run(
        shared.clone(),
        streaming::FeishuStream(courier.api()),
    ));
    let out = tokio::spawn(outbox::run(shared, courier));

    assert!(
        fake.wait_connected(1, RUN_LIMIT).await,
        "long connection up"
    );
    fake.push_message("oc_1", "ou_alice", "/gsd:new-project demo");
    wait("the project", || {
        (fake.sent_cards().iter())
            .any(|c| c.card_id.is_none() && c.card_text().contains("Ready."))
            .then_some(())
    })
    .await;
    let drawn = Arc::new(Mutex::new(HashMap::new()));
    let watcher = {
        let (socket, drawn) = (socket.clone(), Arc::clone(&drawn));
        std::thread::spawn(move || watch(socket, "cm-demo".into(), drawn))
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = fake.entities().len();
    fake.push_message("oc_1", "ou_alice", "a long answer, please");
    let entity = wait("the answer card closed", || {
        fake.entities()
            .into_iter()
            .skip(before)
            .find(|e| !e.streaming && e.ops.iter().any(|o| o.kind == "settings"))
    })
    .await;
    let result = wait("the result card", || {
        (fake.sent_cards().into_iter())
            .find(|c| c.card_id.is_none() && c.card_text().contains("The end."))
    })
    .await;
    let drawn = drawn.lock().unwrap_or_else(|p| p.into_inner()).clone();

    let (mut streamed, mut baseline) = (Vec::new(), Vec::new());
    for k in 0..n {
        let mark = format!("mark{k:04}");
        let Some(at) = drawn.get(&mark) else { continue };
        let first = entity.ops.iter().find(|o| o.content.contains(&mark));
        if let Some(op) = first {
            streamed.push(op.at.saturating_duration_since(*at).as_secs_f64() * 1e3);
        }
        baseline.push(result.at.saturating_duration_since(*at).as_secs_f64() * 1e3);
    }
    println!("streamed answer card, {n} lines drawn {} seen", drawn.len());
    let s = summary("draw -> streamed card (CardKit)", streamed);
    let b = summary("draw -> result card (baseline)", baseline);
    println!("ratio p50 baseline / streamed: {:.1}x sooner", b / s);

    // Operations per second on the entity: mean over its life, and the
    // busiest one-second window.
    let ops: Vec<Instant> = entity.ops.iter().map(|o| o.at).collect();
    let life = match (ops.first(), ops.last()) {
        (Some(a), Some(b)) => b.saturating_duration_since(*a).as_secs_f64().max(1e-3),
        _ => 1.0,
    };
    let busiest = (0..ops.len())
        .map(|i| {
            (ops[i..].iter())
                .take_while(|t| t.saturating_duration_since(ops[i]) < Duration::from_secs(1))
                .count()
        })
        .max()
        .unwrap_or(0);
    let limit = f64::from(MAX_OPS_PER_SEC_PER_CARD);
    println!(
        "CardKit ops on the card: {} in {life:.1} s, mean {:.2}/s, busiest second {busiest} (limit {limit}/s: {:.0}% of it); refused for rate: {}",
        ops.len(),
        ops.len() as f64 / life,
        busiest as f64 / limit * 100.0,
        entity.limited
    );

    daemon.abort();
    stream.abort();
    out.abort();
    drop(tmux);
    let _ = watcher.join();
}
