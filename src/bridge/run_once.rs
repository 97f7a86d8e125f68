//! One message from a shell, without the daemon: what `clawmux run` (and
//! the OpenClaw skill) does. It drives the project's agent pane like a chat
//! message would and returns when the turn completes, asks for approval,
//! fails or times out.

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio_util::task::TaskTracker;

use super::config::Config;
use super::present::words::said;
use super::present::{self, ApprovalView};
use super::project::{
    Approval, Job, ProjectCmd, ProjectError, ProjectEvent, ProjectEventKind, ProjectHandle,
    ProjectSetup, Reply, TurnEnding,
};
use super::router::{self, Builtin, Route};
use super::texts::{Msg, error_guidance, output_markdown};
use crate::bridge::access::names;
use crate::bridge::panes::hosts::{Hosts, UnknownHost};
use crate::detect::Profiles;
use crate::i18n::{Lang, Text};
use crate::message::{Block, Message};
use crate::store::log_event::RunDetection;
use crate::store::state::{ChatTarget, ProjectName};
use crate::store::{EventLog, LogEvent};

/// How long `--answer` waits for the prompt to be recognised on screen
/// after attaching (the detector settles in milliseconds).
const APPROVAL_WAIT: Duration = Duration::from_secs(2);
/// Project events buffered for one run.
const EVENT_CAPACITY: usize = 64;
/// How long `/gsd:status`, `/gsd:screen` and `/gsd:cancel` wait for the
/// project's pane to answer (attaching takes milliseconds; an ssh host more).
const LOOK_WAIT: Duration = Duration::from_secs(10);
/// After the screen came, how long `/gsd:status` waits for the detector to
/// settle on a prompt it shows (a dialog is confirmed once still for 50 ms).
const STATUS_SETTLE: Duration = Duration::from_millis(500);
/// Screen rows `/gsd:status` shows under its summary.
const STATUS_ROWS: usize = 15;

/// What to do.
#[derive(Debug, Clone)]
pub enum Request {
    /// Type a message, e.g. `/gsd:progress`.
    Message(String),
    /// Answer the approval on screen with this option key.
    Answer(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Completed,
    Approval,
    Error,
    Timeout,
    Failed,
}

/// How a run ended.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Outcome {
    pub status: Status,
    pub project: ProjectName,
    pub command: String,
    /// The clean text the turn produced (the screen, for a timeout).
    pub output: String,
    /// The pane's screen when the turn ended (a completed turn only; none
    /// if the pane did not answer in time).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub screen: Option<String>,
    pub seconds: u64,
    /// Progress, error and session events seen on the way.
    pub detections: Vec<RunDetection>,
    pub approval: Option<Approval>,
    /// Why the run failed.
    pub error: Option<String>,
}

impl Outcome {
    /// What a run's outcome shows: its result, its approval question, or its
    /// error (with the output that came before it).
    pub fn cards(&self) -> Vec<Message> {
        let title = format!("{}: {}", self.project, self.command);
        match self.status {
            Status::Completed => present::result_cards(
                &format!("{title} ({}s)", self.seconds),
                output_markdown(&self.output),
                self.screen.as_deref(),
            ),
            Status::Approval => {
                let Some(a) = &self.approval else {
                    return Vec::new();
                };
                let keys: Vec<&str> = a.options.iter().map(|opt| opt.key.as_str()).collect();
                let how = Msg::AnswerWith.with(&[
                    ("project", self.project.as_str()),
                    ("keys", &keys.join("|")),
                ]);
                let mut card = present::approval_card(seen(&self.project, a));
                // What the turn got through before it stopped to ask: a
                // relayed approval is all the chat sees of the run so far.
                let progress: Vec<&str> = (self.detections.iter())
                    .filter_map(|d| match d {
                        RunDetection::Progress { summary, .. } => Some(summary.as_str()),
                        _ => None,
                    })
                    .collect();
                if !progress.is_empty() {
                    let progress = progress.join(" · ");
                    card = card.push(Block::note(
                        Msg::ProgressSoFar.with(&[("progress", &progress)]),
                    ));
                }
                vec![card.push(Block::note(how))]
            }
            Status::Error => {
                let errors: Vec<&str> = self
                    .detections
                    .iter()
                    .filter_map(|d| match d {
                        RunDetection::Error { line } | RunDetection::Interrupted { line } => {
                            Some(line.as_str())
                        }
                        _ => None,
                    })
                    .collect();
                let guidance = error_guidance(
                    self.project.as_str(),
                    &self.command,
                    errors.first().copied().unwrap_or(""),
                    &self.output,
                );
                let mut cards = vec![present::error_card(
                    Msg::ErrorTitle.with(&[("title", &title)]),
                    errors.join("\n"),
                    &guidance,
                    Vec::new(),
                )];
                cards.extend(present::result_cards(
                    &format!("{title} ({}s)", self.seconds),
                    output_markdown(&self.output),
                    self.screen.as_deref(),
                ));
                cards
            }
            Status::Timeout => {
                let seconds = self.seconds.to_string();
                let t = Msg::TimedOut.with(&[("seconds", &seconds), ("title", &title)]);
                vec![present::error_card(
                    t,
                    &self.output,
                    Msg::StillRunning,
                    Vec::new(),
                )]
            }
            Status::Failed => {
                // The card carries both languages; its renderer picks one.
                let error = (self.error.as_ref()).map_or(Msg::RunUnknownFailure.text(), Text::from);
                vec![present::error_card(
                    Msg::FailedTitle.with(&[("title", &title)]),
                    error,
                    "",
                    Vec::new(),
                )]
            }
        }
    }
}

/// The approval a run saw, as its card shows it.
fn seen<'a>(project: &'a ProjectName, a: &'a Approval) -> ApprovalView<'a> {
    ApprovalView {
        id: &a.id,
        project,
        session: &a.session,
        kind: a.kind,
        body: &a.body,
        question: &a.question,
        options: &a.options,
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{0}")]
    Invalid(String),
}

/// Runs `request` in `project` and waits for the outcome.
pub async fn run_once(
    config: &Config,
    profiles: &Profiles,
    sim_agent: &str,
    name: &ProjectName,
    request: Request,
    log: &EventLog,
    mut on_progress: impl FnMut(&str),
) -> Result<Outcome, RunError> {
    // The caller's language (its locale), for what `run` prints itself.
    let lang = Lang::from_env();
    let project = name.as_str();
    let command = match &request {
        Request::Message(text) => {
            names::validate_typed_text(text).map_err(|e| RunError::Invalid(e.to_string()))?;
            text.clone()
        }
        Request::Answer(key) => format!("answer {key}"),
    };
    // A project configured on a host runs there (see `bridge::hosts`).
    let hosts = Hosts::new(config);
    let host = config.host_for(project);
    let invalid = |e: UnknownHost| RunError::Invalid(e.to_string());
    let workspace = hosts.workspace_root(host).map_err(invalid)?.join(project);
    let watch = hosts.watch(host).map_err(invalid)?;
    let setup = ProjectSetup::new(
        config,
        profiles,
        sim_agent,
        name,
        workspace.clone(),
        watch,
        None,
    )
    .map_err(|e| RunError::Invalid(e.to_string()))?;
    // Without the daemon, run answers the looks at a project itself: typed
    // into the agent they would be prompts.
    let look = match &request {
        Request::Message(text) => match router::route(text) {
            Route::Builtin(b @ (Builtin::Status | Builtin::Screen | Builtin::Cancel)) => Some(b),
            _ => None,
        },
        Request::Answer(_) => None,
    };
    let interrupt = setup.interrupt;
    let (tx, mut events) = mpsc::channel(EVENT_CAPACITY);
    let handle = ProjectHandle::spawn(setup, tx, &TaskTracker::new());
    let timeout = config.timeout_for(&command).as_secs();
    let job = Job::new(
        name,
        &command,
        ChatTarget::Console,
        None,
        timeout,
        crate::store::clock::now_ms(),
    );
    let mut outcome = Outcome {
        status: Status::Failed,
        project: name.clone(),
        command: command.clone(),
        output: String::new(),
        screen: None,
        seconds: 0,
        detections: Vec::new(),
        approval: None,
        error: None,
    };
    log.event(&LogEvent::Command {
        project: name.clone(),
        sender: "run".into(),
        text: command.to_string(),
        job: None,
    });
    if let Some(look) = look {
        let looked = tokio::time::timeout(
            LOOK_WAIT,
            look_at(&handle, &mut events, look, interrupt, lang),
        )
        .await
        .unwrap_or_else(|_| Err(Msg::RunPaneSilentInTime.text()));
        match looked {
            Ok(text) => {
                outcome.status = Status::Completed;
                outcome.output = text;
            }
            Err(error) => outcome.error = Some(error.get(lang).to_string()),
        }
        return Ok(finish(outcome, log));
    }
    let started = match request {
        Request::Message(_) => (handle.send(ProjectCmd::Submit(job))).map_err(|r| r.error),
        Request::Answer(key) => answer(&handle, &mut events, &key, job, workspace.as_path()).await,
    };
    match started {
        Ok(()) => {}
        // An answer for no dialog, or a key it does not offer, is bad
        // input (exit 2), not a failure of the run.
        Err(e @ (ProjectError::NoApprovalWaiting(_) | ProjectError::NotAnOption { .. })) => {
            return Err(RunError::Invalid(e.to_string()));
        }
        Err(error) => {
            outcome.error = Some(said(&error).get(lang).to_string());
            return Ok(finish(outcome, log));
        }
    }
    while let Some(event) = events.recv().await {
        match event.kind {
            ProjectEventKind::Progress {
                summary, percent, ..
            } => {
                on_progress(&summary);
                (outcome.detections).push(RunDetection::Progress { percent, summary });
            }
            ProjectEventKind::Error { line, .. } => {
                (outcome.detections).push(RunDetection::Error { line });
            }
            ProjectEventKind::SessionLost { reason, retrying } => {
                (outcome.detections).push(RunDetection::SessionLost { reason, retrying });
            }
            ProjectEventKind::SessionCreated { recovered } => {
                (outcome.detections).push(RunDetection::SessionCreated { recovered });
            }
            ProjectEventKind::Approval(seen) => {
                // In the event log as the daemon's are (`clawmux tail
                // --kind approval`).
                log.event(&LogEvent::approval(name, &seen));
                outcome.status = Status::Approval;
                outcome.approval = Some(seen);
                break;
            }
            ProjectEventKind::Answered {
                approval_id,
                by,
                label,
                result: Ok(()),
                ..
            } => log.event(&LogEvent::ApprovalAnswered {
                project: name.clone(),
                approval: approval_id,
                by,
                choice: label,
            }),
            ProjectEventKind::DialogMismatch { detail, .. } => {
                (outcome.detections).push(RunDetection::DialogMismatch { detail });
            }
            ProjectEventKind::Completed {
                output,
                screen,
                seconds,
                errors,
                ending,
                ..
            } => {
                outcome.status = if errors > 0 {
                    Status::Error
                } else {
                    Status::Completed
                };
                match ending {
                    // An error turn: `errors` made the status an error.
                    TurnEnding::Finished | TurnEnding::Failed => {}
                    TurnEnding::Interrupted(line) => {
                        (outcome.detections).push(RunDetection::Interrupted { line });
                    }
                    TurnEnding::Rejected(line) => {
                        outcome.status = Status::Error;
                        let refused = Msg::RunRefused.with(&[("line", &line)]);
                        outcome.error = Some(refused.get(lang).to_string());
                    }
                }
                outcome.output = output;
                outcome.seconds = seconds;
                outcome.screen = (!screen.is_empty()).then_some(screen);
                break;
            }
            ProjectEventKind::TimedOut {
                screen, seconds, ..
            } => {
                outcome.status = Status::Timeout;
                outcome.output = screen;
                outcome.seconds = seconds;
                break;
            }
            ProjectEventKind::Failed { error }
            | ProjectEventKind::Answered {
                result: Err(error), ..
            } => {
                outcome.error = Some(said(&error).get(lang).to_string());
                break;
            }
            ProjectEventKind::NotSubmitted { screen } => {
                outcome.error = Some(Msg::RunNotTaken.text().get(lang).to_string());
                outcome.output = screen;
                break;
            }
            _ => {}
        }
    }
    Ok(finish(outcome, log))
}

/// `/gsd:status` (what the agent is doing, and the end of its screen),
/// `/gsd:screen` or `/gsd:cancel` (the agent's interrupt keys) for the
/// project, as text. A project with no session is not started for it.
async fn look_at(
    handle: &ProjectHandle,
    events: &mut mpsc::Receiver<ProjectEvent>,
    look: Builtin,
    interrupt: &[&str],
    lang: Lang,
) -> Result<String, Text> {
    let reply = Reply {
        target: ChatTarget::Console,
        reply_to: None,
    };
    if look == Builtin::Cancel {
        let names = crate::agents::key_names(interrupt);
        let keys = crate::bridge::panes::keys::parse_keys(&names).map_err(|e| said(&e))?;
        let cmd = ProjectCmd::Keys {
            keys,
            by: "run".into(),
            reply,
        };
        handle.send(cmd).map_err(|r| said(&r.error))?;
        while let Some(event) = events.recv().await {
            if let ProjectEventKind::KeysSent { result, .. } = event.kind {
                return result
                    .map(|()| Msg::RunKeysSent.with(&[("names", &names)]))
                    .map(|sent| sent.get(lang).to_string())
                    .map_err(|e| said(&e));
            }
        }
        return Err(Msg::RunEndedBeforeKeys.text());
    }
    handle
        .send(ProjectCmd::Screen { reply })
        .map_err(|r| said(&r.error))?;
    let (mut waiting, mut busy) = (None, None);
    let mut screen = None;
    let mut settle = None;
    loop {
        let event = match settle {
            Some(until) => match tokio::time::timeout_at(until, events.recv()).await {
                Ok(event) => event,
                Err(_) => break,
            },
            None => events.recv().await,
        };
        let Some(event) = event else { break };
        match event.kind {
            ProjectEventKind::Approval(seen) => waiting = Some(seen.question),
            ProjectEventKind::Status(status) => busy = Some(status.busy),
            ProjectEventKind::Screen { screen: shown, .. } => {
                let shown = shown.map_err(|e| said(&e))?;
                if look == Builtin::Screen {
                    return Ok(shown.trim_end().to_string());
                }
                screen = Some(shown);
                settle = Some(tokio::time::Instant::now() + STATUS_SETTLE);
            }
            _ => {}
        }
    }
    let screen = screen.ok_or_else(|| Msg::RunPaneSilent.text())?;
    let state = match (waiting, busy) {
        (Some(question), _) => Msg::RunWaitingFor.with(&[("question", &question)]),
        (None, Some(true)) => Msg::RunStateWorking.text(),
        (None, _) => Msg::StateIdle.text(),
    };
    let state = state.get(lang);
    let rows: Vec<&str> = screen.trim_end().lines().collect();
    let tail = rows[rows.len().saturating_sub(STATUS_ROWS)..].join("\n");
    Ok(format!("{state}\n\n{tail}"))
}

/// Finds the approval on screen and types `key` for it.
async fn answer(
    handle: &ProjectHandle,
    events: &mut mpsc::Receiver<ProjectEvent>,
    key: &str,
    follow: Job,
    workspace: &Path,
) -> Result<(), ProjectError> {
    let seen = tokio::time::timeout(APPROVAL_WAIT, async {
        while let Some(event) = events.recv().await {
            if let ProjectEventKind::Approval(seen) = event.kind {
                return Some(seen);
            }
        }
        None
    })
    .await
    .ok()
    .flatten()
    .ok_or_else(|| ProjectError::NoApprovalWaiting(workspace.display().to_string()))?;
    if !seen.options.iter().any(|o| o.key == key) {
        let keys: Vec<&str> = seen.options.iter().map(|o| o.key.as_str()).collect();
        return Err(ProjectError::NotAnOption {
            key: key.to_string(),
            keys: keys.join(", "),
        });
    }
    let label = (seen.options.iter())
        .find(|o| o.key == key)
        .map(|o| o.label.clone())
        .unwrap_or_default();
    // The outcome comes back as `Answered`.
    let cmd = ProjectCmd::Answer {
        approval_id: seen.id,
        question: seen.question,
        body: seen.body,
        key: key.to_string(),
        follow: Some(follow),
        by: "run".to_string(),
        label,
        reply: Reply {
            target: ChatTarget::Console,
            reply_to: None,
        },
    };
    handle.send(cmd).map_err(|r| r.error)
}

fn finish(outcome: Outcome, log: &EventLog) -> Outcome {
    log.event(&LogEvent::Run {
        project: outcome.project.clone(),
        status: serde_json::to_value(outcome.status).unwrap_or(serde_json::Value::Null),
        seconds: outcome.seconds,
        error: outcome.error.clone(),
    });
    outcome
}
