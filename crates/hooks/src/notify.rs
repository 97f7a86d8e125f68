//! The notification programs of agents without Claude Code's hooks, read
//! as hook payloads: `clawmux hook --from codex-notify` and `clawmux hook
//! --from aider-waiting`.
//!
//! - Codex runs its `notify = [argv…]` program at every turn end with one
//!   more argument: a JSON object `{"type": "agent-turn-complete",
//!   "thread-id", "turn-id", "cwd", "input-messages",
//!   "last-assistant-message"}`. It becomes a payload named after its
//!   `type`, which [`super::decode_line`] reads as a `Stop` with its last
//!   message. Other types (none in 0.171.0) are refused: a future event
//!   must not end a turn by mistake. Codex 0.171.0 also runs `notify` for
//!   the side thread that names the session (a thread of its own whose one
//!   input is its title prompt, answered `{"title": …}`), at the start of
//!   the user's first turn: read as a turn end it would end that turn
//!   before its work. Such a notification is refused by its prompt
//!   ([`CODEX_TITLE_PROMPT`]).
//! - Aider runs its `--notifications-command` through the shell, with no
//!   payload at all, whenever it waits for the user after a model call:
//!   at its prompt after a turn and at a yes/no question alike. So it only
//!   says "waiting" (Claude Code's `idle_prompt`), never "turn ended".
//!
//! Both carry the working directory (where the agent runs) so the daemon's
//! workspace check applies to them as to Claude Code's hooks; the token
//! and pane come from the environment as for any hook.

use std::path::Path;

use serde_json::{Map, Value};

use super::{HookError, MAX_PAYLOAD_BYTES};

/// The payload name of Codex's turn-end notification (its `type`).
pub const CODEX_TURN_COMPLETE: &str = "agent-turn-complete";

/// How the prompt of Codex's thread-title side thread begins (measured on
/// 0.171.0). Its notification is not the user's turn.
pub const CODEX_TITLE_PROMPT: &str = "Generate a concise, single-line task title";

/// The payload name `clawmux hook --from aider-waiting` gives Aider's
/// notification (Aider sends none of its own).
pub const AIDER_WAITING: &str = "aider-waiting";

/// Where a `clawmux hook` payload comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A hook payload on stdin (Claude Code, Codex's and Gemini's hooks).
    Stdin,
    /// Codex's `notify` program: the JSON is the last argument.
    CodexNotify,
    /// Aider's `--notifications-command`: no payload.
    AiderWaiting,
}

/// The hook payload for Codex's notify argument `arg`, with `cwd` added
/// when Codex did not say where it runs.
pub fn codex_notify(arg: &[u8], cwd: Option<&Path>) -> Result<Vec<u8>, HookError> {
    if arg.len() > MAX_PAYLOAD_BYTES {
        return Err(HookError::Payload(format!(
            "{} bytes, more than the {MAX_PAYLOAD_BYTES} accepted",
            arg.len()
        )));
    }
    let mut payload: Map<String, Value> = serde_json::from_slice(arg)
        .map_err(|e| HookError::Payload(format!("Codex notify: not a JSON object: {e}")))?;
    match payload.get("type").and_then(Value::as_str) {
        Some(CODEX_TURN_COMPLETE) => {}
        Some(other) => {
            return Err(HookError::Payload(format!(
                "Codex notify of type {other:?} is not read"
            )));
        }
        None => return Err(HookError::Payload("Codex notify without a type".into())),
    }
    let first_input = (payload.get("input-messages").and_then(Value::as_array))
        .and_then(|m| m.first())
        .and_then(Value::as_str);
    if first_input.is_some_and(|m| m.trim_start().starts_with(CODEX_TITLE_PROMPT)) {
        return Err(HookError::Payload(
            "Codex notify of its thread-title side thread, not a turn".into(),
        ));
    }
    payload.insert("hook_event_name".into(), CODEX_TURN_COMPLETE.into());
    add_cwd(&mut payload, cwd);
    encode(&payload)
}

/// The hook payload for one run of Aider's notifications command.
pub fn aider_waiting(cwd: Option<&Path>) -> Result<Vec<u8>, HookError> {
    let mut payload = Map::new();
    payload.insert("hook_event_name".into(), AIDER_WAITING.into());
    add_cwd(&mut payload, cwd);
    encode(&payload)
}

fn add_cwd(payload: &mut Map<String, Value>, cwd: Option<&Path>) {
    if !payload.get("cwd").is_some_and(Value::is_string)
        && let Some(cwd) = cwd.and_then(Path::to_str)
    {
        payload.insert("cwd".into(), cwd.into());
    }
}

fn encode(payload: &Map<String, Value>) -> Result<Vec<u8>, HookError> {
    serde_json::to_vec(payload).map_err(|e| HookError::Payload(format!("cannot encode: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Envelope, HookKind, HookSignal, decode_line};
    use serde_json::json;
    use std::time::SystemTime;

    const TOKEN: &str = "0123456789abcdef0123456789abcdef";

    fn decoded(payload: &[u8]) -> crate::HookEvent {
        let env = Envelope::with_token(payload, Some("%4"), Some(TOKEN), SystemTime::now())
            .expect("a hook payload");
        decode_line(env.as_bytes()).expect("decodes")
    }

    #[test]
    fn codex_turn_complete_is_a_stop_with_its_last_message() {
        let arg = json!({
            "type": "agent-turn-complete",
            "thread-id": "0199-a",
            "turn-id": "1",
            "cwd": "/w/shop",
            "input-messages": ["make a file"],
            "last-assistant-message": "Made it."
        })
        .to_string();
        let ev = decoded(&codex_notify(arg.as_bytes(), Some(Path::new("/elsewhere"))).unwrap());
        assert_eq!(
            ev.event,
            HookKind::Stop {
                stop_hook_active: false,
                last_assistant_message: Some("Made it.".into()),
            }
        );
        assert_eq!(ev.signal(), Some(HookSignal::TurnEnded));
        // Codex's own cwd wins over the process's.
        assert_eq!(ev.cwd.as_deref(), Some(Path::new("/w/shop")));
        assert_eq!(ev.session_id.as_deref(), Some("0199-a"));
        assert_eq!(ev.tmux_pane.as_deref(), Some("%4"));

        let bare = codex_notify(br#"{"type":"agent-turn-complete"}"#, Some(Path::new("/w")));
        let ev = decoded(&bare.unwrap());
        assert_eq!(ev.cwd.as_deref(), Some(Path::new("/w")));
        assert_eq!(
            ev.event,
            HookKind::Stop {
                stop_hook_active: false,
                last_assistant_message: None,
            }
        );
    }

    #[test]
    fn codex_notifications_that_are_not_a_turn_end_are_refused() {
        for bad in [
            &b""[..],
            b"[]",
            b"not json",
            br#"{"thread-id":"x"}"#,
            br#"{"type":"approval-requested"}"#,
            br#"{"type":7}"#,
            br#"{"type":"agent-turn-complete","input-messages":["Generate a concise, single-line task title of at most 36 characters. User prompt:\nfix it"],"last-assistant-message":"{\"title\":\"Fix it\"}"}"#,
        ] {
            assert!(
                matches!(codex_notify(bad, None), Err(HookError::Payload(_))),
                "{bad:?}"
            );
        }
        let big = vec![b' '; MAX_PAYLOAD_BYTES + 1];
        assert!(codex_notify(&big, None).is_err());
    }

    #[test]
    fn aider_waiting_marks_waiting_not_a_turn_end() {
        let ev = decoded(&aider_waiting(Some(Path::new("/w/repo"))).unwrap());
        assert_eq!(ev.signal(), Some(HookSignal::WaitingForInput));
        assert!(matches!(
            ev.event,
            HookKind::Notification { notification_type: Some(ref t), .. } if t == "idle_prompt"
        ));
        assert_eq!(ev.cwd.as_deref(), Some(Path::new("/w/repo")));
        assert_eq!(ev.token.as_deref(), Some(TOKEN));
        assert_eq!(decoded(&aider_waiting(None).unwrap()).cwd, None);
    }
}
