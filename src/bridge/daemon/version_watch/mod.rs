//! The version watch: `serve` notices a Claude Code release nobody tested
//! running under it. Claude Code updates itself in the background, so
//! users run each new release within days of it; a release can change
//! the screens detection reads.
//!
//! Whenever a project's agent is (re)attached or says it started (its
//! `SessionStart` hook), the agent's own program is asked its release
//! (`probe`: the project's command line up to its program, then
//! `--version`). A release outside `agents::claude::TESTED_VERSIONS` gets
//! the offline self-check `clawmux doctor --agent` runs, once per release,
//! on a thread of its own and within [`SELF_CHECK_BUDGET`]; its outcome
//! goes to the event log (`agent_untested`), a line on stderr, and a card
//! to each chat using an affected project (`told`): what still works, and
//! what to do (pin a tested release, or send a recording). Each project
//! hears once per release; what was checked and told is kept in
//! `agent-versions.json`, so a restart does not repeat it.
//!
//! Only projects on this machine whose agent clawmux started and whose
//! command starts Claude Code are watched: the self-check runs the same
//! program here, which it cannot do for another host's.

mod probe;
mod told;

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot};

use crate::agentcheck::selftest;
use crate::agents::claude;
use crate::bridge::panes::agent_pane::PaneSpec;
use crate::hooks::{HookEvent, HookKind};
use crate::store::state::{ChatId, ChatTarget, OutboxEntry, OutboxOp, ProjectName};
use crate::store::{LogEvent, SharedState, StateFile};
use told::{Outcome, Untested};

/// Longest the self-check of one release may run: it takes about 20 s
/// (four steps of a few seconds each, Claude Code's start included); each
/// step gives up after 45 s on its own, so a release that draws nothing
/// would take minutes. Past this it is stopped (its tmux server killed)
/// and the chats told it did not finish.
pub const SELF_CHECK_BUDGET: Duration = Duration::from_secs(240);

/// Self-checks running at once at most: each runs a Claude Code (a few
/// hundred MB) for a while, and a new release comes every few days; a
/// release found while both run is checked when its agent next starts.
const MAX_RUNNING_CHECKS: usize = 2;

/// Reports from the probes and self-checks waiting for the daemon at
/// most; each probe or self-check sends one.
const REPORT_CAPACITY: usize = 16;

/// Releases whose self-check outcome is kept (the oldest is forgotten):
/// Claude Code ships a few a week, so this is months of them.
const MAX_KEPT_RELEASES: usize = 64;

/// (project, release) pairs remembered as told, oldest forgotten first.
const MAX_KEPT_TOLD: usize = 1024;

/// The file in the state directory that keeps what was checked and told.
const KEPT_FILE: &str = "agent-versions.json";

/// What comes back from the background.
#[derive(Debug)]
pub(super) enum Report {
    /// A project's agent said its release (or could not be asked).
    Probed {
        project: ProjectName,
        program: PathBuf,
        release: Result<String, String>,
    },
    /// A release's self-check is over.
    Checked { release: String, outcome: Outcome },
}

/// What survives a restart.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Kept {
    /// Each release's self-check outcome, by release.
    checked: BTreeMap<String, Outcome>,
    /// The releases checked, oldest first (which to forget first).
    #[serde(default)]
    order: VecDeque<String>,
    /// (project, release) pairs told, oldest first.
    #[serde(default)]
    told: VecDeque<(ProjectName, String)>,
}

/// A self-check under way.
struct Running {
    /// The projects waiting for its outcome.
    waiting: Vec<ProjectName>,
    /// Its tmux server, killed if the daemon goes first.
    socket: String,
    /// Dropped to stop it.
    _stop: oneshot::Sender<()>,
}

pub(super) struct VersionWatch {
    on: bool,
    /// The probe command line of each watched project.
    probes: HashMap<ProjectName, Vec<String>>,
    /// Projects whose probe is under way (one at a time each).
    probing: HashSet<ProjectName>,
    running: HashMap<String, Running>,
    kept: Kept,
    file: StateFile,
    /// The tmux socket the panes are on (for the recording command).
    socket: String,
    tx: mpsc::Sender<Report>,
    rx: mpsc::Receiver<Report>,
}

impl VersionWatch {
    /// An idle watch (nothing is probed until [`VersionWatch::start`]).
    pub fn new(state_dir: &Path, socket: &str) -> VersionWatch {
        let (tx, rx) = mpsc::channel(REPORT_CAPACITY);
        VersionWatch {
            on: false,
            probes: HashMap::new(),
            probing: HashSet::new(),
            running: HashMap::new(),
            kept: Kept::default(),
            file: StateFile::new(state_dir.join(KEPT_FILE)),
            socket: socket.to_owned(),
            tx,
            rx,
        }
    }

    /// Starts watching, with what an earlier run checked and told.
    pub fn start(&mut self) {
        self.on = true;
        match self.file.load::<Kept>() {
            Ok((kept, _)) => self.kept = kept,
            Err(e) => tracing::warn!("cannot read {}: {e}", self.file.path().display()),
        }
    }

    /// Project `name`'s pane is run as `spec` says: watched when it runs
    /// Claude Code on this machine, started by clawmux (a project made
    /// again with another agent is no longer watched).
    pub fn note(&mut self, name: &ProjectName, spec: &PaneSpec) {
        let local = spec.host.is_none() && spec.adopted.is_none();
        match claude::version_probe(&spec.agent).filter(|_| self.on && local) {
            Some(probe) => self.probes.insert(name.clone(), probe),
            None => self.probes.remove(name),
        };
    }

    /// Project `name`'s agent was attached (started, or found running).
    pub fn attached(&mut self, name: &ProjectName) {
        let Some(probe) = self.probes.get(name) else {
            return;
        };
        if !self.probing.insert(name.clone()) {
            return;
        }
        let (project, probe, tx) = (name.clone(), probe.clone(), self.tx.clone());
        let path = std::env::var_os("PATH");
        tokio::spawn(async move {
            let release = probe::release(&probe).await.map_err(|e| e.to_string());
            let word = probe.iter().rev().nth(1).cloned().unwrap_or_default();
            let program = probe::resolve(&word, path.as_deref()).unwrap_or(PathBuf::from(word));
            let _ = tx
                .send(Report::Probed {
                    project,
                    program,
                    release,
                })
                .await;
        });
    }

    /// A hook came: a `SessionStart` from a watched project's agent (its
    /// token is that project's, `token_of`) is an agent that started.
    pub fn on_hook(&mut self, hook: &HookEvent, token_of: impl Fn(&str) -> String) {
        if !matches!(hook.event, HookKind::SessionStart { .. }) {
            return;
        }
        let Some(token) = hook.token.as_deref() else {
            return;
        };
        let project = (self.probes.keys()).find(|p| token_of(p.as_str()) == token);
        if let Some(project) = project.cloned() {
            self.attached(&project);
        }
    }

    /// The next report (pending for ever when nothing is under way).
    pub async fn report(&mut self) -> Option<Report> {
        self.rx.recv().await
    }

    /// Acts on a report: starts a release's self-check, or tells the
    /// projects waiting for it.
    pub fn on_report(&mut self, report: Report, shared: &SharedState) {
        match report {
            Report::Probed {
                project,
                program,
                release,
            } => {
                self.probing.remove(&project);
                match release {
                    Ok(release) => self.probed(project, program, release, shared),
                    Err(e) => tracing::info!(project = %project, "agent release not read: {e}"),
                }
            }
            Report::Checked { release, outcome } => {
                let waiting = (self.running.remove(&release)).map_or(Vec::new(), |r| r.waiting);
                self.keep_checked(&release, outcome.clone());
                for project in waiting {
                    self.tell(&project, &release, &outcome, shared);
                }
            }
        }
    }

    fn probed(
        &mut self,
        project: ProjectName,
        program: PathBuf,
        release: String,
        shared: &SharedState,
    ) {
        let tested = claude::is_tested(&release);
        shared.log.event(&LogEvent::AgentVersion {
            project: project.clone(),
            agent: told::AGENT.to_owned(),
            version: release.clone(),
            tested,
        });
        if tested || self.was_told(&project, &release) {
            return;
        }
        if let Some(outcome) = self.kept.checked.get(&release).cloned() {
            return self.tell(&project, &release, &outcome, shared);
        }
        if let Some(running) = self.running.get_mut(&release) {
            if !running.waiting.contains(&project) {
                running.waiting.push(project);
            }
            return;
        }
        self.check(project, program, release);
    }

    /// Starts `release`'s self-check with `program`, on a thread of its own.
    fn check(&mut self, project: ProjectName, program: PathBuf, release: String) {
        if self.running.len() >= MAX_RUNNING_CHECKS {
            tracing::warn!(project = %project, "Claude Code {release} is untested; not checked now: {MAX_RUNNING_CHECKS} self-checks run already");
            return;
        }
        let socket = selftest::private_socket();
        let (stop, stopped) = oneshot::channel();
        let (tx, version, tmux) = (self.tx.clone(), release.clone(), socket.clone());
        let started = std::thread::Builder::new()
            .name("clawmux-selfcheck".into())
            .spawn(move || {
                let result =
                    selftest::run_bounded(&program, &version, &tmux, SELF_CHECK_BUDGET, stopped);
                let outcome = Outcome::of(result);
                let _ = tx.blocking_send(Report::Checked {
                    release: version,
                    outcome,
                });
            });
        if let Err(e) = started {
            tracing::warn!("cannot start the self-check of Claude Code {release}: {e}");
            return;
        }
        tracing::info!(project = %project, "Claude Code {release} is untested: self-checking it");
        let running = Running {
            waiting: vec![project],
            socket,
            _stop: stop,
        };
        self.running.insert(release, running);
    }

    fn was_told(&self, project: &ProjectName, release: &str) -> bool {
        (self.kept.told.iter()).any(|(p, r)| p == project && r == release)
    }

    fn keep_checked(&mut self, release: &str, outcome: Outcome) {
        if self
            .kept
            .checked
            .insert(release.to_owned(), outcome)
            .is_none()
        {
            self.kept.order.push_back(release.to_owned());
        }
        while self.kept.order.len() > MAX_KEPT_RELEASES {
            if let Some(old) = self.kept.order.pop_front() {
                self.kept.checked.remove(&old);
            }
        }
        self.save();
    }

    /// Tells the operator and `project`'s chats what `release`'s
    /// self-check found.
    fn tell(
        &mut self,
        project: &ProjectName,
        release: &str,
        outcome: &Outcome,
        shared: &SharedState,
    ) {
        let untested = Untested {
            project,
            version: release,
            socket: &self.socket,
            outcome,
        };
        shared.log.event(&untested.record_event());
        eprintln!("{}", untested.stderr_line());
        let card = untested.card();
        let now_ms = crate::store::clock::now_ms();
        shared.update(|s| {
            let chats: Vec<ChatId> = (s.chats.iter())
                .filter(|(_, p)| *p == project)
                .map(|(chat, _)| chat.clone())
                .collect();
            for chat in chats {
                s.queue(entry(target_of(chat), &card, now_ms));
            }
        });
        self.kept
            .told
            .push_back((project.clone(), release.to_owned()));
        while self.kept.told.len() > MAX_KEPT_TOLD {
            self.kept.told.pop_front();
        }
        self.save();
    }

    fn save(&self) {
        if let Err(e) = self.file.save(&self.kept) {
            tracing::warn!("cannot keep what the version watch told: {e}");
        }
    }
}

impl Drop for VersionWatch {
    /// A self-check still running when the daemon goes would leave its
    /// tmux server (and Claude Code in it) behind: killed here.
    fn drop(&mut self) {
        for running in self.running.values() {
            crate::tmux::kill_server(&running.socket);
        }
    }
}

/// Where a chat's cards go (`console` is the console).
fn target_of(chat: ChatId) -> ChatTarget {
    if chat == ChatId::console() {
        ChatTarget::Console
    } else {
        ChatTarget::Chat { id: chat }
    }
}

/// A new card for `target`.
fn entry(target: ChatTarget, card: &crate::message::Message, now_ms: u64) -> OutboxEntry {
    OutboxEntry {
        uuid: uuid::Uuid::new_v4().to_string(),
        op: OutboxOp::Send {
            target,
            handle: crate::store::state::CardHandle::random(),
            reply_to: None,
            image: None,
        },
        message: Some(card.clone()),
        created_ms: now_ms,
    }
}
