//! The bridge's core, sans-IO: chat messages, clicks, project events, hooks
//! and clock ticks in ([`Input`]), cards and log lines written to the state
//! and [`Effect`]s out (commands for project actors, answers to clicks).
//! It never waits: `Core::handle` returns at once, so one slow project
//! cannot hold up another chat. The async shell around it
//! ([`super::daemon`]) runs the project actors and carries effects out.
//!
//! - `admission`: the access policy and pairing.
//! - `jobs`: commands from chat to a project and their lifecycle cards.
//! - `approvals`: approval cards, answers by button, reply or command.
//! - `builtins`: the commands clawmux answers itself.
//! - `progress`: progress card updates, at most one per interval.
//! - `stream`: the running command's streamed answer card.
//! - `keys`: `/gsd:keys` and the progress card's Interrupt button.
//! - `inbox`: `/gsd:inbox` and reminders of prompts that wait.
//! - `files`: `/gsd:file`, a workspace file sent to the chat.
//! - `hosts`: where a project runs, host outages, adopted panes.
//! - `runs`: `clawmux run`, a shell's message taken as a chat's.

mod admission;
mod approvals;
mod builtins;
pub mod files;
mod hooks;
mod hosts;
mod inbox;
mod jobs;
mod keys;
mod progress;
mod runs;
mod stream;
#[cfg(test)]
mod tests;
mod waiting;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use super::config::Config;
use super::project::{
    ProjectCmd, ProjectError, ProjectEvent, ProjectEventKind, ProjectStatus, Reply,
};
use super::router::{self, Builtin, Route};
use crate::bridge::access::pairing::{IssuedCodes, PendingPairing};
use crate::bridge::access::policy::{Policy, RateWindow};
use crate::bridge::access::refusals::Refusals;
use crate::bridge::channels::chat::{CardClick, ChatMessage, ClickAnswer, ToastLevel};
use crate::bridge::panes::hosts::{AdoptTarget, Hosts};
use crate::bridge::present::words::said;
use crate::bridge::present::{self, ActionButton, CardAction};
use crate::bridge::runs::{RunRequest, RunStart};
use crate::bridge::texts::Msg;
use crate::control::PaneId;
use crate::hooks::HookEvent;
use crate::i18n::Text;
use crate::message::Message;
use crate::store::event_log::LogHealth;
use crate::store::state::{
    ApprovalId, CardHandle, ChatId, ChatTarget, Job, JobId, OutboxEntry, OutboxOp, ProjectName,
    RunId,
};
use crate::store::{Denial, LogEvent, SharedState};

use progress::Throttle;

/// What the core is given.
#[derive(Debug)]
#[expect(clippy::large_enum_variant, reason = "one per loop turn, moved once")]
pub enum Input {
    Message(ChatMessage),
    /// A button click; its answer comes back as [`Effect::Respond`].
    Click(CardClick),
    Project(ProjectEvent),
    Hook(HookEvent),
    /// Time passed (due progress updates go out).
    Tick,
    /// The event log started or stopped failing to write (disk full).
    LogHealth(LogHealth),
    /// A `clawmux run`; how it was taken comes back as [`Effect::Run`].
    Run(RunRequest),
    /// A run's outcome showed this prompt to its caller (see
    /// `PendingApproval::shown`).
    PromptShown(ApprovalId),
}

/// A project on another host, as [`Effect::ReadPlanning`] reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteProject {
    pub project: ProjectName,
    /// The host's name in the config.
    pub host: String,
    /// The project's directory on that host.
    pub workspace: String,
}

/// What a remote project's planning files said (see
/// [`Core::status_with_planning`]): `None` for no files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanningRead {
    pub project: ProjectName,
    pub summary: Option<String>,
}

/// What the shell must do for the core.
#[derive(Debug)]
pub enum Effect {
    /// Draw the pane's picture, write it and queue its card (off the
    /// daemon's loop: drawing takes milliseconds).
    DrawScreen(crate::bridge::screen_picture::ScreenPicture),
    /// Remove a long result's kept output that no message names (its
    /// result went as cards, or nowhere).
    RemoveFile(std::path::PathBuf),
    /// How the core took the `clawmux run` `id`: what its outcome is
    /// folded from.
    Run { id: RunId, start: RunStart },
    /// Hand `cmd` to project `project`'s actor (started on first use).
    /// If it cannot be handed over, the shell gives it back to
    /// [`Core::undeliverable`].
    Project {
        project: ProjectName,
        cmd: ProjectCmd,
    },
    /// Answer the click `event_id` (Feishu waits at most 3 s for it).
    Respond {
        event_id: String,
        answer: ClickAnswer,
    },
    /// Find the pane `/gsd:adopt` names (asking its tmux server), then
    /// hand the answer to [`Core::adopt_located`].
    Adopt {
        target: AdoptTarget,
        name: ProjectName,
        by: String,
        reply: Reply,
    },
    /// Stop project `project`'s actor (released: its pane is left as it is).
    Forget { project: ProjectName },
    /// List every server's sessions, then [`Core::info`] them to `reply`.
    ListSessions { reply: Reply },
    /// Read the GSD planning files of these projects on their hosts, then
    /// answer `/gsd:status` to `reply` with them
    /// ([`Core::status_with_planning`]).
    ReadPlanning {
        reply: Reply,
        projects: Vec<RemoteProject>,
    },
    /// Keep the pairing `code` given to `pending`'s sender among the
    /// pending ones, where `clawmux pairing approve` finds it.
    SavePairingCode {
        code: String,
        pending: PendingPairing,
    },
    /// Read `/gsd:file asked` in `workspace` on `host` (none: this
    /// machine), copy it privately, then hand it to [`Core::file_fetched`].
    FetchFile {
        project: ProjectName,
        host: Option<String>,
        workspace: String,
        asked: String,
        sender: String,
        reply: Reply,
    },
}

impl std::fmt::Debug for ProjectCmd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ProjectCmd::Submit(_) => "Submit",
            ProjectCmd::Resume(_) => "Resume",
            ProjectCmd::Answer { .. } => "Answer",
            ProjectCmd::Type { .. } => "Type",
            ProjectCmd::Cancel { .. } => "Cancel",
            ProjectCmd::Keys { .. } => "Keys",
            ProjectCmd::SetMode { .. } => "SetMode",
            ProjectCmd::Screen { .. } => "Screen",
            ProjectCmd::HookStop { .. } => "HookStop",
            ProjectCmd::HookFailure(_) => "HookFailure",
            ProjectCmd::HookApproval => "HookApproval",
            ProjectCmd::HookPermission(_) => "HookPermission",
            ProjectCmd::HookTask(_) => "HookTask",
        })
    }
}

pub struct Core {
    config: Arc<Config>,
    shared: SharedState,
    /// The tmux servers: where each host's workspaces are.
    hosts: Arc<Hosts>,
    policy: Policy,
    /// The senders the operator paired, as the shell last read them
    /// ([`Core::set_paired`]).
    paired: Vec<String>,
    /// The pairing codes given out (the shell saves each new one).
    pairing_codes: IssuedCodes,
    /// Agent pane (`%N`) -> project, for hooks.
    panes: HashMap<PaneId, ProjectName>,
    /// What proves a hook comes from a project's own agent.
    hook_key: crate::hooks::token::HookKey,
    /// What each project last said it is doing (for `/gsd:status`,
    /// answered without asking the projects).
    statuses: HashMap<ProjectName, ProjectStatus>,
    /// Project names an adopt is finding the pane for: taken until it
    /// ends, so two adopts (or an adopt and a new project) under one name
    /// cannot both succeed.
    adopting: HashSet<ProjectName>,
    throttles: HashMap<JobId, Throttle>,
    /// Each sender's refusals of the last minute: how many were logged
    /// (and answered), how many dropped (see `admission`).
    refusals: Refusals,
    /// The senders told once that the bot does not serve them.
    denied_told: HashSet<String>,
    /// Each chat's kind, from its messages (see `admit_click`).
    chat_kinds: HashMap<ChatId, crate::bridge::access::policy::ChatKind>,
    /// A project actor's id of a prompt -> the persisted approval it is.
    aliases: HashMap<ApprovalId, ApprovalId>,
    /// Projects whose agent said it waits (`Notification` hooks).
    waiting: HashMap<ProjectName, waiting::Waiting>,
    /// Each project's GSD planning position as last read on its host (by
    /// its planning watch, or for `/gsd:status`): what a remote project's
    /// cards show without asking its host again.
    planning: HashMap<ProjectName, String>,
    /// Where the people reading the cards' clock times are (the shell's
    /// machine's zone, [`Core::set_time_zone`]; UTC until told).
    time_zone: jiff::tz::TimeZone,
    /// The time of the input being handled.
    now: Instant,
    /// The same on the wall clock, in ms since the Unix epoch (stamps on
    /// records and cards): the core reads no clock of its own.
    now_ms: u64,
    effects: Vec<Effect>,
}

impl Core {
    /// Counts senders' messages in `rates`, the window the image fetcher
    /// shares (see [`RateWindow`]).
    pub fn share_rates(&mut self, rates: RateWindow) {
        self.policy = Policy::with_rates(self.config.policy.clone(), rates);
    }

    /// The senders the operator paired (`clawmux pairing approve`, another
    /// process: the shell reads its file before each chat input).
    pub fn set_paired(&mut self, paired: Vec<String>) {
        self.paired = paired;
    }

    /// The zone cards' clock times are in (read by the shell: the core
    /// reads no environment).
    pub fn set_time_zone(&mut self, zone: jiff::tz::TimeZone) {
        self.time_zone = zone;
    }

    /// A core over `shared` (the state and event log), starting at `now`;
    /// `hook_key` proves a hook comes from a project's own agent (loaded by
    /// the shell: the core opens no file and reads no clock to start).
    pub fn new(
        config: Arc<Config>,
        shared: SharedState,
        hosts: Arc<Hosts>,
        hook_key: crate::hooks::token::HookKey,
        now: Instant,
    ) -> Core {
        Core {
            hosts,
            policy: Policy::new(config.policy.clone()),
            paired: Vec::new(),
            pairing_codes: IssuedCodes::default(),
            hook_key,
            config,
            shared,
            panes: HashMap::new(),
            statuses: HashMap::new(),
            adopting: HashSet::new(),
            throttles: HashMap::new(),
            refusals: Refusals::default(),
            denied_told: HashSet::new(),
            chat_kinds: HashMap::new(),
            aliases: HashMap::new(),
            waiting: HashMap::new(),
            planning: HashMap::new(),
            time_zone: jiff::tz::TimeZone::UTC,
            now,
            now_ms: 0,
            effects: Vec::new(),
        }
    }

    /// Handles one input at `now` (`now_ms` on the wall clock); returns
    /// what the shell must do.
    pub fn handle(&mut self, now: Instant, now_ms: u64, input: Input) -> Vec<Effect> {
        self.now = now;
        self.now_ms = now_ms;
        match input {
            Input::Message(m) => self.on_message(m),
            Input::Click(c) => self.on_click(c),
            Input::Project(e) => self.on_project_event(e),
            Input::Hook(h) => self.on_hook(h),
            Input::Tick => {
                self.flush_progress();
                self.remind_due();
                self.summarise_refusals();
            }
            Input::LogHealth(health) => self.on_log_health(health),
            Input::Run(run) => self.on_run(run),
            Input::PromptShown(approval) => self.prompt_shown(&approval),
        }
        std::mem::take(&mut self.effects)
    }

    /// `cmd` could not be handed to `project`: whoever asked is told, and
    /// what it started is undone.
    pub fn undeliverable(&mut self, project: &ProjectName, cmd: ProjectCmd, error: &ProjectError) {
        self.log(LogEvent::Failed {
            project: project.clone(),
            job: None,
            error: error.to_string(),
        });
        let error = said(error);
        let reply = match cmd {
            ProjectCmd::Submit(job) | ProjectCmd::Resume(job) => {
                self.finish_job(&job.id, |_, _| Vec::new());
                Some((job.target, job.reply_to))
            }
            ProjectCmd::Answer {
                approval_id, reply, ..
            } => {
                self.stop_answering(&approval_id);
                Some((reply.target, reply.reply_to))
            }
            ProjectCmd::Type {
                approval_id, reply, ..
            } => {
                self.stop_answering(&approval_id);
                Some((reply.target, reply.reply_to))
            }
            ProjectCmd::Cancel { reply, .. }
            | ProjectCmd::Keys { reply, .. }
            | ProjectCmd::SetMode { reply, .. }
            | ProjectCmd::Screen { reply } => Some((reply.target, reply.reply_to)),
            ProjectCmd::HookStop { .. }
            | ProjectCmd::HookFailure(_)
            | ProjectCmd::HookApproval
            | ProjectCmd::HookPermission(_)
            | ProjectCmd::HookTask(_) => None,
        };
        if let Some((target, reply_to)) = reply {
            self.error(
                &target,
                reply_to.as_deref(),
                Msg::ProjectUnavailable,
                error,
                "",
            );
        }
    }

    /// The projects a restart must bring back: those with unfinished
    /// commands or pending approvals (so their buttons still work), and
    /// the commands to resume, oldest first.
    pub fn to_resume(&self) -> (Vec<ProjectName>, Vec<Job>) {
        let (jobs, approvals) = self.shared.read(|s| (s.jobs.clone(), s.approvals.clone()));
        let mut projects: Vec<ProjectName> =
            approvals.values().map(|a| a.project.clone()).collect();
        projects.extend(jobs.iter().map(|j| j.project.clone()));
        projects.sort();
        projects.dedup();
        (projects, jobs)
    }

    fn tell_project(&mut self, project: &ProjectName, cmd: ProjectCmd) {
        self.effects.push(Effect::Project {
            project: project.clone(),
            cmd,
        });
    }

    fn respond(&mut self, click: &CardClick, answer: ClickAnswer) {
        self.effects.push(Effect::Respond {
            event_id: click.event_id.clone(),
            answer,
        });
    }

    /// Every chat that uses a project hears once that the event log stopped
    /// (or started again) writing: its records are counted meanwhile, but
    /// an operator tailing it sees nothing.
    fn on_log_health(&mut self, health: LogHealth) {
        let text = match health {
            LogHealth::Failing { first_error, .. } => {
                Msg::LogFailing.with(&[("error", &first_error.to_string())])
            }
            LogHealth::Ok => Msg::LogOk.text(),
        };
        let mut chats: Vec<ChatId> = self.shared.read(|s| s.chats.keys().cloned().collect());
        chats.sort();
        chats.dedup();
        for chat in chats {
            self.send(
                &target_of(&chat),
                None,
                &present::info_card(Msg::EventLog, &text),
            );
        }
    }

    fn log(&self, event: LogEvent) {
        self.shared.log.event(&event);
    }

    /// A new card for the outbox, and its handle (for later patches).
    fn new_card(
        target: &ChatTarget,
        reply_to: Option<&str>,
        card: &Message,
        now_ms: u64,
    ) -> (CardHandle, OutboxEntry) {
        let handle = CardHandle::random();
        let entry = OutboxEntry {
            uuid: uuid::Uuid::new_v4().to_string(),
            op: OutboxOp::Send {
                target: target.clone(),
                handle: handle.clone(),
                reply_to: reply_to.map(String::from),
                image: None,
            },
            message: Some(card.clone()),
            created_ms: now_ms,
        };
        (handle, entry)
    }

    /// Queues a new card; returns its handle (for later patches).
    fn send(&self, target: &ChatTarget, reply_to: Option<&str>, card: &Message) -> CardHandle {
        let (handle, entry) = Self::new_card(target, reply_to, card, self.now_ms);
        self.shared.update(|s| s.queue(entry));
        handle
    }

    /// Sends `card` for job `id` and marks its record (given the card's
    /// handle) in one state update: after a restart, both or neither.
    fn send_for_job(&mut self, id: &str, card: &Message, mark: impl FnOnce(&mut Job, &CardHandle)) {
        self.shared.update(|s| {
            let Some(job) = s.jobs.iter_mut().find(|j| j.id == id) else {
                return;
            };
            let (handle, entry) =
                Self::new_card(&job.target, job.reply_to.as_deref(), card, self.now_ms);
            mark(job, &handle);
            s.queue(entry);
        });
    }

    /// Does the command `id`'s result go to a chat (not the console or a
    /// `clawmux run`)? Only there is a long result sent as a file, so the
    /// shell keeps a copy of its output for that case alone.
    pub fn answers_in_a_chat(&self, id: &str) -> bool {
        (self.job(id)).is_some_and(|j| matches!(j.target, ChatTarget::Chat { .. }))
    }

    /// The unfinished command `id`, as the state file has it.
    fn job(&self, id: &str) -> Option<Job> {
        self.shared
            .read(|s| s.jobs.iter().find(|j| j.id == id).cloned())
    }

    /// An update of the card `handle` for the outbox.
    fn patch_entry(handle: &CardHandle, card: &Message, now_ms: u64) -> OutboxEntry {
        OutboxEntry {
            uuid: uuid::Uuid::new_v4().to_string(),
            op: OutboxOp::Patch {
                handle: handle.clone(),
            },
            message: Some(card.clone()),
            created_ms: now_ms,
        }
    }

    fn patch(&self, handle: &CardHandle, card: &Message) {
        let entry = Self::patch_entry(handle, card, self.now_ms);
        self.shared.update(|s| s.queue(entry));
    }

    /// The buttons of an error card: the way back to the projects and the help.
    fn way_back() -> Vec<ActionButton> {
        vec![
            ActionButton::new(Msg::Projects, CardAction::Projects),
            ActionButton::new(Msg::Help, CardAction::Help),
        ]
    }

    fn error_card(
        title: impl Into<Text>,
        text: impl Into<Text>,
        guidance: impl Into<Text>,
    ) -> Message {
        present::error_card(title, text, guidance, Self::way_back())
    }

    /// An error card in answer to the command `job`, for the outbox.
    fn error_entry(
        &self,
        job: &Job,
        title: impl Into<Text>,
        text: impl Into<Text>,
        guidance: impl Into<Text>,
    ) -> OutboxEntry {
        let card = Self::error_card(title, text, guidance);
        Self::new_card(&job.target, job.reply_to.as_deref(), &card, self.now_ms).1
    }

    fn error(
        &self,
        target: &ChatTarget,
        reply_to: Option<&str>,
        title: impl Into<Text>,
        text: impl Into<Text>,
        guidance: impl Into<Text>,
    ) {
        let card = Self::error_card(title, text, guidance);
        self.send(target, reply_to, &card);
    }

    fn on_message(&mut self, m: ChatMessage) {
        if !self.admit(&m) {
            return;
        }
        self.log(LogEvent::Message {
            sender: m.sender.clone(),
            text: m.text.clone(),
            chat: target_id(&m.target),
        });
        let reply_to = Some(m.message_id.as_str()).filter(|_| m.target != ChatTarget::Console);
        if let Some(why) = &m.image_not_saved {
            let why = said(why);
            let text =
                Msg::ImageNotSavedText.with_each(|lang| vec![("why", why.get(lang).to_string())]);
            return self.error(&m.target, reply_to, Msg::ImageNotSaved, text, "");
        }
        if self.answer_by_reply(&m) {
            return;
        }
        match router::route(&m.text) {
            Route::Usage(usage) => {
                self.error(&m.target, reply_to, Msg::MissingArgument, said(&usage), "");
            }
            Route::Unknown {
                command,
                suggestion,
            } => {
                let hint = match suggestion {
                    Some(s) => Msg::DidYouMean.with(&[("suggestion", &s)]),
                    None => Msg::SendHelp.text(),
                };
                self.error(&m.target, reply_to, Msg::UnknownCommand, &command, hint);
            }
            Route::Builtin(b) => self.builtin(b, &m.target, reply_to, &m.sender),
            Route::Agent(text) => self.submit(&m.target, reply_to, &text, &m.sender),
        }
    }

    fn current_project(&self, target: &ChatTarget) -> Option<ProjectName> {
        let chat = target_id(target);
        self.shared.read(|s| {
            s.chats
                .get(&chat)
                .filter(|p| s.projects.contains_key(*p))
                .cloned()
        })
    }

    fn on_click(&mut self, c: CardClick) {
        let name = CardAction::name_of(&c.value).unwrap_or("");
        self.log(LogEvent::Click {
            operator: c.operator.clone(),
            action: name.to_string(),
            value: c.value.clone(),
        });
        if !self.admit_click(&c) {
            let text = Msg::NotAllowedClick;
            return self.respond(&c, ClickAnswer::toast(ToastLevel::Error, text));
        }
        let answer = match CardAction::from_value(&c.value) {
            Ok(CardAction::Approval(choice)) => return self.click_approval(c, choice),
            Ok(CardAction::Command(choice)) => self.click_command(&c, choice),
            Ok(CardAction::Interrupt(choice)) => self.click_interrupt(&c, choice),
            Ok(CardAction::SelectProject) => match &c.option {
                Some(p) => {
                    if self.use_project(&c.target, None, p, &c.operator) {
                        ClickAnswer::toast(
                            ToastLevel::Success,
                            Msg::NowUsing.with(&[("project", p)]),
                        )
                    } else {
                        ClickAnswer::toast(
                            ToastLevel::Error,
                            Msg::NotSwitched.with(&[("project", p)]),
                        )
                    }
                }
                None => ClickAnswer::toast(ToastLevel::Warning, Msg::NoProjectChosen),
            },
            Ok(action @ (CardAction::Help | CardAction::Projects | CardAction::Status)) => {
                let b = match action {
                    CardAction::Help => Builtin::Help,
                    CardAction::Projects => Builtin::Projects,
                    _ => Builtin::Status,
                };
                self.builtin(b, &c.target, None, &c.operator);
                ClickAnswer::toast(ToastLevel::Info, Msg::Sent)
            }
            Err(e) => {
                self.log_denied(
                    &c.operator,
                    Denial {
                        operator: Some(c.operator.clone()),
                        reason: e.to_string(),
                        value: Some(c.value.clone()),
                        ..Default::default()
                    },
                );
                ClickAnswer::toast(ToastLevel::Error, Msg::ButtonNotRecognised)
            }
        };
        self.respond(&c, answer);
    }

    fn on_project_event(&mut self, e: ProjectEvent) {
        let project = e.project.clone();
        if matches!(
            e.kind,
            ProjectEventKind::Started
                | ProjectEventKind::Answered { .. }
                | ProjectEventKind::Replied { .. }
        ) {
            self.not_waiting(project.as_str());
        }
        match e.kind {
            ProjectEventKind::Attached { pane } => {
                self.panes.retain(|_, p| *p != project);
                // Hooks come from the local server's panes only: pane ids
                // of other servers would collide with them.
                if self.is_local(project.as_str()) {
                    self.panes.insert(pane, e.project.clone());
                }
            }
            ProjectEventKind::HostDown { error } => self.on_host_down(&e.project, &e.job, &error),
            ProjectEventKind::Reconnected { reason } => {
                self.on_reconnected(&e.project, &e.job, &reason)
            }
            ProjectEventKind::Status(status) => {
                let before = self.statuses.get(&project).and_then(|s| s.mode);
                if let Some(mode) = status.mode.filter(|m| Some(*m) != before)
                    && let Some(unasked) = present::words::mode_unasked(mode)
                {
                    // Said once per change: approvals would otherwise stop
                    // without a word.
                    let text = Msg::ApprovalsOffText.with_each(|lang| {
                        vec![
                            ("project", project.to_string()),
                            ("mode", mode.to_string()),
                            ("unasked", unasked.get(lang).to_string()),
                        ]
                    });
                    let target = self.chat_of(project.as_str());
                    self.send(&target, None, &present::info_card(Msg::ApprovalsOff, &text));
                }
                self.statuses.insert(project, status);
            }
            ProjectEventKind::Screen {
                reply,
                screen,
                grid,
            } => {
                let settings = &self.config.screen;
                if let (Ok(screen), Some(grid), true, ChatTarget::Chat { .. }) =
                    (&screen, grid, settings.picture, &reply.target)
                {
                    // Drawn by the shell off the loop; the card is queued when
                    // done.
                    let picture = crate::bridge::screen_picture::ScreenPicture {
                        shared: self.shared.clone(),
                        fonts: settings.fonts.clone(),
                        target: reply.target.clone(),
                        reply_to: reply.reply_to.clone(),
                        project: project.clone(),
                        text: screen.clone(),
                        grid,
                    };
                    self.effects.push(Effect::DrawScreen(picture));
                    return;
                }
                let card = match screen {
                    Ok(screen) => present::screen_card(project.as_str(), &screen),
                    Err(why) => {
                        let why = present::words::said(&why);
                        let text = Msg::NoPaneAttached.with_each(|lang| {
                            vec![
                                ("project", project.to_string()),
                                ("why", why.get(lang).to_string()),
                            ]
                        });
                        present::info_card(Msg::NoScreen, &text)
                    }
                };
                self.send(&reply.target, reply.reply_to.as_deref(), &card);
            }
            ProjectEventKind::Cancelled {
                by,
                keys,
                reply,
                result,
            } => self.cancelled(&project, &by, &keys, &reply, result),
            ProjectEventKind::InterruptNotConfirmed {
                by,
                keys,
                reply,
                waited,
            } => self.interrupt_not_confirmed(&project, &by, &keys, &reply, waited),
            ProjectEventKind::ModeSet { reply, result, .. } => {
                self.mode_set(project.as_str(), &reply, result)
            }
            kind @ (ProjectEventKind::Approval(_)
            | ProjectEventKind::ApprovalGone { .. }
            | ProjectEventKind::ScreenAtStart { .. }
            | ProjectEventKind::DialogMismatch { .. }
            | ProjectEventKind::Answered { .. }
            | ProjectEventKind::Replied { .. }) => self.on_approval_event(&e.project, &e.job, kind),
            ProjectEventKind::Answer { text } => self.on_answer(&e.job, &text),
            ProjectEventKind::KeysSent {
                keys,
                by,
                reply,
                result,
            } => self.keys_sent(&project, &keys, &by, &reply, result),
            kind => self.on_job_event(&e.project, &e.job, kind),
        }
    }

    fn job_target(&self, job: &Option<Job>) -> Option<(ChatTarget, Option<String>)> {
        let job = job.as_ref()?;
        Some((job.target.clone(), job.reply_to.clone()))
    }

    /// Where news of a project goes when no command asked: the first chat
    /// that uses it, else the console.
    fn chat_of(&self, project: &str) -> ChatTarget {
        self.chat_for(project).unwrap_or(ChatTarget::Console)
    }

    /// The chat a project's news goes to: the first whose current project
    /// it is, else the one that used it last; none if no chat ever did.
    fn chat_for(&self, project: &str) -> Option<ChatTarget> {
        self.shared.read(|s| {
            let current = (s.chats.iter()).find(|(_, p)| *p == project);
            let used = || s.projects.get(project)?.chats.first();
            current.map(|(chat, _)| chat).or_else(used).map(target_of)
        })
    }
}

/// The chat id a target stands for (`console` for the console).
fn target_id(t: &ChatTarget) -> ChatId {
    match t {
        ChatTarget::Chat { id } => id.clone(),
        ChatTarget::Console => ChatId::console(),
        ChatTarget::Run { .. } => ChatId::run(),
        ChatTarget::User { id } => ChatId::of_user(id),
    }
}

fn target_of(chat: &ChatId) -> ChatTarget {
    if *chat == ChatId::console() {
        ChatTarget::Console
    } else {
        ChatTarget::Chat { id: chat.clone() }
    }
}

fn status_row(name: &str, host: &Text, status: Option<&ProjectStatus>) -> Text {
    use present::words::{State, state};
    let row = |state: Text, mode: &str, progress: &str, queued: &str| {
        let row = |lang| {
            let (state, host) = (state.get(lang), host.get(lang));
            format!("| {name} | {state} | {mode} | {progress} | {queued} | {host} |\n")
        };
        Text::both(row(crate::i18n::Lang::En), row(crate::i18n::Lang::Zh))
    };
    let Some(s) = status else {
        return row(state(State::NotAttached), "", "", "");
    };
    let shown = if s.starting {
        State::Starting
    } else if s.awaiting_approval.is_some() {
        State::AwaitingApproval
    } else if s.busy || s.running.is_some() {
        State::Busy
    } else if s.attached {
        State::Idle
    } else {
        State::NotAttached
    };
    // The progress line is the agent's own words, shown as they are.
    let progress = s.last_progress.as_deref().unwrap_or("");
    let mode = s.mode.map_or("", |m| m.name());
    row(state(shown), mode, progress, &s.queued.to_string())
}
