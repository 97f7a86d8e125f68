//! Reading the event log in bounded memory: records are streamed one line at
//! a time (a line longer than [`MAX_RECORD_BYTES`] is skipped and counted),
//! and `--since` finds its starting point by scanning back from the end, so
//! neither `clawmux tail` nor `tail --since` ever holds a whole log file.
//!
//! A torn last line (a crash mid-write, or a line still being written) is not
//! consumed: a follower picks it up once it is complete.

use std::fs::{self, File};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::event_log::{EventRecord, LOG_FILE, LogError, ROTATED_FILES, rotated};

/// Longest log line read, in bytes. A record holds one chat message or one
/// card's text (Feishu caps a message at 150 KB, a card at 30 KB), so real
/// lines are far below this; a longer line is skipped, never buffered whole.
pub const MAX_RECORD_BYTES: usize = 4 << 20;
/// Bytes read at a time when scanning back from the end of a file.
const BACK_SCAN_BLOCK: usize = 64 << 10;

/// What reading the log found: the records, and how many lines were skipped.
#[derive(Debug, Default)]
pub struct LogContents {
    pub records: Vec<EventRecord>,
    pub skipped_lines: usize,
}

/// What a streaming read saw besides the records it handed out.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ReadStats {
    /// Lines that were not a record (torn by a crash, or foreign).
    pub skipped_lines: usize,
    /// Lines longer than [`MAX_RECORD_BYTES`], skipped unread.
    pub too_long: usize,
    /// Where the last complete line of `events.jsonl` ends (a follower
    /// goes on from here).
    pub end_offset: u64,
}

/// The log files, oldest rotated file first, `events.jsonl` last.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = (1..=ROTATED_FILES).rev().map(|n| rotated(dir, n)).collect();
    files.push(dir.join(LOG_FILE));
    files
}

fn open(path: &Path) -> Result<Option<File>, LogError> {
    match File::open(path) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(LogError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Streams every record written at or after `since_ms` (every record when
/// `None`) to `sink`, oldest first. Memory stays bounded by
/// [`MAX_RECORD_BYTES`] whatever the size of the log.
pub fn stream(
    dir: &Path,
    since_ms: Option<u64>,
    sink: &mut impl FnMut(EventRecord),
) -> Result<ReadStats, LogError> {
    let files = files(dir);
    let (first, offset) = match since_ms {
        Some(since) => start_of(&files, since)?,
        None => (0, 0),
    };
    let mut stats = ReadStats::default();
    let last = files.len() - 1;
    for (i, path) in files.iter().enumerate().skip(first) {
        let Some(mut file) = open(path)? else {
            continue;
        };
        let start = if i == first { offset } else { 0 };
        let io = |source| LogError::Io {
            path: path.clone(),
            source,
        };
        file.seek(SeekFrom::Start(start)).map_err(io)?;
        let consumed = read_lines(BufReader::new(file), &mut stats, &mut |r| {
            if since_ms.is_none_or(|t| r.ts_ms >= t) {
                sink(r)
            }
        })
        .map_err(io)?;
        if i == last {
            stats.end_offset = start + consumed;
        }
    }
    Ok(stats)
}

/// Reads every record, oldest rotated file first. A missing log is empty.
pub fn read_all(dir: &Path) -> Result<LogContents, LogError> {
    let mut out = LogContents::default();
    let stats = stream(dir, None, &mut |r| out.records.push(r))?;
    out.skipped_lines = stats.skipped_lines + stats.too_long;
    Ok(out)
}

/// Follows `events.jsonl` from `offset` like `tail -f`: hands the complete
/// lines written since to `sink` and returns what it saw, with the new
/// offset. Starts over when the file was rotated (it got shorter than
/// `offset`).
pub fn follow_from(
    dir: &Path,
    offset: u64,
    sink: &mut impl FnMut(EventRecord),
) -> Result<ReadStats, LogError> {
    let path = dir.join(LOG_FILE);
    let io = |source| LogError::Io {
        path: path.clone(),
        source,
    };
    let mut stats = ReadStats::default();
    let Some(mut file) = open(&path)? else {
        return Ok(stats);
    };
    let len = file.metadata().map_err(io)?.len();
    let start = if len < offset { 0 } else { offset };
    file.seek(SeekFrom::Start(start)).map_err(io)?;
    let consumed = read_lines(BufReader::new(file), &mut stats, sink).map_err(io)?;
    stats.end_offset = start + consumed;
    Ok(stats)
}

/// [`follow_from`], collected.
pub fn read_from(dir: &Path, offset: u64) -> Result<(LogContents, u64), LogError> {
    let mut out = LogContents::default();
    let stats = follow_from(dir, offset, &mut |r| out.records.push(r))?;
    out.skipped_lines = stats.skipped_lines + stats.too_long;
    Ok((out, stats.end_offset))
}

/// The size of `events.jsonl` now.
pub fn current_len(dir: &Path) -> u64 {
    fs::metadata(dir.join(LOG_FILE))
        .map(|m| m.len())
        .unwrap_or(0)
}

/// Reads complete lines, each at most [`MAX_RECORD_BYTES`], and returns the
/// bytes consumed (up to the end of the last complete line).
fn read_lines(
    mut reader: impl BufRead,
    stats: &mut ReadStats,
    sink: &mut impl FnMut(EventRecord),
) -> std::io::Result<u64> {
    let mut consumed = 0u64;
    let mut line = Vec::new();
    // Bytes of the current line seen so far, kept or not.
    let mut seen = 0usize;
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            // End of file, or a line still being written (or torn): not ours yet.
            return Ok(consumed);
        }
        let (part, done) = match memchr::memchr(b'\n', chunk) {
            Some(i) => (&chunk[..i], true),
            None => (chunk, false),
        };
        seen += part.len();
        if seen <= MAX_RECORD_BYTES {
            line.extend_from_slice(part);
        } else {
            line.clear();
        }
        let used = part.len() + usize::from(done);
        reader.consume(used);
        if !done {
            continue;
        }
        consumed += (seen + 1) as u64;
        if seen > MAX_RECORD_BYTES {
            stats.too_long += 1;
        } else {
            match std::str::from_utf8(&line)
                .ok()
                .and_then(|l| EventRecord::parse(l.trim_end()))
            {
                Some(r) => sink(r),
                None => stats.skipped_lines += 1,
            }
        }
        line.clear();
        seen = 0;
    }
}

/// Where reading for `since` starts: the file (index into `files`) and the
/// offset just past the newest record older than `since`. Files are scanned
/// newest first, each from its end, so only the part of the log that will
/// be printed (and one line before it) is read.
fn start_of(files: &[PathBuf], since: u64) -> Result<(usize, u64), LogError> {
    for (i, path) in files.iter().enumerate().rev() {
        let Some(mut file) = open(path)? else {
            continue;
        };
        let found = last_line_before(&mut file, since).map_err(|source| LogError::Io {
            path: path.clone(),
            source,
        })?;
        if let Some(offset) = found {
            return Ok((i, offset));
        }
    }
    Ok((0, 0))
}

/// Scans `file` back from its end for the newest complete record older than
/// `since`; returns the offset of the line after it. `None` when every
/// record in the file is as new as `since` (or there is none).
fn last_line_before(file: &mut File, since: u64) -> std::io::Result<Option<u64>> {
    let mut pos = file.metadata()?.len();
    // Bytes [pos, pos + buf.len()): the not yet split part of the file,
    // ending where the line after it begins (minus its newline).
    let mut buf: Vec<u8> = Vec::new();
    // The bytes after the last newline are a torn or growing line: skipped.
    let mut torn_tail = true;
    // The line being assembled is longer than the bound: its bytes are
    // dropped and the line skipped once its start is found.
    let mut overlong = false;
    let mut block = vec![0u8; BACK_SCAN_BLOCK];
    loop {
        let at_start = pos == 0;
        if !at_start {
            let n = BACK_SCAN_BLOCK.min(pos as usize);
            pos -= n as u64;
            file.seek(SeekFrom::Start(pos))?;
            file.read_exact(&mut block[..n])?;
            let mut joined = Vec::with_capacity(n + buf.len());
            joined.extend_from_slice(&block[..n]);
            joined.extend_from_slice(&buf);
            buf = joined;
        }
        loop {
            let (line_start, line) = match memchr::memrchr(b'\n', &buf) {
                Some(i) => (i + 1, &buf[i + 1..]),
                // The file's first line.
                None if at_start => (0, &buf[..]),
                None => break,
            };
            let line_end = pos + line_start as u64 + line.len() as u64;
            if torn_tail {
                torn_tail = false;
            } else if overlong {
                overlong = false;
            } else if let Some(r) = std::str::from_utf8(line)
                .ok()
                .and_then(|l| EventRecord::parse(l.trim_end()))
                && r.ts_ms < since
            {
                return Ok(Some(line_end + 1));
            }
            if line_start == 0 {
                return Ok(None);
            }
            buf.truncate(line_start - 1);
        }
        if buf.len() > MAX_RECORD_BYTES {
            buf.clear();
            overlong = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::clock;
    use super::*;
    use std::io::Write;

    /// A record of the schema named `name` (a `state_saved` note).
    fn line(ts: u64, name: &str) -> String {
        format!(
            "{{\"ts\":\"{}\",\"kind\":\"state_saved\",\"note\":\"{name}\"}}\n",
            clock::rfc3339(ts)
        )
    }

    /// The names of the records read.
    fn kinds(dir: &Path, since: Option<u64>) -> (Vec<String>, ReadStats) {
        let mut got = Vec::new();
        let stats = stream(dir, since, &mut |r| {
            got.push(r.field("note").unwrap_or_default().to_string())
        })
        .unwrap();
        (got, stats)
    }

    #[test]
    fn since_starts_after_the_newest_older_record_across_files() {
        let dir = tempfile::tempdir().unwrap();
        let mut old = String::new();
        for i in 0..5000 {
            old.push_str(&line(1_000 + i, "old"));
        }
        fs::write(rotated(dir.path(), 2), &old).unwrap();
        fs::write(
            rotated(dir.path(), 1),
            line(9_000, "a") + &line(10_000, "b"),
        )
        .unwrap();
        let mut current = line(11_000, "c") + "not json\n" + &line(12_000, "d");
        current.push_str("{\"ts\":\"torn");
        fs::write(dir.path().join(LOG_FILE), &current).unwrap();

        let (got, stats) = kinds(dir.path(), Some(10_000));
        assert_eq!(got, ["b", "c", "d"]);
        assert_eq!(stats.skipped_lines, 1);
        assert_eq!(
            stats.end_offset,
            (current.len() - "{\"ts\":\"torn".len()) as u64
        );
        let (got, _) = kinds(dir.path(), Some(11_500));
        assert_eq!(got, ["d"]);
        let (got, _) = kinds(dir.path(), Some(99_000));
        assert!(got.is_empty());
        let (got, _) = kinds(dir.path(), Some(0));
        assert_eq!(got.len(), 5004);
        let (got, _) = kinds(dir.path(), None);
        assert_eq!(got.len(), 5004);
    }

    #[test]
    fn overlong_lines_are_skipped_forward_and_backward() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = File::create(dir.path().join(LOG_FILE)).unwrap();
        f.write_all(line(1_000, "before").as_bytes()).unwrap();
        // A record-shaped line past the bound: never buffered, never printed.
        let pad = "x".repeat(MAX_RECORD_BYTES + 10);
        let big = format!(
            "{{\"ts\":\"{}\",\"kind\":\"state_saved\",\"note\":\"{pad}\"}}\n",
            clock::rfc3339(2_000)
        );
        f.write_all(big.as_bytes()).unwrap();
        f.write_all(line(3_000, "after").as_bytes()).unwrap();
        drop(f);
        let (got, stats) = kinds(dir.path(), None);
        assert_eq!(got, ["before", "after"]);
        assert_eq!(stats.too_long, 1);
        // Scanning back crosses the long line without keeping it either.
        let (got, _) = kinds(dir.path(), Some(2_500));
        assert_eq!(got, ["after"]);
        let (got, _) = kinds(dir.path(), Some(1_500));
        assert_eq!(got, ["after"], "the long line is skipped, not parsed");
    }

    #[test]
    fn a_single_line_file_and_an_empty_file() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(kinds(dir.path(), Some(5)).0, Vec::<String>::new());
        fs::write(dir.path().join(LOG_FILE), line(1_000, "only")).unwrap();
        assert_eq!(kinds(dir.path(), Some(500)).0, ["only"]);
        assert_eq!(kinds(dir.path(), Some(1_000)).0, ["only"]);
        assert!(kinds(dir.path(), Some(1_001)).0.is_empty());
    }
}
