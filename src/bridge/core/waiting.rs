//! Claude Code's `Notification` hooks as the "waiting" signal: with
//! clawmux's hooks installed, `permission_prompt` (a dialog waits for an
//! answer) and `idle_prompt` (the agent has sat at its prompt, waiting for
//! input) mark the project as waiting on someone. `/gsd:inbox` lists such a
//! project when no prompt card already stands for it, so a dialog the
//! screen reading missed, or an agent idle since its last answer, is seen.
//!
//! A signal is kept in memory, one per project (so bounded by the
//! projects), and dropped when the project moves on: a command typed, a
//! prompt answered.

use super::Core;
use crate::bridge::present::inbox::WaitingItem;
use crate::store::state::ChatTarget;
use crate::store::state::ProjectName;

/// Longest notification message kept, in chars (Claude Code's are one
/// short sentence).
const MAX_MESSAGE_CHARS: usize = 300;

/// What a project waits for, by its agent's own word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    /// `permission_prompt` or `idle_prompt`.
    pub kind: String,
    pub message: String,
    pub since_ms: u64,
}

impl Core {
    /// A `Notification` hook of `kind` from `project`'s agent.
    pub(super) fn note_waiting(&mut self, project: &ProjectName, kind: &str, message: &str) {
        if kind != "permission_prompt" && kind != "idle_prompt" {
            return;
        }
        let since_ms = match self.waiting.get(project) {
            // Claude Code repeats idle_prompt: the wait began at the first.
            Some(w) if w.kind == kind => w.since_ms,
            _ => self.now_ms,
        };
        let message: String = message.chars().take(MAX_MESSAGE_CHARS).collect();
        let w = Waiting {
            kind: kind.to_string(),
            message,
            since_ms,
        };
        self.waiting.insert(project.clone(), w);
    }

    /// The project moved on: it waits no more.
    pub(super) fn not_waiting(&mut self, project: &str) {
        self.waiting.remove(project);
    }

    /// Waiting projects to list in `target`'s inbox (every chat's when
    /// `everything`), oldest first, leaving out those a prompt card
    /// already stands for.
    pub(super) fn waiting_items(&self, target: &ChatTarget, everything: bool) -> Vec<WaitingItem> {
        let carded: Vec<ProjectName> =
            (self.shared).read(|s| s.approvals.values().map(|a| a.project.clone()).collect());
        let mut items: Vec<WaitingItem> = (self.waiting.iter())
            .filter(|(p, _)| !carded.contains(p))
            .filter(|(p, _)| everything || self.chat_of(p.as_str()) == *target)
            .map(|(p, w)| WaitingItem {
                project: p.clone(),
                host: self
                    .shared
                    .read(|s| s.projects.get(p.as_str()).and_then(|r| r.host.clone())),
                permission: w.kind == "permission_prompt",
                message: w.message.clone(),
                since_ms: w.since_ms,
            })
            .collect();
        items.sort_by_key(|i| i.since_ms);
        items
    }
}
