//! Claude Code's answer as its own session transcript records it: the
//! JSONL file its hooks name in `transcript_path`.
//!
//! Claude Code writes one line per content block of an assistant message
//! (the same `message.id` on each), so a message's text is the `text`
//! blocks of the lines sharing its id, in order, markdown as the model
//! wrote it. The turn's answer is the last assistant message with text
//! after the turn's prompt (tool calls and their results come before it;
//! the screen's rows for them are kept by [`super::record::reconcile`]).
//!
//! The file is written by the agent, so it is read with care:
//! - only a path inside the roots the caller allows (the agent's config
//!   directory, the project's workspace), checked after symlinks are
//!   resolved, and only a `.jsonl` file;
//! - only its last [`MAX_TRANSCRIPT_TAIL_BYTES`] (a line cut by that is
//!   skipped, and so is a last line still being written: not JSON yet);
//! - anything else is a [`Refused`] the caller logs before it falls back
//!   to the `Stop` hook's `last_assistant_message` and the screen.

use std::path::{Path, PathBuf};

use serde_json::Value;

pub use clawmux_hooks::usage::MAX_TRANSCRIPT_TAIL_BYTES;

/// Why a transcript gave no answer (logged; the screen is read instead).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("transcript path {0} is outside the agent's config directory and the workspace")]
    Outside(PathBuf),
    #[error("transcript {0} cannot be read: {1}")]
    Unreadable(PathBuf, String),
    #[error("transcript {0} holds no assistant text after the turn's prompt")]
    NoAnswer(PathBuf),
}

/// The roots a Claude Code transcript may live under: the config
/// directory of the agent that `agent` (its command line) starts, and the
/// workspace. The agent's `CLAUDE_CONFIG_DIR` is the one its command line
/// sets (`env CLAUDE_CONFIG_DIR=… claude`), else the one it inherits
/// (`inherited`: the daemon's environment, which the pane gets); without
/// one it is `.claude` under its HOME, found the same way.
pub fn allowed_roots(
    agent: &str,
    workspace: &Path,
    inherited: impl Fn(&str) -> Option<PathBuf>,
) -> Vec<PathBuf> {
    let set = |name: &str| clawmux_text::shell::env_assignment(agent, name).map(PathBuf::from);
    let config = (set("CLAUDE_CONFIG_DIR"))
        .or_else(|| inherited("CLAUDE_CONFIG_DIR"))
        .or_else(|| Some(set("HOME").or_else(|| inherited("HOME"))?.join(".claude")));
    config
        .into_iter()
        .chain([workspace.to_path_buf()])
        .collect()
}

/// [`allowed_roots`] inheriting this process's environment.
pub fn agent_roots(agent: &str, workspace: &Path) -> Vec<PathBuf> {
    allowed_roots(agent, workspace, |name| {
        std::env::var_os(name).map(PathBuf::from)
    })
}

/// `path` resolved (symlinks followed), when it is a file under one of
/// `roots` (see the module doc).
pub fn inside(path: &Path, roots: &[PathBuf]) -> Result<PathBuf, Refused> {
    let real = path
        .canonicalize()
        .map_err(|e| Refused::Unreadable(path.to_path_buf(), e.to_string()))?;
    let inside = roots
        .iter()
        .filter_map(|r| r.canonicalize().ok())
        .any(|r| real.starts_with(r));
    if !inside {
        return Err(Refused::Outside(path.to_path_buf()));
    }
    Ok(real)
}

/// The last turn's answer in the transcript at `path`, which must lie
/// under one of `roots` (see the module doc).
pub fn answer(path: &Path, roots: &[PathBuf]) -> Result<String, Refused> {
    let real = inside(path, roots)?;
    let (tail, _) = clawmux_hooks::usage::read_tail(&real).ok_or_else(|| {
        Refused::Unreadable(path.to_path_buf(), "not a readable .jsonl file".into())
    })?;
    last_answer(&tail).ok_or_else(|| Refused::NoAnswer(path.to_path_buf()))
}

/// The last assistant message's text after the last prompt in `lines`
/// (lines that are not whole JSON are skipped).
pub fn last_answer(lines: &[u8]) -> Option<String> {
    let entries: Vec<Value> = (lines.split(|&b| b == b'\n'))
        .filter_map(|l| serde_json::from_slice(l).ok())
        .collect();
    let start = entries
        .iter()
        .rposition(clawmux_hooks::usage::is_prompt)
        .map_or(0, |i| i + 1);
    let turn = &entries[start..];
    // The last message with text, then every text block of its lines.
    let id = turn.iter().rev().find_map(|e| {
        let text = texts(e)?;
        (!text.is_empty()).then(|| message_id(e))
    })?;
    let text: Vec<&str> = (turn.iter())
        .filter(|e| message_id(e) == id)
        .filter_map(texts)
        .flatten()
        .collect();
    let text = text.join("\n\n");
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

/// An assistant line's `text` blocks (None for other lines, sidechains).
fn texts(e: &Value) -> Option<Vec<&str>> {
    if e.get("type").and_then(Value::as_str) != Some("assistant")
        || e.get("isSidechain").and_then(Value::as_bool) == Some(true)
    {
        return None;
    }
    let blocks = e.pointer("/message/content")?.as_array()?;
    Some(
        (blocks.iter())
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .filter(|t| !t.trim().is_empty())
            .collect(),
    )
}

/// An assistant line's message id; a line without one is its own message
/// (keyed by its `uuid`).
fn message_id(e: &Value) -> Option<&str> {
    (e.pointer("/message/id").and_then(Value::as_str))
        .or_else(|| e.get("uuid").and_then(Value::as_str))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn said(id: &str, blocks: Value) -> String {
        json!({"type": "assistant", "message": {"id": id, "role": "assistant",
            "content": blocks}})
        .to_string()
    }

    fn user(content: Value) -> String {
        json!({"type": "user", "message": {"role": "user", "content": content}}).to_string()
    }

    #[test]
    fn the_last_message_of_the_turn_is_the_answer_markdown_kept() {
        let lines = [
            user(json!("old")),
            said("m0", json!([{"type": "text", "text": "Old answer."}])),
            user(json!("list it")),
            said("m1", json!([{"type": "text", "text": "Looking."}])),
            said(
                "m1",
                json!([{"type": "tool_use", "id": "t", "name": "Bash",
                "input": {"command": "ls"}}]),
            ),
            user(json!([{"type": "tool_result", "tool_use_id": "t", "content": "a\nb"}])),
            said(
                "m2",
                json!([{"type": "text", "text": "## Files\n\n- **a**\n- `b`"}]),
            ),
            said("m2", json!([{"type": "text", "text": "Done."}])),
            // Still being written: not JSON yet, skipped.
            r#"{"type":"assistant","message":{"id":"m3","content":[{"type":"te"#.into(),
        ]
        .join("\n");
        assert_eq!(
            last_answer(lines.as_bytes()).as_deref(),
            Some("## Files\n\n- **a**\n- `b`\n\nDone.")
        );
        // A turn with no text yet has no answer (the last turn's is not it).
        let lines = [
            user(json!("old")),
            said("m0", json!([{"type": "text", "text": "Old."}])),
            user(json!("new")),
        ]
        .join("\n");
        assert_eq!(last_answer(lines.as_bytes()), None);
        assert_eq!(last_answer(b"garbage\n{"), None);
    }

    #[test]
    fn the_agents_own_config_directory_is_allowed() {
        let ws = Path::new("/w/shop");
        let daemon = |name: &str| match name {
            "HOME" => Some(PathBuf::from("/home/d")),
            _ => None,
        };
        let daemon_cfg = |name: &str| match name {
            "HOME" => Some(PathBuf::from("/home/d")),
            "CLAUDE_CONFIG_DIR" => Some(PathBuf::from("/cfg/d")),
            _ => None,
        };
        let roots = |agent, env: &dyn Fn(&str) -> Option<PathBuf>| {
            allowed_roots(agent, ws, env)
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(roots("claude", &daemon), ["/home/d/.claude", "/w/shop"]);
        // The agent's HOME, as its command line sets it (quoted, after
        // another `env`), not the daemon's.
        assert_eq!(
            roots("env A=1 env 'HOME=/tmp/a b' claude", &daemon),
            ["/tmp/a b/.claude", "/w/shop"]
        );
        // CLAUDE_CONFIG_DIR, set or inherited, wins over HOME.
        assert_eq!(
            roots("env HOME=/h CLAUDE_CONFIG_DIR=/cfg/a claude", &daemon_cfg),
            ["/cfg/a", "/w/shop"]
        );
        assert_eq!(
            roots("env HOME=/h claude", &daemon_cfg),
            ["/cfg/d", "/w/shop"]
        );
        // A word after the program is its argument, not its environment.
        assert_eq!(
            roots("claude HOME=/tmp/x", &daemon),
            ["/home/d/.claude", "/w/shop"]
        );
        assert_eq!(roots("claude", &|_: &str| None), ["/w/shop"]);
    }

    #[test]
    fn only_a_transcript_under_the_allowed_roots_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("claude");
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&elsewhere).unwrap();
        let body = format!(
            "{}\n{}\n",
            user(json!("go")),
            said("m", json!([{"type": "text", "text": "Yes."}]))
        );
        let good = home.join("s.jsonl");
        std::fs::write(&good, &body).unwrap();
        let bad = elsewhere.join("s.jsonl");
        std::fs::write(&bad, &body).unwrap();
        let roots = vec![home.clone()];
        assert_eq!(answer(&good, &roots).as_deref(), Ok("Yes."));
        assert_eq!(answer(&bad, &roots), Err(Refused::Outside(bad.clone())));
        // `..` out of the root is resolved before the check.
        let sneaky = home.join("../elsewhere/s.jsonl");
        assert!(matches!(answer(&sneaky, &roots), Err(Refused::Outside(_))));
        let txt = home.join("s.txt");
        std::fs::write(&txt, &body).unwrap();
        assert!(matches!(answer(&txt, &roots), Err(Refused::Unreadable(..))));
        let empty = home.join("e.jsonl");
        std::fs::write(&empty, user(json!("go"))).unwrap();
        assert_eq!(
            answer(&empty, &roots),
            Err(Refused::NoAnswer(empty.clone()))
        );
    }

    #[test]
    fn only_the_tail_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.jsonl");
        // An answer older than the tail is not found; a cut first line is
        // skipped, not misread.
        let filler = said("f", json!([{"type": "tool_use", "name": "x", "input": {}}]));
        let mut body = format!(
            "{}\n",
            said("old", json!([{"type": "text", "text": "Old."}]))
        );
        while (body.len() as u64) < MAX_TRANSCRIPT_TAIL_BYTES + 10 {
            body.push_str(&filler);
            body.push('\n');
        }
        std::fs::write(&path, &body).unwrap();
        let roots = vec![dir.path().to_path_buf()];
        assert!(matches!(answer(&path, &roots), Err(Refused::NoAnswer(_))));
        body.push_str(&said("new", json!([{"type": "text", "text": "New."}])));
        std::fs::write(&path, &body).unwrap();
        assert_eq!(answer(&path, &roots).as_deref(), Ok("New."));
    }
}
