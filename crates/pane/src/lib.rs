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
//! The agents' second signals in the stream (window titles, OSC 7501
//! states, OSC 777 notifications) are kept aside for the watcher
//! ([`Pane::take_signals`], [`signal`]). One wrapped in tmux's passthrough
//! (`ESC P tmux; <the sequence, every ESC doubled> ESC \`, as Gemini CLI
//! sends its notifications inside tmux) is read as the sequence it wraps:
//! the parser ends the DCS at its first ESC, and the doubled ESC then
//! begins the inner sequence (the tests pin this, however the bytes are
//! cut).
//!
//! Partial escape sequences are carried across `feed` calls by the
//! parsers, and a partial UTF-8 character by the pane (vte 0.15 mishandles
//! one), so the results do not depend on how tmux cut the bytes into
//! `%output` lines.
//!
//! ```
//! use clawmux_pane::Pane;
//! let mut pane = Pane::new(80, 24);
//! let mark = pane.mark();
//! let done = pane.feed(b"\x1b[1;31mhello\x1b[0m\r\nwor\xe2");
//! assert_eq!(done, vec!["hello".to_string()]);
//! pane.feed(b"\x9c\xa8ld\r\n");
//! assert_eq!(pane.text_since(mark), "hello\nwor\u{2728}ld");
//! assert!(pane.screen().starts_with("hello\nwor\u{2728}ld"));
//! ```

#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

pub mod signal;
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

/// Most bytes of a UTF-8 character that can be cut off (4-byte chars).
const MAX_CUT_CHAR_BYTES: usize = 3;

/// The state of one tmux pane.
pub struct Pane {
    /// An incomplete UTF-8 character at the end of the last feed.
    held: Vec<u8>,
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
            held: Vec::new(),
            parser: vte::Parser::new(),
            text: text::TextModel::new(usize::from(rows), scrollback_bytes),
            screen: vt100::Parser::new(non_zero(rows), non_zero(cols), 0),
        }
    }

    /// The titles, state sequences and notifications the output carried
    /// since the last call, oldest first (see [`signal`]).
    pub fn take_signals(&mut self) -> Vec<signal::Signal> {
        self.text.signals.drain(..).collect()
    }

    /// Feeds decoded pane bytes; returns the lines finished by them (clean
    /// text, trailing blanks trimmed, empty lines skipped), in order.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<String> {
        // vte 0.15 mishandles a character whose UTF-8 bytes are cut across
        // `advance` calls: it prints a C1 control it would execute, and
        // skips the characters after it when another cut character follows
        // within 3 bytes (found by fuzzing). So a character cut at the end
        // of `bytes` is held back and handed over whole with the next feed.
        let joined;
        let bytes = if self.held.is_empty() {
            bytes
        } else {
            let mut held = std::mem::take(&mut self.held);
            held.extend_from_slice(bytes);
            joined = held;
            &joined
        };
        let (now, later) = bytes.split_at(bytes.len() - cut_char_len(bytes));
        self.parser.advance(&mut self.text, now);
        self.screen.process(now);
        self.held = later.to_vec();
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
        self.rows_down_to(0)
    }

    /// [`Pane::screen_rows`], keeping the empty rows down to the cursor's:
    /// the last row is then the one the cursor is on, or the last with
    /// text below it. A line-mode program that took a line has moved the
    /// cursor below it; one still editing it has not.
    pub fn screen_rows_to_cursor(&self) -> Vec<String> {
        let (row, _) = self.screen.screen().cursor_position();
        self.rows_down_to(usize::from(row) + 1)
    }

    /// The screen's rows, trailing blanks trimmed, trailing empty rows
    /// dropped past the first `keep`.
    fn rows_down_to(&self, keep: usize) -> Vec<String> {
        let screen = self.screen.screen();
        let (_, cols) = screen.size();
        let mut rows: Vec<String> = screen
            .rows(0, cols.get())
            .map(|r| r.trim_end().to_owned())
            .collect();
        while rows.len() > keep && rows.last().is_some_and(|r| r.is_empty()) {
            rows.pop();
        }
        rows
    }

    /// The screen model's cells, with their colours and attributes (for
    /// what the text alone cannot tell: a button selected only by its
    /// colour, a picture of the screen).
    pub fn cells(&self) -> &vt100::Screen {
        self.screen.screen()
    }

    /// Resizes the screen model (tmux `%layout-change`).
    pub fn resize(&mut self, cols: u16, rows: u16) {
        self.screen
            .screen_mut()
            .set_size(non_zero(rows), non_zero(cols));
    }
}

/// Length of the incomplete UTF-8 character that ends `bytes` (0 if none):
/// a lead byte and fewer continuation bytes than it announces.
fn cut_char_len(bytes: &[u8]) -> usize {
    let tail = bytes.len().saturating_sub(MAX_CUT_CHAR_BYTES);
    let is_continuation = |b: u8| b & 0xC0 == 0x80;
    let Some(lead) = (tail..bytes.len())
        .rev()
        .find(|&i| !is_continuation(bytes[i]))
    else {
        return 0;
    };
    match std::str::from_utf8(&bytes[lead..]) {
        Err(e) if e.valid_up_to() == 0 && e.error_len().is_none() => bytes.len() - lead,
        _ => 0,
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

    /// Feeds `bytes` cut at `i` and `j` and checks the result is the same
    /// as fed whole.
    fn assert_cuts_invariant(bytes: &[u8]) {
        let mut whole = Pane::new(40, 8);
        let mark = whole.mark();
        let lines = whole.feed(bytes);
        for i in 0..=bytes.len() {
            for j in i..=bytes.len() {
                let mut cut = Pane::new(40, 8);
                let mut cut_lines = cut.feed(&bytes[..i]);
                cut_lines.extend(cut.feed(&bytes[i..j]));
                cut_lines.extend(cut.feed(&bytes[j..]));
                let at = format!("cut at {i} and {j}");
                assert_eq!(lines, cut_lines, "{at}");
                assert_eq!(whole.text_since(mark), cut.text_since(mark), "{at}");
                assert_eq!(whole.screen(), cut.screen(), "{at}");
            }
        }
    }

    /// Found by the `pane_detect` fuzz target: a C1 control (U+0087) whose
    /// UTF-8 bytes were cut across feeds was printed, not executed.
    #[test]
    fn c1_control_cut_across_feeds_is_not_printed() {
        assert_cuts_invariant(b"a\xc2\x87b\r\n");
        // The fuzzer's input, from its second 32-byte frame on.
        assert_cuts_invariant(b" navi[3/7]\xc2\x87\x87\x87\x87\x87\xb7\x01\x00\x00\x08cancel\r\n");
    }

    /// Found by the `pane_detect` fuzz target: a character cut across feeds
    /// followed, within 3 bytes, by another cut one lost the characters
    /// between them (`x ·↑/y`).
    #[test]
    fn chars_after_a_cut_char_are_kept() {
        assert_cuts_invariant("x \u{b7} \u{2191}/y\r\n".as_bytes());
        assert_cuts_invariant(b"\xe2\x94\x80\xf0\x9f\x98\x80a\xc3\xa9\xc3\xa9\xe2to\xc2\r\n");
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

    /// What a pane reads from `bytes` fed whole, and cut at every point
    /// into two or three pieces: the same signals and screen each time.
    fn signals_however_cut(bytes: &[u8]) -> (Vec<signal::Signal>, String) {
        let mut whole = Pane::new(40, 8);
        whole.feed(bytes);
        let read = (whole.take_signals(), whole.screen());
        for i in 0..=bytes.len() {
            for j in i..=bytes.len() {
                let mut cut = Pane::new(40, 8);
                for piece in [&bytes[..i], &bytes[i..j], &bytes[j..]] {
                    cut.feed(piece);
                }
                assert_eq!(
                    (cut.take_signals(), cut.screen()),
                    read,
                    "cut at {i} and {j}"
                );
            }
        }
        read
    }

    /// Gemini CLI inside tmux: OSC 777 in tmux's passthrough, its ESC
    /// doubled, BEL-terminated (as measured) or ST-terminated (its ST's
    /// ESC doubled too).
    #[test]
    fn a_notification_in_tmux_passthrough_is_read() {
        let want = vec![signal::Signal::Notification {
            title: "Gemini CLI session complete".into(),
            body: "Run finished | done.".into(),
        }];
        let osc = "]777;notify;Gemini CLI session complete;Run finished | done.";
        for end in ["\x07", "\x1b\x1b\\"] {
            let wrapped = format!("a\x1bPtmux;\x1b\x1b{osc}{end}\x1b\\b");
            let (signals, screen) = signals_however_cut(wrapped.as_bytes());
            assert_eq!(signals, want, "{wrapped:?}");
            assert_eq!(screen, "ab", "{wrapped:?}");
        }
    }

    /// A passthrough cut short, never ended, or wrapping no OSC gives no
    /// signal and prints nothing of itself.
    #[test]
    fn malformed_passthrough_is_no_signal_and_no_text() {
        for bytes in [
            &b"a\x1bPtmux;"[..],
            b"a\x1bPtmux;\x1b\x1b]777;notify;T",
            b"a\x1bPtmux;\x1b\x1b]777\x07\x1b\\",
            b"a\x1bPtmux;\x1b\x1b\x1b\x1b\x1b\\",
            b"a\x1bPtmux;\xff\xfe\x00\x1b\\",
        ] {
            let (signals, screen) = signals_however_cut(bytes);
            assert!(signals.is_empty(), "{bytes:?}: {signals:?}");
            assert_eq!(screen, "a", "{bytes:?}");
        }
    }

    #[test]
    fn screen_matches_capture_pane_shape() {
        let mut pane = Pane::new(20, 4);
        pane.feed(b"1\r\n2\r\n3\r\n4\r\n5");
        assert_eq!(pane.screen(), "2\n3\n4\n5");
    }
}
