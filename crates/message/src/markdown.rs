//! Markdown as messages carry it: escaping that shows terminal output and
//! names literally (a code block the text cannot close, inline text whose
//! special characters are entities), and undoing it for plain text.

/// Zero-width space: breaks up backtick runs inside code blocks.
const ZWSP: char = '\u{200B}';

/// Escape text shown inside a fenced code block so it cannot end the block:
/// a zero-width space is put after each backtick that another one follows.
pub fn escape_code_block(text: &str) -> String {
    if !text.contains("``") {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut prev_tick = false;
    for ch in text.chars() {
        if ch == '`' && prev_tick {
            out.push(ZWSP);
        }
        out.push(ch);
        prev_tick = ch == '`';
    }
    out
}

/// Undo [`escape_code_block`] for plain-text rendering.
pub fn unescape_code_text(text: &str) -> String {
    if !text.contains(ZWSP) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut prev_tick = false;
    for ch in text.chars() {
        if ch == ZWSP && prev_tick {
            prev_tick = false;
            continue;
        }
        out.push(ch);
        prev_tick = ch == '`';
    }
    out
}

/// Escape a short inline string (a name, a stage) so markdown shows it as
/// typed: special characters become HTML entities, which Feishu renders.
pub fn escape_inline(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '*' | '_' | '~' | '`' | '[' | ']' | '<' | '>' | '#' | '|' | '\\' | '&' | '$' => {
                out.push_str(&format!("&#{};", ch as u32))
            }
            '\n' | '\r' => out.push(' '),
            _ => out.push(ch),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_block_escape_round_trips() {
        let raw = "a ``` b\n```\nx`y";
        let esc = escape_code_block(raw);
        assert!(!esc.contains("``"));
        assert_eq!(unescape_code_text(&esc), raw);
    }

    #[test]
    fn inline_escape() {
        assert_eq!(escape_inline("a*b_[c]"), "a&#42;b&#95;&#91;c&#93;");
        assert_eq!(escape_inline("a\nb"), "a b");
    }
}
