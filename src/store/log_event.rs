//! The event log's schema: every kind of line the bridge writes, with its
//! fields, as one enum. `docs/EVENTS.md` describes each for operators;
//! `clawmux tail --kind K` filters on the names here (snake_case).

use serde::Serialize;
use serde_json::Value;

use super::EventLog;

/// One event-log line (its `ts_ms` is added when written).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LogEvent {
    /// A chat message that passed the access policy.
    Message {
        sender: String,
        text: String,
        chat: String,
    },
    /// Someone was refused: not allowed, not an approver, a forged or
    /// unknown button, a rate limit.
    Denied(Denial),
    /// An unknown sender was given a pairing code.
    Pairing { sender: String, code: String },
    /// A card button was pressed.
    Click {
        operator: String,
        action: String,
        value: Value,
    },
    /// A chat chose its project.
    Use { project: String, chat: String },
    /// `/gsd:new-project`: created, or chosen again.
    Project {
        project: String,
        workspace: String,
        created: bool,
    },
    /// `/gsd:cancel` sent Esc to a project's agent.
    Cancel { project: String, sender: String },
    /// A command for an agent was accepted.
    Command {
        project: String,
        sender: String,
        text: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        job: Option<String>,
    },
    /// A command waits behind others.
    Queued {
        project: String,
        job: Option<String>,
        position: usize,
    },
    /// A command was typed (or found typed after a restart).
    Started {
        project: String,
        job: Option<String>,
    },
    /// Progress or an error line seen in the agent's output.
    Detection {
        project: String,
        /// `progress` or `error`.
        detection: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        summary: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        line: Option<String>,
    },
    /// A command's turn ended.
    Completed {
        project: String,
        job: Option<String>,
        seconds: u64,
        errors: usize,
    },
    /// A command ran past its timeout.
    Timeout {
        project: String,
        job: Option<String>,
        seconds: u64,
    },
    /// A command (or a project) could not run.
    Failed {
        project: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        job: Option<String>,
        error: String,
    },
    /// A command from before a restart was handed to its project again.
    Resumed {
        project: String,
        job: String,
        started: bool,
        /// Its typing may have been cut short by the restart.
        typing: bool,
    },
    /// What the screen said about a command whose typing a restart cut
    /// short: `Type`, `Submit` (Enter only) or `Follow` (typed already).
    TypingResumed {
        project: String,
        job: String,
        decision: String,
    },
    /// The typed command was still in the agent's input box: Enter was
    /// pressed once more.
    EnterPressedAgain {
        project: String,
        job: Option<String>,
    },
    /// The agent never took the typed command; the chat was told.
    NotSubmitted {
        project: String,
        job: Option<String>,
    },
    /// `clawmux run` finished.
    Run {
        project: String,
        status: Value,
        seconds: u64,
        error: Option<String>,
    },
    /// An approval card was sent.
    Approval {
        project: String,
        approval: String,
        /// permission, question, plan, checkpoint, …
        prompt_kind: String,
        question: String,
    },
    /// A prompt that already has a card was seen again (a restart).
    ApprovalFoundAgain { project: String, approval: String },
    /// An approval was answered from chat.
    ApprovalAnswered {
        project: String,
        approval: String,
        by: String,
        choice: String,
    },
    /// A prompt left the screen unanswered from chat (answered in the
    /// terminal, or its session ended).
    ApprovalGone { project: String, approval: String },
    /// A project's tmux session was created.
    SessionCreated { project: String, recovered: bool },
    /// A project's tmux session or server went away.
    SessionLost {
        project: String,
        reason: String,
        retrying: bool,
    },
    /// A Claude Code hook arrived for a project's pane.
    Hook {
        project: String,
        pane: String,
        event: String,
    },
    /// A command timed out with nothing on its pane recognised (no busy
    /// marker, prompt, progress or idle box): the agent's screen may have
    /// changed beyond what detection knows (`clawmux doctor --agent`).
    DetectionDrift {
        project: String,
        job: Option<String>,
    },
    /// The dialog read off a pane disagrees with what the agent's
    /// `PermissionRequest` hook says it asks (`detail`): detection may have
    /// drifted from the agent's screen; the chat was told to check it.
    DialogMismatch {
        project: String,
        approval: String,
        detail: String,
    },
    /// A project's tmux server could not be reached (ssh's own message).
    HostDown {
        project: String,
        job: Option<String>,
        error: String,
    },
    /// A new client took over a project's pane after its client ended.
    Reconnected {
        project: String,
        job: Option<String>,
        reason: String,
    },
    /// A pane the user runs was adopted as a project.
    Adopted {
        project: String,
        pane: String,
        host: Option<String>,
        by: String,
        /// The pane's size, which clawmux leaves as it is.
        size: String,
    },
    /// An adopted pane was let go of, as it was.
    Released {
        project: String,
        pane: String,
        by: String,
    },
    /// A hook was not acted on.
    HookIgnored { pane: String, reason: String },
}

/// Who was refused what, and why (the fields of [`LogEvent::Denied`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Denial {
    /// Who sent the message (chat) or pressed the button (`operator`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sender: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chat: Option<String>,
    pub reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval: Option<String>,
    /// The button's callback value, as sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
}

impl LogEvent {
    /// The line's `kind`.
    pub fn kind(&self) -> String {
        self.split().0
    }

    /// The kind and the other fields.
    fn split(&self) -> (String, Value) {
        let mut value = serde_json::to_value(self).unwrap_or(Value::Null);
        let kind = (value.as_object_mut())
            .and_then(|o| o.remove("kind"))
            .and_then(|k| k.as_str().map(str::to_owned))
            .unwrap_or_default();
        (kind, value)
    }
}

impl EventLog {
    /// Appends `event`; a failure is reported through `tracing` (the log
    /// must never stop the work).
    pub fn event(&self, event: &LogEvent) {
        let (kind, fields) = event.split();
        self.record(&kind, fields);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_snake_case_and_fields_flat() {
        let e = LogEvent::ApprovalFoundAgain {
            project: "demo".into(),
            approval: "ap1".into(),
        };
        assert_eq!(e.kind(), "approval_found_again");
        let (_, fields) = e.split();
        assert_eq!(
            fields,
            serde_json::json!({"project": "demo", "approval": "ap1"})
        );
        let denied = LogEvent::Denied(Denial {
            sender: Some("ou_eve".into()),
            reason: "not allowed".into(),
            ..Default::default()
        });
        assert_eq!(
            denied.split().1,
            serde_json::json!({"sender": "ou_eve", "reason": "not allowed"})
        );
    }
}
