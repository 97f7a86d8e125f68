//! The append-only event log (`events.jsonl`): one JSON object a line, never
//! rewritten, rotated by size. Readers skip a torn or corrupt line (a crash
//! mid-write) and go on.

use std::fs::{self, File};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};
use tokio::sync::watch;

use super::{LogEvent, clock, private};

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

/// Whether records reach the file. It changes from `Ok` to `Failing` once
/// per outage (the first failed write) and back once a write succeeds, so a
/// watcher can tell the chat once; see [`EventLog::subscribe_health`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogHealth {
    Ok,
    /// Writes fail (disk full, I/O error): records are counted, not lost
    /// silently, and the count is written with the next record that fits.
    Failing {
        first_error: String,
        since_ms: u64,
    },
}

/// A shared handle to the event log; clones append to the same file.
#[derive(Clone)]
pub struct EventLog {
    inner: Arc<Mutex<Writer>>,
    health: watch::Receiver<LogHealth>,
}

struct Writer {
    dir: PathBuf,
    /// `None` while the file could not be (re)opened.
    file: Option<File>,
    len: u64,
    /// The end of the file must be checked before the next write: at open
    /// (a crash may have torn the last line) and after a failed write (it
    /// may have written part of its line).
    check_tail: bool,
    /// Records that could not be written since the last one that was.
    failed: u64,
    first_error: Option<String>,
    failing_since_ms: u64,
    health: watch::Sender<LogHealth>,
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
        let (health, health_rx) = watch::channel(LogHealth::Ok);
        let writer = Writer {
            dir: dir.to_path_buf(),
            file: Some(file),
            len,
            check_tail: true,
            failed: 0,
            first_error: None,
            failing_since_ms: 0,
            health,
        };
        Ok(EventLog {
            inner: Arc::new(Mutex::new(writer)),
            health: health_rx,
        })
    }

    /// Appends `event` as `{"ts":…,"kind":…,…fields}`, one line with one
    /// write, so a crash leaves at most one torn line at the end. Failures
    /// are returned for the caller to report; the log never panics its caller.
    pub fn append(&self, event: &LogEvent) -> Result<(), LogError> {
        let line = line(event);
        let mut w = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        w.write_line(line.as_bytes())
    }

    /// Appends without returning a failure: for callers where the log must
    /// never stop the work. The first failure of an outage is reported
    /// through `tracing` and [`EventLog::health`]; the rest are counted.
    pub fn event(&self, event: &LogEvent) {
        let _ = self.append(event);
    }

    /// Whether records reach the file now.
    pub fn health(&self) -> LogHealth {
        self.health.borrow().clone()
    }

    /// Records that failed to be written since the last one that was.
    pub fn failed_records(&self) -> u64 {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).failed
    }

    /// Changes of [`EventLog::health`]: the daemon tells the chat once when
    /// it turns `Failing`, and again when it is `Ok`.
    pub fn subscribe_health(&self) -> watch::Receiver<LogHealth> {
        self.health.clone()
    }
}

/// One record as its line: `ts`, `kind` and the event's fields (a field
/// cannot override either).
pub(super) fn line(event: &LogEvent) -> String {
    let (kind, fields) = event.split();
    let mut record = Map::new();
    record.insert("ts".into(), Value::String(clock::rfc3339(clock::now_ms())));
    record.insert("kind".into(), Value::String(kind));
    if let Value::Object(fields) = fields {
        record.extend(fields.into_iter().filter(|(k, _)| k != "ts" && k != "kind"));
    }
    let mut line = Value::Object(record).to_string();
    line.push('\n');
    line
}

impl Writer {
    fn write_line(&mut self, line: &[u8]) -> Result<(), LogError> {
        match self.try_write(line) {
            Ok(()) => Ok(()),
            Err(source) => {
                self.failed += 1;
                self.check_tail = true;
                if self.first_error.is_none() {
                    let now = clock::now_ms();
                    let error = source.to_string();
                    tracing::error!(
                        "event log {}: {error}; records are counted until a write succeeds",
                        self.dir.join(LOG_FILE).display()
                    );
                    self.failing_since_ms = now;
                    self.health.send_replace(LogHealth::Failing {
                        first_error: error.clone(),
                        since_ms: now,
                    });
                    self.first_error = Some(error);
                }
                Err(LogError::Io {
                    path: self.dir.join(LOG_FILE),
                    source,
                })
            }
        }
    }

    /// One write of: a repair mark if the tail was torn, the count of
    /// records lost since the last good write, and `line`.
    fn try_write(&mut self, line: &[u8]) -> std::io::Result<()> {
        let path = self.dir.join(LOG_FILE);
        let mut buf = Vec::with_capacity(line.len() + 256);
        if self.check_tail || self.file.is_none() {
            // Reopened: the operator may have moved the log away to free space.
            let file = open_append(&path)?;
            self.len = file.metadata()?.len();
            if torn_tail(&file, self.len)? {
                // The fragment becomes a line of its own (readers skip it),
                // so it cannot swallow the record written after it.
                buf.push(b'\n');
                buf.extend_from_slice(
                    self::line(&LogEvent::LogRepaired {
                        note: "the line before this one was cut short (a crash or a failed write) and is skipped by readers".into(),
                    })
                    .as_bytes(),
                );
            }
            self.file = Some(file);
        }
        if self.failed > 0 {
            buf.extend_from_slice(
                self::line(&LogEvent::LogWriteFailed {
                    count: self.failed,
                    first_error: self.first_error.clone(),
                    since: clock::rfc3339(self.failing_since_ms),
                })
                .as_bytes(),
            );
        }
        buf.extend_from_slice(line);
        if self.len > 0 && self.len + buf.len() as u64 > MAX_LOG_BYTES {
            rotate(&self.dir)?;
            self.file = Some(open_append(&path)?);
            self.len = 0;
        }
        let Some(file) = self.file.as_mut() else {
            return Err(std::io::Error::other("the event log is not open"));
        };
        file.write_all(&buf)?;
        self.len += buf.len() as u64;
        self.check_tail = false;
        if self.failed > 0 {
            tracing::warn!(
                "event log {} is written again; {} record(s) could not be written meanwhile",
                path.display(),
                self.failed
            );
            self.failed = 0;
            self.first_error = None;
            self.health.send_replace(LogHealth::Ok);
        }
        Ok(())
    }
}

/// Whether the file's last byte is not a newline (a torn last line).
fn torn_tail(file: &File, len: u64) -> std::io::Result<bool> {
    if len == 0 {
        return Ok(false);
    }
    let mut last = [0u8; 1];
    file.read_exact_at(&mut last, len - 1)?;
    Ok(last[0] != b'\n')
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

/// One parsed line of the log: the event in the writer's own schema
/// ([`LogEvent`]), and the line's fields as written (for `tail --json`,
/// which prints them byte for byte).
#[derive(Clone, Debug, PartialEq)]
pub struct EventRecord {
    pub ts_ms: u64,
    /// The event's `kind` (as [`LogEvent::kind`] names it).
    pub kind: String,
    pub event: LogEvent,
    pub fields: Map<String, Value>,
}

impl EventRecord {
    /// Parses one line; `None` for a torn or foreign line, or one that is
    /// not an event of the schema (an unknown kind, a field missing or of
    /// the wrong type): readers count those as skipped.
    pub fn parse(line: &str) -> Option<EventRecord> {
        let Value::Object(fields) = serde_json::from_str::<Value>(line).ok()? else {
            return None;
        };
        let ts_ms = clock::parse_rfc3339(fields.get("ts")?.as_str()?)?;
        // The schema ignores `ts` (the writer's, not the event's).
        let event: LogEvent = serde_json::from_value(Value::Object(fields.clone())).ok()?;
        Some(EventRecord {
            ts_ms,
            kind: event.kind(),
            event,
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
    use crate::log_read::{current_len, read_all, read_from};

    /// A line named `name` (a hook event: the kinds are the enum's).
    fn named(name: &str) -> LogEvent {
        LogEvent::Hook {
            project: "demo".parse().unwrap(),
            pane: clawmux_control::PaneId(0),
            event: name.into(),
            sent_as: None,
        }
    }

    /// The lines written, each by its name: a hook's event, else its kind.
    fn names(records: &[EventRecord]) -> Vec<String> {
        records
            .iter()
            .map(|r| match r.kind.as_str() {
                "hook" => r.field("event").unwrap_or_default().to_string(),
                kind => kind.to_string(),
            })
            .collect()
    }

    #[test]
    fn appends_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let log = EventLog::open(dir.path()).unwrap();
        log.append(&LogEvent::Command {
            project: "demo".parse().unwrap(),
            sender: "ou_a".into(),
            text: "/gsd:progress".into(),
            job: None,
        })
        .unwrap();
        log.append(&LogEvent::Card {
            uuid: "u1".into(),
            handle: "h1".into(),
            op: "send".into(),
        })
        .unwrap();
        let got = read_all(dir.path()).unwrap();
        assert_eq!(got.skipped_lines, 0);
        assert_eq!(got.records.len(), 2);
        assert_eq!(got.records[0].kind, "command");
        assert_eq!(got.records[0].field("project"), Some("demo"));
        assert_eq!(got.records[0].fields.get("job"), None, "skipped when None");
        assert_eq!(got.records[1].kind, "card");
        assert_eq!(got.records[1].field("op"), Some("send"));
    }

    #[test]
    fn torn_last_line_and_garbage_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let log = EventLog::open(dir.path()).unwrap();
        log.append(&named("a")).unwrap();
        let mut f = open_append(&dir.path().join(LOG_FILE)).unwrap();
        f.write_all(
            concat!(
                "not json\n",
                r#"{"ts":"2026-11-29T15:00:20Z","kind":"bogus","event":"x"}"#,
                "\n",
                r#"{"ts":"2026-11-29T15:00:20Z","kind":"hook","project":"p","pane":"%0","event":"b"}"#,
                "\n",
                r#"{"ts":"2026-1"#,
            )
            .as_bytes(),
        )
        .unwrap();
        let got = read_all(dir.path()).unwrap();
        assert_eq!(names(&got.records), ["a", "b"]);
        // The garbage and the kind the schema does not know.
        assert_eq!(got.skipped_lines, 2);
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
            log.append(&LogEvent::Message {
                sender: i.to_string(),
                text: big.clone(),
                chat: crate::ids::chat("oc_1"),
            })
            .unwrap();
        }
        assert!(rotated(dir.path(), 1).exists());
        assert!(!rotated(dir.path(), ROTATED_FILES + 1).exists());
        let got = read_all(dir.path()).unwrap();
        let ids: Vec<u64> = got
            .records
            .iter()
            .filter_map(|r| r.field("sender")?.parse().ok())
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
        log.append(&named("one")).unwrap();
        let (first, offset) = read_from(dir.path(), 0).unwrap();
        assert_eq!(first.records.len(), 1);
        rotate(dir.path()).unwrap();
        let log = EventLog::open(dir.path()).unwrap();
        log.append(&named("two")).unwrap();
        let (next, _) = read_from(dir.path(), offset + 1000).unwrap();
        assert_eq!(names(&next.records), ["two"]);
    }

    fn kinds(dir: &Path) -> Vec<String> {
        names(&read_all(dir).unwrap().records)
    }

    #[test]
    fn a_torn_tail_is_repaired_before_the_next_append() {
        let dir = tempfile::tempdir().unwrap();
        let log = EventLog::open(dir.path()).unwrap();
        log.append(&named("a")).unwrap();
        drop(log);
        // A crash cut the last record short.
        let mut f = open_append(&dir.path().join(LOG_FILE)).unwrap();
        f.write_all(b"{\"ts\":\"2026-11-29T15:00:2").unwrap();
        let log = EventLog::open(dir.path()).unwrap();
        log.append(&named("b")).unwrap();
        log.append(&named("c")).unwrap();
        assert_eq!(kinds(dir.path()), ["a", "log_repaired", "b", "c"]);
        assert_eq!(read_all(dir.path()).unwrap().skipped_lines, 1);
    }

    #[test]
    fn failed_writes_are_counted_reported_once_and_written_with_the_next_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOG_FILE);
        let log = EventLog::open(dir.path()).unwrap();
        log.append(&named("before")).unwrap();
        let mut health = log.subscribe_health();
        health.mark_unchanged();
        // A real failing file: every write to /dev/full is ENOSPC.
        let kept = dir.path().join("kept.jsonl");
        fs::rename(&path, &kept).unwrap();
        std::os::unix::fs::symlink("/dev/full", &path).unwrap();
        // The writer reopens the path once a write failed; make the current
        // handle fail too by forcing that reopen.
        log.inner.lock().unwrap().check_tail = true;
        for i in 0..3 {
            let err = log.append(&named(&format!("lost {i}"))).unwrap_err();
            assert!(err.to_string().contains("No space left"), "{err}");
        }
        assert_eq!(log.failed_records(), 3);
        assert!(health.has_changed().unwrap(), "told once");
        let LogHealth::Failing { first_error, .. } = health.borrow_and_update().clone() else {
            panic!("not failing");
        };
        assert!(first_error.contains("No space left"), "{first_error}");
        // Space is back (the operator moved the full file away).
        fs::remove_file(&path).unwrap();
        fs::rename(&kept, &path).unwrap();
        log.append(&named("after")).unwrap();
        assert!(health.has_changed().unwrap());
        assert_eq!(*health.borrow_and_update(), LogHealth::Ok);
        assert_eq!(log.failed_records(), 0);
        let got = read_all(dir.path()).unwrap();
        assert_eq!(names(&got.records), ["before", "log_write_failed", "after"]);
        assert_eq!(got.records[1].fields["count"], 3);
        assert!(
            got.records[1]
                .field("first_error")
                .is_some_and(|e| e.contains("No space left"))
        );
        assert_eq!(got.skipped_lines, 0);
    }
}
