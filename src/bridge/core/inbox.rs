//! `/gsd:inbox` (every prompt waiting for an answer, oldest first, with its
//! buttons) and reminders (`/gsd:remind`: per chat, off by default): a
//! prompt that waited longer than its chat's reminder time is shown again,
//! once. The reminder card is queued in the same state change that marks
//! the prompt reminded, so a crash neither repeats nor loses it.

use super::{Core, target_id};
use crate::bridge::channels::chat::CONSOLE_USER;
use crate::bridge::present::{self, inbox};
use crate::bridge::texts::Msg;
use crate::store::state::{ChatTarget, PendingApproval};

impl Core {
    /// The project's host, for where a prompt waits.
    fn host_of(&self, project: &str) -> Option<String> {
        self.shared
            .read(|s| s.projects.get(project).and_then(|p| p.host.clone()))
    }

    /// `/gsd:inbox`: an approver sees every chat's prompts; others this
    /// chat's only (another chat's questions are not theirs to read).
    pub(super) fn inbox(&mut self, target: &ChatTarget, reply_to: Option<&str>, sender: &str) {
        let everything = sender == CONSOLE_USER || self.policy.may_approve(sender, &self.paired);
        let mut pending: Vec<PendingApproval> = self.shared.read(|s| {
            (s.approvals.values())
                .filter(|a| everything || a.target == *target)
                .cloned()
                .collect()
        });
        pending.sort_by_key(|a| a.created_ms);
        let refs: Vec<&PendingApproval> = pending.iter().collect();
        let waiting = self.waiting_items(target, everything);
        let card = inbox::inbox_card(&refs, &waiting, |p| self.host_of(p), self.now_ms);
        self.send(target, reply_to, &card);
    }

    /// `/gsd:remind N|off` for this chat.
    pub(super) fn remind(
        &mut self,
        target: &ChatTarget,
        reply_to: Option<&str>,
        secs: Option<u64>,
    ) {
        let chat = target_id(target);
        self.shared.update(|s| match secs {
            Some(n) => s.reminders.insert(chat, n),
            None => s.reminders.remove(&chat),
        });
        let text = match secs {
            Some(n) if n % 60 == 0 => Msg::RemindMinutes.with(&[("n", &(n / 60).to_string())]),
            Some(n) => Msg::RemindSeconds.with(&[("n", &n.to_string())]),
            None => Msg::NoReminders.text(),
        };
        self.send(target, reply_to, &present::info_card(Msg::Reminders, &text));
    }

    /// Sends the reminders that fell due (called on every tick).
    pub(super) fn remind_due(&mut self) {
        let now = self.now_ms;
        let due: Vec<PendingApproval> = self.shared.read(|s| {
            if s.reminders.is_empty() {
                return Vec::new();
            }
            let mut due: Vec<PendingApproval> = (s.approvals.values())
                .filter(|a| !s.reminded.contains(&a.id))
                .filter(|a| {
                    let after = s.reminders.get(&target_id(&a.target));
                    after.is_some_and(|secs| {
                        now.saturating_sub(a.created_ms) >= secs.saturating_mul(1000)
                    })
                })
                .cloned()
                .collect();
            due.sort_by_key(|a| a.created_ms);
            due
        });
        let entries: Vec<_> = due
            .iter()
            .map(|a| {
                let card =
                    inbox::reminder_card(a, self.host_of(a.project.as_str()).as_deref(), now);
                (
                    a.id.clone(),
                    Self::new_card(&a.target, None, &card, self.now_ms).1,
                )
            })
            .collect();
        self.shared.update(|s| {
            // Forget reminders of prompts that are gone: bounded by the
            // pending prompts.
            let live = &s.approvals;
            s.reminded.retain(|id| live.contains_key(id));
            for (id, entry) in entries {
                s.reminded.insert(id);
                s.queue(entry);
            }
        });
    }
}
