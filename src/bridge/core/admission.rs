//! Who may use the bot and reach what, decided here for messages, clicks,
//! replies and built-ins: the access policy, pairing codes for unknown
//! senders (one card a code), the one polite answer a denied sender gets,
//! and the panes only approvers reach (one clawmux did not create, the
//! hosts' list). Every refusal is counted in its sender's window
//! (`access::refusals`): past its allowance it is neither logged nor
//! answered, and one summary line counts what was dropped.

use crate::bridge::texts::Msg;
use crate::store::{Denial, LogEvent};

use super::{Core, Effect, target_id};
use crate::bridge::access::pairing::PendingPairing;
use crate::bridge::access::policy::{ChatKind, Decision};
use crate::bridge::access::refusals::Verdict;
use crate::bridge::channels::chat::{CONSOLE_USER, CardClick, ChatMessage};
use crate::bridge::present;
use crate::bridge::runs::RUN_USER;
use crate::store::state::{ChatId, ChatTarget};

/// Chats whose kind (direct or group) is remembered from their messages,
/// to admit clicks in them: beyond this the memory starts over.
pub const MAX_KNOWN_CHATS: usize = 10_000;
/// Senders remembered as told that the bot does not serve them: beyond
/// this the memory starts over (each is told once more, at worst).
pub const MAX_TOLD_SENDERS: usize = 10_000;

impl Core {
    /// Applies the access policy; false when the message is not acted on.
    pub(super) fn admit(&mut self, m: &ChatMessage) -> bool {
        if m.target == ChatTarget::Console {
            return true;
        }
        let chat_id = target_id(&m.target);
        if self.chat_kinds.len() >= MAX_KNOWN_CHATS {
            self.chat_kinds.clear();
        }
        self.chat_kinds.insert(chat_id.clone(), m.kind);
        let decision = if m.rate_counted {
            (self.policy).decide(
                &m.sender,
                m.kind,
                chat_id.as_str(),
                m.mentions_bot,
                &self.paired,
            )
        } else {
            (self.policy).check(
                &m.sender,
                m.kind,
                chat_id.as_str(),
                m.mentions_bot,
                &self.paired,
                self.now,
            )
        };
        match decision {
            Decision::Allow => true,
            Decision::Ignore => false,
            Decision::Limited => {
                let denial = Denial {
                    sender: Some(m.sender.clone()),
                    chat: Some(chat_id.clone()),
                    reason: "rate limit".into(),
                    ..Default::default()
                };
                if self.log_denied(&m.sender, denial.with_text(&m.text)) {
                    let text = Msg::TooFast;
                    self.send(
                        &m.target,
                        Some(&m.message_id),
                        &present::info_card(Msg::SlowDown, text),
                    );
                }
                false
            }
            Decision::Pair => {
                self.pair(m, &chat_id);
                false
            }
            Decision::Deny { reason } => {
                let denial = Denial {
                    sender: Some(m.sender.clone()),
                    chat: Some(chat_id.clone()),
                    reason: reason.to_string(),
                    ..Default::default()
                };
                if !self.log_denied(&m.sender, denial.with_text(&m.text)) {
                    return false;
                }
                if self.denied_told.len() >= MAX_TOLD_SENDERS {
                    self.denied_told.clear();
                }
                if self.policy.reply_to_denied() && self.denied_told.insert(m.sender.clone()) {
                    let text = Msg::NotAllowedBot;
                    self.send(
                        &m.target,
                        Some(&m.message_id),
                        &present::info_card(Msg::NotAllowed, text),
                    );
                }
                false
            }
        }
    }

    /// An unknown sender under `dm_policy = "pairing"`: a code, and one
    /// card with it for the code's lifetime (asking again gets a line in
    /// the log, not another card: each card spends the app's send quota,
    /// which every chat shares). Counted in the sender's refusal window.
    fn pair(&mut self, m: &ChatMessage, chat_id: &ChatId) {
        if !self.refusal_counted(&m.sender) {
            return;
        }
        let (code, new) = self.pairing_codes.issue(&m.sender, self.now_ms);
        if !new {
            let denial = Denial {
                sender: Some(m.sender.clone()),
                chat: Some(chat_id.clone()),
                reason: "sender is not paired (its pairing code was sent)".into(),
                ..Default::default()
            };
            self.log(LogEvent::Denied(denial.with_text(&m.text)));
            return;
        }
        let pending = PendingPairing {
            open_id: m.sender.clone(),
            created_ms: self.now_ms,
        };
        let saved = code.clone();
        (self.effects).push(Effect::SavePairingCode {
            code: saved,
            pending,
        });
        self.log(LogEvent::Pairing {
            sender: m.sender.clone(),
            code: code.clone(),
        });
        let text = Msg::PairingCode.with(&[("code", &code)]);
        self.send(
            &m.target,
            Some(&m.message_id),
            &present::info_card(Msg::PairingNeeded, &text),
        );
    }

    /// Counts a refusal of `who` in its window (see [`Refusals`]): true
    /// when it is acted on (logged, answered), false when it is dropped
    /// silently. The summary of `who`'s window that ended, when one is
    /// due, is written first.
    ///
    /// [`Refusals`]: crate::bridge::access::refusals::Refusals
    pub(super) fn refusal_counted(&mut self, who: &str) -> bool {
        let (verdict, ended) = self.refusals.count(who, self.now);
        if let Some(dropped) = ended {
            let summary = Denial::summary(dropped.sender, dropped.count);
            self.log(LogEvent::Denied(summary));
        }
        verdict == Verdict::Act
    }

    /// Logs `denial`, a refusal of `who`, unless `who` is past its
    /// refusal window's allowance; whether it was logged (an answer to
    /// the refusal goes only then).
    pub(super) fn log_denied(&mut self, who: &str, denial: Denial) -> bool {
        let act = self.refusal_counted(who);
        if act {
            self.log(LogEvent::Denied(denial));
        }
        act
    }

    /// The summaries of the refusal windows that ended by now (on a tick).
    pub(super) fn summarise_refusals(&mut self) {
        for dropped in self.refusals.ended(self.now) {
            let summary = Denial::summary(dropped.sender, dropped.count);
            self.log(LogEvent::Denied(summary));
        }
    }

    /// Admits a card click like a message from its operator in its chat
    /// (no mention needed, no rate counted). A chat not seen since start
    /// (after a restart) admits an operator the policy admits in either
    /// kind of chat: a sender it does not serve at all stays out.
    pub(super) fn admit_click(&mut self, c: &CardClick) -> bool {
        if c.target == ChatTarget::Console {
            return true;
        }
        let chat_id = target_id(&c.target);
        let kinds = match self.chat_kinds.get(&chat_id) {
            Some(kind) => vec![*kind],
            None => vec![ChatKind::Direct, ChatKind::Group],
        };
        let decisions: Vec<Decision> = (kinds.into_iter())
            .map(|kind| {
                self.policy
                    .decide(&c.operator, kind, chat_id.as_str(), true, &self.paired)
            })
            .collect();
        let denied = (!decisions.contains(&Decision::Allow)).then(|| match decisions.first() {
            Some(Decision::Deny { reason }) => reason.to_string(),
            Some(Decision::Pair) => "sender is not paired".to_string(),
            _ => "not admitted".to_string(),
        });
        let Some(reason) = denied else {
            return true;
        };
        let denial = Denial {
            operator: Some(c.operator.clone()),
            chat: Some(chat_id.clone()),
            reason: format!("click: {reason}"),
            value: Some(c.value.clone()),
            ..Default::default()
        };
        self.log_denied(&c.operator, denial);
        false
    }

    /// Approvers (and the console): they answer approvals, adopt panes,
    /// and reach panes clawmux did not create.
    pub(super) fn is_approver(&self, who: &str) -> bool {
        // The operator at the desk: the console, or a shell's `clawmux run`.
        who == CONSOLE_USER || who == RUN_USER || self.policy.may_approve(who, &self.paired)
    }

    /// May `who` reach `project` (use it, see its screen, type into it,
    /// cancel in it)? A pane clawmux adopted is someone's own shell or
    /// agent: approvers only. When not, it is logged and the chat told.
    pub(super) fn may_reach(
        &mut self,
        who: &str,
        project: &str,
        target: &ChatTarget,
        reply_to: Option<&str>,
        what: &str,
    ) -> bool {
        let adopted = self
            .shared
            .read(|s| s.projects.get(project).is_some_and(|p| p.adopted.is_some()));
        if !adopted || self.is_approver(who) {
            return true;
        }
        let denial = Denial {
            sender: Some(who.to_string()),
            reason: format!("not an approver: {what} on adopted {project}"),
            ..Default::default()
        };
        self.log_denied(who, denial);
        let text = Msg::OnlyApproversAdopted.with(&[("project", project)]);
        self.error(target, reply_to, Msg::NotAllowed, &text, "");
        false
    }
}
