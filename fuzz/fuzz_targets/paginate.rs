//! The card paginator on arbitrary markdown (the first line is the title):
//! never panics, at least one card, every card schema 2.0 and within
//! Feishu's JSON limit (and the paginator's own target), code fences
//! balanced on every card, and every input line the paginator promises not
//! to cut present in the cards' text (the module's proptest properties).
#![no_main]

use clawmux::feishu::card::Card;
use clawmux::feishu::paginate::{MAX_REQUEST_BODY_BYTES, TARGET_CARD_JSON_BYTES, body_len, paginate};
use clawmux::message::{Block, Message, Tone};
use libfuzzer_sys::fuzz_target;

/// The paginator cuts the title when less than this is left for the text
/// (its private `MIN_CONTENT_BYTES`), to at most `SHORT_TITLE_BYTES` bytes
/// (`MAX_TITLE_BYTES`).
const MIN_CONTENT_BYTES: usize = 4 * 1024;
const SHORT_TITLE_BYTES: usize = 200;

/// The paginator cuts a line whose JSON is longer than half a page's
/// content budget (so a piece fits with a reopened fence or table header):
/// that half, for the title that costs the most JSON bytes.
fn whole_line_json_bytes(title: &str) -> usize {
    let overhead = |title: &str| {
        let message =
            Message::new(format!("{title} [99999/99999]"), Tone::Info).push(Block::text(""));
        Card::from(&message).json_len()
    };
    let mut cost = overhead(title);
    if cost + MIN_CONTENT_BYTES > TARGET_CARD_JSON_BYTES {
        // The title is cut to a prefix of at most SHORT_TITLE_BYTES bytes.
        cost = overhead(&"\u{1}".repeat(SHORT_TITLE_BYTES));
    }
    TARGET_CARD_JSON_BYTES.saturating_sub(cost) / 2
}

fn json_len(text: &str) -> usize {
    serde_json::to_string(text).map_or(usize::MAX, |j| j.len() - 2)
}

/// A fence line: up to 3 spaces, then 3+ backticks or tildes (as the
/// paginator and CommonMark read it; longer than 256 bytes is text). The
/// paginator's own `fence_of` is private: this copy is the oracle.
fn fence_of(line: &[u8]) -> Option<(u8, usize, &[u8])> {
    if line.len() > 256 {
        return None;
    }
    let indent = line.iter().take(4).take_while(|&&b| b == b' ').count();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let ch = *rest.first()?;
    if ch != b'`' && ch != b'~' {
        return None;
    }
    let len = rest.iter().take_while(|&&b| b == ch).count();
    (len >= 3).then_some((ch, len, &rest[len..]))
}

/// No fence is left open at the end of `text`.
fn balanced(text: &str) -> bool {
    let mut open: Option<(u8, usize)> = None;
    for line in text.lines() {
        open = match (open, fence_of(line.as_bytes())) {
            (None, Some((ch, len, _))) => Some((ch, len)),
            (Some((och, olen)), Some((ch, len, rest)))
                if ch == och && len >= olen && rest.iter().all(u8::is_ascii_whitespace) =>
            {
                None
            }
            (open, _) => open,
        };
    }
    open.is_none()
}

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    let (title, markdown) = input.split_once('\n').unwrap_or(("Fuzz", input));
    let cards = paginate(title, Tone::Info, markdown);
    assert!(!cards.is_empty());
    let mut all = String::new();
    for card in &cards {
        let json = Card::from(card).to_json();
        let body = body_len(card);
        assert!(body <= MAX_REQUEST_BODY_BYTES, "request of {body} bytes");
        assert!(body <= TARGET_CARD_JSON_BYTES, "request of {body} bytes");
        let value: serde_json::Value = serde_json::from_str(&json).expect("card JSON parses");
        assert_eq!(value["schema"], "2.0");
        let text = card.text();
        assert!(balanced(&text), "unbalanced fences in {text:?}");
        all.push_str(&text);
        all.push('\n');
    }
    let whole = whole_line_json_bytes(title);
    for line in markdown.split('\n') {
        if !line.trim().is_empty() && json_len(line) <= whole {
            assert!(all.contains(line), "line lost: {line:?}");
        }
    }
});
