//! Hook payloads, sans-IO: the one-line wire [`Envelope`] `clawmux hook` sends
//! and the typed [`HookEvent`] the daemon gets back from [`decode_line`].
//!
//! Decoding is lenient about everything but `hook_event_name`: Claude Code
//! adds fields between versions, and a Stop signal must not be lost because
//! some other field changed type.

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::HookError;
use super::kind::{HookKind, HookSignal};

/// Largest hook payload accepted on stdin. Payloads are a few KiB; the
/// `tool_input` of a big `Write` can be larger, 1 MiB keeps memory bounded.
pub const MAX_PAYLOAD_BYTES: usize = 1 << 20;

/// Largest wire line: a payload plus the envelope's own fields.
pub const MAX_LINE_BYTES: usize = MAX_PAYLOAD_BYTES + 4096;

/// Longest pane id kept: `%` and up to ten digits (tmux ids are `u32`).
const MAX_PANE_DIGITS: usize = 10;

/// One line on the hook socket. `payload` is the object Claude Code wrote.
#[derive(Serialize, Deserialize)]
struct Wire<P> {
    tmux_pane: Option<String>,
    /// The project's hook token from the agent's environment (see
    /// [`super::token`]); absent from hooks of panes clawmux did not start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    token: Option<String>,
    received_at_ms: u64,
    payload: P,
}

/// A validated hook payload wrapped for the socket, newline included.
#[derive(Debug, Clone)]
pub struct Envelope {
    line: Vec<u8>,
}

impl Envelope {
    /// Wraps the bytes Claude Code gave on stdin. They must be a JSON object
    /// with a string `hook_event_name`; `tmux_pane` is dropped unless it looks
    /// like a pane id (`%3`).
    pub fn new(
        payload: &[u8],
        tmux_pane: Option<&str>,
        received_at: SystemTime,
    ) -> Result<Envelope, HookError> {
        Envelope::with_token(payload, tmux_pane, None, received_at)
    }

    /// [`Envelope::new`] carrying the project's hook `token` (dropped unless
    /// well formed).
    pub fn with_token(
        payload: &[u8],
        tmux_pane: Option<&str>,
        token: Option<&str>,
        received_at: SystemTime,
    ) -> Result<Envelope, HookError> {
        if payload.len() > MAX_PAYLOAD_BYTES {
            return Err(HookError::Payload(format!(
                "{} bytes, more than the {MAX_PAYLOAD_BYTES} accepted",
                payload.len()
            )));
        }
        let payload: Map<String, Value> = serde_json::from_slice(payload)
            .map_err(|e| HookError::Payload(format!("not a JSON object: {e}")))?;
        if !payload.get("hook_event_name").is_some_and(Value::is_string) {
            return Err(HookError::Payload("no string hook_event_name".into()));
        }
        let wire = Wire {
            tmux_pane: tmux_pane.filter(|p| is_pane_id(p)).map(str::to_owned),
            token: super::token::clean(token).map(str::to_owned),
            received_at_ms: millis_since_epoch(received_at),
            payload,
        };
        let mut line = serde_json::to_vec(&wire)
            .map_err(|e| HookError::Payload(format!("cannot encode: {e}")))?;
        line.push(b'\n');
        Ok(Envelope { line })
    }

    /// The line to write, ending in `\n`.
    pub fn as_bytes(&self) -> &[u8] {
        &self.line
    }
}

/// One hook as the daemon sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct HookEvent {
    pub event: HookKind,
    /// The `hook_event_name` as sent (`AfterAgent` for Gemini's `Stop`).
    pub name: String,
    pub session_id: Option<String>,
    pub cwd: Option<PathBuf>,
    /// The session transcript (JSONL): after a `Stop` its last assistant
    /// message is the turn's exact final text.
    pub transcript_path: Option<PathBuf>,
    /// The pane the hook ran in (`%3`), from its `TMUX_PANE`; `None` when
    /// Claude Code does not run inside tmux.
    pub tmux_pane: Option<String>,
    /// The project's hook token the agent's environment gave, if any.
    pub token: Option<String>,
    /// When `clawmux hook` read the payload.
    pub received_at: SystemTime,
}

impl HookEvent {
    /// The signal this event carries, if any.
    pub fn signal(&self) -> Option<HookSignal> {
        match &self.event {
            HookKind::Stop { .. } | HookKind::StopFailure { .. } => Some(HookSignal::TurnEnded),
            HookKind::TaskCreated { .. } | HookKind::TaskCompleted { .. } => {
                Some(HookSignal::TaskProgress)
            }
            HookKind::PermissionRequest { .. } => Some(HookSignal::ApprovalPending),
            HookKind::Notification {
                notification_type: Some(t),
                ..
            } => match t.as_str() {
                "permission_prompt" => Some(HookSignal::ApprovalPending),
                "idle_prompt" => Some(HookSignal::WaitingForInput),
                _ => None,
            },
            HookKind::SessionStart { .. } => Some(HookSignal::SessionStarted),
            HookKind::Notification { .. } | HookKind::Other(_) => None,
        }
    }
}

/// Parses one wire line (without or with its `\n`).
pub fn decode_line(line: &[u8]) -> Result<HookEvent, HookError> {
    let wire: Wire<Map<String, Value>> = serde_json::from_slice(line)
        .map_err(|e| HookError::Payload(format!("not a hook envelope: {e}")))?;
    let p = &wire.payload;
    let text = |key: &str| p.get(key).and_then(Value::as_str).map(str::to_owned);
    let name = text("hook_event_name")
        .ok_or_else(|| HookError::Payload("no string hook_event_name".into()))?;
    let event = match name.as_str() {
        "Stop" => HookKind::Stop {
            stop_hook_active: p
                .get("stop_hook_active")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            last_assistant_message: text("last_assistant_message"),
        },
        // Gemini CLI's end of a turn: its final text is `prompt_response`.
        "AfterAgent" => HookKind::Stop {
            stop_hook_active: p
                .get("stop_hook_active")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            last_assistant_message: text("prompt_response"),
        },
        // Codex's `notify` program (see [`super::notify`]): the turn ended.
        super::notify::CODEX_TURN_COMPLETE => HookKind::Stop {
            stop_hook_active: false,
            last_assistant_message: text("last-assistant-message"),
        },
        // Aider's notifications command: it waits for input (a turn's end
        // or a question: Aider runs it for both, so it only marks waiting).
        super::notify::AIDER_WAITING => HookKind::Notification {
            notification_type: Some("idle_prompt".to_owned()),
            message: "Aider is waiting for input".to_owned(),
        },
        "StopFailure" => HookKind::StopFailure {
            error: text("error"),
            last_assistant_message: text("last_assistant_message"),
        },
        "TaskCreated" => HookKind::TaskCreated {
            task_id: text("task_id"),
            task_subject: text("task_subject"),
        },
        "TaskCompleted" => HookKind::TaskCompleted {
            task_id: text("task_id"),
            task_subject: text("task_subject"),
        },
        "Notification" => HookKind::Notification {
            // Gemini CLI says `ToolPermission` where Claude Code says
            // `permission_prompt`: the same dialog.
            notification_type: text("notification_type").map(|t| match t.as_str() {
                "ToolPermission" => "permission_prompt".to_owned(),
                _ => t,
            }),
            message: text("message").unwrap_or_default(),
        },
        // Gemini CLI's `BeforeTool` (installed for its `ask_user` only):
        // what the dialog it is about to draw asks, as Claude Code's
        // `PermissionRequest` says it.
        "PermissionRequest" | "BeforeTool" => HookKind::PermissionRequest {
            tool_name: text("tool_name").unwrap_or_default(),
            tool_input: p.get("tool_input").cloned().unwrap_or(Value::Null),
        },
        "SessionStart" => HookKind::SessionStart {
            source: text("source").unwrap_or_default(),
        },
        // OpenCode's events, from its plugin.
        _ => super::opencode::kind(&name, p).unwrap_or_else(|| HookKind::Other(name.clone())),
    };
    Ok(HookEvent {
        event,
        name,
        // Codex's notify names the session `thread-id`.
        session_id: text("session_id").or_else(|| text("thread-id")),
        cwd: text("cwd").map(PathBuf::from),
        transcript_path: text("transcript_path").map(PathBuf::from),
        // Anyone running as this user can write to the socket: check again.
        tmux_pane: wire.tmux_pane.filter(|p| is_pane_id(p)),
        token: super::token::clean(wire.token.as_deref()).map(str::to_owned),
        received_at: UNIX_EPOCH + Duration::from_millis(wire.received_at_ms),
    })
}

/// `%` followed by decimal digits, as tmux prints pane ids.
fn is_pane_id(s: &str) -> bool {
    s.strip_prefix('%').is_some_and(|digits| {
        (1..=MAX_PANE_DIGITS).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit())
    })
}

fn millis_since_epoch(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn roundtrip(payload: Value, pane: Option<&str>) -> HookEvent {
        let at = UNIX_EPOCH + Duration::from_millis(1_764_400_000_123);
        let env = Envelope::new(payload.to_string().as_bytes(), pane, at).unwrap();
        assert_eq!(env.as_bytes().last(), Some(&b'\n'));
        assert_eq!(memchr::memchr_iter(b'\n', env.as_bytes()).count(), 1);
        let ev = decode_line(env.as_bytes()).unwrap();
        assert_eq!(ev.received_at, at);
        ev
    }

    #[test]
    fn each_installed_event_decodes_to_its_kind_and_signal() {
        let ev = roundtrip(
            json!({"hook_event_name": "Stop", "session_id": "s1", "cwd": "/w", "stop_hook_active": true}),
            Some("%3"),
        );
        assert_eq!(
            ev.event,
            HookKind::Stop {
                stop_hook_active: true,
                last_assistant_message: None,
            }
        );
        assert_eq!(ev.signal(), Some(HookSignal::TurnEnded));
        assert_eq!(ev.session_id.as_deref(), Some("s1"));
        assert_eq!(ev.cwd, Some(PathBuf::from("/w")));
        assert_eq!(ev.tmux_pane.as_deref(), Some("%3"));

        let cases = [
            (
                json!({"hook_event_name": "Notification", "notification_type": "permission_prompt", "message": "Claude needs your permission to use Bash"}),
                Some(HookSignal::ApprovalPending),
            ),
            (
                json!({"hook_event_name": "Notification", "notification_type": "idle_prompt", "message": "Claude is waiting for your input"}),
                Some(HookSignal::WaitingForInput),
            ),
            (
                json!({"hook_event_name": "Notification", "message": "old build"}),
                None,
            ),
            (
                json!({"hook_event_name": "PermissionRequest", "tool_name": "Bash", "tool_input": {"command": "ls"}}),
                Some(HookSignal::ApprovalPending),
            ),
            (
                json!({"hook_event_name": "SessionStart", "source": "compact"}),
                Some(HookSignal::SessionStarted),
            ),
            (
                json!({"hook_event_name": "PreToolUse", "tool_name": "Bash"}),
                None,
            ),
            // Gemini CLI's names for the same events.
            (
                json!({"hook_event_name": "AfterAgent", "prompt": "hi", "prompt_response": "Hello."}),
                Some(HookSignal::TurnEnded),
            ),
            (
                json!({"hook_event_name": "Notification", "notification_type": "ToolPermission", "message": "Allow?"}),
                Some(HookSignal::ApprovalPending),
            ),
        ];
        for (payload, signal) in cases {
            assert_eq!(
                roundtrip(payload.clone(), None).signal(),
                signal,
                "{payload}"
            );
        }
        let ev = roundtrip(
            json!({"hook_event_name": "PermissionRequest", "tool_name": "Edit", "tool_input": {"file_path": "/w/a.rs"}}),
            None,
        );
        assert_eq!(
            ev.event,
            HookKind::PermissionRequest {
                tool_name: "Edit".into(),
                tool_input: json!({"file_path": "/w/a.rs"})
            }
        );
    }

    #[test]
    fn a_field_of_an_unexpected_type_does_not_lose_the_event() {
        let ev = roundtrip(
            json!({"hook_event_name": "Stop", "stop_hook_active": "yes", "session_id": 7}),
            None,
        );
        assert_eq!(
            ev.event,
            HookKind::Stop {
                stop_hook_active: false,
                last_assistant_message: None,
            }
        );
        assert_eq!(ev.session_id, None);
    }

    #[test]
    fn only_pane_ids_are_kept() {
        for bad in ["3", "%", "%3a", "%12345678901", "%3; rm -rf /", ""] {
            let ev = roundtrip(json!({"hook_event_name": "Stop"}), Some(bad));
            assert_eq!(ev.tmux_pane, None, "{bad:?}");
        }
        // A forged line with a bad pane is cleaned on the daemon side too.
        let forged =
            br#"{"tmux_pane":"%1 x","received_at_ms":0,"payload":{"hook_event_name":"Stop"}}"#;
        assert_eq!(decode_line(forged).unwrap().tmux_pane, None);
    }

    #[test]
    fn payloads_that_are_not_hooks_are_refused() {
        let now = SystemTime::now();
        for bad in [
            &b""[..],
            b"garbage",
            b"[1,2]",
            b"{}",
            br#"{"hook_event_name": 3}"#,
            b"{\"hook_event_name\": \"Stop\"",
        ] {
            let err = Envelope::new(bad, None, now).unwrap_err();
            assert!(matches!(err, HookError::Payload(_)), "{bad:?}: {err}");
        }
        let big = vec![b' '; MAX_PAYLOAD_BYTES + 1];
        assert!(Envelope::new(&big, None, now).is_err());
        for bad in [
            &b"{}"[..],
            b"not json",
            br#"{"tmux_pane":null,"received_at_ms":1,"payload":{}}"#,
        ] {
            assert!(decode_line(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_pretty_printed_payload_still_fits_on_one_line() {
        let payload = b"{\n  \"hook_event_name\": \"Stop\",\n  \"message\": \"a\\nb\"\n}\n";
        let env = Envelope::new(payload, None, SystemTime::now()).unwrap();
        assert_eq!(memchr::memchr_iter(b'\n', env.as_bytes()).count(), 1);
    }
}
