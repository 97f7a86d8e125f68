//! The daemon's one copy of [`State`], shared between its tasks: every
//! change is saved before the lock is released, so what a task did survives
//! a crash. A failed save (disk full) keeps the change in memory, tells the
//! operator, and is retried with the next change.

use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::json;
use tokio::sync::Notify;

use super::state_file::Loaded;
use super::{EventLog, LogError, State, StateError, StateFile, private};

#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    Log(#[from] LogError),
}

/// A cloneable handle to the state, its file, the event log, and a signal
/// that the outbox has work.
#[derive(Clone)]
pub struct SharedState {
    inner: Arc<Mutex<Inner>>,
    pub log: EventLog,
    outbox_ready: Arc<Notify>,
}

struct Inner {
    state: State,
    file: StateFile,
    /// The last save failed: the file is behind memory.
    unsaved: bool,
}

impl SharedState {
    /// Opens `state.json` and `events.jsonl` in `dir`. A corrupt state file
    /// falls back to a backup; that is logged and returned for the operator.
    pub fn open(dir: &Path) -> Result<(SharedState, Loaded), OpenError> {
        // Checked before anything is written: a wider mode is tightened
        // (when ours) and reported once the log is open.
        let findings = private::check(dir);
        let log = EventLog::open(dir)?;
        for finding in &findings {
            tracing::warn!("{finding}");
            log.record(
                "state_permissions",
                json!({
                    "path": finding.path.display().to_string(),
                    "mode": format!("{:o}", finding.mode),
                    "wanted": format!("{:o}", finding.wanted),
                    "tightened": finding.tightened,
                    "problem": finding.problem,
                }),
            );
        }
        let file = StateFile::new(dir.join("state.json"));
        let (state, loaded) = file.load::<State>()?;
        match &loaded {
            Loaded::Backup { backup, problem } => log.record(
                "state_recovered",
                json!({"problem": problem, "backup": backup.display().to_string()}),
            ),
            Loaded::Reset { problem } => log.record("state_reset", json!({"problem": problem})),
            Loaded::Current | Loaded::Fresh => {}
        }
        let inner = Inner {
            state,
            file,
            unsaved: false,
        };
        let shared = SharedState {
            inner: Arc::new(Mutex::new(inner)),
            log,
            outbox_ready: Arc::new(Notify::new()),
        };
        Ok((shared, loaded))
    }

    /// Reads the state.
    pub fn read<R>(&self, f: impl FnOnce(&State) -> R) -> R {
        f(&self.lock().state)
    }

    /// Changes the state and saves it. Wakes the outbox when it has entries.
    pub fn update<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        let mut inner = self.lock();
        let out = f(&mut inner.state);
        let saved = inner.file.save(&inner.state);
        match saved {
            Ok(()) if inner.unsaved => {
                inner.unsaved = false;
                self.log.record(
                    "state_saved",
                    json!({"note": "state file written again after an error"}),
                );
            }
            Ok(()) => {}
            Err(err) => {
                if !inner.unsaved {
                    tracing::error!("{err}");
                    self.log
                        .record("state_error", json!({"error": err.to_string()}));
                }
                inner.unsaved = true;
            }
        }
        let has_outbox = !inner.state.outbox.is_empty();
        drop(inner);
        if has_outbox {
            self.outbox_ready.notify_one();
        }
        out
    }

    /// Waits until the outbox may have work.
    pub async fn outbox_ready(&self) {
        self.outbox_ready.notified().await
    }

    /// True while the state file is behind memory (the last save failed).
    pub fn unsaved(&self) -> bool {
        self.lock().unsaved
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_survive_reopen_and_failed_saves_are_retried() {
        let dir = tempfile::tempdir().unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let (s, loaded) = SharedState::open(dir.path()).unwrap();
        assert_eq!(loaded, Loaded::Fresh);
        s.update(|st| st.chats.insert("oc_1".into(), "demo".into()));
        let (again, _) = SharedState::open(dir.path()).unwrap();
        assert_eq!(again.read(|st| st.chats["oc_1"].clone()), "demo");

        // Make saving fail (the temp path is taken by a directory).
        std::fs::create_dir(dir.path().join("state.json.tmp")).unwrap();
        s.update(|st| st.chats.insert("oc_2".into(), "other".into()));
        assert!(s.unsaved());
        assert_eq!(s.read(|st| st.chats.len()), 2, "kept in memory");
        std::fs::remove_dir(dir.path().join("state.json.tmp")).unwrap();
        s.update(|_| ());
        assert!(!s.unsaved());
        let (again, _) = SharedState::open(dir.path()).unwrap();
        assert_eq!(again.read(|st| st.chats.len()), 2);
        let log = super::super::event_log::read_all(dir.path()).unwrap();
        let kinds: Vec<_> = log.records.iter().map(|r| r.kind.as_str()).collect();
        assert_eq!(kinds, ["state_error", "state_saved"], "{:?}", log.records);
    }
}
