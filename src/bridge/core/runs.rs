//! `clawmux run` in the core: a message from a shell taken as a chat's
//! would be (its project recorded, its command a job, its approvals
//! pending where `serve`'s chats and `/gsd:inbox` see them), with no chat to
//! send cards to. The run's caller reads the project's events instead: the
//! core says what to follow ([`RunStart`]) and the shell folds its outcome
//! (see [`crate::bridge::runs`]).

use super::{Core, Effect};
use crate::bridge::names;
use crate::bridge::project::{ProjectCmd, ProjectError, Reply};
use crate::bridge::router::{self, Builtin, Route};
use crate::bridge::runs::{Look, RUN_USER, Request, RunRequest, RunStart};
use crate::store::LogEvent;
use crate::store::state::{ApprovalStage, ChatTarget, ProjectName, ProjectRecord, RunId};

impl Core {
    pub(super) fn on_run(&mut self, run: RunRequest) {
        let RunRequest {
            id,
            project,
            request,
            agent,
        } = run;
        let start = match request {
            Request::Message(text) => self.run_message(&id, &project, &text, agent),
            Request::Answer(key) => self.run_answer(&id, &project, &key),
        };
        self.effects.push(Effect::Run { id, start });
    }

    fn run_message(
        &mut self,
        id: &RunId,
        project: &ProjectName,
        text: &str,
        agent: Option<String>,
    ) -> RunStart {
        if let Err(e) = names::validate_typed_text(text) {
            return RunStart::Refused(e.to_string());
        }
        let reply = Reply {
            target: ChatTarget::Run { id: id.clone() },
            reply_to: None,
        };
        // A look at a project is answered by clawmux: typed into the
        // agent it would be a prompt. It starts no project.
        let look = match router::route(text) {
            Route::Builtin(Builtin::Status) => Some(Look::Status),
            Route::Builtin(Builtin::Screen) => Some(Look::Screen),
            Route::Builtin(Builtin::Cancel) => Some(Look::Cancel),
            _ => None,
        };
        if let Some(look) = look {
            self.log(LogEvent::Command {
                project: project.clone(),
                sender: RUN_USER.into(),
                text: text.to_string(),
                job: None,
            });
            match look {
                Look::Cancel => self.cancel(project, RUN_USER, reply),
                Look::Status | Look::Screen => {
                    self.tell_project(project, ProjectCmd::Screen { reply })
                }
            }
            // What the project last said it does; a project whose actor
            // starts for this look says it in the events that follow.
            let status = self.statuses.get(project);
            return RunStart::Look {
                look,
                waiting: status.and_then(|s| s.awaiting_approval.clone()),
                busy: status.map(|s| s.busy),
            };
        }
        let host = match self.shared.read(|s| s.projects.get(project).cloned()) {
            Some(record) => record.host,
            None => self.config.host_for(project.as_str()).map(str::to_string),
        };
        let workspace = match self.hosts.workspace_root(host.as_deref()) {
            Ok(root) => root.join(project.as_str()).display().to_string(),
            Err(e) => return RunStart::Refused(e.to_string()),
        };
        // Made by this run as `/gsd:new-project` would make it (without
        // GSD's own new-project: the run's message is the command), so
        // `serve`'s chats find it.
        let created = self.shared.update(|s| {
            let created = !s.projects.contains_key(project);
            (s.projects.entry(project.clone())).or_insert_with(|| ProjectRecord {
                workspace: workspace.clone(),
                created_ms: self.now_ms,
                host,
                agent,
                ..ProjectRecord::default()
            });
            created
        });
        if created {
            self.log(LogEvent::Project {
                project: project.clone(),
                workspace,
                created: true,
            });
        }
        let target = ChatTarget::Run { id: id.clone() };
        match self.run_in(project.as_str(), &target, None, text, RUN_USER) {
            Some(job) => RunStart::Job {
                job,
                answering: None,
            },
            // `run` may reach every project, and its name is one.
            None => RunStart::Refused(format!("{project} did not take the command")),
        }
    }

    /// `clawmux run --answer KEY`: the project's newest pending approval,
    /// answered as a chat's `/gsd:answer` would; the run then follows the
    /// command the prompt belongs to.
    fn run_answer(&mut self, id: &RunId, project: &ProjectName, key: &str) -> RunStart {
        let Some(approval) = self.newest_approval(project) else {
            let workspace = self.shared.read(|s| {
                (s.projects.get(project))
                    .map(|p| p.workspace.clone())
                    .unwrap_or_else(|| project.to_string())
            });
            return RunStart::Refused(ProjectError::NoApprovalWaiting(workspace).to_string());
        };
        if approval.stage == ApprovalStage::Answering {
            return RunStart::Refused(format!("the approval in {project} is being answered"));
        }
        let label = match self.check_answer(&approval, key, RUN_USER) {
            Ok(label) => label,
            Err(e) => return RunStart::Refused(e.to_string()),
        };
        let reply = Reply {
            target: ChatTarget::Run { id: id.clone() },
            reply_to: None,
        };
        let job = self.type_answer(&approval, key, RUN_USER, &label, reply);
        RunStart::Job {
            job,
            answering: Some(approval.id.clone()),
        }
    }
}
