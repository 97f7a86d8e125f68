//! OpenCode's events as hooks: the plugin clawmux writes into OpenCode's
//! config (`<config>/plugin/clawmux.js`, loaded at start) and what its
//! payloads mean on the daemon side.
//!
//! OpenCode has no hook commands; a plugin receives its bus events. The
//! plugin forwards `session.idle`, `session.status`, `session.error`,
//! `permission.asked`, `permission.replied` and `question.asked` to
//! `clawmux hook` on stdin, one JSON object each: `hook_event_name` is
//! OpenCode's event type, `cwd` the directory OpenCode runs in,
//! `session_id`, the event's own `properties` under `opencode`, and for
//! `session.idle` how the turn ended (`outcome`: `done`, `error`,
//! `interrupted`, `rejected`) with its final text. `clawmux hook` runs
//! with OpenCode's environment (`TMUX_PANE`, the project's hook token,
//! `CLAWMUX_HOME`), so these reach the daemon as Claude Code's hooks do:
//!
//! - `session.idle` after a turn that finished arrives as a `Stop` with
//!   the final text as `last_assistant_message`: the answer's record, not
//!   the turn's end. It can come before `session.error` or before the
//!   screen settles, so the screen (its closing row or error box) ends
//!   the turn, and the record is the answer of a turn that finished.
//!   After a turn that failed, was interrupted or whose command was
//!   rejected it carries nothing.
//! - `permission.asked` and `question.asked` are a `permission_prompt`
//!   notification: a dialog waits, the screen is read at once.
//! - The rest are logged by name.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::HookError;
use super::kind::HookKind;

/// The plugin's file name in OpenCode's `plugin` directory.
pub const PLUGIN_FILE: &str = "clawmux.js";

/// The OpenCode events the plugin forwards.
pub const EVENTS: [&str; 6] = [
    "session.idle",
    "session.status",
    "session.error",
    "permission.asked",
    "permission.replied",
    "question.asked",
];

/// Longest text of a notification's message kept (a permission's
/// patterns, a question): a chat line, not a document.
const MAX_MESSAGE_CHARS: usize = 500;

/// The plugin, running `clawmux` (an absolute path) for each event.
pub fn plugin_source(clawmux: &Path) -> String {
    let bin = Value::String(clawmux.display().to_string());
    let events = Value::from(EVENTS.to_vec());
    PLUGIN_TEMPLATE
        .replace("__CLAWMUX__", &bin.to_string())
        .replace("__EVENTS__", &events.to_string())
}

/// Writes the plugin into OpenCode's config directory `config_dir`
/// (`~/.config/opencode`): `plugin/clawmux.js`. Returns its path.
pub fn install_plugin(config_dir: &Path, clawmux: &Path) -> Result<PathBuf, HookError> {
    let dir = config_dir.join("plugin");
    std::fs::create_dir_all(&dir).map_err(HookError::io("create", &dir))?;
    let path = dir.join(PLUGIN_FILE);
    std::fs::write(&path, plugin_source(clawmux)).map_err(HookError::io("write", &path))?;
    Ok(path)
}

/// What the OpenCode event `name` with payload `p` is as a hook, or
/// `None` when `name` is not one the plugin sends.
pub(super) fn kind(name: &str, p: &Map<String, Value>) -> Option<HookKind> {
    if !EVENTS.contains(&name) {
        return None;
    }
    let text = |key: &str| p.get(key).and_then(Value::as_str).map(str::to_owned);
    let props = p.get("opencode").and_then(Value::as_object);
    let prop = |key: &str| props.and_then(|o| o.get(key));
    Some(match name {
        "session.idle" if text("outcome").as_deref() == Some("done") => HookKind::Stop {
            stop_hook_active: false,
            last_assistant_message: text("last_assistant_message"),
        },
        "permission.asked" => {
            let what = prop("permission")
                .and_then(Value::as_str)
                .unwrap_or("a tool");
            let patterns: Vec<&str> = (prop("patterns").and_then(Value::as_array))
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            HookKind::Notification {
                notification_type: Some("permission_prompt".to_owned()),
                message: bounded(&format!(
                    "OpenCode asks to run {what}: {}",
                    patterns.join(" ")
                )),
            }
        }
        "question.asked" => {
            let question = (prop("questions").and_then(Value::as_array))
                .and_then(|q| q.first())
                .and_then(|q| q.get("question"))
                .and_then(Value::as_str)
                .unwrap_or("a question");
            HookKind::Notification {
                notification_type: Some("permission_prompt".to_owned()),
                message: bounded(&format!("OpenCode asks: {question}")),
            }
        }
        _ => HookKind::Other(name.to_owned()),
    })
}

fn bounded(text: &str) -> String {
    text.chars().take(MAX_MESSAGE_CHARS).collect()
}

/// The plugin. `__CLAWMUX__` and `__EVENTS__` are replaced with JSON.
/// It never throws into OpenCode and never waits on `clawmux hook`: a
/// daemon that is away costs one short-lived process per event.
const PLUGIN_TEMPLATE: &str = r#"// Written by clawmux: forwards OpenCode's session events to `clawmux hook`.
import { spawn } from "node:child_process";

const CLAWMUX = __CLAWMUX__;
const EVENTS = new Set(__EVENTS__);

export const ClawmuxPlugin = async ({ directory }) => {
  // Per session: how the turn going on ended (an error, an interrupt, a
  // rejected permission), and the text parts of its last answer.
  const outcome = new Map();
  const roles = new Map();
  const answer = new Map();
  const send = (payload) => {
    try {
      const child = spawn(CLAWMUX, ["hook"], { stdio: ["pipe", "ignore", "ignore"] });
      child.on("error", () => {});
      child.stdin.on("error", () => {});
      child.stdin.end(JSON.stringify(payload));
    } catch {}
  };
  return {
    event: async ({ event }) => {
      try {
        const p = event.properties ?? {};
        if (event.type === "message.updated" && p.info) {
          roles.set(p.info.id, p.info.role);
          if (roles.size > 1000) roles.clear();
          return;
        }
        if (event.type === "message.part.updated" && p.part?.type === "text") {
          const part = p.part;
          if (roles.get(part.messageID) !== "assistant") return;
          const last = answer.get(part.sessionID);
          const parts = last && last.message === part.messageID ? last.parts : new Map();
          parts.set(part.id, part.text ?? "");
          answer.set(part.sessionID, { message: part.messageID, parts });
          return;
        }
        if (!EVENTS.has(event.type)) return;
        const sid = p.sessionID ?? null;
        const payload = { hook_event_name: event.type, cwd: directory, session_id: sid, opencode: p };
        if (event.type === "session.error" && sid) {
          const name = p.error?.name ?? "";
          outcome.set(sid, name === "MessageAbortedError" ? "interrupted" : "error");
        }
        if (event.type === "permission.replied" && sid) {
          const reply = p.reply ?? p.response;
          if (reply === "reject") outcome.set(sid, "rejected");
        }
        if (event.type === "session.idle") {
          payload.outcome = outcome.get(sid) ?? "done";
          const last = answer.get(sid);
          if (last) payload.last_assistant_message = [...last.parts.values()].join("\n").trim();
          outcome.delete(sid);
          answer.delete(sid);
        }
        send(payload);
      } catch {}
    },
  };
};
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kind_of(payload: Value) -> Option<HookKind> {
        let p = payload.as_object().cloned().unwrap_or_default();
        let name = p
            .get("hook_event_name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        kind(&name, &p)
    }

    #[test]
    fn a_finished_turn_is_a_stop_and_others_end_nothing() {
        assert_eq!(
            kind_of(
                json!({"hook_event_name": "session.idle", "outcome": "done", "last_assistant_message": "Done."})
            ),
            Some(HookKind::Stop {
                stop_hook_active: false,
                last_assistant_message: Some("Done.".into())
            })
        );
        for outcome in ["error", "interrupted", "rejected"] {
            assert_eq!(
                kind_of(json!({"hook_event_name": "session.idle", "outcome": outcome})),
                Some(HookKind::Other("session.idle".into())),
                "{outcome}"
            );
        }
        assert_eq!(
            kind_of(
                json!({"hook_event_name": "session.status", "opencode": {"status": {"type": "retry"}}})
            ),
            Some(HookKind::Other("session.status".into()))
        );
        assert_eq!(kind_of(json!({"hook_event_name": "PreToolUse"})), None);
    }

    #[test]
    fn dialogs_are_permission_prompts() {
        let asked = json!({"hook_event_name": "permission.asked",
            "opencode": {"permission": "bash", "patterns": ["touch made.txt"]}});
        assert_eq!(
            kind_of(asked),
            Some(HookKind::Notification {
                notification_type: Some("permission_prompt".into()),
                message: "OpenCode asks to run bash: touch made.txt".into()
            })
        );
        let question = json!({"hook_event_name": "question.asked",
            "opencode": {"questions": [{"question": "Which database?"}]}});
        assert!(matches!(
            kind_of(question),
            Some(HookKind::Notification { message, .. }) if message == "OpenCode asks: Which database?"
        ));
        // A field of the wrong type is no panic.
        assert!(kind_of(json!({"hook_event_name": "permission.asked", "opencode": 3})).is_some());
    }

    #[test]
    fn the_plugin_names_the_binary_and_the_events() {
        let js = plugin_source(Path::new("/opt/bin/clawmux \"x\""));
        assert!(
            js.contains(r#"const CLAWMUX = "/opt/bin/clawmux \"x\"";"#),
            "{js}"
        );
        assert!(js.contains(r#""session.idle","session.status""#), "{js}");
        assert!(!js.contains("__"), "{js}");
        let dir = tempfile::tempdir().unwrap();
        let path = install_plugin(dir.path(), Path::new("/bin/clawmux")).unwrap();
        assert_eq!(path, dir.path().join("plugin/clawmux.js"));
    }
}
