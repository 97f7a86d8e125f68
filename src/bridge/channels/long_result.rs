//! Long command results as chat users read them: one summary card (first
//! and last lines, counts) and the whole output as a file message, instead
//! of dozens of cards nobody reads on a phone. Shorter results, and every
//! result on the console, stay paginated cards.

use crate::bridge::outbox_files::KeptOutput;
use crate::bridge::present;
use crate::message::{Block, Message, Tone};
use crate::store::state::{CardHandle, ChatTarget, OutboxEntry, OutboxOp};

/// Longest file name stem taken from a title, in chars.
const MAX_STEM_CHARS: usize = 48;

/// The outbox entries that deliver a finished command's result: to a chat,
/// with its output `kept` as a file (a long result), a summary card and
/// the file; else paginated cards, `screen` (the pane's screen when the
/// turn ended) on the last one in a closed panel. The entries are stamped
/// `now_ms` (the caller's clock). Gives back a kept file no entry names
/// (the console reads cards): the caller has it removed.
pub fn result_entries(
    kept: Option<KeptOutput>,
    target: &ChatTarget,
    reply_to: Option<&str>,
    title: &str,
    output: &str,
    screen: Option<&str>,
    now_ms: u64,
) -> (Vec<OutboxEntry>, Option<KeptOutput>) {
    match (kept, target) {
        (Some(kept), ChatTarget::Chat { .. }) => {
            let file_name = format!("{}.txt", stem(title));
            let summary = present::summary_card(title, output, &file_name);
            let file = OutboxEntry {
                uuid: kept.uuid,
                op: OutboxOp::File {
                    target: target.clone(),
                    handle: CardHandle::random(),
                    reply_to: reply_to.map(String::from),
                    path: kept.path.to_string_lossy().into_owned(),
                    file_name: file_name.clone(),
                },
                // What a text reader (the event log, a test) sees of it.
                message: Some(
                    Message::new(file_name.as_str(), Tone::Done).push(Block::text(format!(
                        "(file {file_name}, {} bytes)",
                        output.len()
                    ))),
                ),
                created_ms: now_ms,
            };
            let summary = card_entry(target, reply_to, &summary, now_ms);
            (vec![summary, file], None)
        }
        (unused, _) => {
            let markdown = crate::bridge::texts::output_markdown(output);
            let cards = present::result_cards(title, &markdown, screen)
                .iter()
                .map(|c| card_entry(target, reply_to, c, now_ms))
                .collect();
            (cards, unused)
        }
    }
}

/// A reaction on the user's message (`emoji`: Feishu's emoji type, e.g.
/// `OnIt` when a command is taken, `DONE` when it finished).
pub fn reaction_entry(message_id: &str, emoji: &str, now_ms: u64) -> OutboxEntry {
    OutboxEntry {
        uuid: uuid::Uuid::new_v4().to_string(),
        op: OutboxOp::React {
            handle: CardHandle::random(),
            message_id: message_id.to_string(),
            emoji: emoji.to_string(),
        },
        message: None,
        created_ms: now_ms,
    }
}

/// The "taken" reaction on a chat command's message (none on the console).
pub fn taken_reaction(
    target: &ChatTarget,
    message_id: Option<&str>,
    now_ms: u64,
) -> Option<OutboxEntry> {
    reaction_for(target, message_id, EMOJI_TAKEN, now_ms)
}

/// The "finished" reaction on a chat command's message (none on the console).
pub fn done_reaction(
    target: &ChatTarget,
    message_id: Option<&str>,
    now_ms: u64,
) -> Option<OutboxEntry> {
    reaction_for(target, message_id, EMOJI_DONE, now_ms)
}

fn reaction_for(
    target: &ChatTarget,
    message_id: Option<&str>,
    emoji: &str,
    now_ms: u64,
) -> Option<OutboxEntry> {
    match (target, message_id) {
        (ChatTarget::Chat { .. }, Some(m)) => Some(reaction_entry(m, emoji, now_ms)),
        _ => None,
    }
}

/// Feishu's emoji type for "taken, working on it".
pub const EMOJI_TAKEN: &str = "OnIt";
/// Feishu's emoji type for "finished".
pub const EMOJI_DONE: &str = "DONE";

fn card_entry(
    target: &ChatTarget,
    reply_to: Option<&str>,
    card: &Message,
    now_ms: u64,
) -> OutboxEntry {
    OutboxEntry {
        uuid: uuid::Uuid::new_v4().to_string(),
        op: OutboxOp::Send {
            target: target.clone(),
            handle: CardHandle::random(),
            reply_to: reply_to.map(String::from),
            image: None,
        },
        message: Some(card.clone()),
        created_ms: now_ms,
    }
}

/// A file name stem from a title: letters, digits, `-` and `_`.
fn stem(title: &str) -> String {
    let s: String = title
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect::<String>()
        .split('-')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("-")
        .chars()
        .take(MAX_STEM_CHARS)
        .collect();
    if s.is_empty() { "result".into() } else { s }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bridge::outbox_files::{
        DEFAULT_LONG_RESULT_BYTES, OUTBOX_FILES_DIR, keep_long_output,
    };
    use crate::feishu::paginate::{MAX_REQUEST_BODY_BYTES, body_len};

    fn chat() -> ChatTarget {
        ChatTarget::Chat {
            id: crate::store::ids::chat("oc_1"),
        }
    }

    #[test]
    fn a_megabyte_result_is_one_summary_card_and_one_file() {
        let dir = tempfile::tempdir().unwrap();
        let output: String = (0..25_000)
            .map(|i| format!("{{\"line\":{i},\"msg\":\"a \\\"quoted\\\" value\"}}\n"))
            .collect();
        assert!(output.len() >= 1_000_000);
        let kept = keep_long_output(dir.path(), DEFAULT_LONG_RESULT_BYTES, &output);
        assert!(kept.is_some(), "over the threshold, kept");
        let (entries, unused) = result_entries(
            kept,
            &chat(),
            Some("om_1"),
            "demo: /gsd:execute",
            &output,
            None,
            0,
        );
        assert_eq!(unused, None, "the file message names it");
        assert_eq!(entries.len(), 2);
        let card: Message = match &entries[0].op {
            OutboxOp::Send { reply_to, .. } => {
                assert_eq!(reply_to.as_deref(), Some("om_1"));
                let text = entries[0].message.as_ref().unwrap().to_text();
                assert!(text.contains("25000 lines"), "{text}");
                assert!(
                    text.contains("\"line\":0,") && text.contains("\"line\":24999,"),
                    "head and tail"
                );
                entries[0].message.clone().unwrap()
            }
            other => panic!("{other:?}"),
        };
        assert!(body_len(&card) <= MAX_REQUEST_BODY_BYTES);
        match &entries[1].op {
            OutboxOp::File {
                path,
                file_name,
                reply_to,
                ..
            } => {
                assert_eq!(file_name, "demo-gsd-execute.txt");
                assert_eq!(reply_to.as_deref(), Some("om_1"));
                assert_eq!(std::fs::read_to_string(path).unwrap(), output);
                use std::os::unix::fs::PermissionsExt;
                let mode = std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
                assert_eq!(mode, 0o600);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn short_results_and_a_zero_threshold_are_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let big = "x\n".repeat(40_000);
        assert_eq!(
            keep_long_output(dir.path(), DEFAULT_LONG_RESULT_BYTES, "short"),
            None
        );
        assert_eq!(keep_long_output(dir.path(), 0, &big), None);
        assert!(!dir.path().join(OUTBOX_FILES_DIR).exists());
    }

    #[test]
    fn results_without_a_kept_file_and_console_results_stay_cards() {
        let dir = tempfile::tempdir().unwrap();
        let big = "x\n".repeat(40_000);
        let kept = keep_long_output(dir.path(), DEFAULT_LONG_RESULT_BYTES, &big);
        let path = kept.as_ref().map(|k| k.path.clone());
        for (target, kept) in [(chat(), None), (ChatTarget::Console, kept)] {
            let (entries, unused) = result_entries(kept, &target, None, "t", &big, None, 0);
            assert!(entries.len() > 1, "paginated");
            assert!(
                entries
                    .iter()
                    .all(|e| matches!(e.op, OutboxOp::Send { .. }))
            );
            // What no entry names is given back, to be removed.
            let console = matches!(target, ChatTarget::Console);
            assert_eq!(
                unused.map(|k| k.path),
                console.then(|| path.clone().unwrap())
            );
        }
    }

    #[test]
    fn file_stems_are_safe() {
        assert_eq!(stem("demo: /gsd:plan-phase 2"), "demo-gsd-plan-phase-2");
        assert_eq!(stem("../../etc"), "etc");
        assert_eq!(stem("::"), "result");
    }
}
