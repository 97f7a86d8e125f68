//! Claude Code's hooks routed to the project whose pane sent them: only a
//! pane clawmux runs, with that project's hook token (see
//! [`crate::hooks::token`]; an adopted pane, which clawmux did not start,
//! has none), only from inside that project's workspace, and only what the
//! actor can use (a turn's end with its final text, what a dialog
//! asks, task-list moves).

use std::path::{Component, Path, PathBuf};

use super::Core;
use crate::bridge::project::{AgentFailure, ProjectCmd, TaskNews};
use crate::control::PaneId;
use crate::hooks::{HookEvent, HookKind};
use crate::store::LogEvent;

impl Core {
    /// The hook token `project`'s agent gets in its environment.
    pub fn hook_token(&self, project: &str) -> String {
        self.hook_key.token(project)
    }

    pub(super) fn on_hook(&mut self, hook: HookEvent) {
        let Some(pane) = &hook.tmux_pane else { return };
        // Only tmux's own spelling (`%01` is not `%1`'s).
        let Some((pane_id, project)) = (pane.parse::<PaneId>().ok())
            .filter(|id| id.to_string() == *pane)
            .and_then(|id| Some((id, self.panes.get(&id)?.clone())))
        else {
            self.log(LogEvent::HookIgnored {
                pane: pane.clone(),
                reason: "not a clawmux pane".into(),
            });
            return;
        };
        let (workspace, adopted) = self.shared.read(|s| {
            let record = s.projects.get(project.as_str());
            let adopted = record.is_some_and(|p| p.adopted.is_some());
            (record.map(|p| p.workspace.clone()), adopted)
        });
        // An adopted pane's agent was not started with a token, so anything
        // that can reach the hook socket could speak for it: its screen is
        // its only signal.
        if !self
            .hook_key
            .verifies(project.as_str(), hook.token.as_deref())
        {
            let reason = if adopted {
                "an adopted pane's hooks carry no token (clawmux did not start its agent)"
            } else {
                "no or wrong hook token (not from the project's agent)"
            };
            self.log(LogEvent::HookIgnored {
                pane: pane.clone(),
                reason: reason.into(),
            });
            return;
        }
        if let (Some(cwd), Some(ws)) = (&hook.cwd, &workspace)
            && !within(cwd, Path::new(ws))
        {
            self.log(LogEvent::HookIgnored {
                pane: pane.clone(),
                reason: "cwd is not the project's workspace".into(),
            });
            return;
        }
        let event = hook_name(&hook.event).to_string();
        // An empty name is a hook built in code, not sent by an agent.
        let sent_as = (!hook.name.is_empty() && hook.name != event).then(|| hook.name.clone());
        self.log(LogEvent::Hook {
            project: project.clone(),
            pane: pane_id,
            event,
            sent_as,
        });
        if let HookKind::Notification {
            notification_type: Some(kind),
            message,
        } = &hook.event
        {
            self.note_waiting(&project, kind, message);
        }
        // The transcript the hook names goes to the actor, which reads it
        // (the answer, the turn's figures) where its profile says the
        // answer is there.
        let Some(cmd) = hook_command(hook.event, hook.transcript_path) else {
            return;
        };
        self.tell_project(&project, cmd);
    }
}

/// What a hook tells the project's actor, if anything.
fn hook_command(event: HookKind, transcript: Option<PathBuf>) -> Option<ProjectCmd> {
    let task = |id: Option<String>, subject: Option<String>| {
        let subject = subject.or_else(|| id.clone())?;
        Some((id.unwrap_or_else(|| subject.clone()), subject))
    };
    Some(match event {
        HookKind::Stop {
            last_assistant_message,
            ..
        } => ProjectCmd::HookStop {
            answer: last_assistant_message,
            transcript,
        },
        // The turn failed, in the agent's own words: an error, whatever
        // the screen draws (see `JobRunner::hook_failed`).
        HookKind::StopFailure {
            error,
            last_assistant_message,
        } => ProjectCmd::HookFailure(AgentFailure {
            category: error,
            message: last_assistant_message,
        }),
        ref permission @ HookKind::PermissionRequest { .. } => {
            ProjectCmd::HookPermission(permission.tool_request()?)
        }
        HookKind::Notification {
            notification_type: Some(t),
            ..
        } if t == "permission_prompt" => ProjectCmd::HookApproval,
        HookKind::TaskCreated {
            task_id,
            task_subject,
        } => {
            let (id, subject) = task(task_id, task_subject)?;
            ProjectCmd::HookTask(TaskNews::Created { id, subject })
        }
        HookKind::TaskCompleted {
            task_id,
            task_subject,
        } => {
            let (id, subject) = task(task_id, task_subject)?;
            ProjectCmd::HookTask(TaskNews::Completed { id, subject })
        }
        _ => return None,
    })
}

/// Whether the hook's working directory `cwd` is `workspace` or inside
/// it, both taken lexically (`.` dropped, `..` taking the component before
/// it away, as the kernel resolves a path without symlinks): a `cwd` of
/// `/ws/../other` is not in `/ws`. A relative path says where it is
/// from nowhere, and is never inside.
fn within(cwd: &Path, workspace: &Path) -> bool {
    match (lexical(cwd), lexical(workspace)) {
        (Some(cwd), Some(ws)) => cwd.starts_with(ws),
        _ => false,
    }
}

/// `path` with `.` and `..` resolved lexically (`..` above `/` stays at
/// `/`); `None` for a relative path.
fn lexical(path: &Path) -> Option<PathBuf> {
    if !path.is_absolute() {
        return None;
    }
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::RootDir | Component::Prefix(_) => out.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => out.push(name),
        }
    }
    Some(out)
}

fn hook_name(k: &HookKind) -> &str {
    match k {
        HookKind::Stop { .. } => "Stop",
        HookKind::StopFailure { .. } => "StopFailure",
        HookKind::TaskCreated { .. } => "TaskCreated",
        HookKind::TaskCompleted { .. } => "TaskCompleted",
        HookKind::Notification { .. } => "Notification",
        HookKind::PermissionRequest { .. } => "PermissionRequest",
        HookKind::SessionStart { .. } => "SessionStart",
        HookKind::Other(name) => name,
    }
}
