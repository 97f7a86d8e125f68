//! Claude Code's answer as its own session transcript records it: the
//! JSONL file its hooks name in `transcript_path`.
//!
//! Claude Code writes one line per content block of an assistant message
//! (the same `message.id` on each), so a message's text is the `text`
//! blocks of the lines sharing its id, in order, markdown as the model
//! wrote it. The turn's answer is the last assistant message with text
//! after the turn's prompt (tool calls and their results come before it;
//! the screen's rows for them are kept by [`super::record::reconcile`]). A
//! turn that ended on an API error ends with Claude Code's own entry for
//! it (`isApiErrorMessage`, its category in `error`, the text it drew),
//! written just after its `StopFailure` hook: that is the turn's
//! [`ApiError`], never its answer.
//!
//! The file is written by the agent, so it is read with care:
//! - only a path inside the project's own folder of the agent's config
//!   directory ([`allowed_roots`]: `projects/<the workspace, encoded>/`,
//!   where Claude Code keeps that workspace's sessions), checked after
//!   symlinks are resolved, and only a `.jsonl` regular file (never a
//!   FIFO, which would hold its reader for ever: see
//!   [`clawmux_hooks::record_file`]);
//! - only its last [`MAX_TRANSCRIPT_TAIL_BYTES`] (a line cut by that is
//!   skipped, and so is a last line still being written: not JSON yet);
//! - anything else is a [`Refused`] the caller logs before it falls back
//!   to the `Stop` hook's `last_assistant_message` and the screen.

use std::path::{Path, PathBuf};

use serde_json::Value;

pub use clawmux_hooks::usage::MAX_TRANSCRIPT_TAIL_BYTES;
use clawmux_hooks::usage::TurnUsage;

/// Longest folder name Claude Code gives a workspace's sessions before it
/// cuts the name and adds a hash of the path (its `projects/` folder
/// names, 2.1.197 and 2.1.332 alike).
const MAX_FOLDER_NAME_CHARS: usize = 200;

/// Why a transcript gave no answer (logged; the screen is read instead).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("transcript path {0} is outside the project's folder of the agent's config directory")]
    Outside(PathBuf),
    #[error("transcript {0} cannot be read: {1}")]
    Unreadable(PathBuf, String),
    #[error("transcript {0} holds no assistant text after the turn's prompt")]
    NoAnswer(PathBuf),
}

/// The turn ended on an API error, as Claude Code recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// Its category (`server_error`, `authentication_failed`,
    /// `rate_limit`, `unknown`, …), as the `StopFailure` hook says it.
    pub category: Option<String>,
    /// What Claude Code drew for it (`API Error: 500 Internal server
    /// error. …`).
    pub text: String,
}

/// The folder Claude Code keeps the sessions of `workspace` in, under its
/// config directory's `projects/`: the path with every character but an
/// ASCII letter or digit made `-` (one for each UTF-16 unit, as its
/// JavaScript does), and a name longer than [`MAX_FOLDER_NAME_CHARS`] cut
/// to that and followed by `-` and a hash of the path (the 32-bit string
/// hash `h = 31 * h + unit`, its absolute value in base 36).
pub fn folder_name(workspace: &Path) -> String {
    let path = workspace.to_string_lossy();
    let mut name = String::with_capacity(path.len());
    for c in path.chars() {
        if c.is_ascii_alphanumeric() {
            name.push(c);
        } else {
            name.extend(std::iter::repeat_n('-', c.len_utf16()));
        }
    }
    if name.len() <= MAX_FOLDER_NAME_CHARS {
        return name;
    }
    let hash = (path.encode_utf16()).fold(0i32, |h, unit| {
        h.wrapping_shl(5)
            .wrapping_sub(h)
            .wrapping_add(i32::from(unit))
    });
    name.truncate(MAX_FOLDER_NAME_CHARS);
    format!("{name}-{}", base36(i64::from(hash).unsigned_abs()))
}

fn base36(mut n: u64) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8_lossy(&out).into_owned()
}

/// The folders a Claude Code transcript of the project in `workspace`
/// may live in: that workspace's folder ([`folder_name`]) under
/// `projects/` of the config directory of the agent that `agent` (its
/// command line) starts. Not the config directory as a whole: another
/// project's sessions are there too, and one project's hook must not name
/// another's. The agent's `CLAUDE_CONFIG_DIR` is the one its command line
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
        .map(|c| c.join("projects").join(folder_name(workspace)))
        .collect()
}

/// [`allowed_roots`] inheriting this process's environment, for the
/// workspace as configured and as the agent sees it (symlinks resolved:
/// the agent's working directory is the resolved path).
pub fn agent_roots(agent: &str, workspace: &Path) -> Vec<PathBuf> {
    let inherited = |name: &str| std::env::var_os(name).map(PathBuf::from);
    let mut roots = allowed_roots(agent, workspace, inherited);
    if let Ok(real) = workspace.canonicalize()
        && real != workspace
    {
        roots.extend(allowed_roots(agent, &real, inherited));
    }
    roots
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

/// A transcript's tail as read once: its answer, figures and error all
/// come from the same bytes.
#[derive(Debug, Clone, Default)]
pub struct Reading {
    tail: Vec<u8>,
    /// The tail is the whole file.
    whole: bool,
}

impl Reading {
    /// The last turn's answer (see [`last_answer`]).
    pub fn answer(&self) -> Option<String> {
        last_answer(&self.tail)
    }

    /// The last turn's token figures.
    pub fn usage(&self) -> TurnUsage {
        clawmux_hooks::usage::parse(&self.tail, self.whole)
    }

    /// The API error the last turn ended on, if it did (see
    /// [`last_api_error`]).
    pub fn api_error(&self) -> Option<ApiError> {
        last_api_error(&self.tail)
    }

    /// Whether the turn's final message, `last` (a turn-end hook's
    /// `last_assistant_message`), is still to be written.
    pub fn final_line_pending(&self, last: &str) -> bool {
        clawmux_hooks::usage::final_line_pending(&self.tail, last)
    }
}

/// The transcript at `path`, which must be a regular `.jsonl` file under
/// one of `roots` (see the module doc), read once.
pub fn read(path: &Path, roots: &[PathBuf]) -> Result<Reading, Refused> {
    let real = inside(path, roots)?;
    let (tail, whole) = clawmux_hooks::usage::read_tail(&real).ok_or_else(|| {
        Refused::Unreadable(path.to_path_buf(), "not a readable .jsonl file".into())
    })?;
    Ok(Reading { tail, whole })
}

/// The last turn's answer in the transcript at `path`, which must lie
/// under one of `roots` (see the module doc).
pub fn answer(path: &Path, roots: &[PathBuf]) -> Result<String, Refused> {
    read(path, roots)?
        .answer()
        .ok_or_else(|| Refused::NoAnswer(path.to_path_buf()))
}

/// The entries of the last turn in `lines`: after its prompt (lines that
/// are not whole JSON are skipped).
fn last_turn(lines: &[u8]) -> Vec<Value> {
    let mut entries: Vec<Value> = (lines.split(|&b| b == b'\n'))
        .filter_map(|l| serde_json::from_slice(l).ok())
        .collect();
    let start = entries
        .iter()
        .rposition(clawmux_hooks::usage::is_prompt)
        .map_or(0, |i| i + 1);
    entries.drain(..start);
    entries
}

/// The last assistant message's text after the last prompt in `lines`
/// (lines that are not whole JSON are skipped; an API error's entry is
/// not an answer).
pub fn last_answer(lines: &[u8]) -> Option<String> {
    let turn = last_turn(lines);
    // The last message with text, then every text block of its lines.
    let id = turn.iter().rev().find_map(|e| {
        let text = texts(e).filter(|_| !is_api_error(e))?;
        (!text.is_empty()).then(|| message_id(e))
    })?;
    let text: Vec<&str> = (turn.iter())
        .filter(|e| message_id(e) == id && !is_api_error(e))
        .filter_map(texts)
        .flatten()
        .collect();
    let text = text.join("\n\n");
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

/// The API error the last turn of `lines` ended on: its last assistant
/// entry is Claude Code's record of one.
pub fn last_api_error(lines: &[u8]) -> Option<ApiError> {
    let turn = last_turn(lines);
    let last = turn.iter().rev().find(|e| texts(e).is_some())?;
    if !is_api_error(last) {
        return None;
    }
    let text = texts(last).unwrap_or_default().join("\n");
    Some(ApiError {
        category: (last.get("error").and_then(Value::as_str)).map(str::to_owned),
        text: text.trim().to_owned(),
    })
}

/// Whether an entry is Claude Code's record of an API error.
fn is_api_error(e: &Value) -> bool {
    e.get("isApiErrorMessage").and_then(Value::as_bool) == Some(true)
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

    /// Claude Code's own folder names (2.1.332 and 2.1.197): as a recorded
    /// `StopFailure` named its transcript, and as its JavaScript makes a
    /// long or non-ASCII path's (values from running that function).
    #[test]
    fn the_workspace_folder_is_named_as_claude_code_names_it() {
        assert_eq!(
            folder_name(Path::new("/tmp/clawmux-claude-0eb09e22ec01d3f8/project")),
            "-tmp-clawmux-claude-0eb09e22ec01d3f8-project"
        );
        assert_eq!(
            folder_name(Path::new("/home/u/my.proj/日本😀x")),
            "-home-u-my-proj-----x"
        );
        let long = format!("/srv/{}shop", "deep/".repeat(45));
        let want = format!("-srv-{}-3g12mq", "deep-".repeat(39));
        assert_eq!(folder_name(Path::new(&long)), want);
    }

    #[test]
    fn the_agents_own_folder_for_the_project_is_allowed() {
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
        assert_eq!(
            roots("claude", &daemon),
            ["/home/d/.claude/projects/-w-shop"]
        );
        // The agent's HOME, as its command line sets it (quoted, after
        // another `env`), not the daemon's.
        assert_eq!(
            roots("env A=1 env 'HOME=/tmp/a b' claude", &daemon),
            ["/tmp/a b/.claude/projects/-w-shop"]
        );
        // CLAUDE_CONFIG_DIR, set or inherited, wins over HOME.
        assert_eq!(
            roots("env HOME=/h CLAUDE_CONFIG_DIR=/cfg/a claude", &daemon_cfg),
            ["/cfg/a/projects/-w-shop"]
        );
        assert_eq!(
            roots("env HOME=/h claude", &daemon_cfg),
            ["/cfg/d/projects/-w-shop"]
        );
        // A word after the program is its argument, not its environment.
        assert_eq!(
            roots("claude HOME=/tmp/x", &daemon),
            ["/home/d/.claude/projects/-w-shop"]
        );
        assert!(roots("claude", &|_: &str| None).is_empty());
    }

    /// Two projects' agents share a config directory: project A's hook
    /// naming project B's session (or a file A's agent wrote in its own
    /// workspace) is refused; A's own session is read.
    #[test]
    fn a_project_reads_only_its_own_agents_sessions() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let (a, b) = (dir.path().join("ws/a"), dir.path().join("ws/b"));
        let session = |ws: &Path| {
            let name =
                (ws.display().to_string()).replace(|c: char| !c.is_ascii_alphanumeric(), "-");
            let folder = home.join(".claude/projects").join(name);
            std::fs::create_dir_all(&folder).unwrap();
            let path = folder.join("s.jsonl");
            let body = format!(
                "{}\n{}\n",
                user(json!("go")),
                said("m", json!([{"type": "text", "text": "Yes."}]))
            );
            std::fs::write(&path, body).unwrap();
            path
        };
        let (mine, theirs) = (session(&a), session(&b));
        std::fs::create_dir_all(&a).unwrap();
        let planted = a.join("t.jsonl");
        std::fs::copy(&mine, &planted).unwrap();
        let agent = format!("env HOME={} claude", home.display());
        let roots = agent_roots(&agent, &a);
        assert_eq!(answer(&mine, &roots).as_deref(), Ok("Yes."));
        assert_eq!(
            answer(&theirs, &roots),
            Err(Refused::Outside(theirs.clone()))
        );
        assert_eq!(
            answer(&planted, &roots),
            Err(Refused::Outside(planted.clone()))
        );
    }

    /// A turn that ended on an API error: Claude Code's entry for it (as
    /// 2.1.332 wrote it after a 500) is the turn's error, not its answer;
    /// an error the model answered past in the same turn is not the end.
    #[test]
    fn an_api_error_entry_is_the_turns_error_not_its_answer() {
        let text = "API Error: 500 Internal server error. This is a server-side issue, usually temporary — try again in a moment.";
        let error = json!({"type": "assistant", "isSidechain": false,
            "message": {"id": "e1", "model": "<synthetic>", "role": "assistant",
                "content": [{"type": "text", "text": text}]},
            "error": "server_error", "isApiErrorMessage": true, "apiErrorStatus": 500})
        .to_string();
        let failed = [user(json!("say hello")), error.clone()].join("\n");
        assert_eq!(
            last_api_error(failed.as_bytes()),
            Some(ApiError {
                category: Some("server_error".into()),
                text: text.into()
            })
        );
        assert_eq!(last_answer(failed.as_bytes()), None);
        let answered = [
            user(json!("say hello")),
            error,
            said("m2", json!([{"type": "text", "text": "Hello."}])),
        ]
        .join("\n");
        assert_eq!(last_api_error(answered.as_bytes()), None);
        assert_eq!(last_answer(answered.as_bytes()).as_deref(), Some("Hello."));
        // An older turn's error is not this one's.
        let again = format!("{failed}\n{}", user(json!("again")));
        assert_eq!(last_api_error(again.as_bytes()), None);
    }

    /// A FIFO where the transcript should be is refused at once: nothing
    /// opens it to wait for a writer.
    #[test]
    fn a_fifo_named_as_the_transcript_is_refused_without_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("s.jsonl");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let roots = vec![dir.path().to_path_buf()];
        assert!(matches!(read(&fifo, &roots), Err(Refused::Unreadable(..))));
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
