//! Timed control-mode recordings (`clawmux record`), and a reader that takes
//! them or a plain control-mode capture (`.ctl`) alike.
//!
//! # Format (`clawmux-recording v1`)
//!
//! A text file. The first line is the header:
//!
//! ```text
//! # clawmux-recording v1 {"session":"work","cols":120,"rows":40,"tmux":"tmux 3.3a"}
//! ```
//!
//! `# clawmux-recording v1`, then optionally a space and a JSON object with
//! what the recorder knew: `session`, the window size `cols`/`rows` when
//! recording started (a replay needs it to wrap lines as the pane did),
//! `tmux` (its version). Unknown keys are ignored.
//!
//! Every following line is one control-mode line exactly as tmux wrote it,
//! prefixed by `+<ms> `, the milliseconds since recording started when the
//! line arrived (non-decreasing):
//!
//! ```text
//! +0 %session-changed $0 work
//! +1532 %output %0 \033[?25l…
//! ```
//!
//! `clawmux record` begins with one `%output` line per pane at `+0` that
//! it made itself from `capture-pane` (clear the screen, the rows, the
//! cursor), so the replay starts from the screen the panes had.
//!
//! Without the header the input is a plain control-mode stream with no
//! times. [`RecordingReader`] tells the two apart by the first line and
//! yields `(time, bytes)` chunks; stripping the prefix gives back the exact
//! stream tmux wrote.

use std::io::{self, BufRead, Write};

use serde::{Deserialize, Serialize};

use super::MAX_LINE_BYTES;

/// The first line of a recording, before any metadata.
pub const HEADER: &str = "# clawmux-recording v1";

/// Longest `+<ms> ` prefix: `+`, 20 digits (`u64::MAX`), a space.
const MAX_PREFIX_BYTES: usize = 22;

/// Longest header line read: the magic and a small JSON object.
const MAX_HEADER_BYTES: usize = 4096;

/// What the recorder knew, from the header's JSON object.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordingHeader {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cols: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tmux: Option<String>,
}

impl RecordingHeader {
    /// The window size, when both dimensions were recorded.
    pub fn size(&self) -> Option<(u16, u16)> {
        Some((self.cols?, self.rows?))
    }
}

/// Why a recording cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum RecordingError {
    #[error("reading the recording: {0}")]
    Io(#[from] io::Error),
    #[error("recording header: {0}")]
    Header(String),
    #[error("recording line {line}: {reason}")]
    Line { line: u64, reason: String },
}

/// One piece of input: a whole line, or a part of an over-long one (the
/// decoder drops those). `at_ms` is set on the first piece of each line of a
/// timed recording.
#[derive(Debug, PartialEq, Eq)]
pub struct Chunk<'a> {
    pub at_ms: Option<u64>,
    pub bytes: &'a [u8],
}

/// Reads a timed recording or a plain control-mode stream, in bounded
/// pieces.
pub struct RecordingReader<R> {
    input: R,
    header: Option<RecordingHeader>,
    /// The first line of a plain stream, read while looking for the header.
    pending: Option<Vec<u8>>,
    buf: Vec<u8>,
    at_line_start: bool,
    line_no: u64,
    last_ms: u64,
}

impl<R: BufRead> RecordingReader<R> {
    /// Looks at the first line: a header makes this a timed recording.
    pub fn new(mut input: R) -> Result<Self, RecordingError> {
        let mut first = Vec::new();
        <&mut R as io::Read>::take(&mut input, MAX_HEADER_BYTES as u64)
            .read_until(b'\n', &mut first)?;
        let mut reader = RecordingReader {
            input,
            header: None,
            pending: None,
            buf: Vec::new(),
            at_line_start: true,
            line_no: 1,
            last_ms: 0,
        };
        if first.starts_with(HEADER.as_bytes()) {
            if !first.ends_with(b"\n") && first.len() >= MAX_HEADER_BYTES {
                return Err(RecordingError::Header(format!(
                    "longer than {MAX_HEADER_BYTES} bytes"
                )));
            }
            reader.header = Some(parse_header(&first[HEADER.len()..])?);
        } else {
            reader.at_line_start = first.ends_with(b"\n");
            reader.line_no = 0;
            if !first.is_empty() {
                reader.pending = Some(first);
            }
        }
        Ok(reader)
    }

    /// The header, `None` for a plain stream.
    pub fn header(&self) -> Option<&RecordingHeader> {
        self.header.as_ref()
    }

    /// Whether the input is a timed recording.
    pub fn is_timed(&self) -> bool {
        self.header.is_some()
    }

    /// The next piece, `None` at the end of the input.
    pub fn next_chunk(&mut self) -> Result<Option<Chunk<'_>>, RecordingError> {
        if let Some(first) = self.pending.take() {
            self.buf = first;
            return Ok(Some(Chunk {
                at_ms: None,
                bytes: &self.buf,
            }));
        }
        self.buf.clear();
        let timed = self.header.is_some();
        let limit = if timed && self.at_line_start {
            MAX_LINE_BYTES + MAX_PREFIX_BYTES
        } else {
            MAX_LINE_BYTES
        };
        let n = <&mut R as io::Read>::take(&mut self.input, limit as u64)
            .read_until(b'\n', &mut self.buf)?;
        if n == 0 {
            return Ok(None);
        }
        let line_start = self.at_line_start;
        self.at_line_start = self.buf.ends_with(b"\n");
        if !(timed && line_start) {
            return Ok(Some(Chunk {
                at_ms: None,
                bytes: &self.buf,
            }));
        }
        self.line_no += 1;
        let (ms, rest) = split_prefix(&self.buf).ok_or_else(|| RecordingError::Line {
            line: self.line_no,
            reason: "expected `+<milliseconds> ` before the control-mode line".into(),
        })?;
        if ms < self.last_ms {
            return Err(RecordingError::Line {
                line: self.line_no,
                reason: format!(
                    "time +{ms} is earlier than the line before (+{})",
                    self.last_ms
                ),
            });
        }
        self.last_ms = ms;
        Ok(Some(Chunk {
            at_ms: Some(ms),
            bytes: &self.buf[rest..],
        }))
    }
}

fn parse_header(rest: &[u8]) -> Result<RecordingHeader, RecordingError> {
    let rest = std::str::from_utf8(rest)
        .map_err(|_| RecordingError::Header("not UTF-8".into()))?
        .trim();
    if rest.is_empty() {
        return Ok(RecordingHeader::default());
    }
    serde_json::from_str(rest).map_err(|e| {
        RecordingError::Header(format!("metadata is not the expected JSON object: {e}"))
    })
}

/// `+<digits> ` at the start of `line`: the number and where the rest starts.
fn split_prefix(line: &[u8]) -> Option<(u64, usize)> {
    let digits = line.strip_prefix(b"+")?;
    let len = digits.iter().take_while(|b| b.is_ascii_digit()).count();
    if len == 0 || digits.get(len) != Some(&b' ') {
        return None;
    }
    let ms = std::str::from_utf8(&digits[..len]).ok()?.parse().ok()?;
    Some((ms, 1 + len + 1))
}

/// Writes a timed recording: the header, then one prefixed line per call.
pub struct RecordingWriter<W: Write> {
    out: W,
}

impl<W: Write> RecordingWriter<W> {
    /// Writes the header line.
    pub fn new(mut out: W, header: &RecordingHeader) -> io::Result<Self> {
        let meta = serde_json::to_string(header).map_err(io::Error::other)?;
        writeln!(out, "{HEADER} {meta}")?;
        Ok(RecordingWriter { out })
    }

    /// Writes one control-mode line (with or without its `\n`) that arrived
    /// `at_ms` after the start.
    pub fn line(&mut self, at_ms: u64, line: &[u8]) -> io::Result<()> {
        write!(self.out, "+{at_ms} ")?;
        self.out.write_all(line)?;
        if !line.ends_with(b"\n") {
            self.out.write_all(b"\n")?;
        }
        Ok(())
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The timed pieces of a recording, as owned values.
    type Pieces = Vec<(Option<u64>, Vec<u8>)>;

    fn read_all(input: &[u8]) -> Result<(Option<RecordingHeader>, Pieces), RecordingError> {
        let mut r = RecordingReader::new(input)?;
        let mut out = Vec::new();
        while let Some(c) = r.next_chunk()? {
            out.push((c.at_ms, c.bytes.to_vec()));
        }
        Ok((r.header().cloned(), out))
    }

    #[test]
    fn written_recording_reads_back_exactly() {
        let header = RecordingHeader {
            session: Some("work".into()),
            cols: Some(120),
            rows: Some(40),
            tmux: None,
        };
        let mut w = RecordingWriter::new(Vec::new(), &header).unwrap();
        w.line(0, b"%session-changed $0 work\n").unwrap();
        w.line(15, b"%output %0 +1 \\033[K").unwrap();
        let bytes = w.into_inner();
        assert!(bytes.starts_with(
            b"# clawmux-recording v1 {\"session\":\"work\",\"cols\":120,\"rows\":40}\n"
        ));
        let (h, chunks) = read_all(&bytes).unwrap();
        assert_eq!(h.unwrap().size(), Some((120, 40)));
        assert_eq!(
            chunks,
            vec![
                (Some(0), b"%session-changed $0 work\n".to_vec()),
                (Some(15), b"%output %0 +1 \\033[K\n".to_vec()),
            ]
        );
    }

    #[test]
    fn plain_stream_passes_through_untimed() {
        let input = b"%begin 1 2 0\n%end 1 2 0\n%output %0 hi\n";
        let (h, chunks) = read_all(input).unwrap();
        assert!(h.is_none());
        let joined: Vec<u8> = chunks.iter().flat_map(|(_, b)| b.clone()).collect();
        assert_eq!(joined, input);
        assert!(chunks.iter().all(|(t, _)| t.is_none()));
    }

    #[test]
    fn a_header_without_metadata_is_timed() {
        let (h, chunks) = read_all(b"# clawmux-recording v1\n+3 %exit\n").unwrap();
        assert_eq!(h, Some(RecordingHeader::default()));
        assert_eq!(chunks, vec![(Some(3), b"%exit\n".to_vec())]);
    }

    #[test]
    fn bad_lines_are_named() {
        let e = read_all(b"# clawmux-recording v1\n+3 %exit\n%output %0 x\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "recording line 3: expected `+<milliseconds> ` before the control-mode line"
        );
        let e = read_all(b"# clawmux-recording v1\n+30 %exit\n+2 %exit\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "recording line 3: time +2 is earlier than the line before (+30)"
        );
        let e = read_all(b"# clawmux-recording v1 [1]\n").unwrap_err();
        assert!(
            e.to_string().starts_with("recording header: metadata"),
            "{e}"
        );
    }

    #[test]
    fn an_over_long_line_comes_in_bounded_pieces() {
        let mut input = b"# clawmux-recording v1\n+7 %output %0 ".to_vec();
        input.extend(std::iter::repeat_n(b'a', MAX_LINE_BYTES * 2));
        input.extend(b"\n+8 %exit\n");
        let (_, chunks) = read_all(&input).unwrap();
        assert!(
            chunks
                .iter()
                .all(|(_, b)| b.len() <= MAX_LINE_BYTES + MAX_PREFIX_BYTES)
        );
        assert_eq!(chunks[0].0, Some(7));
        assert!(chunks[1..chunks.len() - 1].iter().all(|(t, _)| t.is_none()));
        assert_eq!(chunks.last().unwrap(), &(Some(8), b"%exit\n".to_vec()));
    }
}
