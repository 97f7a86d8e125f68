//! The daemon's side of hosts: card titles and `/gsd:status` naming the
//! host a project runs on, and telling the chat when a host's connection
//! drops and comes back.

use serde_json::json;

use super::Daemon;
use crate::bridge::project::Job;
use crate::feishu::card;
use crate::store::state::JobRecord;

impl Daemon {
    /// A command's card title: its project, with the host it runs on.
    pub(super) fn title(&self, j: &JobRecord) -> String {
        let host = self
            .setup
            .shared
            .read(|s| s.projects.get(&j.project).and_then(|p| p.host.clone()));
        match host {
            Some(host) => format!("{}@{host}: {}", j.project, j.text),
            None => format!("{}: {}", j.project, j.text),
        }
    }

    /// Where a project runs, for `/gsd:status`: its host, and the pane
    /// when adopted.
    pub(super) fn host_label(&self, project: &str) -> String {
        self.setup.shared.read(|s| {
            let Some(p) = s.projects.get(project) else {
                return String::new();
            };
            let host = p.host.as_deref().unwrap_or("local");
            match &p.adopted {
                Some(pane) => format!("{host} (adopted {pane})"),
                None => host.to_string(),
            }
        })
    }

    /// Whether `project` runs on the `[tmux]` server.
    pub(super) fn is_local(&self, project: &str) -> bool {
        self.setup
            .shared
            .read(|s| s.projects.get(project).map(|p| p.host.is_none()))
            .unwrap_or_else(|| self.setup.config.host_for(project).is_none())
    }

    /// The project's server could not be reached after its client ended
    /// under a command: the chat hears it with the host's own message.
    pub(super) fn on_host_down(&mut self, project: &str, job: &Option<Job>, error: &str) {
        let job_id = job.as_ref().map(|j| j.id.clone());
        self.log(
            "host_down",
            json!({"project": project, "job": job_id, "error": error}),
        );
        let (target, reply_to) = self
            .job_target(job)
            .unwrap_or_else(|| (self.chat_of(project), None));
        let text = format!(
            "The connection to the tmux server of **{project}** ({}) ended, and reconnecting failed: {error}\nTrying again with backoff; your command is kept.",
            self.host_label(project)
        );
        self.send(
            &target,
            reply_to.as_deref(),
            &card::info_card("Host unreachable", &text),
        );
    }

    /// A new client took over under a running command.
    pub(super) fn on_reconnected(&mut self, project: &str, job: &Option<Job>, reason: &str) {
        let job_id = job.as_ref().map(|j| j.id.clone());
        self.log(
            "reconnected",
            json!({"project": project, "job": job_id, "reason": reason}),
        );
        // A remote host's connection dropping is news for the chat; the
        // local client ending is routine and the log has it.
        if self.is_local(project) {
            return;
        }
        if let Some((target, reply_to)) = self.job_target(job) {
            let text = format!(
                "The connection to **{}** was lost ({reason}) and is back. The command goes on; its result marks where output may be missing.",
                self.host_label(project)
            );
            self.send(
                &target,
                reply_to.as_deref(),
                &card::info_card("Reconnected", &text),
            );
        }
    }
}
