//! A turn's token figures, as Claude Code wrote them in its session
//! transcript (the JSONL file a `Stop` hook names in `transcript_path`).
//!
//! Claude Code writes one line per assistant message with the API's
//! `message.usage` (`input_tokens`, `cache_creation_input_tokens`,
//! `cache_read_input_tokens`, `output_tokens`, its final counts); a message
//! with several content blocks may be written as several lines with the
//! same `message.id`, so each id counts once (its last line). The turn is
//! everything after the last user line that is a prompt (not a tool
//! result, not a meta line).
//!
//! - tokens: the sum, over the turn's API calls, of their input (cache
//!   included) and output tokens;
//! - context: the last call's input and output, what the context holds at
//!   the turn's end.
//!
//! Cost is not in the transcript while a session runs (Claude Code 2.1.332
//! writes its `cost-state` line only when the process exits), and the
//! context window's size is not there either: neither is shown rather than
//! guessed. The file is read from its end, at most
//! [`MAX_TRANSCRIPT_TAIL_BYTES`]; a turn that starts before that is given no
//! token sum (it would be short), only its context.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

/// Most bytes read from a transcript's end: a long turn's lines (tool
/// results included) are a few MiB at most.
pub const MAX_TRANSCRIPT_TAIL_BYTES: u64 = 8 * 1024 * 1024;

/// What a transcript says about its last turn; `None`: not reported.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TurnUsage {
    pub tokens: Option<u64>,
    pub context_tokens: Option<u64>,
}

/// Longest a `Stop` hook is held back for its transcript to show the
/// turn's final message: Claude Code 2.1.197 was seen to run the hook
/// before writing that line, and figures read then miss the last call.
pub const FINAL_LINE_WAIT: Duration = Duration::from_secs(1);

/// Between two looks at the transcript while [`FINAL_LINE_WAIT`] runs.
pub const FINAL_LINE_POLL: Duration = Duration::from_millis(20);

/// The last turn's usage in the transcript at `path`; nothing when the
/// file cannot be read or is not a `.jsonl` transcript.
pub fn read(path: &Path) -> TurnUsage {
    match read_tail(path) {
        Some((tail, whole)) => parse(&tail, whole),
        None => TurnUsage::default(),
    }
}

/// The transcript's last [`MAX_TRANSCRIPT_TAIL_BYTES`], from a line's
/// start, and whether that is the whole file; `None` unless it is a
/// regular `.jsonl` file (see [`crate::record_file`]: a FIFO or a device
/// is never opened to wait on).
pub fn read_tail(path: &Path) -> Option<(Vec<u8>, bool)> {
    if path.extension().is_none_or(|e| e != "jsonl") {
        return None;
    }
    let (mut tail, whole) = crate::record_file::read_tail(path, MAX_TRANSCRIPT_TAIL_BYTES).ok()?;
    // Cut into the middle of a line: it is not read.
    if !whole {
        let start = tail
            .iter()
            .position(|&b| b == b'\n')
            .map_or(tail.len(), |i| i + 1);
        tail.drain(..start);
    }
    Some((tail, whole))
}

/// Whether `lines` are Claude Code's transcript but their last assistant
/// line with text does not say `last` yet.
///
/// Claude Code's form is told by any of its entries, each stamped with a
/// top-level `sessionId` (its first line, `{"type":"mode",…}`, is), not by
/// an assistant line: in a session's first model turn there is none until
/// the answer's own line is written, and Claude Code (2.1.332 and 2.1.197)
/// runs the `Stop` hook before writing it (measured under load: the hook
/// came with only the prompt and its attachments in the file, 2 turns in
/// 3). Codex's rollout (`{"timestamp","type","payload"}`) has no
/// `sessionId` and is never waited on.
pub fn final_line_pending(lines: &[u8], last: &str) -> bool {
    let claude_code = (lines.split(|&b| b == b'\n'))
        .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
        .any(|e| assistant_usage(&e).is_some() || e.get("sessionId").is_some_and(Value::is_string));
    claude_code && !ends_with_message(lines, last)
}

/// Whether the last assistant line with text in `lines` says `last`.
fn ends_with_message(lines: &[u8], last: &str) -> bool {
    let text_of = |e: &Value| -> Option<String> {
        if e.get("type").and_then(Value::as_str) != Some("assistant") {
            return None;
        }
        let blocks = e.pointer("/message/content")?.as_array()?;
        let text: Vec<&str> = (blocks.iter())
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect();
        (!text.is_empty()).then(|| text.concat())
    };
    (lines.split(|&b| b == b'\n').rev())
        .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
        .find_map(|e| text_of(&e))
        .is_some_and(|text| text.trim() == last.trim())
}

/// The last turn's usage in transcript lines; `whole` says the lines start
/// at the file's beginning (so a turn with no prompt line before it is
/// still the whole turn).
pub fn parse(lines: &[u8], whole: bool) -> TurnUsage {
    let entries: Vec<Value> = lines
        .split(|&b| b == b'\n')
        .filter_map(|l| serde_json::from_slice(l).ok())
        .collect();
    let start = entries.iter().rposition(is_prompt);
    let turn = &entries[start.map_or(0, |i| i + 1)..];
    // Each message once, its last line; in order of first appearance.
    let mut order: Vec<String> = Vec::new();
    let mut usage: HashMap<String, (u64, u64)> = HashMap::new();
    for e in turn {
        let Some((id, counts)) = assistant_usage(e) else {
            continue;
        };
        if usage.insert(id.clone(), counts).is_none() {
            order.push(id);
        }
    }
    let context_tokens = order
        .last()
        .and_then(|id| usage.get(id))
        .map(|(i, o)| i + o);
    let counted = start.is_some() || whole;
    let tokens = (counted && !order.is_empty()).then(|| usage.values().map(|(i, o)| i + o).sum());
    TurnUsage {
        tokens,
        context_tokens,
    }
}

/// A user line that starts a turn: text typed (a string, or text blocks),
/// not tool results and not Claude Code's own meta lines.
pub fn is_prompt(e: &Value) -> bool {
    if e.get("type").and_then(Value::as_str) != Some("user")
        || e.get("isMeta").and_then(Value::as_bool) == Some(true)
        || e.get("isSidechain").and_then(Value::as_bool) == Some(true)
    {
        return false;
    }
    match e.pointer("/message/content") {
        Some(Value::String(_)) => true,
        Some(Value::Array(blocks)) => blocks
            .iter()
            .any(|b| b.get("type").and_then(Value::as_str) == Some("text")),
        _ => false,
    }
}

/// An assistant line's message id and its (input incl. cache, output)
/// tokens.
fn assistant_usage(e: &Value) -> Option<(String, (u64, u64))> {
    if e.get("type").and_then(Value::as_str) != Some("assistant")
        || e.get("isSidechain").and_then(Value::as_bool) == Some(true)
    {
        return None;
    }
    let m = e.get("message")?;
    let id = m.get("id")?.as_str()?.to_string();
    let u = m.get("usage")?;
    let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
    let input = n("input_tokens") + n("cache_creation_input_tokens") + n("cache_read_input_tokens");
    Some((id, (input, n("output_tokens"))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn assistant(id: &str, input: u64, cache: u64, output: u64) -> String {
        json!({"type": "assistant", "message": {"id": id, "role": "assistant",
            "usage": {"input_tokens": input, "cache_read_input_tokens": cache,
                "cache_creation_input_tokens": 0, "output_tokens": output}}})
        .to_string()
    }

    fn user(content: Value) -> String {
        json!({"type": "user", "message": {"role": "user", "content": content}}).to_string()
    }

    fn said(text: &str) -> String {
        json!({"type": "assistant", "message": {"id": "m9", "role": "assistant",
            "content": [{"type": "text", "text": text}]}})
        .to_string()
    }

    #[test]
    fn the_final_message_is_found_only_once_written() {
        let lines = [
            user(json!("go")),
            said("Working on it."),
            assistant("m1", 1, 0, 1),
        ];
        let lines = lines.join("\n");
        assert!(ends_with_message(lines.as_bytes(), "Working on it.\n"));
        assert!(!ends_with_message(lines.as_bytes(), "All done."));
        let done = format!("{lines}\n{}", said("All done."));
        assert!(ends_with_message(done.as_bytes(), "All done."));
        assert!(!ends_with_message(b"not json\n", "All done."));
        // Waited on only in Claude Code's transcript.
        assert!(final_line_pending(lines.as_bytes(), "All done."));
        assert!(!final_line_pending(done.as_bytes(), "All done."));
        let rollout = r#"{"type":"response_item","payload":{"type":"message"}}"#;
        assert!(!final_line_pending(rollout.as_bytes(), "All done."));
        // A session's first model turn: no assistant line at all yet, only
        // Claude Code's own entries (as 2.1.332 wrote them when its `Stop`
        // hook ran).
        let first = [
            json!({"type": "mode", "mode": "normal", "sessionId": "s1"}).to_string(),
            json!({"type": "user", "sessionId": "s1",
                "message": {"role": "user", "content": "go"}})
            .to_string(),
            json!({"type": "attachment", "sessionId": "s1"}).to_string(),
        ]
        .join("\n");
        assert!(final_line_pending(first.as_bytes(), "All done."));
        let written = format!("{first}\n{}", said("All done."));
        assert!(!final_line_pending(written.as_bytes(), "All done."));
    }

    #[test]
    fn the_last_turn_is_summed_each_message_once() {
        let lines = [
            user(json!("first")),
            assistant("m0", 100, 0, 7),
            user(json!("second")),
            assistant("m1", 100, 50, 5),
            // The same message's second block: its last line counts once.
            assistant("m1", 100, 50, 9),
            user(json!([{"type": "tool_result", "tool_use_id": "t", "content": "ok"}])),
            json!({"type": "attachment"}).to_string(),
            assistant("m2", 120, 50, 4),
            json!({"type": "last-prompt"}).to_string(),
        ]
        .join("\n");
        let u = parse(lines.as_bytes(), true);
        assert_eq!(u.tokens, Some((150 + 9) + (170 + 4)));
        assert_eq!(u.context_tokens, Some(170 + 4));
    }

    #[test]
    fn nothing_reported_is_none_and_a_cut_turn_has_no_sum() {
        assert_eq!(parse(b"", true), TurnUsage::default());
        let no_usage = user(json!("hi"))
            + "\n"
            + &json!({"type": "assistant", "message": {"id": "m"}}).to_string();
        assert_eq!(parse(no_usage.as_bytes(), true), TurnUsage::default());
        // The tail was cut and no prompt is in it: the sum would be short.
        let cut = assistant("m5", 10, 0, 2);
        let u = parse(cut.as_bytes(), false);
        assert_eq!((u.tokens, u.context_tokens), (None, Some(12)));
        // Meta user lines do not start a turn.
        let meta = [
            user(json!("do it")),
            assistant("a", 10, 0, 1),
            json!({"type": "user", "isMeta": true, "message": {"content": "caveat"}}).to_string(),
            assistant("b", 20, 0, 1),
        ]
        .join("\n");
        assert_eq!(parse(meta.as_bytes(), false).tokens, Some(11 + 21));
    }

    #[test]
    fn a_file_is_read_from_its_end_and_only_a_transcript() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let body = format!("{}\n{}\n", user(json!("go")), assistant("m", 3, 0, 4));
        std::fs::write(&path, &body).unwrap();
        assert_eq!(read(&path).tokens, Some(7));
        let other = dir.path().join("s.txt");
        std::fs::write(&other, &body).unwrap();
        assert_eq!(read(&other), TurnUsage::default());
        assert_eq!(read(&dir.path().join("gone.jsonl")), TurnUsage::default());
    }
}
