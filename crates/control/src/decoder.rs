//! The whole sans-IO pipeline: framer, line parser and reply-block assembly.
//!
//! Security: inside a `%begin`…`%end` block every line is reply text (window
//! names, user options and captured screens, which a pane's program can
//! influence), so a line there that looks like `%output` or `%pause` never
//! becomes a notification: a screen row `%pause %3` would otherwise make
//! every capture of it trigger another, and one naming another pane resync
//! that pane. Only a closing line whose three fields equal the opening ones
//! ends the block, and only `%exit` is still taken as a notification inside
//! it (tmux's client writes it when the server goes, even mid-block; a
//! forged one is followed by more of the stream, and the client ignores a
//! `%exit` that is not last). tmux does write a real `%pause` or `%continue`
//! inside a block, but only in the reply to the `refresh-client -A` that
//! caused it: the client, which knows which command a reply answers, reads
//! those there (see `tmux::client`).
//!
//! Long with its tests (the sans-IO pipeline's chunking and block cases); the
//! code itself is well under 600 lines.

use std::borrow::Cow;

use bytes::Bytes;
use serde::{Serialize, Serializer};

use super::framer::{Frame, Framer, MAX_LINE_BYTES};
use super::parse::{Guard, Notification, ParseError, parse_line_counting};

/// Most memory one reply block may hold, in bytes: its text plus
/// [`REPLY_LINE_OVERHEAD_BYTES`] a line, so empty lines count too. The
/// largest reply clawmux asks for is a `capture-pane` of the default
/// 2000-line history, a few MiB with colours.
pub const MAX_REPLY_BYTES: usize = 64 << 20;
/// Most lines one reply block may hold: a `capture-pane` of a 100,000-line
/// history (far above tmux's default 2000) still fits.
pub const MAX_REPLY_LINES: usize = 1 << 17;
/// What a kept line costs besides its text, in bytes: its handle in the
/// block (a `Bytes`, 32 bytes) and the allocator's header and rounding of
/// its copy. Charged so that a flood of empty lines is bounded by bytes too.
pub const REPLY_LINE_OVERHEAD_BYTES: usize = 64;

/// One decoded item of the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A notification outside a block, or `%exit` inside one.
    Notification(Notification),
    /// A whole reply block.
    Reply(Reply),
    /// A non-`%` line outside any block (e.g. a config error); kept as is.
    Stray(Bytes),
    /// A line that could not be parsed (or was too long); the stream goes on.
    Invalid { line: Bytes, error: ParseError },
}

/// A command's reply: the lines between `%begin` and `%end`/`%error`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// tmux's command number.
    pub number: u64,
    /// Seconds since the epoch when tmux ran the command.
    pub time: u64,
    /// 1 when the command came from this client, 0 otherwise.
    pub flags: u32,
    /// `%end` (true) or `%error` (false).
    pub ok: bool,
    /// The reply text, one entry a line, raw (not escaped by tmux). For an
    /// overflowed block, one line saying so (see [`Reply::dropped_lines`]).
    pub lines: Vec<Bytes>,
    /// Lines dropped because the block passed [`MAX_REPLY_LINES`] or
    /// [`MAX_REPLY_BYTES`]. The policy: the whole body is dropped (a
    /// truncated screen or listing would be taken for the real one), the
    /// reply is reported as failed (`ok` false) with a line saying why, and
    /// the stream goes on.
    pub dropped_lines: u64,
}

/// The one line an overflowed reply carries.
fn overflow_marker(dropped: u64) -> Bytes {
    Bytes::from(format!(
        "clawmux: reply too large ({dropped} lines dropped; limits {MAX_REPLY_LINES} lines, {MAX_REPLY_BYTES} bytes)"
    ))
}

/// What the decoder has dropped or repaired so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Lines longer than [`MAX_LINE_BYTES`], dropped.
    pub lines_too_long: u64,
    /// Malformed `%output` escapes, kept literally.
    pub malformed_escapes: u64,
    /// Lines that did not parse, reported as [`Event::Invalid`].
    pub invalid_lines: u64,
    /// Reply lines dropped past [`MAX_REPLY_LINES`] or [`MAX_REPLY_BYTES`].
    pub reply_lines_dropped: u64,
}

/// JSON: notifications as themselves (`{"kind":"output",…}`), the rest as
/// `reply`, `stray` and `invalid` objects; bytes as lossy UTF-8 text.
impl Serialize for Event {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(tag = "kind", rename_all = "kebab-case")]
        enum Json<'a> {
            Reply {
                number: u64,
                time: u64,
                flags: u32,
                ok: bool,
                lines: Vec<Cow<'a, str>>,
                #[serde(skip_serializing_if = "is_zero")]
                dropped_lines: u64,
            },
            Stray {
                text: Cow<'a, str>,
            },
            Invalid {
                line: Cow<'a, str>,
                error: String,
            },
        }
        let json = match self {
            Event::Notification(n) => return n.serialize(s),
            Event::Reply(r) => Json::Reply {
                number: r.number,
                time: r.time,
                flags: r.flags,
                ok: r.ok,
                lines: r.lines.iter().map(|l| String::from_utf8_lossy(l)).collect(),
                dropped_lines: r.dropped_lines,
            },
            Event::Stray(line) => Json::Stray {
                text: String::from_utf8_lossy(line),
            },
            Event::Invalid { line, error } => Json::Invalid {
                line: String::from_utf8_lossy(line),
                error: error.to_string(),
            },
        };
        json.serialize(s)
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// An open reply block.
#[derive(Debug)]
struct Block {
    guard: Guard,
    lines: Vec<Bytes>,
    /// Memory held: text plus [`REPLY_LINE_OVERHEAD_BYTES`] a line.
    bytes: usize,
    /// Lines dropped since the block overflowed (0 while it has not).
    dropped: u64,
}

/// Bytes in, [`Event`]s out; carries partial lines and open blocks across calls.
#[derive(Debug, Default)]
pub struct Decoder {
    framer: Framer,
    block: Option<Block>,
    counters: Counters,
}

impl Decoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Memory the open reply block holds, in bytes (text plus
    /// [`REPLY_LINE_OVERHEAD_BYTES`] a line); never above [`MAX_REPLY_BYTES`].
    pub fn buffered_reply_bytes(&self) -> usize {
        self.block.as_ref().map_or(0, |b| b.bytes)
    }

    /// What was dropped or repaired so far.
    pub fn counters(&self) -> Counters {
        Counters {
            lines_too_long: self.framer.dropped(),
            ..self.counters
        }
    }

    /// Feeds bytes; every event they complete goes to `sink`, in stream order.
    pub fn feed(&mut self, bytes: &[u8], sink: &mut impl FnMut(Event)) {
        let Self {
            framer,
            block,
            counters,
        } = self;
        framer.feed(bytes, &mut |frame| on_frame(block, counters, frame, sink));
    }

    /// Ends the input: delivers an unterminated last line, then a block left
    /// open (tmux died mid-reply) as an `Invalid` event holding its `%begin`.
    pub fn finish(&mut self, sink: &mut impl FnMut(Event)) {
        let Self {
            framer,
            block,
            counters,
        } = self;
        framer.finish(&mut |frame| on_frame(block, counters, frame, sink));
        if let Some(open) = block.take() {
            let g = open.guard;
            counters.invalid_lines += 1;
            sink(Event::Invalid {
                line: Bytes::from(format!("%begin {} {} {}", g.time, g.number, g.flags)),
                error: ParseError::UnclosedBlock,
            });
        }
    }
}

fn on_frame(
    block: &mut Option<Block>,
    counters: &mut Counters,
    frame: Frame<'_>,
    sink: &mut impl FnMut(Event),
) {
    let line = match frame {
        Frame::Line(line) => line,
        Frame::TooLong { len } => {
            counters.invalid_lines += 1;
            return sink(Event::Invalid {
                line: Bytes::new(),
                error: ParseError::TooLong {
                    len,
                    max: MAX_LINE_BYTES,
                },
            });
        }
    };
    match block {
        Some(open) => in_block(block_line(open, line), block, counters, line, sink),
        None => outside_block(block, counters, line, sink),
    }
}

/// What a line inside an open block means.
enum InBlock {
    Close { ok: bool },
    Notification(Notification),
    Text,
}

fn block_line(open: &Block, line: &[u8]) -> InBlock {
    if !line.starts_with(b"%") {
        return InBlock::Text;
    }
    // Only the few names that matter inside a block are parsed at all.
    let name = line.split(|&b| b == b' ').next().unwrap_or(line);
    if !matches!(name, b"%end" | b"%error" | b"%exit") {
        return InBlock::Text;
    }
    match parse_line_counting(line) {
        Ok((Notification::End(g), _)) if g == open.guard => InBlock::Close { ok: true },
        Ok((Notification::Error(g), _)) if g == open.guard => InBlock::Close { ok: false },
        Ok((n @ Notification::Exit { .. }, _)) => InBlock::Notification(n),
        _ => InBlock::Text,
    }
}

fn in_block(
    kind: InBlock,
    block: &mut Option<Block>,
    counters: &mut Counters,
    line: &[u8],
    sink: &mut impl FnMut(Event),
) {
    match kind {
        InBlock::Close { ok } => {
            if let Some(open) = block.take() {
                let overflowed = open.dropped > 0;
                sink(Event::Reply(Reply {
                    number: open.guard.number,
                    time: open.guard.time,
                    flags: open.guard.flags,
                    ok: ok && !overflowed,
                    lines: if overflowed {
                        vec![overflow_marker(open.dropped)]
                    } else {
                        open.lines
                    },
                    dropped_lines: open.dropped,
                }));
            }
        }
        InBlock::Notification(n) => sink(Event::Notification(n)),
        InBlock::Text => {
            if let Some(open) = block {
                keep_reply_line(open, counters, line);
            }
        }
    }
}

/// Keeps one reply line, or drops the whole body once a limit is passed.
fn keep_reply_line(open: &mut Block, counters: &mut Counters, line: &[u8]) {
    if open.dropped > 0 {
        open.dropped += 1;
        counters.reply_lines_dropped += 1;
        return;
    }
    let cost = line.len() + REPLY_LINE_OVERHEAD_BYTES;
    if open.lines.len() < MAX_REPLY_LINES && open.bytes + cost <= MAX_REPLY_BYTES {
        open.bytes += cost;
        open.lines.push(Bytes::copy_from_slice(line));
        return;
    }
    let dropped = open.lines.len() as u64 + 1;
    open.dropped = dropped;
    counters.reply_lines_dropped += dropped;
    // Free the body now, not when the block closes (it may never close).
    open.lines = Vec::new();
    open.bytes = 0;
}

fn outside_block(
    block: &mut Option<Block>,
    counters: &mut Counters,
    line: &[u8],
    sink: &mut impl FnMut(Event),
) {
    let error = match parse_line_counting(line) {
        Ok((Notification::Begin(guard), _)) => {
            *block = Some(Block {
                guard,
                lines: Vec::new(),
                bytes: 0,
                dropped: 0,
            });
            return;
        }
        Ok((Notification::End(_), _)) => ParseError::UnexpectedBlockEnd { name: "end" },
        Ok((Notification::Error(_), _)) => ParseError::UnexpectedBlockEnd { name: "error" },
        Ok((n, malformed)) => {
            counters.malformed_escapes += malformed as u64;
            return sink(Event::Notification(n));
        }
        Err(ParseError::NotANotification) => {
            return sink(Event::Stray(Bytes::copy_from_slice(line)));
        }
        Err(error) => error,
    };
    counters.invalid_lines += 1;
    sink(Event::Invalid {
        line: Bytes::copy_from_slice(line),
        error,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PaneId;

    /// Decodes `input` whole and one byte at a time; both must agree.
    fn decode(input: &[u8]) -> (Vec<Event>, Counters) {
        let run = |chunk: usize| {
            let mut decoder = Decoder::new();
            let mut events = Vec::new();
            for part in input.chunks(chunk) {
                decoder.feed(part, &mut |e| events.push(e));
            }
            decoder.finish(&mut |e| events.push(e));
            (events, decoder.counters())
        };
        let whole = run(input.len().max(1));
        assert_eq!(whole, run(1), "byte-at-a-time decoding differs");
        whole
    }

    fn output(pane: u32, data: &'static [u8]) -> Event {
        Event::Notification(Notification::Output {
            pane: PaneId(pane),
            data: Bytes::from_static(data),
        })
    }

    fn reply(number: u64, flags: u32, ok: bool, lines: &[&'static [u8]]) -> Event {
        Event::Reply(Reply {
            number,
            time: 7,
            flags,
            ok,
            lines: lines.iter().map(|l| Bytes::from_static(l)).collect(),
            dropped_lines: 0,
        })
    }

    #[test]
    fn empty_lines_in_an_open_block_are_bounded_by_lines() {
        let mut decoder = Decoder::new();
        let mut events = Vec::new();
        decoder.feed(b"%begin 7 9 1\n", &mut |e| events.push(e));
        let empties = vec![b'\n'; 64 << 10];
        let mut fed = 0usize;
        while fed < 3 * MAX_REPLY_LINES {
            decoder.feed(&empties, &mut |e| events.push(e));
            fed += empties.len();
            assert!(decoder.buffered_reply_bytes() <= MAX_REPLY_LINES * REPLY_LINE_OVERHEAD_BYTES);
        }
        assert_eq!(
            decoder.buffered_reply_bytes(),
            0,
            "the body was dropped at once"
        );
        decoder.feed(b"%end 7 9 1\n%output %1 after\n", &mut |e| events.push(e));
        let Event::Reply(r) = &events[0] else {
            panic!("{:?}", events[0]);
        };
        assert!(!r.ok);
        assert_eq!(r.dropped_lines, fed as u64);
        assert_eq!(r.lines.len(), 1);
        assert!(r.lines[0].starts_with(b"clawmux: reply too large"));
        assert_eq!(events[1], output(1, b"after"), "the stream goes on");
        assert_eq!(decoder.counters().reply_lines_dropped, fed as u64);
    }

    #[test]
    fn long_lines_in_an_open_block_are_bounded_by_bytes() {
        let mut decoder = Decoder::new();
        let mut events = Vec::new();
        decoder.feed(b"%begin 7 9 1\n", &mut |e| events.push(e));
        let mut line = vec![b'x'; MAX_LINE_BYTES - 1];
        line.push(b'\n');
        let lines = MAX_REPLY_BYTES / MAX_LINE_BYTES + 2;
        for _ in 0..lines {
            decoder.feed(&line, &mut |e| events.push(e));
            assert!(decoder.buffered_reply_bytes() <= MAX_REPLY_BYTES);
        }
        decoder.feed(b"%end 7 9 1\n", &mut |e| events.push(e));
        assert!(
            matches!(&events[..], [Event::Reply(r)] if !r.ok && r.dropped_lines == lines as u64)
        );
        // A block within the limits after it is whole again.
        decoder.feed(b"%begin 7 10 1\nok\n%end 7 10 1\n", &mut |e| events.push(e));
        assert_eq!(events[1], reply_n(10, &[b"ok"]));
    }

    fn reply_n(number: u64, lines: &[&'static [u8]]) -> Event {
        reply(number, 1, true, lines)
    }

    #[test]
    fn assembles_blocks_and_passes_notifications() {
        let (events, counters) = decode(
            b"%begin 7 1 0\n%end 7 1 0\n%output %0 a\\015\nstray\n\
              %begin 7 2 1\nparse error: unknown command: bogus\n%error 7 2 1\n",
        );
        assert_eq!(
            events,
            vec![
                reply(1, 0, true, &[]),
                output(0, b"a\r"),
                Event::Stray(Bytes::from_static(b"stray")),
                reply(2, 1, false, &[b"parse error: unknown command: bogus"]),
            ]
        );
        assert_eq!(counters, Counters::default());
    }

    #[test]
    fn block_text_never_becomes_pane_output() {
        // A window named `%output %0 evil`, and a fake `%end` with other fields.
        let (events, _) = decode(
            b"%begin 7 3 1\n%output %0 evil\n%extended-output %0 1 : evil\n\
              %end 7 999 1\n%window-add @9\n%begin 7 4 1\n%end 7 3 1\n%output %0 ok\n",
        );
        assert_eq!(
            events,
            vec![
                reply(
                    3,
                    1,
                    true,
                    &[
                        b"%output %0 evil",
                        b"%extended-output %0 1 : evil",
                        b"%end 7 999 1",
                        b"%window-add @9",
                        b"%begin 7 4 1",
                    ]
                ),
                output(0, b"ok"),
            ]
        );
    }

    /// A captured screen row `%pause %2` is the screen's text: read as a
    /// notification it made every capture of the pane trigger another.
    #[test]
    fn pause_and_continue_inside_a_block_are_reply_text_exit_a_notification() {
        let (events, _) =
            decode(b"%begin 7 5 1\nline\n%pause %2\n%continue %2\n%exit\n%end 7 5 1\n");
        assert_eq!(
            events,
            vec![
                Event::Notification(Notification::Exit { reason: None }),
                reply(5, 1, true, &[b"line", b"%pause %2", b"%continue %2"]),
            ]
        );
        let (outside, _) = decode(b"%pause %2\n%continue %2\n");
        assert_eq!(
            outside,
            vec![
                Event::Notification(Notification::Pause { pane: PaneId(2) }),
                Event::Notification(Notification::Continue { pane: PaneId(2) }),
            ]
        );
    }

    #[test]
    fn bad_lines_are_reported_and_the_stream_goes_on() {
        let (events, counters) = decode(b"%output nope\n%end 1 2 3\n%output %1 \\9x\n");
        assert!(matches!(
            &events[0],
            Event::Invalid {
                error: ParseError::BadArguments { .. },
                ..
            }
        ));
        assert!(matches!(
            &events[1],
            Event::Invalid {
                error: ParseError::UnexpectedBlockEnd { name: "end" },
                ..
            }
        ));
        assert_eq!(events[2], output(1, b"\\9x"));
        assert_eq!(counters.invalid_lines, 2);
        assert_eq!(counters.malformed_escapes, 1);
    }

    #[test]
    fn a_block_left_open_at_the_end_is_reported() {
        let (events, counters) = decode(b"%begin 7 8 1\npartial");
        assert_eq!(
            events,
            vec![Event::Invalid {
                line: Bytes::from_static(b"%begin 7 8 1"),
                error: ParseError::UnclosedBlock
            }]
        );
        assert_eq!(counters.invalid_lines, 1);
    }

    #[test]
    fn control_control_recordings_decode_the_same() {
        let plain = decode(b"%begin 7 1 0\n%end 7 1 0\n%output %0 x\\015\\012\n%exit\n");
        let cc = decode(
            b"\x1bP1000p%begin 7 1 0\r\n%end 7 1 0\r\n%output %0 x\\015\\012\r\n%exit\r\n\x1b\\",
        );
        assert_eq!(plain, cc);
    }

    #[test]
    fn fixture_pane_zero_decodes_to_its_recorded_length() {
        let fixture = include_bytes!("../../../tests/fixtures/tmux-3.3a-basic.ctl");
        let (events, counters) = decode(fixture);
        let pane0: usize = events
            .iter()
            .map(|e| match e {
                Event::Notification(Notification::Output { pane, data }) if *pane == PaneId(0) => {
                    data.len()
                }
                _ => 0,
            })
            .sum();
        assert_eq!(pane0, 11236);
        assert_eq!(counters, Counters::default());
        let errors = events
            .iter()
            .filter(|e| matches!(e, Event::Reply(r) if !r.ok))
            .count();
        assert_eq!(errors, 1, "the recording has one bad command");
    }

    #[test]
    fn events_serialize_as_tagged_json() {
        let json = |e: &Event| serde_json::to_string(e).unwrap();
        assert_eq!(
            json(&reply(3, 1, false, &[b"bad \xff"])),
            r#"{"kind":"reply","number":3,"time":7,"flags":1,"ok":false,"lines":["bad �"]}"#
        );
        assert_eq!(
            json(&output(2, b"hi")),
            r#"{"kind":"output","pane":"%2","text":"hi"}"#
        );
        assert_eq!(
            json(&Event::Stray(Bytes::from_static(b"x"))),
            r#"{"kind":"stray","text":"x"}"#
        );
    }

    proptest::proptest! {
        #[test]
        fn chunking_never_changes_the_events(cuts in proptest::collection::vec(1usize..4096, 1..64)) {
            let fixture = include_bytes!("../../../tests/fixtures/tmux-3.3a-basic.ctl");
            let mut whole = Vec::new();
            let mut decoder = Decoder::new();
            decoder.feed(fixture, &mut |e| whole.push(e));
            decoder.finish(&mut |e| whole.push(e));
            let mut decoder = Decoder::new();
            let mut events = Vec::new();
            let mut rest = &fixture[..];
            for cut in cuts.iter().cycle() {
                if rest.is_empty() {
                    break;
                }
                let (part, tail) = rest.split_at((*cut).min(rest.len()));
                decoder.feed(part, &mut |e| events.push(e));
                rest = tail;
            }
            decoder.finish(&mut |e| events.push(e));
            proptest::prop_assert_eq!(events, whole);
        }
    }
}
