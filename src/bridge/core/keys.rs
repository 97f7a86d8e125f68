//! Keys from chat into a project's pane, for approvers only: `/gsd:keys`
//! (named keys: Esc, Enter, Tab, Shift+Tab, arrows, Ctrl-C) and the Interrupt button
//! on a running command's progress card (the agent's interrupt key, Esc,
//! through the same path as `/gsd:cancel`, whose turn end the screen then
//! confirms: the chat gets "Stopped"). Each is written to the event log
//! (`keys`, stage `intent`) before any key is sent, and again after.

use super::Core;
use crate::bridge::channels::chat::{CONSOLE_USER, CardClick, ClickAnswer, ToastLevel};
use crate::bridge::panes::keys::{NamedKey, labels};
use crate::bridge::present::words::said;
use crate::bridge::present::{self, InterruptChoice};
use crate::bridge::project::{ProjectCmd, ProjectError, Reply};
use crate::bridge::texts::Msg;
use crate::store::state::{ChatTarget, ProjectName};
use crate::store::{Denial, LogEvent};

/// The keys an interrupt's intent is logged with: the project's actor
/// knows its agent's own keys, logged when they are sent.
pub(super) const INTERRUPT_KEYS: &str = "interrupt";

impl Core {
    /// Whether `user` may send keys (approvers; the console's own user).
    fn may_send_keys(&self, user: &str) -> bool {
        user == CONSOLE_USER || self.policy.may_approve(user, &self.paired)
    }

    /// Has the agent's interrupt keys sent to `project` for `by` (checked
    /// may-cancel already); the outcome comes back as `Cancelled`.
    pub(super) fn cancel(&mut self, project: &ProjectName, by: &str, reply: Reply) {
        self.log_keys(project, by, INTERRUPT_KEYS, "intent");
        let by = by.to_string();
        self.tell_project(project, ProjectCmd::Cancel { by, reply });
    }

    pub(super) fn log_keys(&self, project: &ProjectName, by: &str, keys: &str, stage: &str) {
        self.log(LogEvent::Keys {
            project: project.clone(),
            by: by.to_string(),
            keys: keys.to_string(),
            stage: stage.to_string(),
        });
    }

    /// `/gsd:keys KEY…`: the keys to the current project's pane.
    pub(super) fn keys(
        &mut self,
        target: &ChatTarget,
        reply_to: Option<&str>,
        sender: &str,
        keys: Vec<NamedKey>,
    ) {
        let Some(project) = self.current_project(target) else {
            self.error(target, reply_to, Msg::NoProjectSelected, "/gsd:keys", "");
            return;
        };
        if !self.may_send_keys(sender) {
            self.log_denied(
                sender,
                Denial {
                    operator: Some(sender.to_string()),
                    reason: "not an approver: /gsd:keys".into(),
                    ..Default::default()
                },
            );
            let text = Msg::OnlyApproversKeys;
            self.error(target, reply_to, Msg::NotAllowed, text, "");
            return;
        }
        self.log_keys(&project, sender, &labels(&keys), "intent");
        let cmd = ProjectCmd::Keys {
            keys,
            by: sender.to_string(),
            reply: Reply {
                target: target.clone(),
                reply_to: reply_to.map(String::from),
            },
        };
        self.tell_project(&project, cmd);
    }

    /// What became of `/gsd:keys`.
    pub(super) fn keys_sent(
        &mut self,
        project: &ProjectName,
        keys: &[NamedKey],
        by: &str,
        reply: &Reply,
        result: Result<(), ProjectError>,
    ) {
        let (target, reply_to) = (&reply.target, reply.reply_to.as_deref());
        let shown = labels(keys);
        match result {
            Ok(()) => {
                self.log_keys(project, by, &shown, "sent");
                let text =
                    Msg::SentKeysCodeTo.with(&[("keys", &shown), ("project", project.as_str())]);
                self.send(target, reply_to, &present::info_card(Msg::KeysSent, &text));
            }
            Err(e) => {
                self.log_keys(project, by, &shown, "failed");
                self.error(target, reply_to, Msg::KeysNotSent, said(&e), "");
            }
        }
    }

    /// An interrupt's keys went to the pane, and its turn still runs.
    pub(super) fn interrupt_not_confirmed(
        &mut self,
        project: &ProjectName,
        by: &str,
        keys: &str,
        reply: &Reply,
        waited: std::time::Duration,
    ) {
        self.log_keys(project, by, keys, "not_confirmed");
        let text = Msg::InterruptUnconfirmed.with(&[
            ("keys", keys),
            ("project", project.as_str()),
            ("seconds", &waited.as_secs().to_string()),
        ]);
        let guidance = Msg::InterruptAgain;
        let (target, reply_to) = (&reply.target, reply.reply_to.as_deref());
        self.error(
            target,
            reply_to,
            Msg::InterruptNotConfirmed,
            &text,
            guidance,
        );
    }

    /// The Interrupt button of a running command's progress card.
    pub(super) fn click_interrupt(
        &mut self,
        c: &CardClick,
        choice: InterruptChoice,
    ) -> ClickAnswer {
        if !self.may_send_keys(&c.operator) {
            self.log_denied(
                &c.operator,
                Denial {
                    operator: Some(c.operator.clone()),
                    reason: "not an approver: interrupt".into(),
                    ..Default::default()
                },
            );
            return ClickAnswer::toast(ToastLevel::Error, Msg::OnlyApproversMayInterrupt);
        }
        let running = self
            .job(&choice.job)
            .filter(|j| j.project == choice.project && j.stage.is_started());
        let Some(job) = running else {
            return ClickAnswer::toast(ToastLevel::Warning, Msg::NoLongerRunning);
        };
        // The outcome comes back as `Cancelled` (sent, or nothing running);
        // the turn's end, read off the screen, as "Stopped".
        let reply = Reply {
            target: job.target,
            reply_to: job.reply_to,
        };
        self.cancel(&choice.project, &c.operator, reply);
        ClickAnswer::toast(ToastLevel::Info, Msg::Interrupting)
    }
}
