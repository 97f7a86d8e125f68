//! The daemon's side of `clawmux run`: each run's call is given an id and
//! handed to the core as [`Input::Run`]; the project events the core is
//! handed are folded into the runs' outcomes on the way ([`RunFold`]), and
//! each outcome goes back to its caller once.
//!
//! An answer for a project with no prompt recorded waits for one: a prompt
//! no one was watching (the agent started by hand, say) is recorded once
//! the project's actor, started for the answer, reads it off the screen.
//! The answer is handed to the core then, when the screen shows no prompt,
//! or [`PROMPT_WAIT`] after the call.

use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};

use super::Daemon;
use crate::bridge::core::Input;
use crate::bridge::project::{ProjectCmd, ProjectError, ProjectEvent, ProjectEventKind};
use crate::bridge::runs::fold::Folded;
use crate::bridge::runs::{Request, RunAsk, RunFold, RunRequest, RunResult, RunStart};
use crate::store::LogEvent;
use crate::store::state::{ChatTarget, ProjectName, RunId};

/// How long an answer waits for its prompt to be read off a screen that
/// was not being watched (the detector settles in milliseconds).
pub(super) const PROMPT_WAIT: Duration = Duration::from_secs(2);
/// Runs the daemon follows at most; one more is refused until one ends
/// (a caller gone is forgotten at the next tick).
const MAX_RUNS: usize = 64;

/// A `clawmux run` for the daemon.
pub struct RunCall {
    pub ask: RunAsk,
    /// The command's progress, while it runs (dropped when the caller is
    /// behind: they are news, the outcome has them all).
    pub progress: mpsc::Sender<String>,
    /// The outcome, once.
    pub done: oneshot::Sender<RunResult>,
}

/// Progress lines waiting for a run's caller at most.
const PROGRESS_BACKLOG: usize = 32;

impl RunCall {
    /// A call for `ask`, and where its caller hears back.
    pub fn new(ask: RunAsk) -> (RunCall, RunReplies) {
        let (progress, progressed) = mpsc::channel(PROGRESS_BACKLOG);
        let (done, finished) = oneshot::channel();
        let call = RunCall {
            ask,
            progress,
            done,
        };
        (
            call,
            RunReplies {
                progress: progressed,
                done: finished,
            },
        )
    }
}

/// What a run's caller hears: progress, then the result.
pub struct RunReplies {
    progress: mpsc::Receiver<String>,
    done: oneshot::Receiver<RunResult>,
}

/// One thing a run's caller hears.
#[expect(clippy::large_enum_variant, reason = "a few per run, moved once")]
pub enum RunReply {
    Progress(String),
    Done(RunResult),
}

impl RunReplies {
    /// The next reply; `None` once the daemon is gone without a result.
    /// Not to be called again after [`RunReply::Done`].
    pub async fn next(&mut self) -> Option<RunReply> {
        tokio::select! {
            Some(summary) = self.progress.recv() => Some(RunReply::Progress(summary)),
            result = &mut self.done => result.ok().map(RunReply::Done),
        }
    }
}

/// The project whose screen `event` says was read for a prompt: it shows
/// one, or none is there.
pub(super) fn screen_read(event: &ProjectEvent) -> Option<ProjectName> {
    let read = matches!(
        event.kind,
        ProjectEventKind::Approval(_) | ProjectEventKind::ScreenAtStart { dialog: None }
    );
    read.then(|| event.project.clone())
}

/// A run the daemon follows.
pub(super) struct Running {
    fold: RunFold,
    progress: mpsc::Sender<String>,
    done: oneshot::Sender<RunResult>,
}

/// An answer waiting for its prompt to be read off the screen.
pub(super) struct HeldAnswer {
    request: RunRequest,
    until: Instant,
}

impl Daemon {
    /// A run's call came: the core's input for it, or none while its
    /// answer waits for the prompt.
    pub(super) fn start_run(&mut self, call: RunCall, now: Instant) -> Option<Input> {
        let RunCall {
            ask,
            progress,
            done,
        } = call;
        if self.runs.len() >= MAX_RUNS {
            let busy = format!("{MAX_RUNS} runs are waiting for their outcome; try again later");
            let _ = done.send(Err(busy));
            return None;
        }
        let id = RunId::random();
        let request = RunRequest {
            id: id.clone(),
            project: ask.project.clone(),
            request: ask.request.clone(),
            agent: ask.agent.clone(),
            create: ask.create,
        };
        let fold = RunFold::new(id.clone(), &ask);
        (self.runs).insert(
            id,
            Running {
                fold,
                progress,
                done,
            },
        );
        let recorded = |project: &ProjectName| {
            let shared = &self.setup.shared;
            shared.read(|s| s.approvals.values().any(|a| a.project == *project))
        };
        if let Request::Answer { .. } = &ask.request
            && !recorded(&ask.project)
        {
            // Its actor, started now if it was not, reads its screen.
            if let Err(error) = self.project(&ask.project) {
                self.end_run(&request.id, Err(error.to_string()));
                return None;
            }
            let until = now + PROMPT_WAIT;
            self.held.push(HeldAnswer { request, until });
            return None;
        }
        Some(Input::Run(request))
    }

    /// The core took run `id` as `start`.
    pub(super) fn run_started(&mut self, id: &RunId, start: RunStart, now: Instant) {
        let Some(running) = self.runs.get_mut(id) else {
            return;
        };
        if let Some(result) = running.fold.started(start, now) {
            self.end_run(id, result);
        }
    }

    /// Every run hears of `event` before the core does. The prompts whose
    /// outcomes went to their callers, for the core once it has the event
    /// ([`Input::PromptShown`]).
    pub(super) fn fold_event(&mut self, event: &ProjectEvent, now: Instant) -> Vec<Input> {
        let mut ended = Vec::new();
        for (id, running) in &mut self.runs {
            match running.fold.see(event, now) {
                Folded::Nothing => {}
                // A caller that is behind misses a step, not the outcome.
                Folded::Progress(summary) => drop(running.progress.try_send(summary)),
                Folded::Done(result) => ended.push((id.clone(), result)),
            }
        }
        let shown = (ended.iter())
            .filter_map(|(_, result)| result.as_ref().ok()?.approval.as_ref())
            .map(|a| Input::PromptShown(a.id.clone()))
            .collect();
        for (id, result) in ended {
            self.end_run(&id, result);
        }
        shown
    }

    /// `cmd` could not reach its project: the run that asked for it ends.
    pub(super) fn run_refused(&mut self, cmd: &ProjectCmd, error: &ProjectError) {
        let target = match cmd {
            ProjectCmd::Submit(job) | ProjectCmd::Resume(job) => &job.target,
            ProjectCmd::Answer { reply, .. }
            | ProjectCmd::Type { reply, .. }
            | ProjectCmd::Cancel { reply, .. }
            | ProjectCmd::Keys { reply, .. }
            | ProjectCmd::SetMode { reply, .. }
            | ProjectCmd::Screen { reply } => &reply.target,
            ProjectCmd::HookStop { .. }
            | ProjectCmd::HookFailure(_)
            | ProjectCmd::HookApproval
            | ProjectCmd::HookPermission(_)
            | ProjectCmd::HookTask(_) => return,
        };
        let ChatTarget::Run { id } = target else {
            return;
        };
        if let Some(running) = self.runs.get_mut(id) {
            let result = running.fold.failed(error);
            self.end_run(&id.clone(), result);
        }
    }

    /// The answers for `read` (a project whose screen showed its prompt,
    /// or that none is there), or whose wait is over at `now`, for the core.
    pub(super) fn released_answers(
        &mut self,
        read: Option<&ProjectName>,
        now: Instant,
    ) -> Vec<Input> {
        let (due, held): (Vec<_>, Vec<_>) = std::mem::take(&mut self.held)
            .into_iter()
            .partition(|h| read == Some(&h.request.project) || now >= h.until);
        self.held = held;
        due.into_iter().map(|h| Input::Run(h.request)).collect()
    }

    /// When the next look's or held answer's wait is over.
    pub(super) fn next_run_deadline(&self) -> Option<Instant> {
        let looks = self.runs.values().filter_map(|r| r.fold.deadline());
        looks.chain(self.held.iter().map(|h| h.until)).min()
    }

    /// Time passed: looks that waited long enough end, and runs whose
    /// caller went away (Ctrl-C) are forgotten (their commands go on).
    pub(super) fn tick_runs(&mut self, now: Instant) {
        self.runs.retain(|_, r| !r.done.is_closed());
        let runs = &self.runs;
        // A caller gone before its answer was typed: it is not typed.
        self.held.retain(|h| runs.contains_key(&h.request.id));
        let ended: Vec<(RunId, RunResult)> = (self.runs.iter_mut())
            .filter_map(|(id, r)| Some((id.clone(), r.fold.tick(now)?)))
            .collect();
        for (id, result) in ended {
            self.end_run(&id, result);
        }
    }

    /// Run `id` is over: its outcome is logged and goes to its caller.
    fn end_run(&mut self, id: &RunId, result: RunResult) {
        let Some(running) = self.runs.remove(id) else {
            return;
        };
        if let Ok(outcome) = &result {
            self.setup.shared.log.event(&LogEvent::Run {
                project: outcome.project.clone(),
                status: serde_json::to_value(outcome.status).unwrap_or_default(),
                seconds: outcome.seconds,
                error: outcome.error.clone(),
            });
        }
        // A look at (or an answer for) a project that is none started an
        // actor for it, which has nothing to do now.
        let project = running.fold.project();
        if !(self.setup.shared).read(|s| s.projects.contains_key(project)) {
            self.projects.remove(project);
        }
        // A caller gone (Ctrl-C) misses nothing it waits for.
        let _ = running.done.send(result);
    }
}
