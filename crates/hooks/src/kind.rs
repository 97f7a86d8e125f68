//! What a hook event is: the kinds of event clawmux installs hooks for,
//! with the fields it reads (parsed from payloads in `event`, from
//! OpenCode's plugin in `opencode`), and the signals they give the daemon.

use serde_json::Value;

/// The hook events clawmux installs, with the fields it uses.
#[derive(Debug, Clone, PartialEq)]
pub enum HookKind {
    /// End of a turn (not sent when the user presses Esc, nor after "No" at
    /// a permission dialog). `last_assistant_message` is the turn's final
    /// text (Claude Code 2.1.x).
    Stop {
        stop_hook_active: bool,
        last_assistant_message: Option<String>,
    },
    /// End of a turn that failed on an API error (sent instead of `Stop`).
    /// `error` is Claude Code's category: `server_error`,
    /// `authentication_failed`, `unknown`, …
    StopFailure {
        error: Option<String>,
        last_assistant_message: Option<String>,
    },
    /// `notification_type` is `permission_prompt`, `idle_prompt`, or another
    /// type from a newer Claude Code; `None` from builds that predate it.
    Notification {
        notification_type: Option<String>,
        message: String,
    },
    /// The permission dialog is about to be shown: for a tool, and for
    /// AskUserQuestion and ExitPlanMode too. [`HookKind::tool_request`]
    /// reads `tool_input`.
    PermissionRequest {
        tool_name: String,
        tool_input: Value,
    },
    /// A task was added to the agent's task list.
    TaskCreated {
        task_id: Option<String>,
        task_subject: Option<String>,
    },
    /// A task of the list was completed.
    TaskCompleted {
        task_id: Option<String>,
        task_subject: Option<String>,
    },
    /// `source` is `startup`, `resume`, `clear` or `compact`.
    SessionStart { source: String },
    /// Any other event, by its `hook_event_name`.
    Other(String),
}

/// What a hook tells the detector, independent of the pane text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookSignal {
    /// The turn is over: completion is certain, no debounce needed. Sent
    /// for `Stop` and for `StopFailure` (the event says which).
    TurnEnded,
    /// The agent's task list moved (a task created or completed).
    TaskProgress,
    /// Claude Code waits for a permission answer.
    ApprovalPending,
    /// Claude Code has been idle at its prompt, waiting for input.
    WaitingForInput,
    /// A session started, resumed, was cleared or compacted.
    SessionStarted,
}

impl HookKind {
    /// What a `PermissionRequest` asks about; `None` for other events.
    pub fn tool_request(&self) -> Option<crate::ToolRequest> {
        match self {
            HookKind::PermissionRequest {
                tool_name,
                tool_input,
            } => Some(crate::ToolRequest::parse(tool_name, tool_input)),
            _ => None,
        }
    }
}
