//! A daemon under test: the real bridge (project actors, tmux, sim-agent,
//! state and event log) with a recording chat channel instead of Feishu.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use clawmux::bridge::access::policy::ChatKind;
use clawmux::bridge::channels::chat::{CardClick, ChatEvent, ChatMessage, ClickAnswer};
use clawmux::bridge::channels::outbox::{self, Courier, DeliveryError, Failure};
use clawmux::bridge::config::{Config, DmPolicy};
use clawmux::bridge::daemon::{Daemon, DaemonSetup};
use clawmux::detect::Profiles;
use clawmux::feishu::card::Card;
use clawmux::hooks::HookEvent;
use clawmux::message::{Block, Message};
use clawmux::store::SharedState;
use clawmux::store::event_log::EventRecord;
use clawmux::store::log_read;
use clawmux::store::state::{ChatTarget, OutboxEntry, OutboxOp};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::task::TaskTracker;

use crate::support::tmux::TmuxServer;

/// How long a test waits for a card before failing with what it saw. A card
/// takes milliseconds; the margin is for a CI machine whose neighbours take
/// its CPU and disk for a while (a card once came later than 20 s there).
pub const CARD_WAIT: Duration = Duration::from_secs(60);

/// Records delivered cards; sends get `om_<handle>` as their message id.
struct Recorder(mpsc::UnboundedSender<OutboxEntry>);

impl Courier for Recorder {
    type Error = DeliveryError;

    fn classify(&self, error: &DeliveryError) -> Failure {
        error.failure()
    }

    async fn deliver(
        &self,
        entry: &OutboxEntry,
        _id: Option<&str>,
    ) -> Result<Option<String>, DeliveryError> {
        let _ = self.0.send(entry.clone());
        Ok(match &entry.op {
            OutboxOp::Send { handle, .. } | OutboxOp::File { handle, .. } => {
                Some(format!("om_{handle}"))
            }
            OutboxOp::Patch { .. } | OutboxOp::React { .. } => None,
        })
    }
}

pub struct Bridge {
    pub tmux: TmuxServer,
    pub home: tempfile::TempDir,
    pub config: Config,
    chat: mpsc::Sender<ChatEvent>,
    pub hooks: mpsc::Sender<HookEvent>,
    cards: mpsc::UnboundedReceiver<OutboxEntry>,
    /// Every card delivered so far, in order.
    pub seen: Vec<OutboxEntry>,
    daemon: Running,
    next_id: u64,
}

impl Drop for Bridge {
    /// The daemon stops before its tmux server is killed (fields drop after
    /// this): left running, it would start a new server to recover.
    fn drop(&mut self) {
        self.daemon.stop_now();
    }
}

/// A daemon's tasks (it, its outbox, maybe its intake) and its actors.
pub struct Running {
    pub tasks: Vec<JoinHandle<()>>,
    pub actors: TaskTracker,
}

impl Running {
    /// Stops them all as a crash would (no shutdown work) and waits until
    /// they are gone, actors included: an actor still at work could
    /// recreate a session (and the tmux server) a test just removed.
    pub async fn stop(&mut self) {
        for t in self.tasks.drain(..) {
            t.abort();
            let _ = t.await;
        }
        self.actors.close();
        self.actors.wait().await;
    }

    /// [`Running::stop`] from a `Drop` (the tests run on multi-thread
    /// runtimes).
    pub fn stop_now(&mut self) {
        self.tasks.iter().for_each(JoinHandle::abort);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            tokio::task::block_in_place(|| runtime.block_on(self.stop()));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop_now();
    }
}

/// Waits until `done`, checking every 50 ms; fails after [`CARD_WAIT`].
pub async fn until(mut done: impl FnMut() -> bool, what: &str) {
    let deadline = tokio::time::Instant::now() + CARD_WAIT;
    while !done() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "not within {CARD_WAIT:?}: {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The test's configuration: two allowed users, one approver, fast progress.
pub fn test_config(socket: &str, home: &Path) -> Config {
    let mut config = Config::parse("").expect("defaults parse");
    config.tmux.socket = socket.to_string();
    config.tmux.width = 120;
    config.tmux.height = 40;
    config.workspace_root = home.join("ws").display().to_string();
    config.agent.command = "sim".into();
    config.progress.interval_secs = 1;
    config.policy.dm_policy = DmPolicy::Allowlist;
    config.policy.allow_from = vec!["ou_alice".into(), "ou_bob".into()];
    config.policy.approvers = vec!["ou_alice".into()];
    config
}

impl Bridge {
    pub async fn start() -> Bridge {
        let tmux = TmuxServer::new();
        let home = tempfile::tempdir().expect("temp dir");
        let config = test_config(&tmux.socket, home.path());
        Bridge::start_with(tmux, home, config).await
    }

    pub async fn start_with(tmux: TmuxServer, home: tempfile::TempDir, config: Config) -> Bridge {
        let (cards_tx, cards) = mpsc::unbounded_channel();
        let (chat, hooks, daemon) = spawn_daemon(&config, home.path(), cards_tx);
        Bridge {
            tmux,
            home,
            config,
            chat,
            hooks,
            cards,
            seen: Vec::new(),
            daemon,
            next_id: 0,
        }
    }

    /// Stops the daemon (as a crash would: no shutdown work) and starts a
    /// new one on the same state directory and tmux server.
    pub async fn restart(&mut self) {
        self.stop().await;
        self.resume().await;
    }

    /// Stops the daemon as a crash would.
    pub async fn stop(&mut self) {
        self.daemon.stop().await;
    }

    /// Starts a daemon on the existing state directory.
    pub async fn resume(&mut self) {
        let (cards_tx, cards) = mpsc::unbounded_channel();
        let (chat, hooks, daemon) = spawn_daemon(&self.config, self.home.path(), cards_tx);
        (self.chat, self.hooks, self.cards, self.daemon) = (chat, hooks, cards, daemon);
    }

    fn id(&mut self) -> String {
        self.next_id += 1;
        format!("t{}", self.next_id)
    }

    /// A direct message from `sender` in chat `chat`.
    pub async fn say(&mut self, chat: &str, sender: &str, text: &str) -> String {
        let id = self.id();
        let message = ChatMessage {
            event_id: format!("ev_{id}"),
            message_id: format!("om_in_{id}"),
            target: ChatTarget::Chat {
                id: clawmux::store::ids::chat(chat),
            },
            kind: ChatKind::Direct,
            sender: sender.into(),
            text: text.into(),
            mentions_bot: false,
            parent_id: None,
            rate_counted: false,
            image_not_saved: None,
        };
        self.chat
            .send(ChatEvent::Message(message))
            .await
            .expect("daemon runs");
        format!("om_in_{id}")
    }

    /// Clicks a button with callback `value` as `operator`; returns the answer.
    pub async fn click(&mut self, chat: &str, operator: &str, value: Value) -> ClickAnswer {
        let id = self.id();
        let (tx, rx) = oneshot::channel();
        let click = CardClick {
            event_id: format!("ev_{id}"),
            operator: operator.into(),
            value,
            option: None,
            message_id: "om_card".into(),
            target: ChatTarget::Chat {
                id: clawmux::store::ids::chat(chat),
            },
            respond: Some(tx),
        };
        self.chat
            .send(ChatEvent::Click(click))
            .await
            .expect("daemon runs");
        tokio::time::timeout(CARD_WAIT, rx)
            .await
            .expect("answered in time")
            .expect("answered")
    }

    /// Waits for a delivered card whose text satisfies `pred`.
    pub async fn card(&mut self, what: &str, pred: impl Fn(&OutboxEntry) -> bool) -> OutboxEntry {
        if let Some(e) = self.seen.iter().find(|e| pred(e)) {
            return e.clone();
        }
        let deadline = tokio::time::Instant::now() + CARD_WAIT;
        loop {
            match tokio::time::timeout_at(deadline, self.cards.recv()).await {
                Ok(Some(e)) => {
                    self.seen.push(e.clone());
                    if pred(&e) {
                        return e;
                    }
                }
                _ => panic!("no card {what} within {CARD_WAIT:?}\n{}", self.report()),
            }
        }
    }

    /// Waits for a card whose text contains `needle`.
    pub async fn card_with(&mut self, needle: &str) -> OutboxEntry {
        self.card(&format!("containing {needle:?}"), |e| {
            e.text().contains(needle)
        })
        .await
    }

    /// The first new card (not an update) containing `needle`: a result.
    pub async fn sent_with(&mut self, needle: &str) -> OutboxEntry {
        self.card(&format!("a new card containing {needle:?}"), |e| {
            is_send(e) && e.text().contains(needle)
        })
        .await
    }

    /// What a failed wait shows: the cards so far (each cut short), then
    /// the event log with times relative to now, so a late or missing step
    /// is visible at the end of the output.
    fn report(&self) -> String {
        let cards: Vec<String> = self
            .seen
            .iter()
            .map(|e| e.text().chars().take(300).collect())
            .collect();
        let now = clawmux::store::clock::now_ms();
        let events: Vec<String> = self
            .events()
            .iter()
            .map(|r| {
                let ago = now.saturating_sub(r.ts_ms);
                format!("-{ago}ms {} {:?}", r.kind, r.fields)
            })
            .collect();
        format!(
            "cards so far:\n{}\nevent log:\n{}",
            cards.join("\n---\n"),
            events.join("\n")
        )
    }

    /// Every event-log record so far.
    pub fn events(&self) -> Vec<EventRecord> {
        log_read::read_all(self.home.path())
            .expect("event log reads")
            .records
    }
}

fn spawn_daemon(
    config: &Config,
    home: &Path,
    cards: mpsc::UnboundedSender<OutboxEntry>,
) -> (mpsc::Sender<ChatEvent>, mpsc::Sender<HookEvent>, Running) {
    let (shared, _) = SharedState::open(home).expect("state opens");
    let setup = DaemonSetup {
        config: Arc::new(config.clone()),
        shared: shared.clone(),
        profiles: Profiles::defaults().expect("default profiles"),
        state_dir: home.to_path_buf(),
        sim_agent: format!("{} sim-agent", env!("CARGO_BIN_EXE_clawmux")),
        rates: Default::default(),
        actors: TaskTracker::new(),
    };
    let actors = setup.actors.clone();
    let (chat_tx, chat_rx) = mpsc::channel(64);
    let (hook_tx, hook_rx) = mpsc::channel(64);
    let daemon = tokio::spawn(Daemon::new(setup).run(chat_rx, hook_rx));
    let outbox = tokio::spawn(outbox::run(shared, Recorder(cards)));
    let tasks = vec![daemon, outbox];
    (chat_tx, hook_tx, Running { tasks, actors })
}

/// The callback value of the button labelled `label` on a card.
pub fn button_value(card: &OutboxEntry, label: &str) -> Value {
    fn walk<'a>(v: &'a Value, label: &str) -> Option<&'a Value> {
        if v.get("tag").and_then(Value::as_str) == Some("button")
            && v.pointer("/text/content").and_then(Value::as_str) == Some(label)
        {
            return v.pointer("/behaviors/0/value");
        }
        match v {
            Value::Array(items) => items.iter().find_map(|i| walk(i, label)),
            Value::Object(map) => map.values().find_map(|i| walk(i, label)),
            _ => None,
        }
    }
    walk(&card.card(), label)
        .cloned()
        .unwrap_or_else(|| panic!("no button {label:?} on card:\n{}", card.text()))
}

/// What a delivered entry shows: its text (English, its panels opened:
/// all a reader can see), and its card as Feishu is sent it.
pub trait Shown {
    fn text(&self) -> String;
    fn card(&self) -> Value;
}

impl Shown for OutboxEntry {
    fn text(&self) -> String {
        (self.message.as_ref()).map_or_else(String::new, |m| unfolded(m).to_text())
    }

    fn card(&self) -> Value {
        let card = self.message.as_ref().map(Card::from);
        serde_json::to_value(card).expect("a card serializes")
    }
}

/// `message` with each folded panel opened in place: its title, then what
/// it holds.
fn unfolded(message: &Message) -> Message {
    fn open(blocks: &[Block]) -> Vec<Block> {
        let open_one = |b: &Block| match b {
            Block::Folded { title, blocks } => {
                let mut out = vec![Block::Text(title.clone())];
                out.extend(open(blocks));
                out
            }
            other => vec![other.clone()],
        };
        blocks.iter().flat_map(open_one).collect()
    }
    Message {
        blocks: open(&message.blocks),
        ..message.clone()
    }
}

/// A new card, not an update of one.
pub fn is_send(e: &OutboxEntry) -> bool {
    matches!(e.op, clawmux::store::state::OutboxOp::Send { .. })
}
