//! How long an idle chat's `/gsd:status` takes while 20 other chats keep
//! the bot busy, end to end: every message enters through the local Feishu
//! server's long connection and the real intake, goes through the real
//! daemon (core, project actors, tmux), and its cards leave through the
//! real outbox and Feishu courier, with its pacing (5 sends a second per
//! chat, 50 for the app), to the local server, which records when each
//! arrives.
//!
//! Load: each of 20 busy chats has its own project running the bundled
//! simulated agent in a real tmux pane (one private `-L` server per run).
//! 500 messages arrive over 10 s, spread over those chats; each is a real
//! command the agent answers, so it makes the cards a command makes: the
//! "Queued" card while its agent is busy, the "Running" card, the reaction
//! on the message, the streamed answer card, the "Finished" update and the
//! result. Half way, a chat that sent nothing asks `/gsd:status`; its
//! latency is from that push until the server records the status card.
//!
//! Measured with the outbox serving chats in turn ([`Order::Fair`], what
//! `serve` runs) and, as the baseline in the same run, with the one queue
//! it had before ([`Order::OneQueue`]: oldest first, whatever the chat).
//! The bench wires the outbox itself, as `serve` does, to choose the order.
//!
//! So that a broken run cannot print a good figure, each run asserts that
//! every load message was admitted and reached its project as a command
//! (none refused: the per-sender rate limit is raised here), and the run
//! in turn that every message's result card and "Finished" update arrived
//! and the outbox emptied, within [`DRAIN_LIMIT`]. The baseline's backlog
//! takes minutes to drain on a loaded machine, so it is waited for only
//! [`BASELINE_WAIT`] (its idle-chat figure is measured by then); what it
//! had delivered and still held is printed instead.
//!
//! `cargo bench --bench outbox_fairness` (env `CLAWMUX_FAIR_MESSAGES`,
//! default 500; past about 640, 20 chats x 32, a project queues no more).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use clawmux::bridge::access::policy::RateWindow;
use clawmux::bridge::channels::outbox::{self, Order};
use clawmux::bridge::channels::{feishu as feishu_channel, streaming};
use clawmux::bridge::config::{Config, DmPolicy, GroupPolicy};
use clawmux::bridge::daemon::{Daemon, DaemonSetup};
use clawmux::detect::Profiles;
use clawmux::store::SharedState;
use clawmux::store::{clock, log_read};
use clawmux_testkit::fake_feishu::{FakeFeishu, Kind, Recorded};
use clawmux_testkit::tmux::TmuxServer;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::task::TaskTracker;

const BUSY_CHATS: usize = 20;
/// The load arrives over this long.
const SPREAD: Duration = Duration::from_secs(10);
/// Longest the 20 projects may take to start.
const SETUP_LIMIT: Duration = Duration::from_secs(120);
/// Longest a run may take to deliver every card after the load started.
const DRAIN_LIMIT: Duration = Duration::from_secs(240);
/// How long after the load started the baseline's backlog is waited for:
/// its idle-chat figure is measured by then, and draining the one queue
/// takes minutes on a loaded machine.
const BASELINE_WAIT: Duration = Duration::from_secs(60);
/// How often the drain looks at what the server recorded (a copy of
/// thousands of cards, taken seldom so the bench does not compete with
/// the bridge for the CPU; the figure is the server's time of the last).
const DRAIN_POLL: Duration = Duration::from_secs(1);
/// Longest the actors may take to stop after their daemon.
const STOP_WAIT: Duration = Duration::from_secs(10);
/// Each sender's messages a minute: far above the 25 a busy chat's sender
/// sends in 10 s, so none is refused (the bench asserts none was).
const RATE_PER_MINUTE: u32 = 100_000;
/// Cards a failed run shows, the last ones.
const FAILURE_LINES: usize = 40;
/// Chat events waiting for the daemon at most (as `serve`).
const CHAT_CAPACITY: usize = 256;

const IDLE_CHAT: &str = "oc_idle";
const IDLE_USER: &str = "ou_idle";

fn messages() -> usize {
    std::env::var("CLAWMUX_FAIR_MESSAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500)
}

fn busy_chat(k: usize) -> String {
    format!("oc_busy{k}")
}

fn busy_user(k: usize) -> String {
    format!("ou_busy{k}")
}

/// The text of load message `i`: the agent answers `You said: <it>`.
fn load_text(i: usize) -> String {
    format!("load-{i:04}")
}

/// What one run measured.
struct Figures {
    /// The idle chat's `/gsd:status`: its push to its card.
    idle: Duration,
    /// Its push to the core taking it (admitted, in the event log).
    taken: Duration,
    /// How the load's cards were delivered.
    drain: Drain,
    /// Cards and updates the server recorded from the load's start
    /// (the status card among them).
    recorded: usize,
    /// Reactions added to the load's messages.
    reactions: usize,
}

/// How far a run delivered the load's cards.
enum Drain {
    /// Every message's cards, the last this long after the load started.
    All(Duration),
    /// Waiting stopped at [`BASELINE_WAIT`]: `done` messages had all
    /// their cards, `queued` entries were still in the outbox.
    Stopped { done: usize, queued: usize },
}

/// A run's daemon tasks and actors, stopped before its tmux server is
/// killed (fields drop after `drop`): a daemon left running would start
/// the server again to recover its panes. Also on a panic.
struct Running {
    tasks: Vec<JoinHandle<()>>,
    actors: TaskTracker,
    _tmux: TmuxServer,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.tasks.iter().for_each(JoinHandle::abort);
        self.actors.close();
        let actors = self.actors.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            tokio::task::block_in_place(|| {
                runtime.block_on(async {
                    let _ = tokio::time::timeout(STOP_WAIT, actors.wait()).await;
                })
            });
        }
    }
}

fn config(fake: &FakeFeishu, socket: &str, home: &std::path::Path) -> Config {
    let mut config = Config::parse("").unwrap_or_else(|e| panic!("defaults: {e:?}"));
    config.tmux.socket = socket.to_string();
    config.tmux.width = 120;
    config.tmux.height = 40;
    config.workspace_root = home.join("ws").display().to_string();
    config.agent.command = "sim".into();
    config.feishu.domain = fake.base_url();
    config.feishu.app_id = Some(fake.config().app_id);
    config.feishu.app_secret = Some(fake.config().app_secret);
    config.policy.dm_policy = DmPolicy::Allowlist;
    config.policy.group_policy = GroupPolicy::Open;
    config.policy.allow_from = (0..BUSY_CHATS).map(busy_user).collect();
    config.policy.allow_from.push(IDLE_USER.into());
    config.policy.rate_per_minute = RATE_PER_MINUTE;
    config
}

/// Starts the channel, the daemon, the answer stream and the outbox in
/// `order`, wired as `serve` wires them.
async fn start(
    config: Config,
    home: &std::path::Path,
    order: Order,
    tmux: TmuxServer,
) -> (SharedState, Running) {
    let (shared, _) = SharedState::open(home).unwrap_or_else(|e| panic!("state: {e}"));
    let (chat_tx, chat_rx) = mpsc::channel(CHAT_CAPACITY);
    let (_hook_tx, hook_rx) = mpsc::channel(1);
    let rates = RateWindow::default();
    let (courier, intake) = feishu_channel::start(&config, &shared, home, chat_tx, rates.clone())
        .await
        .unwrap_or_else(|e| panic!("feishu channel: {e}"));
    let stream = config
        .feishu
        .stream_answers
        .then(|| streaming::FeishuStream(courier.api()));
    let setup = DaemonSetup {
        config: Arc::new(config),
        shared: shared.clone(),
        profiles: Profiles::defaults().unwrap_or_else(|e| panic!("profiles: {e}")),
        state_dir: home.to_path_buf(),
        sim_agent: format!("{} sim-agent", env!("CARGO_BIN_EXE_clawmux")),
        rates,
        actors: TaskTracker::new(),
    };
    let actors = setup.actors.clone();
    // Aborting the wrapper drops the handle, which aborts the intake.
    let intake = tokio_util::task::AbortOnDropHandle::new(intake);
    let mut tasks = vec![
        tokio::spawn(async move {
            let _ = intake.await;
        }),
        tokio::spawn(outbox::run_in(shared.clone(), courier, order)),
        tokio::spawn(async move {
            // The hook sender lives as long as the daemon: hooks are quiet.
            let _hooks = _hook_tx;
            Daemon::new(setup).run(chat_rx, hook_rx).await
        }),
    ];
    if let Some(sink) = stream {
        tasks.push(tokio::spawn(streaming::run(shared.clone(), sink)));
    }
    let running = Running {
        tasks,
        actors,
        _tmux: tmux,
    };
    (shared, running)
}

/// The load message a text names (`load-NNNN`), if any.
fn load_index(text: &str) -> Option<usize> {
    let at = text.find("load-")? + "load-".len();
    text.get(at..at + 4)?.parse().ok()
}

/// The load messages whose result card and "Finished" update the server
/// recorded, by index.
fn delivered(cards: &[Recorded]) -> HashSet<usize> {
    let (mut results, mut finished) = (HashSet::new(), HashSet::new());
    for c in cards {
        let text = c.card_text();
        if c.kind == Kind::Patch {
            if text.contains("Finished in")
                && let Some(i) = load_index(c.title())
            {
                finished.insert(i);
            }
        } else if c.card_id.is_none()
            && let Some(said) = text.find("You said: ")
            && let Some(i) = load_index(&text[said..])
        {
            results.insert(i);
        }
    }
    results.intersection(&finished).copied().collect()
}

async fn run(order: Order, n: usize) -> Figures {
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
    let fake = FakeFeishu::start().await;
    let config = config(&fake, &tmux.socket, home.path());
    let (shared, running) = start(config, home.path(), order, tmux).await;
    assert!(
        fake.wait_connected(1, SETUP_LIMIT).await,
        "the long connection never came up"
    );

    // Each busy chat gets its project (its agent started, its first
    // command answered) before the load.
    for k in 0..BUSY_CHATS {
        fake.push_message(
            &busy_chat(k),
            &busy_user(k),
            &format!("/gsd:new-project p{k}"),
        );
    }
    let deadline = Instant::now() + SETUP_LIMIT;
    loop {
        let started = (fake.sent_cards().iter())
            .filter(|c| c.kind != Kind::Patch && c.card_id.is_none())
            .filter(|c| c.card_text().contains("You said: /gsd:new-project"))
            .count();
        if started >= BUSY_CHATS && shared.read(|s| s.outbox.is_empty()) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{order:?}: {started} of the {BUSY_CHATS} projects started within {SETUP_LIMIT:?}; \
             the last cards:\n{}",
            last_lines(&fake.listing(), FAILURE_LINES)
        );
        tokio::time::sleep(DRAIN_POLL).await;
    }
    let before = fake.recorded_count();

    let start = Instant::now();
    let gap = SPREAD / u32::try_from(n).unwrap_or(u32::MAX).max(1);
    let mut idle = None;
    let mut sent = HashSet::new();
    for i in 0..n {
        let k = i % BUSY_CHATS;
        sent.insert(
            fake.push_message(&busy_chat(k), &busy_user(k), &load_text(i))
                .message_id,
        );
        if i == n / 2 {
            let asked = (Instant::now(), clock::now_ms());
            idle = Some((
                asked,
                fake.push_message(IDLE_CHAT, IDLE_USER, "/gsd:status"),
            ));
        }
        tokio::time::sleep_until(start + gap * u32::try_from(i + 1).unwrap_or(u32::MAX)).await;
    }
    let ((asked, asked_ms), pushed) =
        idle.unwrap_or_else(|| panic!("no message half way (n = {n})"));
    let status = fake
        .wait_for_card_from(
            before,
            |c| c.kind == Kind::Reply && c.target == pushed.message_id,
            DRAIN_LIMIT,
        )
        .await
        .unwrap_or_else(|| panic!("the idle chat's /gsd:status was never answered"));
    assert_eq!(status.title(), "Status", "the idle chat's answer");

    // Every message's result and "Finished" update, and nothing left
    // queued; the baseline is given `patience` from the load's start.
    let patience = match order {
        Order::Fair => DRAIN_LIMIT,
        Order::OneQueue => BASELINE_WAIT,
    };
    let drain = loop {
        let cards = fake.sent_cards();
        let done = delivered(&cards[before..]);
        let queued = shared.read(|s| s.outbox.len());
        if done.len() == n && queued == 0 {
            let last = cards[before..].iter().map(|c| c.at).max();
            break Drain::All(
                last.map_or(start.elapsed(), |at| at.saturating_duration_since(start)),
            );
        }
        if start.elapsed() >= patience {
            assert!(
                order == Order::OneQueue,
                "{order:?}: {} of {n} messages had their cards within {patience:?}; missing e.g. {:?}; \
                 {queued} left in the outbox; the last cards:\n{}",
                done.len(),
                (0..n).find(|i| !done.contains(i)).map(load_text),
                last_lines(&fake.listing(), FAILURE_LINES)
            );
            break Drain::Stopped {
                done: done.len(),
                queued,
            };
        }
        tokio::time::sleep(DRAIN_POLL).await;
    };
    let recorded = fake.recorded_count() - before;

    let log = log_read::read_all(home.path())
        .unwrap_or_else(|e| panic!("event log: {e}"))
        .records;
    // When the core took the idle chat's message (its event-log line):
    // the rest of its wait was the outbox's.
    let taken = (log.iter())
        .find(|r| {
            r.kind == "message"
                && r.fields.get("sender").and_then(|s| s.as_str()) == Some(IDLE_USER)
        })
        .map(|r| Duration::from_millis(r.ts_ms.saturating_sub(asked_ms)))
        .unwrap_or_else(|| panic!("{order:?}: the idle chat's message is not in the event log"));
    let denied: Vec<_> = log.iter().filter(|r| r.kind == "denied").collect();
    assert!(denied.is_empty(), "{order:?}: messages refused: {denied:?}");
    // Every load message reached its project as a command.
    let commands = (log.iter())
        .filter(|r| r.kind == "command")
        .filter_map(|r| r.fields.get("text")?.as_str().and_then(load_index))
        .collect::<HashSet<_>>();
    assert_eq!(
        commands.len(),
        n,
        "{order:?}: load messages taken as commands"
    );
    drop(running);
    Figures {
        idle: status.at.saturating_duration_since(asked),
        taken,
        drain,
        recorded,
        reactions: (fake.reactions().iter())
            .filter(|(message, _)| sent.contains(message))
            .count(),
    }
}

/// The last `n` lines of `text`.
fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let n = messages();
    assert!(n >= 2, "CLAWMUX_FAIR_MESSAGES must be at least 2");
    let fair = run(Order::Fair, n).await;
    let queue = run(Order::OneQueue, n).await;
    println!(
        "{n} messages for {BUSY_CHATS} chats (a sim-agent project each) over {} s, through the \
         long connection, daemon and courier; an idle chat's /gsd:status half way:",
        SPREAD.as_secs()
    );
    for (name, f) in [("chats in turn", &fair), ("one queue (baseline)", &queue)] {
        let drain = match f.drain {
            Drain::All(took) => format!(
                "all {n} messages' cards delivered in {:.1} s",
                took.as_secs_f64()
            ),
            Drain::Stopped { done, queued } => format!(
                "stopped waiting after {} s: {done} of {n} messages had all their cards, \
                 {queued} entries still queued",
                BASELINE_WAIT.as_secs()
            ),
        };
        println!(
            "  {name:<21} /gsd:status card after {:>7.0} ms (the core took it after {:.0} ms); \
             {drain} ({} cards and updates, {} reactions)",
            ms(f.idle),
            ms(f.taken),
            f.recorded,
            f.reactions
        );
    }
    println!(
        "ratio baseline / chats in turn: {:.1}x sooner",
        ms(queue.idle) / ms(fair.idle).max(1e-3)
    );
}
