//! Delivers the outbox: one entry at a time, retried with backoff while
//! the failure is transient, the chats served in turn (each chat's cards
//! in their order), so one chat's backlog never holds another's card
//! behind more than a few sends. A permanent failure never blocks the
//! queue: the entry moves aside at once (a dead letter in the state,
//! `card_dead_letter` in the event log, and the chat or the operator told
//! once), so the next card waits at most that one attempt. An entry leaves
//! the outbox only after delivery, so a crash resends it with the same uuid
//! and Feishu shows it once. The event log tells the operator when
//! deliveries start failing (`card_retry`) and when they work again
//! (`card_delivery_recovered`).
//!
//! Long with its tests (delivery, retry and dead-letter cases on a fake
//! courier); the code itself is well under 600 lines.

use crate::bridge::texts::Msg;
use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use crate::bridge::present;
use crate::store::clock;
use crate::store::state::{
    CardHandle, ChatId, ChatTarget, DEAD_LETTER_CAPACITY, DeadLetter, OutboxEntry, OutboxOp,
};
use crate::store::{LogEvent, SharedState};

/// First retry delay after a transient failure; doubles up to the cap.
const RETRY_FIRST: Duration = Duration::from_millis(500);
/// Longest wait between retries. It bounds how long cards sit after Feishu
/// is back: 30 s could add half a minute to a one-minute outage. Each
/// delivery attempt already spends 5-15 s in the API client's own retries
/// (6 tries with backoff, honouring rate-limit resets), so with 10 s an
/// outage still sees only about one request every 2-3 s.
const RETRY_CAP: Duration = Duration::from_secs(10);

/// Transient failures since the last successful delivery. A permanent
/// failure does not end it: Feishu answering is not cards getting through.
struct Outage {
    /// When the first failed attempt started.
    since: Instant,
    failed_attempts: u32,
}

/// Refusals of one entry for a reason its channel does not classify,
/// after which it counts as permanent: the channel is up (it answers), so
/// retrying the same request for ever would only hold up the queue.
const MAX_REFUSALS: u32 = 3;

/// Handles of the cards that tell a chat a card was lost start with this;
/// a lost notice is not announced again.
const NOTICE_HANDLE_PREFIX: &str = "dead-letter-notice-";

/// The handle of the notice that `uuid`'s card was not delivered: the
/// prefix marks it (a notice is never noticed again), then as much of the
/// entry's uuid as an id may hold.
fn notice_handle(uuid: &str) -> CardHandle {
    let tail: String = (uuid.chars())
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .take(40)
        .collect();
    // Never refused: the prefix alone is a valid id.
    format!("{NOTICE_HANDLE_PREFIX}{tail}")
        .parse()
        .unwrap_or_else(|_| CardHandle::random())
}

/// What the outbox does about a failed delivery. Only the channel knows
/// what its answers mean, so it decides ([`Courier::classify`]); the
/// outbox only acts on the decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// Worth retrying with backoff: network, server errors, rate limits.
    Retry,
    /// The channel answered and refused for a reason it does not
    /// classify: retried, then moved aside after [`MAX_REFUSALS`] answers
    /// like it.
    Refused,
    /// Never going to work for this entry (rejected content, deleted
    /// message, too large, …): moved aside at once and the chat told.
    Drop,
    /// Never going to work because the chat itself cannot be reached (bot
    /// removed, chat dissolved, user blocked it): moved aside, and only the
    /// operator told, since a notice there would be refused too.
    ChatGone,
    /// The entry is for no chat this channel has: the console's news of a
    /// project no chat uses, under Feishu. Dropped and logged
    /// (`card_dropped`), as a card nobody is to see, not a dead letter:
    /// there is no one to tell, and the news is in the event log already.
    NotThisChannel,
}

/// A delivery failure of a channel that has no codes of its own (the
/// console, test couriers): it says whether a retry can help.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeliveryError {
    /// Worth retrying.
    #[error("{0}")]
    Transient(String),
    /// Never going to work.
    #[error("{0}")]
    Permanent(String),
    /// For no chat this channel has (see [`Failure::NotThisChannel`]).
    #[error("{0}")]
    NotThisChannel(&'static str),
}

impl DeliveryError {
    /// The outbox's reading of it.
    pub fn failure(&self) -> Failure {
        match self {
            DeliveryError::Transient(_) => Failure::Retry,
            DeliveryError::Permanent(_) => Failure::Drop,
            DeliveryError::NotThisChannel(_) => Failure::NotThisChannel,
        }
    }
}

/// A channel that shows outbox entries: the console or Feishu. It renders
/// the entry for itself and classifies its own failures, like a sink that
/// knows which of its errors are worth a retry.
pub trait Courier: Send + Sync + 'static {
    /// How the channel reports a failed delivery. Its text goes to the
    /// event log and the dead letter.
    type Error: std::fmt::Display + Send;

    /// Delivers one entry. For a patch, `message_id` is the id the card's
    /// send returned. Returns the message id of a sent card.
    fn deliver(
        &self,
        entry: &OutboxEntry,
        message_id: Option<&str>,
    ) -> impl Future<Output = Result<Option<String>, Self::Error>> + Send;

    /// What the outbox does about `error`.
    fn classify(&self, error: &Self::Error) -> Failure;

    /// The channel's own code for `error`, kept with a dead letter and
    /// shown in the chat's notice; `None` for a channel without codes.
    fn code(&self, _error: &Self::Error) -> Option<i64> {
        None
    }
}

/// How the next entry is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Chats in turn, each chat's entries in their order (see [`Lanes`]).
    Fair,
    /// The oldest entry first, whatever its chat: the order before chats
    /// were served in turn, kept as the benchmark's baseline (so only in
    /// builds with the `test-support` feature).
    #[cfg(feature = "test-support")]
    OneQueue,
}

/// Runs forever, delivering whatever the outbox holds: chats in turn,
/// each chat's entries oldest first ([`Order::Fair`]).
pub async fn run(shared: SharedState, courier: impl Courier) {
    run_in(shared, courier, Order::Fair).await
}

/// [`run`], choosing entries in `order`.
pub async fn run_in(shared: SharedState, courier: impl Courier, order: Order) {
    let mut lanes = Lanes::default();
    let mut delay = RETRY_FIRST;
    let mut outage: Option<Outage> = None;
    // (uuid, refusals) of the head entry while its channel refuses it.
    let mut refused: Option<(String, u32)> = None;
    // (chat, code) already told about a lost card: told once per process.
    let mut told: HashSet<(ChatId, Option<i64>)> = HashSet::new();
    loop {
        let next = shared.read(|s| {
            let at = match order {
                Order::Fair => lanes.pick(&s.outbox)?,
                #[cfg(feature = "test-support")]
                Order::OneQueue => 0,
            };
            s.outbox.get(at).cloned().map(|e| {
                let id = s.cards.get(e.op.handle()).cloned();
                (e, id)
            })
        });
        let Some((entry, message_id)) = next else {
            shared.outbox_ready().await;
            continue;
        };
        if matches!(entry.op, OutboxOp::Patch { .. }) && message_id.is_none() {
            // The card it patches was never delivered (dropped): nothing to update.
            finish(
                &shared,
                &entry,
                None,
                Some("the card to update was never delivered"),
            );
            continue;
        }
        // State writes are asynchronous: the entry (and the message ids of
        // the cards before it) must be on disk before the card goes out, or
        // a crash could lose the entry and a restart make the card anew
        // under another uuid. Returns at once when nothing changed.
        shared.flush().await;
        let attempted = Instant::now();
        let delivered = courier.deliver(&entry, message_id.as_deref()).await;
        let error = match delivered {
            Ok(sent_id) => {
                lanes.served(&entry);
                delay = RETRY_FIRST;
                finish(&shared, &entry, sent_id, None);
                if let Some(o) = outage.take() {
                    // `queued`: cards still waiting behind this one.
                    let queued = shared.read(|s| s.outbox.len());
                    shared.log.event(&LogEvent::CardDeliveryRecovered {
                        uuid: entry.uuid.clone(),
                        outage_ms: u64::try_from(o.since.elapsed().as_millis()).unwrap_or(u64::MAX),
                        failed_attempts: o.failed_attempts,
                        queued,
                    });
                }
                continue;
            }
            Err(e) => e,
        };
        let code = courier.code(&error);
        let why = error.to_string();
        let failure = match courier.classify(&error) {
            Failure::Refused => {
                let n = match &mut refused {
                    Some((uuid, n)) if *uuid == entry.uuid => {
                        *n += 1;
                        *n
                    }
                    _ => {
                        refused = Some((entry.uuid.clone(), 1));
                        1
                    }
                };
                if n >= MAX_REFUSALS {
                    Failure::Drop
                } else {
                    Failure::Refused
                }
            }
            other => other,
        };
        match failure {
            Failure::NotThisChannel => {
                lanes.served(&entry);
                delay = RETRY_FIRST;
                refused = None;
                finish(&shared, &entry, None, Some(&why));
            }
            Failure::Drop | Failure::ChatGone => {
                lanes.served(&entry);
                delay = RETRY_FIRST;
                refused = None;
                let reachable = failure != Failure::ChatGone;
                dead_letter(&shared, &entry, code, &why, reachable, &mut told);
            }
            Failure::Refused => {
                shared.log.event(&retry(&entry, why, delay));
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(RETRY_CAP);
            }
            Failure::Retry => {
                outage
                    .get_or_insert(Outage {
                        since: attempted,
                        failed_attempts: 0,
                    })
                    .failed_attempts += 1;
                shared.log.event(&retry(&entry, why, delay));
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(RETRY_CAP);
            }
        }
    }
}

/// Cards whose chat is remembered for their later updates: more than are
/// ever patched at once.
const MAX_REMEMBERED_CARDS: usize = 4096;

/// Which chat each entry is for, and when each chat was last served.
///
/// An entry's lane is its chat; an update (patch) has the lane of the
/// card it changes (its send still queued, or delivered by this process);
/// a reaction, the lane of a card replying to the message it marks (a
/// command's "taken" and "finished" follow its cards, which reply to it).
/// Else an update has a lane of its own, never served: without the
/// reply's lane every reaction would go before an idle chat's card. The
/// next entry is the first of the lane served longest ago, so lanes take
/// turns and each keeps its order.
#[derive(Default)]
pub struct Lanes {
    /// Lane -> the turn it was last served in.
    last: HashMap<String, u64>,
    turn: u64,
    /// Card handle -> its lane, for the updates that follow its send.
    card_lane: HashMap<String, String>,
    card_order: VecDeque<String>,
}

impl Lanes {
    /// The index of the next entry to deliver, if any.
    pub fn pick(&self, outbox: &VecDeque<OutboxEntry>) -> Option<usize> {
        let mut seen: HashMap<String, String> = HashMap::new();
        let mut heads: HashSet<String> = HashSet::new();
        let mut best: Option<(u64, usize)> = None;
        for (at, entry) in outbox.iter().enumerate() {
            let lane = self.lane(entry, &seen);
            seen.insert(entry.op.handle().to_string(), lane.clone());
            if let Some(key) = reply_key(entry) {
                seen.insert(key, lane.clone());
            }
            if !heads.insert(lane.clone()) {
                continue;
            }
            let last = self.last.get(&lane).copied().unwrap_or(0);
            if best.is_none_or(|(b, _)| last < b) {
                best = Some((last, at));
            }
        }
        best.map(|(_, at)| at)
    }

    /// `entry` was delivered (or moved aside): its lane had its turn.
    pub fn served(&mut self, entry: &OutboxEntry) {
        let lane = self.lane(entry, &HashMap::new());
        self.turn += 1;
        self.last.insert(lane.clone(), self.turn);
        if matches!(entry.op, OutboxOp::Send { .. } | OutboxOp::File { .. }) {
            let keys = [Some(entry.op.handle().to_string()), reply_key(entry)];
            for key in keys.into_iter().flatten() {
                if self.card_lane.insert(key.clone(), lane.clone()).is_none() {
                    self.card_order.push_back(key);
                }
            }
            while self.card_order.len() > MAX_REMEMBERED_CARDS {
                if let Some(old) = self.card_order.pop_front() {
                    self.card_lane.remove(&old);
                }
            }
        }
        if self.last.len() > MAX_REMEMBERED_CARDS {
            // Lanes long idle start again from nothing: still fair.
            self.last.clear();
        }
    }

    /// The lane of `entry`; `queued` holds the lanes of the cards queued
    /// before it.
    fn lane(&self, entry: &OutboxEntry, queued: &HashMap<String, String>) -> String {
        let known = |key: &str| {
            (queued.get(key))
                .or_else(|| self.card_lane.get(key))
                .cloned()
        };
        match &entry.op {
            OutboxOp::Send { target, .. } | OutboxOp::File { target, .. } => {
                Some(chat_lane(target))
            }
            OutboxOp::Patch { handle } => known(handle),
            OutboxOp::React {
                handle, message_id, ..
            } => known(&replying_to(message_id)).or_else(|| known(handle)),
        }
        .unwrap_or_else(|| format!("card:{}", entry.op.handle()))
    }
}

/// The key under which [`Lanes`] remembers the lane of the cards replying
/// to a message (not a card handle: those are random ids).
fn replying_to(message_id: &str) -> String {
    format!("reply:{message_id}")
}

/// The reply key of a card that replies to a message.
fn reply_key(entry: &OutboxEntry) -> Option<String> {
    match &entry.op {
        OutboxOp::Send {
            reply_to: Some(m), ..
        }
        | OutboxOp::File {
            reply_to: Some(m), ..
        } => Some(replying_to(m)),
        _ => None,
    }
}

fn chat_lane(target: &ChatTarget) -> String {
    match target {
        ChatTarget::Chat { id } => format!("chat:{id}"),
        ChatTarget::Console => "console".into(),
        ChatTarget::Run { id } => format!("run:{id}"),
        ChatTarget::User { id } => format!("user:{id}"),
    }
}

/// Moves an entry its channel will never take out of the queue: into the
/// dead letters, logged with the channel's code and message, and the chat
/// told (or, when it cannot be `reachable`, the operator through the log)
/// once per chat and code.
fn dead_letter(
    shared: &SharedState,
    entry: &OutboxEntry,
    code: Option<i64>,
    msg: &str,
    reachable: bool,
    told: &mut HashSet<(ChatId, Option<i64>)>,
) {
    let chat = match &entry.op {
        OutboxOp::Send {
            target: ChatTarget::Chat { id },
            ..
        }
        | OutboxOp::File {
            target: ChatTarget::Chat { id },
            ..
        } => Some(id.clone()),
        _ => None,
    };
    let is_notice = entry.op.handle().starts_with(NOTICE_HANDLE_PREFIX);
    let tell_chat = chat
        .clone()
        .filter(|_| reachable && !is_notice)
        .filter(|c| told.insert((c.clone(), code)));
    let notice = tell_chat.map(|chat| {
        let msg = msg.to_string();
        let what = match code {
            Some(c) => Msg::FeishuRefusedCard.with(&[("code", &c.to_string()), ("msg", &msg)]),
            None => Msg::CardUndeliverable.with(&[("msg", &msg)]),
        };
        let text = Msg::LaterCardsFine.with_each(|lang| {
            vec![(
                "what",
                crate::feishu::markdown::escape_inline(what.get(lang)),
            )]
        });
        let card = present::info_card(Msg::CardNotDelivered, text);
        OutboxEntry {
            uuid: format!("dl-{}", entry.uuid.chars().take(40).collect::<String>()),
            op: OutboxOp::Send {
                target: ChatTarget::Chat { id: chat },
                handle: notice_handle(&entry.uuid),
                reply_to: None,
                image: None,
            },
            message: Some(card.clone()),
            created_ms: clock::now_ms(),
        }
    });
    let told_chat = notice.is_some();
    shared.update(|s| {
        if let Some(at) = s.outbox.iter().position(|f| f.uuid == entry.uuid) {
            s.outbox.remove(at);
        }
        if s.dead_letters.len() >= DEAD_LETTER_CAPACITY {
            s.dead_letters.pop_front();
        }
        s.dead_letters.push_back(DeadLetter {
            entry: entry.clone(),
            code,
            error: msg.to_string(),
            at_ms: clock::now_ms(),
        });
        if let Some(n) = notice {
            s.outbox.push_back(n);
        }
    });
    let told_whom = if told_chat { "chat" } else { "operator" };
    if !told_chat {
        tracing::error!(uuid = %entry.uuid, ?code, error = msg, chat = ?chat, "the channel refused a card for good; it was moved aside");
    }
    shared.log.event(&LogEvent::CardDeadLetter {
        uuid: entry.uuid.clone(),
        handle: entry.op.handle().to_string(),
        op: op_name(&entry.op).to_string(),
        code,
        error: msg.to_string(),
        chat: chat.map(String::from),
        told: told_whom.to_string(),
    });
}

/// The `card_retry` line: the card stays first and is tried again in `delay`.
fn retry(entry: &OutboxEntry, error: String, delay: Duration) -> LogEvent {
    LogEvent::CardRetry {
        uuid: entry.uuid.clone(),
        error,
        retry_in_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
    }
}

/// Removes a delivered (or undeliverable) entry, records the message id.
/// A patch whose card changed while it was in flight stays for another round.
fn finish(
    shared: &SharedState,
    entry: &OutboxEntry,
    sent_id: Option<String>,
    failure: Option<&str>,
) {
    shared.update(|s| {
        let Some(at) = s.outbox.iter().position(|f| f.uuid == entry.uuid) else {
            return;
        };
        if failure.is_none() && s.outbox[at].message != entry.message {
            return;
        }
        s.outbox.remove(at);
        if let Some(id) = sent_id {
            s.cards.insert(entry.op.handle().to_string(), id);
        }
    });
    let (uuid, handle) = (entry.uuid.clone(), entry.op.handle().to_string());
    shared.log.event(&match failure {
        None => LogEvent::Card {
            uuid,
            handle,
            op: op_name(&entry.op).to_string(),
        },
        Some(why) => LogEvent::CardDropped {
            uuid,
            handle,
            error: why.to_string(),
        },
    });
}

fn op_name(op: &OutboxOp) -> &'static str {
    match op {
        OutboxOp::Send {
            reply_to: Some(_), ..
        } => "reply",
        OutboxOp::Send { .. } => "send",
        OutboxOp::Patch { .. } => "patch",
        OutboxOp::File { .. } => "file",
        OutboxOp::React { .. } => "react",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::state::ChatTarget;
    use std::sync::{Arc, Mutex};

    /// (uuid, message id it patched)
    type Delivered = Vec<(String, Option<String>)>;

    /// Fails transiently `fail` times, then records what it delivered.
    #[derive(Clone, Default)]
    struct Flaky {
        fail: Arc<Mutex<u32>>,
        seen: Arc<Mutex<Delivered>>,
    }

    impl Courier for Flaky {
        type Error = DeliveryError;

        fn classify(&self, error: &DeliveryError) -> Failure {
            error.failure()
        }

        async fn deliver(
            &self,
            e: &OutboxEntry,
            id: Option<&str>,
        ) -> Result<Option<String>, DeliveryError> {
            {
                let mut fail = self.fail.lock().unwrap();
                if *fail > 0 {
                    *fail -= 1;
                    return Err(DeliveryError::Transient("503".into()));
                }
            }
            self.seen
                .lock()
                .unwrap()
                .push((e.uuid.clone(), id.map(String::from)));
            Ok(Some(format!("om_{}", e.uuid)))
        }
    }

    fn entry(uuid: &str, op: OutboxOp) -> OutboxEntry {
        OutboxEntry {
            uuid: uuid.into(),
            op,
            message: Some(crate::message::Message::new(
                uuid,
                crate::message::Tone::Info,
            )),
            created_ms: 0,
        }
    }

    fn send_to(uuid: &str, chat: &str) -> OutboxEntry {
        let op = OutboxOp::Send {
            target: ChatTarget::Chat {
                id: crate::store::ids::chat(chat),
            },
            handle: format!("h-{uuid}").parse().unwrap(),
            reply_to: None,
            image: None,
        };
        entry(uuid, op)
    }

    /// The uuids in the order [`Lanes`] delivers `queue`.
    fn fair_order(mut queue: VecDeque<OutboxEntry>) -> Vec<String> {
        let mut lanes = Lanes::default();
        let mut order = Vec::new();
        while let Some(at) = lanes.pick(&queue) {
            if let Some(e) = queue.remove(at) {
                lanes.served(&e);
                order.push(e.uuid);
            }
        }
        order
    }

    #[test]
    fn chats_take_turns_and_each_keeps_its_order() {
        let mut queue: VecDeque<OutboxEntry> =
            (0..4).map(|i| send_to(&format!("a{i}"), "busy")).collect();
        queue.push_back(send_to("b0", "idle"));
        queue.push_back(send_to("a4", "busy"));
        // A patch of a card still queued follows its card, in its chat.
        queue.push_back(entry(
            "p0",
            OutboxOp::Patch {
                handle: "h-b0".parse().unwrap(),
            },
        ));
        assert_eq!(
            fair_order(queue),
            ["a0", "b0", "a1", "p0", "a2", "a3", "a4"]
        );
    }

    #[test]
    fn a_reaction_takes_the_turn_of_the_chat_its_cards_reply_in() {
        let reply = |uuid: &str, chat: &str, message: &str| {
            let mut e = send_to(uuid, chat);
            if let OutboxOp::Send { reply_to, .. } = &mut e.op {
                *reply_to = Some(message.into());
            }
            e
        };
        let react = |uuid: &str, message: &str| {
            let op = OutboxOp::React {
                handle: format!("h-{uuid}").parse().unwrap(),
                message_id: message.into(),
                emoji: "OnIt".into(),
            };
            entry(uuid, op)
        };
        let mut lanes = Lanes::default();
        lanes.served(&reply("a0", "busy", "om_1"));
        let mut queue: VecDeque<OutboxEntry> = [
            reply("a1", "busy", "om_2"),
            react("r1", "om_2"),
            react("r0", "om_1"),
            send_to("b0", "idle"),
        ]
        .into();
        // Reactions on the busy chat's messages (one replied to by a card
        // queued, one by a card delivered) wait in its lane.
        let mut order = Vec::new();
        while let Some(e) = lanes.pick(&queue).and_then(|at| queue.remove(at)) {
            lanes.served(&e);
            order.push(e.uuid);
        }
        assert_eq!(order, ["b0", "a1", "r1", "r0"]);
    }

    #[test]
    fn an_update_of_a_delivered_card_stays_in_its_chats_turn() {
        let mut lanes = Lanes::default();
        lanes.served(&send_to("b0", "idle"));
        lanes.served(&send_to("a0", "busy"));
        let queue: VecDeque<OutboxEntry> = [
            send_to("a1", "busy"),
            entry(
                "p0",
                OutboxOp::Patch {
                    handle: "h-b0".parse().unwrap(),
                },
            ),
        ]
        .into();
        // Chat idle was served before chat busy: its update goes first.
        assert_eq!(lanes.pick(&queue), Some(1));
    }

    #[tokio::test(start_paused = true)]
    async fn delivers_in_order_through_transient_failures() {
        let dir = private_tempdir();
        let (shared, _) = SharedState::open(dir.path()).unwrap();
        let courier = Flaky::default();
        *courier.fail.lock().unwrap() = 3;
        shared.update(|s| {
            let send = OutboxOp::Send {
                target: ChatTarget::Console,
                handle: "h1".parse().unwrap(),
                reply_to: None,
                image: None,
            };
            s.outbox.push_back(entry("a", send));
            s.outbox.push_back(entry(
                "b",
                OutboxOp::Patch {
                    handle: "h1".parse().unwrap(),
                },
            ));
            s.outbox.push_back(entry(
                "c",
                OutboxOp::Patch {
                    handle: "never-sent".parse().unwrap(),
                },
            ));
        });
        let task = tokio::spawn(run(shared.clone(), courier.clone()));
        while shared.read(|s| !s.outbox.is_empty()) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        task.abort();
        let seen = courier.seen.lock().unwrap().clone();
        assert_eq!(
            seen,
            [
                ("a".to_string(), None),
                ("b".to_string(), Some("om_a".to_string()))
            ]
        );
        let kinds: Vec<String> = records(dir.path()).into_iter().map(|r| r.kind).collect();
        assert_eq!(
            kinds,
            [
                "card_retry",
                "card_retry",
                "card_retry",
                "card",
                "card_delivery_recovered",
                // A lane of its own, never served: before the console's.
                "card_dropped",
                "card"
            ]
        );
    }

    /// A temp dir already 0700, so opening the state in it logs nothing
    /// about its mode.
    fn private_tempdir() -> tempfile::TempDir {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        dir
    }

    fn records(dir: &std::path::Path) -> Vec<crate::store::event_log::EventRecord> {
        crate::store::log_read::read_all(dir).unwrap().records
    }

    fn send(uuid: &str) -> OutboxEntry {
        let op = OutboxOp::Send {
            target: ChatTarget::Console,
            handle: format!("h-{uuid}").parse().unwrap(),
            reply_to: None,
            image: None,
        };
        entry(uuid, op)
    }

    #[tokio::test(start_paused = true)]
    async fn a_long_outage_backs_off_to_the_cap_and_its_end_is_logged_once() {
        let dir = private_tempdir();
        let (shared, _) = SharedState::open(dir.path()).unwrap();
        let courier = Flaky::default();
        *courier.fail.lock().unwrap() = 8;
        shared.update(|s| s.outbox.extend([send("a"), send("b")]));
        let task = tokio::spawn(run(shared.clone(), courier.clone()));
        while shared.read(|s| !s.outbox.is_empty()) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // A later delivery that works at once is no recovery.
        shared.update(|s| s.outbox.push_back(send("c")));
        while shared.read(|s| !s.outbox.is_empty()) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        task.abort();

        let log = records(dir.path());
        let waits: Vec<u64> = log
            .iter()
            .filter(|r| r.kind == "card_retry")
            .map(|r| r.fields["retry_in_ms"].as_u64().unwrap())
            .collect();
        assert_eq!(waits, [500, 1000, 2000, 4000, 8000, 10000, 10000, 10000]);
        let recovered: Vec<_> = log
            .iter()
            .filter(|r| r.kind == "card_delivery_recovered")
            .collect();
        assert_eq!(recovered.len(), 1, "{log:?}");
        let fields = &recovered[0].fields;
        // The courier answers at once, so the outage is the sum of the waits.
        assert_eq!(fields["outage_ms"], waits.iter().sum::<u64>());
        assert_eq!(fields["failed_attempts"], 8);
        assert_eq!(fields["uuid"], "a");
        assert_eq!(fields["queued"], 1, "b still waits");
        let kinds: Vec<&str> = log.iter().map(|r| r.kind.as_str()).collect();
        assert_eq!(
            kinds[8..],
            ["card", "card_delivery_recovered", "card", "card"],
            "the end of the outage follows the first card through"
        );
    }

    /// A failure a test channel classifies as `failure`, with `code`.
    #[derive(Debug, Clone, thiserror::Error)]
    #[error("{msg}")]
    struct Coded {
        failure: Failure,
        code: Option<i64>,
        msg: String,
    }

    fn coded(failure: Failure, code: i64, msg: &str) -> Coded {
        Coded {
            failure,
            code: Some(code),
            msg: msg.into(),
        }
    }

    /// Refuses every entry whose uuid starts with "bad" with `error`;
    /// records every attempt (uuid) in order.
    #[derive(Clone)]
    struct Picky {
        error: Coded,
        attempts: Arc<Mutex<Vec<String>>>,
    }

    impl Courier for Picky {
        type Error = Coded;

        fn classify(&self, error: &Coded) -> Failure {
            error.failure
        }

        fn code(&self, error: &Coded) -> Option<i64> {
            error.code
        }

        async fn deliver(
            &self,
            e: &OutboxEntry,
            _id: Option<&str>,
        ) -> Result<Option<String>, Coded> {
            self.attempts.lock().unwrap().push(e.uuid.clone());
            if e.uuid.starts_with("bad") {
                return Err(self.error.clone());
            }
            Ok(Some(format!("om_{}", e.uuid)))
        }
    }

    fn to_chat(uuid: &str) -> OutboxEntry {
        let op = OutboxOp::Send {
            target: ChatTarget::Chat {
                id: crate::store::ids::chat("oc_1"),
            },
            handle: format!("h-{uuid}").parse().unwrap(),
            reply_to: None,
            image: None,
        };
        entry(uuid, op)
    }

    async fn drain(shared: &SharedState) {
        while shared.read(|s| !s.outbox.is_empty()) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_permanent_failure_delays_the_next_card_by_one_attempt_only() {
        let dir = tempfile::tempdir().unwrap();
        let (shared, _) = SharedState::open(dir.path()).unwrap();
        let courier = Picky {
            error: coded(Failure::Drop, 230025, "content too long"),
            attempts: Arc::default(),
        };
        shared.update(|s| {
            s.outbox.extend([
                to_chat("bad-1"),
                to_chat("good-1"),
                to_chat("bad-2"),
                to_chat("good-2"),
            ])
        });
        let task = tokio::spawn(run(shared.clone(), courier.clone()));
        drain(&shared).await;
        task.abort();
        let attempts = courier.attempts.lock().unwrap().clone();
        // Each bad card is tried once; the chat is told once (same chat, same code).
        assert_eq!(
            attempts,
            ["bad-1", "good-1", "bad-2", "good-2", "dl-bad-1"],
            "{attempts:?}"
        );
        let dead = shared.read(|s| s.dead_letters.clone());
        let dead: Vec<(&str, Option<i64>)> = dead
            .iter()
            .map(|d| (d.entry.uuid.as_str(), d.code))
            .collect();
        assert_eq!(dead, [("bad-1", Some(230025)), ("bad-2", Some(230025))]);
        let log = records(dir.path());
        let letters: Vec<_> = log
            .iter()
            .filter(|r| r.kind == "card_dead_letter")
            .collect();
        assert_eq!(letters.len(), 2);
        assert_eq!(letters[0].fields["code"], 230025);
        assert_eq!(letters[0].fields["error"], "content too long");
        assert_eq!(letters[0].fields["told"], "chat");
        assert_eq!(letters[1].fields["told"], "operator");
    }

    /// A card for no chat of the channel's (the console's, under Feishu)
    /// is dropped at its one attempt: no dead letter, no notice, and its
    /// queued update goes with it; the other chats' cards go on.
    #[tokio::test(start_paused = true)]
    async fn a_card_for_no_chat_of_the_channels_is_dropped_not_dead_lettered() {
        let dir = tempfile::tempdir().unwrap();
        let (shared, _) = SharedState::open(dir.path()).unwrap();
        let courier = Picky {
            error: Coded {
                failure: Failure::NotThisChannel,
                code: None,
                msg: "a console card has no Feishu chat".into(),
            },
            attempts: Arc::default(),
        };
        let update = entry(
            "bad-1-update",
            OutboxOp::Patch {
                handle: "h-bad-1".parse().unwrap(),
            },
        );
        shared.update(|s| {
            s.outbox
                .extend([to_chat("bad-1"), to_chat("good-1"), update])
        });
        let task = tokio::spawn(run(shared.clone(), courier.clone()));
        drain(&shared).await;
        task.abort();
        assert_eq!(*courier.attempts.lock().unwrap(), ["bad-1", "good-1"]);
        assert!(shared.read(|s| s.dead_letters.is_empty()));
        let log = records(dir.path());
        let cards: Vec<_> = log.iter().filter(|r| r.kind.starts_with("card")).collect();
        let kinds: Vec<&str> = cards.iter().map(|r| r.kind.as_str()).collect();
        assert_eq!(kinds, ["card_dropped", "card", "card_dropped"], "{log:?}");
        assert_eq!(
            cards[0].fields["error"],
            "a console card has no Feishu chat"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn an_unreachable_chat_is_not_sent_a_notice_and_a_failing_notice_is_not_announced() {
        // The channel says the chat cannot be reached (bot not in it, user
        // blocked the bot, chat dissolved, …): the operator is told.
        for code in [230002, 230006] {
            let dir = tempfile::tempdir().unwrap();
            let (shared, _) = SharedState::open(dir.path()).unwrap();
            let courier = Picky {
                error: coded(Failure::ChatGone, code, "unreachable"),
                attempts: Arc::default(),
            };
            shared.update(|s| s.outbox.extend([to_chat("bad-1"), to_chat("good-1")]));
            let task = tokio::spawn(run(shared.clone(), courier.clone()));
            drain(&shared).await;
            task.abort();
            assert_eq!(
                *courier.attempts.lock().unwrap(),
                ["bad-1", "good-1"],
                "{code}: no notice sent to the chat"
            );
            let log = records(dir.path());
            let letter = log.iter().find(|r| r.kind == "card_dead_letter").unwrap();
            assert_eq!(letter.fields["told"], "operator", "{code}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn an_unclassified_refusal_is_retried_then_moved_aside() {
        let dir = tempfile::tempdir().unwrap();
        let (shared, _) = SharedState::open(dir.path()).unwrap();
        let courier = Picky {
            error: coded(Failure::Refused, 239999, "something new"),
            attempts: Arc::default(),
        };
        shared.update(|s| s.outbox.extend([send("bad-1"), send("good-1")]));
        let task = tokio::spawn(run(shared.clone(), courier.clone()));
        drain(&shared).await;
        task.abort();
        let attempts = courier.attempts.lock().unwrap().clone();
        assert_eq!(attempts, ["bad-1", "bad-1", "bad-1", "good-1"]);
        let dead = shared.read(|s| s.dead_letters.len());
        assert_eq!(dead, 1);
    }
}
