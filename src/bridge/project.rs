//! One project's actor: owns its agent pane (tmux session, control client,
//! pane text and detector) and runs chat commands one at a time, queueing the
//! rest. It reports what happens as [`ProjectEvent`]s; it never talks to the
//! chat itself.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};
use tokio::time::sleep_until;
use tokio_util::task::{AbortOnDropHandle, TaskTracker};

use super::agent_pane::{AgentPane, PaneSpec};
use super::config::Config;
use super::hosts;
use super::names::session_name;
use super::texts;
use super::transcript::Transcript;
use super::watch_session::WatchSession;
use crate::control::{Notification, PaneId};
use crate::detect::{
    Detection, DetectionKind, DetectorConfig, Millis, PaneWatcher, Profile, ProgressFields,
};
use crate::detect::{ProfileError, Profiles};
use crate::store::state::{ApprovalOption, ChatTarget};
use crate::tmux::{ClientEvent, EVENT_CAPACITY, TmuxError};
use std::path::PathBuf;

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

/// A chat command for the agent.
#[derive(Debug, Clone)]
pub struct Job {
    pub id: String,
    pub text: String,
    pub target: ChatTarget,
    /// The chat message it came from (cards reply to it).
    pub message_id: Option<String>,
    pub timeout: Duration,
    /// Already retried once after the session was lost.
    pub retried: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ProjectEventKind {
    /// Waiting behind `position` other commands (1 = next).
    Queued {
        position: usize,
    },
    /// Typed into the pane.
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
    },
    TimedOut {
        screen: String,
        seconds: u64,
    },
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
        error: String,
    },
    /// The agent pane this project uses (for hook routing).
    Attached {
        pane: String,
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

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ApprovalSeen {
    pub id: String,
    pub session: String,
    pub pane: String,
    pub kind: String,
    pub question: String,
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
#[derive(Debug, Clone, PartialEq)]
pub struct ProjectStatus {
    pub attached: bool,
    pub running: Option<String>,
    pub busy: bool,
    pub awaiting_approval: Option<String>,
    pub last_progress: Option<String>,
    pub queued: usize,
}

pub enum ProjectCmd {
    Submit(Job),
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
        done: oneshot::Sender<Result<(), String>>,
    },
    /// Free text answering a question (a reply to its card).
    Type {
        text: String,
        done: oneshot::Sender<Result<(), String>>,
    },
    Cancel {
        done: oneshot::Sender<Result<(), String>>,
    },
    /// Follow a command typed before a restart to its result.
    Adopt(Job),
    /// Claude Code's `Stop` hook fired in this pane: the turn is over.
    HookStop,
    /// A permission hook fired: a prompt is (about to be) on screen.
    HookApproval,
    Status(oneshot::Sender<ProjectStatus>),
}

/// Everything the actor needs that does not change.
pub struct ProjectSetup {
    pub name: String,
    pub spec: PaneSpec,
    /// The server's watch session, shared by every project on it.
    pub watch: Arc<WatchSession>,
    pub profile: Arc<Profile>,
    pub detector: DetectorConfig,
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
        })
    }
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

    pub async fn send(&self, cmd: ProjectCmd) -> Result<(), String> {
        self.tx
            .send(cmd)
            .await
            .map_err(|_| "the project stopped".to_string())
    }

    /// Sends a command that answers through a oneshot and waits for it.
    pub async fn ask<T>(
        &self,
        make: impl FnOnce(oneshot::Sender<T>) -> ProjectCmd,
    ) -> Result<T, String> {
        let (done, answer) = oneshot::channel();
        self.send(make(done)).await?;
        answer.await.map_err(|_| "the project stopped".to_string())
    }
}

struct Running {
    job: Job,
    output: Transcript,
    started: Instant,
    deadline: Instant,
    errors: Vec<String>,
    /// Internal turn (the recovery prompt): no cards, then `job` is retried.
    recovery: bool,
}

struct Actor {
    setup: ProjectSetup,
    events: mpsc::Sender<ProjectEvent>,
    pane: Option<(AgentPane, PaneWatcher)>,
    running: Option<Running>,
    queue: VecDeque<Job>,
    approval: Option<ApprovalSeen>,
    /// The last lines the pane finished (see [`Transcript::after`]).
    recent: VecDeque<String>,
    last_progress: Option<String>,
    busy: bool,
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
            approval: None,
            recent: VecDeque::new(),
            last_progress: None,
            busy: false,
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
            tokio::select! {
                cmd = rx.recv() => match cmd {
                    Some(cmd) => self.on_command(cmd).await,
                    None => return,
                },
                event = next_event(&mut self.pane) => self.on_client_event(event).await,
                _ = sleep_opt(detect_at) => self.tick().await,
                _ = sleep_opt(timeout_at) => self.on_timeout().await,
            }
            self.drain_queue().await;
        }
    }

    /// Makes sure a session exists and is attached; creates it when
    /// `create`. True when a session was created.
    async fn attach(&mut self, create: bool) -> Result<bool, String> {
        if self.pane.is_some() {
            return Ok(false);
        }
        let spec = &self.setup.spec;
        let (agent, created) =
            (self.setup.watch.attach(spec, create).await).map_err(|e| e.to_string())?;
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
        let pane = agent.pane.to_string();
        self.pane = Some((agent, watcher));
        self.emit(None, ProjectEventKind::Attached { pane }).await;
        if created {
            self.wait_until_ready().await;
        }
        Ok(created)
    }

    /// A new agent needs a moment before it reads input: wait until it
    /// shows its idle prompt (at most [`AGENT_START_WAIT`]), so the first
    /// command is not typed into a program still starting.
    async fn wait_until_ready(&mut self) {
        let deadline = Instant::now() + AGENT_START_WAIT;
        if let Some((_, watcher)) = &mut self.pane {
            watcher.detector_mut().begin_turn();
        }
        let completed = |d: &Detection| matches!(d.kind, DetectionKind::Completed);
        loop {
            let detect_at = self
                .pane
                .as_ref()
                .and_then(|(_, w)| w.next_deadline())
                .map(|m| self.instant(m));
            let now = self.now();
            let mut ready = false;
            tokio::select! {
                event = next_event(&mut self.pane) => match (event, &mut self.pane) {
                    (Some(ClientEvent::Output { pane, data }), Some((agent, watcher))) if agent.pane == pane => {
                        watcher.feed(now, &data, &mut |d| ready |= completed(&d));
                    }
                    (Some(ClientEvent::Ended(_)) | None, _) => return,
                    _ => {}
                },
                _ = sleep_opt(detect_at) => {
                    if let Some((_, watcher)) = &mut self.pane {
                        watcher.tick(now, &mut |d| ready |= completed(&d));
                    }
                }
                _ = sleep_until(deadline.into()) => return,
            }
            if ready {
                return;
            }
        }
    }

    async fn on_command(&mut self, cmd: ProjectCmd) {
        match cmd {
            ProjectCmd::Submit(job) => {
                if self.running.is_some() {
                    if self.queue.len() >= MAX_QUEUED {
                        let error = format!(
                            "{} commands are already waiting; try again later",
                            MAX_QUEUED
                        );
                        self.emit(Some(&job), ProjectEventKind::Failed { error })
                            .await;
                        return;
                    }
                    self.queue.push_back(job.clone());
                    let position = self.queue.len();
                    self.emit(Some(&job), ProjectEventKind::Queued { position })
                        .await;
                } else {
                    self.start(job).await;
                }
            }
            ProjectCmd::Answer {
                approval_id,
                question,
                key,
                follow,
                done,
            } => {
                let result = self.answer(&approval_id, &question, &key).await;
                if result.is_ok()
                    && let Some(job) = follow
                {
                    self.adopt(job);
                }
                let _ = done.send(result);
            }
            ProjectCmd::Adopt(job) => {
                if self.pane.is_none()
                    && let Err(error) = self.attach(false).await
                {
                    let error =
                        format!("the command was running when clawmux restarted, and {error}");
                    return self
                        .emit(Some(&job), ProjectEventKind::Failed { error })
                        .await;
                }
                self.adopt(job);
            }
            ProjectCmd::Type { text, done } => {
                let result = match &self.pane {
                    Some((p, _)) => p.type_line(&text).await.map_err(|e| e.to_string()),
                    None => Err("the agent pane is not attached".into()),
                };
                let _ = done.send(result);
            }
            ProjectCmd::Cancel { done } => {
                let result = match &self.pane {
                    Some((p, _)) => p.escape().await.map_err(|e| e.to_string()),
                    None => Err("nothing is running".into()),
                };
                let _ = done.send(result);
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
            ProjectCmd::Status(reply) => {
                let _ = reply.send(ProjectStatus {
                    attached: self.pane.is_some(),
                    running: self.running.as_ref().map(|r| r.job.text.clone()),
                    busy: self.busy,
                    awaiting_approval: self.approval.as_ref().map(|a| a.question.clone()),
                    last_progress: self.last_progress.clone(),
                    queued: self.queue.len(),
                });
            }
        }
    }

    /// Makes `job` the running command without typing it (it was typed
    /// before a restart); ignored while another command runs.
    fn adopt(&mut self, job: Job) {
        let now_ms = self.now();
        let (true, Some((_, watcher))) = (self.running.is_none(), &mut self.pane) else {
            return;
        };
        watcher.detector_mut().begin_turn();
        // Judge the screen soon even if the agent prints nothing more: the
        // turn may have ended, or be waiting at a prompt, since clawmux went
        // down. (Not by feeding nothing: what fell due would be dropped.)
        watcher.detector_mut().judge_soon(now_ms);
        let now = Instant::now();
        let deadline = now + job.timeout;
        self.running = Some(Running {
            job,
            output: Transcript::after(&self.recent),
            started: now,
            deadline,
            errors: Vec::new(),
            recovery: false,
        });
    }

    /// Types the answer when `approval_id` is still the prompt on screen.
    async fn answer(&mut self, approval_id: &str, question: &str, key: &str) -> Result<(), String> {
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
            return Err("another prompt is on screen now; answer that one".into());
        }
        let Some((pane, watcher)) = &mut self.pane else {
            return Err("the agent pane is not attached".into());
        };
        pane.answer(key).await.map_err(|e| e.to_string())?;
        // The prompt stays on screen until the agent redraws; a watcher that
        // has not reported it yet (after a restart or a new client) must not
        // take it for a new one.
        watcher.detector_mut().answered(question);
        self.approval = None;
        Ok(())
    }

    async fn start(&mut self, job: Job) {
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
                ProjectEventKind::SessionCreated { recovered: false },
            )
            .await;
        }
        if let Err((job, reason)) = self.type_job(job, false).await {
            self.lost(job, reason).await;
        }
    }

    /// Starts queued commands while nothing runs.
    async fn drain_queue(&mut self) {
        while self.running.is_none() {
            let Some(job) = self.queue.pop_front() else {
                return;
            };
            self.start(job).await;
        }
    }

    /// Types the job (or, for `recovery`, the context-recovery prompt) and
    /// makes it the running command. On a typing failure the pane is
    /// dropped and the job handed back.
    async fn type_job(&mut self, job: Job, recovery: bool) -> Result<(), (Job, String)> {
        let Some((pane, watcher)) = &mut self.pane else {
            return Err((job, "the agent pane is not attached".into()));
        };
        let text = if recovery {
            {
                let skip = self.recent.len().saturating_sub(RECOVERY_TAIL_LINES);
                let tail: Vec<&str> = self.recent.iter().skip(skip).map(String::as_str).collect();
                let workspace = self.setup.spec.workspace.display().to_string();
                texts::recovery_prompt(&self.setup.name, &workspace, &job.text, &tail.join(" / "))
            }
        } else {
            job.text.clone()
        };
        watcher.detector_mut().typed(&text);
        if let Err(e) = pane.type_line(&text).await {
            self.pane = None;
            return Err((job, e.to_string()));
        }
        let now = Instant::now();
        self.approval = None;
        let started = (!recovery).then(|| job.clone());
        self.running = Some(Running {
            deadline: now + job.timeout,
            job,
            output: Transcript::after(&self.recent),
            started: now,
            errors: Vec::new(),
            recovery,
        });
        if let Some(job) = started {
            self.emit(Some(&job), ProjectEventKind::Started).await;
        }
        Ok(())
    }

    async fn on_client_event(&mut self, event: Option<ClientEvent>) {
        let now = self.now();
        let mut detections = Vec::new();
        match event {
            Some(ClientEvent::Output { pane, data }) => {
                if self.is_agent_pane(pane) {
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
        let now = self.now();
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
        match d.kind {
            DetectionKind::Busy => self.busy = true,
            DetectionKind::Completed => {
                self.busy = false;
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
                    kind: approval.to_string(),
                    question,
                    options: options
                        .into_iter()
                        .map(|o| ApprovalOption {
                            key: o.key,
                            label: o.label,
                        })
                        .collect(),
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
            ProjectEventKind::TimedOut { screen, seconds },
        )
        .await;
    }

    /// The session went away under a command: recreate it, restore the
    /// agent's context, and retry the command once.
    async fn lost(&mut self, job: Job, reason: String) {
        self.approval = None;
        self.busy = false;
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
            let error = format!("the session was lost again ({reason}); not retrying");
            return self
                .emit(Some(&job), ProjectEventKind::Failed { error })
                .await;
        }
        let job = Job {
            retried: true,
            ..job
        };
        if let Err(error) = self.attach(true).await {
            return self
                .emit(Some(&job), ProjectEventKind::Failed { error })
                .await;
        }
        self.emit(
            Some(&job),
            ProjectEventKind::SessionCreated { recovered: true },
        )
        .await;
        if let Err((job, error)) = self.type_job(job, true).await {
            self.emit(Some(&job), ProjectEventKind::Failed { error })
                .await;
        }
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
