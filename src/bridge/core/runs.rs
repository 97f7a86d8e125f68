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
use crate::bridge::texts::Msg;
use crate::i18n::Lang;
use crate::store::state::{
    ApprovalId, ApprovalStage, ChatTarget, PendingApproval, ProjectName, ProjectRecord, RunId,
};
use crate::store::{Denial, LogEvent};

impl Core {
    pub(super) fn on_run(&mut self, run: RunRequest) {
        let RunRequest {
            id,
            project,
            request,
            agent,
            create,
        } = run;
        let start = match request {
            Request::Message(text) => self.run_message(&id, &project, &text, agent, create),
            Request::Answer { key, prompt } => {
                self.run_answer(&id, &project, &key, prompt.as_ref())
            }
        };
        self.effects.push(Effect::Run { id, start });
    }

    fn run_message(
        &mut self,
        id: &RunId,
        project: &ProjectName,
        text: &str,
        agent: Option<String>,
        create: bool,
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
        if let Some(refused) = self.unknown_project(project, &workspace, create) {
            return refused;
        }
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

    /// `clawmux run --answer KEY [--prompt ID]`: the prompt the caller was
    /// shown (`ID`), or with none the project's newest if anyone saw it,
    /// answered as a chat's `/gsd:answer` would; the run then follows the
    /// command the prompt belongs to. Any other prompt waiting is shown to
    /// the caller instead, and nothing is typed: answered at the desk
    /// meanwhile, the one they read may have been followed by another
    /// (`make deploy` after `make test`) that no card showed.
    fn run_answer(
        &mut self,
        id: &RunId,
        project: &ProjectName,
        key: &str,
        prompt: Option<&ApprovalId>,
    ) -> RunStart {
        let newest = self.newest_approval(project);
        let wanted = prompt.map(|p| self.aliases.get(p).unwrap_or(p).clone());
        let approval = match (&wanted, newest) {
            (_, None) => {
                let workspace = self.shared.read(|s| {
                    (s.projects.get(project))
                        .map(|p| p.workspace.clone())
                        .unwrap_or_else(|| project.to_string())
                });
                return RunStart::Refused(ProjectError::NoApprovalWaiting(workspace).to_string());
            }
            (Some(wanted), Some(newest)) => {
                let asked = self.shared.read(|s| {
                    (s.approvals.get(wanted))
                        .filter(|a| a.project == *project)
                        .cloned()
                });
                match asked {
                    Some(asked) => asked,
                    None => {
                        let why = format!("prompt {wanted} is no longer waiting in {project}");
                        return self.refuse_showing(project, &newest, &why);
                    }
                }
            }
            (None, Some(newest)) if !newest.shown => {
                let why = format!("nobody has been shown the prompt waiting in {project}");
                return self.refuse_showing(project, &newest, &why);
            }
            (None, Some(newest)) => newest,
        };
        if approval.stage == ApprovalStage::Answering {
            return RunStart::Refused(format!("the approval in {project} is being answered"));
        }
        // A label answers as `/press Yes` does: `--answer yes`.
        let key = label_key(&approval, key).unwrap_or(key);
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

    /// A run names a project there is none of, and may not make it: the
    /// first project of all is made, any other only with `--new`. The
    /// refusal names the nearest known project and where `--new` makes it.
    fn unknown_project(
        &self,
        project: &ProjectName,
        workspace: &str,
        create: bool,
    ) -> Option<RunStart> {
        let known: Vec<ProjectName> = self.shared.read(|s| s.projects.keys().cloned().collect());
        if create || known.is_empty() || known.contains(project) {
            return None;
        }
        let nearest = (known.iter())
            .map(|k| (strsim::damerau_levenshtein(k.as_str(), project.as_str()), k))
            .min()
            .filter(|(distance, _)| *distance <= suggestion_distance(project.as_str()))
            .map(|(_, k)| format!("; did you mean {k}?"));
        Some(RunStart::Refused(format!(
            "no project {project}{}; nothing was started (`--new` makes it, in {workspace})",
            nearest.unwrap_or_default()
        )))
    }

    /// Refuses a run's answer with `why`, showing the prompt that waits
    /// now, which the caller has then seen: their next answer may name it.
    fn refuse_showing(
        &mut self,
        project: &ProjectName,
        waiting: &PendingApproval,
        why: &str,
    ) -> RunStart {
        self.prompt_shown(&waiting.id);
        let denial = Denial {
            operator: Some(RUN_USER.into()),
            reason: why.to_string(),
            approval: Some(waiting.id.clone()),
            ..Default::default()
        };
        self.log_denied(RUN_USER, denial);
        RunStart::Refused(format!(
            "{why}; nothing was typed. It asks now:\n{}",
            prompt_text(project, waiting)
        ))
    }

    /// A prompt was shown to someone (a run's outcome): a run's answer that
    /// names no prompt may answer it.
    pub(super) fn prompt_shown(&mut self, approval: &ApprovalId) {
        let id = self.aliases.get(approval).unwrap_or(approval).clone();
        self.shared.update(|s| {
            if let Some(a) = s.approvals.get_mut(&id) {
                a.shown = true;
            }
        });
    }
}

/// Edits (a swap of two letters is one) a misspelt project name may be
/// from the one suggested: one in three letters, so `shpo` finds `shop`
/// and `blog` does not.
fn suggestion_distance(name: &str) -> usize {
    (name.chars().count() / 3).max(1)
}

/// The key of the one option of `a` whose label is `said` (any case), if
/// `said` is no option's key.
fn label_key<'a>(a: &'a PendingApproval, said: &str) -> Option<&'a str> {
    if a.options.iter().any(|o| o.key == said) {
        return None;
    }
    let mut named =
        (a.options.iter()).filter(|o| o.name().trim().eq_ignore_ascii_case(said.trim()));
    match (named.next(), named.next()) {
        (Some(only), None) => Some(only.key.as_str()),
        _ => None,
    }
}

/// Rows of a prompt's body a refused answer shows at most (the command or
/// file asked about: enough to tell `make deploy` from `make test`).
const REFUSED_BODY_ROWS: usize = 8;

/// A waiting prompt as a refused run's answer shows it: question, what it
/// is about, the options and how to answer this one.
fn prompt_text(project: &ProjectName, a: &PendingApproval) -> String {
    let mut text = format!("  {}\n", a.question);
    for row in a.body.lines().take(REFUSED_BODY_ROWS) {
        text.push_str(&format!("    {row}\n"));
    }
    for option in &a.options {
        text.push_str(&format!("  {}. {}\n", option.key, option.name()));
    }
    let keys: Vec<&str> = a.options.iter().map(|o| o.key.as_str()).collect();
    let how = Msg::AnswerWith.with(&[
        ("project", project.as_str()),
        ("prompt", a.id.as_str()),
        ("keys", &keys.join("|")),
    ]);
    text.push_str(how.get(Lang::En));
    text
}
