//! `/gsd:adopt` and `/gsd:release`: watching a pane the user already runs
//! (their own agent in their own tmux session) as a project, and letting
//! it go again. The pane is never created, resized, restarted or killed by
//! clawmux: see `watch_session::attach_adopted` for how it is watched.

use serde_json::json;

use super::super::chat::CONSOLE_USER;
use super::super::hosts::{AdoptTarget, adopted_record};
use super::super::names;
use super::super::watch_session::WATCH_SESSION;
use super::{Daemon, target_id};
use crate::feishu::card;
use crate::store::clock;
use crate::store::state::{ChatTarget, PendingApproval, ProjectRecord};

impl Daemon {
    /// Only approvers may adopt or release: an adopted pane is the user's
    /// own agent, and adopting it lets chat type into it.
    fn may_adopt(&self, sender: &str) -> bool {
        let paired = self.pairing.allowed().unwrap_or_default();
        sender == CONSOLE_USER || self.policy.may_approve(sender, &paired)
    }

    pub(super) async fn adopt(
        &mut self,
        target: &ChatTarget,
        reply_to: Option<&str>,
        sender: &str,
        pane: &str,
        name: Option<&str>,
    ) {
        if !self.may_adopt(sender) {
            self.log(
                "denied",
                json!({"sender": sender, "reason": "not an approver", "adopt": pane}),
            );
            let text = "Only approvers may adopt or release panes.";
            self.error(target, reply_to, "Not allowed", text, "");
            return;
        }
        let usage =
            "`/gsd:adopt SESSION[:WINDOW.PANE][@HOST] [as NAME]`; `/gsd:sessions` lists them.";
        let parsed = match AdoptTarget::parse(pane) {
            Ok(parsed) => parsed,
            Err(e) => return self.error(target, reply_to, "Cannot adopt that", &e, usage),
        };
        let name = name.unwrap_or(&parsed.session).to_string();
        if let Err(e) = names::validate_project(&name) {
            let guidance = "Name the project with `as NAME`, e.g. `/gsd:adopt work:1.0 as api`.";
            self.error(
                target,
                reply_to,
                "Invalid project name",
                &e.to_string(),
                guidance,
            );
            return;
        }
        if self.setup.shared.read(|s| s.projects.contains_key(&name)) {
            let text = format!("A project named **{name}** exists already.");
            let guidance = "Pick another name with `as NAME`.";
            self.error(target, reply_to, "Name taken", &text, guidance);
            return;
        }
        let host = parsed.host.as_deref();
        let watch = match self.hosts.watch(host) {
            Ok(watch) => watch,
            Err(e) => return self.error(target, reply_to, "Unknown host", &e.to_string(), ""),
        };
        let location = match watch
            .spec_for(String::new())
            .locate(&parsed.tmux_target())
            .await
        {
            Ok(location) => location,
            Err(e) => {
                return self.error(target, reply_to, "Cannot adopt that", &e.to_string(), usage);
            }
        };
        if location.session == WATCH_SESSION || location.session.starts_with("cm-") {
            let text = format!(
                "Session {} is clawmux's own; its projects are watched already.",
                location.session
            );
            self.error(target, reply_to, "Cannot adopt that", &text, "");
            return;
        }
        let record = adopted_record(&location.session, location.pane);
        let taken = self.setup.shared.read(|s| {
            s.projects
                .iter()
                .find(|(_, p)| p.adopted.as_deref() == Some(&record) && p.host == parsed.host)
                .map(|(n, _)| n.clone())
        });
        if let Some(other) = taken {
            let text = format!("That pane is adopted already, as **{other}**.");
            self.error(target, reply_to, "Cannot adopt that", &text, "");
            return;
        }
        let chat = target_id(target);
        self.setup.shared.update(|s| {
            s.chats.insert(chat, name.clone());
            s.projects.insert(
                name.clone(),
                ProjectRecord {
                    workspace: String::new(),
                    created_ms: clock::now_ms(),
                    last_command: None,
                    host: parsed.host.clone(),
                    adopted: Some(record.clone()),
                },
            );
        });
        self.log(
            "adopted",
            json!({"project": name, "pane": record, "host": parsed.host, "by": sender,
                   "size": format!("{}x{}", location.width, location.height)}),
        );
        if let Err(e) = self.project(&name) {
            // Nothing is watched: forget the project again.
            self.setup.shared.update(|s| {
                s.projects.remove(&name);
                s.chats.retain(|_, p| *p != name);
            });
            self.error(target, reply_to, "Cannot watch that pane", &e, "");
            return;
        }
        let on = host.map(|h| format!(" on **{h}**")).unwrap_or_default();
        let text = format!(
            "Watching pane {} of session **{}**{on} ({}x{}) as **{name}**; messages now go to it. Nothing was restarted or resized. `/gsd:release {name}` stops watching.",
            location.pane, location.session, location.width, location.height
        );
        self.send(target, reply_to, &card::info_card("Adopted", &text));
    }

    pub(super) fn release(
        &mut self,
        target: &ChatTarget,
        reply_to: Option<&str>,
        sender: &str,
        name: &str,
    ) {
        if !self.may_adopt(sender) {
            self.log(
                "denied",
                json!({"sender": sender, "reason": "not an approver", "release": name}),
            );
            let text = "Only approvers may adopt or release panes.";
            self.error(target, reply_to, "Not allowed", text, "");
            return;
        }
        let adopted = self
            .setup
            .shared
            .read(|s| s.projects.get(name).map(|p| p.adopted.clone()));
        let pane = match adopted {
            Some(Some(pane)) => pane,
            Some(None) => {
                let text = format!(
                    "**{name}** was created by clawmux; release only lets go of adopted panes."
                );
                return self.error(target, reply_to, "Not adopted", &text, "");
            }
            None => {
                let text = format!("No project is named **{name}**.");
                return self.error(target, reply_to, "No such project", &text, "");
            }
        };
        // The actor stops with its last handle, and its client detaches:
        // the pane and its session are left as they are.
        self.projects.remove(name);
        self.panes.retain(|_, p| p != name);
        let ids: Vec<String> = self
            .jobs
            .values()
            .filter(|j| j.project == name)
            .map(|j| j.id.clone())
            .collect();
        for id in ids {
            self.finish_job(&id);
        }
        let stale: Vec<PendingApproval> = self.setup.shared.update(|s| {
            s.projects.remove(name);
            s.chats.retain(|_, p| p != name);
            let ids: Vec<String> = s
                .approvals
                .values()
                .filter(|a| a.project == name)
                .map(|a| a.id.clone())
                .collect();
            ids.iter().filter_map(|id| s.approvals.remove(id)).collect()
        });
        for a in stale {
            self.patch(&a.card, &card::approval_gone_card(&super::spec_of(&a)));
        }
        self.log(
            "released",
            json!({"project": name, "pane": pane, "by": sender}),
        );
        let text = format!("No longer watching **{name}** (pane {pane}); the pane is as it was.");
        self.send(target, reply_to, &card::info_card("Released", &text));
    }
}
