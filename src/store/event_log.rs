//! The append-only event log (`events.jsonl`): one JSON object a line, never
//! rewritten, rotated by size. Readers skip a torn or corrupt line (a crash
//! mid-write) and go on.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};

pub use super::log_read::{
    LogContents, MAX_RECORD_BYTES, ReadStats, current_len, follow_from, read_all, read_from, stream,
};
use super::{clock, private};

/// Rotate `events.jsonl` once it passes this size: big enough for weeks of
/// normal use, small enough to grep.
pub const MAX_LOG_BYTES: u64 = 16 * 1024 * 1024;
/// Rotated files kept (`events.jsonl.1` is the newest).
pub const ROTATED_FILES: usize = 3;
/// The event log's file name in the state directory.
pub const LOG_FILE: &str = "events.jsonl";

#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("event log {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// A shared handle to the event log; clones append to the same file.
#[derive(Clone)]
pub struct EventLog {
    inner: Arc<Mutex<Writer>>,
}

struct Writer {
    dir: PathBuf,
    file: File,
    len: u64,
}

impl EventLog {
    /// Opens (creating) `events.jsonl` in `dir` for appending.
    pub fn open(dir: &Path) -> Result<EventLog, LogError> {
        let path = dir.join(LOG_FILE);
        let io = |source| LogError::Io {
            path: path.clone(),
            source,
        };
        private::create_dir(dir).map_err(io)?;
        let file = open_append(&path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        let writer = Writer {
            dir: dir.to_path_buf(),
            file,
            len,
        };
        Ok(EventLog {
            inner: Arc::new(Mutex::new(writer)),
        })
    }

    /// Appends `{"ts":…,"kind":kind,…fields}` as one line with one write, so a
    /// crash leaves at most one torn line at the end. Failures are returned
    /// for the caller to report; the log never panics its caller.
    pub fn append(&self, kind: &str, fields: Value) -> Result<(), LogError> {
        let mut record = Map::new();
        record.insert("ts".into(), Value::String(clock::rfc3339(clock::now_ms())));
        record.insert("kind".into(), Value::String(kind.into()));
        if let Value::Object(fields) = fields {
            record.extend(fields.into_iter().filter(|(k, _)| k != "ts" && k != "kind"));
        }
        let mut line = Value::Object(record).to_string();
        line.push('\n');
        let mut w = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        w.write_line(line.as_bytes())
    }

    /// Appends and reports a failure through `tracing` instead of returning it:
    /// for callers where the log must never stop the work.
    pub fn record(&self, kind: &str, fields: Value) {
        if let Err(err) = self.append(kind, fields) {
            tracing::error!("{err}");
        }
    }
}

impl Writer {
    fn write_line(&mut self, line: &[u8]) -> Result<(), LogError> {
        let path = self.dir.join(LOG_FILE);
        let io = |source| LogError::Io {
            path: path.clone(),
            source,
        };
        if self.len > 0 && self.len + line.len() as u64 > MAX_LOG_BYTES {
            rotate(&self.dir).map_err(io)?;
            self.file = open_append(&path).map_err(io)?;
            self.len = 0;
        }
        self.file.write_all(line).map_err(io)?;
        self.len += line.len() as u64;
        Ok(())
    }
}

/// The log holds every chat message: created 0600 (see [`private`]).
fn open_append(path: &Path) -> std::io::Result<File> {
    private::open_append(path)
}

pub(super) fn rotated(dir: &Path, n: usize) -> PathBuf {
    dir.join(format!("{LOG_FILE}.{n}"))
}

fn rotate(dir: &Path) -> std::io::Result<()> {
    for n in (1..ROTATED_FILES).rev() {
        let from = rotated(dir, n);
        if from.exists() {
            fs::rename(&from, rotated(dir, n + 1))?;
        }
    }
    fs::rename(dir.join(LOG_FILE), rotated(dir, 1))
}

/// One parsed line of the log.
#[derive(Clone, Debug, PartialEq)]
pub struct EventRecord {
    pub ts_ms: u64,
    pub kind: String,
    pub fields: Map<String, Value>,
}

impl EventRecord {
    /// Parses one line; `None` for a torn or foreign line.
    pub fn parse(line: &str) -> Option<EventRecord> {
        let Value::Object(fields) = serde_json::from_str::<Value>(line).ok()? else {
            return None;
        };
        let ts_ms = clock::parse_rfc3339(fields.get("ts")?.as_str()?)?;
        let kind = fields.get("kind")?.as_str()?.to_string();
        Some(EventRecord {
            ts_ms,
            kind,
            fields,
        })
    }

    /// A string field such as `project` or `pane`.
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields.get(name).and_then(Value::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn appends_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let log = EventLog::open(dir.path()).unwrap();
        log.append(
            "command",
            json!({"project": "demo", "text": "/gsd:progress"}),
        )
        .unwrap();
        log.append("card", json!({"kind": "forged", "ts": "x"}))
            .unwrap();
        let got = read_all(dir.path()).unwrap();
        assert_eq!(got.skipped_lines, 0);
        assert_eq!(got.records.len(), 2);
        assert_eq!(got.records[0].kind, "command");
        assert_eq!(got.records[0].field("project"), Some("demo"));
        // A field cannot overwrite the record's own kind or time.
        assert_eq!(got.records[1].kind, "card");
    }

    #[test]
    fn torn_last_line_and_garbage_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let log = EventLog::open(dir.path()).unwrap();
        log.append("a", json!({})).unwrap();
        let mut f = open_append(&dir.path().join(LOG_FILE)).unwrap();
        f.write_all(
            b"not json\n{\"ts\":\"2026-11-29T15:00:20Z\",\"kind\":\"b\"}\n{\"ts\":\"2026-1",
        )
        .unwrap();
        let got = read_all(dir.path()).unwrap();
        assert_eq!(
            got.records
                .iter()
                .map(|r| r.kind.as_str())
                .collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert_eq!(got.skipped_lines, 1);
        // The torn tail is not consumed: a follower picks it up once completed.
        let (_, offset) = read_from(dir.path(), 0).unwrap();
        assert!(offset < current_len(dir.path()));
    }

    #[test]
    fn rotates_by_size_and_reads_oldest_first() {
        let dir = tempfile::tempdir().unwrap();
        let log = EventLog::open(dir.path()).unwrap();
        let big = "x".repeat(1024 * 1024);
        for i in 0..40 {
            log.append("bulk", json!({"i": i, "pad": big})).unwrap();
        }
        assert!(rotated(dir.path(), 1).exists());
        assert!(!rotated(dir.path(), ROTATED_FILES + 1).exists());
        let got = read_all(dir.path()).unwrap();
        let ids: Vec<u64> = got
            .records
            .iter()
            .filter_map(|r| r.fields["i"].as_u64())
            .collect();
        assert!(
            ids.windows(2).all(|w| w[0] + 1 == w[1]),
            "in order: {ids:?}"
        );
        assert_eq!(ids.last(), Some(&39));
        for n in 1..=2 {
            assert!(fs::metadata(rotated(dir.path(), n)).unwrap().len() <= MAX_LOG_BYTES);
        }
    }

    #[test]
    fn follow_restarts_after_rotation() {
        let dir = tempfile::tempdir().unwrap();
        let log = EventLog::open(dir.path()).unwrap();
        log.append("one", json!({})).unwrap();
        let (first, offset) = read_from(dir.path(), 0).unwrap();
        assert_eq!(first.records.len(), 1);
        rotate(dir.path()).unwrap();
        let log = EventLog::open(dir.path()).unwrap();
        log.append("two", json!({})).unwrap();
        let (next, _) = read_from(dir.path(), offset + 1000).unwrap();
        assert_eq!(next.records[0].kind, "two");
    }
}
