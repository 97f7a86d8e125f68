//! The commands clawmux answers itself: help, projects, use, new-project,
//! status, mode, cancel and answer.
//!
//! Two share a name with GSD's own (see [`crate::bridge::router`]): the help
//! says how to reach GSD's, and a new project runs GSD's `new-project` in it.
//! The status adds what each local project's GSD planning files say.

use super::{Core, Effect, PlanningRead, RemoteProject, status_row, target_id};
use crate::agents::claude::PermissionMode;
use crate::bridge::access::policy::{ChatKind, Decision};
use crate::bridge::channels::chat::{CardClick, ClickAnswer, ToastLevel};
use crate::bridge::names;
use crate::bridge::present;
use crate::bridge::present::CommandChoice;
use crate::bridge::present::words::said;
use crate::bridge::project::{ProjectCmd, ProjectError, Reply};
use crate::bridge::router::Builtin;
use crate::bridge::texts::Msg;
use crate::gsd::planning::Planning;
use crate::i18n::Text;
use crate::message::Message;
use crate::store::state::Job;
use crate::store::state::{ChatTarget, ProjectName, ProjectRecord};
use crate::store::{Denial, LogEvent};

impl Core {
    pub(super) fn builtin(
        &mut self,
        b: Builtin,
        target: &ChatTarget,
        reply_to: Option<&str>,
        sender: &str,
    ) {
        let reply = || Reply {
            target: target.clone(),
            reply_to: reply_to.map(String::from),
        };
        match b {
            Builtin::Adopt { target: pane, name } => {
                self.adopt(reply(), sender, &pane, name.as_deref())
            }
            Builtin::Release(name) => self.release(target, reply_to, sender, &name),
            Builtin::Sessions if !self.is_approver(sender) => {
                self.log_denied(
                    sender,
                    Denial {
                        sender: Some(sender.to_string()),
                        reason: "not an approver: /gsd:sessions".into(),
                        ..Default::default()
                    },
                );
                let text = Msg::OnlyApproversSessions;
                self.error(target, reply_to, Msg::NotAllowed, text, "");
            }
            Builtin::Sessions => self.effects.push(Effect::ListSessions { reply: reply() }),
            Builtin::Screen => match self.current_project(target) {
                Some(p) if !self.may_reach(sender, p.as_str(), target, reply_to, "/gsd:screen") => {
                }
                Some(project) => self.tell_project(&project, ProjectCmd::Screen { reply: reply() }),
                None => self.error(target, reply_to, Msg::NoProjectSelected, "/gsd:screen", ""),
            },
            Builtin::Help => {
                let text = Msg::HelpText.text().join("\n\n", &Msg::GsdHelpNote.text());
                self.send(target, reply_to, &present::info_card(Msg::HelpTitle, &text));
            }
            Builtin::Projects => {
                let names: Vec<ProjectName> =
                    self.shared.read(|s| s.projects.keys().cloned().collect());
                let current = self.current_project(target);
                self.send(
                    target,
                    reply_to,
                    &present::projects_card(&names, current.as_ref().map(ProjectName::as_str)),
                );
            }
            Builtin::Use(name) => {
                self.use_project(target, reply_to, &name, sender);
            }
            Builtin::NewProject {
                name,
                gsd_args,
                agent,
            } => self.new_project(target, reply_to, &name, &gsd_args, agent, sender),
            Builtin::Status => self.status(target, reply_to),
            Builtin::Mode(mode) => self.mode(target, reply_to, sender, mode),
            Builtin::Keys(keys) => self.keys(target, reply_to, sender, keys),
            Builtin::Inbox => self.inbox(target, reply_to, sender),
            Builtin::File(path) => self.send_file(target, reply_to, sender, &path),
            Builtin::Remind(secs) => self.remind(target, reply_to, secs),
            Builtin::Cancel => {
                let Some(project) = self.current_project(target) else {
                    self.error(target, reply_to, Msg::NoProjectSelected, "/gsd:cancel", "");
                    return;
                };
                if !self.may_reach(sender, project.as_str(), target, reply_to, "/gsd:cancel") {
                    return;
                }
                // Esc is also an answer: into a waiting permission dialog it
                // rejects it. So, like the Interrupt button, approvers only.
                if !self.is_approver(sender) {
                    self.log_denied(
                        sender,
                        Denial {
                            operator: Some(sender.to_string()),
                            reason: "not an approver: /gsd:cancel".into(),
                            ..Default::default()
                        },
                    );
                    let text = Msg::OnlyApproversInterrupt;
                    self.error(target, reply_to, Msg::NotAllowed, text, "");
                    return;
                }
                let reply = Reply {
                    target: target.clone(),
                    reply_to: reply_to.map(String::from),
                };
                self.cancel(&project, sender, reply);
            }
            Builtin::Answer(key) => {
                let Some(project) = self.current_project(target) else {
                    self.error(target, reply_to, Msg::NoProjectSelected, "/gsd:answer", "");
                    return;
                };
                let Some(approval) = self.newest_approval(&project) else {
                    self.error(
                        target,
                        reply_to,
                        Msg::NoApprovalPending,
                        format!("/gsd:answer {key}"),
                        "",
                    );
                    return;
                };
                let reply = Reply {
                    target: target.clone(),
                    reply_to: reply_to.map(String::from),
                };
                // The number the card shows by an option answers it too.
                let key = super::approvals::shown_key(&approval.options, &key);
                match self.check_answer(&approval, &key, sender) {
                    Ok(label) => {
                        self.type_answer(&approval, &key, sender, &label, reply);
                    }
                    Err(e) => self.error(target, reply_to, Msg::CouldNotAnswer, said(&e), ""),
                }
            }
        }
    }

    /// Makes `name` the chat's current project; false when refused.
    pub(super) fn use_project(
        &mut self,
        target: &ChatTarget,
        reply_to: Option<&str>,
        name: &str,
        sender: &str,
    ) -> bool {
        let project = match ProjectName::parse(name) {
            Ok(project) => project,
            Err(e) => {
                self.error(target, reply_to, Msg::InvalidProjectName, name, said(&e));
                return false;
            }
        };
        let exists = self.shared.read(|s| s.projects.contains_key(name));
        if !exists {
            let guidance = Msg::CreateOrList.with(&[("name", name)]);
            self.error(target, reply_to, Msg::NoSuchProject, name, &guidance);
            return false;
        }
        if !self.may_reach(sender, name, target, reply_to, "/gsd:use") {
            return false;
        }
        let chat = target_id(target);
        self.shared.update(|s| {
            s.chats.insert(chat.clone(), project.clone());
            if let Some(p) = s.projects.get_mut(&project) {
                p.used_in(&chat);
            }
        });
        self.log(LogEvent::Use { project, chat });
        self.send(
            target,
            reply_to,
            &present::info_card(
                Msg::ProjectSelected,
                Msg::MessagesGoTo.with(&[("name", name)]),
            ),
        );
        true
    }

    pub(super) fn new_project(
        &mut self,
        target: &ChatTarget,
        reply_to: Option<&str>,
        name: &str,
        gsd_args: &str,
        agent: Option<String>,
        sender: &str,
    ) {
        let (project, host) = match names::split_project_host(name) {
            Ok((project, asked)) => {
                let name = project.as_str();
                // A project stays on the host it was made on: `web@desk`
                // for a `web` elsewhere would quietly go there instead.
                let existing = self
                    .shared
                    .read(|s| s.projects.get(name).map(|p| p.host.clone()));
                // (An unknown host is said as such, below.)
                if let (Some(asked), Some(existing)) = (asked, existing)
                    && existing.as_deref().unwrap_or("local") != asked
                    && self.hosts.workspace_root(Some(asked)).is_ok()
                {
                    let on = existing.as_deref().unwrap_or("local");
                    let text =
                        Msg::RunsElsewhere.with(&[("name", name), ("on", on), ("asked", asked)]);
                    self.error(target, reply_to, Msg::ProjectElsewhere, &text, "");
                    return;
                }
                let host = asked.or(self.config.host_for(name));
                (project, host)
            }
            Err(e) => {
                self.error(target, reply_to, Msg::InvalidProjectName, name, said(&e));
                return;
            }
        };
        let name = project.as_str();
        if self.adopting.contains(name) {
            let text = Msg::BeingAdopted.with(&[("name", name)]);
            self.error(target, reply_to, Msg::NameTaken, text, Msg::PickAnotherName);
            return;
        }
        let workspace = match self.hosts.workspace_root(host) {
            Ok(root) => root.join(name),
            Err(e) => {
                let guidance = Msg::HostsFromConfig;
                self.error(target, reply_to, Msg::UnknownHost, said(&e), guidance);
                return;
            }
        };
        let host = host.map(str::to_string);
        // The project's pane makes its workspace where it runs, here or on
        // its host (see PaneSpec), and says if it cannot: the core touches
        // no file system.
        let chat = target_id(target);
        let ws = workspace.display().to_string();
        let existed = self.shared.update(|s| {
            s.chats.insert(chat.clone(), project.clone());
            let existed = s.projects.contains_key(name);
            s.projects
                .entry(project.clone())
                .or_insert_with(|| ProjectRecord {
                    workspace: ws.clone(),
                    created_ms: self.now_ms,
                    host: host.clone(),
                    agent: agent.clone(),
                    ..ProjectRecord::default()
                })
                .used_in(&chat);
            existed
        });
        self.log(LogEvent::Project {
            project: project.clone(),
            workspace: ws.clone(),
            created: !existed,
        });
        let text = match (existed, host.as_deref()) {
            (true, _) => Msg::AlreadyExists.with(&[("name", name)]),
            (false, None) => Msg::Created.with(&[("name", name), ("workspace", &ws)]),
            (false, Some(h)) => {
                Msg::CreatedOnHost.with(&[("name", name), ("host", h), ("workspace", &ws)])
            }
        };
        self.send(
            target,
            reply_to,
            &present::info_card(Msg::ProjectReady, &text),
        );
        if !existed {
            // GSD's own new-project, in the spelling its install takes (the
            // project's pane rewrites it as it types it).
            let command = match gsd_args {
                "" => "/gsd:new-project".to_string(),
                args => format!("/gsd:new-project {args}"),
            };
            self.run_in(name, target, reply_to, &command, sender);
        }
    }

    /// `/gsd:status`: at once when every project is on this machine;
    /// else once the remote projects' planning files are read on their
    /// hosts ([`Effect::ReadPlanning`]), off the daemon's loop.
    pub(super) fn status(&mut self, target: &ChatTarget, reply_to: Option<&str>) {
        let projects: Vec<RemoteProject> = self.shared.read(|s| {
            (s.projects.iter())
                .filter_map(|(name, p)| {
                    Some(RemoteProject {
                        project: name.clone(),
                        host: p.host.clone()?,
                        workspace: p.workspace.clone(),
                    })
                })
                .collect()
        });
        let projects: Vec<_> = (projects.into_iter())
            .filter(|p| self.hosts.is_remote(&p.host))
            .collect();
        if projects.is_empty() {
            return self.status_card(target, reply_to);
        }
        let reply = Reply {
            target: target.clone(),
            reply_to: reply_to.map(String::from),
        };
        self.effects.push(Effect::ReadPlanning { reply, projects });
    }

    /// `/gsd:status` answered with what remote projects' planning files
    /// said (a host that did not answer is missing, and its project keeps
    /// what was read last).
    pub fn status_with_planning(&mut self, reply: &Reply, read: Vec<PlanningRead>) {
        for PlanningRead { project, summary } in read {
            match summary {
                Some(summary) => self.planning.insert(project, summary),
                None => self.planning.remove(&project),
            };
        }
        self.status_card(&reply.target, reply.reply_to.as_deref());
    }

    fn status_card(&mut self, target: &ChatTarget, reply_to: Option<&str>) {
        let names: Vec<ProjectName> = self.shared.read(|s| s.projects.keys().cloned().collect());
        if names.is_empty() {
            self.send(
                target,
                reply_to,
                &present::info_card(Msg::Status, Msg::NoProjectsYet),
            );
            return;
        }
        let mut md = Msg::StatusHeader.text();
        for name in names {
            let host = self.host_label(name.as_str());
            md = md.join(
                "",
                &status_row(name.as_str(), &host, self.statuses.get(name.as_str())),
            );
        }
        let planning = self.planning_lines();
        if !planning.get(crate::i18n::Lang::En).is_empty() {
            md = md.join("", &Msg::GsdPlanning.text()).join("", &planning);
        }
        self.send(target, reply_to, &present::info_card(Msg::Status, &md));
    }

    /// `/gsd:mode [MODE]`: the current project's permission mode, or (for
    /// approvers) a switch to `mode`.
    fn mode(
        &mut self,
        target: &ChatTarget,
        reply_to: Option<&str>,
        sender: &str,
        mode: Option<PermissionMode>,
    ) {
        let Some(project) = self.current_project(target) else {
            self.error(target, reply_to, Msg::NoProjectSelected, "/gsd:mode", "");
            return;
        };
        let Some(mode) = mode else {
            let shown = self.statuses.get(&project).and_then(|s| s.mode);
            let text = match shown {
                Some(m) => {
                    let reach = present::words::mode_reach(m);
                    Msg::ModeIs.with_each(|lang| {
                        vec![
                            ("project", project.to_string()),
                            ("mode", m.to_string()),
                            ("reach", reach.get(lang).to_string()),
                        ]
                    })
                }
                None => Msg::NoModeYet.with(&[("project", project.as_str())]),
            };
            self.send(
                target,
                reply_to,
                &present::info_card(Msg::PermissionMode, &text),
            );
            return;
        };
        if !self.is_approver(sender) {
            self.log_denied(
                sender,
                Denial {
                    operator: Some(sender.to_string()),
                    reason: "not an approver: /gsd:mode".into(),
                    ..Default::default()
                },
            );
            let text = Msg::OnlyApproversMode;
            self.error(target, reply_to, Msg::NotAllowed, text, "");
            return;
        }
        let cmd = ProjectCmd::SetMode {
            mode,
            by: sender.to_string(),
            reply: Reply {
                target: target.clone(),
                reply_to: reply_to.map(String::from),
            },
        };
        self.tell_project(&project, cmd);
    }

    /// The outcome of `/gsd:mode <mode>`.
    pub(super) fn mode_set(
        &mut self,
        project: &str,
        reply: &Reply,
        result: Result<PermissionMode, ProjectError>,
    ) {
        let (target, reply_to) = (&reply.target, reply.reply_to.as_deref());
        match result {
            Ok(mode) => {
                let reach = present::words::mode_reach(mode);
                let text = Msg::ModeNow.with_each(|lang| {
                    vec![
                        ("project", project.to_string()),
                        ("mode", mode.to_string()),
                        ("reach", reach.get(lang).to_string()),
                    ]
                });
                self.send(
                    target,
                    reply_to,
                    &present::info_card(Msg::PermissionMode, &text),
                );
            }
            Err(e) => self.error(target, reply_to, Msg::CouldNotSwitchMode, said(&e), ""),
        }
    }

    /// One line per local project with GSD planning files: phase N of M,
    /// plans done, its step, and whether a question waits on the user.
    fn planning_lines(&self) -> Text {
        let names: Vec<ProjectName> = self.shared.read(|s| s.projects.keys().cloned().collect());
        let mut md = Text::default();
        for name in names {
            let Some(line) = self.planning_of(name.as_str()) else {
                continue;
            };
            let waiting =
                (self.statuses.get(name.as_str())).is_some_and(|s| s.awaiting_approval.is_some());
            let waits = if waiting {
                Msg::WaitsOnYou.text()
            } else {
                Text::default()
            };
            let item = |lang| format!("- **{name}**: {}{}\n", line.get(lang), waits.get(lang));
            md = md.join(
                "",
                &Text::both(item(crate::i18n::Lang::En), item(crate::i18n::Lang::Zh)),
            );
        }
        md
    }

    /// What `project`'s GSD planning files say, in one line; `None`
    /// without them. A local project's are read now (they change as GSD
    /// works, and are a few KiB); a remote project's as last read on its
    /// host (by its planning watch while a command runs, or for
    /// `/gsd:status`).
    pub(super) fn planning_of(&self, project: &str) -> Option<Text> {
        let (workspace, host) = self.shared.read(|s| {
            let p = s.projects.get(project)?;
            Some((p.workspace.clone(), p.host.clone()))
        })?;
        if host.is_some_and(|h| self.hosts.is_remote(&h)) {
            return self
                .planning
                .get(project)
                .map(|s| present::words::planning(s));
        }
        match Planning::read_local(std::path::Path::new(&workspace)) {
            Ok(Some(p)) => Some(present::words::planning(&p.summary())),
            Ok(None) => None,
            Err(e) => Some(Msg::PlanningUnreadable.with(&[("error", &e.to_string())])),
        }
    }

    /// A command the agent refused: its card offers the command the agent
    /// suggested (`Did you mean /gsd-plan-phase?`) as a button. The refusal
    /// row may be above the reported one (`● Args from unknown skill: 2`
    /// follows it), so the turn's output is searched for it too.
    pub(super) fn refusal(
        job: &Job,
        title: impl Into<Text>,
        line: &str,
        output: &str,
        guidance: impl Into<Text>,
    ) -> Message {
        let unknown = (output.lines())
            .map(str::trim)
            .find(|l| l.contains("Unknown command: ") || l.contains("Unknown slash command: "))
            .filter(|l| *l != line.trim());
        let text = match unknown {
            Some(u) => format!("{u}\n{line}"),
            None => line.to_string(),
        };
        let buttons = Self::way_back();
        present::refusal_card(title, &text, guidance, &job.project, &job.text, buttons)
    }

    /// A refusal card's suggestion clicked: the command runs in the project
    /// it was refused in, for a clicker the bot takes commands from (a known
    /// sender, as for a direct message), and only if it is a `/gsd` command.
    pub(super) fn click_command(&mut self, c: &CardClick, choice: CommandChoice) -> ClickAnswer {
        let well_formed = crate::gsd::spelling::split_command(&choice.command).is_some()
            && choice.command.len() <= present::MAX_SUGGESTED_COMMAND_BYTES
            && names::validate_typed_text(&choice.command).is_ok();
        if !well_formed {
            return ClickAnswer::toast(ToastLevel::Error, Msg::ButtonNotRecognised);
        }
        if c.target != ChatTarget::Console {
            let chat_id = target_id(&c.target);
            let decision = (self.policy).decide(
                &c.operator,
                ChatKind::Direct,
                chat_id.as_str(),
                true,
                &self.paired,
            );
            if decision != Decision::Allow {
                return ClickAnswer::toast(ToastLevel::Error, Msg::CannotSendCommandsHere);
            }
        }
        let exists = self
            .shared
            .read(|s| s.projects.contains_key(choice.project.as_str()));
        if !exists {
            return ClickAnswer::toast(ToastLevel::Warning, Msg::ProjectGone);
        }
        self.run_in(
            choice.project.as_str(),
            &c.target,
            None,
            &choice.command,
            &c.operator,
        );
        ClickAnswer::toast(
            ToastLevel::Info,
            Msg::SentCommand.with(&[("command", &choice.command)]),
        )
    }

    /// The outcome of `/gsd:cancel`.
    pub(super) fn cancelled(
        &mut self,
        project: &ProjectName,
        by: &str,
        keys: &str,
        reply: &Reply,
        result: Result<(), ProjectError>,
    ) {
        let (target, reply_to) = (&reply.target, reply.reply_to.as_deref());
        let stage = if result.is_ok() { "sent" } else { "failed" };
        self.log_keys(project, by, keys, stage);
        match result {
            Ok(()) => {
                self.log(LogEvent::Cancel {
                    project: project.clone(),
                    sender: by.to_string(),
                });
                let text = Msg::SentKeysTo.with(&[("keys", keys), ("project", project.as_str())]);
                self.send(target, reply_to, &present::info_card(Msg::Cancelled, &text));
            }
            Err(ProjectError::NothingToCancel) => {
                let text = Msg::NothingRunning.with(&[("project", project.as_str())]);
                self.send(
                    target,
                    reply_to,
                    &present::info_card(Msg::NothingToCancel, &text),
                );
            }
            Err(e) => self.error(target, reply_to, Msg::CouldNotCancel, said(&e), ""),
        }
    }
}
