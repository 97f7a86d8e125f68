//! Per-pane terminal state: decoded `%output` bytes in, clean text and a
//! screen snapshot out, in bounded memory.
//!
//! A [`Pane`] runs every byte through two models:
//! - a clean-text model (our own `vte::Perform`, see `text`) that strips
//!   ANSI/OSC, applies CR, backspace, erase-line and cursor-up redraws, and
//!   reports each *finished line* once per distinct content (so a redrawn
//!   spinner does not pile up), over a log bounded by [`SCROLLBACK_BYTES`];
//! - a `vt100` screen, which gives a `capture-pane -p` equivalent
//!   ([`Pane::screen`]) without asking tmux.
//!
//! Partial UTF-8 and partial escape sequences are carried across `feed`
//! calls by the parsers, so the results do not depend on how tmux cut the
//! bytes into `%output` lines.
//!
//! ```
//! use clawmux::pane::Pane;
//! let mut pane = Pane::new(80, 24);
//! let mark = pane.mark();
//! let done = pane.feed(b"\x1b[1;31mhello\x1b[0m\r\nwor\xe2");
//! assert_eq!(done, vec!["hello".to_string()]);
//! pane.feed(b"\x9c\xa8ld\r\n");
//! assert_eq!(pane.text_since(mark), "hello\nwor\u{2728}ld");
//! assert!(pane.screen().starts_with("hello\nwor\u{2728}ld"));
//! ```

mod text;

pub use text::MAX_LINE_CHARS;

/// Clean text kept per pane for [`Pane::text_since`], in bytes: enough for a
/// long agent turn, small enough for hundreds of panes.
pub const SCROLLBACK_BYTES: usize = 1024 * 1024;

/// A point in a pane's text; see [`Pane::mark`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    line: u64,
}

/// The state of one tmux pane.
pub struct Pane {
    parser: vte::Parser,
    text: text::TextModel,
    screen: vt100::Parser,
}

impl Pane {
    /// A pane of `cols` x `rows` cells (zero is taken as one) with the
    /// default scrollback bound.
    pub fn new(cols: u16, rows: u16) -> Self {
        Self::with_scrollback(cols, rows, SCROLLBACK_BYTES)
    }

    /// Like [`Pane::new`] with a text log of at most `scrollback_bytes`.
    pub fn with_scrollback(cols: u16, rows: u16, scrollback_bytes: usize) -> Self {
        Pane {
            parser: vte::Parser::new(),
            text: text::TextModel::new(usize::from(rows), scrollback_bytes),
            screen: vt100::Parser::new(non_zero(rows), non_zero(cols), 0),
        }
    }

    /// Feeds decoded pane bytes; returns the lines finished by them (clean
    /// text, trailing blanks trimmed, empty lines skipped), in order.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<String> {
        self.parser.advance(&mut self.text, bytes);
        self.screen.process(bytes);
        std::mem::take(&mut self.text.finished)
    }

    /// Marks the cursor's current line: [`Pane::text_since`] returns it and
    /// everything after (the line where a command is typed, and its output).
    pub fn mark(&self) -> Mark {
        Mark {
            line: self.text.cursor_line(),
        }
    }

    /// Clean text from `mark` on, as it reads now (redraws applied). If the
    /// scrollback bound has evicted part of it, the oldest kept text is
    /// returned; see [`Pane::evicted_since`].
    pub fn text_since(&self, mark: Mark) -> String {
        self.text.text_from(mark.line)
    }

    /// Whether text after `mark` was already evicted by the scrollback bound.
    pub fn evicted_since(&self, mark: Mark) -> bool {
        mark.line < self.text.first_line()
    }

    /// The visible screen as `capture-pane -p` prints it: one line per row,
    /// trailing blanks trimmed, trailing empty rows dropped.
    pub fn screen(&self) -> String {
        self.screen_rows().join("\n")
    }

    /// The visible screen rows, trailing blanks trimmed, trailing empty rows
    /// dropped.
    pub fn screen_rows(&self) -> Vec<String> {
        let screen = self.screen.screen();
        let (_, cols) = screen.size();
        let mut rows: Vec<String> = screen
            .rows(0, cols.get())
            .map(|r| r.trim_end().to_owned())
            .collect();
        while rows.last().is_some_and(|r| r.is_empty()) {
            rows.pop();
        }
        rows
    }

    /// Resizes the screen model (tmux `%layout-change`).
    pub fn resize(&mut self, cols: u16, rows: u16) {
        self.screen
            .screen_mut()
            .set_size(non_zero(rows), non_zero(cols));
    }
}

/// Terminal sizes are at least one cell.
fn non_zero(n: u16) -> std::num::NonZeroU16 {
    std::num::NonZeroU16::new(n).unwrap_or(std::num::NonZeroU16::MIN)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `bytes` whole, then one byte at a time, and checks both give
    /// the same finished lines, text and screen.
    fn feed_both(bytes: &[u8]) -> (Vec<String>, String, String) {
        let mut whole = Pane::new(80, 10);
        let mark = whole.mark();
        let lines = whole.feed(bytes);
        let mut bytewise = Pane::new(80, 10);
        let mut lines2 = Vec::new();
        for b in bytes {
            lines2.extend(bytewise.feed(std::slice::from_ref(b)));
        }
        assert_eq!(lines, lines2);
        assert_eq!(whole.text_since(mark), bytewise.text_since(mark));
        assert_eq!(whole.screen(), bytewise.screen());
        (lines, whole.text_since(mark), whole.screen())
    }

    #[test]
    fn strips_colors_osc_and_keeps_utf8() {
        let (lines, text, _) =
            feed_both(b"\x1b]0;title\x07\x1b[1;31mRED\x1b[0m \xe4\xb8\xad\xe6\x96\x87 ok\r\n");
        assert_eq!(lines, vec!["RED 中文 ok"]);
        assert_eq!(text, "RED 中文 ok");
    }

    #[test]
    fn spinner_redrawn_in_place_does_not_pile_up() {
        let mut bytes = Vec::new();
        for glyph in ["✶", "✻", "✶", "✻"] {
            bytes.extend_from_slice(
                format!("\r\x1b[2K{glyph} Working… (esc to interrupt)").as_bytes(),
            );
        }
        bytes.extend_from_slice("\r\x1b[2K✻ Churned for 1s\r\n".as_bytes());
        let (lines, text, screen) = feed_both(&bytes);
        assert_eq!(text, "✻ Churned for 1s");
        assert_eq!(screen, "✻ Churned for 1s");
        // Each distinct frame is reported once, the final summary last.
        assert_eq!(lines.last().map(String::as_str), Some("✻ Churned for 1s"));
        assert_eq!(lines.len(), 5);
    }

    #[test]
    fn cursor_up_redraw_replaces_lines() {
        let bytes = b"a\r\nstatus 1\r\nbox\r\n\x1b[2A\r\x1b[2Kstatus 2\r\n\x1b[2Kbox\r\n";
        let (lines, text, screen) = feed_both(bytes);
        assert_eq!(text, "a\nstatus 2\nbox");
        assert_eq!(screen, "a\nstatus 2\nbox");
        // The unchanged `box` row is not reported twice.
        assert_eq!(lines, vec!["a", "status 1", "box", "status 2"]);
    }

    #[test]
    fn backspace_and_erase_line() {
        let (_, text, _) = feed_both(b"abc\x08\x08X\r\nhello world\x1b[6D\x1b[K\r\n");
        assert_eq!(text, "aXc\nhello");
    }

    #[test]
    fn mark_covers_cursor_line_and_after() {
        let mut pane = Pane::new(80, 5);
        pane.feed(b"old 1\r\nold 2\r\n$ ");
        let mark = pane.mark();
        pane.feed(b"ls\r\nfile\r\n$ ");
        assert_eq!(pane.text_since(mark), "$ ls\nfile\n$");
    }

    #[test]
    fn scrollback_is_bounded() {
        let mut pane = Pane::with_scrollback(80, 5, 1000);
        let mark = pane.mark();
        for i in 0..10_000 {
            pane.feed(format!("line {i}\r\n").as_bytes());
        }
        let text = pane.text_since(mark);
        assert!(text.len() <= 1000 + 5 * 81, "{} bytes kept", text.len());
        assert!(text.ends_with("line 9999"));
        assert!(pane.evicted_since(mark));
    }

    #[test]
    fn endless_line_is_bounded() {
        let mut pane = Pane::with_scrollback(80, 5, 10_000);
        let chunk = [b'x'; 4096];
        let mut finished = 0;
        for _ in 0..64 {
            finished += pane.feed(&chunk).len();
        }
        // A line is broken when the char after the limit arrives.
        assert_eq!(finished, (64 * 4096 - 1) / MAX_LINE_CHARS);
        assert!(pane.text_since(Mark { line: 0 }).len() <= 10_000 + 5 * (MAX_LINE_CHARS + 1));
    }

    #[test]
    fn huge_cursor_moves_stay_bounded() {
        let mut pane = Pane::new(80, 5);
        pane.feed(b"a\x1b[65535Bb\x1b[65535;65535Hc\x1b[65535Cd\r\n");
        let text = pane.text_since(Mark { line: 0 });
        assert!(text.lines().count() <= 3 * 5, "{text:?}");
        assert!(
            text.len() <= 3 * 5 + MAX_LINE_CHARS * 4,
            "{} bytes",
            text.len()
        );
    }

    #[test]
    fn screen_matches_capture_pane_shape() {
        let mut pane = Pane::new(20, 4);
        pane.feed(b"1\r\n2\r\n3\r\n4\r\n5");
        assert_eq!(pane.screen(), "2\n3\n4\n5");
    }
}
