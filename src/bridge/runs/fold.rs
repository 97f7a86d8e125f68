//! A run's outcome, folded from its project's events as the daemon hands
//! them to the core: the command it follows (progress, errors, an approval,
//! the result), or the look it asked for (the screen, the interrupt keys).
//! Sans-IO: the daemon passes events and the time in, and carries the
//! outcome to the run's caller.

use std::time::{Duration, Instant};

use super::{Look, Outcome, Request, RunAsk, RunResult, RunStart, Status};
use crate::bridge::present::words::said;
use crate::bridge::project::{ProjectError, ProjectEvent, ProjectEventKind, Reply, TurnEnding};
use crate::bridge::texts::Msg;
use crate::i18n::{Lang, Text};
use crate::store::log_event::RunDetection;
use crate::store::state::{ApprovalId, ChatTarget, JobId, ProjectName, RunId};

/// How long a look waits for the project's pane to answer (attaching takes
/// milliseconds; an ssh host more).
const LOOK_WAIT: Duration = Duration::from_secs(10);
/// After the screen came, how long `/gsd:status` waits for the detector to
/// settle on a prompt it shows (a dialog is confirmed once still for 50 ms).
const STATUS_SETTLE: Duration = Duration::from_millis(500);
/// Screen rows `/gsd:status` shows under its summary.
const STATUS_ROWS: usize = 15;

/// One run's outcome in the making.
pub struct RunFold {
    id: RunId,
    lang: Lang,
    outcome: Outcome,
    following: Following,
}

enum Following {
    /// Not taken by the core yet.
    Nothing,
    /// The command `job`; `answering` the approval typed for it, until
    /// the answer is in (a prompt seen before is that one, read again).
    Job {
        job: JobId,
        answering: Option<ApprovalId>,
    },
    Look {
        look: Look,
        waiting: Option<String>,
        busy: Option<bool>,
        screen: Option<String>,
        /// When the look gives up on the pane, or (once the screen came)
        /// stops waiting for the detector to settle.
        until: Instant,
    },
}

/// What an event made of the run.
#[derive(Debug)]
#[expect(clippy::large_enum_variant, reason = "one per event, moved once")]
pub enum Folded {
    /// Nothing for its caller.
    Nothing,
    /// The command's progress, for the caller's waiting line.
    Progress(String),
    /// The run is over.
    Done(RunResult),
}

impl RunFold {
    pub fn new(id: RunId, ask: &RunAsk) -> RunFold {
        let command = match &ask.request {
            Request::Message(text) => text.clone(),
            Request::Answer { key, .. } => format!("answer {key}"),
        };
        RunFold {
            id,
            lang: ask.lang,
            outcome: Outcome {
                status: Status::Failed,
                project: ask.project.clone(),
                command,
                output: String::new(),
                screen: None,
                seconds: 0,
                detections: Vec::new(),
                approval: None,
                error: None,
            },
            following: Following::Nothing,
        }
    }

    pub fn project(&self) -> &ProjectName {
        &self.outcome.project
    }

    /// The core took the run: what to follow; the result if that is all.
    pub fn started(&mut self, start: RunStart, now: Instant) -> Option<RunResult> {
        self.following = match start {
            RunStart::Refused(why) => return Some(Err(why)),
            RunStart::Job { job, answering } => Following::Job { job, answering },
            RunStart::Look {
                look,
                waiting,
                busy,
            } => Following::Look {
                look,
                waiting,
                busy,
                screen: None,
                until: now + LOOK_WAIT,
            },
        };
        None
    }

    /// Is this reply to this run?
    fn is_mine(&self, reply: &Reply) -> bool {
        matches!(&reply.target, ChatTarget::Run { id } if *id == self.id)
    }

    /// The run's project said `event`.
    pub fn see(&mut self, event: &ProjectEvent, now: Instant) -> Folded {
        if event.project != self.outcome.project {
            return Folded::Nothing;
        }
        match &self.following {
            Following::Nothing => Folded::Nothing,
            Following::Job { job, answering } => {
                let ours = (event.job.as_ref()).is_some_and(|j| j.id == *job);
                match &event.kind {
                    ProjectEventKind::Answered {
                        approval_id,
                        result,
                        ..
                    } if Some(approval_id) == answering.as_ref() => match result {
                        Ok(()) => {
                            let job = job.clone();
                            self.following = Following::Job {
                                job,
                                answering: None,
                            };
                            Folded::Nothing
                        }
                        Err(error) => Folded::Done(self.failed(error)),
                    },
                    ProjectEventKind::Approval(_) if answering.is_some() => Folded::Nothing,
                    _ if ours => self.see_job(&event.kind),
                    _ => Folded::Nothing,
                }
            }
            Following::Look { .. } => self.see_look(&event.kind, now),
        }
    }

    /// The run's command did not reach its project, or failed there.
    pub fn failed(&mut self, error: &ProjectError) -> RunResult {
        self.outcome.error = Some(said(error).get(self.lang).to_string());
        self.done()
    }

    fn done(&self) -> RunResult {
        Ok(self.outcome.clone())
    }

    fn see_job(&mut self, kind: &ProjectEventKind) -> Folded {
        // Only what the outcome keeps is copied: a streamed answer's text
        // (an `Answer` event) goes past it often and is not one of those.
        if let Some(detection) = detection_of(kind) {
            let progress = match &detection {
                RunDetection::Progress { summary, .. } => Some(summary.clone()),
                _ => None,
            };
            self.outcome.detections.push(detection);
            return progress.map_or(Folded::Nothing, Folded::Progress);
        }
        let lang = self.lang;
        let outcome = &mut self.outcome;
        match kind {
            ProjectEventKind::Approval(seen) => {
                outcome.status = Status::Approval;
                outcome.approval = Some(seen.clone());
            }
            ProjectEventKind::Completed {
                output,
                screen,
                seconds,
                errors,
                ending,
                ..
            } => {
                outcome.status = if *errors > 0 {
                    Status::Error
                } else {
                    Status::Completed
                };
                match ending {
                    // An error turn: `errors` made the status an error.
                    TurnEnding::Finished | TurnEnding::Failed => {}
                    TurnEnding::Interrupted(line) => {
                        let line = line.clone();
                        outcome.detections.push(RunDetection::Interrupted { line });
                        if outcome.status == Status::Completed {
                            outcome.status = Status::Interrupted;
                        }
                    }
                    TurnEnding::Rejected(line) => {
                        outcome.status = Status::Error;
                        let refused = Msg::RunRefused.with(&[("line", line)]);
                        outcome.error = Some(refused.get(lang).to_string());
                    }
                }
                outcome.output = output.clone();
                outcome.seconds = *seconds;
                outcome.screen = (!screen.is_empty()).then(|| screen.clone());
            }
            ProjectEventKind::TimedOut {
                screen, seconds, ..
            } => {
                outcome.status = Status::Timeout;
                outcome.output = screen.clone();
                outcome.seconds = *seconds;
            }
            ProjectEventKind::Failed { error } => return Folded::Done(self.failed(error)),
            ProjectEventKind::NotSubmitted { screen } => {
                outcome.error = Some(Msg::RunNotTaken.text().get(lang).to_string());
                outcome.output = screen.clone();
            }
            _ => return Folded::Nothing,
        }
        Folded::Done(self.done())
    }

    fn see_look(&mut self, kind: &ProjectEventKind, now: Instant) -> Folded {
        let lang = self.lang;
        let mine = match kind {
            ProjectEventKind::Screen { reply, .. } | ProjectEventKind::Cancelled { reply, .. } => {
                self.is_mine(reply)
            }
            _ => true,
        };
        let Following::Look {
            look,
            waiting,
            busy,
            screen,
            until,
        } = &mut self.following
        else {
            return Folded::Nothing;
        };
        let looked = match kind {
            ProjectEventKind::Approval(seen) => {
                *waiting = Some(seen.question.clone());
                return Folded::Nothing;
            }
            ProjectEventKind::Status(status) => {
                *busy = Some(status.busy);
                return Folded::Nothing;
            }
            ProjectEventKind::Cancelled { keys, result, .. } if mine => result
                .as_ref()
                .map(|()| {
                    Msg::RunKeysSent
                        .with(&[("names", keys)])
                        .get(lang)
                        .to_string()
                })
                .map_err(said),
            ProjectEventKind::Screen {
                screen: Err(error), ..
            } if mine => Err(said(error)),
            ProjectEventKind::Screen {
                screen: Ok(shown), ..
            } if mine => {
                if *look == Look::Screen {
                    Ok(shown.trim_end().to_string())
                } else {
                    // `/gsd:status`: the prompt the detector settles on
                    // while the screen is still.
                    *screen = Some(shown.clone());
                    *until = now + STATUS_SETTLE;
                    return Folded::Nothing;
                }
            }
            _ => return Folded::Nothing,
        };
        Folded::Done(self.looked(looked))
    }

    fn looked(&mut self, looked: Result<String, Text>) -> RunResult {
        match looked {
            Ok(text) => {
                self.outcome.status = Status::Completed;
                self.outcome.output = text;
            }
            Err(error) => self.outcome.error = Some(error.get(self.lang).to_string()),
        }
        self.done()
    }

    /// When [`RunFold::tick`] has something to do (a look's wait is over).
    pub fn deadline(&self) -> Option<Instant> {
        match &self.following {
            Following::Look { until, .. } => Some(*until),
            Following::Nothing | Following::Job { .. } => None,
        }
    }

    /// Time passed: a look's wait is over at `until`.
    pub fn tick(&mut self, now: Instant) -> Option<RunResult> {
        let Following::Look {
            waiting,
            busy,
            screen,
            until,
            ..
        } = &self.following
        else {
            return None;
        };
        if now < *until {
            return None;
        }
        let Some(screen) = screen else {
            return Some(self.looked(Err(Msg::RunPaneSilentInTime.text())));
        };
        let state = match (waiting, busy) {
            (Some(question), _) => Msg::RunWaitingFor.with(&[("question", question)]),
            (None, Some(true)) => Msg::RunStateWorking.text(),
            (None, _) => Msg::StateIdle.text(),
        };
        let rows: Vec<&str> = screen.trim_end().lines().collect();
        let tail = rows[rows.len().saturating_sub(STATUS_ROWS)..].join("\n");
        let text = format!("{}\n\n{tail}", state.get(self.lang));
        Some(self.looked(Ok(text)))
    }
}

/// What a run's outcome notes of a command's news on the way.
fn detection_of(kind: &ProjectEventKind) -> Option<RunDetection> {
    Some(match kind {
        ProjectEventKind::Progress {
            summary, percent, ..
        } => RunDetection::Progress {
            percent: *percent,
            summary: summary.clone(),
        },
        ProjectEventKind::Error { line, .. } => RunDetection::Error { line: line.clone() },
        ProjectEventKind::SessionLost { reason, retrying } => RunDetection::SessionLost {
            reason: reason.clone(),
            retrying: *retrying,
        },
        ProjectEventKind::SessionCreated { recovered } => RunDetection::SessionCreated {
            recovered: *recovered,
        },
        ProjectEventKind::DialogMismatch { detail, .. } => RunDetection::DialogMismatch {
            detail: detail.clone(),
        },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bridge::project::{Approval, ProjectStatus};
    use crate::store::state::{ApprovalKind, ApprovalOption, Job};

    fn ask(request: Request) -> RunAsk {
        RunAsk {
            create: false,
            project: crate::store::ids::project("demo"),
            request,
            agent: None,
            lang: Lang::En,
        }
    }

    fn id() -> RunId {
        RunId::parse("r1").unwrap()
    }

    fn job(text: &str) -> Job {
        let project = crate::store::ids::project("demo");
        Job::new(&project, text, ChatTarget::Run { id: id() }, None, 60, 0)
    }

    fn event(job: Option<&Job>, kind: ProjectEventKind) -> ProjectEvent {
        ProjectEvent {
            project: crate::store::ids::project("demo"),
            job: job.cloned(),
            kind,
        }
    }

    fn approval(id: &str) -> Approval {
        Approval {
            id: id.parse().unwrap(),
            session: crate::store::ids::session("cm-demo"),
            pane: crate::control::PaneId(1),
            kind: ApprovalKind::Permission,
            question: "Do you want to proceed?".into(),
            body: String::new(),
            options: ApprovalOption::numbered(&["Yes", "No"]),
        }
    }

    fn outcome(folded: Folded) -> Outcome {
        match folded {
            Folded::Done(Ok(outcome)) => outcome,
            other => panic!("not an outcome: {other:?}"),
        }
    }

    /// The command's own events make the outcome; another command's (a
    /// chat's, in the same project) are not the run's.
    #[test]
    fn a_command_is_followed_to_its_prompt_and_no_other_is() {
        let now = Instant::now();
        let mine = job("/gsd:plan-phase 2");
        let other = job("hello");
        let mut fold = RunFold::new(id(), &ask(Request::Message(mine.text.clone())));
        let start = RunStart::Job {
            job: mine.id.clone(),
            answering: None,
        };
        assert!(fold.started(start, now).is_none());
        let progress = ProjectEventKind::Progress {
            summary: "2/3".into(),
            percent: Some(66),
            tail: String::new(),
        };
        let seen = fold.see(&event(Some(&mine), progress), now);
        assert!(matches!(seen, Folded::Progress(s) if s == "2/3"));
        let asked = ProjectEventKind::Approval(approval("a1"));
        let seen = fold.see(&event(Some(&other), asked.clone()), now);
        assert!(matches!(seen, Folded::Nothing));
        let outcome = outcome(fold.see(&event(Some(&mine), asked), now));
        assert_eq!(outcome.status, Status::Approval);
        assert_eq!(outcome.command, "/gsd:plan-phase 2");
        assert_eq!(outcome.detections.len(), 1);
    }

    /// An interrupted turn is an interrupted outcome, named so in JSON,
    /// not a completed one.
    #[test]
    fn an_interrupted_turn_is_an_interrupted_outcome() {
        let now = Instant::now();
        let mine = job("/gsd:execute-phase 2");
        let mut fold = RunFold::new(id(), &ask(Request::Message(mine.text.clone())));
        let start = RunStart::Job {
            job: mine.id.clone(),
            answering: None,
        };
        fold.started(start, now);
        let done = ProjectEventKind::Completed {
            screen: String::new(),
            output: "● Working".into(),
            seconds: 3,
            errors: 0,
            ending: TurnEnding::Interrupted("Interrupted · What should Claude do instead?".into()),
            usage: Default::default(),
            kept: None,
        };
        let outcome = outcome(fold.see(&event(Some(&mine), done), now));
        assert_eq!(outcome.status, Status::Interrupted);
        let json = serde_json::to_value(&outcome).unwrap();
        assert_eq!(json["status"], "interrupted");
        let text = outcome.cards()[0].to_text_in(Lang::En);
        assert!(text.contains("Stopped after 3s"), "{text}");
    }

    /// An answer's run follows the command from the answer on: the prompt
    /// read again before it (a restarted actor) is not a new one.
    #[test]
    fn an_answer_is_followed_from_its_answer_on() {
        let now = Instant::now();
        let followed = job("/gsd:plan-phase 2");
        let answer = Request::Answer {
            key: "1".into(),
            prompt: None,
        };
        let mut fold = RunFold::new(id(), &ask(answer));
        let start = RunStart::Job {
            job: followed.id.clone(),
            answering: Some("a1".parse().unwrap()),
        };
        fold.started(start, now);
        let again = ProjectEventKind::Approval(approval("a9"));
        let seen = fold.see(&event(Some(&followed), again.clone()), now);
        assert!(matches!(seen, Folded::Nothing));
        let answered = ProjectEventKind::Answered {
            approval_id: "a1".parse().unwrap(),
            by: "run".into(),
            label: "Yes".into(),
            reply: Reply {
                target: ChatTarget::Run { id: id() },
                reply_to: None,
            },
            result: Ok(()),
        };
        assert!(matches!(
            fold.see(&event(None, answered), now),
            Folded::Nothing
        ));
        // A prompt after the answer is the next one.
        let outcome = outcome(fold.see(&event(Some(&followed), again), now));
        assert_eq!(outcome.status, Status::Approval);
        assert_eq!(outcome.command, "answer 1");
    }

    /// `/gsd:status`: the screen, then what the detector settles on while
    /// it is still; a pane that never answers is said as such.
    #[test]
    fn a_status_look_settles_on_what_the_screen_shows() {
        let now = Instant::now();
        let mut fold = RunFold::new(id(), &ask(Request::Message("/gsd:status".into())));
        let look = RunStart::Look {
            look: Look::Status,
            waiting: None,
            busy: Some(true),
        };
        fold.started(look, now);
        let reply = Reply {
            target: ChatTarget::Run { id: id() },
            reply_to: None,
        };
        let screen = ProjectEventKind::Screen {
            reply,
            screen: Ok("❯ 1. Yes\n  2. No\n".into()),
            grid: None,
        };
        assert!(matches!(
            fold.see(&event(None, screen), now),
            Folded::Nothing
        ));
        let asked = ProjectEventKind::Approval(approval("a1"));
        fold.see(&event(None, asked), now);
        assert!(fold.tick(now + Duration::from_millis(100)).is_none());
        let done = fold.tick(now + STATUS_SETTLE).expect("settled");
        let outcome = done.expect("an outcome");
        assert_eq!(outcome.status, Status::Completed);
        assert!(
            outcome
                .output
                .starts_with("waiting for an answer: Do you want to proceed?"),
            "{}",
            outcome.output
        );
        assert!(outcome.output.ends_with("2. No"), "{}", outcome.output);

        let mut silent = RunFold::new(id(), &ask(Request::Message("/gsd:screen".into())));
        let look = RunStart::Look {
            look: Look::Screen,
            waiting: None,
            busy: None,
        };
        silent.started(look, now);
        let status = ProjectEventKind::Status(ProjectStatus::default());
        assert!(matches!(
            silent.see(&event(None, status), now),
            Folded::Nothing
        ));
        let outcome = silent
            .tick(now + LOOK_WAIT)
            .expect("given up")
            .expect("an outcome");
        assert_eq!(outcome.status, Status::Failed);
        assert_eq!(
            outcome.error.as_deref(),
            Some("the project's pane did not answer in time")
        );
    }
}
