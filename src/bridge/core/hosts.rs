//! Hosts and adopted panes: card titles and `/gsd:status` naming where a
//! project runs, the chat told when a host's connection drops and comes
//! back, and `/gsd:adopt`, `/gsd:release`, `/gsd:sessions`. An adopted pane
//! is the user's own: it is never created, resized, restarted or killed.

use super::{Core, Effect, target_id};
use crate::bridge::panes::agent_pane::PaneLocation;
use crate::bridge::panes::hosts::{AdoptTarget, LocateError};
use crate::bridge::present;
use crate::bridge::present::words::said;
use crate::bridge::project::Reply;
use crate::bridge::texts::Msg;
use crate::i18n::Text;
use crate::store::state::{
    ApprovalId, ChatTarget, Job, PendingApproval, ProjectName, ProjectRecord, SessionName,
};
use crate::store::{Denial, LogEvent};

const ADOPT_USAGE: &str =
    "`/gsd:adopt SESSION[:WINDOW.PANE][@HOST] [as NAME]`; `/gsd:sessions` lists them.";

impl Core {
    /// A command's card title: its project, with the host it runs on.
    pub(super) fn title(&self, j: &Job) -> String {
        let host = (self.shared).read(|s| {
            s.projects
                .get(j.project.as_str())
                .and_then(|p| p.host.clone())
        });
        match host {
            Some(host) => format!("{}@{host}: {}", j.project, j.text),
            None => format!("{}: {}", j.project, j.text),
        }
    }

    /// Where a project runs, for `/gsd:status`: its host, and the pane
    /// when adopted.
    pub(super) fn host_label(&self, project: &str) -> Text {
        self.shared.read(|s| {
            let Some(p) = s.projects.get(project) else {
                return Text::default();
            };
            let host = match p.host.as_deref() {
                Some(h) => Text::literal(h),
                None => Msg::HostLocal.text(),
            };
            match &p.adopted {
                Some(pane) => Msg::HostAdopted.with_each(|lang| {
                    vec![
                        ("host", host.get(lang).to_string()),
                        ("pane", pane.to_string()),
                    ]
                }),
                None => host,
            }
        })
    }

    /// Whether `project` runs on the `[tmux]` server.
    pub(super) fn is_local(&self, project: &str) -> bool {
        (self.shared)
            .read(|s| s.projects.get(project).map(|p| p.host.is_none()))
            .unwrap_or_else(|| self.config.host_for(project).is_none())
    }

    /// The project's server could not be reached after its client ended
    /// under a command: the chat hears it with the host's own message.
    pub(super) fn on_host_down(&mut self, project: &ProjectName, job: &Option<Job>, error: &str) {
        self.log(LogEvent::HostDown {
            project: project.clone(),
            job: job.as_ref().map(|j| j.id.clone()),
            error: error.to_string(),
        });
        let (target, reply_to) =
            (self.job_target(job)).unwrap_or_else(|| (self.chat_of(project.as_str()), None));
        let host = self.host_label(project.as_str());
        let text = Msg::HostDown.with_each(|lang| {
            vec![
                ("project", project.to_string()),
                ("host", host.get(lang).to_string()),
                ("error", error.to_string()),
            ]
        });
        let card = present::info_card(Msg::HostUnreachable, &text);
        self.send(&target, reply_to.as_deref(), &card);
    }

    /// A new client took over under a running command.
    pub(super) fn on_reconnected(
        &mut self,
        project: &ProjectName,
        job: &Option<Job>,
        reason: &str,
    ) {
        self.log(LogEvent::Reconnected {
            project: project.clone(),
            job: job.as_ref().map(|j| j.id.clone()),
            reason: reason.to_string(),
        });
        // A remote host's connection dropping is news for the chat; the
        // local client ending is routine and the log has it.
        if self.is_local(project.as_str()) {
            return;
        }
        if let Some((target, reply_to)) = self.job_target(job) {
            let host = self.host_label(project.as_str());
            let text = Msg::HostBack.with_each(|lang| {
                vec![
                    ("project", host.get(lang).to_string()),
                    ("reason", reason.to_string()),
                ]
            });
            let card = present::info_card(Msg::Reconnected, &text);
            self.send(&target, reply_to.as_deref(), &card);
        }
    }

    /// Only approvers may adopt or release: an adopted pane is the user's
    /// own agent, and adopting it lets chat type into it.
    fn may_adopt(&mut self, sender: &str, what: &str) -> bool {
        let allowed = self.is_approver(sender);
        if !allowed {
            self.log_denied(
                sender,
                Denial {
                    sender: Some(sender.to_string()),
                    reason: format!("not an approver ({what})"),
                    ..Default::default()
                },
            );
        }
        allowed
    }

    /// Why `name` cannot be a new adopted project's, if it cannot.
    pub(super) fn name_taken(&self, name: &str) -> Option<crate::i18n::Text> {
        if self.adopting.contains(name) {
            Some(Msg::BeingAdopted.with(&[("name", name)]))
        } else if self.shared.read(|s| s.projects.contains_key(name)) {
            Some(Msg::ProjectExists.with(&[("name", name)]))
        } else {
            None
        }
    }

    /// `/gsd:adopt`: checks who asks and what, then has the shell find
    /// the pane ([`Effect::Adopt`]).
    pub(super) fn adopt(&mut self, reply: Reply, sender: &str, pane: &str, name: Option<&str>) {
        let (target, reply_to) = (reply.target.clone(), reply.reply_to.clone());
        let reply_to = reply_to.as_deref();
        if !self.may_adopt(sender, "adopt") {
            let text = Msg::OnlyApproversAdopt;
            return self.error(&target, reply_to, Msg::NotAllowed, text, "");
        }
        let parsed = match AdoptTarget::parse(pane) {
            Ok(parsed) => parsed,
            Err(e) => {
                return self.error(&target, reply_to, Msg::CannotAdopt, said(&e), ADOPT_USAGE);
            }
        };
        let name = match ProjectName::parse(name.unwrap_or(parsed.session.as_str())) {
            Ok(name) => name,
            Err(e) => {
                let guidance = Msg::NameAsUsage;
                let text = said(&e);
                return self.error(&target, reply_to, Msg::InvalidProjectName, text, guidance);
            }
        };
        if let Some(text) = self.name_taken(name.as_str()) {
            let guidance = Msg::PickAnotherAs;
            return self.error(&target, reply_to, Msg::NameTaken, &text, guidance);
        }
        if let Err(e) = self.hosts.watch(parsed.host.as_deref()) {
            return self.error(&target, reply_to, Msg::UnknownHost, said(&e), "");
        }
        self.adopting.insert(name.clone());
        self.effects.push(Effect::Adopt {
            target: parsed,
            name,
            by: sender.to_string(),
            reply,
        });
    }

    /// The shell found (or not) the pane of an [`Effect::Adopt`]: record
    /// the project and tell the chat. True when the project was recorded
    /// (the shell then starts its actor).
    pub fn adopt_located(
        &mut self,
        target: &AdoptTarget,
        project: &ProjectName,
        by: &str,
        reply: &Reply,
        located: Result<PaneLocation, LocateError>,
    ) -> bool {
        let (chat, reply_to) = (&reply.target, reply.reply_to.as_deref());
        let name = project.as_str();
        self.adopting.remove(name);
        if self.shared.read(|s| s.projects.contains_key(name)) {
            let text = Msg::MadeWhileLooking.with(&[("name", name)]);
            let guidance = Msg::AdoptUnderAnother;
            self.error(chat, reply_to, Msg::NameTaken, &text, guidance);
            return false;
        }
        let location = match located {
            Ok(location) => location,
            Err(e) => {
                self.error(chat, reply_to, Msg::CannotAdopt, said(&e), ADOPT_USAGE);
                return false;
            }
        };
        if location.session == SessionName::watch() || location.session.as_str().starts_with("cm-")
        {
            let text = Msg::OwnSession.with(&[("session", location.session.as_str())]);
            self.error(chat, reply_to, Msg::CannotAdopt, &text, "");
            return false;
        }
        let record = location.adopted();
        let taken = self.shared.read(|s| {
            (s.projects.iter())
                .find(|(_, p)| p.adopted.as_ref() == Some(&record) && p.host == target.host)
                .map(|(n, _)| n.clone())
        });
        if let Some(other) = taken {
            let text = Msg::AdoptedAs.with(&[("name", other.as_str())]);
            self.error(chat, reply_to, Msg::CannotAdopt, &text, "");
            return false;
        }
        let chat_id = target_id(chat);
        self.shared.update(|s| {
            s.chats.insert(chat_id.clone(), project.clone());
            let mut adopted = ProjectRecord {
                created_ms: self.now_ms,
                host: target.host.clone(),
                adopted: Some(record.clone()),
                ..ProjectRecord::default()
            };
            adopted.used_in(&chat_id);
            s.projects.insert(project.clone(), adopted);
        });
        self.log(LogEvent::Adopted {
            project: project.clone(),
            pane: record.at(),
            host: target.host.clone(),
            by: by.to_string(),
            size: format!("{}x{}", location.width, location.height),
        });
        let on = match target.host.as_deref() {
            Some(h) => Msg::OnHost.with(&[("host", h)]),
            None => crate::i18n::Text::default(),
        };
        let (cols, rows) = (location.width.to_string(), location.height.to_string());
        let pane = location.pane.to_string();
        // `on` is itself worded per language, so each language is filled alone.
        let text = {
            let fill = |lang| {
                crate::i18n::fill(
                    Msg::Watching.template(lang),
                    &[
                        ("pane", &pane),
                        ("session", location.session.as_str()),
                        ("on", on.get(lang)),
                        ("cols", &cols),
                        ("rows", &rows),
                        ("name", name),
                    ],
                )
            };
            crate::i18n::Text::both(fill(crate::i18n::Lang::En), fill(crate::i18n::Lang::Zh))
        };
        self.send(chat, reply_to, &present::info_card(Msg::Adopted, &text));
        true
    }

    /// The actor of an adopted project could not start: forget it again.
    pub fn adopt_failed(&mut self, name: &ProjectName, reply: &Reply, error: &str) {
        self.shared.update(|s| {
            s.projects.remove(name);
            s.chats.retain(|_, p| p != name);
        });
        let (chat, reply_to) = (&reply.target, reply.reply_to.as_deref());
        self.error(chat, reply_to, Msg::CannotWatch, error, "");
    }

    /// `/gsd:release`: stops watching an adopted pane and forgets its
    /// project; the pane is left as it is.
    pub(super) fn release(
        &mut self,
        target: &ChatTarget,
        reply_to: Option<&str>,
        sender: &str,
        name: &str,
    ) {
        if !self.may_adopt(sender, "release") {
            let text = Msg::OnlyApproversAdopt;
            return self.error(target, reply_to, Msg::NotAllowed, text, "");
        }
        let project = match ProjectName::parse(name) {
            Ok(project) => project,
            Err(e) => return self.error(target, reply_to, Msg::InvalidProjectName, name, said(&e)),
        };
        let adopted = (self.shared).read(|s| s.projects.get(name).map(|p| p.adopted.clone()));
        let pane = match adopted {
            Some(Some(pane)) => pane,
            Some(None) => {
                let text = Msg::CreatedByClawmux.with(&[("name", name)]);
                return self.error(target, reply_to, Msg::NotAdopted, &text, "");
            }
            None => {
                let text = Msg::NoProjectNamed.with(&[("name", name)]);
                return self.error(target, reply_to, Msg::NoSuchProject, &text, "");
            }
        };
        // The actor stops with its last handle, and its client detaches.
        self.effects.push(Effect::Forget {
            project: project.clone(),
        });
        self.panes.retain(|_, p| p.as_str() != name);
        let stale: Vec<PendingApproval> = self.shared.update(|s| {
            s.jobs.retain(|j| j.project != name);
            s.projects.remove(name);
            s.chats.retain(|_, p| p != name);
            let ids: Vec<ApprovalId> = (s.approvals.values())
                .filter(|a| a.project == name)
                .map(|a| a.id.clone())
                .collect();
            ids.iter().filter_map(|id| s.approvals.remove(id)).collect()
        });
        for a in stale {
            self.patch(&a.card, &present::approval_gone_card(&a));
        }
        self.log(LogEvent::Released {
            project,
            pane: pane.at(),
            by: sender.to_string(),
        });
        let text = Msg::NoLongerWatching.with(&[("name", name), ("pane", &pane.to_string())]);
        self.send(target, reply_to, &present::info_card(Msg::Released, &text));
    }

    /// Sends `text` as an info card titled `title` to `reply`.
    pub fn info(&mut self, reply: &Reply, title: &str, text: &str) {
        let card = present::info_card(title, text);
        self.send(&reply.target, reply.reply_to.as_deref(), &card);
    }
}
