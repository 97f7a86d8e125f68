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
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

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

/// The last turn's usage in the transcript at `path`; nothing when the
/// file cannot be read or is not a `.jsonl` transcript.
pub fn read(path: &Path) -> TurnUsage {
    if path.extension().is_none_or(|e| e != "jsonl") {
        return TurnUsage::default();
    }
    let Ok(mut file) = std::fs::File::open(path) else {
        return TurnUsage::default();
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let from = len.saturating_sub(MAX_TRANSCRIPT_TAIL_BYTES);
    if file.seek(SeekFrom::Start(from)).is_err() {
        return TurnUsage::default();
    }
    let mut tail = Vec::new();
    if file
        .take(MAX_TRANSCRIPT_TAIL_BYTES)
        .read_to_end(&mut tail)
        .is_err()
    {
        return TurnUsage::default();
    }
    // Cut into the middle of a line: it is not read.
    let tail = if from > 0 {
        match tail.iter().position(|&b| b == b'\n') {
            Some(i) => &tail[i + 1..],
            None => &[][..],
        }
    } else {
        &tail[..]
    };
    parse(tail, from == 0)
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
fn is_prompt(e: &Value) -> bool {
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
