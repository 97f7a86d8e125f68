//! Commands from chat to a project's agent, and their lifecycle as the
//! project reports it: queued, started, progress, errors, the result,
//! timeouts, lost sessions, input the agent did not take.

use super::{Core, Effect, target_id};
use crate::bridge::channels::long_result;
use crate::bridge::names;
use crate::bridge::present;
use crate::bridge::present::words::said;
use crate::bridge::project::{ProjectCmd, ProjectEventKind, TurnEnding};
use crate::bridge::texts::Msg;
use crate::bridge::texts::error_guidance;
use crate::store::LogEvent;
use crate::store::state::{
    ApprovalId, ChatTarget, Job, JobId, OutboxEntry, PendingApproval, ProjectName, Stage,
};

impl Core {
    pub(super) fn submit(
        &mut self,
        target: &ChatTarget,
        reply_to: Option<&str>,
        text: &str,
        sender: &str,
    ) {
        if let Err(e) = names::validate_typed_text(text) {
            self.error(target, reply_to, Msg::CannotSendToAgent, said(&e), "");
            return;
        }
        let Some(project) = self.current_project(target) else {
            let guidance = Msg::CreateOrPick;
            self.error(target, reply_to, Msg::NoProjectSelected, text, guidance);
            return;
        };
        self.run_in(project.as_str(), target, reply_to, text, sender);
    }

    /// Types `text` into `project` for `target`; the new command's id,
    /// none if it was refused (and the chat told why).
    pub(super) fn run_in(
        &mut self,
        project: &str,
        target: &ChatTarget,
        reply_to: Option<&str>,
        text: &str,
        sender: &str,
    ) -> Option<JobId> {
        if !self.may_reach(sender, project, target, reply_to, "typing") {
            return None;
        }
        // A command is recorded under a project name only: a chat's chosen
        // project that is not one (an old state file, say) is refused here.
        let name = match ProjectName::parse(project) {
            Ok(name) => name,
            Err(e) => {
                let why = said(&e);
                self.error(target, reply_to, Msg::InvalidProjectName, project, why);
                return None;
            }
        };
        let job = self.new_job(&name, text, target, reply_to, false);
        let id = job.id.clone();
        let chat = target_id(target);
        self.shared.update(|s| {
            if let Some(p) = s.projects.get_mut(project) {
                p.last_command = Some(text.to_string());
                p.used_in(&chat);
            }
            s.jobs.push(job.clone());
        });
        self.log(LogEvent::Command {
            project: name.clone(),
            sender: sender.to_string(),
            text: text.to_string(),
            job: Some(job.id.clone()),
        });
        self.tell_project(&name, ProjectCmd::Submit(job));
        Some(id)
    }

    /// A new command record (not saved yet).
    pub(super) fn new_job(
        &self,
        project: &ProjectName,
        text: &str,
        target: &ChatTarget,
        reply_to: Option<&str>,
        started: bool,
    ) -> Job {
        let timeout = self.config.timeout_for(text).as_secs();
        let stage = match started {
            true => Stage::Started { deadline_ms: None },
            false => Stage::Waiting,
        };
        Job {
            stage,
            retried: started,
            ..Job::new(
                project,
                text,
                target.clone(),
                reply_to,
                timeout,
                self.now_ms,
            )
        }
    }

    /// A running command's progress card: its stage, the GSD planning
    /// position, the Interrupt button.
    fn progress_card(
        &self,
        j: &Job,
        stage: &str,
        percent: Option<u8>,
        tail: &str,
        planning: Option<crate::i18n::Text>,
    ) -> crate::message::Message {
        let mut card = present::progress_card(self.title(j), stage, percent, tail);
        if let Some(planning) = planning {
            card = present::with_planning(card, &planning);
        }
        present::with_interrupt(card, &j.project, &j.id)
    }

    /// A command is over: it is forgotten, and what it leaves for the chat
    /// (`leave`: its result, the last update of its progress card) is
    /// queued in the same state update, so a crash between the two cannot
    /// lose the result. None if the command was not (or no longer) known.
    pub(super) fn finish_job(
        &mut self,
        id: &str,
        leave: impl FnOnce(&mut Self, &Job) -> Vec<OutboxEntry>,
    ) -> Option<Job> {
        self.stall_over(id, None);
        self.throttles.remove(id);
        // A command ended some other way: its streamed card closes with
        // what it showed.
        self.end_stream(id, None);
        let job = self.job(id)?;
        let leave = leave(self, &job);
        self.shared.update(|s| {
            let at = s.jobs.iter().position(|j| j.id == id)?;
            leave.into_iter().for_each(|entry| s.queue(entry));
            Some(s.jobs.remove(at))
        })
    }

    /// Has a long result's kept output removed: no message names it.
    fn remove_unsent(&mut self, kept: Option<crate::bridge::outbox_files::KeptOutput>) {
        if let Some(unsent) = kept {
            self.effects.push(Effect::RemoveFile(unsent.path));
        }
    }

    /// A project's news about a command.
    pub(super) fn on_job_event(
        &mut self,
        name: &ProjectName,
        job: &Option<Job>,
        kind: ProjectEventKind,
    ) {
        let project = name.to_string();
        let job_id = job.as_ref().map(|j| j.id.clone());
        match kind {
            ProjectEventKind::Queued { position } => {
                self.log(LogEvent::Queued {
                    project: name.clone(),
                    job: job_id.clone(),
                    position,
                });
                // A command resumed after a restart queues again: its chat
                // was told already.
                if let Some(id) = &job_id
                    && self.job(id).is_some_and(|j| !j.told_queued)
                {
                    let text = Msg::QueuedAt.with(&[("position", &position.to_string())]);
                    let card = present::info_card(Msg::Queued, &text);
                    self.send_for_job(id, &card, |j, _| j.told_queued = true);
                }
            }
            ProjectEventKind::Started => {
                self.log(LogEvent::Started {
                    project: name.clone(),
                    job: job_id.clone(),
                });
                if let Some(id) = &job_id
                    && let Some(j) = self.job(id)
                {
                    let card = present::progress_card(self.title(&j), Msg::Running, None, "");
                    let card = present::with_interrupt(card, name, id);
                    self.send_for_job(id, &card, |j, handle| {
                        j.stage.start();
                        j.progress = Some(handle.clone());
                    });
                    // The user's message shows the agent took it.
                    let taken =
                        long_result::taken_reaction(&j.target, j.reply_to.as_deref(), self.now_ms);
                    self.shared
                        .update(|s| taken.into_iter().for_each(|e| s.queue(e)));
                    self.throttles.entry(id.clone()).or_default().last_patch = Some(self.now);
                }
            }
            ProjectEventKind::Progress {
                summary,
                percent,
                tail,
            } => {
                self.log(LogEvent::Detection {
                    project: name.clone(),
                    detection: "progress".into(),
                    summary: Some(summary.clone()),
                    line: None,
                });
                if let Some(id) = &job_id
                    && let Some(j) = self.job(id)
                {
                    let planning = self.planning_of(&project);
                    let card = self.progress_card(&j, &summary, percent, &tail, planning);
                    let throttle = self.throttles.entry(id.clone()).or_default();
                    throttle.pending = Some(card);
                    throttle.last = Some((summary, percent, tail));
                }
                self.flush_progress();
            }
            ProjectEventKind::Planning { summary } => {
                self.planning.insert(name.clone(), summary.clone());
                // The position changed with nothing printed: the running
                // command's card shows it, with the progress it had.
                if let Some(id) = &job_id
                    && let Some(j) = self.job(id)
                    && j.progress.is_some()
                {
                    let last = (self.throttles.get(id)).and_then(|t| t.last.clone());
                    let (stage, percent, tail) =
                        last.unwrap_or_else(|| ("Running…".to_string(), None, String::new()));
                    let card = self.progress_card(
                        &j,
                        &stage,
                        percent,
                        &tail,
                        Some(present::words::planning(&summary)),
                    );
                    self.throttles.entry(id.clone()).or_default().pending = Some(card);
                }
                self.flush_progress();
            }
            ProjectEventKind::Stalled { secs } => {
                self.log(LogEvent::Detection {
                    project: name.clone(),
                    detection: "stalled".into(),
                    summary: Some(format!("no output for {secs} s")),
                    line: None,
                });
                if let Some(id) = &job_id {
                    self.on_stalled(id, secs);
                }
            }
            ProjectEventKind::Resumed { secs } => {
                self.log(LogEvent::Detection {
                    project: name.clone(),
                    detection: "resumed".into(),
                    summary: Some(format!("output after {secs} s without")),
                    line: None,
                });
                if let Some(id) = &job_id {
                    self.stall_over(id, Some(secs));
                }
            }
            ProjectEventKind::Error { line, context } => {
                self.log(LogEvent::Detection {
                    project: name.clone(),
                    detection: "error".into(),
                    summary: None,
                    line: Some(line.clone()),
                });
                let (target, reply_to) = self
                    .job_target(job)
                    .unwrap_or_else(|| (self.chat_of(&project), None));
                let command = job.as_ref().map(|j| j.text.as_str()).unwrap_or("");
                let guidance = error_guidance(&project, command, &line, &context);
                self.error(
                    &target,
                    reply_to.as_deref(),
                    Msg::AgentError,
                    &context,
                    &guidance,
                );
            }
            ProjectEventKind::Completed {
                output,
                screen,
                seconds,
                errors,
                ending,
                usage,
                mut kept,
            } => {
                self.log(LogEvent::Completed {
                    project: name.clone(),
                    job: job_id.clone(),
                    seconds,
                    errors,
                });
                let Some(id) = &job_id else {
                    self.remove_unsent(kept);
                    return;
                };
                // The streamed card closes with the result's own text.
                self.end_stream(id, Some(&output));
                self.finish_job(id, |core, j| {
                    let secs = [("seconds", seconds.to_string())];
                    let secs: Vec<(&str, &str)> =
                        secs.iter().map(|(k, v)| (*k, v.as_str())).collect();
                    let stage = match &ending {
                        TurnEnding::Finished => Msg::Finished.with(&secs),
                        TurnEnding::Interrupted(_) => Msg::StoppedAfter.with(&secs),
                        TurnEnding::Rejected(_) => Msg::RefusedByAgent.text(),
                        TurnEnding::Failed => Msg::FailedAfter.with(&secs),
                    };
                    let mut leave = Vec::new();
                    if let Some(h) = &j.progress {
                        let card = present::progress_card(core.title(j), &stage, Some(100), "");
                        leave.push(Self::patch_entry(h, &card, core.now_ms));
                    }
                    let (target, reply_to) = (&j.target, j.reply_to.as_deref());
                    match ending {
                        TurnEnding::Rejected(line) => {
                            let guidance = Msg::RefusalGuidance;
                            let title = Msg::AgentRefused.with(&[("title", &core.title(j))]);
                            let card = Self::refusal(j, &title, &line, &output, guidance);
                            leave.push(Self::new_card(target, reply_to, &card, core.now_ms).1);
                        }
                        // Its error card was the report.
                        TurnEnding::Failed => {}
                        TurnEnding::Interrupted(line) => {
                            let text = Msg::WaitsForInstead.with(&[("line", &line)]);
                            let title = Msg::StoppedTitle.with(&[("title", &core.title(j))]);
                            let card = present::info_card(title, text);
                            leave.push(Self::new_card(target, reply_to, &card, core.now_ms).1);
                        }
                        TurnEnding::Finished => {
                            // A long result is a summary card and a file.
                            let title = core.title(j);
                            let screen = (!screen.is_empty()).then_some(screen.as_str());
                            let (mut entries, unused) = long_result::result_entries(
                                kept.take(),
                                target,
                                reply_to,
                                &title,
                                &output,
                                screen,
                                core.now_ms,
                            );
                            // Tokens and context as the turn's transcript
                            // had them; none without hooks (see
                            // `present::footer`).
                            let footer = present::footer::TurnFooter {
                                seconds,
                                tokens: usage.tokens,
                                context_tokens: usage.context_tokens,
                                ..Default::default()
                            };
                            present::footer::add(&mut entries, &footer);
                            kept = unused;
                            leave.extend(entries);
                        }
                    }
                    leave.extend(long_result::done_reaction(target, reply_to, core.now_ms));
                    leave
                });
                // A kept output no message names is removed, whatever
                // became of the result.
                self.remove_unsent(kept);
            }
            ProjectEventKind::TimedOut {
                screen,
                seconds,
                unrecognised,
            } => {
                if unrecognised {
                    // Nothing on screen was recognised for a whole command:
                    // the agent's screen may have drifted from what
                    // detection knows.
                    self.log(LogEvent::DetectionDrift {
                        project: name.clone(),
                        job: job_id.clone(),
                    });
                }
                self.log(LogEvent::Timeout {
                    project: name.clone(),
                    job: job_id.clone(),
                    seconds,
                });
                let Some(id) = &job_id else { return };
                self.finish_job(id, |core, j| {
                    let title = Msg::TimedOut
                        .with(&[("seconds", &seconds.to_string()), ("title", &core.title(j))]);
                    let mut guidance = Msg::TimedOutGuidance.text();
                    if unrecognised {
                        guidance = guidance.join(" ", &Msg::NothingRecognised.text());
                    }
                    vec![core.error_entry(j, &title, &screen, &guidance)]
                });
            }
            ProjectEventKind::SessionLost { reason, retrying } => {
                // Its prompts died with the session: close their cards.
                let stale: Vec<PendingApproval> = self.shared.update(|s| {
                    let ids: Vec<ApprovalId> = s
                        .approvals
                        .values()
                        .filter(|a| a.project == project)
                        .map(|a| a.id.clone())
                        .collect();
                    ids.iter().filter_map(|id| s.approvals.remove(id)).collect()
                });
                for a in stale {
                    self.patch(&a.card, &present::approval_gone_card(&a));
                }
                self.log(LogEvent::SessionLost {
                    project: name.clone(),
                    reason: reason.clone(),
                    retrying,
                });
                if let Some((target, reply_to)) = self.job_target(job) {
                    let args = [("project", project.as_str()), ("reason", reason.as_str())];
                    let text = if retrying {
                        Msg::SessionLostRetrying.with(&args)
                    } else {
                        Msg::SessionLostAgain.with(&args)
                    };
                    self.send(
                        &target,
                        reply_to.as_deref(),
                        &present::info_card(Msg::SessionLost, &text),
                    );
                }
            }
            ProjectEventKind::AnswerResent { approval_id, tries } => {
                self.log(LogEvent::AnswerResent {
                    project: name.clone(),
                    approval: approval_id.clone(),
                    tries,
                });
            }
            ProjectEventKind::Resubmitted => {
                self.log(LogEvent::EnterPressedAgain {
                    project: name.clone(),
                    job: job_id.clone(),
                });
            }
            ProjectEventKind::NotSubmitted { screen } => {
                self.log(LogEvent::NotSubmitted {
                    project: name.clone(),
                    job: job_id.clone(),
                });
                let Some(id) = &job_id else { return };
                self.finish_job(id, |core, j| {
                    let title = Msg::NotSubmitted.with(&[("title", &core.title(j))]);
                    let guidance = Msg::NotSubmittedGuidance;
                    vec![core.error_entry(j, &title, &screen, guidance)]
                });
            }
            ProjectEventKind::SessionCreated { recovered } => {
                self.log(LogEvent::SessionCreated {
                    project: name.clone(),
                    recovered,
                });
            }
            ProjectEventKind::Failed { error } => {
                self.log(LogEvent::Failed {
                    project: name.clone(),
                    job: job_id.clone(),
                    error: error.to_string(),
                });
                let error = said(&error);
                let title = Msg::CommandFailed;
                let leave = |core: &mut Self, j: &Job| vec![core.error_entry(j, title, &error, "")];
                if job_id
                    .as_deref()
                    .and_then(|id| self.finish_job(id, leave))
                    .is_none()
                {
                    self.error(&self.chat_of(&project), None, title, &error, "");
                }
            }
            // Dispatched to the other concerns by `on_project_event`.
            ProjectEventKind::Attached { .. }
            | ProjectEventKind::HostDown { .. }
            | ProjectEventKind::Reconnected { .. }
            | ProjectEventKind::Status(_)
            | ProjectEventKind::Screen { .. }
            | ProjectEventKind::Cancelled { .. }
            | ProjectEventKind::InterruptNotConfirmed { .. }
            | ProjectEventKind::ModeSet { .. }
            | ProjectEventKind::Approval(_)
            | ProjectEventKind::ApprovalGone { .. }
            | ProjectEventKind::ScreenAtStart { .. }
            | ProjectEventKind::DialogMismatch { .. }
            | ProjectEventKind::Answered { .. }
            | ProjectEventKind::Replied { .. }
            | ProjectEventKind::Answer { .. }
            | ProjectEventKind::KeysSent { .. } => {}
        }
    }
}
