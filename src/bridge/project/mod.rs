//! One project's actor: owns its agent pane (tmux session, control client,
//! pane model and detector) and carries out what its [`runner::JobRunner`]
//! decides: typing commands, answering prompts, following the pane. It
//! reports what happens as [`ProjectEvent`]s; it never talks to the chat.
//!
//! The actor is the I/O half; which command runs, what a detection or a
//! hook means and what is reported is decided without I/O in
//! [`runner`] (and, for typing after a crash, in [`crate::bridge::panes::typing`]).
//!
//! Long on purpose: every path that touches the pane (attaching, typing
//! with its record of intent, answering, confirming receipt, catching up
//! after a hook, taking over from a lost client) shares one event loop and
//! its ordering, which reads best in one place.

mod confirm;
mod handle;
mod messages;
pub mod planning_watch;
mod prompt;
pub mod record;
pub mod runner;
#[cfg(test)]
mod tests;

use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio::time::sleep_until;

use super::crash_point::crash_point;
use super::texts;
use crate::agents::claude::PermissionMode;
use crate::bridge::panes::agent_pane::{AgentPane, PaneError};
use crate::bridge::panes::answering::{ANSWER_CONFIRM_WAIT, AnswerStep, Answering};
use crate::bridge::panes::hosts;
use crate::bridge::panes::typing::{self, Receipt, Resume};
use crate::control::{Notification, PaneId};
use crate::detect::{AnswerSource, Detection, Millis, PaneWatcher};
use crate::hooks::usage::TurnUsage;
use crate::store::LogEvent;
use crate::store::clock;
pub use crate::store::state::{Approval, Job};
use crate::store::state::{ApprovalId, JobId};
use crate::store::state::{Stage, TypingIntent};
use crate::tmux::{ClientEvent, EVENT_CAPACITY, TEXT_ENTER_GAP, TmuxError};
pub use handle::{ProjectHandle, ProjectSetup, Refused};
pub use messages::{
    ProjectCmd, ProjectError, ProjectEvent, ProjectEventKind, ProjectStatus, Reply, TurnEnding,
};
use runner::{Admit, Finished, JobRunner, Running, Step};
pub use runner::{AgentFailure, MAX_QUEUED, TaskNews};

/// Longest wait for a new agent's idle prompt before typing anyway:
/// Claude Code starts in a few seconds.
const AGENT_START_WAIT: Duration = Duration::from_secs(20);

/// Lines of the lost session's output quoted in the recovery prompt.
const RECOVERY_TAIL_LINES: usize = 20;

/// What a turn-end hook's transcript says of the turn (nothing when it
/// was not read).
#[derive(Default)]
struct TurnRecord {
    answer: Option<String>,
    usage: TurnUsage,
    api_error: Option<crate::agents::claude_transcript::ApiError>,
}

/// Typed text whose taking by the agent is still to be confirmed.
struct ReceiptCheck {
    text: String,
    enters: u8,
    /// When the first Enter was pressed.
    since: Instant,
    at: Instant,
}

/// An answer on its way into a dialog (see [`answering`]).
struct PendingAnswer {
    approval_id: ApprovalId,
    answering: Answering,
    /// Words for the dialog's text field, typed once its key opened it.
    words: Option<String>,
    /// The command to follow once the key is sent (after a restart).
    follow: Option<Job>,
    report: AnswerReport,
    /// When to look at the screen again.
    at: Option<Instant>,
}

/// What the chat is told about an answer when the screen has said.
enum AnswerReport {
    Answered {
        by: String,
        label: String,
        reply: Reply,
    },
    Replied {
        by: String,
        text: String,
        reply: Reply,
    },
}

impl AnswerReport {
    fn event(self, approval_id: ApprovalId, result: Result<(), ProjectError>) -> ProjectEventKind {
        match self {
            AnswerReport::Answered { by, label, reply } => ProjectEventKind::Answered {
                approval_id,
                by,
                label,
                reply,
                result,
            },
            AnswerReport::Replied { by, text, reply } => ProjectEventKind::Replied {
                approval_id,
                by,
                text,
                reply,
                result,
            },
        }
    }
}

/// A `/gsd:mode` on its way (see [`Actor::advance_mode`]).
struct PendingMode {
    mode: PermissionMode,
    by: String,
    reply: Reply,
    presses: u8,
    /// When to look at the footer again.
    at: Instant,
}

/// An interrupt on its way (see [`Actor::check_interrupt`]).
struct PendingInterrupt {
    /// The turn the keys were sent to.
    job: JobId,
    by: String,
    keys: String,
    reply: Reply,
    sent: Instant,
}

/// How long a turn may go on after its interrupt keys before the chat is
/// told they did not take: the agents measured stop within a second or
/// two (Aider's stream ends at once, Claude Code draws "Interrupted");
/// a loaded machine takes longer.
const INTERRUPT_CONFIRM_WAIT: Duration = Duration::from_secs(10);

/// How long the footer has to show the next mode after shift+tab: it
/// redraws within milliseconds; a loaded machine takes longer.
const MODE_REDRAW_WAIT: Duration = Duration::from_millis(700);
/// Shift+tab presses for one `/gsd:mode` at most: Claude Code cycles
/// through at most five modes.
const MAX_MODE_PRESSES: u8 = 6;

/// What the actor waits for besides commands and pane output: each has at
/// most one deadline, and the earliest is taken first (ties in this
/// order), so two falling due together run in the same order every time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Timer {
    /// The detector's next judgement (settle, debounce, quiet).
    Detect,
    /// The running command's timeout.
    Timeout,
    /// The new agent's start wait ran out.
    StartWait,
    /// Check that the agent took the typed command.
    Receipt,
    /// The next step of an answer being typed into a dialog.
    Answer,
    /// The next step of a permission-mode change.
    Mode,
    /// Check that an interrupt took.
    Interrupt,
    /// Read the streamed answer off the screen again.
    AnswerRead,
}

struct Actor {
    setup: ProjectSetup,
    events: mpsc::Sender<ProjectEvent>,
    pane: Option<(AgentPane, PaneWatcher)>,
    runner: JobRunner,
    receipt: Option<ReceiptCheck>,
    answer: Option<PendingAnswer>,
    mode_change: Option<PendingMode>,
    interrupt: Option<PendingInterrupt>,
    /// The dialog last reported, and since when it looks as it does.
    shown: Option<(String, Instant)>,
    /// The status last reported to the daemon.
    reported: Option<ProjectStatus>,
    /// The clock detections are measured on.
    epoch: Instant,
    /// The planning files watched for the running command (its id).
    planning: Option<(crate::store::state::JobId, planning_watch::PlanningWatch)>,
}

impl Actor {
    fn new(setup: ProjectSetup, events: mpsc::Sender<ProjectEvent>) -> Actor {
        let mut runner = JobRunner::default();
        runner.reads_as(setup.profile.clone());
        Actor {
            setup,
            events,
            pane: None,
            runner,
            receipt: None,
            answer: None,
            mode_change: None,
            interrupt: None,
            shown: None,
            reported: None,
            epoch: Instant::now(),
            planning: None,
        }
    }

    fn now(&self) -> Millis {
        Millis(self.epoch.elapsed().as_millis() as u64)
    }

    fn instant(&self, at: Millis) -> Instant {
        self.epoch + Duration::from_millis(at.0)
    }

    async fn emit(&self, job: Option<&Job>, kind: ProjectEventKind) {
        let event = ProjectEvent {
            project: self.setup.name.clone(),
            job: job.cloned(),
            kind,
        };
        // The daemon outlives its projects; a send can only fail at shutdown.
        let _ = self.events.send(event).await;
    }

    /// Changes the persisted record of job `id` (no-op without a journal,
    /// or once the job is finished).
    fn record(&self, id: &str, change: impl FnOnce(&mut Job)) {
        if let Some(journal) = &self.setup.journal {
            journal.update(|s| change_job(s, id, change));
        }
    }

    /// [`Actor::record`], on disk before this returns: for a record of
    /// intent that must precede what is done next.
    async fn record_durably(&self, id: &str, change: impl FnOnce(&mut Job)) {
        if let Some(journal) = &self.setup.journal {
            journal.update_durable(|s| change_job(s, id, change)).await;
        }
    }

    async fn run(mut self, mut rx: mpsc::Receiver<ProjectCmd>) {
        // Attach at once when the session exists (a restart with pending
        // approvals, hooks, status), without creating one, and say what the
        // screen shows (an unreachable host says nothing).
        let found = match self.setup.spec.probe().await {
            Ok(true) if self.attach(false).await.is_ok() => self.pane.as_ref().map(|(_, w)| {
                let prompt = w.look().prompt;
                prompt.map(|p| (p.question, p.body))
            }),
            Ok(true) | Err(_) => None,
            Ok(false) => Some(None),
        };
        if let Some(dialog) = found {
            self.emit(None, ProjectEventKind::ScreenAtStart { dialog })
                .await;
        }
        loop {
            let timer = self.next_timer();
            tokio::select! {
                cmd = rx.recv() => match cmd {
                    Some(cmd) => self.on_command(cmd).await,
                    None => return,
                },
                event = next_event(&mut self.pane) => self.on_client_event(event).await,
                _ = sleep_opt(timer.map(|(at, _)| at)) => {
                    if let Some((_, timer)) = timer {
                        self.on_timer(timer).await;
                    }
                }
            }
            // The screen may have said whether an answer took (or opened
            // the field its words wait for).
            self.judge_answer_first().await;
            self.drain_queue().await;
            self.report_status().await;
            self.watch_planning();
        }
    }

    /// The deadline that falls due first, of all the actor waits for
    /// (ties in [`Timer`]'s order).
    fn next_timer(&self) -> Option<(Instant, Timer)> {
        let detect = (self.pane.as_ref())
            .and_then(|(_, w)| w.next_deadline())
            .map(|m| self.instant(m));
        let interrupt = (self.interrupt.as_ref()).map(|i| i.sent + INTERRUPT_CONFIRM_WAIT);
        [
            (detect, Timer::Detect),
            (self.runner.running().map(|r| r.deadline), Timer::Timeout),
            (self.runner.starting_until(), Timer::StartWait),
            (self.receipt.as_ref().map(|r| r.at), Timer::Receipt),
            (self.answer.as_ref().and_then(|a| a.at), Timer::Answer),
            (self.mode_change.as_ref().map(|m| m.at), Timer::Mode),
            (interrupt, Timer::Interrupt),
            (
                self.runner.answer_read_due().map(|m| self.instant(m)),
                Timer::AnswerRead,
            ),
        ]
        .into_iter()
        .filter_map(|(at, timer)| Some((at?, timer)))
        .min()
    }

    async fn on_timer(&mut self, timer: Timer) {
        match timer {
            Timer::Detect => self.tick().await,
            Timer::Timeout => self.on_timeout().await,
            // The agent never showed its prompt: type anyway.
            Timer::StartWait => self.runner.agent_started(),
            Timer::Receipt => self.check_receipt().await,
            Timer::Answer => self.advance_answer().await,
            Timer::Mode => self.advance_mode().await,
            Timer::Interrupt => self.check_interrupt().await,
            Timer::AnswerRead => self.read_answer().await,
        }
    }

    /// Watches the GSD planning files while a command the chat hears
    /// about runs (a new watch per command, none between commands).
    fn watch_planning(&mut self) {
        let running = (self.runner.running())
            .filter(|r| !r.recovery)
            .map(|r| &r.job);
        match (running, &self.planning) {
            (Some(job), watched) if watched.as_ref().is_none_or(|(id, _)| id != &job.id) => {
                let watch = planning_watch::PlanningWatch::start(
                    self.setup.spec.clone(),
                    &self.setup.name,
                    job.clone(),
                    self.events.clone(),
                );
                self.planning = Some((job.id.clone(), watch));
            }
            (None, Some(_)) => self.planning = None,
            _ => {}
        }
    }

    /// `text` in the spelling the project's installed GSD takes, the
    /// install looked up where the pane runs (on its host, over its ssh,
    /// for a remote one). When it cannot be looked up, `text` is typed as
    /// sent and the agent says what it makes of it.
    async fn gsd_spelling(&self, text: &str) -> String {
        if crate::gsd::spelling::split_command(text).is_none() {
            return text.to_string();
        }
        match crate::gsd::host::install(&self.setup.spec.project_host()).await {
            Ok(install) => install.rewrite(text),
            Err(e) => {
                tracing::warn!(project = %self.setup.name, error = %e, "GSD's install not looked up");
                text.to_string()
            }
        }
    }

    /// Makes sure a session exists and is attached; creates it when
    /// `create`. True when a session was created: its agent is then
    /// starting, and nothing is typed until it is ready.
    async fn attach(&mut self, create: bool) -> Result<bool, ProjectError> {
        if self.pane.is_some() {
            return Ok(false);
        }
        let spec = &self.setup.spec;
        let (agent, created) =
            (self.setup.watch.attach(spec, create).await).map_err(ProjectError::Pane)?;
        let mut watcher = PaneWatcher::new(
            agent.pane,
            self.setup.profile.clone(),
            self.setup.detector.clone(),
            agent.width,
            agent.height,
        );
        // Start from what the pane shows now, as if it had just been drawn.
        if let Ok(screen) = agent.capture().await {
            watcher.feed(self.now(), &screen, &mut |_| {});
        }
        if created {
            // Its idle prompt, once shown, completes this "turn".
            watcher.detector_mut().begin_start_up();
            let wait = self.setup.profile.start_wait().unwrap_or(AGENT_START_WAIT);
            self.runner.agent_starting(Instant::now() + wait);
        }
        let pane = agent.pane;
        self.pane = Some((agent, watcher));
        self.emit(None, ProjectEventKind::Attached { pane }).await;
        Ok(created)
    }

    async fn on_command(&mut self, cmd: ProjectCmd) {
        match cmd {
            ProjectCmd::Submit(job) => self.submit(job).await,
            ProjectCmd::Resume(job) => self.resume(job).await,
            ProjectCmd::Answer {
                approval_id,
                question,
                body,
                key,
                follow,
                by,
                label,
                reply,
            } => {
                let report = AnswerReport::Answered { by, label, reply };
                let answering = Answering::new(&question, &body, &key, self.shown_since(&question));
                self.begin_answer(approval_id, answering, None, follow, report)
                    .await;
            }
            ProjectCmd::Type {
                approval_id,
                question,
                body,
                focus,
                text,
                by,
                reply,
            } => {
                // The field opens on its key (confirmed like any answer);
                // the words follow into the open field.
                let report = AnswerReport::Replied {
                    by,
                    text: text.clone(),
                    reply,
                };
                let answering =
                    Answering::new(&question, &body, &focus, self.shown_since(&question));
                self.begin_answer(approval_id, answering, Some(text), None, report)
                    .await;
            }
            ProjectCmd::SetMode { mode, by, reply } => {
                let refused = if self.pane.is_none()
                    && let Err(e) = self.attach(false).await
                {
                    Some(e)
                } else if !self.runner.idle() || self.mode_change.is_some() {
                    Some(ProjectError::NotIdle)
                } else {
                    None
                };
                if let Some(error) = refused {
                    let kind = ProjectEventKind::ModeSet {
                        by,
                        reply,
                        result: Err(error),
                    };
                    return self.emit(None, kind).await;
                }
                self.mode_change = Some(PendingMode {
                    mode,
                    by,
                    reply,
                    presses: 0,
                    at: Instant::now(),
                });
                self.advance_mode().await;
            }
            ProjectCmd::Cancel { by, reply } => {
                // Esc with nothing to stop would wait in the agent's input
                // and spoil the next command.
                let keys = self.setup.interrupt;
                let result = match &self.pane {
                    Some(_) if self.runner.idle() => Err(ProjectError::NothingToCancel),
                    Some((p, _)) => p
                        .interrupt(keys)
                        .await
                        .map_err(|e| ProjectError::Pane(e.into())),
                    None => Err(ProjectError::NothingToCancel),
                };
                let keys = crate::agents::key_names(keys);
                // The screen confirms it by ending the turn ("Stopped").
                if let (Ok(()), Some(running)) = (&result, self.runner.running()) {
                    self.interrupt = Some(PendingInterrupt {
                        job: running.job.id.clone(),
                        by: by.clone(),
                        keys: keys.clone(),
                        reply: reply.clone(),
                        sent: Instant::now(),
                    });
                }
                let kind = ProjectEventKind::Cancelled {
                    by,
                    keys,
                    reply,
                    result,
                };
                self.emit(None, kind).await;
            }
            ProjectCmd::Keys { keys, by, reply } => {
                let result = match &self.pane {
                    Some((p, _)) => {
                        (p.send_named_keys(&keys).await).map_err(|e| ProjectError::Pane(e.into()))
                    }
                    None => Err(ProjectError::Pane(PaneError::NotOpen)),
                };
                let kind = ProjectEventKind::KeysSent {
                    keys,
                    by,
                    reply,
                    result,
                };
                self.emit(None, kind).await;
            }
            ProjectCmd::Screen { reply } => {
                // Attached now if it can be (never created): why not, if not.
                let attached = self.attach(false).await;
                let pane = (self.pane.as_ref()).map(|(_, watcher)| watcher.pane());
                let screen = match (pane, attached) {
                    (Some(p), _) => Ok(p.screen()),
                    (None, Err(e)) => Err(e),
                    (None, Ok(_)) => Err(ProjectError::NotAttached),
                };
                let grid = pane.map(|p| crate::render::Grid::from_screen(p.cells()));
                let kind = ProjectEventKind::Screen {
                    reply,
                    screen,
                    grid,
                };
                self.emit(None, kind).await;
            }
            ProjectCmd::HookStop { answer, transcript } => {
                let record = match transcript {
                    Some(path) => self.read_transcript(path, answer.as_deref()).await,
                    None => TurnRecord::default(),
                };
                self.runner.turn_usage(record.usage);
                if let Some(error) = record.api_error {
                    // The turn ended on an API error, as the agent
                    // recorded it: an error, whatever the screen drew.
                    let failure = AgentFailure {
                        category: error.category,
                        message: Some(error.text),
                    };
                    return self.hook_failure(failure).await;
                }
                if self.runner.hook_stop(record.answer.or(answer)) {
                    self.catch_up().await;
                    // Catching up can end the turn, or show a prompt.
                    if self.runner.running().is_some() && self.runner.approval().is_none() {
                        self.complete().await;
                    }
                } else {
                    // The turn ended by the agent's word: the screen, read
                    // now, says how (see `JobRunner::hook_stop`).
                    self.judge_now().await;
                }
            }
            ProjectCmd::HookFailure(failure) => self.hook_failure(failure).await,
            ProjectCmd::HookApproval => self.judge_now().await,
            ProjectCmd::HookPermission(request) => {
                let steps = self.runner.hook_permission(request);
                self.carry_out(steps).await;
                self.judge_now().await;
            }
            ProjectCmd::HookTask(news) => {
                let steps = self.runner.hook_task(news);
                self.carry_out(steps).await;
            }
        }
    }

    /// The agent said the turn failed ([`AgentFailure`]): the running
    /// command is marked failed (and its error reported) before the
    /// output tmux still holds is taken in, so that neither the screen's
    /// row for the same error nor its idle box after it can report the
    /// turn again, or as a result.
    async fn hook_failure(&mut self, failure: AgentFailure) {
        let (steps, ends) = self.runner.hook_failed(failure);
        self.carry_out(steps).await;
        if ends {
            self.catch_up().await;
            if self.runner.running().is_some() && self.runner.approval().is_none() {
                self.complete().await;
            }
        } else {
            self.judge_now().await;
        }
    }

    /// Judges the screen now rather than after the next output (a hook
    /// says a prompt is coming). Not by feeding nothing: what fell due
    /// would be dropped.
    async fn judge_now(&mut self) {
        let now = self.now();
        if let Some((_, watcher)) = &mut self.pane {
            watcher.detector_mut().judge_soon(now);
        }
        self.tick_at(now).await;
    }

    async fn submit(&mut self, job: Job) {
        match self.runner.submit(job) {
            Admit::Start(job) => self.start(job, false, true).await,
            Admit::Queued { job, position } => {
                self.emit(Some(&job), ProjectEventKind::Queued { position })
                    .await
            }
            Admit::Full(job) => {
                let error = ProjectError::QueueFull;
                self.emit(Some(&job), ProjectEventKind::Failed { error })
                    .await
            }
        }
    }

    /// A command recorded before a restart.
    async fn resume(&mut self, job: Job) {
        if job.stage.is_started() {
            if let Err(error) = self.attach(false).await {
                let error = ProjectError::NotResumed(Box::new(error));
                return self
                    .emit(Some(&job), ProjectEventKind::Failed { error })
                    .await;
            }
            return self.follow(job);
        }
        let Stage::Typing { intent, .. } = job.stage else {
            return self.submit(job).await;
        };
        // Its typing may have been cut short: what the screen shows
        // decides. With no session left, nothing typed can be there.
        if self.runner.running().is_some() || self.attach(false).await.is_err() {
            return self.submit(job).await;
        }
        let Some((pane, watcher)) = &self.pane else {
            return self.submit(job).await;
        };
        let look = watcher.look();
        let decision = typing::resume(&look, &job.text, intent.screen);
        if let Some(journal) = &self.setup.journal {
            journal.log.event(&LogEvent::TypingResumed {
                project: self.setup.name.clone(),
                job: job.id.clone(),
                decision: format!("{decision:?}"),
            });
        }
        match decision {
            Resume::Type => self.submit(job).await,
            Resume::Submit => {
                if let Err(e) = pane.press_enter().await {
                    self.pane = None;
                    return self.lost(job, e.to_string()).await;
                }
                let text = job.text.clone();
                self.begin(job, false, Some(text));
            }
            Resume::Follow => self.begin(job, false, None),
        }
        if let Some(r) = self.runner.running() {
            let job = r.job.clone();
            self.emit(Some(&job), ProjectEventKind::Started).await;
        }
    }

    /// Makes `job` the running command without typing it (it was typed
    /// before a restart); ignored while another command runs.
    fn follow(&mut self, job: Job) {
        if self.runner.running().is_some() || self.pane.is_none() {
            return;
        }
        self.begin(job, false, None);
    }

    /// Makes `job` the running command. `typed` is text just submitted
    /// whose taking is to be confirmed from the screen.
    fn begin(&mut self, job: Job, recovery: bool, typed: Option<String>) {
        let now_ms = self.now();
        let Some((_, watcher)) = &mut self.pane else {
            return;
        };
        watcher.detector_mut().begin_turn();
        // Judge the screen soon even if the agent prints nothing more: the
        // turn may have ended, or be waiting at a prompt, since clawmux went
        // down. (Not by feeding nothing: what fell due would be dropped.)
        watcher.detector_mut().judge_soon(now_ms);
        let now = Instant::now();
        let id = job.id.clone();
        if let Some(at) = self.runner.begin(job, recovery, now, clock::now_ms()) {
            self.record(&id, |j| j.stage.began(at));
        }
        if typed.is_none() {
            self.runner.followed();
        }
        self.receipt = typed.map(|text| ReceiptCheck {
            text,
            enters: 1,
            since: now,
            at: now + typing::RECEIPT_WAIT,
        });
    }

    /// Sets the project's configured mode from the keyboard, as a
    /// `/gsd:mode` would, before the first command is typed into an agent
    /// whose command line could not carry it (see
    /// [`ProjectSetup::apply_mode`]); the chat of that command hears how
    /// it went. Tried once, when the footer first shows another mode.
    async fn apply_configured_mode(&mut self) {
        let Some(mode) = self.setup.apply_mode else {
            return;
        };
        let shown = self
            .pane
            .as_ref()
            .and_then(|(_, w)| w.mode().and_then(PermissionMode::parse));
        let Some(job) = self.runner.first_waiting().filter(|_| {
            self.mode_change.is_none()
                && self.runner.idle()
                && self.runner.starting_until().is_none()
        }) else {
            return;
        };
        let Some(shown) = shown else {
            return;
        };
        self.setup.apply_mode = None;
        if shown == mode {
            return;
        }
        tracing::info!(project = %self.setup.name, %shown, %mode, "setting the configured mode from the keyboard");
        self.mode_change = Some(PendingMode {
            mode,
            by: "clawmux".into(),
            reply: Reply {
                target: job.target.clone(),
                reply_to: job.reply_to.clone(),
            },
            presses: 0,
            at: Instant::now(),
        });
        self.advance_mode().await;
    }

    /// Moves a `/gsd:mode` on: done once the footer shows the mode;
    /// otherwise shift+tab, a wait for the redraw, and again, at most
    /// [`MAX_MODE_PRESSES`] times (the cycle is shorter).
    async fn advance_mode(&mut self) {
        let Some(mut pending) = self.mode_change.take() else {
            return;
        };
        let shown = self
            .pane
            .as_ref()
            .and_then(|(_, w)| w.mode().and_then(PermissionMode::parse));
        let result = match &self.pane {
            None => Err(ProjectError::NotAttached),
            Some(_) if shown == Some(pending.mode) => Ok(pending.mode),
            Some(_) if Instant::now() < pending.at => {
                self.mode_change = Some(pending);
                return;
            }
            Some(_) if pending.presses >= MAX_MODE_PRESSES => Err(ProjectError::ModeNotReached {
                mode: pending.mode,
                shown: shown.map_or_else(|| "no mode".into(), |m| m.to_string()),
            }),
            // Shift+tab in a dialog answers it (Claude Code's edit prompt
            // takes it as "allow all edits"): the live screen first.
            Some((_, w)) if w.look().is_not_waiting() => Err(ProjectError::NotIdle),
            Some((pane, _)) => match pane.cycle_mode().await {
                Ok(()) => {
                    pending.presses += 1;
                    pending.at = Instant::now() + MODE_REDRAW_WAIT;
                    self.mode_change = Some(pending);
                    return;
                }
                Err(e) => Err(ProjectError::Pane(e.into())),
            },
        };
        let kind = ProjectEventKind::ModeSet {
            by: pending.by,
            reply: pending.reply,
            result,
        };
        self.emit(None, kind).await;
    }

    /// Tells the chat when the turn interrupt keys were sent to still runs
    /// [`INTERRUPT_CONFIRM_WAIT`] later; a turn that ended (or another
    /// that began) needs no word: its end was reported.
    async fn check_interrupt(&mut self) {
        let Some(pending) = self.interrupt.take() else {
            return;
        };
        let running = self.runner.running().map(|r| &r.job.id);
        if running != Some(&pending.job) {
            return;
        }
        let kind = ProjectEventKind::InterruptNotConfirmed {
            by: pending.by,
            keys: pending.keys,
            reply: pending.reply,
            waited: pending.sent.elapsed(),
        };
        self.emit(None, kind).await;
    }

    /// When the dialog asking `question` was first seen (now, if it was
    /// not: a restarted actor sees it only from now on).
    fn shown_since(&self, question: &str) -> Instant {
        match &self.shown {
            Some((q, at)) if q == question => *at,
            _ => Instant::now(),
        }
    }

    /// Starts answering `approval_id` (see [`answering`]): refused at once
    /// when another prompt is on screen or an answer is still on its way.
    async fn begin_answer(
        &mut self,
        approval_id: ApprovalId,
        answering: Answering,
        words: Option<String>,
        follow: Option<Job>,
        report: AnswerReport,
    ) {
        let refused = if self.pane.is_none()
            && let Err(e) = self.attach(false).await
        {
            Some(e)
        } else if self.runner.other_prompt(&approval_id, &answering.question) {
            Some(ProjectError::OtherPrompt)
        } else if self.answer.is_some() {
            Some(ProjectError::Answering)
        } else {
            None
        };
        if let Some(error) = refused {
            return self.emit(None, report.event(approval_id, Err(error))).await;
        }
        self.answer = Some(PendingAnswer {
            approval_id,
            answering,
            words,
            follow,
            report,
            at: None,
        });
        self.advance_answer().await;
    }

    /// Moves the answer on its way a step, from what the screen shows now:
    /// the key once the dialog settled, again once if it did not take, the
    /// words into an opened field, and the outcome once the screen says.
    async fn advance_answer(&mut self) {
        let Some(mut pending) = self.answer.take() else {
            return;
        };
        let Some((_, watcher)) = &mut self.pane else {
            let result = Err(ProjectError::NotAttached);
            self.runner.answer_done(false);
            return self
                .emit(None, pending.report.event(pending.approval_id, result))
                .await;
        };
        let look = watcher.look();
        let still_since = self.epoch + Duration::from_millis(watcher.last_output().0);
        let now = Instant::now();
        let result = match pending.answering.step(&look, still_since, now) {
            AnswerStep::WaitUntil(at) | AnswerStep::Confirming(at) => {
                pending.at = Some(at);
                self.answer = Some(pending);
                return;
            }
            AnswerStep::Send => {
                let first = pending.answering.tries() == 0;
                if first {
                    // The prompt stays on screen until the agent redraws; a
                    // watcher that has not reported it yet (after a restart
                    // or a new client) must not take it for a new one.
                    watcher.detector_mut().answered(&pending.answering.question);
                    self.runner.answer_sent();
                    if let Some(job) = pending.follow.take() {
                        self.follow(job);
                    }
                } else {
                    let kind = ProjectEventKind::AnswerResent {
                        approval_id: pending.approval_id.clone(),
                        tries: pending.answering.tries() + 1,
                    };
                    self.emit(None, kind).await;
                }
                let Some((pane, _)) = &self.pane else { return };
                let key = &pending.answering.key;
                // An option answered by a key of its own (Codex's `(y)`).
                let press = (look.prompt.as_ref()).and_then(|p| p.press_for(key));
                let sent = if let Some(press) = press {
                    pane.press(press).await
                } else if pending.answering.max_tries() == 1 {
                    pane.type_line(key).await
                } else {
                    let select = look.prompt.as_ref().map(|p| p.select).unwrap_or_default();
                    pane.answer(key, select).await
                };
                match sent {
                    Ok(()) => {
                        pending.answering.sent(&look, now);
                        pending.at = Some(now + ANSWER_CONFIRM_WAIT);
                        self.answer = Some(pending);
                        return;
                    }
                    Err(e) => Err(ProjectError::Pane(e.into())),
                }
            }
            AnswerStep::Taken => {
                match pending.words.take() {
                    Some(words) => {
                        // The field is open: now the words, into it alone.
                        let Answering {
                            question,
                            body,
                            key,
                            ..
                        } = &pending.answering;
                        pending.answering = Answering::words(question, body, key, &words, now);
                        self.answer = Some(pending);
                        return Box::pin(self.advance_answer()).await;
                    }
                    None => {
                        // A dialog on screen from now on is another one, even
                        // one that looks the same (the same command asked
                        // about twice), but for this one still showing the
                        // answer on its way out.
                        let now_ms = self.now();
                        if let Some((_, watcher)) = &mut self.pane {
                            let chosen = Some(pending.answering.key.as_str());
                            watcher.detector_mut().forget_prompt(now_ms, chosen);
                        }
                        Ok(())
                    }
                }
            }
            AnswerStep::NotTaken => Err(ProjectError::NotTaken {
                tries: pending.answering.tries(),
            }),
            AnswerStep::NotShown if pending.answering.tries() == 0 => {
                Err(ProjectError::OtherPrompt)
            }
            AnswerStep::NotShown => Ok(()),
        };
        self.runner.answer_done(result.is_ok());
        let kind = pending.report.event(pending.approval_id, result);
        self.emit(None, kind).await;
    }

    /// Judges an answer on its way before the detector judges the same
    /// screen: both wait for it to stand still, and a dialog redrawn with
    /// the answer's cursor on it is the answer taken (told to the detector
    /// by [`crate::detect::Detector::forget_prompt`]), not a new dialog.
    async fn judge_answer_first(&mut self) {
        if self.answer.is_some() {
            self.advance_answer().await;
        }
    }

    /// Starts `job`: creates or attaches the session, then types it, unless
    /// the agent is starting or a dialog waits (the chat is told it is
    /// queued when `announce`).
    async fn start(&mut self, job: Job, recovery: bool, announce: bool) {
        let created = match self.attach(true).await {
            Ok(created) => created,
            Err(error) => {
                return self
                    .emit(Some(&job), ProjectEventKind::Failed { error })
                    .await;
            }
        };
        if created {
            self.emit(
                Some(&job),
                ProjectEventKind::SessionCreated {
                    recovered: recovery,
                },
            )
            .await;
        }
        if self.runner.starting_until().is_some() {
            // Typed once the new agent shows its prompt (`drain_queue`).
            self.runner.wait_first(job, recovery);
            return;
        }
        let now = self.now();
        if let Some((_, watcher)) = &mut self.pane
            && typing::dialog_waits(&watcher.look())
        {
            // Opened at the desk, or while clawmux was down, and not
            // reported yet: a key typed now would answer it. Its card goes
            // out once the detector judges it; the command waits.
            watcher.detector_mut().judge_soon(now);
            self.runner.hold(job.clone(), recovery);
            if announce {
                let kind = ProjectEventKind::Queued { position: 1 };
                self.emit(Some(&job), kind).await;
            }
            return;
        }
        if let Err((job, error)) = self.type_job(job, recovery).await {
            // A session lost is made again and retried once; a pane that
            // now runs another program gets nothing.
            if recovery || matches!(error, ProjectError::Replaced(_)) {
                self.emit(Some(&job), ProjectEventKind::Failed { error })
                    .await;
            } else {
                self.lost(job, error.to_string()).await;
            }
        }
    }

    /// Starts waiting commands while the agent is ready for them (once
    /// its configured mode is set, see [`Actor::apply_configured_mode`]).
    async fn drain_queue(&mut self) {
        self.apply_configured_mode().await;
        if self.mode_change.is_some() {
            return;
        }
        while let Some(next) = self.runner.next_waiting() {
            Box::pin(self.start(next.job, next.recovery, false)).await;
        }
    }

    /// Types the job (or, for `recovery`, the context-recovery prompt) and
    /// makes it the running command. The intent is recorded first, with a
    /// fingerprint of the screen, so a crash at any point is resolved from
    /// the screen on resume (see [`typing::resume`]). On a typing failure
    /// the pane is dropped and the job handed back.
    async fn type_job(&mut self, job: Job, recovery: bool) -> Result<(), (Job, ProjectError)> {
        let text = if recovery {
            let tail = self.runner.recent_tail(RECOVERY_TAIL_LINES);
            let workspace = self.setup.spec.workspace.display().to_string();
            texts::recovery_prompt(self.setup.name.as_str(), &workspace, &job.text, &tail)
        } else {
            // In the spelling the project's installed GSD takes.
            self.gsd_spelling(&job.text).await
        };
        let Some((_, watcher)) = &self.pane else {
            return Err((job, ProjectError::NotAttached));
        };
        if !recovery {
            let screen = typing::screen_hash(&watcher.pane().screen_rows());
            let intent = TypingIntent { screen };
            self.record_durably(&job.id, |j| {
                j.stage = Stage::Typing {
                    intent,
                    deadline_ms: j.stage.deadline_ms(),
                }
            })
            .await;
        }
        crash_point("typing_recorded");
        let Some((pane, watcher)) = &mut self.pane else {
            return Err((job, ProjectError::NotAttached));
        };
        watcher.typed(&text);
        let typed = async {
            if text.contains('\n') {
                pane.paste_text(&text).await?;
            } else {
                pane.type_text(&text).await?;
            }
            crash_point("text_typed");
            // Text and Enter together can be taken as a paste and not
            // submitted.
            tokio::time::sleep(TEXT_ENTER_GAP).await;
            pane.press_enter().await
        };
        if let Err(e) = typed.await {
            self.pane = None;
            let error = match e {
                TmuxError::PaneReplaced { .. } => ProjectError::Replaced(e),
                e => ProjectError::Pane(e.into()),
            };
            return Err((job, error));
        }
        crash_point("enter_pressed");
        self.runner.prompt_closed();
        let started = (!recovery).then(|| job.clone());
        self.begin(job, recovery, Some(text));
        if let Some(job) = started {
            self.emit(Some(&job), ProjectEventKind::Started).await;
        }
        Ok(())
    }

    /// Confirms from the screen that the agent took the typed text: Enter
    /// once more while it sits in the input box, then, once it has sat
    /// there for [`typing::NOT_SUBMITTED_AFTER`], the chat is told.
    async fn check_receipt(&mut self) {
        let Some(mut check) = self.receipt.take() else {
            return;
        };
        let (Some((pane, watcher)), Some(_)) = (&self.pane, self.runner.running()) else {
            return;
        };
        let waited = check.since.elapsed();
        let enters = (check.enters, typing::max_enters(watcher.line_mode()));
        match typing::receipt(&watcher.look(), &check.text, enters, waited) {
            Receipt::Taken => {}
            Receipt::Wait => {
                check.at = Instant::now() + typing::RECEIPT_WAIT;
                self.receipt = Some(check);
            }
            Receipt::PressEnter => {
                if pane.press_enter().await.is_ok() {
                    check.enters += 1;
                    check.at = Instant::now() + typing::RECEIPT_WAIT;
                    self.receipt = Some(check);
                    let job = self.runner.running().map(|r| r.job.clone());
                    self.emit(job.as_ref(), ProjectEventKind::Resubmitted).await;
                }
            }
            Receipt::NotSubmitted => {
                let screen = watcher.pane().screen();
                if let Some(running) = self.runner.take_running() {
                    self.emit(
                        Some(&running.job),
                        ProjectEventKind::NotSubmitted { screen },
                    )
                    .await;
                }
            }
        }
    }

    /// Tells the daemon what the project is doing, when that changed.
    async fn report_status(&mut self) {
        let mut status = self.runner.status(self.pane.is_some());
        status.mode = self
            .pane
            .as_ref()
            .and_then(|(_, w)| w.mode().and_then(PermissionMode::parse));
        if self.reported.as_ref() != Some(&status) {
            self.reported = Some(status.clone());
            self.emit(None, ProjectEventKind::Status(status)).await;
        }
    }

    async fn on_client_event(&mut self, event: Option<ClientEvent>) {
        let now = self.now();
        let mut detections = Vec::new();
        match event {
            Some(ClientEvent::Output { pane, data }) => {
                if self.is_agent_pane(pane) {
                    self.judge_answer_first().await;
                }
                if let Some((agent, watcher)) = &mut self.pane
                    && agent.pane == pane
                {
                    let session = &self.setup.spec.session;
                    let steps = runner::take_output(&mut self.runner, watcher, now, &data, session);
                    self.carry_out(steps).await;
                }
            }
            Some(ClientEvent::Resync { pane, screen }) => {
                if let Some((agent, watcher)) = &mut self.pane
                    && agent.pane == pane
                {
                    watcher.feed(now, b"\x1b[H\x1b[2J", &mut |_| {});
                    watcher.feed(now, &screen, &mut |d| detections.push(d));
                }
            }
            Some(ClientEvent::Flood { pane, flooding }) if self.is_agent_pane(pane) => {
                if let Some((_, watcher)) = &mut self.pane {
                    watcher.detector_mut().set_flooding(now, flooding);
                }
                if flooding {
                    self.runner.gap();
                } else if let Some((_, watcher)) = &self.pane {
                    // The flood is over: what it left on the screen (the
                    // snapshot the pane model holds) is the end of its output.
                    self.runner.fill_gap(&watcher.pane().screen_rows());
                }
            }
            Some(ClientEvent::Notification(Notification::Pause { pane }))
                if self.is_agent_pane(pane) =>
            {
                self.runner.gap();
            }
            Some(ClientEvent::Lagged { .. }) => {
                self.runner.gap();
                // Events were lost: start again from the screen tmux has.
                let screen = match &self.pane {
                    Some((agent, _)) => agent.capture().await.ok(),
                    None => None,
                };
                if let (Some(screen), Some((_, watcher))) = (screen, &mut self.pane) {
                    watcher.feed(now, b"\x1b[H\x1b[2J", &mut |_| {});
                    watcher.feed(now, &screen, &mut |d| detections.push(d));
                }
            }
            Some(ClientEvent::Ended(err)) => {
                self.pane = None;
                if let Some(running) = self.runner.take_running() {
                    self.reattach_or_lose(running, err).await;
                }
                return;
            }
            None => {
                self.pane = None;
                if let Some(running) = self.runner.take_running() {
                    self.lost(running.job, "the tmux client ended".into()).await;
                }
                return;
            }
            Some(_) => {}
        }
        self.on_detections(detections).await;
    }

    fn is_agent_pane(&self, pane: PaneId) -> bool {
        self.pane
            .as_ref()
            .is_some_and(|(agent, _)| agent.pane == pane)
    }

    /// Takes in the pane's output that tmux sent before now. A hook comes
    /// another way and can overtake that output; a turn completed without
    /// it would miss its last lines.
    async fn catch_up(&mut self) {
        let Some((agent, _)) = &self.pane else { return };
        if agent.sync().await.is_err() {
            return;
        }
        // What was queued by then, at most: a pane still writing cannot
        // hold the hook up.
        for _ in 0..EVENT_CAPACITY {
            let Some(event) = self.pane.as_mut().and_then(|(agent, _)| agent.try_recv()) else {
                return;
            };
            self.on_client_event(Some(event)).await;
        }
    }

    /// The pane's events ended under a running command. When only the
    /// watching client went (the agent's session lives on), a new one takes
    /// over and the command is followed on; otherwise the session is lost.
    async fn reattach_or_lose(&mut self, running: Running, err: TmuxError) {
        if err.is_client_end()
            && self.reachable(&running.job).await
            && self.attach(false).await.is_ok()
        {
            let now = self.now();
            if let Some((_, watcher)) = &mut self.pane {
                watcher.detector_mut().begin_turn();
                watcher.detector_mut().judge_soon(now);
            }
            let reason = err.to_string();
            self.emit(Some(&running.job), ProjectEventKind::Reconnected { reason })
                .await;
            self.runner.keep_running(running);
            return;
        }
        self.lost(running.job, err.to_string()).await;
    }

    /// Whether the session's server answers, waiting for an unreachable
    /// host with backoff (see [`hosts::probe_with_backoff`]) after telling
    /// the chat, with the host's own message.
    async fn reachable(&mut self, job: &Job) -> bool {
        let spec = &self.setup.spec;
        let probe = match spec.probe().await {
            Err(down) => {
                let error = down.to_string();
                self.emit(Some(job), ProjectEventKind::HostDown { error })
                    .await;
                hosts::probe_with_backoff(&self.setup.spec).await
            }
            answer => answer,
        };
        matches!(probe, Ok(true))
    }

    /// The streamed answer's last rows, read once the step after the
    /// output that drew them is over.
    async fn read_answer(&mut self) {
        let now = self.now();
        let Some((_, watcher)) = &self.pane else {
            return;
        };
        let step = runner::read_answer(&mut self.runner, watcher, now);
        self.carry_out(step.into_iter().collect()).await;
    }

    async fn tick(&mut self) {
        self.tick_at(self.now()).await;
    }

    /// Handles what the watcher has due at `now`.
    async fn tick_at(&mut self, now: Millis) {
        self.judge_answer_first().await;
        let mut detections = Vec::new();
        if let Some((_, watcher)) = &mut self.pane {
            watcher.tick(now, &mut |d| detections.push(d));
        }
        self.on_detections(detections).await;
        // Reported (the approval now holds the queue) or gone. The screen
        // is read only while commands are held.
        if self.runner.held()
            && (!self.runner.idle()
                || !(self.pane.as_ref()).is_some_and(|(_, w)| typing::dialog_waits(&w.look())))
        {
            self.runner.release();
        }
    }

    async fn on_detections(&mut self, detections: Vec<Detection>) {
        for d in detections {
            // A detection left over from a pane that went meanwhile.
            if self.pane.is_none() {
                return;
            }
            let steps = (self.runner).on_detection(d, &self.setup.spec.session);
            self.carry_out(steps).await;
        }
    }

    async fn carry_out(&mut self, steps: Vec<Step>) {
        for step in steps {
            match step {
                Step::Emit(job, kind) => {
                    if let ProjectEventKind::Approval(a) = &kind {
                        // Drawn now (or redrawn with its body): keys wait
                        // for it to settle from here.
                        self.shown = Some((a.question.clone(), Instant::now()));
                    }
                    self.emit(job.as_ref(), kind).await
                }
                Step::Complete => self.complete().await,
                Step::Finished(finished) => self.finished(finished).await,
            }
        }
    }

    async fn complete(&mut self) {
        let rows = (self.pane.as_ref()).map(|(_, watcher)| watcher.pane().screen_rows());
        // A hook's Stop can end the turn while the pane is still watched
        // through snapshots (see `Flood`): the screen fills that gap.
        if let Some(finished) = self.runner.finish(rows.as_deref()) {
            self.finished(finished).await;
        }
    }

    async fn finished(&mut self, finished: Finished) {
        match finished {
            Finished::Report(job, mut kind) => {
                self.answer_from_record(&job, &mut kind).await;
                self.emit(Some(&job), kind).await
            }
            Finished::Recovery(job) => {
                // The agent has its context back: now the real command, once.
                if let Err((job, error)) = self.type_job(job, false).await {
                    self.emit(Some(&job), ProjectEventKind::Failed { error })
                        .await;
                }
            }
        }
    }

    /// The turn's answer, figures and API error from the session
    /// transcript a turn-end hook named, where the profile says the answer
    /// is there (Claude Code's JSONL, see
    /// [`crate::agents::claude_transcript`]): read off the actor within a
    /// deadline ([`record`]: a FIFO or a stuck file never holds the
    /// project up), only inside the project's own folder of its agent's
    /// config directory, and only on this machine (a remote pane's file is
    /// on its host). Claude Code 2.1.197 was seen to run its `Stop` hook
    /// before writing the turn's final line: it is waited for (at most a
    /// second) when the hook said what that line holds (`last`). No answer
    /// when the file cannot be read (logged why): the hook's own text is
    /// the answer then.
    async fn read_transcript(&self, path: std::path::PathBuf, last: Option<&str>) -> TurnRecord {
        use crate::agents::claude_transcript;
        let spec = &self.setup.spec;
        if self.setup.profile.answer != AnswerSource::Transcript
            || spec.host.is_some()
            || spec.remote_shell
        {
            return TurnRecord::default();
        }
        let roots = claude_transcript::agent_roots(&spec.agent, &spec.workspace);
        let reading = record::transcript(path, roots, last.map(str::to_owned)).await;
        let reading = match reading {
            Ok(reading) => reading,
            Err(why) => {
                self.transcript_unused(&why);
                return TurnRecord::default();
            }
        };
        let answer = reading.answer();
        let api_error = reading.api_error();
        if answer.is_none() && api_error.is_none() {
            self.transcript_unused(
                "the transcript holds no assistant text after the turn's prompt",
            );
        }
        TurnRecord {
            answer,
            usage: reading.usage(),
            api_error,
        }
    }

    /// Says in the event log (`clawmux tail --kind hook_ignored`) why the
    /// transcript a hook named gave no answer: a result from the hook's
    /// text has a reason to be found.
    fn transcript_unused(&self, why: &str) {
        if let Some(journal) = &self.setup.journal {
            journal.log.event(&LogEvent::HookIgnored {
                pane: (self.pane.as_ref())
                    .map(|(pane, _)| pane.pane.to_string())
                    .unwrap_or_default(),
                reason: format!("{why}; the Stop hook's text is the answer"),
            });
        }
    }

    /// The turn's answer as the agent recorded it, where it keeps a record
    /// clawmux reads (Aider's `.aider.chat.history.md` in a local
    /// workspace), in place of the answer read off the screen; the screen's
    /// stays when the record has none for this command, or is not read
    /// within its deadline (see [`record`]).
    async fn answer_from_record(&self, job: &Job, kind: &mut ProjectEventKind) {
        let ProjectEventKind::Completed { output, ending, .. } = kind else {
            return;
        };
        let local = self.setup.spec.host.is_none() && !self.setup.spec.remote_shell;
        if self.setup.profile.answer != AnswerSource::AiderHistory
            || !local
            || *ending == TurnEnding::Failed
        {
            return;
        }
        let (workspace, asked) = (self.setup.spec.workspace.clone(), job.text.clone());
        let read = record::bounded(move || {
            crate::agents::aider_history::read_reply(&workspace, &asked).map_err(|e| e.to_string())
        });
        match read.await {
            Ok(Ok(reply)) => *output = reply,
            Ok(Err(e)) => tracing::debug!(project = %self.setup.name, "answer off the screen: {e}"),
            Err(e) => tracing::warn!(project = %self.setup.name, "answer off the screen: {e}"),
        }
    }

    async fn on_timeout(&mut self) {
        let screen = match &self.pane {
            Some((_, watcher)) => watcher.pane().screen(),
            None => String::new(),
        };
        if let Some((job, kind)) = self.runner.time_out(screen) {
            self.emit(Some(&job), kind).await;
        }
    }

    /// The session went away under a command: recreate it, restore the
    /// agent's context, and retry the command once.
    async fn lost(&mut self, job: Job, reason: String) {
        self.runner.session_gone();
        self.receipt = None;
        let retrying = !job.retried;
        self.emit(
            Some(&job),
            ProjectEventKind::SessionLost {
                reason: reason.clone(),
                retrying,
            },
        )
        .await;
        if !retrying {
            let error = ProjectError::LostAgain { reason };
            return self
                .emit(Some(&job), ProjectEventKind::Failed { error })
                .await;
        }
        self.record(&job.id, |j| j.retried = true);
        let job = Job {
            retried: true,
            ..job
        };
        Box::pin(self.start(job, true, false)).await;
    }
}

async fn next_event(pane: &mut Option<(AgentPane, PaneWatcher)>) -> Option<ClientEvent> {
    match pane {
        Some((agent, _)) => agent.recv().await,
        None => std::future::pending().await,
    }
}

async fn sleep_opt(at: Option<Instant>) {
    match at {
        Some(at) => sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

/// Changes job `id` in `state`, if it is still there.
fn change_job(state: &mut crate::store::State, id: &str, change: impl FnOnce(&mut Job)) {
    if let Some(job) = state.jobs.iter_mut().find(|j| j.id == id) {
        change(job);
    }
}
