//! Escaping of outside text (chat messages, pane output, card text) before it
//! is printed to an operator's terminal, so the text cannot move the cursor,
//! clear the screen, set the window title or reorder what is shown.
//!
//! Every C0 control (except the line breaks a caller keeps), DEL, every C1
//! control (U+0080..U+009F: some terminals take U+009B as CSI) and the
//! Unicode bidirectional controls (embeddings, overrides, isolates and marks,
//! U+061C among them) are written as visible escapes: `\x1b`,
//! `\x7f`, `\u{9b}`, `\u{202e}`. Everything else, including a backslash, is
//! written as it is: the result is for reading, not for parsing back.
//!
//! Imported by the layers that print (commands, the console channel) and by
//! [`crate::shell`] for its error messages.

use std::borrow::Cow;
use std::fmt::Write;

/// What may stay as it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    /// Everything is escaped, line breaks and tabs too: one record, one line.
    Nothing,
    /// `\n` and `\t` stay (a multi-line card); `\r` is still escaped, as it
    /// would let a line overwrite the one before it.
    LinesAndTabs,
}

/// `text` with its control characters made visible (borrowed when there are
/// none, the common case).
pub fn escape_controls(text: &str, keep: Keep) -> Cow<'_, str> {
    if !text.chars().any(|c| needs_escape(c, keep)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if !needs_escape(c, keep) {
            out.push(c);
        } else if (c as u32) < 0x80 {
            // Infallible: writing to a String.
            let _ = write!(out, "\\x{:02x}", c as u32);
        } else {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
    Cow::Owned(out)
}

fn needs_escape(c: char, keep: Keep) -> bool {
    match c {
        '\n' | '\t' => keep == Keep::Nothing,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => true,
        // Bidirectional embeddings, overrides and isolates, and the marks
        // (U+061C ARABIC LETTER MARK is one too, outside the other blocks).
        '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => {
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        let text = "Phase 2 done ✅ — 3 files, C:\\path";
        assert!(matches!(
            escape_controls(text, Keep::Nothing),
            Cow::Borrowed(t) if t == text
        ));
    }

    #[test]
    fn terminal_sequences_are_made_visible() {
        let hostile = "a\x1b]2;pwned\x07b\x1b[2Jc\rd\u{9b}31m\u{7f}\u{202e}e\n\tf";
        assert_eq!(
            escape_controls(hostile, Keep::Nothing),
            "a\\x1b]2;pwned\\x07b\\x1b[2Jc\\x0dd\\u{9b}31m\\x7f\\u{202e}e\\x0a\\x09f"
        );
        assert_eq!(
            escape_controls(hostile, Keep::LinesAndTabs),
            "a\\x1b]2;pwned\\x07b\\x1b[2Jc\\x0dd\\u{9b}31m\\x7f\\u{202e}e\n\tf"
        );
    }

    /// Every Unicode bidirectional control (Bidi_Control=Yes in
    /// PropList.txt) is escaped, ARABIC LETTER MARK among them.
    #[test]
    fn every_bidi_control_is_escaped() {
        let bidi_controls = [
            '\u{61c}', '\u{200e}', '\u{200f}', '\u{202a}', '\u{202b}', '\u{202c}', '\u{202d}',
            '\u{202e}', '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}',
        ];
        for c in bidi_controls {
            let s = format!("a{c}b");
            assert_eq!(
                escape_controls(&s, Keep::LinesAndTabs),
                format!("a\\u{{{:x}}}b", c as u32),
                "U+{:04X}",
                c as u32
            );
        }
    }

    #[test]
    fn no_control_character_survives_any_input() {
        for cp in 0u32..0x3000 {
            let Some(c) = char::from_u32(cp) else {
                continue;
            };
            let s = c.to_string();
            let out = escape_controls(&s, Keep::LinesAndTabs);
            assert!(
                out.chars()
                    .all(|o| o == '\n' || o == '\t' || !needs_escape(o, Keep::LinesAndTabs)),
                "U+{cp:04X} -> {out:?}"
            );
        }
    }
}
