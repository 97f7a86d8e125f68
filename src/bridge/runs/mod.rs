//! `clawmux run`: one message from a shell, taken by the same core as a
//! chat's (its project, command, approvals and event log are `serve`'s),
//! and answered with the turn's outcome instead of cards: it returns when
//! the turn completes, asks for approval, fails or times out.
//!
//! - this module: what a run asks ([`RunRequest`]), how the core took it
//!   ([`RunStart`]) and how it ended ([`Outcome`], and the cards it shows);
//! - `fold`: a run's outcome folded from its project's events.
//!
//! Below the core and the daemon, which take runs: `run.sock`, where a
//! running `serve` takes them, is `daemon::run_socket`, and a run with no
//! `serve`, by a daemon of its own, `daemon::one_shot`.

pub mod fold;

pub use fold::RunFold;

use serde::{Deserialize, Serialize};

use super::present::{self, ApprovalView};
use super::project::Approval;
use super::texts::{Msg, error_guidance, output_markdown};
use crate::i18n::{Lang, Text};
use crate::message::{Block, Message};
use crate::store::log_event::RunDetection;
use crate::store::state::{ApprovalId, JobId, ProjectName, RunId};

/// Who a run is, in the event log and to the access policy: the operator
/// at the desk (a shell on this machine), who may answer approvals.
pub const RUN_USER: &str = "run";

/// What to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Request {
    /// Type a message, e.g. `/gsd:progress`.
    Message(String),
    /// Answer a prompt waiting in the project with this option key:
    /// `prompt`, the one the caller was shown (an outcome's approval id),
    /// or with none the newest, if anyone saw it. Never another one: the
    /// agent may have asked something else since.
    Answer {
        key: String,
        prompt: Option<ApprovalId>,
    },
}

/// A run, as its caller asks it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunAsk {
    pub project: ProjectName,
    pub request: Request,
    /// The agent of a project this run creates (`claude`, `sim`, a
    /// command line); the config's when `None`.
    pub agent: Option<String>,
    /// May it make the project (`--new`)? Without, only the first project
    /// of all is made: a misspelt name would start one more billed agent.
    #[serde(default)]
    pub create: bool,
    /// The caller's language, for what clawmux says itself.
    pub lang: Lang,
}

/// A run for the core: the caller's ask under the id its events name.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRequest {
    pub id: RunId,
    pub project: ProjectName,
    pub request: Request,
    pub agent: Option<String>,
    /// See [`RunAsk::create`].
    pub create: bool,
}

/// A look at a project, answered by clawmux (never typed as a prompt).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Look {
    /// What the agent is doing, and the end of its screen.
    Status,
    /// The screen.
    Screen,
    /// The agent's interrupt keys.
    Cancel,
}

/// How the core took a run: what its outcome is folded from.
#[derive(Debug, Clone, PartialEq)]
pub enum RunStart {
    /// The command `job`, to its end; `answering` the approval an answer
    /// was typed for.
    Job {
        job: JobId,
        answering: Option<ApprovalId>,
    },
    /// The project was asked for its screen (or to cancel). `waiting` and
    /// `busy` are what it last said it does (none if it has not said).
    Look {
        look: Look,
        waiting: Option<String>,
        busy: Option<bool>,
    },
    /// Bad input, and why: nothing was done (`clawmux run` exits 2).
    Refused(String),
}

/// How a run ends for its caller: an outcome, or bad input (exit 2).
pub type RunResult = Result<Outcome, String>;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Completed,
    /// The turn was interrupted (Esc, `/gsd:cancel`) before its end.
    Interrupted,
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
            Status::Interrupted => {
                let mut cards = present::result_cards(
                    &format!("{title} ({}s)", self.seconds),
                    output_markdown(&self.output),
                    self.screen.as_deref(),
                );
                let seconds = self.seconds.to_string();
                let stopped = Msg::StoppedAfter.with(&[("seconds", &seconds)]);
                if let Some(first) = cards.first_mut() {
                    first.blocks.insert(0, Block::note(stopped));
                }
                cards
            }
            Status::Approval => {
                let Some(a) = &self.approval else {
                    return Vec::new();
                };
                let keys: Vec<&str> = a.options.iter().map(|opt| opt.key.as_str()).collect();
                let how = Msg::AnswerWith.with(&[
                    ("project", self.project.as_str()),
                    ("prompt", a.id.as_str()),
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
