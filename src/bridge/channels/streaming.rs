//! Streams each running command's answer into a card of its own while the
//! turn runs: on Feishu a CardKit entity typed into, on the console the
//! new lines as text. The core writes what the card should show into the
//! state ([`AnswerStream`]); this module brings each card there, one task
//! per card ([`run`] starts them), so one card's trouble (a rate limit, a
//! hung call, an outage) never holds another chat's card.
//!
//! Limits: one entity operation per card per [`OP_GAP`] (under 3 a second,
//! against Feishu's 10), each carrying the latest text, so a fast writer
//! is coalesced rather than queued. A rate limit's reset is waited out by
//! that card alone; every step is bounded by [`STEP_TIMEOUT`].
//!
//! Lifetime: Feishu ends streaming mode [`STREAMING_LIFETIME`] after it was
//! last turned on. The task turns it on again ([`StreamOp::Reopen`]) before
//! [`REOPEN_AFTER`], and whenever an update is answered "timed out" or
//! "closed", then resends the text. An entity is only ever updated through
//! CardKit; a message showing one is never patched.
//!
//! Give-up, bounded: when element updates keep failing, the card is
//! finalised by a full update ([`StreamOp::Full`]) [`FINAL_GRACE`] after
//! the turn's end is seen, and the stream is dropped if even that fails
//! for [`FINAL_GIVE_UP`] (the result card carries the whole answer). When
//! CardKit refuses a card before a message shows it, a plain card is sent
//! instead and patched at most every [`PATCH_GAP`], at most
//! [`MAX_INTERIM_PATCHES`] times, the final text always.
//!
//! Exactly once: every operation is written to the state, and flushed to
//! disk, before it is sent ([`AnswerStream::in_flight`]), with its sequence
//! and uuid; retries and a restart send that same operation again, which
//! Feishu takes as a no-op if it had already applied it. The entity id is
//! on disk before the message showing it is sent, and the send carries
//! the stream's uuid, so a crash makes neither a second card nor a lost one.

use std::collections::HashMap;
use std::future::Future;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::bridge::present::stream::{shown_text, stream_card, stream_title, summary};
use crate::feishu::api::{Api, ErrorClass, FeishuError, ReceiveId};
use crate::feishu::cardkit::{
    CardKitError, ENTITY_GONE_CODES, SEQUENCE_CODE, STREAMING_LIFETIME, calls_for_fallback,
    streaming_closed,
};
use crate::store::SharedState;
use crate::store::state::{ChatTarget, JobId};
use crate::store::stream::{AnswerStream, StreamOp};
use crate::text_escape::{Keep, escape_controls};

/// Least time between two operations on one card entity: at most ~2.9
/// operations a second, well under Feishu's 10, leaving room for retries.
pub const OP_GAP: Duration = Duration::from_millis(350);
/// Least time between two interim patches of a plain (fallback) card: a
/// message takes at most 5 edits a second.
pub const PATCH_GAP: Duration = Duration::from_secs(2);
/// Interim patches of a fallback card at most: Feishu silently stops
/// applying edits of one message after a few dozen; the final one must land.
pub const MAX_INTERIM_PATCHES: u32 = 15;
/// Streaming is turned on again this long after it last was: two minutes
/// before Feishu ends it, room for a slow or rate-limited call.
pub const REOPEN_AFTER: Duration = STREAMING_LIFETIME.saturating_sub(Duration::from_secs(120));
/// After the turn's end is seen, element updates get this long to land;
/// then a failing card is finalised by a full update.
pub const FINAL_GRACE: Duration = Duration::from_secs(2);
/// After the turn's end is seen, a card that still cannot be finalised
/// (CardKit down altogether) is dropped this long after: the result card
/// carries the answer, and Feishu ends the streaming itself.
pub const FINAL_GIVE_UP: Duration = Duration::from_secs(60);
/// Longest one step (one call, its state change) may take: a hung call
/// holds its own card only, and only this long.
pub const STEP_TIMEOUT: Duration = Duration::from_secs(15);
/// How often an idle card's task (and [`run`]) looks for work.
const POLL: Duration = Duration::from_millis(50);
/// Failures in a row after which a stream stops element updates (then the
/// final text goes by full update) or, patching a plain card, is dropped:
/// the result card still carries the whole answer.
const MAX_FAILURES: u32 = 8;
/// "Streaming closed" answers in a row, each after turning it on again,
/// after which element updates stop (the final text goes by full update).
const MAX_REOPENS: u32 = 3;
/// First wait after a failed operation; doubles up to [`RETRY_CAP`].
const RETRY_FIRST: Duration = Duration::from_millis(500);
const RETRY_CAP: Duration = Duration::from_secs(4);

/// What a failed stream operation calls for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    /// CardKit will not take this card: before a message shows it, send a
    /// plain card instead; after, finalise it by a full update.
    #[error("CardKit refused: {0}")]
    Fallback(String),
    /// The entity is gone or expired: nothing can update it.
    #[error("card entity gone: {0}")]
    Gone(String),
    /// Streaming mode ended (timed out or closed): turn it on again.
    #[error("streaming closed: {0}")]
    Closed(String),
    /// Feishu asks this card to wait this long.
    #[error("rate limited for {0:?}")]
    RateLimited(Duration),
    /// The entity is past this operation's sequence: take a new one.
    #[error("sequence behind the card's")]
    Sequence,
    /// Never going to work (chat gone, message deleted).
    #[error("{0}")]
    Permanent(String),
    /// Worth retrying: network, 5xx, timeouts.
    #[error("{0}")]
    Transient(String),
}

impl From<FeishuError> for StreamError {
    fn from(e: FeishuError) -> Self {
        if e.code().is_some_and(|c| ENTITY_GONE_CODES.contains(&c)) {
            return StreamError::Gone(e.to_string());
        }
        if streaming_closed(&e) {
            return StreamError::Closed(e.to_string());
        }
        if calls_for_fallback(&e) {
            return StreamError::Fallback(e.to_string());
        }
        if e.code() == Some(SEQUENCE_CODE) {
            return StreamError::Sequence;
        }
        match e.class() {
            ErrorClass::Permanent => StreamError::Permanent(e.to_string()),
            _ => StreamError::Transient(e.to_string()),
        }
    }
}

impl From<CardKitError> for StreamError {
    fn from(e: CardKitError) -> Self {
        match e.rate_limited {
            Some(wait) => StreamError::RateLimited(wait),
            None => e.error.into(),
        }
    }
}

/// Where streamed cards go: Feishu ([`FeishuStream`]) or the console.
pub trait StreamSink: Send + Sync + 'static {
    /// Creates a card entity; returns its id.
    fn create(&self, card: &Value) -> impl Future<Output = Result<String, StreamError>> + Send;
    /// Sends entity `card_id` as a message; returns its id.
    fn send_entity(
        &self,
        s: &AnswerStream,
        card_id: &str,
        uuid: &str,
    ) -> impl Future<Output = Result<String, StreamError>> + Send;
    /// Sends a plain card (the fallback); returns its message id.
    fn send_card(
        &self,
        s: &AnswerStream,
        card: &Value,
        uuid: &str,
    ) -> impl Future<Output = Result<String, StreamError>> + Send;
    /// Sets the answer element's text.
    fn text(
        &self,
        card_id: &str,
        text: &str,
        sequence: u32,
        uuid: &str,
    ) -> impl Future<Output = Result<(), StreamError>> + Send;
    /// Turns streaming mode on again.
    fn reopen(
        &self,
        card_id: &str,
        sequence: u32,
        uuid: &str,
    ) -> impl Future<Output = Result<(), StreamError>> + Send;
    /// Ends streaming: the card is final.
    fn close(
        &self,
        card_id: &str,
        summary: &str,
        sequence: u32,
        uuid: &str,
    ) -> impl Future<Output = Result<(), StreamError>> + Send;
    /// Replaces the whole entity with `card` (final, streaming off).
    fn full(
        &self,
        card_id: &str,
        card: &Value,
        sequence: u32,
        uuid: &str,
    ) -> impl Future<Output = Result<(), StreamError>> + Send;
    /// Replaces a plain card (the fallback; never an entity's message).
    fn patch(
        &self,
        message_id: &str,
        card: &Value,
    ) -> impl Future<Output = Result<(), StreamError>> + Send;
}

/// What one look at a stream did.
#[derive(Debug, PartialEq, Eq)]
enum Stepped {
    /// Nothing to do now.
    Idle,
    /// An operation on the card entity (or its message) went through.
    Op,
    /// A fallback card was patched.
    Patched,
    /// The stream is over (closed, or given up): it left the state.
    Done,
    Failed(StreamError),
}

/// One card's pacing and health, kept in memory by its task: a restart
/// only waits less.
struct Pace {
    next_at: Option<Instant>,
    failures: u32,
    /// When streaming was last turned on (None: it must be turned on
    /// before the next text). A restart counts from the task's start;
    /// Feishu's "timed out" answer covers a card older than that.
    streaming_on: Option<Instant>,
    /// "Streaming closed" answers since the last text that landed.
    reopens: u32,
    /// Element updates stopped: the final text goes by full update.
    stuck: bool,
    /// When the task first saw the turn's end.
    final_seen: Option<Instant>,
    /// The current wait is a rate limit's reset: never cut short.
    limited: bool,
}

impl Pace {
    fn new() -> Self {
        Pace {
            next_at: None,
            failures: 0,
            streaming_on: Some(Instant::now()),
            reopens: 0,
            stuck: false,
            final_seen: None,
            limited: false,
        }
    }

    /// Past the grace after the turn's end, with element updates failing:
    /// time for the full update.
    fn finalise_now(&self) -> bool {
        self.final_seen
            .is_some_and(|at| at.elapsed() >= FINAL_GRACE && (self.stuck || self.failures > 0))
    }
}

/// Runs for ever: starts a task for every stream in the state that has
/// none (at most [`crate::store::stream::MAX_STREAMS`], as the state
/// bounds them), each bringing its card to what the state says.
pub async fn run(shared: SharedState, sink: impl StreamSink) {
    let sink = Arc::new(sink);
    let mut tasks: HashMap<JobId, JoinHandle<()>> = HashMap::new();
    loop {
        tasks.retain(|_, t| !t.is_finished());
        let jobs: Vec<JobId> = shared.read(|s| s.streams.keys().cloned().collect());
        for job in jobs {
            if tasks.contains_key(&job) {
                continue;
            }
            let task = tokio::spawn(drive(shared.clone(), Arc::clone(&sink), job.clone()));
            tasks.insert(job, task);
        }
        tokio::time::sleep(POLL).await;
    }
}

/// One card's task: steps it until its stream leaves the state.
async fn drive<S: StreamSink>(shared: SharedState, sink: Arc<S>, job: JobId) {
    let mut p = Pace::new();
    loop {
        if let Some(at) = p.next_at.take() {
            wait(&shared, &job, &mut p, at).await;
        }
        let stepped =
            match tokio::time::timeout(STEP_TIMEOUT, step(&shared, &*sink, &job, &mut p)).await {
                Ok(s) => s,
                Err(_) => Stepped::Failed(StreamError::Transient(format!(
                    "no answer within {STEP_TIMEOUT:?}"
                ))),
            };
        match stepped {
            Stepped::Idle => p.next_at = Some(Instant::now() + POLL),
            Stepped::Op => {
                p.failures = 0;
                p.next_at = Some(Instant::now() + OP_GAP);
            }
            Stepped::Patched => {
                p.failures = 0;
                p.next_at = Some(Instant::now() + PATCH_GAP);
            }
            Stepped::Done => return,
            Stepped::Failed(StreamError::RateLimited(wait)) => {
                // This card waits; no other card does.
                tracing::info!(job = %job, ?wait, "answer card rate limited");
                p.next_at = Some(Instant::now() + wait.max(OP_GAP));
                p.limited = true;
            }
            Stepped::Failed(e) => {
                p.failures += 1;
                let n = p.failures;
                let wait = RETRY_FIRST
                    .saturating_mul(1 << (n - 1).min(8))
                    .min(RETRY_CAP);
                p.next_at = Some(Instant::now() + wait);
                tracing::warn!(job = %job, error = %e, failures = n, "streaming an answer card failed");
                let over = p.final_seen.is_some_and(|at| at.elapsed() >= FINAL_GIVE_UP);
                if over
                    || matches!(e, StreamError::Permanent(_) | StreamError::Gone(_))
                    || n >= MAX_FAILURES
                {
                    give_up(&shared, &job, &e, &mut p, over);
                }
            }
        }
    }
}

/// Waits until `at`, noting the turn's end when it comes; a failing card's
/// backoff (not a rate limit's reset) ends early once its full update is
/// due, so the final card does not trail the result by a whole backoff.
async fn wait(shared: &SharedState, job: &JobId, p: &mut Pace, at: Instant) {
    let limited = std::mem::take(&mut p.limited);
    loop {
        let now = Instant::now();
        if now >= at {
            return;
        }
        if p.final_seen.is_none()
            && shared.read(|st| st.streams.get(job).is_some_and(|s| s.final_text.is_some()))
        {
            p.final_seen = Some(now);
        }
        if !limited && p.finalise_now() {
            return;
        }
        tokio::time::sleep(POLL.min(at - now)).await;
    }
}

/// A stream that keeps failing: element updates stop (the final text goes
/// by full update), or, patching a plain card, refused for good, or past
/// [`FINAL_GIVE_UP`], it is dropped: the result card has the answer.
fn give_up(shared: &SharedState, job: &JobId, e: &StreamError, p: &mut Pace, over: bool) {
    let dropped = shared.update(|st| {
        let s = st.streams.get_mut(job)?;
        let entity_shown = !s.patching && s.card_id.is_some() && s.message_id.is_some();
        if entity_shown && !over && !matches!(e, StreamError::Permanent(_) | StreamError::Gone(_)) {
            return Some(false);
        }
        if !s.patching && s.message_id.is_none() && !over && !matches!(e, StreamError::Permanent(_))
        {
            // Nothing shows the entity yet: a plain card instead.
            s.patching = true;
            s.in_flight = None;
            return Some(false);
        }
        st.streams.remove(job);
        Some(true)
    });
    match dropped {
        Some(true) => {
            tracing::error!(job = %job, error = %e, "gave up streaming an answer card; the result card carries the answer")
        }
        Some(false) => {
            tracing::warn!(job = %job, error = %e, "CardKit keeps failing; the answer card gets its final text in one full update");
            p.stuck = true;
            p.failures = p.failures.min(MAX_FAILURES - 1);
        }
        None => {}
    }
}

/// The text the card should show now.
fn wanted(s: &AnswerStream) -> &str {
    shown_text(s.final_text.as_deref().unwrap_or(&s.text))
}

/// Changes stream `job` in the state, if it is still there.
fn change(shared: &SharedState, job: &JobId, f: impl FnOnce(&mut AnswerStream)) {
    shared.update(|st| {
        if let Some(s) = st.streams.get_mut(job) {
            f(s);
        }
    });
}

fn finish(shared: &SharedState, job: &JobId) -> Stepped {
    shared.update(|st| st.streams.remove(job));
    Stepped::Done
}

/// The operation that brings entity stream `s` closer to what it should
/// show, if any.
fn next_op(s: &AnswerStream, p: &Pace, want: &str) -> Option<StreamOp> {
    let sequence = s.sequence + 1;
    let final_ = s.final_text.is_some();
    if final_ && p.finalise_now() {
        return Some(StreamOp::Full {
            sequence,
            text: want.to_string(),
        });
    }
    if p.stuck {
        return None;
    }
    if want != s.shown {
        let on = p.streaming_on.is_some_and(|at| at.elapsed() < REOPEN_AFTER);
        return Some(if on {
            StreamOp::Text {
                sequence,
                text: want.to_string(),
            }
        } else {
            StreamOp::Reopen { sequence }
        });
    }
    final_.then_some(StreamOp::Close { sequence })
}

/// Moves stream `job` one operation towards what it should show.
async fn step(shared: &SharedState, sink: &impl StreamSink, job: &JobId, p: &mut Pace) -> Stepped {
    // Twice at most: an operation recorded is sent in the same step.
    for _ in 0..2 {
        let Some(s) = shared.read(|st| st.streams.get(job).cloned()) else {
            return Stepped::Done;
        };
        if s.final_text.is_some() && p.final_seen.is_none() {
            p.final_seen = Some(Instant::now());
        }
        if s.message_id.is_none() && s.final_text.is_some() && p.finalise_now() {
            // Nothing shows the card yet and the turn is over: a card
            // appearing now would trail the result card that has it all.
            tracing::warn!(job = %job, "the answer card could not be shown before the turn ended; the result card carries the answer");
            return finish(shared, job);
        }
        if !s.patching && s.card_id.is_none() {
            let text = wanted(&s).to_string();
            let card = stream_card(&s.title, &text, true, false);
            return match sink.create(&card).await {
                Ok(id) => {
                    p.streaming_on = Some(Instant::now());
                    change(shared, job, |s| {
                        s.card_id = Some(id);
                        s.shown = text;
                    });
                    Stepped::Op
                }
                Err(StreamError::Fallback(why) | StreamError::Gone(why)) => {
                    tracing::warn!(job = %job, error = %why, "CardKit refused the answer card; patching a plain card instead");
                    change(shared, job, |s| s.patching = true);
                    Stepped::Op
                }
                Err(e) => Stepped::Failed(e),
            };
        }
        if s.message_id.is_none() {
            return send(shared, sink, job, &s).await;
        }
        if s.patching {
            let want = wanted(&s).to_string();
            return patch(shared, sink, job, &s, &want, s.final_text.is_some()).await;
        }
        if let Some(op) = &s.in_flight {
            // Past the grace, a failing update gives way to the full one
            // (a higher sequence: it supersedes the other if that landed).
            let op = match op {
                StreamOp::Full { .. } => op.clone(),
                _ if s.final_text.is_some() && p.finalise_now() => StreamOp::Full {
                    sequence: s.sequence + 1,
                    text: wanted(&s).to_string(),
                },
                _ => return replay(shared, sink, job, &s, op, p).await,
            };
            if Some(&op) != s.in_flight.as_ref() {
                record(shared, job, op).await;
                continue;
            }
            return replay(shared, sink, job, &s, &op, p).await;
        }
        let want = wanted(&s).to_string();
        let Some(op) = next_op(&s, p, &want) else {
            return Stepped::Idle;
        };
        record(shared, job, op).await;
    }
    Stepped::Idle
}

/// Writes operation `op` down as in flight, on disk, before it is sent.
async fn record(shared: &SharedState, job: &JobId, op: StreamOp) {
    shared
        .update_durable(|st| {
            if let Some(s) = st.streams.get_mut(job) {
                s.sequence = op.sequence();
                s.in_flight = Some(op);
            }
        })
        .await;
}

/// Sends the message showing the card (the entity, or the fallback card).
async fn send(
    shared: &SharedState,
    sink: &impl StreamSink,
    job: &JobId,
    s: &AnswerStream,
) -> Stepped {
    // The entity id must be on disk before a message shows it: a restart
    // must not make a second entity and send that under the same uuid.
    shared.flush().await;
    if s.patching {
        let text = wanted(s).to_string();
        let final_ = s.final_text.is_some();
        let card = stream_card(&s.title, &text, false, final_);
        // Its own uuid: an entity send under the stream's may have gone.
        let uuid = format!("{}-p", s.uuid);
        return match sink.send_card(s, &card, &uuid).await {
            Ok(id) if final_ => {
                tracing::debug!(job = %job, message = %id, "answer card sent final");
                finish(shared, job)
            }
            Ok(id) => {
                change(shared, job, |s| {
                    s.message_id = Some(id);
                    s.shown = text;
                });
                Stepped::Patched
            }
            Err(e) => Stepped::Failed(e),
        };
    }
    let Some(card_id) = &s.card_id else {
        return Stepped::Idle;
    };
    match sink.send_entity(s, card_id, &s.uuid).await {
        Ok(id) => {
            change(shared, job, |s| s.message_id = Some(id));
            Stepped::Op
        }
        Err(StreamError::Fallback(why) | StreamError::Gone(why)) => {
            tracing::warn!(job = %job, error = %why, "the answer card entity cannot be sent; patching a plain card instead");
            change(shared, job, |s| s.patching = true);
            Stepped::Op
        }
        Err(e) => Stepped::Failed(e),
    }
}

/// Sends the recorded operation (again, after a failure or a restart).
async fn replay(
    shared: &SharedState,
    sink: &impl StreamSink,
    job: &JobId,
    s: &AnswerStream,
    op: &StreamOp,
    p: &mut Pace,
) -> Stepped {
    let Some(card_id) = &s.card_id else {
        change(shared, job, |s| s.in_flight = None);
        return Stepped::Idle;
    };
    let uuid = s.op_uuid(op.sequence());
    let sent = match op {
        StreamOp::Text { sequence, text } => sink.text(card_id, text, *sequence, &uuid).await,
        StreamOp::Reopen { sequence } => sink.reopen(card_id, *sequence, &uuid).await,
        StreamOp::Close { sequence } => {
            sink.close(card_id, &summary(&s.shown), *sequence, &uuid)
                .await
        }
        StreamOp::Full { sequence, text } => {
            let mut card = stream_card(&s.title, text, false, true);
            card["config"]["streaming_mode"] = Value::Bool(false);
            sink.full(card_id, &card, *sequence, &uuid).await
        }
    };
    match (sent, op) {
        (Ok(()), StreamOp::Text { text, .. }) => {
            let text = text.clone();
            p.reopens = 0;
            change(shared, job, |s| {
                s.shown = text;
                s.in_flight = None;
            });
            Stepped::Op
        }
        (Ok(()), StreamOp::Reopen { .. }) => {
            p.streaming_on = Some(Instant::now());
            change(shared, job, |s| s.in_flight = None);
            Stepped::Op
        }
        (Ok(()), StreamOp::Close { .. } | StreamOp::Full { .. }) => finish(shared, job),
        (Err(StreamError::Closed(why)), StreamOp::Text { .. }) => {
            // Feishu ended streaming (its lifetime): on again, then the
            // text again under a new sequence.
            p.reopens += 1;
            p.streaming_on = None;
            tracing::info!(job = %job, error = %why, reopens = p.reopens, "streaming ended; turning it on again");
            change(shared, job, |s| s.in_flight = None);
            if p.reopens > MAX_REOPENS {
                p.stuck = true;
                return Stepped::Failed(StreamError::Closed(why));
            }
            Stepped::Op
        }
        (Err(StreamError::Closed(_)), StreamOp::Close { .. }) => {
            // Ended already, after the last text landed.
            finish(shared, job)
        }
        (Err(StreamError::Sequence), _) => {
            // Only a state older than the card (a restored backup) gets
            // here: the same operation under the next sequence.
            change(shared, job, |s| {
                s.sequence += 1;
                let sequence = s.sequence;
                s.in_flight = s.in_flight.take().map(|op| op.with_sequence(sequence));
            });
            Stepped::Failed(StreamError::Sequence)
        }
        (Err(StreamError::Fallback(why)), StreamOp::Full { .. }) => {
            Stepped::Failed(StreamError::Permanent(why))
        }
        (Err(StreamError::Fallback(why)), _) => {
            // Shown already: only CardKit may update it. No more element
            // updates; the final text goes by full update.
            tracing::warn!(job = %job, error = %why, "CardKit stopped taking updates of the answer card; it gets its final text in one full update");
            p.stuck = true;
            change(shared, job, |s| s.in_flight = None);
            Stepped::Failed(StreamError::Fallback(why))
        }
        (Err(e), _) => Stepped::Failed(e),
    }
}

/// The fallback: the plain card patched, sparingly, the final text always.
async fn patch(
    shared: &SharedState,
    sink: &impl StreamSink,
    job: &JobId,
    s: &AnswerStream,
    want: &str,
    final_: bool,
) -> Stepped {
    let interim = want != s.shown && s.patches < MAX_INTERIM_PATCHES;
    if !final_ && !interim {
        return Stepped::Idle;
    }
    let Some(message_id) = &s.message_id else {
        return Stepped::Idle;
    };
    let card = stream_card(&s.title, want, false, final_);
    match sink.patch(message_id, &card).await {
        Ok(()) if final_ => finish(shared, job),
        Ok(()) => {
            let want = want.to_string();
            change(shared, job, |s| {
                s.shown = want;
                s.patches += 1;
            });
            Stepped::Patched
        }
        Err(e) => Stepped::Failed(e),
    }
}

/// Streams to Feishu through the API client.
pub struct FeishuStream(pub Arc<Api>);

fn receiver(s: &AnswerStream) -> Result<ReceiveId, StreamError> {
    match &s.target {
        ChatTarget::Chat { id } => Ok(ReceiveId::ChatId(id.to_string())),
        ChatTarget::User { id } => Ok(ReceiveId::OpenId(id.to_string())),
        ChatTarget::Console | ChatTarget::Run { .. } => Err(StreamError::Permanent(
            "a console command has no Feishu chat".into(),
        )),
    }
}

impl StreamSink for FeishuStream {
    async fn create(&self, card: &Value) -> Result<String, StreamError> {
        Ok(self.0.create_card_entity(card).await?)
    }

    async fn send_entity(
        &self,
        s: &AnswerStream,
        card_id: &str,
        uuid: &str,
    ) -> Result<String, StreamError> {
        let to = receiver(s)?;
        Ok(self
            .0
            .send_card_entity(&to, s.reply_to.as_deref(), card_id, uuid)
            .await?)
    }

    async fn send_card(
        &self,
        s: &AnswerStream,
        card: &Value,
        uuid: &str,
    ) -> Result<String, StreamError> {
        let to = receiver(s)?;
        Ok(match &s.reply_to {
            Some(parent) => self.0.reply(parent, card, uuid).await?,
            None => self.0.send(&to, card, uuid).await?,
        })
    }

    async fn text(
        &self,
        card_id: &str,
        text: &str,
        sequence: u32,
        uuid: &str,
    ) -> Result<(), StreamError> {
        use crate::bridge::present::stream::ANSWER_ELEMENT_ID;
        Ok(self
            .0
            .stream_element_text(card_id, ANSWER_ELEMENT_ID, text, sequence, uuid)
            .await?)
    }

    async fn reopen(&self, card_id: &str, sequence: u32, uuid: &str) -> Result<(), StreamError> {
        Ok(self
            .0
            .set_streaming(card_id, true, None, sequence, uuid)
            .await?)
    }

    async fn close(
        &self,
        card_id: &str,
        summary: &str,
        sequence: u32,
        uuid: &str,
    ) -> Result<(), StreamError> {
        Ok(self
            .0
            .set_streaming(card_id, false, Some(summary), sequence, uuid)
            .await?)
    }

    async fn full(
        &self,
        card_id: &str,
        card: &Value,
        sequence: u32,
        uuid: &str,
    ) -> Result<(), StreamError> {
        Ok(self
            .0
            .replace_card_entity(card_id, card, sequence, uuid)
            .await?)
    }

    async fn patch(&self, message_id: &str, card: &Value) -> Result<(), StreamError> {
        Ok(self.0.patch(message_id, card).await?)
    }
}

/// Streams to the console: the answer's new text as it comes, each line
/// marked `│`, between a head and a foot line.
#[derive(Default)]
pub struct ConsoleStream {
    /// Card id -> what was printed of it.
    printed: Mutex<HashMap<String, String>>,
    next_id: Mutex<u64>,
    /// The language of the answer's title line.
    lang: crate::i18n::Lang,
}

impl ConsoleStream {
    /// A stream printing in the terminal's language.
    pub fn from_env() -> Self {
        ConsoleStream {
            lang: crate::i18n::Lang::from_env(),
            ..Default::default()
        }
    }

    fn print(&self, text: &str) -> Result<(), StreamError> {
        let mut out = std::io::stdout().lock();
        out.write_all(escape_controls(text, Keep::LinesAndTabs).as_bytes())
            .and_then(|_| out.flush())
            .map_err(|e| StreamError::Transient(format!("stdout: {e}")))
    }
}

/// The console's line before a streamed text that replaces what the card
/// showed (a row redrawn in place, not extended): a reader of the console
/// tells a new text from more of the same one.
pub const CONSOLE_REDRAWN: &str = "├─ (redrawn)";

/// The lines of `text` that `before` did not have, marked `│`; all of
/// `text` when it does not extend `before`, after [`CONSOLE_REDRAWN`]
/// when the card showed something already.
pub fn console_delta(before: &str, text: &str) -> String {
    let (mark, new) = match text.strip_prefix(before) {
        Some(rest) => ("", rest),
        None => (CONSOLE_REDRAWN, text),
    };
    let rows = new
        .lines()
        .filter(|l| !l.is_empty() || new.contains('\n'))
        .map(|l| format!("│ {l}\n"));
    let mark = (!mark.is_empty()).then(|| format!("{mark}\n"));
    mark.into_iter().chain(rows).collect()
}

impl StreamSink for ConsoleStream {
    async fn create(&self, _card: &Value) -> Result<String, StreamError> {
        let mut n = self.next_id.lock().unwrap_or_else(|p| p.into_inner());
        *n += 1;
        Ok(format!("console-{n}"))
    }

    async fn send_entity(
        &self,
        s: &AnswerStream,
        card_id: &str,
        _uuid: &str,
    ) -> Result<String, StreamError> {
        let shown = shown_text(&s.shown).to_string();
        self.print(&format!(
            "┌─ (streaming) {}\n{}",
            stream_title(&s.title).get(self.lang),
            console_delta("", &shown)
        ))?;
        (self.printed.lock().unwrap_or_else(|p| p.into_inner())).insert(card_id.into(), shown);
        Ok(card_id.to_string())
    }

    async fn send_card(
        &self,
        s: &AnswerStream,
        _card: &Value,
        _uuid: &str,
    ) -> Result<String, StreamError> {
        self.send_entity(s, "console-plain", "").await
    }

    async fn text(
        &self,
        card_id: &str,
        text: &str,
        _sequence: u32,
        _uuid: &str,
    ) -> Result<(), StreamError> {
        let before = (self.printed.lock().unwrap_or_else(|p| p.into_inner()))
            .get(card_id)
            .cloned()
            .unwrap_or_default();
        self.print(&console_delta(&before, text))?;
        (self.printed.lock().unwrap_or_else(|p| p.into_inner()))
            .insert(card_id.into(), text.to_string());
        Ok(())
    }

    async fn reopen(&self, _card_id: &str, _sequence: u32, _uuid: &str) -> Result<(), StreamError> {
        Ok(())
    }

    async fn close(
        &self,
        card_id: &str,
        _summary: &str,
        _sequence: u32,
        _uuid: &str,
    ) -> Result<(), StreamError> {
        (self.printed.lock().unwrap_or_else(|p| p.into_inner())).remove(card_id);
        self.print("└─ (answer complete)\n")
    }

    async fn full(
        &self,
        card_id: &str,
        card: &Value,
        _sequence: u32,
        _uuid: &str,
    ) -> Result<(), StreamError> {
        let text = card
            .pointer("/body/elements/0/content")
            .and_then(Value::as_str)
            .unwrap_or_default();
        self.text(card_id, text, 0, "").await?;
        self.close(card_id, "", 0, "").await
    }

    async fn patch(&self, message_id: &str, card: &Value) -> Result<(), StreamError> {
        let text = card
            .pointer("/body/elements/0/content")
            .and_then(Value::as_str)
            .unwrap_or_default();
        self.text(message_id, text, 0, "").await
    }
}

#[cfg(test)]
mod tests;
