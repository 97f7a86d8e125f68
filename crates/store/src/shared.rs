//! The daemon's one copy of [`State`], shared between its tasks. A change is
//! made in memory under a lock and counted; a saver thread writes what
//! changed since its last save to the state database (see [`super::db`]:
//! one transaction of the changed rows, so a save costs the change, not
//! the state), so no async worker ever waits on an fsync and a burst of
//! changes costs one transaction, not one each; a task that must know its
//! change is on disk before it acts (before typing into a pane) awaits
//! [`SharedState::update_durable`] or [`SharedState::flush`]. A failed
//! save (disk full) keeps the change in memory, tells the operator once,
//! and is retried with the next change. The last handle dropped writes
//! what is pending.

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};

use tokio::sync::{Notify, watch};

use super::db::{Migration, NewerSchema, OpenDbError, StateDb};
use super::state_file::Loaded;
use super::{EventLog, LogError, LogEvent, State, StateError, private};

#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    Log(#[from] LogError),
    /// A newer clawmux's database: refused, left as it is.
    #[error(transparent)]
    Newer(#[from] NewerSchema),
}

impl From<OpenDbError> for OpenError {
    fn from(e: OpenDbError) -> Self {
        match e {
            OpenDbError::State(e) => OpenError::State(e),
            OpenDbError::Newer(e) => OpenError::Newer(e),
        }
    }
}

/// What opening the state found, for the operator.
#[derive(Debug, PartialEq, Eq)]
pub struct Opened {
    /// Where the state came from.
    pub loaded: Loaded,
    /// What became of an earlier version's state file, if there was one.
    pub migration: Option<Migration>,
}

/// A cloneable handle to the state, its file, the event log, and a signal
/// that the outbox has work.
#[derive(Clone)]
pub struct SharedState {
    inner: Arc<Mutex<Inner>>,
    pub log: EventLog,
    outbox_ready: Arc<Notify>,
    saver: Arc<Saver>,
}

struct Inner {
    state: State,
    /// Changes made so far: a save of the state says which it holds.
    changes: u64,
    /// Tests: every state a change left, so they can check what a crash
    /// between two changes would find.
    #[cfg(feature = "test-support")]
    recorded: Option<Vec<State>>,
}

/// The state file's writer: a thread of its own, so the fsyncs never run
/// on an async worker. Told that a change was made, it takes a snapshot of
/// the state as it is then (which holds every change made before) and says
/// which change it got to.
struct Saver {
    queue: Arc<SaveQueue>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    attempted: watch::Receiver<u64>,
}

#[derive(Default)]
struct SaveQueue {
    slot: Mutex<Slot>,
    changed: Condvar,
}

#[derive(Default)]
struct Slot {
    /// The newest change made: a save is due while it is past `attempted`.
    wanted: u64,
    /// The newest change whose save was attempted (written, or failed).
    attempted: u64,
    /// The last save failed: the file is behind memory.
    unsaved: bool,
    /// No handle is left: write what is pending, then end.
    closed: bool,
}

impl SharedState {
    /// Opens `state.db` and `events.jsonl` in `dir`. A `state.json` of an
    /// earlier version is migrated; a corrupt database is moved aside and
    /// what can be read of it kept. Both are logged, and returned for the
    /// operator.
    pub fn open(dir: &Path) -> Result<(SharedState, Loaded), OpenError> {
        Self::open_reporting(dir).map(|(shared, opened)| (shared, opened.loaded))
    }

    /// [`SharedState::open`], with what became of an earlier version's
    /// state file: a start tells the operator (a missing database the
    /// state had been migrated into is started empty, not migrated again).
    pub fn open_reporting(dir: &Path) -> Result<(SharedState, Opened), OpenError> {
        // Checked before anything is written: a wider mode is tightened
        // (when ours) and reported once the log is open.
        let findings = private::check(dir);
        let log = EventLog::open(dir)?;
        for finding in &findings {
            tracing::warn!("{finding}");
            log.event(&LogEvent::StatePermissions {
                path: finding.path.display().to_string(),
                mode: format!("{:o}", finding.mode),
                wanted: format!("{:o}", finding.wanted),
                tightened: finding.tightened,
                problem: finding.problem.clone(),
            });
        }
        let (db, loaded, migration) = StateDb::open(dir)?;
        match &migration {
            Some(Migration::Moved(m)) => log.event(&LogEvent::StateMigrated {
                from: m.from.display().to_string(),
                kept: m.kept.display().to_string(),
                entries: m.entries as u64,
            }),
            Some(Migration::DatabaseMissing { db, kept }) => log.event(&LogEvent::StateDbMissing {
                db: db.display().to_string(),
                kept: kept.iter().map(|p| p.display().to_string()).collect(),
            }),
            None => {}
        }
        match &loaded {
            Loaded::Backup { backup, problem } => log.event(&LogEvent::StateRecovered {
                problem: problem.clone(),
                backup: backup.display().to_string(),
            }),
            Loaded::Reset { problem } => log.event(&LogEvent::StateReset {
                problem: problem.clone(),
            }),
            Loaded::Current | Loaded::Fresh => {}
        }
        let inner = Arc::new(Mutex::new(Inner {
            state: db.state().clone(),
            changes: 0,
            #[cfg(feature = "test-support")]
            recorded: None,
        }));
        let saver =
            Saver::start(inner.clone(), db, log.clone()).map_err(|source| StateError::Write {
                path: dir.join(super::db::DB_FILE),
                source,
            })?;
        let shared = SharedState {
            inner,
            log,
            outbox_ready: Arc::new(Notify::new()),
            saver: Arc::new(saver),
        };
        Ok((shared, Opened { loaded, migration }))
    }

    /// Tests: from now on every change's resulting state is kept.
    #[cfg(feature = "test-support")]
    pub fn record_changes(&self) {
        self.lock().recorded = Some(Vec::new());
    }

    /// Tests: the states the changes since [`Self::record_changes`] left.
    #[cfg(feature = "test-support")]
    pub fn recorded_changes(&self) -> Vec<State> {
        self.lock().recorded.clone().unwrap_or_default()
    }

    /// Reads the state.
    pub fn read<R>(&self, f: impl FnOnce(&State) -> R) -> R {
        f(&self.lock().state)
    }

    /// Changes the state and has it saved (by the saver thread; see
    /// [`SharedState::flush`] to wait for the disk). Wakes the outbox when
    /// it has entries.
    pub fn update<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        let mut guard = self.lock();
        let inner = &mut *guard;
        let out = f(&mut inner.state);
        #[cfg(feature = "test-support")]
        if let Some(recorded) = &mut inner.recorded {
            recorded.push(inner.state.clone());
        }
        inner.changes += 1;
        let change = inner.changes;
        let has_outbox = !inner.state.outbox.is_empty();
        drop(guard);
        self.saver.want(change);
        if has_outbox {
            self.outbox_ready.notify_one();
        }
        out
    }

    /// [`SharedState::update`], then waits until the change is on disk (or
    /// its save failed, see [`SharedState::unsaved`]): for a change that
    /// must survive a crash before the caller acts on it.
    pub async fn update_durable<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        let out = self.update(f);
        self.flush().await;
        out
    }

    /// Waits until every change made so far was written (or failed to be).
    pub async fn flush(&self) {
        let target = self.lock().changes;
        let mut attempted = self.saver.attempted.clone();
        // An error means the saver is gone: nothing more will be written.
        let _ = attempted.wait_for(|done| *done >= target).await;
    }

    /// [`SharedState::flush`] for code off the runtime (tests, shutdown).
    pub fn flush_blocking(&self) {
        let target = self.lock().changes;
        self.saver.wait_blocking(target);
    }

    /// Waits until the outbox may have work.
    pub async fn outbox_ready(&self) {
        self.outbox_ready.notified().await
    }

    /// True while the state file is behind memory (the last save failed).
    pub fn unsaved(&self) -> bool {
        self.saver.queue.lock().unsaved
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        lock_inner(&self.inner)
    }
}

fn lock_inner(inner: &Mutex<Inner>) -> std::sync::MutexGuard<'_, Inner> {
    inner.lock().unwrap_or_else(|p| p.into_inner())
}

impl SaveQueue {
    fn lock(&self) -> std::sync::MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Saver {
    fn start(inner: Arc<Mutex<Inner>>, mut db: StateDb, log: EventLog) -> std::io::Result<Saver> {
        let queue = Arc::new(SaveQueue::default());
        let (attempted_tx, attempted) = watch::channel(0);
        let q = queue.clone();
        let thread = std::thread::Builder::new()
            .name("state-saver".into())
            .spawn(move || save_loop(&q, &inner, &mut db, &log, &attempted_tx))?;
        Ok(Saver {
            queue,
            thread: Mutex::new(Some(thread)),
            attempted,
        })
    }

    /// The change `change` was made: it is to be saved.
    fn want(&self, change: u64) {
        let mut slot = self.queue.lock();
        slot.wanted = slot.wanted.max(change);
        drop(slot);
        self.queue.changed.notify_all();
    }

    fn wait_blocking(&self, target: u64) {
        let mut slot = self.queue.lock();
        while slot.attempted < target && !slot.closed {
            slot = self
                .queue
                .changed
                .wait(slot)
                .unwrap_or_else(|p| p.into_inner());
        }
    }
}

impl Drop for Saver {
    /// The last handle is gone: the last change is written before the
    /// state can be opened again.
    fn drop(&mut self) {
        self.queue.lock().closed = true;
        self.queue.changed.notify_all();
        let thread = self
            .thread
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(thread) = thread {
            let _ = thread.join();
        }
    }
}

fn save_loop(
    queue: &SaveQueue,
    inner: &Mutex<Inner>,
    db: &mut StateDb,
    log: &EventLog,
    attempted: &watch::Sender<u64>,
) {
    loop {
        let unsaved = {
            let mut slot = queue.lock();
            loop {
                if slot.wanted > slot.attempted {
                    break slot.unsaved;
                }
                if slot.closed {
                    return;
                }
                slot = queue.changed.wait(slot).unwrap_or_else(|p| p.into_inner());
            }
        };
        // The state as it is now: it holds every change made so far, so
        // changes made while the last one was written are saved together.
        // What changed is found (and copied) under the lock; the database
        // is written after it is released.
        let (change, planned) = {
            let inner = lock_inner(inner);
            (inner.changes, db.plan(&inner.state))
        };
        let now_unsaved = match planned.and_then(|p| db.write(p)) {
            Ok(_) => {
                if unsaved {
                    log.event(&LogEvent::StateSaved {
                        note: "state database written again after an error".into(),
                    });
                }
                false
            }
            Err(err) => {
                // Reported once per outage; retried with the next change.
                if !unsaved {
                    tracing::error!("{err}");
                    log.event(&LogEvent::StateError {
                        error: err.to_string(),
                    });
                }
                true
            }
        };
        {
            let mut slot = queue.lock();
            slot.attempted = change;
            slot.unsaved = now_unsaved;
        }
        queue.changed.notify_all();
        attempted.send_replace(change);
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
        s.update(|st| {
            st.chats
                .insert(crate::ids::chat("oc_1"), crate::ids::project("demo"))
        });
        s.flush_blocking();
        let (again, _) = SharedState::open(dir.path()).unwrap();
        assert_eq!(again.read(|st| st.chats["oc_1"].clone()), "demo");

        // Make saving fail: another writer holds the database's write lock
        // (longer than a save waits for it).
        let blocker = rusqlite::Connection::open(dir.path().join("state.db")).unwrap();
        blocker.execute_batch("BEGIN IMMEDIATE").unwrap();
        s.update(|st| {
            st.chats
                .insert(crate::ids::chat("oc_2"), crate::ids::project("other"))
        });
        s.flush_blocking();
        assert!(s.unsaved());
        assert_eq!(s.read(|st| st.chats.len()), 2, "kept in memory");
        s.update(|st| {
            st.chats
                .insert(crate::ids::chat("oc_3"), crate::ids::project("third"))
        });
        s.flush_blocking();
        blocker.execute_batch("ROLLBACK").unwrap();
        s.update(|_| ());
        s.flush_blocking();
        assert!(!s.unsaved());
        let (again, _) = SharedState::open(dir.path()).unwrap();
        assert_eq!(
            again.read(|st| st.chats.len()),
            3,
            "the failed saves' changes too"
        );
        let log = super::super::log_read::read_all(dir.path()).unwrap();
        let kinds: Vec<_> = log.records.iter().map(|r| r.kind.as_str()).collect();
        // One report for the failing stretch (two failed saves).
        assert_eq!(kinds, ["state_error", "state_saved"], "{:?}", log.records);
    }

    fn on_disk(dir: &Path) -> State {
        super::super::db::read(dir).unwrap().expect("a database")
    }

    #[tokio::test(flavor = "current_thread")]
    async fn durable_updates_are_on_disk_when_awaited() {
        let dir = tempfile::tempdir().unwrap();
        let (s, _) = SharedState::open(dir.path()).unwrap();
        for i in 0..200 {
            s.update(|st| {
                st.chats.insert(
                    crate::ids::chat(&format!("oc_{i}")),
                    crate::ids::project("p"),
                )
            });
        }
        s.update_durable(|st| {
            st.chats
                .insert(crate::ids::chat("last"), crate::ids::project("q"))
        })
        .await;
        let disk = on_disk(dir.path());
        assert_eq!(disk.chats.len(), 201);
        assert_eq!(disk.chats["last"], "q");
    }

    #[test]
    fn the_last_handle_writes_what_is_pending() {
        let dir = tempfile::tempdir().unwrap();
        let (s, _) = SharedState::open(dir.path()).unwrap();
        let clone = s.clone();
        s.update(|st| {
            st.chats
                .insert(crate::ids::chat("oc_1"), crate::ids::project("demo"))
        });
        drop(s);
        clone.update(|st| {
            st.chats
                .insert(crate::ids::chat("oc_2"), crate::ids::project("demo"))
        });
        drop(clone);
        assert_eq!(on_disk(dir.path()).chats.len(), 2);
    }
}
