//! Atomic JSON files with backups: write a temp file, fsync, rename over the
//! old one, fsync the directory. `NAME.1` is the version the last save
//! replaced; `NAME.2` … `NAME.N` are older generations, rotated at most once
//! per [`BACKUP_INTERVAL_MS`] (and at the first save of a process), so a bad
//! state written in a burst of changes cannot push every good copy out. A
//! corrupt or truncated file falls back to the newest good backup and says
//! so.
//!
//! A file more than one process changes (the pairing lists: `serve` and
//! each `clawmux pairing approve`) is read, changed and written back under
//! its lock ([`StateFile::lock`]), so no change is lost in between; and
//! every save writes its own temp file (named by the process and a count),
//! so two saves never write into one.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{clock, private};

/// Backups kept next to the state file: enough to survive a bad write and a
/// bad write of the fallback.
pub const STATE_BACKUPS: usize = 3;
/// Older generations (`NAME.2` …) rotate at most this often (milliseconds):
/// a minute, so the backups span minutes of history however busy the
/// daemon is.
pub const BACKUP_INTERVAL_MS: u64 = 60_000;
/// "Never rotated in this process."
const NEVER: u64 = u64::MAX;

/// Temp files made by this process so far: with the process id, each
/// save's own name.
static TEMP_FILES: AtomicU64 = AtomicU64::new(0);

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error(
        "cannot write {path}: {source} (the previous state is kept; fix the disk and clawmux retries on the next change)"
    )]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "cannot use {path}: {source} (the last saved state is kept; clawmux retries on the next change)"
    )]
    Database {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error("{path} cannot be read: {problem}")]
    Corrupt { path: PathBuf, problem: String },
    #[error("cannot serialize state: {0}")]
    Serialize(#[from] serde_json::Error),
    #[error("cannot lock {path}: {source}")]
    Lock {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// A state file's lock (`NAME.lock`, an advisory `flock`), held while it
/// lives: whoever reads the file to change it and write it back holds it
/// throughout. The system releases it when the process ends, however it
/// ends.
#[derive(Debug)]
pub struct FileLock {
    _file: File,
}

/// Where a loaded state came from.
#[derive(Debug, PartialEq, Eq)]
pub enum Loaded {
    /// The state file itself.
    Current,
    /// No state file yet: a fresh default.
    Fresh,
    /// The state file was unreadable; this backup was used instead. (The
    /// state database: it was moved aside to `backup`, and what could be
    /// read of it was used.)
    Backup { backup: PathBuf, problem: String },
    /// The state file and every backup were unreadable: a fresh default.
    /// The bad file is kept as `NAME.corrupt` for the operator.
    Reset { problem: String },
}

/// One JSON state file, e.g. `state.json`. Clones share when the backups
/// were last rotated.
#[derive(Clone, Debug)]
pub struct StateFile {
    path: PathBuf,
    /// When the backups were last rotated (ms, the caller's clock), or
    /// [`NEVER`].
    last_rotation: Arc<AtomicU64>,
}

impl StateFile {
    pub fn new(path: impl Into<PathBuf>) -> StateFile {
        StateFile {
            path: path.into(),
            last_rotation: Arc::new(AtomicU64::new(NEVER)),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn backup(&self, n: usize) -> PathBuf {
        let mut name = self.path.as_os_str().to_owned();
        name.push(format!(".{n}"));
        PathBuf::from(name)
    }

    fn sibling(&self, suffix: &str) -> PathBuf {
        let mut name = self.path.as_os_str().to_owned();
        name.push(suffix);
        PathBuf::from(name)
    }

    /// A temp file's name next to the file, this save's alone.
    fn temp(&self, what: &str) -> PathBuf {
        let n = TEMP_FILES.fetch_add(1, Ordering::Relaxed);
        self.sibling(&format!(".{what}.{}.{n}", std::process::id()))
    }

    /// Waits for the file's lock and takes it (see [`FileLock`]): until it
    /// is dropped, no other holder reads the file to change it.
    pub fn lock(&self) -> Result<FileLock, StateError> {
        let path = self.sibling(".lock");
        let lerr = |source| StateError::Lock {
            path: path.clone(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            private::create_dir(dir).map_err(lerr)?;
        }
        let file = private::open_append(&path).map_err(lerr)?;
        file.lock().map_err(lerr)?;
        Ok(FileLock { _file: file })
    }

    /// Loads the state, falling back to backups when the file is corrupt.
    pub fn load<T: DeserializeOwned + Default>(&self) -> Result<(T, Loaded), StateError> {
        let problem = match read_json::<T>(&self.path) {
            Ok(Some(state)) => return Ok((state, Loaded::Current)),
            Ok(None) if !(1..=STATE_BACKUPS).any(|n| self.backup(n).exists()) => {
                return Ok((T::default(), Loaded::Fresh));
            }
            Ok(None) => format!("{} is missing", self.path.display()),
            Err(Problem::Io(source)) => {
                return Err(StateError::Read {
                    path: self.path.clone(),
                    source,
                });
            }
            Err(Problem::Corrupt(msg)) => format!("{} is corrupt: {msg}", self.path.display()),
        };
        for n in 1..=STATE_BACKUPS {
            let backup = self.backup(n);
            if let Ok(Some(state)) = read_json::<T>(&backup) {
                return Ok((state, Loaded::Backup { backup, problem }));
            }
        }
        if self.path.exists() {
            let _ = fs::rename(&self.path, self.sibling(".corrupt"));
        }
        Ok((T::default(), Loaded::Reset { problem }))
    }

    /// Writes `state` (compact JSON) atomically, now by the wall clock.
    pub fn save<T: Serialize>(&self, state: &T) -> Result<(), StateError> {
        let bytes = serde_json::to_vec(state)?;
        self.save_bytes(&bytes, clock::now_ms())
    }

    /// Writes `bytes` atomically at `now_ms` (the caller's clock), rotating
    /// the backups first when [`BACKUP_INTERVAL_MS`] has passed since the
    /// last rotation. On failure (disk full, …) the previous file is
    /// untouched and the temp file removed.
    pub fn save_bytes(&self, bytes: &[u8], now_ms: u64) -> Result<(), StateError> {
        let tmp = self.temp("tmp");
        let written = write_synced(&tmp, bytes).and_then(|()| self.replace_with(&tmp, now_ms));
        written.map_err(|source| {
            let _ = fs::remove_file(&tmp);
            StateError::Write {
                path: self.path.clone(),
                source,
            }
        })
    }

    /// Puts the written temp file `tmp` in the file's place, the file
    /// itself becoming `.1` (see [`StateFile::save_bytes`]).
    fn replace_with(&self, tmp: &Path, now_ms: u64) -> std::io::Result<()> {
        if self.path.exists() {
            let last = self.last_rotation.load(Ordering::Relaxed);
            if last == NEVER || now_ms.saturating_sub(last) >= BACKUP_INTERVAL_MS {
                // `.1` becomes an older generation: .2 -> .3, .1 -> .2.
                for n in (1..STATE_BACKUPS).rev() {
                    let from = self.backup(n);
                    if from.exists() {
                        fs::rename(&from, self.backup(n + 1))?;
                    }
                }
                self.last_rotation.store(now_ms, Ordering::Relaxed);
            }
            // `.1` is always the version this save replaces. A hard link
            // keeps the current file in place until the rename below; the
            // link is made aside and renamed so `.1` is never missing.
            let link = self.temp("1.tmp");
            fs::hard_link(&self.path, &link)?;
            if let Err(e) = fs::rename(&link, self.backup(1)) {
                let _ = fs::remove_file(&link);
                return Err(e);
            }
        }
        fs::rename(tmp, &self.path)?;
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            File::open(dir).and_then(|d| d.sync_all())?;
        }
        Ok(())
    }
}

enum Problem {
    Io(std::io::Error),
    Corrupt(String),
}

fn read_json<T: DeserializeOwned>(path: &Path) -> Result<Option<T>, Problem> {
    match fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| Problem::Corrupt(e.to_string())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Problem::Io(e)),
    }
}

fn write_synced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        private::create_dir(dir)?;
    }
    // The state holds chat ids, card text and pending approvals: 0600.
    let mut f = private::create(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Default, Debug, PartialEq, Serialize, Deserialize)]
    struct S {
        n: u32,
    }

    fn save_at(f: &StateFile, n: u32, now_ms: u64) {
        f.save_bytes(&serde_json::to_vec(&S { n }).unwrap(), now_ms)
            .unwrap();
    }

    fn backup_of(f: &StateFile, i: usize) -> Option<u32> {
        read_json::<S>(&f.backup(i)).ok().flatten().map(|s| s.n)
    }

    #[test]
    fn backups_are_generations_at_most_a_minute_apart() {
        let dir = tempfile::tempdir().unwrap();
        let f = StateFile::new(dir.path().join("state.json"));
        let t0 = 1_000_000;
        save_at(&f, 1, t0);
        save_at(&f, 2, t0 + 10);
        // A burst of changes within the minute: `.1` follows the last
        // save, the older generations are left alone.
        for n in 3..=50 {
            save_at(&f, n, t0 + 20 + u64::from(n));
        }
        assert_eq!((backup_of(&f, 1), backup_of(&f, 2)), (Some(49), None));
        save_at(&f, 51, t0 + 10 + BACKUP_INTERVAL_MS);
        assert_eq!((backup_of(&f, 1), backup_of(&f, 2)), (Some(50), Some(49)));
        save_at(&f, 52, t0 + 10 + BACKUP_INTERVAL_MS + 1);
        save_at(&f, 53, t0 + 10 + 2 * BACKUP_INTERVAL_MS);
        assert_eq!(
            (backup_of(&f, 1), backup_of(&f, 2), backup_of(&f, 3)),
            (Some(52), Some(51), Some(49))
        );
        assert!(!f.sibling(".1.tmp").exists());
        assert_eq!(f.load::<S>().unwrap(), (S { n: 53 }, Loaded::Current));
        // Compact JSON.
        assert_eq!(fs::read(f.path()).unwrap(), br#"{"n":53}"#);
    }

    #[test]
    fn fresh_then_saved_then_loaded() {
        let dir = tempfile::tempdir().unwrap();
        let f = StateFile::new(dir.path().join("state.json"));
        assert_eq!(f.load::<S>().unwrap(), (S { n: 0 }, Loaded::Fresh));
        f.save(&S { n: 1 }).unwrap();
        f.save(&S { n: 2 }).unwrap();
        assert_eq!(f.load::<S>().unwrap(), (S { n: 2 }, Loaded::Current));
        assert_eq!(temp_files(dir.path()), Vec::<String>::new());
        use std::os::unix::fs::MetadataExt;
        for p in [f.path().to_path_buf(), f.backup(1)] {
            assert_eq!(fs::metadata(&p).unwrap().mode() & 0o777, 0o600, "{p:?}");
        }
    }

    #[test]
    fn corrupt_or_truncated_falls_back_to_newest_good_backup() {
        let dir = tempfile::tempdir().unwrap();
        let f = StateFile::new(dir.path().join("state.json"));
        // A save a minute: every save makes a generation.
        for n in 1..=5 {
            save_at(&f, n, u64::from(n) * BACKUP_INTERVAL_MS);
        }
        let full = fs::read(f.path()).unwrap();
        fs::write(f.path(), &full[..full.len() / 2]).unwrap();
        let (s, how) = f.load::<S>().unwrap();
        assert_eq!(s, S { n: 4 });
        assert!(
            matches!(how, Loaded::Backup { ref problem, .. } if problem.contains("corrupt")),
            "{how:?}"
        );

        // Every copy bad: a fresh state, and the bad file kept for the operator.
        for p in [
            f.path().to_path_buf(),
            f.backup(1),
            f.backup(2),
            f.backup(3),
        ] {
            fs::write(p, b"{garbage").unwrap();
        }
        let (s, how) = f.load::<S>().unwrap();
        assert_eq!(s, S::default());
        assert!(matches!(how, Loaded::Reset { .. }));
        assert!(f.sibling(".corrupt").exists());
    }

    #[test]
    fn missing_file_with_backups_uses_backup() {
        let dir = tempfile::tempdir().unwrap();
        let f = StateFile::new(dir.path().join("state.json"));
        f.save(&S { n: 1 }).unwrap();
        f.save(&S { n: 2 }).unwrap();
        fs::remove_file(f.path()).unwrap();
        assert_eq!(f.load::<S>().unwrap().0, S { n: 1 });
    }

    /// The names of the temp files left in `dir`.
    fn temp_files(dir: &Path) -> Vec<String> {
        let names = fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name());
        (names.map(|n| n.to_string_lossy().into_owned()))
            .filter(|n| n.contains(".tmp"))
            .collect()
    }

    #[test]
    fn failed_write_keeps_previous_state() {
        let dir = tempfile::tempdir().unwrap();
        let f = StateFile::new(dir.path().join("state.json"));
        save_at(&f, 6, 1_000);
        save_at(&f, 7, 1_001);
        // `.1` a directory with something in it (and no rotation due to
        // move it): the save fails after its temp file was written, as on
        // a full disk.
        fs::remove_file(f.backup(1)).unwrap();
        fs::create_dir(f.backup(1)).unwrap();
        fs::write(f.backup(1).join("x"), b"x").unwrap();
        let bytes = serde_json::to_vec(&S { n: 8 }).unwrap();
        let err = f.save_bytes(&bytes, 1_002).unwrap_err();
        assert!(err.to_string().contains("previous state is kept"), "{err}");
        assert_eq!(f.load::<S>().unwrap(), (S { n: 7 }, Loaded::Current));
        assert_eq!(temp_files(dir.path()), Vec::<String>::new(), "removed");
    }

    /// Writers of one file, each with its own handle (as processes have),
    /// changing it under its lock at once: no change is lost.
    #[test]
    fn changes_under_the_lock_are_never_lost() {
        const WRITERS: u32 = 8;
        const CHANGES: u32 = 10;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("allowed.json");
        std::thread::scope(|scope| {
            for _ in 0..WRITERS {
                let f = StateFile::new(&path);
                scope.spawn(move || {
                    for _ in 0..CHANGES {
                        let _lock = f.lock().unwrap();
                        let (s, _) = f.load::<S>().unwrap();
                        f.save(&S { n: s.n + 1 }).unwrap();
                    }
                });
            }
        });
        let f = StateFile::new(&path);
        assert_eq!(
            f.load::<S>().unwrap().0,
            S {
                n: WRITERS * CHANGES
            }
        );
        assert_eq!(temp_files(dir.path()), Vec::<String>::new());
        use std::os::unix::fs::MetadataExt;
        let lock = fs::metadata(f.sibling(".lock")).unwrap();
        assert_eq!(lock.mode() & 0o777, 0o600);
    }

    /// Two saves of one file at once each write their own temp file.
    #[test]
    fn each_save_has_its_own_temp_file() {
        let f = StateFile::new("/nonexistent/state.json");
        assert_ne!(f.temp("tmp"), f.temp("tmp"));
        let name = f.temp("tmp").display().to_string();
        let pid = format!(".tmp.{}.", std::process::id());
        assert!(name.contains(&pid), "{name}");
    }
}
