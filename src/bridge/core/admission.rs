//! Who may use the bot: the access policy, pairing codes for unknown
//! senders, and the one polite answer a denied sender gets.

use crate::store::{Denial, LogEvent};

use super::{Core, target_id};
use crate::bridge::access::policy::Decision;
use crate::bridge::channels::chat::ChatMessage;
use crate::bridge::present;
use crate::store::state::ChatTarget;

impl Core {
    /// Applies the access policy; false when the message is not acted on.
    pub(super) fn admit(&mut self, m: &ChatMessage) -> bool {
        if m.target == ChatTarget::Console {
            return true;
        }
        let paired = self.pairing.allowed().unwrap_or_default();
        let chat_id = target_id(&m.target);
        match self.policy.check(
            &m.sender,
            m.kind,
            &chat_id,
            m.mentions_bot,
            &paired,
            self.now,
        ) {
            Decision::Allow => true,
            Decision::Ignore => false,
            Decision::Limited => {
                self.log(LogEvent::Denied(Denial {
                    sender: Some(m.sender.clone()),
                    chat: Some(chat_id),
                    reason: "rate limit".into(),
                    text: Some(m.text.clone()),
                    ..Default::default()
                }));
                let text = "You are sending messages faster than this bot accepts; this one was dropped. Try again in a minute.";
                self.send(
                    &m.target,
                    Some(&m.message_id),
                    &present::info_card("Slow down", text),
                );
                false
            }
            Decision::Pair => match self.pairing.request(&m.sender) {
                Ok(code) => {
                    self.log(LogEvent::Pairing {
                        sender: m.sender.clone(),
                        code: code.clone(),
                    });
                    let text = format!(
                        "I don't know you yet. Your pairing code is **{code}**.\nAsk the operator to run `clawmux pairing approve {code}`."
                    );
                    self.send(
                        &m.target,
                        Some(&m.message_id),
                        &present::info_card("Pairing needed", &text),
                    );
                    false
                }
                Err(e) => {
                    self.log(LogEvent::Denied(Denial {
                        sender: Some(m.sender.clone()),
                        reason: format!("pairing failed: {e}"),
                        ..Default::default()
                    }));
                    false
                }
            },
            Decision::Deny { reason } => {
                self.log(LogEvent::Denied(Denial {
                    sender: Some(m.sender.clone()),
                    chat: Some(chat_id),
                    reason: reason.to_string(),
                    text: Some(m.text.clone()),
                    ..Default::default()
                }));
                if self.policy.reply_to_denied() && self.denied_told.insert(m.sender.clone()) {
                    let text =
                        "Sorry, you are not allowed to use this bot. Ask its operator for access.";
                    self.send(
                        &m.target,
                        Some(&m.message_id),
                        &present::info_card("Not allowed", text),
                    );
                }
                false
            }
        }
    }
}
