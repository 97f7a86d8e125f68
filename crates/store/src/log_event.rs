//! The event log's schema: every kind of line written to `events.jsonl`
//! (by the bridge, the outbox, the state store and the log itself), with its
//! fields, as one enum; the log takes nothing else, and its reader (`clawmux
//! tail`, the tests) parses lines back into the same enum. `docs/EVENTS.md`
//! describes each for operators (a test keeps it complete); `clawmux tail
//! --kind K` accepts only the names here (snake_case). [`RunDetection`] is
//! the same events as `clawmux run --format json` lists them.
//!
//! Long with its tests (a sample of every kind, checked against
//! docs/EVENTS.md); the code itself is well under 600 lines.

use super::ids::{ApprovalId, ChatId, JobId, ProjectName, SessionPane};
use clawmux_control::PaneId;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One event-log line (its `ts_ms` is added when written).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LogEvent {
    /// A chat message that passed the access policy.
    Message {
        sender: String,
        text: String,
        chat: ChatId,
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
    Use { project: ProjectName, chat: ChatId },
    /// `/gsd:new-project`: created, or chosen again.
    Project {
        project: ProjectName,
        workspace: String,
        created: bool,
    },
    /// `/gsd:cancel` sent Esc to a project's agent.
    Cancel {
        project: ProjectName,
        sender: String,
    },
    /// `/gsd:keys` or an Interrupt button: keys for a project's pane.
    /// `stage` is `intent` (written before the keys go), then `sent` or
    /// `failed`.
    Keys {
        project: ProjectName,
        by: String,
        keys: String,
        stage: String,
    },
    /// A command for an agent was accepted.
    Command {
        project: ProjectName,
        sender: String,
        text: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        job: Option<JobId>,
    },
    /// A command waits behind others.
    Queued {
        project: ProjectName,
        job: Option<JobId>,
        position: usize,
    },
    /// A command was typed (or found typed after a restart).
    Started {
        project: ProjectName,
        job: Option<JobId>,
    },
    /// Progress or an error line seen in the agent's output.
    Detection {
        project: ProjectName,
        /// `progress` or `error`.
        detection: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        summary: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        line: Option<String>,
    },
    /// A command's turn ended.
    Completed {
        project: ProjectName,
        job: Option<JobId>,
        seconds: u64,
        errors: usize,
    },
    /// A command ran past its timeout.
    Timeout {
        project: ProjectName,
        job: Option<JobId>,
        seconds: u64,
    },
    /// A command (or a project) could not run.
    Failed {
        project: ProjectName,
        #[serde(skip_serializing_if = "Option::is_none")]
        job: Option<JobId>,
        error: String,
    },
    /// A command from before a restart was handed to its project again.
    Resumed {
        project: ProjectName,
        job: JobId,
        started: bool,
        /// Its typing may have been cut short by the restart.
        typing: bool,
    },
    /// What the screen said about a command whose typing a restart cut
    /// short: `Type`, `Submit` (Enter only) or `Follow` (typed already).
    TypingResumed {
        project: ProjectName,
        job: JobId,
        decision: String,
    },
    /// The typed command was still in the agent's input box: Enter was
    /// pressed once more.
    EnterPressedAgain {
        project: ProjectName,
        job: Option<JobId>,
    },
    /// The agent never took the typed command; the chat was told.
    NotSubmitted {
        project: ProjectName,
        job: Option<JobId>,
    },
    /// `clawmux run` finished.
    Run {
        project: ProjectName,
        status: Value,
        seconds: u64,
        error: Option<String>,
    },
    /// An approval card was sent.
    Approval {
        project: ProjectName,
        approval: ApprovalId,
        /// permission, question, plan, checkpoint, …
        prompt_kind: String,
        question: String,
    },
    /// A prompt that already has a card was seen again (a restart).
    ApprovalFoundAgain {
        project: ProjectName,
        approval: ApprovalId,
    },
    /// An approval was answered from chat.
    ApprovalAnswered {
        project: ProjectName,
        approval: ApprovalId,
        by: String,
        choice: String,
    },
    /// The dialog was still on screen, unchanged, after its answer's key:
    /// the key was sent once more (`tries` keys in all).
    AnswerResent {
        project: ProjectName,
        approval: ApprovalId,
        tries: u8,
    },
    /// A prompt left the screen unanswered from chat (answered in the
    /// terminal, or its session ended).
    ApprovalGone {
        project: ProjectName,
        approval: ApprovalId,
    },
    /// A project's tmux session was created.
    SessionCreated {
        project: ProjectName,
        recovered: bool,
    },
    /// A project's tmux session or server went away.
    SessionLost {
        project: ProjectName,
        reason: String,
        retrying: bool,
    },
    /// A Claude Code hook arrived for a project's pane. `event` is the
    /// hook's meaning in Claude Code's names; `sent_as` the name the agent
    /// gave when it differs (Gemini's `AfterAgent`, Codex's notify
    /// `agent-turn-complete`, Aider's `aider-waiting`).
    Hook {
        project: ProjectName,
        pane: PaneId,
        event: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        sent_as: Option<String>,
    },
    /// A command timed out with nothing on its pane recognised (no busy
    /// marker, prompt, progress or idle box): the agent's screen may have
    /// changed beyond what detection knows (`clawmux doctor --agent`).
    DetectionDrift {
        project: ProjectName,
        job: Option<JobId>,
    },
    /// The release a project's agent said it is (`--version`), each time
    /// its pane is attached or the agent says it started; `tested`: one
    /// of the releases clawmux is tested with.
    AgentVersion {
        project: ProjectName,
        agent: String,
        version: String,
        tested: bool,
    },
    /// A project's agent is a release the tests never ran (Claude Code
    /// updates itself): what the offline self-check `doctor --agent` runs
    /// still detected on it (`detected`, `missed`), or why it did not
    /// finish (`error`). Once per project and release; the chats using the
    /// project got a card saying what to do.
    AgentUntested {
        project: ProjectName,
        agent: String,
        version: String,
        /// The releases clawmux is tested with.
        tested: Vec<String>,
        detected: Vec<String>,
        missed: Vec<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// The dialog read off a pane disagrees with what the agent's
    /// `PermissionRequest` hook says it asks (`detail`): detection may have
    /// drifted from the agent's screen; the chat was told to check it.
    DialogMismatch {
        project: ProjectName,
        approval: ApprovalId,
        detail: String,
    },
    /// A project's tmux server could not be reached (ssh's own message).
    HostDown {
        project: ProjectName,
        job: Option<JobId>,
        error: String,
    },
    /// A new client took over a project's pane after its client ended.
    Reconnected {
        project: ProjectName,
        job: Option<JobId>,
        reason: String,
    },
    /// A pane the user runs was adopted as a project.
    Adopted {
        project: ProjectName,
        pane: SessionPane,
        host: Option<String>,
        by: String,
        /// The pane's size, which clawmux leaves as it is.
        size: String,
    },
    /// An adopted pane was let go of, as it was.
    Released {
        project: ProjectName,
        pane: SessionPane,
        by: String,
    },
    /// A hook was not acted on. `pane` is what the hook claimed, as it
    /// came (maybe no pane id at all): the claim is what was refused.
    HookIgnored { pane: String, reason: String },
    /// `clawmux serve` has opened its state and its chat channel.
    Serve {
        /// The console channel rather than Feishu.
        console: bool,
        /// The configured agent command.
        agent: String,
    },
    /// `clawmux serve` stopped: a signal's name, `end of input` or `finished`.
    ServeStopped { reason: String },
    /// A card was delivered (sent, replied, patched, …) and left the outbox.
    Card {
        uuid: String,
        handle: String,
        op: String,
    },
    /// A delivery failed for now; the card stays first in the outbox.
    CardRetry {
        uuid: String,
        error: String,
        retry_in_ms: u64,
    },
    /// The first delivery that worked after failed ones.
    CardDeliveryRecovered {
        uuid: String,
        /// Since the first failed attempt.
        outage_ms: u64,
        failed_attempts: u32,
        /// Cards still waiting behind this one.
        queued: usize,
    },
    /// A card will never be delivered: a patch of a card never sent, or a
    /// card for no chat of the channel's (the console's, under Feishu).
    CardDropped {
        uuid: String,
        handle: String,
        error: String,
    },
    /// Feishu refused a card for good: moved to the dead letters.
    CardDeadLetter {
        uuid: String,
        handle: String,
        op: String,
        /// Feishu's error code (`null` when it gave none).
        code: Option<i64>,
        error: String,
        chat: Option<String>,
        /// `chat`, or `operator` when only this log says so.
        told: String,
    },
    /// A correctly signed webhook event was refused because its timestamp
    /// is `skew_secs` from this host's clock (positive: Feishu is ahead),
    /// outside ±`window_secs`: the host clock needs fixing (NTP).
    ClockSkew { skew_secs: i64, window_secs: u64 },
    /// A state path was wider than 0700/0600 (tightened when ours).
    StatePermissions {
        path: String,
        /// The mode found, octal.
        mode: String,
        /// The mode wanted, octal.
        wanted: String,
        tightened: bool,
        /// Why it was left as it is.
        problem: Option<String>,
    },
    /// The state was bad; a backup (or what could be read of it) was
    /// loaded.
    StateRecovered { problem: String, backup: String },
    /// The state and every backup were bad: empty state.
    StateReset { problem: String },
    /// The state database could not be written (once per failing stretch).
    StateError { error: String },
    /// The state database was written again after an error.
    StateSaved { note: String },
    /// A `state.json` of an earlier version was moved into the state
    /// database (`entries` rows) and kept as `kept`.
    StateMigrated {
        from: String,
        kept: String,
        entries: u64,
    },
    /// `state.db` was missing though an earlier start had migrated
    /// `state.json` into it: the files that migration left (`kept`) were
    /// not read again, and the state starts empty.
    StateDbMissing { db: String, kept: Vec<String> },
    /// The line before this one was cut short and is skipped by readers.
    LogRepaired { note: String },
    /// Records that could not be written (disk full) while the log failed,
    /// written with the first record that fits again.
    LogWriteFailed {
        count: u64,
        first_error: Option<String>,
        /// When the failing began (RFC 3339).
        since: String,
    },
}

/// Who was refused what, and why (the fields of [`LogEvent::Denied`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Denial {
    /// Who sent the message (chat) or pressed the button (`operator`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sender: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chat: Option<ChatId>,
    pub reason: String,
    /// The refused message's first [`DENIED_TEXT_BYTES`] (see
    /// [`Denial::with_text`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The whole message's length in bytes, with `text`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_bytes: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalId>,
    /// The button's callback value, as sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    /// A summary line: this many more refusals of `sender` (of the senders
    /// past the tracked ones, without `sender`) were dropped unlogged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub more: Option<u64>,
}

/// A refused message's text is logged up to this many bytes (cut at a
/// character boundary), its whole length beside it: enough to tell what
/// was sent, and a line stays small however large the message, so a
/// refused sender cannot push other records out of the rotated log.
pub const DENIED_TEXT_BYTES: usize = 256;

impl Denial {
    /// `self` with the refused message `text`: its first
    /// [`DENIED_TEXT_BYTES`] and its length.
    pub fn with_text(self, text: &str) -> Denial {
        let mut end = text.len().min(DENIED_TEXT_BYTES);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        Denial {
            text: Some(text[..end].to_owned()),
            text_bytes: Some(text.len()),
            ..self
        }
    }

    /// The line that stands for `count` refusals of `sender` (`None`: of
    /// senders nobody tracks) not logged one by one.
    pub fn summary(sender: Option<String>, count: u64) -> Denial {
        let reason = match sender {
            Some(_) => format!("{count} more refused (not logged one by one)"),
            None => format!("{count} more refused from senders past the tracked ones"),
        };
        Denial {
            sender,
            reason,
            more: Some(count),
            ..Denial::default()
        }
    }
}

/// What `clawmux run --format json` lists under `detections`: the events
/// of its one turn, without the project (the output names it once). A
/// contract the OpenClaw skill parses: fields are declared in alphabetical
/// order, as the output has always printed them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RunDetection {
    /// A progress line (`percent` when it gave one).
    Progress {
        percent: Option<u8>,
        summary: String,
    },
    /// An error line in the agent's output.
    Error { line: String },
    /// The project's tmux session went away.
    SessionLost { reason: String, retrying: bool },
    /// The project's tmux session was made (again, when `recovered`).
    SessionCreated { recovered: bool },
    /// The dialog on screen did not match the approval being answered.
    DialogMismatch { detail: String },
    /// The turn was interrupted (the agent's line saying so).
    Interrupted { line: String },
}

/// Every `kind` a log line can have, as written (a test keeps this list
/// equal to the enum's variants): what `clawmux tail --kind` accepts.
pub const KINDS: &[&str] = &[
    "message",
    "denied",
    "pairing",
    "click",
    "use",
    "project",
    "cancel",
    "command",
    "queued",
    "started",
    "detection",
    "completed",
    "timeout",
    "failed",
    "resumed",
    "typing_resumed",
    "enter_pressed_again",
    "not_submitted",
    "run",
    "approval",
    "approval_found_again",
    "approval_answered",
    "approval_gone",
    "session_created",
    "session_lost",
    "hook",
    "detection_drift",
    "host_down",
    "reconnected",
    "adopted",
    "released",
    "hook_ignored",
    "serve",
    "serve_stopped",
    "card",
    "card_retry",
    "card_delivery_recovered",
    "card_dropped",
    "card_dead_letter",
    "state_permissions",
    "state_recovered",
    "state_reset",
    "state_error",
    "state_saved",
    "state_migrated",
    "state_db_missing",
    "log_repaired",
    "log_write_failed",
    "dialog_mismatch",
    "agent_version",
    "agent_untested",
    "answer_resent",
    "keys",
    "clock_skew",
];

impl LogEvent {
    /// A prompt of `project`'s shown for an answer (`serve`'s card, `run`'s
    /// stop), as `tail --kind approval` reads it.
    pub fn approval(project: &ProjectName, seen: &super::state::Approval) -> LogEvent {
        LogEvent::Approval {
            project: project.clone(),
            approval: seen.id.clone(),
            prompt_kind: seen.kind.to_string(),
            question: seen.question.clone(),
        }
    }

    /// The line's `kind`.
    pub fn kind(&self) -> String {
        self.split().0
    }

    /// The kind and the other fields.
    pub(super) fn split(&self) -> (String, Value) {
        let mut value = serde_json::to_value(self).unwrap_or(Value::Null);
        let kind = (value.as_object_mut())
            .and_then(|o| o.remove("kind"))
            .and_then(|k| k.as_str().map(str::to_owned))
            .unwrap_or_default();
        (kind, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_snake_case_and_fields_flat() {
        let e = LogEvent::ApprovalFoundAgain {
            project: "demo".parse().unwrap(),
            approval: "ap1".parse().unwrap(),
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

    #[test]
    fn a_refused_text_is_cut_at_a_character_boundary_with_its_length() {
        let short = Denial::default().with_text("hi");
        assert_eq!(
            (short.text.as_deref(), short.text_bytes),
            (Some("hi"), Some(2))
        );
        // 'é' is two bytes: the cut falls inside one at an odd bound.
        let long = "é".repeat(DENIED_TEXT_BYTES);
        let cut = Denial::default().with_text(&format!("x{long}"));
        let text = cut.text.unwrap_or_default();
        assert!(text.len() <= DENIED_TEXT_BYTES, "{}", text.len());
        assert!(text.len() > DENIED_TEXT_BYTES - 2, "{}", text.len());
        assert!(format!("x{long}").starts_with(&text));
        assert_eq!(cut.text_bytes, Some(1 + 2 * DENIED_TEXT_BYTES));
    }
}

/// Every kind documented: each variant's kind is listed in `docs/EVENTS.md`
/// and each of its fields named (in backquotes) in the section it links to.
#[cfg(test)]
mod documented {
    use serde_json::json;

    use super::*;

    const DOC: &str = include_str!("../../../docs/EVENTS.md");

    fn s(v: &str) -> String {
        v.to_string()
    }

    /// One line of every kind, every optional field set (so it is seen).
    fn samples() -> Vec<LogEvent> {
        let job = || Some("j1".parse::<JobId>().unwrap());
        let p = || "demo".parse::<ProjectName>().unwrap();
        vec![
            LogEvent::Message {
                sender: s("ou_a"),
                text: s("hi"),
                chat: crate::ids::chat("oc_1"),
            },
            LogEvent::Denied(Denial {
                sender: Some(s("ou_a")),
                operator: Some(s("ou_a")),
                chat: Some(crate::ids::chat("oc_1")),
                reason: s("not allowed"),
                text: Some(s("hi")),
                text_bytes: Some(2),
                approval: Some("ap1".parse().unwrap()),
                value: Some(json!({})),
                more: Some(3),
            }),
            LogEvent::Pairing {
                sender: s("ou_a"),
                code: s("ABC"),
            },
            LogEvent::Click {
                operator: s("ou_a"),
                action: s("approval"),
                value: json!({}),
            },
            LogEvent::Use {
                project: p(),
                chat: crate::ids::chat("oc_1"),
            },
            LogEvent::Project {
                project: p(),
                workspace: s("/w"),
                created: true,
            },
            LogEvent::Cancel {
                project: p(),
                sender: s("ou_a"),
            },
            LogEvent::Command {
                project: p(),
                sender: s("ou_a"),
                text: s("/gsd:progress"),
                job: job(),
            },
            LogEvent::Queued {
                project: p(),
                job: job(),
                position: 1,
            },
            LogEvent::Started {
                project: p(),
                job: job(),
            },
            LogEvent::Detection {
                project: p(),
                detection: s("error"),
                summary: Some(s("wave 1")),
                line: Some(s("error: x")),
            },
            LogEvent::Completed {
                project: p(),
                job: job(),
                seconds: 1,
                errors: 0,
            },
            LogEvent::Timeout {
                project: p(),
                job: job(),
                seconds: 1,
            },
            LogEvent::Failed {
                project: p(),
                job: job(),
                error: s("e"),
            },
            LogEvent::Resumed {
                project: p(),
                job: "j1".parse().unwrap(),
                started: true,
                typing: false,
            },
            LogEvent::TypingResumed {
                project: p(),
                job: "j1".parse().unwrap(),
                decision: s("Type"),
            },
            LogEvent::EnterPressedAgain {
                project: p(),
                job: job(),
            },
            LogEvent::NotSubmitted {
                project: p(),
                job: job(),
            },
            LogEvent::Run {
                project: p(),
                status: json!("completed"),
                seconds: 1,
                error: None,
            },
            LogEvent::Approval {
                project: p(),
                approval: "ap1".parse().unwrap(),
                prompt_kind: s("permission"),
                question: s("Run?"),
            },
            LogEvent::ApprovalFoundAgain {
                project: p(),
                approval: "ap1".parse().unwrap(),
            },
            LogEvent::ApprovalAnswered {
                project: p(),
                approval: "ap1".parse().unwrap(),
                by: s("ou_a"),
                choice: s("1"),
            },
            LogEvent::AnswerResent {
                project: p(),
                approval: "ap1".parse().unwrap(),
                tries: 2,
            },
            LogEvent::Keys {
                project: p(),
                by: s("ou_a"),
                keys: s("Esc Enter"),
                stage: s("intent"),
            },
            LogEvent::ClockSkew {
                skew_secs: -420,
                window_secs: 300,
            },
            LogEvent::ApprovalGone {
                project: p(),
                approval: "ap1".parse().unwrap(),
            },
            LogEvent::SessionCreated {
                project: p(),
                recovered: false,
            },
            LogEvent::SessionLost {
                project: p(),
                reason: s("gone"),
                retrying: true,
            },
            LogEvent::Hook {
                project: p(),
                pane: PaneId(1),
                event: s("Stop"),
                sent_as: Some(s("AfterAgent")),
            },
            LogEvent::DetectionDrift {
                project: p(),
                job: job(),
            },
            LogEvent::DialogMismatch {
                project: p(),
                approval: "ap1".parse().unwrap(),
                detail: s("the buttons do not show \"SQLite\""),
            },
            LogEvent::AgentVersion {
                project: p(),
                agent: s("claude"),
                version: s("2.1.337"),
                tested: true,
            },
            LogEvent::AgentUntested {
                project: p(),
                agent: s("claude"),
                version: s("2.1.999"),
                tested: vec![s("2.1.337")],
                detected: vec![s("completion")],
                missed: vec![s("API error")],
                error: None,
            },
            LogEvent::HostDown {
                project: p(),
                job: job(),
                error: s("ssh: refused"),
            },
            LogEvent::Reconnected {
                project: p(),
                job: job(),
                reason: s("exited"),
            },
            LogEvent::Adopted {
                project: p(),
                pane: "main:%1".parse().unwrap(),
                host: Some(s("box")),
                by: s("ou_a"),
                size: s("80x24"),
            },
            LogEvent::Released {
                project: p(),
                pane: "main:%1".parse().unwrap(),
                by: s("ou_a"),
            },
            LogEvent::HookIgnored {
                pane: s("%9"),
                reason: s("not a clawmux pane"),
            },
            LogEvent::Serve {
                console: true,
                agent: s("sim"),
            },
            LogEvent::ServeStopped {
                reason: s("SIGTERM"),
            },
            LogEvent::Card {
                uuid: s("u1"),
                handle: s("h1"),
                op: s("send"),
            },
            LogEvent::CardRetry {
                uuid: s("u1"),
                error: s("HTTP 503"),
                retry_in_ms: 500,
            },
            LogEvent::CardDeliveryRecovered {
                uuid: s("u1"),
                outage_ms: 1,
                failed_attempts: 1,
                queued: 0,
            },
            LogEvent::CardDropped {
                uuid: s("u1"),
                handle: s("h1"),
                error: s("gone"),
            },
            LogEvent::CardDeadLetter {
                uuid: s("u1"),
                handle: s("h1"),
                op: s("send"),
                code: Some(230002),
                error: s("bot not in chat"),
                chat: Some(s("oc_1")),
                told: s("operator"),
            },
            LogEvent::StatePermissions {
                path: s("/s"),
                mode: s("755"),
                wanted: s("700"),
                tightened: true,
                problem: Some(s("not ours")),
            },
            LogEvent::StateRecovered {
                problem: s("bad"),
                backup: s("/s/state.json.1"),
            },
            LogEvent::StateReset { problem: s("bad") },
            LogEvent::StateError { error: s("full") },
            LogEvent::StateSaved { note: s("again") },
            LogEvent::StateMigrated {
                from: s("/s/state.json"),
                kept: s("/s/state.json.migrated"),
                entries: 3,
            },
            LogEvent::StateDbMissing {
                db: s("/s/state.db"),
                kept: vec![s("/s/state.json.migrated"), s("/s/state.json.migrated.1")],
            },
            LogEvent::LogRepaired { note: s("cut") },
            LogEvent::LogWriteFailed {
                count: 1,
                first_error: Some(s("full")),
                since: s("2026-12-01T00:00:00.000Z"),
            },
        ]
    }

    /// The variant's place in the enum. Exhaustive: a new variant does not
    /// compile until it is given a place here, and a sample above.
    fn place(e: &LogEvent) -> usize {
        use LogEvent::*;
        match e {
            Message { .. } => 0,
            Denied(_) => 1,
            Pairing { .. } => 2,
            Click { .. } => 3,
            Use { .. } => 4,
            Project { .. } => 5,
            Cancel { .. } => 6,
            Command { .. } => 7,
            Queued { .. } => 8,
            Started { .. } => 9,
            Detection { .. } => 10,
            Completed { .. } => 11,
            Timeout { .. } => 12,
            Failed { .. } => 13,
            Resumed { .. } => 14,
            TypingResumed { .. } => 15,
            EnterPressedAgain { .. } => 16,
            NotSubmitted { .. } => 17,
            Run { .. } => 18,
            Approval { .. } => 19,
            ApprovalFoundAgain { .. } => 20,
            ApprovalAnswered { .. } => 21,
            ApprovalGone { .. } => 22,
            SessionCreated { .. } => 23,
            SessionLost { .. } => 24,
            Hook { .. } => 25,
            DetectionDrift { .. } => 26,
            HostDown { .. } => 27,
            Reconnected { .. } => 28,
            Adopted { .. } => 29,
            Released { .. } => 30,
            HookIgnored { .. } => 31,
            Serve { .. } => 32,
            ServeStopped { .. } => 33,
            Card { .. } => 34,
            CardRetry { .. } => 35,
            CardDeliveryRecovered { .. } => 36,
            CardDropped { .. } => 37,
            CardDeadLetter { .. } => 38,
            StatePermissions { .. } => 39,
            StateRecovered { .. } => 40,
            StateReset { .. } => 41,
            StateError { .. } => 42,
            StateSaved { .. } => 43,
            LogRepaired { .. } => 44,
            LogWriteFailed { .. } => 45,
            DialogMismatch { .. } => 46,
            AnswerResent { .. } => 47,
            Keys { .. } => 48,
            ClockSkew { .. } => 49,
            StateMigrated { .. } => 50,
            StateDbMissing { .. } => 51,
            AgentUntested { .. } => 52,
            AgentVersion { .. } => 53,
        }
    }
    const VARIANTS: usize = 54;

    /// GitHub's anchor for a heading: lower case, spaces to `-`, other
    /// punctuation (but `-` and `_`) dropped.
    fn anchor(heading: &str) -> String {
        heading
            .trim()
            .to_lowercase()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                _ => None,
            })
            .collect()
    }

    /// The text of the section whose heading has `anchor`, to the next
    /// heading of the same or a higher level.
    fn section(anchor_: &str) -> Option<String> {
        let lines: Vec<&str> = DOC.lines().collect();
        let (start, level) = lines.iter().enumerate().find_map(|(i, l)| {
            let level = l.chars().take_while(|c| *c == '#').count();
            (level > 0 && anchor(&l[level..]) == anchor_).then_some((i, level))
        })?;
        let end = lines[start + 1..]
            .iter()
            .position(|l| {
                let n = l.chars().take_while(|c| *c == '#').count();
                n > 0 && n <= level
            })
            .map_or(lines.len(), |n| start + 1 + n);
        Some(lines[start..end].join("\n"))
    }

    #[test]
    fn kinds_lists_every_variant_once() {
        let mut written: Vec<String> = samples().iter().map(LogEvent::kind).collect();
        written.sort();
        let mut listed: Vec<String> = KINDS.iter().map(|k| k.to_string()).collect();
        listed.sort();
        assert_eq!(written, listed);
    }

    /// One schema: every line the writer makes reads back as the event
    /// it was made from; a line outside the schema reads as nothing.
    #[test]
    fn the_reader_parses_what_the_writer_writes() {
        use crate::event_log::{EventRecord, line};
        for e in samples() {
            let written = line(&e);
            let read = EventRecord::parse(written.trim_end())
                .unwrap_or_else(|| panic!("unreadable: {written}"));
            assert_eq!(read.event, e, "{written}");
            assert_eq!(read.kind, e.kind());
        }
        let ts = r#""ts":"2026-12-01T00:00:00.000Z""#;
        for foreign in [
            format!(r#"{{{ts},"kind":"bogus","project":"p"}}"#),
            format!(r#"{{{ts},"kind":"session_lost","project":"p","reason":"x"}}"#),
            format!(r#"{{{ts},"kind":"session_created","project":"p","recovered":"yes"}}"#),
        ] {
            assert_eq!(EventRecord::parse(&foreign), None, "{foreign}");
        }
    }

    /// `run --format json`'s detections read back as written.
    #[test]
    fn run_detections_round_trip() {
        let all = vec![
            RunDetection::Progress {
                percent: Some(40),
                summary: s("2/5"),
            },
            RunDetection::Error {
                line: s("error: x"),
            },
            RunDetection::SessionLost {
                reason: s("gone"),
                retrying: true,
            },
            RunDetection::SessionCreated { recovered: false },
            RunDetection::DialogMismatch { detail: s("d") },
            RunDetection::Interrupted {
                line: s("Interrupted"),
            },
        ];
        let text = serde_json::to_string(&all).unwrap();
        assert!(text.starts_with(r#"[{"kind":"progress","percent":40,"summary":"2/5"}"#));
        let back: Vec<RunDetection> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, all);
    }

    #[test]
    fn one_sample_of_every_variant() {
        let mut places: Vec<usize> = samples().iter().map(place).collect();
        places.sort_unstable();
        assert_eq!(places, (0..VARIANTS).collect::<Vec<_>>());
    }

    #[test]
    fn every_kind_and_its_fields_are_in_docs_events_md() {
        let mut missing = Vec::new();
        for e in samples() {
            let (kind, fields) = e.split();
            // Listed in "Kinds at a glance" as | [`kind`](#anchor) |.
            let listed = format!("| [`{kind}`](#");
            let Some(at) = DOC.find(&listed) else {
                missing.push(format!("kind `{kind}` is not in the table of kinds"));
                continue;
            };
            let rest = &DOC[at + listed.len()..];
            let target = rest.split(')').next().unwrap_or_default();
            let Some(text) = section(target) else {
                missing.push(format!("`{kind}` links to #{target}, which is no heading"));
                continue;
            };
            if !text.contains(&format!("`{kind}`")) && !text.contains(&format!("# {kind}")) {
                missing.push(format!("section #{target} does not name `{kind}`"));
            }
            for field in fields.as_object().into_iter().flat_map(|o| o.keys()) {
                if !text.contains(&format!("`{field}`")) {
                    missing.push(format!(
                        "section #{target} lacks `{kind}`'s field `{field}`"
                    ));
                }
            }
        }
        assert!(
            missing.is_empty(),
            "docs/EVENTS.md:\n{}",
            missing.join("\n")
        );
    }
}
