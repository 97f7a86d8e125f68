//! `/gsd:file PATH`: a file from the current project's workspace sent to
//! the chat (`im/v1/files`, through the outbox's file delivery). The core
//! reads nothing: it asks the daemon to fetch the file on the project's
//! host (`Effect::FetchFile`, done by [`crate::bridge::panes::workspace_file`],
//! which checks it is inside the workspace and copies it privately) and
//! queues what comes back ([`Core::file_fetched`]).

use crate::bridge::texts::Msg;

use super::Core;
use crate::bridge::panes::workspace_file::{FetchedFile, FileError};
use crate::bridge::present;
use crate::bridge::present::words::said;
use crate::bridge::project::Reply;
use crate::store::state::{CardHandle, ChatTarget, OutboxEntry, OutboxOp, ProjectName};
use crate::store::{Denial, LogEvent};

impl Core {
    /// `/gsd:file PATH` in the current project.
    pub(super) fn send_file(
        &mut self,
        target: &ChatTarget,
        reply_to: Option<&str>,
        sender: &str,
        asked: &str,
    ) {
        let Some(project) = self.current_project(target) else {
            self.error(target, reply_to, Msg::NoProjectSelected, "/gsd:file", "");
            return;
        };
        let record = self
            .shared
            .read(|s| s.projects.get(project.as_str()).cloned());
        let Some(record) = record else {
            self.error(target, reply_to, Msg::NoSuchProject, project.as_str(), "");
            return;
        };
        if record.adopted.is_some() {
            // Someone's own terminal: its workspace is not clawmux's (an
            // adopted record has none; on an ssh host the read would start
            // in the login's home). Never served, whoever asks.
            self.log_denied(
                sender,
                Denial {
                    sender: Some(sender.to_string()),
                    reason: format!("/gsd:file on adopted {project}"),
                    ..Default::default()
                },
            );
            let text = Msg::AdoptedNoFiles.with(&[("project", project.as_str())]);
            self.error(target, reply_to, Msg::FileNotSent, &text, "");
            return;
        }
        // Read on its host, off this loop; the answer comes to `file_fetched`.
        self.effects.push(super::Effect::FetchFile {
            project,
            host: record.host.clone(),
            workspace: record.workspace.clone(),
            asked: asked.to_string(),
            sender: sender.to_string(),
            reply: Reply {
                target: target.clone(),
                reply_to: reply_to.map(String::from),
            },
        });
    }

    /// What the project's host gave for `/gsd:file asked`: the file queued
    /// for the chat, or why it is not sent.
    pub(crate) fn file_fetched(
        &mut self,
        project: &ProjectName,
        sender: &str,
        reply: &Reply,
        fetched: Result<FetchedFile, FileError>,
    ) {
        let (target, reply_to) = (&reply.target, reply.reply_to.as_deref());
        let file = match fetched {
            Ok(file) => file,
            Err(e) => {
                self.error(target, reply_to, Msg::FileNotSent, said(&e), "");
                return;
            }
        };
        self.log(LogEvent::Command {
            project: project.clone(),
            sender: sender.to_string(),
            text: format!("/gsd:file {}", file.name),
            job: None,
        });
        let size = file.size.to_string();
        let text = Msg::FileSize.with(&[("file", &file.name), ("size", &size)]);
        let card = present::info_card(Msg::FileTitle, text);
        let entry = OutboxEntry {
            uuid: file.uuid,
            op: OutboxOp::File {
                target: target.clone(),
                handle: CardHandle::random(),
                reply_to: reply_to.map(String::from),
                path: file.copy.display().to_string(),
                file_name: file.name,
            },
            message: Some(card),
            created_ms: self.now_ms,
        };
        self.shared.update(|s| s.queue(entry));
    }
}
