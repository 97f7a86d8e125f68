//! Splits long markdown into messages that each fit Feishu's 30 KB card limit. The
//! limit is on the request body, where the card JSON is escaped once more
//! as the `content` string: every size here is measured that way (a quote
//! in the text costs 4 body bytes, a control byte 7), not on the text.
//!
//! Cuts prefer paragraph boundaries, then line boundaries, so a table row is
//! never cut; a code fence open at a cut is closed on one card and reopened
//! with the same info string on the next; a line too long for one card is cut
//! at a UTF-8 boundary outside any markdown escape. Pages carry `[i/N]` in the
//! title. Sizes and escaping come from [`super::markdown`].

pub use super::card::{MAX_ENVELOPE_BYTES, MAX_REQUEST_BODY_BYTES, TARGET_BODY_BYTES, body_len};
use super::markdown::{body_byte_len, body_text_len};
use clawmux_i18n::{Lang, Text};
use clawmux_message::{Block, Message, Tone};

/// The bench's name for [`TARGET_BODY_BYTES`].
pub const TARGET_CARD_JSON_BYTES: usize = TARGET_BODY_BYTES;

/// A cut at a paragraph boundary is taken only if the page is at least this
/// full (percent); otherwise cutting at a line boundary wastes less space.
const MIN_PARAGRAPH_FILL_PERCENT: usize = 50;

/// Longest markdown escape we must not cut: an HTML entity like `&#12345;`.
const MAX_ENTITY_BYTES: usize = 10;

/// Shown when there is nothing to show (Feishu rejects empty markdown).
const EMPTY_TEXT: &str = "_(no output)_";

/// Longest line taken as a code fence, in bytes: bounds what reopening a
/// fence adds to a page (a longer "fence" line is kept as text).
const MAX_FENCE_LINE_BYTES: usize = 256;

/// Largest table header (header + delimiter row, body bytes) repeated on
/// the next card when a table is cut; a bigger one is not repeated.
const MAX_TABLE_HEADER_BYTES: usize = 2 * 1024;

/// Body bytes of a newline in card text.
const NEWLINE_BODY: usize = body_byte_len(b'\n');

fn json_len(s: &[u8]) -> usize {
    body_text_len(s)
}

/// One piece of input: a whole line, or part of a line too long for a card.
#[derive(Clone, Copy)]
struct Seg {
    start: usize,
    end: usize,
    /// A `\n` followed this piece in the input.
    newline: bool,
    /// The code fence this segment is in (the opening line itself
    /// excluded): index of the opening segment and its fence.
    fence_before: Option<(usize, Fence)>,
    /// For a table body row: index of the table's header row (the
    /// delimiter row follows it), repeated atop a page that starts here.
    table_header: Option<usize>,
}

/// An open code fence: its character and length, to close it properly.
#[derive(Clone, Copy)]
struct Fence {
    ch: u8,
    len: usize,
}

/// If `line` is a fence line (up to 3 spaces, then 3+ backticks or tildes),
/// its character and run length.
fn fence_of(line: &[u8]) -> Option<(Fence, &[u8])> {
    if line.len() > MAX_FENCE_LINE_BYTES {
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
    (len >= 3).then_some((Fence { ch, len }, &rest[len..]))
}

/// The fence open after `line`, given the one open before it: a fence line
/// opens one; inside, only a bare run of the same character, at least as
/// long, closes it.
fn fence_after(open: Option<Fence>, line: &[u8]) -> Option<Fence> {
    match (open, fence_of(line)) {
        (None, Some((f, _))) => Some(f),
        (Some(o), Some((f, rest)))
            if f.ch == o.ch && f.len >= o.len && rest.iter().all(u8::is_ascii_whitespace) =>
        {
            None
        }
        (open, _) => open,
    }
}

/// Paginate `markdown` into cards titled `title` (with `[i/N]` when N > 1).
///
/// Text in two languages ([`Text`]) is one card carrying both when both
/// fit on it; otherwise each language is split with a third of the room
/// (the English words are written twice: `content` and `i18n_content`) and
/// the pages paired (a language with fewer pages gets `…` on the last ones).
pub fn paginate(title: impl Into<Text>, tone: Tone, markdown: impl Into<Text>) -> Vec<Message> {
    let (title, markdown) = (title.into(), markdown.into());
    if markdown.is_literal() {
        return paginate_one(&title, tone, markdown.get(Lang::En), 1);
    }
    let whole = Message::new(title.clone(), tone).push(Block::text(markdown.clone()));
    if !markdown.get(Lang::En).trim().is_empty() && body_len(&whole) <= TARGET_BODY_BYTES {
        return vec![whole];
    }
    let en = paginate_one(&title, tone, markdown.get(Lang::En), TEXTS_PER_I18N);
    let zh = paginate_one(&title, tone, markdown.get(Lang::Zh), TEXTS_PER_I18N);
    let n = en.len().max(zh.len());
    let page_text = |cards: &[Message], i: usize| {
        cards
            .get(i)
            .map(Message::text)
            .unwrap_or_else(|| "…".to_string())
    };
    (0..n)
        .map(|i| {
            let t = page_title(&title, i, n);
            let text = Text::both(page_text(&en, i), page_text(&zh, i));
            Message::new(t, tone).push(Block::text(text))
        })
        .collect()
}

/// Copies of a text of one language's size a translated element carries:
/// `content` (English), and `i18n_content`'s `en_us` and `zh_cn`.
pub const TEXTS_PER_I18N: usize = 3;

/// The title of page `i` of `n`.
fn page_title(title: &Text, i: usize, n: usize) -> Text {
    if n > 1 {
        title.map(|t| format!("{t} [{}/{n}]", i + 1))
    } else {
        title.clone()
    }
}

/// Pages of one text, each leaving room for `share` texts of its size
/// ([`TEXTS_PER_I18N`] when the page carries it in two languages).
fn paginate_one(title: &Text, tone: Tone, markdown: &str, share: usize) -> Vec<Message> {
    let markdown = if markdown.trim().is_empty() {
        EMPTY_TEXT
    } else {
        markdown
    };
    let overhead =
        body_len(&Message::new(page_title(title, 99998, 99999), tone).push(Block::text("")));
    // A title so long that nothing fits is cut first.
    if overhead + MIN_CONTENT_BYTES * share > TARGET_BODY_BYTES {
        let short = title.map(|t| truncate_at_boundary(t, MAX_TITLE_BYTES).to_string());
        if short != *title {
            return paginate_one(&short, tone, markdown, share);
        }
    }
    let budget = TARGET_BODY_BYTES.saturating_sub(overhead) / share;
    let pages = split(markdown, budget);
    let n = pages.len();
    pages
        .into_iter()
        .enumerate()
        .map(|(i, text)| Message::new(page_title(title, i, n), tone).push(Block::text(text)))
        .collect()
}

/// Smallest content budget worth paginating with, in body bytes.
const MIN_CONTENT_BYTES: usize = 4 * 1024;
/// Title length used when a title leaves less than that, in bytes.
const MAX_TITLE_BYTES: usize = 200;

/// Split `text` into page texts each at most `budget` body bytes.
fn split(text: &str, budget: usize) -> Vec<String> {
    let bytes = text.as_bytes();
    let (segs, open_at_end) = segments(text, budget);
    // cum[i]: JSON length of segments [0, i), each with its trailing newline.
    let mut cum = Vec::with_capacity(segs.len() + 1);
    cum.push(0usize);
    for s in &segs {
        let l = json_len(&bytes[s.start..s.end]) + if s.newline { NEWLINE_BODY } else { 0 };
        cum.push(cum.last().copied().unwrap_or(0) + l);
    }
    let line_len = |i: usize| json_len(&bytes[segs[i].start..segs[i].end]) + NEWLINE_BODY;
    // What a page starting at `s` repeats: the open fence line, or the
    // header and delimiter rows of the table it cuts.
    let reopen_len = |s: usize| -> usize {
        match (segs[s].fence_before, segs[s].table_header) {
            (Some((open, _)), _) => line_len(open),
            (None, Some(h)) => line_len(h) + line_len(h + 1),
            (None, None) => 0,
        }
    };
    // A fence open where a page ends is closed there (at the very end too,
    // when the input never closed it, so every card is balanced).
    let close_at = |c: usize| -> Option<Fence> {
        match segs.get(c) {
            Some(seg) => seg.fence_before.map(|(_, f)| f),
            None => open_at_end,
        }
    };
    let size = |s: usize, c: usize| -> usize {
        let close = close_at(c).map_or(0, |f| f.len + NEWLINE_BODY);
        // The last segment's trailing newline is not written.
        let trailing = if segs[c - 1].newline { NEWLINE_BODY } else { 0 };
        reopen_len(s) + cum[c] - cum[s] - trailing + close
    };

    let mut pages = Vec::new();
    let mut s = 0;
    while s < segs.len() {
        let mut c = s + 1; // always take at least one segment
        let mut best_para = None;
        while c < segs.len() && size(s, c + 1) <= budget {
            c += 1;
            if is_paragraph_end(bytes, &segs, c) {
                best_para = Some(c);
            }
        }
        if c < segs.len()
            && let Some(p) = best_para
            && p < c
            && (cum[p] - cum[s]) * 100 >= budget * MIN_PARAGRAPH_FILL_PERCENT
        {
            c = p;
        }
        pages.push(render_page(bytes, &segs, s, c, close_at(c)));
        s = c;
    }
    pages
}

/// A page may end before segment `c` at a paragraph boundary: after a blank
/// line outside code.
fn is_paragraph_end(bytes: &[u8], segs: &[Seg], c: usize) -> bool {
    let prev = &segs[c - 1];
    let outside = c >= segs.len() || segs[c].fence_before.is_none();
    outside
        && prev.newline
        && bytes[prev.start..prev.end]
            .iter()
            .all(|b| b.is_ascii_whitespace())
}

fn render_page(bytes: &[u8], segs: &[Seg], s: usize, c: usize, close: Option<Fence>) -> String {
    let mut out: Vec<u8> = Vec::with_capacity(segs[c - 1].end - segs[s].start + 64);
    let repeat = match (segs[s].fence_before, segs[s].table_header) {
        (Some((open, _)), _) => open..open + 1,
        (None, Some(h)) => h..h + 2,
        (None, None) => 0..0,
    };
    for seg in &segs[repeat] {
        out.extend_from_slice(&bytes[seg.start..seg.end]);
        out.push(b'\n');
    }
    // Segments [s, c) are contiguous in the input: copy the span at once.
    let end = segs[c - 1].end;
    out.extend_from_slice(&bytes[segs[s].start..end]);
    if let Some(f) = close {
        out.push(b'\n');
        out.extend(std::iter::repeat_n(f.ch, f.len));
    }
    // Cuts are only made at char boundaries, so this is valid UTF-8.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Lines of `text`, long lines cut into pieces that fit a page together with
/// a reopened and a closed fence; each with the fence or table it sits in.
/// Also the fence still open at the end of the text.
fn segments(text: &str, budget: usize) -> (Vec<Seg>, Option<Fence>) {
    let bytes = text.as_bytes();
    let mut segs: Vec<Seg> = Vec::with_capacity(bytes.len() / 40 + 1);
    let mut open: Option<(usize, Fence)> = None;
    // Header row index of the table whose body we are in.
    let mut table: Option<usize> = None;
    let mut pos = 0;
    while pos < bytes.len() {
        let (end, newline) = match memchr::memchr(b'\n', &bytes[pos..]) {
            Some(i) => (pos + i, true),
            None => (bytes.len(), false),
        };
        let line = &bytes[pos..end];
        let fence_before = open;
        open = match (open, fence_after(open.map(|(_, f)| f), line)) {
            (None, Some(f)) => Some((segs.len(), f)),
            (Some(o), Some(_)) => Some(o),
            (_, None) => None,
        };
        // A piece of a long line must fit on a page together with a reopened
        // fence line (at most MAX_FENCE_LINE_BYTES, 6x escaped) and a close,
        // or a table header (at most MAX_TABLE_HEADER_BYTES).
        let piece_budget = budget / 2;
        let line_json = json_len(line);
        let plain = fence_before.is_none() && open.is_none() && line_json <= piece_budget;
        let is_row = plain && line.contains(&b'|') && !line.iter().all(u8::is_ascii_whitespace);
        table = match table {
            Some(h) if is_row => Some(h),
            Some(_) => None,
            None => segs.len().checked_sub(1).filter(|&h| {
                let head = &segs[h];
                is_row
                    && is_delimiter_row(line)
                    && head.newline
                    && head.fence_before.is_none()
                    && head.table_header.is_none()
                    && bytes[head.start..head.end].contains(&b'|')
                    && json_len(&bytes[head.start..head.end]) + line_json + 2 * NEWLINE_BODY
                        <= MAX_TABLE_HEADER_BYTES
            }),
        };
        // The delimiter row itself is not a body row.
        let table_header = table.filter(|&h| h + 1 < segs.len());
        if line_json <= piece_budget {
            segs.push(Seg {
                start: pos,
                end,
                newline,
                fence_before,
                table_header,
            });
        } else {
            let mut a = pos;
            while a < end {
                let b = cut_point(text, a, end, piece_budget);
                let last = b >= end;
                segs.push(Seg {
                    start: a,
                    end: b,
                    newline: last && newline,
                    fence_before,
                    table_header: None,
                });
                a = b;
            }
        }
        pos = end + usize::from(newline);
    }
    (segs, open.map(|(_, f)| f))
}

/// A GFM table delimiter row: cells of `-` with optional `:` ends, split by `|`.
fn is_delimiter_row(line: &[u8]) -> bool {
    let Ok(line) = std::str::from_utf8(line) else {
        return false;
    };
    let t = line.trim();
    let t = t.strip_prefix('|').unwrap_or(t);
    let t = t.strip_suffix('|').unwrap_or(t);
    line.contains('|')
        && t.split('|').all(|cell| {
            let c = cell.trim();
            let c = c.strip_prefix(':').unwrap_or(c);
            let c = c.strip_suffix(':').unwrap_or(c);
            !c.is_empty() && c.bytes().all(|b| b == b'-')
        })
}

/// The end of a piece starting at `a`: as far as `budget` body bytes allow,
/// backed off to a char boundary and out of any `\x` or `&…;` escape.
fn cut_point(text: &str, a: usize, end: usize, budget: usize) -> usize {
    let bytes = text.as_bytes();
    let mut used = 0;
    let mut b = a;
    while b < end {
        let l = body_byte_len(bytes[b]);
        if used + l > budget {
            break;
        }
        used += l;
        b += 1;
    }
    if b >= end {
        return end;
    }
    while b > a && !text.is_char_boundary(b) {
        b -= 1;
    }
    // An odd run of backslashes before the cut: the last one escapes the next char.
    let backslashes = bytes[a..b]
        .iter()
        .rev()
        .take_while(|&&c| c == b'\\')
        .count();
    if backslashes % 2 == 1 {
        b -= 1;
    }
    // An entity started but not finished before the cut.
    let window_start = b.saturating_sub(MAX_ENTITY_BYTES).max(a);
    if let Some(amp) = bytes[window_start..b].iter().rposition(|&c| c == b'&') {
        let amp = window_start + amp;
        if !bytes[amp..b].contains(&b';') && amp > a {
            b = amp;
        }
    }
    if b == a {
        // Cannot happen with budget >= 7 bytes; still make progress on a char boundary.
        b = a + 1;
        while b < end && !text.is_char_boundary(b) {
            b += 1;
        }
    }
    b
}

fn truncate_at_boundary(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::markdown::escape_code_block;

    fn texts(cards: &[Message]) -> Vec<String> {
        cards.iter().map(Message::text).collect()
    }

    /// True if every fence opened in `text` is closed.
    fn balanced(text: &str) -> bool {
        text.lines()
            .fold(None, |open, l| fence_after(open, l.as_bytes()))
            .is_none()
    }

    fn assert_card_limits(cards: &[Message]) {
        for c in cards {
            let b = body_len(c);
            assert!(b <= MAX_REQUEST_BODY_BYTES, "body of {b} bytes");
            assert!(b <= TARGET_BODY_BYTES, "body of {b} bytes over target");
            assert!(balanced(&c.text()), "unbalanced fences in {}", c.text());
        }
    }

    #[test]
    fn short_text_is_one_card_without_marker() {
        let cards = paginate("Done", Tone::Done, "hello\n\nworld");
        assert_eq!(cards.len(), 1);
        assert_eq!(cards[0].title.get(Lang::En), "Done");
        assert_eq!(texts(&cards), vec!["hello\n\nworld"]);
    }

    /// Wording in two languages: one card carrying both when it fits;
    /// otherwise pages that each carry both, within the limit.
    #[test]
    fn text_in_two_languages_pairs_its_pages() {
        use clawmux_i18n::{Lang, Text};
        let short = Text::both("**Done.**", "**已完成。**");
        let cards = paginate(Text::both("Status", "状态"), Tone::Info, short);
        assert_eq!(cards.len(), 1);
        assert_eq!(cards[0].to_text_in(Lang::Zh), "== 状态 ==\n**已完成。**\n");
        assert_eq!(cards[0].to_text(), "== Status ==\n**Done.**\n");
        let en = format!("{}\n", "a line of words ".repeat(20)).repeat(200);
        let zh = format!("{}\n", "一行文字".repeat(20)).repeat(200);
        let cards = paginate(
            Text::both("Status", "状态"),
            Tone::Info,
            Text::both(&en, &zh),
        );
        assert!(cards.len() > 1);
        assert_card_limits(&cards);
        let zh_pages: Vec<String> = cards.iter().map(|c| c.to_text_in(Lang::Zh)).collect();
        assert!(zh_pages[0].starts_with(&format!("== 状态 [1/{}] ==\n一行文字", cards.len())));
        let en_text: String = cards
            .iter()
            .map(Message::text)
            .collect::<Vec<_>>()
            .join("\n");
        assert_eq!(en_text.matches("a line of words").count(), 20 * 200);
    }

    #[test]
    fn empty_text_gets_placeholder() {
        let cards = paginate("Done", Tone::Done, "  \n");
        assert_eq!(texts(&cards), vec![EMPTY_TEXT]);
    }

    #[test]
    fn long_text_splits_at_paragraphs_with_markers() {
        let para = format!("{}\n", "word ".repeat(100)).repeat(10);
        let text = vec![para; 30].join("\n");
        let cards = paginate("Out", Tone::Done, &text);
        assert!(cards.len() > 1);
        assert_card_limits(&cards);
        let n = cards.len();
        for (i, c) in cards.iter().enumerate() {
            assert_eq!(c.title.get(Lang::En), format!("Out [{}/{n}]", i + 1));
            // Every page but the last ends at a paragraph boundary: the next
            // page starts with a whole paragraph.
            if i + 1 < n {
                assert!(
                    cards[i + 1].text().starts_with('\n')
                        || cards[i + 1].text().starts_with("word")
                );
            }
        }
        // Cuts fall on newlines, which the pages drop (as the final one).
        assert!(
            texts(&cards).join("\n") == text.trim_end_matches('\n'),
            "text lost or changed"
        );
    }

    #[test]
    fn code_fence_is_closed_and_reopened_with_language() {
        let body: String = (0..3000)
            .map(|i| format!("let x{i} = \"{i}\";\n"))
            .collect();
        let text = format!("intro\n\n```rust\n{body}```\nafter");
        let cards = paginate("Code", Tone::Info, &text);
        assert!(cards.len() > 2, "{}", cards.len());
        assert_card_limits(&cards);
        for c in &cards[1..] {
            assert!(c.text().starts_with("```rust\n"), "{}", &c.text()[..20]);
        }
        for c in &cards[..cards.len() - 1] {
            assert!(c.text().ends_with("\n```"));
        }
        // Every input line is on some card, whole.
        let all = texts(&cards).join("\n");
        for line in text.lines() {
            assert!(all.contains(line), "lost {line}");
        }
    }

    #[test]
    fn json_escapes_are_measured() {
        // Quotes and control bytes double or sextuple in JSON: the text is
        // well under 28 KB but its JSON is not.
        let text = "\"\u{1}\"\n".repeat(4000);
        let cards = paginate("Esc", Tone::Info, &text);
        assert!(cards.len() > 1);
        assert_card_limits(&cards);
        assert_eq!(texts(&cards).join("\n"), text.trim_end_matches('\n'));
    }

    #[test]
    fn long_line_cut_on_char_boundaries_not_inside_escapes() {
        let unit = "日本語\\*&#42;";
        let line = unit.repeat(20_000);
        let cards = paginate("Long", Tone::Info, &line);
        assert!(cards.len() > 2);
        assert_card_limits(&cards);
        assert!(texts(&cards).concat() == line, "text lost or changed");
        for t in texts(&cards) {
            // Pieces start at a unit-internal boundary that is not inside an escape.
            assert!(
                !t.starts_with('*') || t.len() < 2 || !t.starts_with("*&"),
                "{}",
                &t[..10]
            );
            assert!(!t.starts_with("#42;") && !t.starts_with("42;") && !t.starts_with("2;"));
            assert!(!t.ends_with('\\') || t.ends_with("\\\\"));
        }
    }

    #[test]
    fn table_rows_stay_whole() {
        let row = format!("| {} | {} |\n", "a".repeat(100), "b".repeat(100));
        let text = format!("| h1 | h2 |\n|---|---|\n{}", row.repeat(400));
        let cards = paginate("T", Tone::Info, &text);
        assert!(cards.len() > 1);
        for t in texts(&cards) {
            assert!(
                t.starts_with("| h1 | h2 |\n|---|---|\n| a"),
                "header not repeated"
            );
            for l in t.lines() {
                assert!(l.starts_with('|') && l.ends_with('|'), "cut row: {l}");
            }
        }
        // Apart from the repeated headers, the text is the input.
        let body: Vec<String> = texts(&cards)
            .iter()
            .map(|t| t.splitn(3, '\n').nth(2).unwrap_or_default().to_string())
            .collect();
        assert!(format!("| h1 | h2 |\n|---|---|\n{}", body.join("\n")) == text.trim_end());
    }

    /// Escaped text (see `markdown`'s round trip) never opens a fence.
    #[test]
    fn escaped_code_keeps_its_one_fence() {
        let esc = escape_code_block("a ``` b\n```\nx`y");
        let md = format!("```\n{esc}\n```");
        let cards = paginate("t", Tone::Info, &md);
        let fences = cards[0]
            .text()
            .lines()
            .filter(|l| fence_of(l.as_bytes()).is_some())
            .count();
        assert_eq!(fences, 2);
    }

    #[test]
    fn unclosed_fence_is_closed_on_the_last_card() {
        let cards = paginate("t", Tone::Info, "text\n```sh\nls");
        assert_eq!(cards[0].text(), "text\n```sh\nls\n```");
    }

    use proptest::prelude::*;

    /// Pieces that stress the paginator: fences, tables, escapes, multi-byte
    /// characters, JSON-expensive bytes and lines longer than a page.
    fn piece() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("\n".to_string()),
            Just("\n\n".to_string()),
            Just("```rust\n".to_string()),
            Just("\n```\n".to_string()),
            Just("~~~\n".to_string()),
            Just("| a | b |\n".to_string()),
            Just("|---|---|\n".to_string()),
            Just("日本語".to_string()),
            Just("\\*&#42;&amp;".to_string()),
            Just("\"\u{1}\t".to_string()),
            Just(r#"{"level":"info","msg":"a \"quoted\" C:\\path\\x","n":1}"#.to_string()),
            (1usize..20_000).prop_map(|n| "\"".repeat(n)),
            (1usize..20_000).prop_map(|n| "\\".repeat(n)),
            (1usize..10_000).prop_map(|n| "\u{1}\u{1f}".repeat(n)),
            (1usize..3000).prop_map(|n| "w ".repeat(n)),
            (1usize..40_000).prop_map(|n| "é".repeat(n)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn any_input_gives_valid_cards(pieces in proptest::collection::vec(piece(), 0..200)) {
            let text: String = pieces.concat();
            let cards = paginate("Prop", Tone::Done, &text);
            prop_assert!(!cards.is_empty());
            for c in &cards {
                prop_assert!(body_len(c) <= TARGET_BODY_BYTES, "body of {} bytes", body_len(c));
                // What the API client would send, measured for real.
                let body = serde_json::json!({"receive_id": "oc_".repeat(33), "msg_type": "interactive",
                    "content": crate::card::Card::from(c).to_json(), "uuid": "u".repeat(50)}).to_string();
                prop_assert!(body.len() <= MAX_REQUEST_BODY_BYTES, "request of {} bytes", body.len());
                prop_assert!(balanced(&c.text()));
            }
            // Lines short enough to fit a page (in body bytes) come out whole.
            let all = cards.iter().map(Message::text).collect::<Vec<_>>().join("\n");
            for line in text.lines().filter(|l| body_text_len(l.as_bytes()) < 4096) {
                prop_assert!(all.contains(line));
            }
        }
    }

    #[test]
    fn delimiter_rows() {
        assert!(is_delimiter_row(b"|---|:--:|"));
        assert!(is_delimiter_row(b" --- | ---: "));
        assert!(!is_delimiter_row(b"| a | b |"));
        assert!(!is_delimiter_row(b"---"));
        assert!(!is_delimiter_row(b"|---||"));
    }
}
