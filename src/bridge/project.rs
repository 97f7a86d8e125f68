//! One project's actor: owns its agent pane (tmux session, control client,
//! pane text and detector) and runs chat commands one at a time, queueing the
//! rest. It reports what happens as [`ProjectEvent`]s; it never talks to the
//! chat itself.
//!
//! Long on purpose: one actor, one event loop, and its states (starting,
//! running, confirming a receipt, recovering) read best in one place; the
//! decisions that need no I/O live in [`super::typing`] and [`super::core`].

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio::time::sleep_until;
use tokio_util::task::{AbortOnDropHandle, TaskTracker};

use super::agent_pane::{AgentPane, PaneSpec};
use super::config::Config;
use super::crash_point::crash_point;
use super::hosts;
use super::names::session_name;
use super::texts;
use super::transcript::Transcript;
use super::typing::{self, Receipt, Resume};
use super::watch_session::WatchSession;
use crate::control::{Notification, PaneId};
use crate::detect::{
    Detection, DetectionKind, DetectorConfig, Millis, PaneWatcher, Profile, ProgressFields,
};
use crate::detect::{ProfileError, Profiles};
use crate::store::clock;
pub use crate::store::state::Job;
use crate::store::state::{ApprovalKind, ApprovalOption, ChatTarget, TypingIntent};
use crate::store::{LogEvent, SharedState};
use crate::tmux::{ClientEvent, EVENT_CAPACITY, TEXT_ENTER_GAP, TmuxError};

/// Commands waiting per project at most: more is a runaway script.
pub const MAX_QUEUED: usize = 32;
/// Distinct error lines reported per command at most, so a log full of
/// errors does not become a storm of cards.
const MAX_ERRORS_PER_JOB: usize = 3;
/// Recent output shown on a progress card.
const PROGRESS_TAIL_LINES: usize = 8;
/// Longest wait for a new agent's idle prompt before typing anyway:
/// Claude Code starts in a few seconds.
const AGENT_START_WAIT: Duration = Duration::from_secs(20);
/// Finished lines remembered to tell a redraw from new output: a few
/// screens' worth.
const RECENT_LINES: usize = 256;
/// Lines of the lost session's output quoted in the recovery prompt.
const RECOVERY_TAIL_LINES: usize = 20;
/// Commands to the actor waiting at most.
const COMMAND_CAPACITY: usize = 64;

/// Why a project could not do what it was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProjectError {
    #[error("the project stopped")]
    Stopped,
    #[error("the project is not keeping up with its commands; try again in a moment")]
    Overloaded,
    #[error("{MAX_QUEUED} commands are already waiting; try again later")]
    QueueFull,
    #[error("the agent pane is not attached")]
    NotAttached,
    #[error("another prompt is on screen now; answer that one")]
    OtherPrompt,
    #[error("nothing is running")]
    NothingToCancel,
    /// tmux could not be reached or refused a command.
    #[error("{0}")]
    Pane(String),
    #[error("the session was lost again ({reason}); not retrying")]
    LostAgain { reason: String },
    #[error("the command was running when clawmux restarted, and {0}")]
    NotResumed(Box<ProjectError>),
    #[error("{0}")]
    Profile(String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum ProjectEventKind {
    /// Waiting behind `position` other commands (1 = next).
    Queued {
        position: usize,
    },
    /// Typed into the pane (or found there after a restart).
    Started,
    Progress {
        summary: String,
        percent: Option<u8>,
        tail: String,
    },
    Approval(ApprovalSeen),
    ApprovalGone {
        approval_id: String,
    },
    Error {
        line: String,
        context: String,
    },
    Completed {
        output: String,
        seconds: u64,
        errors: usize,
        ending: TurnEnding,
    },
    TimedOut {
        screen: String,
        seconds: u64,
        /// Nothing on the screen was recognised during the command (no
        /// busy marker, prompt, progress or idle box): the agent's screen
        /// may have changed beyond what detection knows.
        unrecognised: bool,
    },
    /// The typed command stayed in the agent's input box through every
    /// Enter: the agent did not take it.
    NotSubmitted {
        screen: String,
    },
    /// Enter was pressed once more: the typed command was still in the
    /// input box after [`typing::RECEIPT_WAIT`].
    Resubmitted,
    /// The session or tmux server is gone.
    SessionLost {
        reason: String,
        retrying: bool,
    },
    /// A new session was created (after a loss, or on first use).
    SessionCreated {
        recovered: bool,
    },
    /// The command could not be run at all.
    Failed {
        error: ProjectError,
    },
    /// The agent pane this project uses (for hook routing).
    Attached {
        pane: String,
    },
    /// An answer to an approval was typed (or could not be).
    Answered {
        approval_id: String,
        by: String,
        label: String,
        reply: Reply,
        result: Result<(), ProjectError>,
    },
    /// Free text answering a question was typed (or could not be).
    Replied {
        approval_id: String,
        by: String,
        text: String,
        reply: Reply,
        result: Result<(), ProjectError>,
    },
    /// `/gsd:cancel`: Esc was sent, or there was nothing to cancel.
    Cancelled {
        by: String,
        reply: Reply,
        result: Result<(), ProjectError>,
    },
    /// What the project is doing now (sent when it changes).
    Status(ProjectStatus),
    /// The pane's screen for `/gsd:screen` (`None`: no pane attached).
    Screen {
        reply: Reply,
        screen: Option<String>,
    },
    /// The watching client ended under a command (`reason`) and a new
    /// one took over: the command is followed on.
    Reconnected {
        reason: String,
    },
    /// The project's host could not be reached (`ssh`'s own message);
    /// probing it again with backoff.
    HostDown {
        error: String,
    },
}

/// How a turn ended, besides its output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnEnding {
    Finished,
    /// The user stopped it (answered No, pressed Esc): the agent's row.
    Interrupted(String),
    /// The agent refused the command itself (`Unknown command: …`).
    Rejected(String),
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ApprovalSeen {
    pub id: String,
    pub session: String,
    pub pane: String,
    pub kind: ApprovalKind,
    pub question: String,
    /// What is asked about (see [`crate::detect::DetectionKind::Approval`]).
    pub body: String,
    pub options: Vec<ApprovalOption>,
}

#[derive(Debug, Clone)]
pub struct ProjectEvent {
    pub project: String,
    /// The command this is about, if any.
    pub job: Option<Job>,
    pub kind: ProjectEventKind,
}

/// What a project is doing, for `/gsd:status`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProjectStatus {
    pub attached: bool,
    /// A new agent is starting: commands wait until it is ready.
    pub starting: bool,
    pub running: Option<String>,
    pub busy: bool,
    pub awaiting_approval: Option<String>,
    pub last_progress: Option<String>,
    pub queued: usize,
}

/// Where the outcome of a request from chat is told.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub target: ChatTarget,
    /// The chat message the request came in (the answer replies to it).
    pub reply_to: Option<String>,
}

/// What a project actor is asked to do. None of these waits for an answer:
/// outcomes come back as [`ProjectEvent`]s, so the daemon never waits on a
/// project (one stuck project cannot hold up the others' chats).
pub enum ProjectCmd {
    Submit(Job),
    /// A command from before a restart: typed if it never was, resolved
    /// from the screen if its typing was cut short, followed to its result
    /// if it started.
    Resume(Job),
    /// Type an option key for the approval `approval_id`. When no command
    /// is running (a restart, or `clawmux run --answer`), `follow` becomes
    /// the running command so the rest of the turn is reported.
    Answer {
        approval_id: String,
        /// The prompt's question: after a restart the actor may know the
        /// same prompt under another id.
        question: String,
        key: String,
        follow: Option<Job>,
        /// Who answered, and the option's label (for [`ProjectEventKind::Answered`]).
        by: String,
        label: String,
        reply: Reply,
    },
    /// Free text answering a question (a reply to its card).
    Type {
        approval_id: String,
        text: String,
        by: String,
        reply: Reply,
    },
    Cancel {
        by: String,
        reply: Reply,
    },
    /// `/gsd:screen`: the pane's screen as it shows now.
    Screen {
        reply: Reply,
    },
    /// Claude Code's `Stop` hook fired in this pane: the turn is over.
    HookStop,
    /// A permission hook fired: a prompt is (about to be) on screen.
    HookApproval,
}

/// Everything the actor needs that does not change.
pub struct ProjectSetup {
    pub name: String,
    pub spec: PaneSpec,
    /// The server's watch session, shared by every project on it.
    pub watch: Arc<WatchSession>,
    pub profile: Arc<Profile>,
    pub detector: DetectorConfig,
    /// Where the actor records its intent before typing a command (the
    /// daemon's state); `None` for `clawmux run`, which keeps no state.
    pub journal: Option<SharedState>,
}

impl ProjectSetup {
    /// The setup of project `name` from the daemon's configuration. An
    /// unknown per-project profile falls back to the default profile.
    pub fn new(
        config: &Config,
        profiles: &Profiles,
        sim_agent: &str,
        name: &str,
        workspace: PathBuf,
        watch: Arc<WatchSession>,
        journal: Option<SharedState>,
    ) -> Result<ProjectSetup, ProfileError> {
        let agent = match config.agent_for(name) {
            "sim" => sim_agent.to_string(),
            other => other.to_string(),
        };
        let profile = profiles
            .get(config.profile_for(name))
            .or_else(|_| profiles.get(&config.agent.profile))?;
        let spec = PaneSpec {
            workspace,
            agent,
            ..watch.spec_for(session_name(name))
        };
        Ok(ProjectSetup {
            name: name.to_string(),
            spec,
            watch,
            profile,
            detector: DetectorConfig {
                debounce: Duration::from_millis(config.agent.debounce_ms),
                ..Default::default()
            },
            journal,
        })
    }
}

/// A command a project actor could not take, handed back with why.
pub struct Refused {
    pub cmd: ProjectCmd,
    pub error: ProjectError,
}

/// A handle to a running project actor.
#[derive(Clone)]
pub struct ProjectHandle {
    tx: mpsc::Sender<ProjectCmd>,
    /// The actor stops with its last handle (its daemon stopped): left
    /// running, it would go on recreating lost sessions for nobody.
    _actor: Arc<AbortOnDropHandle<()>>,
}

impl ProjectHandle {
    /// Starts the actor on `actors`, so whoever stops its daemon can wait
    /// until it is gone.
    pub fn spawn(
        setup: ProjectSetup,
        events: mpsc::Sender<ProjectEvent>,
        actors: &TaskTracker,
    ) -> ProjectHandle {
        let (tx, rx) = mpsc::channel(COMMAND_CAPACITY);
        let actor = actors.spawn(Actor::new(setup, events).run(rx));
        ProjectHandle {
            tx,
            _actor: Arc::new(AbortOnDropHandle::new(actor)),
        }
    }

    /// Hands `cmd` to the actor without waiting (the actor sends its
    /// events to whoever sends it commands, so waiting here for room could
    /// wait for ever on an actor that waits for us); a refused command is
    /// handed back.
    pub fn send(&self, cmd: ProjectCmd) -> Result<(), Box<Refused>> {
        self.tx.try_send(cmd).map_err(|e| {
            let (cmd, error) = match e {
                mpsc::error::TrySendError::Full(cmd) => (cmd, ProjectError::Overloaded),
                mpsc::error::TrySendError::Closed(cmd) => (cmd, ProjectError::Stopped),
            };
            Box::new(Refused { cmd, error })
        })
    }
}

struct Running {
    job: Job,
    output: Transcript,
    started: Instant,
    deadline: Instant,
    errors: Vec<String>,
    ending: TurnEnding,
    /// Detection recognised something on screen during the command.
    recognised: bool,
    /// Internal turn (the recovery prompt): no cards, then `job` is retried.
    recovery: bool,
}

/// A command waiting for its turn; `recovery` types the context-recovery
/// prompt first (its session was recreated).
struct Waiting {
    job: Job,
    recovery: bool,
}

/// Typed text whose taking by the agent is still to be confirmed.
struct ReceiptCheck {
    text: String,
    enters: u8,
    at: Instant,
}

struct Actor {
    setup: ProjectSetup,
    events: mpsc::Sender<ProjectEvent>,
    pane: Option<(AgentPane, PaneWatcher)>,
    running: Option<Running>,
    queue: VecDeque<Waiting>,
    /// A new agent is starting: nothing is typed until it shows its idle
    /// prompt, or until this deadline.
    starting: Option<Instant>,
    receipt: Option<ReceiptCheck>,
    approval: Option<ApprovalSeen>,
    /// The last lines the pane finished (see [`Transcript::after`]).
    recent: VecDeque<String>,
    last_progress: Option<String>,
    busy: bool,
    /// The status last reported to the daemon.
    reported: Option<ProjectStatus>,
    /// The clock detections are measured on.
    epoch: Instant,
}

impl Actor {
    fn new(setup: ProjectSetup, events: mpsc::Sender<ProjectEvent>) -> Actor {
        Actor {
            setup,
            events,
            pane: None,
            running: None,
            queue: VecDeque::new(),
            starting: None,
            receipt: None,
            approval: None,
            recent: VecDeque::new(),
            last_progress: None,
            busy: false,
            reported: None,
            epoch: Instant::now(),
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
        // approvals, hooks, status), without creating one.
        if self.setup.spec.session_exists().await {
            let _ = self.attach(false).await;
        }
        loop {
            let detect_at = self
                .pane
                .as_ref()
                .and_then(|(_, w)| w.next_deadline())
                .map(|m| self.instant(m));
            let timeout_at = self.running.as_ref().map(|r| r.deadline);
            let receipt_at = self.receipt.as_ref().map(|r| r.at);
            tokio::select! {
                cmd = rx.recv() => match cmd {
                    Some(cmd) => self.on_command(cmd).await,
                    None => return,
                },
                event = next_event(&mut self.pane) => self.on_client_event(event).await,
                _ = sleep_opt(detect_at) => self.tick().await,
                _ = sleep_opt(timeout_at) => self.on_timeout().await,
                // The agent never showed its prompt: type anyway.
                _ = sleep_opt(self.starting) => self.starting = None,
                _ = sleep_opt(receipt_at) => self.check_receipt().await,
            }
            self.drain_queue().await;
            self.report_status().await;
        }
    }

    /// Makes sure a session exists and is attached; creates it when
    /// `create`. True when a session was created: its agent is then
    /// starting, and nothing is typed until it is ready (see `starting`).
    async fn attach(&mut self, create: bool) -> Result<bool, ProjectError> {
        if self.pane.is_some() {
            return Ok(false);
        }
        let spec = &self.setup.spec;
        let (agent, created) = (self.setup.watch.attach(spec, create).await)
            .map_err(|e| ProjectError::Pane(e.to_string()))?;
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
            watcher.detector_mut().begin_turn();
            self.starting = Some(Instant::now() + AGENT_START_WAIT);
        }
        let pane = agent.pane.to_string();
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
                key,
                follow,
                by,
                label,
                reply,
            } => {
                let result = self.answer(&approval_id, &question, &key).await;
                if result.is_ok()
                    && let Some(job) = follow
                {
                    self.follow(job);
                }
                let kind = ProjectEventKind::Answered {
                    approval_id,
                    by,
                    label,
                    reply,
                    result,
                };
                self.emit(None, kind).await;
            }
            ProjectCmd::Type {
                approval_id,
                text,
                by,
                reply,
            } => {
                let result = match &self.pane {
                    Some((p, _)) => {
                        (p.type_line(&text).await).map_err(|e| ProjectError::Pane(e.to_string()))
                    }
                    None => Err(ProjectError::NotAttached),
                };
                let kind = ProjectEventKind::Replied {
                    approval_id,
                    by,
                    text,
                    reply,
                    result,
                };
                self.emit(None, kind).await;
            }
            ProjectCmd::Cancel { by, reply } => {
                // Esc with nothing to stop would wait in the agent's input
                // and spoil the next command.
                let idle = self.running.is_none() && self.approval.is_none() && !self.busy;
                let result = match &self.pane {
                    Some(_) if idle => Err(ProjectError::NothingToCancel),
                    Some((p, _)) => p
                        .escape()
                        .await
                        .map_err(|e| ProjectError::Pane(e.to_string())),
                    None => Err(ProjectError::NothingToCancel),
                };
                self.emit(None, ProjectEventKind::Cancelled { by, reply, result })
                    .await;
            }
            ProjectCmd::Screen { reply } => {
                let screen = (self.pane.as_ref()).map(|(_, watcher)| watcher.pane().screen());
                self.emit(None, ProjectEventKind::Screen { reply, screen })
                    .await;
            }
            ProjectCmd::HookStop => {
                if self.running.is_some() && self.approval.is_none() {
                    self.catch_up().await;
                    // Catching up can end the turn, or show a prompt.
                    if self.running.is_some() && self.approval.is_none() {
                        self.complete().await;
                    }
                }
            }
            ProjectCmd::HookApproval => {
                // Judge the screen now rather than after the next output.
                let now = self.now();
                if let Some((_, watcher)) = &mut self.pane {
                    watcher.feed(now, b"", &mut |_| {});
                }
            }
        }
    }

    async fn submit(&mut self, job: Job) {
        if self.ready() {
            return self.start(job, false).await;
        }
        if self.queue.len() >= MAX_QUEUED {
            let error = ProjectError::QueueFull;
            return self
                .emit(Some(&job), ProjectEventKind::Failed { error })
                .await;
        }
        self.queue.push_back(Waiting {
            job: job.clone(),
            recovery: false,
        });
        // The first command waiting for a starting agent is as good as
        // running: the others wait behind it.
        let first_starts = self.running.is_none() && self.starting.is_some();
        let position = self.queue.len() - usize::from(first_starts);
        self.emit(Some(&job), ProjectEventKind::Queued { position })
            .await;
    }

    /// A command recorded before a restart.
    async fn resume(&mut self, job: Job) {
        if job.started {
            if let Err(error) = self.attach(false).await {
                let error = ProjectError::NotResumed(Box::new(error));
                return self
                    .emit(Some(&job), ProjectEventKind::Failed { error })
                    .await;
            }
            return self.follow(job);
        }
        let Some(intent) = job.typing else {
            return self.submit(job).await;
        };
        // Its typing may have been cut short: what the screen shows
        // decides. With no session left, nothing typed can be there.
        if self.running.is_some() || self.attach(false).await.is_err() {
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
        if let Some(r) = &self.running {
            let job = r.job.clone();
            self.emit(Some(&job), ProjectEventKind::Started).await;
        }
    }

    /// Makes `job` the running command without typing it (it was typed
    /// before a restart); ignored while another command runs.
    fn follow(&mut self, job: Job) {
        if self.running.is_some() || self.pane.is_none() {
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
        let now_ms = clock::now_ms();
        let timeout = Duration::from_secs(job.timeout_secs);
        // A deadline recorded before a restart still holds, and the time
        // the command ran before it counts.
        let (started, deadline) = match job.deadline_ms {
            Some(at) => {
                let left = Duration::from_millis(at.saturating_sub(now_ms));
                let ran = timeout.saturating_sub(left);
                (now.checked_sub(ran).unwrap_or(now), now + left)
            }
            None => {
                let at = now_ms.saturating_add(timeout.as_millis() as u64);
                self.record(&job.id, |j| j.deadline_ms = Some(at));
                (now, now + timeout)
            }
        };
        self.receipt = typed.map(|text| ReceiptCheck {
            text,
            enters: 1,
            at: now + typing::RECEIPT_WAIT,
        });
        self.running = Some(Running {
            job,
            output: Transcript::after(&self.recent),
            started,
            deadline,
            errors: Vec::new(),
            ending: TurnEnding::Finished,
            recognised: false,
            recovery,
        });
    }

    /// Types the answer when `approval_id` is still the prompt on screen.
    async fn answer(
        &mut self,
        approval_id: &str,
        question: &str,
        key: &str,
    ) -> Result<(), ProjectError> {
        if self.pane.is_none() {
            self.attach(false).await?;
        }
        // After a restart the actor has not seen the prompt itself; the
        // daemon checked the persisted approval, so only a different live
        // prompt is a conflict.
        if let Some(current) = &self.approval
            && current.id != approval_id
            && current.question != question
        {
            return Err(ProjectError::OtherPrompt);
        }
        let Some((pane, watcher)) = &mut self.pane else {
            return Err(ProjectError::NotAttached);
        };
        (pane.answer(key).await).map_err(|e| ProjectError::Pane(e.to_string()))?;
        // The prompt stays on screen until the agent redraws; a watcher that
        // has not reported it yet (after a restart or a new client) must not
        // take it for a new one.
        watcher.detector_mut().answered(question);
        self.approval = None;
        Ok(())
    }

    async fn start(&mut self, job: Job, recovery: bool) {
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
        if self.starting.is_some() {
            // Typed once the new agent shows its prompt (`drain_queue`).
            self.queue.push_front(Waiting { job, recovery });
            return;
        }
        if let Err((job, reason)) = self.type_job(job, recovery).await {
            if recovery {
                let error = ProjectError::Pane(reason);
                self.emit(Some(&job), ProjectEventKind::Failed { error })
                    .await;
            } else {
                self.lost(job, reason).await;
            }
        }
    }

    /// May a command be typed now? Not while one runs, while a new agent
    /// starts, or while a prompt waits for its answer (keys typed into it
    /// would choose an option nobody chose).
    fn ready(&self) -> bool {
        self.running.is_none() && self.starting.is_none() && self.approval.is_none()
    }

    /// Starts waiting commands while the agent is ready for them.
    async fn drain_queue(&mut self) {
        while self.ready() {
            let Some(next) = self.queue.pop_front() else {
                return;
            };
            Box::pin(self.start(next.job, next.recovery)).await;
        }
    }

    /// Types the job (or, for `recovery`, the context-recovery prompt) and
    /// makes it the running command. The intent is recorded first, with a
    /// fingerprint of the screen, so a crash at any point is resolved from
    /// the screen on resume (see [`typing::resume`]). On a typing failure
    /// the pane is dropped and the job handed back.
    async fn type_job(&mut self, job: Job, recovery: bool) -> Result<(), (Job, String)> {
        let text = if recovery {
            let skip = self.recent.len().saturating_sub(RECOVERY_TAIL_LINES);
            let tail: Vec<&str> = self.recent.iter().skip(skip).map(String::as_str).collect();
            let workspace = self.setup.spec.workspace.display().to_string();
            texts::recovery_prompt(&self.setup.name, &workspace, &job.text, &tail.join(" / "))
        } else {
            job.text.clone()
        };
        let Some((_, watcher)) = &self.pane else {
            return Err((job, ProjectError::NotAttached.to_string()));
        };
        if !recovery {
            let screen = typing::screen_hash(&watcher.pane().screen_rows());
            let intent = Some(TypingIntent { screen });
            self.record_durably(&job.id, |j| j.typing = intent).await;
        }
        crash_point("typing_recorded");
        let Some((pane, watcher)) = &mut self.pane else {
            return Err((job, ProjectError::NotAttached.to_string()));
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
            return Err((job, e.to_string()));
        }
        crash_point("enter_pressed");
        self.approval = None;
        let started = (!recovery).then(|| job.clone());
        self.begin(job, recovery, Some(text));
        if let Some(job) = started {
            self.emit(Some(&job), ProjectEventKind::Started).await;
        }
        Ok(())
    }

    /// Confirms from the screen that the agent took the typed text: Enter
    /// once more while it sits in the input box, then the chat is told.
    async fn check_receipt(&mut self) {
        let Some(mut check) = self.receipt.take() else {
            return;
        };
        let (Some((pane, watcher)), Some(_)) = (&self.pane, &self.running) else {
            return;
        };
        match typing::receipt(&watcher.look(), &check.text, check.enters) {
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
                    let job = self.running.as_ref().map(|r| r.job.clone());
                    self.emit(job.as_ref(), ProjectEventKind::Resubmitted).await;
                }
            }
            Receipt::NotSubmitted => {
                let screen = watcher.pane().screen();
                if let Some(running) = self.running.take() {
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
        let status = ProjectStatus {
            attached: self.pane.is_some(),
            starting: self.starting.is_some(),
            running: self.running.as_ref().map(|r| r.job.text.clone()),
            busy: self.busy,
            awaiting_approval: self.approval.as_ref().map(|a| a.question.clone()),
            last_progress: self.last_progress.clone(),
            queued: self.queue.len(),
        };
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
                    // What fell due before this output (a turn's end) is
                    // handled first: the output belongs to what follows.
                    self.tick_at(now).await;
                    detections = self.feed_pane(now, &data);
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
                    self.mark_gap();
                } else if let (Some((_, watcher)), Some(running)) = (&self.pane, &mut self.running)
                {
                    // The flood is over: what it left on the screen (the
                    // snapshot the pane model holds) is the end of its output.
                    running.output.fill_gap(&watcher.pane().screen_rows());
                }
            }
            Some(ClientEvent::Notification(Notification::Pause { pane }))
                if self.is_agent_pane(pane) =>
            {
                self.mark_gap();
            }
            Some(ClientEvent::Lagged { .. }) => {
                self.mark_gap();
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
                if let Some(running) = self.running.take() {
                    self.reattach_or_lose(running, err).await;
                }
                return;
            }
            None => {
                self.pane = None;
                if let Some(running) = self.running.take() {
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
    async fn reattach_or_lose(&mut self, mut running: Running, err: TmuxError) {
        if err.is_client_end()
            && self.reachable(&running.job).await
            && self.attach(false).await.is_ok()
        {
            let now = self.now();
            if let Some((_, watcher)) = &mut self.pane {
                watcher.detector_mut().begin_turn();
                watcher.detector_mut().judge_soon(now);
            }
            running.output.gap();
            let reason = err.to_string();
            self.emit(Some(&running.job), ProjectEventKind::Reconnected { reason })
                .await;
            self.running = Some(running);
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

    /// The running command's output goes on without some of its lines.
    fn mark_gap(&mut self) {
        if let Some(running) = &mut self.running {
            running.output.gap();
        }
    }

    /// Feeds agent output to the pane model and detector; the lines it
    /// finishes go to the running command's transcript.
    fn feed_pane(&mut self, now: Millis, data: &[u8]) -> Vec<Detection> {
        let mut detections = Vec::new();
        let Some((_, watcher)) = &mut self.pane else {
            return detections;
        };
        let lines = watcher.pane_mut().feed(data);
        if let Some(running) = &mut self.running {
            running.output.push(&lines);
        }
        self.recent.extend(lines.iter().cloned());
        let excess = self.recent.len().saturating_sub(RECENT_LINES);
        self.recent.drain(..excess);
        watcher
            .detector_mut()
            .feed(now, &lines, &mut |d| detections.push(d));
        watcher.tick(now, &mut |d| detections.push(d));
        detections
    }

    async fn tick(&mut self) {
        self.tick_at(self.now()).await;
    }

    /// Handles what the watcher has due at `now`.
    async fn tick_at(&mut self, now: Millis) {
        let mut detections = Vec::new();
        if let Some((_, watcher)) = &mut self.pane {
            watcher.tick(now, &mut |d| detections.push(d));
        }
        self.on_detections(detections).await;
    }

    async fn on_detections(&mut self, detections: Vec<Detection>) {
        for d in detections {
            self.on_detection(d).await;
        }
    }

    async fn on_detection(&mut self, d: Detection) {
        let job = self
            .running
            .as_ref()
            .filter(|r| !r.recovery)
            .map(|r| r.job.clone());
        if let Some(running) = &mut self.running {
            running.recognised = true;
        }
        match d.kind {
            DetectionKind::Busy => self.busy = true,
            DetectionKind::Completed => {
                self.busy = false;
                // A new agent showed its prompt: it is ready for input.
                self.starting = None;
                if self.running.is_some() && self.approval.is_none() {
                    self.complete().await;
                }
            }
            DetectionKind::Progress(fields) => {
                let summary = describe(&fields);
                self.last_progress = Some(summary.clone());
                let tail = self.tail();
                if job.is_some() {
                    let percent = fields.percent;
                    self.emit(
                        job.as_ref(),
                        ProjectEventKind::Progress {
                            summary,
                            percent,
                            tail,
                        },
                    )
                    .await;
                }
            }
            DetectionKind::Approval {
                approval,
                question,
                body,
                options,
            } => {
                let Some((agent, _)) = &self.pane else { return };
                // The prompt reported already, seen again (a new client).
                if self
                    .approval
                    .as_ref()
                    .is_some_and(|a| a.question == question)
                {
                    return;
                }
                let seen = ApprovalSeen {
                    id: uuid::Uuid::new_v4().to_string(),
                    session: self.setup.spec.session.clone(),
                    pane: agent.pane.to_string(),
                    kind: approval,
                    question,
                    body,
                    options,
                };
                self.approval = Some(seen.clone());
                self.emit(job.as_ref(), ProjectEventKind::Approval(seen))
                    .await;
            }
            DetectionKind::ApprovalGone { .. } => {
                if let Some(gone) = self.approval.take() {
                    self.emit(
                        job.as_ref(),
                        ProjectEventKind::ApprovalGone {
                            approval_id: gone.id,
                        },
                    )
                    .await;
                }
            }
            // How a turn ended besides an error: the completion follows.
            DetectionKind::Interrupted { line } => {
                if let Some(running) = &mut self.running {
                    running.ending = TurnEnding::Interrupted(line);
                }
            }
            DetectionKind::Rejected { line } => {
                if let Some(running) = &mut self.running {
                    running.ending = TurnEnding::Rejected(line);
                }
            }
            DetectionKind::Error { line } => {
                let Some(running) = self.running.as_mut().filter(|r| !r.recovery) else {
                    return;
                };
                if running.errors.len() >= MAX_ERRORS_PER_JOB || running.errors.contains(&line) {
                    return;
                }
                running.errors.push(line.clone());
                self.emit(
                    job.as_ref(),
                    ProjectEventKind::Error {
                        line,
                        context: d.context,
                    },
                )
                .await;
            }
        }
    }

    fn tail(&self) -> String {
        self.running
            .as_ref()
            .map(|r| r.output.tail(PROGRESS_TAIL_LINES))
            .unwrap_or_default()
    }

    async fn complete(&mut self) {
        let Some(running) = self.running.take() else {
            return;
        };
        self.busy = false;
        if running.recovery {
            // The agent has its context back: now the real command, once.
            if let Err((job, error)) = self.type_job(running.job, false).await {
                let error = ProjectError::Pane(error);
                self.emit(Some(&job), ProjectEventKind::Failed { error })
                    .await;
            }
            return;
        }
        let mut output = running.output;
        if let Some((_, watcher)) = &self.pane {
            // A hook's Stop can end the turn while the pane is still
            // watched through snapshots (see `Flood`).
            output.fill_gap(&watcher.pane().screen_rows());
        }
        let output = output.text();
        let seconds = running.started.elapsed().as_secs();
        let errors = running.errors.len();
        self.emit(
            Some(&running.job),
            ProjectEventKind::Completed {
                output,
                seconds,
                errors,
                ending: running.ending,
            },
        )
        .await;
    }

    async fn on_timeout(&mut self) {
        let Some(running) = self.running.take() else {
            return;
        };
        let screen = match &self.pane {
            Some((_, watcher)) => watcher.pane().screen(),
            None => String::new(),
        };
        let seconds = running.started.elapsed().as_secs();
        self.emit(
            Some(&running.job),
            ProjectEventKind::TimedOut {
                screen,
                seconds,
                unrecognised: !running.recognised,
            },
        )
        .await;
    }

    /// The session went away under a command: recreate it, restore the
    /// agent's context, and retry the command once.
    async fn lost(&mut self, job: Job, reason: String) {
        self.approval = None;
        self.busy = false;
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
        Box::pin(self.start(job, true)).await;
    }
}

/// `42% · 3/10 · phase 2 · EXECUTING WAVE 1`: the fields a line had.
fn describe(p: &ProgressFields) -> String {
    let mut parts = Vec::new();
    if let Some(stage) = &p.stage {
        parts.push(stage.clone());
    }
    if let Some(phase) = p.phase {
        parts.push(format!("phase {phase}"));
    }
    if let (Some(done), Some(total)) = (p.done, p.total) {
        parts.push(format!("{done}/{total}"));
    }
    if let Some(percent) = p.percent {
        parts.push(format!("{percent}%"));
    }
    parts.join(" · ")
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
