//! Bounded framing: the control-mode byte stream cut into lines.
//!
//! Plain `-C` writes `\n`-terminated lines. `-CC` first writes `ESC P1000p`,
//! ends lines with `\r\n` (the tty's ONLCR) and closes with `ESC \`; the
//! framer notices the prefix on the first line and strips all three. Lines
//! are otherwise never trimmed: trailing spaces are data.

use memchr::memchr;

/// Longest line kept, in bytes. tmux writes at most `CONTROL_BUFFER_HIGH`
/// (8 KiB) of pane data per `%output` line, at most 32 KiB once escaped, but
/// reply lines are unbounded (`capture-pane -e` of a 10000-column row with
/// a colour change per cell is ~200 KiB). 1 MiB keeps every real line while
/// a runaway line cannot exhaust memory.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// The prefix `tmux -CC` writes before its first line (a DCS sequence).
const CC_PREFIX: &[u8] = b"\x1bP1000p";
/// What `tmux -CC` writes after its last line (string terminator).
const CC_SUFFIX: &[u8] = b"\x1b\\";

/// One framed line, or the news that one was too long and was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A whole line without its terminator.
    Line(&'a [u8]),
    /// A line longer than [`MAX_LINE_BYTES`] was dropped; `len` bytes long.
    TooLong { len: usize },
}

/// Cuts bytes into lines, carrying a partial line across calls.
#[derive(Debug, Default)]
pub struct Framer {
    /// The partial line so far (at most [`MAX_LINE_BYTES`]).
    partial: Vec<u8>,
    /// Bytes of an over-long line seen so far, while skipping to its end.
    skipping: Option<usize>,
    /// Whether the first line has been seen (the `-CC` prefix is only there).
    started: bool,
    /// Whether the stream is `-CC` (`\r\n` endings, `ESC \` at the end).
    control_control: bool,
    /// Over-long lines dropped so far.
    dropped: u64,
}

impl Framer {
    pub fn new() -> Self {
        Self::default()
    }

    /// Over-long lines dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Feeds bytes; every line completed by them goes to `sink`, in order.
    pub fn feed(&mut self, mut input: &[u8], sink: &mut impl FnMut(Frame<'_>)) {
        while let Some(end) = memchr(b'\n', input) {
            let (head, rest) = (&input[..end], &input[end + 1..]);
            self.finish_line(head, sink);
            input = rest;
        }
        self.push_partial(input);
    }

    /// Ends the input: an unterminated last line (tmux killed mid-line) is
    /// still delivered.
    pub fn finish(&mut self, sink: &mut impl FnMut(Frame<'_>)) {
        if self.skipping.is_some() || !self.partial.is_empty() {
            self.finish_line(&[], sink);
        }
    }

    fn push_partial(&mut self, part: &[u8]) {
        if let Some(skipped) = &mut self.skipping {
            *skipped += part.len();
        } else if self.partial.len() + part.len() > MAX_LINE_BYTES {
            self.skipping = Some(self.partial.len() + part.len());
            self.partial = Vec::new();
        } else {
            self.partial.extend_from_slice(part);
        }
    }

    fn finish_line(&mut self, head: &[u8], sink: &mut impl FnMut(Frame<'_>)) {
        if let Some(skipped) = self.skipping.take() {
            return self.drop_line(skipped + head.len(), sink);
        }
        if self.partial.len() + head.len() > MAX_LINE_BYTES {
            let len = self.partial.len() + head.len();
            self.partial = Vec::new();
            return self.drop_line(len, sink);
        }
        if self.partial.is_empty() {
            // The common case: the whole line is in this chunk, no copy.
            return self.deliver(head, sink);
        }
        let mut line = std::mem::take(&mut self.partial);
        line.extend_from_slice(head);
        self.deliver(&line, sink);
        line.clear();
        self.partial = line;
    }

    fn drop_line(&mut self, len: usize, sink: &mut impl FnMut(Frame<'_>)) {
        self.dropped += 1;
        self.started = true;
        sink(Frame::TooLong { len });
    }

    fn deliver(&mut self, mut line: &[u8], sink: &mut impl FnMut(Frame<'_>)) {
        if !self.started {
            self.started = true;
            if let Some(rest) = line.strip_prefix(CC_PREFIX) {
                self.control_control = true;
                line = rest;
            }
        }
        if self.control_control {
            line = line.strip_suffix(b"\r").unwrap_or(line);
            if let Some(rest) = line.strip_prefix(CC_SUFFIX) {
                // The terminator after `%exit`: not a line of its own.
                if rest.is_empty() {
                    return;
                }
                line = rest;
            }
        }
        sink(Frame::Line(line));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Frames `input` whole and one byte at a time; both must agree.
    fn frames(input: &[u8]) -> Vec<Result<Vec<u8>, usize>> {
        let run = |chunk: usize| {
            let mut framer = Framer::new();
            let mut out = Vec::new();
            let mut sink = |f: Frame<'_>| {
                out.push(match f {
                    Frame::Line(l) => Ok(l.to_vec()),
                    Frame::TooLong { len } => Err(len),
                })
            };
            for part in input.chunks(chunk) {
                framer.feed(part, &mut sink);
            }
            framer.finish(&mut sink);
            out
        };
        let whole = run(input.len().max(1));
        assert_eq!(whole, run(1), "byte-at-a-time framing differs");
        whole
    }

    #[test]
    fn splits_plain_lines_and_keeps_trailing_spaces() {
        assert_eq!(
            frames(b"%output %0 # \n\n%exit"),
            vec![
                Ok(b"%output %0 # ".to_vec()),
                Ok(vec![]),
                Ok(b"%exit".to_vec())
            ]
        );
    }

    #[test]
    fn strips_control_control_framing() {
        let input = b"\x1bP1000p%begin 1 2 0\r\n%end 1 2 0\r\n%exit\r\n\x1b\\";
        assert_eq!(
            frames(input),
            vec![
                Ok(b"%begin 1 2 0".to_vec()),
                Ok(b"%end 1 2 0".to_vec()),
                Ok(b"%exit".to_vec())
            ]
        );
    }

    #[test]
    fn plain_mode_keeps_carriage_returns() {
        assert_eq!(frames(b"a\r\n"), vec![Ok(b"a\r".to_vec())]);
    }

    #[test]
    fn over_long_line_is_dropped_and_the_stream_goes_on() {
        let mut input = vec![b'x'; MAX_LINE_BYTES + 5];
        input.extend_from_slice(b"\n%exit\n");
        let mut framer = Framer::new();
        let mut out = Vec::new();
        framer.feed(&input, &mut |f| out.push(format!("{f:?}")));
        assert_eq!(
            out,
            vec![
                format!("TooLong {{ len: {} }}", MAX_LINE_BYTES + 5),
                format!("Line({:?})", b"%exit")
            ]
        );
        assert_eq!(framer.dropped(), 1);
    }

    #[test]
    fn over_long_line_split_across_chunks_is_dropped() {
        let mut framer = Framer::new();
        let mut out = Vec::new();
        let chunk = vec![b'y'; MAX_LINE_BYTES / 2 + 1];
        for _ in 0..3 {
            framer.feed(&chunk, &mut |f| out.push(format!("{f:?}")));
        }
        framer.feed(b"z\nok\n", &mut |f| out.push(format!("{f:?}")));
        assert_eq!(
            out,
            vec![
                format!("TooLong {{ len: {} }}", 3 * chunk.len() + 1),
                format!("Line({:?})", b"ok")
            ]
        );
    }

    #[test]
    fn a_line_of_exactly_the_limit_is_kept() {
        let mut input = vec![b'x'; MAX_LINE_BYTES];
        input.push(b'\n');
        assert_eq!(frames(&input), vec![Ok(vec![b'x'; MAX_LINE_BYTES])]);
    }
}
