//! The daemon: the async shell around [`Core`]. One task takes chat events
//! (messages, clicks), project events (from each project's actor), hook
//! events, clock ticks and `clawmux run`s (see `runs`), hands each to the
//! core, and carries out what it returns: commands to project actors
//! (started on first use), answers to clicks, runs' outcomes. It never waits on a project, nor on a tmux server: what it
//! asks one (`/gsd:adopt`, `/gsd:sessions`) is asked by a task of its own,
//! whose answer comes back into the loop.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};
use tokio_util::task::TaskTracker;

use super::access::pairing::Pairing;
use super::config::Config;
use super::core::{Core, Effect, Input, PlanningRead, RemoteProject};
use super::project::{
    ProjectCmd, ProjectError, ProjectEvent, ProjectEventKind, ProjectHandle, ProjectSetup, Refused,
    Reply, TurnEnding,
};
use crate::bridge::access::policy::RateWindow;
use crate::bridge::channels::chat::{ChatEvent, ClickAnswer};
use crate::bridge::panes::agent_pane::{PaneError, PaneLocation};
use crate::bridge::panes::hosts::{AdoptTarget, Hosts, LocateError};
use crate::bridge::panes::workspace_file::{self, FetchedFile, FileError};
use crate::detect::Profiles;
use crate::hooks::token::HookKey;
use crate::hooks::{HookError, HookEvent, HookListener};
use crate::store::state::{ProjectName, RunId, Stage};
use crate::store::{LogEvent, SharedState};

pub mod one_shot;
pub mod run_socket;
mod runs;
mod version_watch;
pub use runs::{RunCall, RunReplies, RunReply};

/// Project events waiting for the daemon at most.
const PROJECT_EVENT_CAPACITY: usize = 256;
/// How often due progress updates go out.
const TICK: Duration = Duration::from_millis(500);
/// Longest wait for a tmux server to answer `/gsd:adopt` or
/// `/gsd:sessions` (a local server answers in milliseconds, a host over ssh
/// in a second).
const ASK_SERVER_BUDGET: Duration = Duration::from_secs(5);
/// Hook events waiting for the daemon at most.
const HOOK_CAPACITY: usize = 256;
/// `clawmux run`s waiting for the daemon at most (each caller waits for
/// its turn to be taken).
const RUN_CAPACITY: usize = 16;
/// Answers from tmux servers waiting for the daemon at most (each chat
/// request asks one server once).
const ANSWER_CAPACITY: usize = 16;

/// What a tmux server answered, for the loop to act on.
enum ServerAnswer {
    Located {
        target: AdoptTarget,
        name: ProjectName,
        by: String,
        reply: Reply,
        located: Result<PaneLocation, LocateError>,
    },
    Sessions {
        reply: Reply,
        markdown: String,
    },
    /// Remote projects' planning positions, for `/gsd:status`: each
    /// project that answered, with its position (`None`: no planning files).
    Planning {
        reply: Reply,
        read: Vec<PlanningRead>,
    },
    /// A `/gsd:file` read on the project's host.
    File {
        project: ProjectName,
        sender: String,
        reply: Reply,
        fetched: Result<FetchedFile, FileError>,
    },
}

/// Everything the daemon is started with.
pub struct DaemonSetup {
    pub config: Arc<Config>,
    pub shared: SharedState,
    pub profiles: Profiles,
    pub state_dir: PathBuf,
    /// The command that runs the simulated agent (`clawmux sim-agent`).
    pub sim_agent: String,
    /// The senders' rate window, shared with the chat channel's image
    /// fetcher.
    pub rates: RateWindow,
    /// Where the project actors run. An actor stops with its daemon; after
    /// stopping the daemon, closing this and waiting on it makes sure none
    /// is still at work (recreating a session the operator just removed).
    pub actors: TaskTracker,
}

pub struct Daemon {
    core: Core,
    setup: DaemonSetup,
    projects: HashMap<ProjectName, ProjectHandle>,
    /// Clicks waiting for the core's answer, by event id.
    clicks: HashMap<String, oneshot::Sender<ClickAnswer>>,
    /// Every tmux server's watch session, shared by its projects.
    hosts: Arc<Hosts>,
    events_tx: mpsc::Sender<ProjectEvent>,
    events_rx: mpsc::Receiver<ProjectEvent>,
    answers_tx: mpsc::Sender<ServerAnswer>,
    answers_rx: mpsc::Receiver<ServerAnswer>,
    /// The pairing files: the senders the operator paired (read before
    /// each chat input), the pending codes (written as the core asks).
    pairing: Pairing,
    /// The one project a `clawmux run` with no `serve` may touch: only its
    /// commands are resumed at start (`None`: every project's).
    only: Option<ProjectName>,
    /// Where `clawmux run`s come in (see [`Daemon::runs`]).
    runs_tx: mpsc::Sender<RunCall>,
    runs_rx: mpsc::Receiver<RunCall>,
    /// The `clawmux run`s waiting for their outcome.
    runs: HashMap<RunId, runs::Running>,
    /// Runs' answers waiting for their prompt to be seen.
    held: Vec<runs::HeldAnswer>,
    /// The projects' Claude Code releases (see [`Daemon::watch_versions`]).
    versions: version_watch::VersionWatch,
}

impl Daemon {
    pub fn new(setup: DaemonSetup) -> Daemon {
        let (events_tx, events_rx) = mpsc::channel(PROJECT_EVENT_CAPACITY);
        let (answers_tx, answers_rx) = mpsc::channel(ANSWER_CAPACITY);
        let (runs_tx, runs_rx) = mpsc::channel(RUN_CAPACITY);
        let hosts = Arc::new(Hosts::new(&setup.config));
        let mut core = Core::new(
            setup.config.clone(),
            setup.shared.clone(),
            hosts.clone(),
            HookKey::load_or_create(&setup.state_dir),
            Instant::now(),
        );
        core.share_rates(setup.rates.clone());
        core.set_time_zone(jiff::tz::TimeZone::system());
        let pairing = Pairing::new(&setup.state_dir);
        let versions =
            version_watch::VersionWatch::new(&setup.state_dir, &setup.config.tmux.socket);
        Daemon {
            core,
            setup,
            projects: HashMap::new(),
            clicks: HashMap::new(),
            hosts,
            events_tx,
            events_rx,
            answers_tx,
            answers_rx,
            pairing,
            only: None,
            runs_tx,
            runs_rx,
            runs: HashMap::new(),
            held: Vec::new(),
            versions,
        }
    }

    /// Watches the projects' Claude Code releases: one nobody tested gets
    /// the offline self-check in the background, and the operator and the
    /// project's chats are told what it found (`serve` does this).
    pub fn watch_versions(mut self) -> Daemon {
        self.versions.start();
        self
    }

    /// A daemon for `project` alone: it resumes no other project's
    /// commands (a `clawmux run` with no `serve`).
    pub fn only(mut self, project: ProjectName) -> Daemon {
        self.only = Some(project);
        self
    }

    /// Where `clawmux run`s are handed to this daemon.
    pub fn runs(&self) -> mpsc::Sender<RunCall> {
        self.runs_tx.clone()
    }

    /// Runs until the chat side closes.
    pub async fn run(
        mut self,
        mut chat: mpsc::Receiver<ChatEvent>,
        mut hooks: mpsc::Receiver<HookEvent>,
    ) {
        self.resume_projects().await;
        let mut tick = tokio::time::interval(TICK);
        let mut log_health = self.setup.shared.log.subscribe_health();
        loop {
            let run_deadline = self.next_run_deadline();
            let mut shown = Vec::new();
            let input = tokio::select! {
                event = chat.recv() => match event {
                    Some(ChatEvent::Message(m)) => Input::Message(m),
                    Some(ChatEvent::Click(mut c)) => {
                        if let Some(respond) = c.respond.take() {
                            self.clicks.insert(c.event_id.clone(), respond);
                        }
                        Input::Click(c)
                    }
                    None => return,
                },
                Some(mut event) = self.events_rx.recv() => {
                    if let ProjectEventKind::Attached { .. } = event.kind {
                        self.versions.attached(&event.project);
                    }
                    self.keep_long_output(&mut event);
                    shown = self.fold_event(&event, Instant::now());
                    Input::Project(event)
                }
                Some(call) = self.runs_rx.recv() => match self.start_run(call, Instant::now()) {
                    Some(input) => input,
                    None => continue,
                },
                Some(answer) = self.answers_rx.recv() => {
                    self.on_server_answer(answer);
                    continue;
                }
                Some(hook) = hooks.recv() => {
                    self.versions.on_hook(&hook, |p| self.core.hook_token(p));
                    Input::Hook(hook)
                }
                Some(report) = self.versions.report() => {
                    self.versions.on_report(report, &self.setup.shared);
                    continue;
                }
                _ = tick.tick() => {
                    self.tick_runs(Instant::now());
                    Input::Tick
                }
                // A look settles, or a held answer stops waiting, on time
                // (not on the next tick).
                () = until(run_deadline) => {
                    self.tick_runs(Instant::now());
                    for answer in self.released_answers(None, Instant::now()) {
                        self.handle(answer).await;
                    }
                    continue;
                }
                Ok(()) = log_health.changed() => {
                    Input::LogHealth(log_health.borrow_and_update().clone())
                }
            };
            if matches!(input, Input::Message(_) | Input::Click(_)) {
                // Paired by `clawmux pairing approve`, another process.
                let paired = self.pairing.allowed().unwrap_or_else(|e| {
                    tracing::warn!("cannot read the paired senders: {e}");
                    Vec::new()
                });
                self.core.set_paired(paired);
            }
            // Answers held for their prompt go once its screen was read (the
            // core knows the prompt after this input), or once they waited
            // long enough.
            let read = match &input {
                Input::Project(event) => runs::screen_read(event),
                _ => None,
            };
            self.handle(input).await;
            // After the event that recorded them.
            for prompt in shown {
                self.handle(prompt).await;
            }
            for answer in self.released_answers(read.as_ref(), Instant::now()) {
                self.handle(answer).await;
            }
        }
    }

    /// A finished command's long output, for a chat, is written where the
    /// outbox sends files from before the core sees it: the core names the
    /// file in the result's message, touching no disk itself.
    fn keep_long_output(&self, event: &mut ProjectEvent) {
        if let ProjectEventKind::Completed {
            output,
            ending: TurnEnding::Finished,
            kept,
            ..
        } = &mut event.kind
            && let Some(job) = &event.job
            && self.core.answers_in_a_chat(&job.id)
        {
            let threshold = self.setup.config.feishu.long_result_bytes;
            *kept = crate::bridge::outbox_files::keep_long_output(
                &self.setup.state_dir,
                threshold,
                output,
            );
        }
    }

    async fn handle(&mut self, input: Input) {
        let effects = self
            .core
            .handle(Instant::now(), crate::store::clock::now_ms(), input);
        self.carry_out(effects).await;
    }

    async fn carry_out(&mut self, effects: Vec<Effect>) {
        for effect in effects {
            match effect {
                Effect::Project { project, cmd } => {
                    let sent = match self.project(&project) {
                        Ok(handle) => handle.send(cmd),
                        Err(error) => Err(Box::new(Refused { cmd, error })),
                    };
                    if let Err(refused) = sent {
                        self.run_refused(&refused.cmd, &refused.error);
                        self.core
                            .undeliverable(&project, refused.cmd, &refused.error);
                    }
                }
                Effect::Run { id, start } => self.run_started(&id, start, Instant::now()),
                Effect::DrawScreen(picture) => picture.queue(self.setup.state_dir.clone()),
                Effect::RemoveFile(path) => {
                    if let Err(e) = std::fs::remove_file(&path) {
                        tracing::warn!(path = %path.display(), "cannot remove an unsent file: {e}");
                    }
                }
                Effect::SavePairingCode { code, pending } => {
                    // Without it the code the chat was given is unknown to
                    // `clawmux pairing approve`; the sender asks again.
                    if let Err(e) = self.pairing.save_pending(&code, pending) {
                        tracing::warn!("cannot keep pairing code {code}: {e}");
                    }
                }
                Effect::Respond { event_id, answer } => {
                    if let Some(respond) = self.clicks.remove(&event_id) {
                        let _ = respond.send(answer);
                    }
                }
                Effect::Adopt {
                    target,
                    name,
                    by,
                    reply,
                } => {
                    let (hosts, answers) = (self.hosts.clone(), self.answers_tx.clone());
                    tokio::spawn(async move {
                        let located = locate(&hosts, &target).await;
                        let answer = ServerAnswer::Located {
                            target,
                            name,
                            by,
                            reply,
                            located,
                        };
                        // The daemon is gone when this fails: nobody asks.
                        let _ = answers.send(answer).await;
                    });
                }
                Effect::Forget { project } => {
                    self.projects.remove(&project);
                }
                Effect::ListSessions { reply } => {
                    let (hosts, answers) = (self.hosts.clone(), self.answers_tx.clone());
                    tokio::spawn(async move {
                        let ask = hosts.sessions_markdown();
                        let markdown = tokio::time::timeout(ASK_SERVER_BUDGET, ask)
                            .await
                            .unwrap_or_else(|_| "A tmux server did not answer in time.".into());
                        let _ = answers
                            .send(ServerAnswer::Sessions { reply, markdown })
                            .await;
                    });
                }
                Effect::FetchFile {
                    project,
                    host,
                    workspace,
                    asked,
                    sender,
                    reply,
                } => {
                    let (hosts, answers) = (self.hosts.clone(), self.answers_tx.clone());
                    let state_dir = self.setup.state_dir.clone();
                    tokio::spawn(async move {
                        let workspace = PathBuf::from(workspace);
                        let fetched = workspace_file::fetch(
                            &hosts,
                            host.as_deref(),
                            workspace,
                            &asked,
                            state_dir,
                        )
                        .await;
                        let answer = ServerAnswer::File {
                            project,
                            sender,
                            reply,
                            fetched,
                        };
                        let _ = answers.send(answer).await;
                    });
                }
                Effect::ReadPlanning { reply, projects } => {
                    let (hosts, answers) = (self.hosts.clone(), self.answers_tx.clone());
                    tokio::spawn(async move {
                        let reads = (projects.into_iter()).map(|p| read_planning(&hosts, p));
                        let read = futures_util::future::join_all(reads).await;
                        let read = read.into_iter().flatten().collect();
                        let _ = answers.send(ServerAnswer::Planning { reply, read }).await;
                    });
                }
            }
        }
    }

    /// Acts on what a tmux server answered.
    fn on_server_answer(&mut self, answer: ServerAnswer) {
        match answer {
            ServerAnswer::Located {
                target,
                name,
                by,
                reply,
                located,
            } => {
                if self
                    .core
                    .adopt_located(&target, &name, &by, &reply, located)
                    && let Err(e) = self.project(&name)
                {
                    self.core.adopt_failed(&name, &reply, &e.to_string());
                }
            }
            ServerAnswer::Sessions { reply, markdown } => {
                self.core.info(&reply, "Sessions", &markdown)
            }
            ServerAnswer::Planning { reply, read } => self.core.status_with_planning(&reply, read),
            ServerAnswer::File {
                project,
                sender,
                reply,
                fetched,
            } => (self.core).file_fetched(&project, &sender, &reply, fetched),
        }
    }

    /// Projects with unfinished commands or pending approvals get their
    /// actors back at start-up, so buttons pressed before the restart still
    /// work; each command is resumed (typed if it never was, resolved from
    /// the screen if its typing was cut short, followed if it started).
    /// Agent windows whose sessions were killed meanwhile are closed.
    async fn resume_projects(&mut self) {
        self.hosts.resume().await;
        let (mut projects, mut jobs) = self.core.to_resume();
        if let Some(only) = &self.only {
            projects.retain(|p| p == only);
            jobs.retain(|j| j.project == *only);
        }
        for p in &projects {
            if let Err(e) = self.project(p) {
                self.setup.shared.log.event(&LogEvent::Failed {
                    project: p.clone(),
                    job: None,
                    error: e.to_string(),
                });
            }
        }
        for job in jobs {
            self.setup.shared.log.event(&LogEvent::Resumed {
                project: job.project.clone(),
                job: job.id.clone(),
                started: job.stage.is_started(),
                typing: matches!(job.stage, Stage::Typing { .. }),
            });
            let project = job.project.clone();
            let resume = Effect::Project {
                project,
                cmd: ProjectCmd::Resume(job),
            };
            Box::pin(self.carry_out(vec![resume])).await;
        }
    }

    /// The actor of `name`, started on first use.
    fn project(&mut self, name: &ProjectName) -> Result<ProjectHandle, ProjectError> {
        if let Some(h) = self.projects.get(name) {
            return Ok(h.clone());
        }
        let record = self.setup.shared.read(|s| s.projects.get(name).cloned());
        let host = match &record {
            Some(r) => r.host.clone(),
            None => self
                .setup
                .config
                .host_for(name.as_str())
                .map(str::to_string),
        };
        let unknown = |e| ProjectError::Pane(PaneError::UnknownHost(e));
        let watch = self.hosts.watch(host.as_deref()).map_err(unknown)?;
        let workspace = match &record {
            Some(r) => PathBuf::from(&r.workspace),
            None => self
                .hosts
                .workspace_root(host.as_deref())
                .map_err(unknown)?
                .join(name.as_str()),
        };
        let mut setup = ProjectSetup::with_agent(
            &self.setup.config,
            &self.setup.profiles,
            &self.setup.sim_agent,
            name,
            record.as_ref().and_then(|r| r.agent.as_deref()),
            workspace,
            watch,
            Some(self.setup.shared.clone()),
        )
        .map_err(|e| ProjectError::Profile(e.into()))?;
        match record.as_ref().and_then(|r| r.adopted.as_ref()) {
            Some(adopted) => crate::bridge::panes::hosts::bind_adopted(&mut setup.spec, adopted),
            None => setup.spec.hook_token = Some(self.core.hook_token(name.as_str())),
        }
        self.versions.note(name, &setup.spec);
        let handle = ProjectHandle::spawn(setup, self.events_tx.clone(), &self.setup.actors);
        self.projects.insert(name.clone(), handle.clone());
        Ok(handle)
    }
}

/// Sleeps until `deadline`; forever without one.
async fn until(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

/// The agents' hook events (`clawmux hook`), from the socket in
/// `state_dir`.
pub fn listen_for_hooks(state_dir: &Path) -> Result<mpsc::Receiver<HookEvent>, HookError> {
    let mut listener = HookListener::bind(state_dir)?;
    let (tx, rx) = mpsc::channel(HOOK_CAPACITY);
    tokio::spawn(async move {
        while let Some(hook) = listener.next().await {
            if tx.send(hook).await.is_err() {
                return;
            }
        }
    });
    Ok(rx)
}

/// Where the pane `/gsd:adopt` names is, asked of its tmux server within
/// [`ASK_SERVER_BUDGET`].
async fn locate(hosts: &Hosts, target: &AdoptTarget) -> Result<PaneLocation, LocateError> {
    let watch = hosts.watch(target.host.as_deref())?;
    let spec = watch.server_spec();
    let pane = target.tmux_target();
    let ask = spec.locate(&pane);
    match tokio::time::timeout(ASK_SERVER_BUDGET, ask).await {
        Ok(found) => Ok(found?),
        Err(_) => Err(LocateError::NoAnswer),
    }
}

/// What `project`'s GSD planning files on `host` say, in one line (`None`:
/// it has none), asked within [`ASK_SERVER_BUDGET`]; nothing when the host
/// did not answer (`/gsd:status` then shows what was read last).
async fn read_planning(hosts: &Hosts, remote: RemoteProject) -> Option<PlanningRead> {
    let RemoteProject {
        project,
        host,
        workspace,
    } = remote;
    use crate::gsd::host::{self, HostFilesError};
    let mut spec = hosts.watch(Some(&host)).ok()?.server_spec();
    spec.workspace = PathBuf::from(workspace);
    let summary =
        match tokio::time::timeout(ASK_SERVER_BUDGET, host::planning(&spec.project_host())).await {
            Ok(Ok(p)) => p.map(|p| p.summary()).filter(|s| !s.is_empty()),
            Ok(Err(HostFilesError::Planning(e))) => Some(format!("cannot read: {e}")),
            Ok(Err(_)) | Err(_) => return None,
        };
    Some(PlanningRead { project, summary })
}
