//! Card text: how many request-body bytes a piece of text costs, cutting
//! text to a budget of such bytes, and code blocks fitted to one (the
//! escaping that shows terminal output and names literally is the
//! message's, `clawmux_message::markdown`, re-exported here). The card model
//! ([`super::card`]), the paginator ([`super::paginate`]) and the bridge's
//! presenter all build on it; it depends on nothing of theirs.
//!
//! Sizes are request-body bytes: card text is escaped into the card JSON,
//! and that JSON is escaped again as the message's `content` string, so a
//! quote in the text costs 4 body bytes and a control byte 7.

pub use clawmux_message::markdown::{escape_code_block, escape_inline, unescape_code_text};

/// JSON-escaped length of each byte, as serde_json writes strings.
const JSON_LEN: [u8; 256] = {
    let mut t = [1u8; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = 6;
        b += 1;
    }
    t[0x08] = 2;
    t[0x0c] = 2;
    t[b'\n' as usize] = 2;
    t[b'\r' as usize] = 2;
    t[b'\t' as usize] = 2;
    t[b'"' as usize] = 2;
    t[b'\\' as usize] = 2;
    t
};

/// Request body length of each byte of card text: escaped into the card
/// JSON, then that escape escaped again into `content` (`"` becomes `\"`,
/// then `\\\"`: 4 bytes; `\n` becomes `\\n`: 3; a control byte `\\u0001`: 7).
const BODY_LEN: [u8; 256] = {
    let mut t = [1u8; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = match JSON_LEN[b] {
            1 => 1,
            // `\x`: the backslash doubles; `"` and `\` escape to `\"`/`\\`.
            2 if b == b'"' as usize || b == b'\\' as usize => 4,
            2 => 3,
            // `\u00XX`: only its backslash doubles.
            _ => 7,
        };
        b += 1;
    }
    t
};

/// Rounds of shortening a code block before giving up on its text (each
/// round removes at least the excess, so a few suffice).
const MAX_FIT_ROUNDS: usize = 16;

/// The request body bytes one byte of card text costs.
pub const fn body_byte_len(b: u8) -> usize {
    BODY_LEN[b as usize] as usize
}

/// The request body bytes `s` costs as card text.
pub fn body_text_len(s: &[u8]) -> usize {
    s.iter().map(|&b| body_byte_len(b)).sum()
}

/// The length of `s` once written as the inside of a JSON string.
pub fn json_escaped_len(s: &[u8]) -> usize {
    s.iter().map(|&b| JSON_LEN[b as usize] as usize).sum()
}

/// The longest tail of `text` costing at most `max` body bytes, starting
/// on a char boundary.
pub fn last_body_bytes(text: &str, max: usize) -> &str {
    let bytes = text.as_bytes();
    let mut used = 0;
    let mut start = bytes.len();
    while start > 0 {
        let l = body_byte_len(bytes[start - 1]);
        if used + l > max {
            break;
        }
        used += l;
        start -= 1;
    }
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// The longest head of `text` costing at most `max` body bytes, ending on a
/// char boundary.
pub fn first_body_bytes(text: &str, max: usize) -> &str {
    let bytes = text.as_bytes();
    let mut used = 0;
    let mut end = 0;
    while end < bytes.len() {
        let l = body_byte_len(bytes[end]);
        if used + l > max {
            break;
        }
        used += l;
        end += 1;
    }
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The last at most `max` bytes of `text`, starting on a char boundary.
pub fn last_bytes(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// The tail of `text` as a fenced code block costing at most `budget` body
/// bytes. Escaping adds zero-width spaces, so the tail is taken, escaped,
/// measured, and taken shorter by the excess until it fits.
pub fn code_block_tail(text: &str, budget: usize) -> String {
    code_block_fit(text, budget, last_body_bytes)
}

/// The head of `text` as a fenced code block costing at most `budget`
/// body bytes (see [`code_block_tail`]).
pub fn code_block_head(text: &str, budget: usize) -> String {
    code_block_fit(text, budget, first_body_bytes)
}

fn code_block_fit(text: &str, budget: usize, take: fn(&str, usize) -> &str) -> String {
    let wrap = |t: &str| format!("```\n{t}\n```");
    let room = budget.saturating_sub(body_text_len(wrap("").as_bytes()));
    let mut take_bytes = room;
    for _ in 0..MAX_FIT_ROUNDS {
        let escaped = escape_code_block(take(text, take_bytes));
        let cost = body_text_len(escaped.as_bytes());
        if cost <= room {
            return wrap(&escaped);
        }
        take_bytes = take_bytes.saturating_sub(cost - room);
    }
    wrap("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_cost_counts_both_escapes() {
        assert_eq!(body_text_len(b"a"), 1);
        assert_eq!(body_text_len(b"\""), 4);
        assert_eq!(body_text_len(b"\\"), 4);
        assert_eq!(body_text_len(b"\n"), 3);
        assert_eq!(body_text_len(b"\x01"), 7);
        // Measured against serde_json: the text in a card, the card in `content`.
        let text = "a\"b\\c\nd\x01e\t日本";
        let card = serde_json::json!({ "t": text }).to_string();
        let body = serde_json::json!({ "c": card }).to_string();
        let frame = serde_json::json!({ "c": serde_json::json!({ "t": "" }).to_string() })
            .to_string()
            .len();
        assert_eq!(body.len() - frame, body_text_len(text.as_bytes()));
        assert_eq!(
            serde_json::to_string(text).unwrap().len() - 2,
            json_escaped_len(text.as_bytes())
        );
    }

    #[test]
    fn cuts_stay_on_char_boundaries_within_budget() {
        let text = "日本語\"x";
        assert_eq!(last_body_bytes(text, 4), "x");
        assert_eq!(last_body_bytes(text, 5), "\"x");
        assert_eq!(first_body_bytes(text, 4), "日");
        assert_eq!(last_bytes("日本", 4), "本");
    }

    #[test]
    fn code_blocks_fit_their_budget_and_stay_closed() {
        let text = "```\"\u{1}x\n".repeat(5000);
        for budget in [0, 7, 100, 4096] {
            for block in [
                code_block_tail(&text, budget),
                code_block_head(&text, budget),
            ] {
                assert!(block.starts_with("```\n") && block.ends_with("\n```"));
                assert_eq!(block.matches("```").count(), 2, "{block}");
                let cost = body_text_len(block.as_bytes());
                assert!(
                    cost <= budget.max(body_text_len(b"```\n\n```")),
                    "{cost} > {budget}"
                );
            }
        }
        assert!(code_block_tail(&text, 4096).ends_with("x\n\n```"));
        assert!(code_block_head(&text, 4096).starts_with("```\n`\u{200B}`\u{200B}`"));
    }
}
