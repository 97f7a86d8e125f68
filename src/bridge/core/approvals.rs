//! Approvals: a prompt the agent shows becomes a card with its options;
//! it is answered by a button, a reply to the card, or `/gsd:answer`, by an
//! approver only, once; its card turns grey when answered or gone.

use super::Core;
use crate::bridge::channels::chat::{CardClick, ChatMessage, ClickAnswer, ToastLevel};
use crate::bridge::names;
use crate::bridge::present::words::said;
use crate::bridge::present::{self, ApprovalChoice};
use crate::bridge::project::{Approval, ProjectCmd, ProjectError, ProjectEventKind, Reply};
use crate::bridge::texts::Msg;
use crate::detect::{ApprovalOption, several_keys};
use crate::store::state::{
    ApprovalId, ApprovalStage, CardHandle, ChatTarget, Job, JobId, PendingApproval, ProjectName,
    UserId,
};
use crate::store::{Denial, LogEvent};

impl Core {
    /// A reply to a question's card answers the question with its text.
    pub(super) fn answer_by_reply(&mut self, m: &ChatMessage) -> bool {
        let Some(parent) = &m.parent_id else {
            return false;
        };
        let found = self.shared.read(|s| {
            s.approvals
                .values()
                .find(|a| s.cards.get(&a.card) == Some(parent))
                .cloned()
        });
        let Some(approval) = found else {
            if !self.shared.read(|s| s.shows_closed_prompt(parent)) {
                return false;
            }
            // Typed now, the words would land in whatever the agent shows.
            let text = Msg::PromptClosed;
            self.send(
                &m.target,
                Some(&m.message_id),
                &present::info_card(Msg::NotAnswered, text),
            );
            return true;
        };
        if let Err(e) = names::validate_typed_text(&m.text) {
            self.error(
                &m.target,
                Some(&m.message_id),
                Msg::CannotType,
                said(&e),
                "",
            );
            return true;
        }
        if !self.policy.may_approve(&m.sender, &self.paired) {
            self.log_denied(
                &m.sender,
                Denial {
                    sender: Some(m.sender.clone()),
                    reason: "not an approver".into(),
                    approval: Some(approval.id.clone()),
                    ..Default::default()
                },
            );
            return true;
        }
        let reply = Reply {
            target: m.target.clone(),
            reply_to: Some(m.message_id.clone()),
        };
        match reply_plan(&approval, &m.text) {
            ReplyPlan::Option { key } => {
                if approval.stage == ApprovalStage::Answering {
                    return true;
                }
                match self.check_answer(&approval, &key, &m.sender) {
                    Ok(label) => {
                        self.type_answer(&approval, &key, &m.sender, &label, reply);
                    }
                    Err(e) => {
                        let e = said(&e);
                        self.error(&m.target, Some(&m.message_id), Msg::NotAnswered, e, "");
                    }
                }
            }
            // The outcome comes back as `Replied`.
            ReplyPlan::Text { focus } => {
                if !self.start_answering(&approval.id) {
                    let text = Msg::PromptBeingAnswered;
                    let card = present::info_card(Msg::NotAnswered, text);
                    self.send(&m.target, Some(&m.message_id), &card);
                    return true;
                }
                let cmd = ProjectCmd::Type {
                    approval_id: approval.id.clone(),
                    question: approval.question.clone(),
                    body: approval.body.clone(),
                    focus,
                    // One answer field: a line break would submit it early.
                    text: m.text.replace('\n', " "),
                    by: m.sender.clone(),
                    reply,
                };
                self.tell_project(&approval.project, cmd);
            }
            ReplyPlan::Refuse => {
                let labels: Vec<String> = (approval.options.iter())
                    .map(|o| format!("**{}**", o.label))
                    .collect();
                let text = Msg::PromptTakesOptions.with(&[("options", &labels.join(", "))]);
                let card = present::info_card(Msg::NotAnswered, &text);
                self.send(&m.target, Some(&m.message_id), &card);
            }
        }
        true
    }

    /// Answers Feishu at once (it allows 3 s), then types the answer.
    pub(super) fn click_approval(&mut self, c: CardClick, choice: ApprovalChoice) {
        let ApprovalChoice {
            approval_id: id,
            project,
            session,
            option: key,
        } = choice;
        let pending = self.shared.read(|s| s.approvals.get(&id).cloned());
        let checked = match pending {
            None => Err((ToastLevel::Warning, Msg::AlreadyAnswered.text())),
            Some(a) if a.project != project || a.session != session => {
                self.log_denied(
                    &c.operator,
                    Denial {
                        operator: Some(c.operator.clone()),
                        reason: "approval does not match its project".into(),
                        value: Some(c.value.clone()),
                        ..Default::default()
                    },
                );
                Err((ToastLevel::Error, Msg::ButtonMismatch.text()))
            }
            Some(a) if a.stage == ApprovalStage::Answering => {
                Err((ToastLevel::Info, Msg::BeingAnswered.text()))
            }
            // Its key only opens the agent's text field: the words come in
            // a reply (see `answer_by_reply`).
            Some(a) if a.options.iter().any(|o| o.key == key && o.own_words) => {
                Err((ToastLevel::Info, Msg::ReplyToAnswer.text()))
            }
            Some(a) => match self.check_answer(&a, &key, &c.operator) {
                Ok(label) => Ok((a, label)),
                Err(e) => Err((ToastLevel::Error, said(&e))),
            },
        };
        let (approval, label) = match checked {
            Ok(ok) => ok,
            Err((level, text)) => return self.respond(&c, ClickAnswer::toast(level, text)),
        };
        let toast =
            ClickAnswer::toast(ToastLevel::Success, Msg::Sending.with(&[("label", &label)]));
        self.respond(&c, toast);
        // A second click finds the approval being answered, then resolved
        // (or pending again if typing failed).
        let reply = Reply {
            target: c.target.clone(),
            reply_to: None,
        };
        self.type_answer(&approval, &key, &c.operator, &label, reply);
    }

    /// The newest prompt waiting in `project`: the
    /// one `/gsd:answer` and `clawmux run --answer` answer.
    pub(super) fn newest_approval(&self, project: &ProjectName) -> Option<PendingApproval> {
        self.shared.read(|s| {
            (s.approvals.values())
                .filter(|a| a.project == *project)
                .max_by_key(|a| a.created_ms)
                .cloned()
        })
    }

    /// May `who` answer `approval` with `key`? The option's label if so.
    pub(super) fn check_answer(
        &mut self,
        approval: &PendingApproval,
        key: &str,
        who: &str,
    ) -> Result<String, AnswerRefused> {
        if !self.is_approver(who) {
            self.log_denied(
                who,
                Denial {
                    operator: Some(who.to_string()),
                    reason: "not an approver".into(),
                    approval: Some(approval.id.clone()),
                    ..Default::default()
                },
            );
            return Err(AnswerRefused::NotApprover);
        }
        let not_an_option = |k: &str| {
            let keys: Vec<&str> = approval.options.iter().map(|o| o.key.as_str()).collect();
            AnswerRefused::NotAnOption {
                key: k.to_string(),
                keys: keys.join(", "),
            }
        };
        if !key.contains(',') {
            let option = approval.options.iter().find(|o| o.key == key);
            return option
                .map(|o| o.name().to_owned())
                .ok_or_else(|| not_an_option(key));
        }
        // Several options at once: only a multi-select list's ticks.
        let keys = several_keys(key).ok_or_else(|| not_an_option(key))?;
        let mut names = Vec::new();
        for k in keys {
            let option = approval.options.iter().find(|o| o.key == k);
            let option = option.ok_or_else(|| not_an_option(k))?;
            if option.ticked().is_none() || option.own_words {
                return Err(AnswerRefused::Alone { key: k.to_string() });
            }
            names.push(option.name());
        }
        Ok(names.join(", "))
    }

    /// Has a checked answer typed into the approval's pane; the outcome
    /// comes back as `Answered`, which resolves the approval. The command
    /// the answer goes on with is returned.
    pub(super) fn type_answer(
        &mut self,
        approval: &PendingApproval,
        key: &str,
        who: &str,
        label: &str,
        reply: Reply,
    ) -> JobId {
        // The command this prompt belongs to, so a restarted actor reports
        // the rest of its turn (the actor ignores it when it runs one).
        let started = self.shared.read(|s| {
            (s.jobs.iter())
                .filter(|j| j.project == approval.project && j.stage.is_started())
                .min_by_key(|j| j.created_ms)
                .cloned()
        });
        let follow = match started {
            Some(j) => j,
            None => self.follow_job(approval, label),
        };
        let followed = follow.id.clone();
        if follow.target.is_run() {
            // A command a `clawmux run` started goes on for whoever
            // answers its prompt: that run ended at the prompt.
            self.shared.update(|s| {
                if let Some(j) = s.jobs.iter_mut().find(|j| j.id == followed) {
                    j.target = reply.target.clone();
                    j.reply_to = reply.reply_to.clone();
                    // Its progress card was never sent.
                    j.progress = None;
                }
            });
        }
        let cmd = ProjectCmd::Answer {
            approval_id: approval.id.clone(),
            question: approval.question.clone(),
            body: approval.body.clone(),
            key: key.to_string(),
            follow: Some(follow),
            by: who.to_string(),
            label: label.to_string(),
            reply,
        };
        self.start_answering(&approval.id);
        self.tell_project(&approval.project, cmd);
        followed
    }

    /// Marks the approval as being answered (a second answer waits for how
    /// this one ends); false if it already is, or is gone.
    fn start_answering(&self, id: &ApprovalId) -> bool {
        self.shared.update(|s| match s.approvals.get_mut(id) {
            Some(a) if a.stage == ApprovalStage::Waiting => {
                a.stage = ApprovalStage::Answering;
                true
            }
            _ => false,
        })
    }

    /// The answer being typed ended, typed or not: the approval waits
    /// again until it is resolved (or found gone).
    pub(super) fn stop_answering(&self, id: &ApprovalId) {
        self.shared.update(|s| {
            if let Some(a) = s.approvals.get_mut(id) {
                a.stage = ApprovalStage::Waiting;
            }
        });
    }

    /// The command a project adopts when an approval is answered while it
    /// runs none (after a restart): its result goes where the approval went.
    pub(super) fn follow_job(&mut self, approval: &PendingApproval, label: &str) -> Job {
        let text = format!("answer: {label}");
        let job = self.new_job(&approval.project, &text, &approval.target, None, true);
        self.shared.update(|s| s.jobs.push(job.clone()));
        job
    }

    /// The approval is answered: forget it and turn its card grey.
    pub(super) fn resolve(&mut self, approval: &PendingApproval, who: &str, choice: &str) {
        self.shared.update(|s| {
            s.approvals.remove(&approval.id);
            s.close_card(&approval.card);
        });
        self.log(LogEvent::ApprovalAnswered {
            project: approval.project.clone(),
            approval: approval.id.clone(),
            by: who.to_string(),
            choice: choice.to_string(),
        });
        let when = crate::store::clock::time_in(self.now_ms, &self.time_zone);
        self.patch(
            &approval.card,
            &present::approval_resolved_card(approval, who, choice, &when),
        );
    }

    pub(super) fn on_approval(&mut self, project: &ProjectName, job: &Option<Job>, seen: Approval) {
        // The prompt again with its body drawn since (same id), or found by
        // a restarted actor (same pane, question, options and body): keep
        // its card, and remember the actor's id for it. Another body is
        // another prompt, however alike the question.
        let known = self.shared.read(|s| {
            s.approvals
                .values()
                .find(|a| {
                    a.id == seen.id
                        || a.project == *project
                            && a.pane == seen.pane
                            && a.question == seen.question
                            && a.options == seen.options
                            && a.body == seen.body
                })
                .map(|a| a.id.clone())
        });
        if let Some(id) = known {
            // Its body drawn since the card went out, or options the pane
            // had no room for told by the agent's hook: the card shows
            // them now.
            let redrawn = self.shared.update(|s| {
                let a = (s.approvals.get_mut(&id))
                    .filter(|a| a.body != seen.body || a.options != seen.options)?;
                a.approval.body = seen.body.clone();
                a.approval.options = seen.options.clone();
                Some(a.clone())
            });
            if let Some(a) = redrawn {
                self.patch(&a.card, &approval_card(&a));
            }
            if id != seen.id {
                self.log(LogEvent::ApprovalFoundAgain {
                    project: project.clone(),
                    approval: id.clone(),
                });
                self.aliases.insert(seen.id, id);
            }
            return;
        }
        self.log(LogEvent::approval(project, &seen));
        let job_target = self.job_target(job);
        let chat_target = || Some((self.chat_for(project.as_str())?, None));
        let told = job_target.or_else(chat_target);
        // A prompt is never dropped: with no chat there (a command typed at
        // the desk in a project no chat used), the approvers are told in
        // their own chats, and `/gsd:inbox` lists it.
        if told.is_none() {
            self.tell_approvers(project, &seen.question);
        }
        let (target, reply_to) = told.unwrap_or((ChatTarget::Console, None));
        let mut pending = PendingApproval {
            approval: seen,
            project: project.clone(),
            target: target.clone(),
            // Replaced by the card's own handle once it is made from this.
            card: CardHandle::random(),
            created_ms: self.now_ms,
            // A chat is shown its card; a run, its outcome (if it still
            // waits for one: `Input::PromptShown`).
            shown: !target.is_run(),
            stage: ApprovalStage::Waiting,
        };
        let card = approval_card(&pending);
        // The approval and its card are saved together: a crash cannot
        // leave a card without its approval, or an approval without a card.
        let (handle, entry) = Self::new_card(&target, reply_to.as_deref(), &card, self.now_ms);
        pending.card = handle;
        self.shared.update(|s| {
            s.approvals.insert(pending.id.clone(), pending);
            s.queue(entry);
        });
        // `[screen] approval_picture`: the pane as it shows the prompt, as a
        // picture card right after (see `bridge::screen_picture`).
        if self.config.screen.approval_picture && matches!(target, ChatTarget::Chat { .. }) {
            let reply = Reply { target, reply_to };
            self.tell_project(project, ProjectCmd::Screen { reply });
        }
    }

    /// Each approver the config names is told that `project` asks
    /// `question` with no chat to show it in.
    fn tell_approvers(&mut self, project: &ProjectName, question: &str) {
        let title = Msg::NoChatAsked.with(&[("project", project.as_str())]);
        let text = Msg::NoChatAskedText.with(&[("question", question)]);
        let card = present::info_card(title, text);
        let approvers: Vec<UserId> = (self.config.policy.approvers.iter())
            .filter_map(|a| UserId::parse(a).ok())
            .collect();
        for id in approvers {
            self.send(&ChatTarget::User { id }, None, &card);
        }
    }

    /// The pending approvals `gone` picks left the screen: forgotten, their
    /// cards turned grey ("Answered in the terminal").
    fn close_gone(&mut self, project: &ProjectName, gone: impl Fn(&PendingApproval) -> bool) {
        let closed = self.shared.update(|s| {
            let ids: Vec<_> = (s.approvals.values().filter(|a| gone(a)))
                .map(|a| a.id.clone())
                .collect();
            let closed: Vec<PendingApproval> =
                ids.iter().filter_map(|id| s.approvals.remove(id)).collect();
            closed.iter().for_each(|a| s.close_card(&a.card));
            closed
        });
        for a in closed {
            self.log(LogEvent::ApprovalGone {
                project: project.clone(),
                approval: a.id.clone(),
            });
            self.patch(&a.card, &present::approval_gone_card(&a));
        }
    }

    /// A project's news about a prompt or an answer.
    pub(super) fn on_approval_event(
        &mut self,
        name: &ProjectName,
        job: &Option<Job>,
        kind: ProjectEventKind,
    ) {
        let project = name.to_string();
        match kind {
            ProjectEventKind::Approval(seen) => self.on_approval(name, job, seen),
            ProjectEventKind::ApprovalGone { approval_id } => {
                // A prompt re-detected after a restart kept its first id.
                let approval_id = self.aliases.remove(&approval_id).unwrap_or(approval_id);
                self.close_gone(name, |a| a.id == approval_id);
            }
            ProjectEventKind::ScreenAtStart { dialog } => {
                // Pending from before the restart, and not what the screen
                // shows: answered at the desk (or gone) meanwhile. Left
                // pending, the same prompt asked again would find it and
                // get no card.
                self.close_gone(name, |a| {
                    a.project == project.as_str()
                        && dialog.as_ref().is_none_or(|(question, body)| {
                            a.question != *question || a.body != *body
                        })
                });
            }
            ProjectEventKind::DialogMismatch {
                approval_id,
                detail,
            } => {
                let approval_id = self
                    .aliases
                    .get(&approval_id)
                    .cloned()
                    .unwrap_or(approval_id);
                self.log(LogEvent::DialogMismatch {
                    project: name.clone(),
                    approval: approval_id.clone(),
                    detail: detail.clone(),
                });
                let target = self
                    .shared
                    .read(|s| s.approvals.get(&approval_id).map(|a| a.target.clone()))
                    .unwrap_or_else(|| self.chat_of(&project));
                let text = Msg::CheckDialog.with(&[("detail", &detail)]);
                self.send(&target, None, &present::info_card(Msg::CheckPrompt, &text));
            }
            ProjectEventKind::Answered {
                approval_id,
                by,
                label,
                reply,
                result,
            } => {
                self.stop_answering(&approval_id);
                let approval = self.shared.read(|s| s.approvals.get(&approval_id).cloned());
                match (result, approval) {
                    (Ok(()), Some(a)) => self.resolve(&a, &by, &label),
                    (Ok(()), None) => {}
                    (Err(e), _) => self.error(
                        &reply.target,
                        reply.reply_to.as_deref(),
                        match e {
                            ProjectError::NotTaken { .. } => Msg::AnswerNotTaken,
                            _ => Msg::CouldNotAnswerApproval,
                        },
                        said(&e),
                        Msg::PressAgain,
                    ),
                }
            }
            ProjectEventKind::Replied {
                approval_id,
                by,
                text,
                reply,
                result,
            } => {
                self.stop_answering(&approval_id);
                let approval = self.shared.read(|s| s.approvals.get(&approval_id).cloned());
                match (result, approval) {
                    (Ok(()), Some(a)) => self.resolve(&a, &by, &text),
                    (Ok(()), None) => {}
                    (Err(e), _) => self.error(
                        &reply.target,
                        reply.reply_to.as_deref(),
                        Msg::CouldNotAnswer,
                        said(&e),
                        "",
                    ),
                }
            }
            _ => {}
        }
    }
}

/// Why an answer was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum AnswerRefused {
    #[error("You are not allowed to answer approvals.")]
    NotApprover,
    #[error("`{key}` is not one of the options ({keys})")]
    NotAnOption { key: String, keys: String },
    #[error(
        "`{key}` cannot be chosen together with others: only a multi-select list's options can"
    )]
    Alone { key: String },
}

impl present::words::ChatWords for AnswerRefused {
    fn chat_words(&self) -> crate::i18n::Text {
        match self {
            AnswerRefused::NotApprover => Msg::ErrNotApprover.text(),
            AnswerRefused::NotAnOption { key, keys } => {
                Msg::ErrNotAnOption.with(&[("key", key), ("keys", keys)])
            }
            AnswerRefused::Alone { key } => Msg::ErrNotAlone.with(&[("key", key)]),
        }
    }
}

/// The card of a waiting approval; on the console it says how to answer.
fn approval_card(pending: &PendingApproval) -> crate::message::Message {
    let card = present::approval_card(pending);
    if pending.target != ChatTarget::Console {
        return card;
    }
    let keys: Vec<&str> = pending.options.iter().map(|o| o.key.as_str()).collect();
    let mut how = Msg::ConsoleAnswerWith.with(&[("keys", &keys.join("|"))]);
    if pending.options.iter().any(|o| o.ticked().is_some()) {
        how = how.join("", &Msg::ConsoleSeveral.text());
    }
    card.push(crate::message::Block::note(how))
}

/// The option key `said` stands for: an option's own key, or else the
/// number the card shows by it (`[1] Yes`: its place, from 1) when no
/// option's key is a number itself. Aider's options are words (`yes`,
/// `no`), answered by their number like any other agent's.
pub(super) fn shown_key(options: &[ApprovalOption], said: &str) -> String {
    let said = said.trim();
    if options.iter().any(|o| o.key == said)
        || (options.iter()).any(|o| o.key.chars().all(|c| c.is_ascii_digit()))
    {
        return said.to_owned();
    }
    let place = said.parse::<usize>().ok().filter(|n| *n >= 1);
    match place.and_then(|n| options.get(n - 1)) {
        Some(o) => o.key.clone(),
        None => said.to_owned(),
    }
}

/// What a reply to an approval's card does.
#[derive(Debug, PartialEq)]
enum ReplyPlan {
    /// It names an option: answer that one.
    Option { key: String },
    /// Free words for the prompt's own text field, opened by `focus`.
    Text { focus: String },
    /// The prompt takes only its options.
    Refuse,
}

/// A reply that names an option (its number, or its label in any case)
/// answers it; other words go in the prompt's text field when it has one.
/// Otherwise the reply is refused: typed into the menu, the letters would
/// do nothing and Enter would choose whichever option has the focus.
fn reply_plan(approval: &Approval, text: &str) -> ReplyPlan {
    let said = text.trim().trim_end_matches(['.', '!']).to_lowercase();
    let said = shown_key(&approval.options, &said);
    let names = |o: &ApprovalOption| {
        o.key == said || o.name().trim().trim_end_matches('.').to_lowercase() == said
    };
    let options = approval.options.iter().filter(|o| !o.own_words);
    if let Some(o) = options.clone().find(|o| names(o)) {
        return ReplyPlan::Option { key: o.key.clone() };
    }
    // `1,3` to a multi-select list: those options (checked as an answer).
    let listed = several_keys(&said).filter(|keys| keys.len() > 1);
    if listed.is_some_and(|keys| keys.iter().all(|k| options.clone().any(|o| o.key == *k))) {
        return ReplyPlan::Option { key: said };
    }
    match approval.options.iter().find(|o| o.own_words) {
        Some(field) => ReplyPlan::Text {
            focus: field.key.clone(),
        },
        None => ReplyPlan::Refuse,
    }
}

#[cfg(test)]
mod reply_tests {
    use super::*;
    use crate::detect::ApprovalKind;

    fn prompt(labels: &[&str]) -> Approval {
        Approval {
            id: "ap".parse().unwrap(),
            session: crate::store::ids::session("cm-demo"),
            pane: crate::control::PaneId(1),
            kind: ApprovalKind::Question,
            question: "Which database should we use?".into(),
            body: String::new(),
            options: (ApprovalOption::numbered(labels).into_iter())
                .map(|o| ApprovalOption {
                    // As Claude Code's profile names its text field.
                    own_words: o.name().starts_with("Type something"),
                    ..o
                })
                .collect(),
        }
    }

    #[test]
    fn a_reply_names_an_option_fills_the_text_field_or_is_refused() {
        let bash = prompt(&["Yes", "Yes, and always allow access to shop/", "No"]);
        let option = |key: &str| ReplyPlan::Option { key: key.into() };
        assert_eq!(reply_plan(&bash, "no"), option("3"));
        assert_eq!(reply_plan(&bash, " No. "), option("3"));
        assert_eq!(reply_plan(&bash, "2"), option("2"));
        let ticks = prompt(&["[ ] Auth", "[✔] Export", "[ ] Search", "[ ] Type something"]);
        assert_eq!(reply_plan(&ticks, "1, 3"), option("1, 3"));
        assert_eq!(reply_plan(&ticks, "export"), option("2"));
        // A list with a number that is no option: words for the field.
        let field = ReplyPlan::Text { focus: "4".into() };
        assert_eq!(reply_plan(&ticks, "1,7"), field);
        // Anything else must not reach a menu without a text field.
        assert_eq!(reply_plan(&bash, "no, do not run that"), ReplyPlan::Refuse);
        assert_eq!(reply_plan(&bash, "4"), ReplyPlan::Refuse);

        let question = prompt(&["Postgres", "SQLite", "Type something.", "Chat about this"]);
        assert_eq!(reply_plan(&question, "sqlite"), option("2"));
        let text = ReplyPlan::Text { focus: "3".into() };
        assert_eq!(
            reply_plan(&question, "DuckDB, because we do analytics"),
            text
        );
        assert_eq!(
            reply_plan(&question, "type something"),
            text,
            "not the field's own row"
        );
    }

    #[test]
    fn the_number_shown_by_a_worded_option_answers_it() {
        // Aider's options are words; the card shows them as `[1] Yes`,
        // `[2] No`, `[3] Don't ask again`.
        let mut aider = prompt(&[]);
        aider.options = ["yes", "no", "don't"]
            .iter()
            .zip(["Yes", "No", "Don't ask again"])
            .map(|(key, label)| ApprovalOption {
                key: key.to_string(),
                label: label.to_string(),
                description: None,
                press: None,
                own_words: false,
            })
            .collect();
        let option = |key: &str| ReplyPlan::Option { key: key.into() };
        assert_eq!(reply_plan(&aider, "1"), option("yes"));
        assert_eq!(reply_plan(&aider, "3"), option("don't"));
        assert_eq!(reply_plan(&aider, "no"), option("no"));
        assert_eq!(reply_plan(&aider, "4"), ReplyPlan::Refuse);
        assert_eq!(shown_key(&aider.options, " 2 "), "no");
        assert_eq!(shown_key(&aider.options, "0"), "0");
        // Numbered options keep their own numbers.
        let bash = prompt(&["Yes", "No"]);
        assert_eq!(shown_key(&bash.options, "2"), "2");
    }
}
