//! What the state holds (in `state.db`, see [`super::db`]): projects, each
//! chat's current project, pending approvals, delivered card ids, the
//! outbox of cards not yet delivered, and the ids of chat events already
//! handled.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

pub use super::ids::{
    ApprovalId, CardHandle, ChatId, ChatTarget, JobId, ProjectName, RunId, SessionName, UserId,
};
use super::ids::{SessionPane, SessionPaneError};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use clawmux_control::{PaneId, SessionId, WindowId};
use clawmux_message::Message;

/// Chat event ids remembered for dedupe: Feishu redelivers within minutes,
/// so a few thousand recent ids are plenty.
pub const DEDUPE_CAPACITY: usize = 4096;
/// Delivered cards whose message ids are kept: only recent cards are
/// patched (progress, approvals), and a command makes a handful, so this
/// covers hundreds of commands while keeping the state (compared with the
/// last save on every change) from growing for ever.
pub const CARDS_CAPACITY: usize = 2048;

#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct State {
    /// Project name -> what clawmux knows of it.
    pub projects: BTreeMap<ProjectName, ProjectRecord>,
    /// Chat id -> the project its messages go to.
    pub chats: BTreeMap<ChatId, ProjectName>,
    /// Approval id -> a prompt waiting for an answer from chat.
    pub approvals: BTreeMap<ApprovalId, PendingApproval>,
    /// Card handle -> the chat message that shows it, once delivered.
    pub cards: DeliveredCards,
    /// Cards to deliver, oldest first.
    pub outbox: VecDeque<OutboxEntry>,
    /// Chat commands not finished yet, oldest first: after a restart they
    /// are typed (if they never were) or followed to their result.
    pub jobs: Vec<Job>,
    /// Recently handled chat event and message ids.
    pub dedupe: DedupeIds,
    /// Deliveries Feishu refused for good, newest last (at most
    /// [`DEAD_LETTER_CAPACITY`]): moved aside so later cards go out.
    pub dead_letters: VecDeque<DeadLetter>,
    /// Running commands' streamed answer cards, by command id.
    pub streams: BTreeMap<JobId, super::stream::AnswerStream>,
    /// Chat id -> after how long (seconds) a waiting prompt is reminded
    /// of; a chat not here gets no reminders (the default).
    pub reminders: BTreeMap<ChatId, u64>,
    /// Prompts already reminded of (once each); pruned as they go.
    pub reminded: std::collections::BTreeSet<ApprovalId>,
    /// Card handles of prompts answered or gone, newest last (at most
    /// [`CLOSED_CAPACITY`]): a late reply to one is refused, never typed
    /// into whatever the agent shows by then.
    pub closed: VecDeque<CardHandle>,
}

/// Closed prompts remembered: more than anyone scrolls back to reply to.
pub const CLOSED_CAPACITY: usize = 256;

impl State {
    /// Remembers that the prompt shown by `card` is closed.
    pub fn close_card(&mut self, card: &CardHandle) {
        self.closed.push_back(card.clone());
        while self.closed.len() > CLOSED_CAPACITY {
            self.closed.pop_front();
        }
    }

    /// Whether chat message `message_id` shows a closed prompt.
    pub fn shows_closed_prompt(&self, message_id: &str) -> bool {
        (self.closed.iter()).any(|c| self.cards.get(c).is_some_and(|m| m == message_id))
    }
}

/// Dead letters kept for the operator to inspect: enough to see a pattern,
/// small enough to keep in memory and compare on every save.
pub const DEAD_LETTER_CAPACITY: usize = 64;

/// An outbox entry that can never be delivered, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeadLetter {
    pub entry: OutboxEntry,
    /// Feishu's error code, when it sent one.
    pub code: Option<i64>,
    pub error: String,
    pub at_ms: u64,
}

#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProjectRecord {
    pub workspace: String,
    pub created_ms: u64,
    pub last_command: Option<String>,
    /// The `[hosts]` entry it runs on; `None`: the `[tmux]` server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// A pane clawmux watches but did not create (`/gsd:adopt`): never
    /// created, resized or killed by clawmux.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adopted: Option<AdoptedPane>,
    /// The agent chosen in chat (`/gsd:new-project web --agent codex`);
    /// `None`: the config's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The chats that made or used it, the latest first (at most
    /// [`MAX_PROJECT_CHATS`]): where its news nobody asked for goes (a
    /// prompt drawn for a command typed at the desk, an agent error) once
    /// no chat has it as its current project.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chats: Vec<ChatId>,
}

/// Chats a project remembers at most: a group and a few people's own
/// chats; the oldest is forgotten first.
pub const MAX_PROJECT_CHATS: usize = 8;

impl ProjectRecord {
    /// `chat` made or used it just now.
    pub fn used_in(&mut self, chat: &ChatId) {
        // The console and a run are no chats to remember.
        if *chat == ChatId::console() || *chat == ChatId::run() {
            return;
        }
        self.chats.retain(|c| c != chat);
        self.chats.insert(0, chat.clone());
        self.chats.truncate(MAX_PROJECT_CHATS);
    }
}

/// An adopted pane, known by more than its id: a pane id names a pane only
/// for its server's life (a restarted server hands `%0` out again, to
/// whatever starts first, in a session that may have the same name), so
/// the server's process, the session, the window and the pane's own
/// process are kept too, and checked whenever clawmux attaches to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "AdoptedForm", into = "AdoptedForm")]
pub struct AdoptedPane {
    pub session: SessionName,
    pub pane: PaneId,
    /// `None` only in a record an older clawmux wrote (`SESSION:%N`): such
    /// a pane cannot be told from another, and is not attached to again.
    pub identity: Option<PaneIdentity>,
}

/// What tells one pane from another across tmux server restarts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaneIdentity {
    /// The tmux server's process id (`#{pid}`).
    pub server_pid: u32,
    pub session_id: SessionId,
    pub window_id: WindowId,
    /// The process the pane was started with (`#{pane_pid}`).
    pub pane_pid: u32,
}

/// How an [`AdoptedPane`] is written: an object; read also as the
/// `SESSION:%N` string of older records.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum AdoptedForm {
    Whole {
        session: SessionName,
        pane: PaneId,
        identity: PaneIdentity,
    },
    Old(String),
}

/// An older record of an adopted pane that is not `SESSION:%N`.
#[derive(Debug, thiserror::Error)]
#[error("an older adopted pane record: {0}")]
pub struct AdoptedRecordError(#[from] SessionPaneError);

impl TryFrom<AdoptedForm> for AdoptedPane {
    type Error = AdoptedRecordError;

    fn try_from(form: AdoptedForm) -> Result<Self, AdoptedRecordError> {
        match form {
            AdoptedForm::Whole {
                session,
                pane,
                identity,
            } => Ok(AdoptedPane {
                session,
                pane,
                identity: Some(identity),
            }),
            AdoptedForm::Old(record) => {
                let SessionPane { session, pane } = SessionPane::parse(&record)?;
                Ok(AdoptedPane {
                    session,
                    pane,
                    identity: None,
                })
            }
        }
    }
}

impl From<AdoptedPane> for AdoptedForm {
    fn from(a: AdoptedPane) -> Self {
        match a.identity {
            Some(identity) => AdoptedForm::Whole {
                session: a.session,
                pane: a.pane,
                identity,
            },
            None => AdoptedForm::Old(a.at().to_string()),
        }
    }
}

impl AdoptedPane {
    /// The pane by its session (`main:%1`), as the event log and older
    /// records name it.
    pub fn at(&self) -> SessionPane {
        SessionPane {
            session: self.session.clone(),
            pane: self.pane,
        }
    }
}

impl std::fmt::Display for AdoptedPane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.at().fmt(f)
    }
}

/// A chat command on its way through a project: what the daemon tracks and
/// what a project actor runs. Persisted, so after a restart a command not
/// typed yet is typed, one whose typing was cut short is resolved from the
/// screen, and a started one is followed to its result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "JobRecord", into = "JobRecord")]
pub struct Job {
    pub id: JobId,
    pub project: ProjectName,
    pub text: String,
    pub target: ChatTarget,
    /// The chat message it came from; its cards reply to it.
    pub reply_to: Option<String>,
    /// The handle of its progress card, once started.
    pub progress: Option<CardHandle>,
    /// Where it is in its life.
    pub stage: Stage,
    /// Its chat was told it waits in the queue (not again after a restart).
    pub told_queued: bool,
    /// Already retried once after its session was lost.
    pub retried: bool,
    /// How long it may run, from when it starts.
    pub timeout_secs: u64,
    pub created_ms: u64,
}

/// Where a command is in its life. A deadline (when it times out, in ms
/// since the Unix epoch) is set once its keys were submitted and kept
/// across restarts; a command not typed has none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Not typed yet: next, or waiting in the queue.
    Waiting,
    /// The intent to type it was recorded before the first key: keys may
    /// have reached the pane; after a restart the screen decides.
    Typing {
        intent: TypingIntent,
        deadline_ms: Option<u64>,
    },
    /// Typed and submitted (or followed: an answer after a restart).
    Started { deadline_ms: Option<u64> },
}

impl Stage {
    /// When it times out, once set.
    pub fn deadline_ms(&self) -> Option<u64> {
        match *self {
            Stage::Waiting => None,
            Stage::Typing { deadline_ms, .. } | Stage::Started { deadline_ms } => deadline_ms,
        }
    }

    pub fn is_started(&self) -> bool {
        matches!(self, Stage::Started { .. })
    }

    /// Its keys were submitted and it runs until `at`: a command begun
    /// without a recorded intent (typed again after a lost session) has
    /// nothing for the screen to decide, and is started.
    pub fn began(&mut self, at: u64) {
        match self {
            Stage::Typing { deadline_ms, .. } | Stage::Started { deadline_ms } => {
                *deadline_ms = Some(at)
            }
            Stage::Waiting => {
                *self = Stage::Started {
                    deadline_ms: Some(at),
                }
            }
        }
    }

    /// The agent took it: started, its deadline kept.
    pub fn start(&mut self) {
        *self = Stage::Started {
            deadline_ms: self.deadline_ms(),
        };
    }
}

/// [`Job`] as saved: flat, as written before its stage was a type (rows
/// and `state.json` files of older releases read the same).
#[derive(Serialize, Deserialize)]
struct JobRecord {
    id: JobId,
    project: ProjectName,
    text: String,
    target: ChatTarget,
    reply_to: Option<String>,
    progress: Option<CardHandle>,
    started: bool,
    #[serde(default)]
    queued: bool,
    #[serde(default)]
    typing: Option<TypingIntent>,
    #[serde(default)]
    retried: bool,
    #[serde(default = "default_timeout_secs")]
    timeout_secs: u64,
    #[serde(default)]
    deadline_ms: Option<u64>,
    created_ms: u64,
}

impl From<JobRecord> for Job {
    fn from(r: JobRecord) -> Job {
        let deadline_ms = r.deadline_ms;
        let stage = match (r.started, r.typing) {
            (true, _) => Stage::Started { deadline_ms },
            (false, Some(intent)) => Stage::Typing {
                intent,
                deadline_ms,
            },
            (false, None) => Stage::Waiting,
        };
        Job {
            id: r.id,
            project: r.project,
            text: r.text,
            target: r.target,
            reply_to: r.reply_to,
            progress: r.progress,
            stage,
            told_queued: r.queued,
            retried: r.retried,
            timeout_secs: r.timeout_secs,
            created_ms: r.created_ms,
        }
    }
}

impl From<Job> for JobRecord {
    fn from(j: Job) -> JobRecord {
        let typing = match j.stage {
            Stage::Typing { intent, .. } => Some(intent),
            _ => None,
        };
        JobRecord {
            started: j.stage.is_started(),
            typing,
            deadline_ms: j.stage.deadline_ms(),
            id: j.id,
            project: j.project,
            text: j.text,
            target: j.target,
            reply_to: j.reply_to,
            progress: j.progress,
            queued: j.told_queued,
            retried: j.retried,
            timeout_secs: j.timeout_secs,
            created_ms: j.created_ms,
        }
    }
}

impl Job {
    /// A new command record (a fresh id, nothing typed or sent for it yet)
    /// that may run `timeout_secs`.
    pub fn new(
        project: &ProjectName,
        text: &str,
        target: ChatTarget,
        reply_to: Option<&str>,
        timeout_secs: u64,
        created_ms: u64,
    ) -> Job {
        Job {
            id: JobId::random(),
            project: project.clone(),
            text: text.to_string(),
            target,
            reply_to: reply_to.map(String::from),
            progress: None,
            stage: Stage::Waiting,
            told_queued: false,
            retried: false,
            timeout_secs,
            created_ms,
        }
    }
}

/// The default command timeout, for records written before it was kept.
fn default_timeout_secs() -> u64 {
    600
}

/// What was on screen when clawmux decided to type a command: on resume, a
/// screen that has not changed since says no key reached the pane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TypingIntent {
    /// A hash of the visible rows, taken just before typing.
    pub screen: u64,
}

/// An approval's options and kind are the ones detection read off the
/// screen, persisted as they are.
pub use clawmux_detect::{ApprovalKind, ApprovalOption};

/// A prompt waiting for an answer, as read off the agent's pane: what the
/// project actor reports and, inside [`PendingApproval`], what is saved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Approval {
    pub id: ApprovalId,
    /// The tmux session the prompt is in (a check against stale clicks).
    pub session: SessionName,
    /// The pane (`%N`) to type the answer into.
    pub pane: PaneId,
    pub kind: ApprovalKind,
    pub question: String,
    /// What is asked about (the command, the file and diff, the plan),
    /// bounded by detection.
    #[serde(default)]
    pub body: String,
    pub options: Vec<ApprovalOption>,
}

/// An approval waiting for its answer from chat: the prompt, and where its
/// card is. Saved flat (the prompt's fields beside these).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingApproval {
    #[serde(flatten)]
    pub approval: Approval,
    pub project: ProjectName,
    pub target: ChatTarget,
    /// The handle of the approval card (see [`State::cards`]).
    pub card: CardHandle,
    pub created_ms: u64,
    /// Has anyone been shown it: a chat (its card), or a `clawmux run`
    /// (its outcome, or a refused answer that named it)? A run's answer
    /// that names no prompt answers only a prompt someone saw: the agent
    /// may have asked something else since the one a caller read.
    /// Saved (a run with no `serve` shows it, the next answers it); a
    /// record from before the field is unseen.
    #[serde(default)]
    pub shown: bool,
    /// Where it is in its life. Not saved: after a restart an answer that
    /// was being typed is over (typed or not), and the screen says which.
    #[serde(skip)]
    pub stage: ApprovalStage,
}

/// Where a waiting approval is in its life: shown and waiting for an
/// answer, or an answer being typed (a second answer waits for how that
/// ends). Answered or gone, it leaves [`State::approvals`] and its card
/// joins [`State::closed`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ApprovalStage {
    #[default]
    Waiting,
    Answering,
}

impl std::ops::Deref for PendingApproval {
    type Target = Approval;

    fn deref(&self) -> &Approval {
        &self.approval
    }
}

/// One delivery. `uuid` is the channel's idempotency key (Feishu's): the
/// same entry retried (or resent after a crash) is delivered once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "SavedEntry")]
pub struct OutboxEntry {
    pub uuid: String,
    pub op: OutboxOp,
    /// What it shows, before a channel draws it: a card's, or what a text
    /// reader sees of a file; none for a reaction.
    pub message: Option<Message>,
    pub created_ms: u64,
}

/// An outbox entry as saved by this release (`message`) or by one before
/// it, which saved the Feishu card it would send (`card`, card JSON 2.0,
/// with its plain `text`): read into a message once, on load.
#[derive(Deserialize)]
struct SavedEntry {
    uuid: String,
    op: OutboxOp,
    #[serde(default)]
    message: Option<Message>,
    #[serde(default)]
    card: Option<Value>,
    #[serde(default)]
    text: String,
    created_ms: u64,
}

impl TryFrom<SavedEntry> for OutboxEntry {
    type Error = &'static str;

    fn try_from(saved: SavedEntry) -> Result<OutboxEntry, &'static str> {
        // A file's card was null, its text what a reader saw of it.
        let card = saved.card.filter(|c| !c.is_null());
        let message = match (saved.message, card, &saved.op) {
            (Some(message), ..) => Some(message),
            (None, _, OutboxOp::React { .. }) => None,
            (None, Some(card), _) => Some(super::saved_card::message_of(&card, &saved.text)),
            (None, None, _) if !saved.text.is_empty() => {
                Some(super::saved_card::message_of(&Value::Null, &saved.text))
            }
            (None, None, _) => return Err("an outbox entry with neither a message nor a card"),
        };
        Ok(OutboxEntry {
            uuid: saved.uuid,
            op: saved.op,
            message,
            created_ms: saved.created_ms,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OutboxOp {
    /// A new card; its message id is recorded under `handle` when delivered.
    Send {
        target: ChatTarget,
        handle: CardHandle,
        reply_to: Option<String>,
        /// A picture for the card: the PNG at this path (kept out of the
        /// state file) is uploaded first and its key put in the card's
        /// `img` element (see `bridge::screen_picture`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        image: Option<String>,
    },
    /// Replace the card shown under `handle`.
    Patch { handle: CardHandle },
    /// A file message: the file at `path` (kept out of the state file) is
    /// uploaded, then sent as `file_name`; its message id recorded under
    /// `handle`.
    File {
        target: ChatTarget,
        handle: CardHandle,
        reply_to: Option<String>,
        path: String,
        file_name: String,
    },
    /// A reaction (`emoji`, Feishu's emoji type) on the chat message
    /// `message_id`, e.g. on a command when it is taken and when it ends.
    React {
        handle: CardHandle,
        message_id: String,
        emoji: String,
    },
}

impl OutboxOp {
    pub fn handle(&self) -> &CardHandle {
        match self {
            OutboxOp::Send { handle, .. }
            | OutboxOp::Patch { handle }
            | OutboxOp::File { handle, .. }
            | OutboxOp::React { handle, .. } => handle,
        }
    }
}

impl State {
    /// Queues an outbox entry: the one way cards enter the outbox. Cards
    /// for a `clawmux run` are not queued (it reads its outcome from the
    /// project's events), nor are updates of a card never queued; a patch
    /// replaces a queued, undelivered patch of the same card.
    pub fn queue(&mut self, entry: OutboxEntry) {
        match &entry.op {
            OutboxOp::Send { target, .. } | OutboxOp::File { target, .. } if target.is_run() => {}
            OutboxOp::Patch { handle } if !self.card_is_known(handle) => {}
            OutboxOp::Patch { .. } => self.queue_patch(entry),
            _ => self.outbox.push_back(entry),
        }
    }

    /// Was the card `handle` delivered, or is it queued?
    fn card_is_known(&self, handle: &CardHandle) -> bool {
        self.cards.get(handle).is_some()
            || (self.outbox.iter())
                .any(|e| matches!(&e.op, OutboxOp::Send { handle: h, .. } if h == handle))
    }

    /// Queues a patch (`OutboxOp::Patch`), replacing a queued, undelivered patch of the
    /// same card: progress updates coalesce, the latest wins.
    fn queue_patch(&mut self, patch: OutboxEntry) {
        if let Some(queued) = self.outbox.iter_mut().rev().find(|e| e.op == patch.op) {
            queued.message = patch.message;
            return;
        }
        self.outbox.push_back(patch);
    }
}

/// A bounded set of recently seen ids, oldest evicted first.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct DedupeIds {
    order: VecDeque<String>,
    seen: HashSet<String>,
}

impl DedupeIds {
    /// Records `id`; true the first time it is seen.
    pub fn first_seen(&mut self, id: &str) -> bool {
        if self.seen.contains(id) {
            return false;
        }
        if self.order.len() == DEDUPE_CAPACITY
            && let Some(old) = self.order.pop_front()
        {
            self.seen.remove(&old);
        }
        self.order.push_back(id.to_string());
        self.seen.insert(id.to_string());
        true
    }

    pub fn contains(&self, id: &str) -> bool {
        self.seen.contains(id)
    }

    /// The ids, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &String> {
        self.order.iter()
    }
}

impl Serialize for DedupeIds {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.order.serialize(s)
    }
}

impl<'de> Deserialize<'de> for DedupeIds {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let ids = Vec::<String>::deserialize(d)?;
        let mut set = DedupeIds::default();
        let skip = ids.len().saturating_sub(DEDUPE_CAPACITY);
        for id in ids.into_iter().skip(skip) {
            set.first_seen(&id);
        }
        Ok(set)
    }
}

/// The most recent [`CARDS_CAPACITY`] delivered cards: handle -> message
/// id. Stored as a JSON object in delivery order (a state file from before,
/// with its keys sorted, still loads).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct DeliveredCards {
    order: VecDeque<String>,
    ids: HashMap<String, String>,
}

impl DeliveredCards {
    pub fn get(&self, handle: &str) -> Option<&String> {
        self.ids.get(handle)
    }

    /// Records a delivered card; the oldest is forgotten past the capacity.
    pub fn insert(&mut self, handle: String, message_id: String) {
        if self.ids.insert(handle.clone(), message_id).is_none() {
            self.order.push_back(handle);
        }
        while self.order.len() > CARDS_CAPACITY {
            if let Some(old) = self.order.pop_front() {
                self.ids.remove(&old);
            }
        }
    }

    /// Handle and message id of each card, oldest delivery first.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &String)> {
        (self.order.iter()).filter_map(|h| Some((h, self.ids.get(h)?)))
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.order.len()
    }
}

impl Serialize for DeliveredCards {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.order.len()))?;
        for handle in &self.order {
            if let Some(id) = self.ids.get(handle) {
                map.serialize_entry(handle, id)?;
            }
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for DeliveredCards {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct InOrder;
        impl<'de> serde::de::Visitor<'de> for InOrder {
            type Value = DeliveredCards;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object of card handles to message ids")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<DeliveredCards, A::Error> {
                let mut cards = DeliveredCards::default();
                while let Some((handle, id)) = map.next_entry::<String, String>()? {
                    cards.insert(handle, id);
                }
                Ok(cards)
            }
        }
        d.deserialize_map(InOrder)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An approval's pane is a tmux pane id, on disk `%N` as before; a
    /// state file naming anything else is refused as it is read, not
    /// typed into later.
    #[test]
    fn an_approvals_pane_is_a_pane_id() {
        let json = |pane: &str| {
            serde_json::json!({
                "id": "a1", "session": "cm-web", "pane": pane, "kind": "permission",
                "question": "Proceed?", "options": []
            })
        };
        let a: Approval = serde_json::from_value(json("%7")).unwrap();
        assert_eq!(a.pane, PaneId(7));
        assert_eq!(serde_json::to_value(&a).unwrap()["pane"], "%7");
        for bad in ["7", "%", "%1;kill-server", "@1", ""] {
            let err = serde_json::from_value::<Approval>(json(bad)).unwrap_err();
            assert!(err.to_string().contains("not a tmux id"), "{bad:?}: {err}");
        }
    }

    /// A job's stage is saved flat, as before it was a type: rows written
    /// by older releases read into the stage they meant, and are written
    /// back the same.
    #[test]
    fn a_jobs_stage_reads_and_writes_its_old_flat_record() {
        let row = |started: bool, typing: Option<u64>, deadline: Option<u64>| {
            serde_json::json!({
                "id": "j1", "project": "shop", "text": "/gsd:progress",
                "target": {"type": "console"}, "reply_to": null, "progress": null,
                "started": started, "queued": true,
                "typing": typing.map(|screen| serde_json::json!({"screen": screen})),
                "retried": false, "timeout_secs": 600, "deadline_ms": deadline,
                "created_ms": 5
            })
        };
        let intent = TypingIntent { screen: 9 };
        let cases = [
            (row(false, None, None), Stage::Waiting),
            (
                row(false, Some(9), Some(70)),
                Stage::Typing {
                    intent,
                    deadline_ms: Some(70),
                },
            ),
            (
                row(true, Some(9), Some(70)),
                Stage::Started {
                    deadline_ms: Some(70),
                },
            ),
            (row(true, None, None), Stage::Started { deadline_ms: None }),
        ];
        for (json, stage) in cases {
            let job: Job = serde_json::from_value(json.clone()).unwrap();
            assert_eq!(job.stage, stage, "{json}");
            assert!(job.told_queued);
            let back = serde_json::to_value(&job).unwrap();
            assert_eq!(back["started"], json["started"]);
            assert_eq!(back["deadline_ms"], json["deadline_ms"]);
            let again: Job = serde_json::from_value(back).unwrap();
            assert_eq!(again, job);
        }
        // Written before the fields existed: waiting, with the default timeout.
        let mut old = row(false, None, None);
        for field in ["queued", "typing", "retried", "timeout_secs", "deadline_ms"] {
            old.as_object_mut().unwrap().remove(field);
        }
        let job: Job = serde_json::from_value(old).unwrap();
        assert_eq!((job.stage, job.told_queued), (Stage::Waiting, false));
        assert_eq!(job.timeout_secs, default_timeout_secs());
    }

    /// An answer being typed is not saved: a restarted daemon finds the
    /// approval waiting (the screen says whether the answer took).
    #[test]
    fn an_approval_being_answered_is_saved_as_waiting() {
        let pending = PendingApproval {
            approval: Approval {
                id: "ap1".parse().unwrap(),
                session: crate::ids::session("cm-demo"),
                pane: PaneId(1),
                kind: ApprovalKind::Permission,
                question: "Do you want to proceed?".into(),
                body: String::new(),
                options: ApprovalOption::numbered(&["Yes", "No"]),
            },
            project: crate::ids::project("demo"),
            target: ChatTarget::Console,
            card: "card1".parse().unwrap(),
            created_ms: 1,
            shown: true,
            stage: ApprovalStage::Answering,
        };
        let json = serde_json::to_value(&pending).unwrap();
        assert!(json.get("stage").is_none(), "{json}");
        let back: PendingApproval = serde_json::from_value(json).unwrap();
        assert_eq!(back.stage, ApprovalStage::Waiting);
        assert_eq!(back.approval, pending.approval);
    }

    #[test]
    fn adopted_panes_round_trip_and_old_records_are_read_without_identity() {
        let identity = PaneIdentity {
            server_pid: 41,
            session_id: SessionId(2),
            window_id: WindowId(3),
            pane_pid: 99,
        };
        let whole = AdoptedPane {
            session: crate::ids::session("work"),
            pane: PaneId(12),
            identity: Some(identity),
        };
        let json = serde_json::to_string(&whole).unwrap();
        assert_eq!(serde_json::from_str::<AdoptedPane>(&json).unwrap(), whole);
        let old: AdoptedPane = serde_json::from_str("\"work:%12\"").unwrap();
        assert_eq!(
            (old.session.as_str(), old.pane, old.identity),
            ("work", PaneId(12), None)
        );
        assert_eq!(old.to_string(), "work:%12");
        assert_eq!(serde_json::to_string(&old).unwrap(), "\"work:%12\"");
        for bad in [
            "\"work\"",
            "\"work:12\"",
            "{\"session\":\"w\",\"pane\":\"%1\"}",
        ] {
            assert!(serde_json::from_str::<AdoptedPane>(bad).is_err(), "{bad}");
        }
    }
    use serde_json::json;

    #[test]
    fn delivered_cards_are_bounded_and_keep_their_order_in_json() {
        let mut cards = DeliveredCards::default();
        for i in 0..CARDS_CAPACITY + 10 {
            cards.insert(format!("h{i}"), format!("om_{i}"));
        }
        cards.insert("h20".into(), "om_again".into());
        assert_eq!(cards.len(), CARDS_CAPACITY);
        assert_eq!(cards.get("h9"), None, "oldest forgotten");
        assert_eq!(cards.get("h10").map(String::as_str), Some("om_10"));
        assert_eq!(cards.get("h20").map(String::as_str), Some("om_again"));
        let json = serde_json::to_string(&cards).unwrap();
        assert!(
            json.starts_with(r#"{"h10":"om_10","h11""#),
            "{}",
            &json[..40]
        );
        let back: DeliveredCards = serde_json::from_str(&json).unwrap();
        assert_eq!(back, cards);
        // A state file from before (a sorted object) loads as it is.
        let old: DeliveredCards = serde_json::from_str(r#"{"a":"om_1","b":"om_2"}"#).unwrap();
        assert_eq!(old.get("b").map(String::as_str), Some("om_2"));
        assert!(serde_json::from_str::<DeliveredCards>(r#"{"a":1}"#).is_err());
    }

    #[test]
    fn dedupe_is_bounded_and_survives_serialization() {
        let mut d = DedupeIds::default();
        assert!(d.first_seen("a"));
        assert!(!d.first_seen("a"));
        for i in 0..DEDUPE_CAPACITY {
            d.first_seen(&i.to_string());
        }
        assert!(!d.contains("a"), "oldest evicted");
        let back: DedupeIds = serde_json::from_str(&serde_json::to_string(&d).unwrap()).unwrap();
        assert_eq!(back, d);
        assert!(back.contains(&(DEDUPE_CAPACITY - 1).to_string()));
    }

    #[test]
    fn patches_coalesce_but_sends_do_not() {
        let mut s = State::default();
        let send = OutboxOp::Send {
            target: ChatTarget::Console,
            handle: "h".parse().unwrap(),
            reply_to: None,
            image: None,
        };
        let entry = |uuid: &str, op: &OutboxOp, n: u32| OutboxEntry {
            uuid: uuid.into(),
            op: op.clone(),
            message: Some(Message::new(n.to_string(), clawmux_message::Tone::Info)),
            created_ms: 0,
        };
        let patch = |h: &str| OutboxOp::Patch {
            handle: h.parse().unwrap(),
        };
        s.cards.insert("other".into(), "om_1".into());
        s.queue(entry("u0", &send, 0));
        s.queue(entry("u1", &patch("h"), 1));
        s.queue(entry("u2", &patch("h"), 2));
        s.queue(entry("u3", &patch("other"), 3));
        assert_eq!(s.outbox.len(), 3);
        assert_eq!(
            s.outbox[1].message.as_ref().map(|m| &m.title),
            Some(&"2".into())
        );
        assert_eq!(s.outbox[1].uuid, "u1");
    }

    /// A `clawmux run` reads its outcome, not cards: nothing for it is
    /// queued, nor any update of a card that never was.
    #[test]
    fn no_card_is_queued_for_a_run_nor_an_update_of_a_card_never_queued() {
        let mut s = State::default();
        let entry = |uuid: &str, op: OutboxOp| OutboxEntry {
            uuid: uuid.into(),
            op,
            message: Some(Message::new(uuid, clawmux_message::Tone::Info)),
            created_ms: 0,
        };
        let send = |h: &str, target: ChatTarget| OutboxOp::Send {
            target,
            handle: h.parse().unwrap(),
            reply_to: None,
            image: None,
        };
        let patch = |h: &str| OutboxOp::Patch {
            handle: h.parse().unwrap(),
        };
        let run = ChatTarget::Run {
            id: RunId::parse("r1").unwrap(),
        };
        s.queue(entry("u1", send("run-card", run.clone())));
        s.queue(entry("u2", patch("run-card")));
        s.queue(entry(
            "u3",
            OutboxOp::File {
                target: run,
                handle: "run-file".parse().unwrap(),
                reply_to: None,
                path: "/nowhere".into(),
                file_name: "x.txt".into(),
            },
        ));
        assert!(s.outbox.is_empty(), "{:?}", s.outbox);
        s.queue(entry("u4", send("console-card", ChatTarget::Console)));
        s.queue(entry("u5", patch("console-card")));
        let queued: Vec<&str> = s.outbox.iter().map(|e| e.uuid.as_str()).collect();
        assert_eq!(queued, ["u4", "u5"]);
    }

    /// An entry the last release saved (the Feishu card it would send, and
    /// its text) loads as the message the card says.
    #[test]
    fn an_entry_saved_as_a_card_loads_as_its_message() {
        let saved = json!({"uuid": "u1", "op": {"type": "patch", "handle": "h1"},
            "card": {"schema": "2.0", "header": {"title": {"tag": "plain_text",
                "content": "Done", "i18n_content": {"zh_cn": "完成", "en_us": "Done"}},
                "template": "green"},
                "body": {"elements": [{"tag": "markdown", "content": "all well"}]}},
            "text": "== Done ==\nall well", "created_ms": 7});
        let entry: OutboxEntry = serde_json::from_value(saved).unwrap();
        let want = Message::new(
            clawmux_i18n::Text::both("Done", "完成"),
            clawmux_message::Tone::Done,
        )
        .push(clawmux_message::Block::text("all well"));
        assert_eq!((entry.message, entry.created_ms), (Some(want), 7));
        let lost = json!({"uuid": "u2", "op": {"type": "patch", "handle": "h1"}, "created_ms": 1});
        assert!(serde_json::from_value::<OutboxEntry>(lost).is_err());
        // A reaction never had a card.
        let reaction = json!({"uuid": "u3", "op": {"type": "react", "handle": "h2",
            "message_id": "om_1", "emoji": "DONE"}, "card": null, "text": "", "created_ms": 1});
        let reaction: OutboxEntry = serde_json::from_value(reaction).unwrap();
        assert_eq!(reaction.message, None);
    }

    #[test]
    fn old_or_partial_files_load_with_defaults() {
        let s: State = serde_json::from_str(r#"{"chats":{"oc_1":"demo"}}"#).unwrap();
        assert_eq!(s.chats["oc_1"], "demo");
        assert!(s.outbox.is_empty());
        // A job recorded before `queued` existed.
        let job = r#"{"jobs":[{"id":"j","project":"p","text":"t","target":{"type":"console"},
            "reply_to":null,"progress":null,"started":false,"created_ms":1}]}"#;
        let s: State = serde_json::from_str(job).unwrap();
        assert!(!s.jobs[0].told_queued);
    }
}
