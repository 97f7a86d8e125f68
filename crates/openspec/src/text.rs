//! Text primitives that behave exactly like the JavaScript the OpenSpec CLI
//! runs: its whitespace class (`\s`, `trim`), its `.` (no line terminators),
//! its ASCII-only `\b`, and its code-fence mask. Agreement with `openspec
//! validate` on odd input (NBSP, U+2028, BOM, `ſ`) depends on these, so every
//! regex in the linter is built from the fragments here.

/// JavaScript's `\s`: what `trim()` strips and `\s` matches (ECMA-262
/// WhiteSpace + LineTerminator). Differs from Rust's `char::is_whitespace`:
/// it includes U+FEFF and excludes U+0085.
pub(crate) fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202F}'
                | '\u{205F}'
                | '\u{3000}'
                | '\u{FEFF}'
    )
}

/// Regex class for JavaScript's `\s`, to splice into patterns.
pub(crate) const WS: &str = r"[\t\n\x0B\x0C\r \u{A0}\u{1680}\u{2000}-\u{200A}\u{2028}\u{2029}\u{202F}\u{205F}\u{3000}\u{FEFF}]";

/// Regex class for JavaScript's `\S`.
pub(crate) const NOT_WS: &str = r"[^\t\n\x0B\x0C\r \u{A0}\u{1680}\u{2000}-\u{200A}\u{2028}\u{2029}\u{202F}\u{205F}\u{3000}\u{FEFF}]";

/// Regex class for JavaScript's `.` without the `s` flag.
pub(crate) const DOT: &str = r"[^\n\r\u{2028}\u{2029}]";

/// Builds one of the linter's fixed patterns: `{WS}`, `{NOT_WS}` and `{DOT}`
/// are replaced by the JavaScript-compatible classes above.
pub(crate) fn js_regex(pattern: &str) -> regex::Regex {
    let expanded = pattern
        .replace("{WS}", WS)
        .replace("{NOT_WS}", NOT_WS)
        .replace("{DOT}", DOT);
    // The patterns are constants of this crate, compiled by the unit tests.
    regex::Regex::new(&expanded).expect("constant linter pattern compiles")
}

/// `String.prototype.trim`.
pub(crate) fn js_trim(s: &str) -> &str {
    s.trim_matches(is_js_space)
}

/// `String.prototype.trimEnd`.
pub(crate) fn js_trim_end(s: &str) -> &str {
    s.trim_end_matches(is_js_space)
}

/// `/\b(SHALL|MUST)\b/`: the keyword as a whole word, where a word character
/// is ASCII `[A-Za-z0-9_]` only (JavaScript's `\b` without the `u` flag).
pub(crate) fn contains_shall_or_must(text: &str) -> bool {
    let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let bytes = text.as_bytes();
    ["SHALL", "MUST"].iter().any(|kw| {
        text.match_indices(kw).any(|(at, _)| {
            let end = at + kw.len();
            (at == 0 || !is_word(bytes[at - 1])) && (end == bytes.len() || !is_word(bytes[end]))
        })
    })
}

/// Line endings and a leading BOM normalised the way OpenSpec's delta reader
/// does before splitting into lines.
pub(crate) fn normalize_lines(content: &str) -> String {
    content
        .strip_prefix('\u{FEFF}')
        .unwrap_or(content)
        .replace("\r\n", "\n")
        .replace('\r', "\n")
}

/// Per-line mask: `true` for lines inside a fenced code block, the fence
/// lines included. An opener is three or more backticks or tildes after
/// optional whitespace; the closer is the same character, at least as long,
/// alone on its line. An unclosed fence runs to the end.
pub(crate) fn code_fence_mask(lines: &[&str]) -> Vec<bool> {
    let mut mask = vec![false; lines.len()];
    let mut active: Option<(char, usize)> = None;
    for (i, line) in lines.iter().enumerate() {
        match active {
            None => {
                if let Some(fence) = fence_run(js_trim_start(line)) {
                    active = Some(fence);
                    mask[i] = true;
                }
            }
            Some((marker, len)) => {
                mask[i] = true;
                let trimmed = js_trim(line);
                if let Some((m, l)) = fence_run(trimmed)
                    && m == marker
                    && l >= len
                    && l == trimmed.len()
                {
                    active = None;
                }
            }
        }
    }
    mask
}

fn js_trim_start(s: &str) -> &str {
    s.trim_start_matches(is_js_space)
}

/// The fence character and run length at the start of `s`, when it is a run
/// of at least three backticks or tildes.
fn fence_run(s: &str) -> Option<(char, usize)> {
    let marker = s.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = s.chars().take_while(|c| *c == marker).count();
    (len >= 3).then_some((marker, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_matches_javascript() {
        assert_eq!(js_trim("\u{FEFF}\u{A0} a \u{2028}"), "a");
        assert_eq!(js_trim("\u{85}a"), "\u{85}a");
    }

    #[test]
    fn shall_must_is_an_ascii_whole_word() {
        assert!(contains_shall_or_must("The system SHALL work"));
        assert!(contains_shall_or_must("MUST."));
        assert!(!contains_shall_or_must("MUSTARD and SHALLOW"));
        assert!(!contains_shall_or_must("must"));
        assert!(contains_shall_or_must("éMUSTé"));
        assert!(!contains_shall_or_must("_MUST"));
    }

    #[test]
    fn fences_mask_their_content_and_close_on_same_marker() {
        let lines = [
            "a", "```md", "### x", "~~~", "```", "b", "  ~~~~", "~~~", "~~~~",
        ];
        assert_eq!(
            code_fence_mask(&lines),
            vec![false, true, true, true, true, false, true, true, true]
        );
    }

    #[test]
    fn closing_fence_must_be_alone() {
        let lines = ["```", "``` x", "c", "```"];
        assert_eq!(code_fence_mask(&lines), vec![true, true, true, true]);
    }
}
