//! Atomic JSON files with backups: write a temp file, fsync, rename over the
//! old one, fsync the directory. The previous versions are kept as
//! `NAME.1` … `NAME.N`; a corrupt or truncated file falls back to the newest
//! good backup and says so.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::private;

/// Backups kept next to the state file: enough to survive a bad write and a
/// bad write of the fallback, cheap to rotate on every save.
pub const STATE_BACKUPS: usize = 3;

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
    #[error("cannot serialize state: {0}")]
    Serialize(#[from] serde_json::Error),
}

/// Where a loaded state came from.
#[derive(Debug, PartialEq, Eq)]
pub enum Loaded {
    /// The state file itself.
    Current,
    /// No state file yet: a fresh default.
    Fresh,
    /// The state file was unreadable; this backup was used instead.
    Backup { backup: PathBuf, problem: String },
    /// The state file and every backup were unreadable: a fresh default.
    /// The bad file is kept as `NAME.corrupt` for the operator.
    Reset { problem: String },
}

/// One JSON state file, e.g. `state.json`.
#[derive(Clone, Debug)]
pub struct StateFile {
    path: PathBuf,
}

impl StateFile {
    pub fn new(path: impl Into<PathBuf>) -> StateFile {
        StateFile { path: path.into() }
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

    /// Writes `state` atomically and rotates the backups. On failure (disk
    /// full, …) the previous file is untouched and the temp file removed.
    pub fn save<T: Serialize>(&self, state: &T) -> Result<(), StateError> {
        let bytes = serde_json::to_vec_pretty(state)?;
        let tmp = self.sibling(".tmp");
        let werr = |source| StateError::Write {
            path: self.path.clone(),
            source,
        };
        if let Err(e) = write_synced(&tmp, &bytes) {
            let _ = fs::remove_file(&tmp);
            return Err(werr(e));
        }
        if self.path.exists() {
            for n in (1..STATE_BACKUPS).rev() {
                let from = self.backup(n);
                if from.exists() {
                    fs::rename(&from, self.backup(n + 1)).map_err(werr)?;
                }
            }
            // A hard link keeps the current file in place until the rename.
            fs::hard_link(&self.path, self.backup(1)).map_err(werr)?;
        }
        fs::rename(&tmp, &self.path).map_err(werr)?;
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            File::open(dir).and_then(|d| d.sync_all()).map_err(werr)?;
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

    #[test]
    fn fresh_then_saved_then_loaded() {
        let dir = tempfile::tempdir().unwrap();
        let f = StateFile::new(dir.path().join("state.json"));
        assert_eq!(f.load::<S>().unwrap(), (S { n: 0 }, Loaded::Fresh));
        f.save(&S { n: 1 }).unwrap();
        f.save(&S { n: 2 }).unwrap();
        assert_eq!(f.load::<S>().unwrap(), (S { n: 2 }, Loaded::Current));
        assert!(!f.sibling(".tmp").exists());
        use std::os::unix::fs::MetadataExt;
        for p in [f.path().to_path_buf(), f.backup(1)] {
            assert_eq!(fs::metadata(&p).unwrap().mode() & 0o777, 0o600, "{p:?}");
        }
    }

    #[test]
    fn corrupt_or_truncated_falls_back_to_newest_good_backup() {
        let dir = tempfile::tempdir().unwrap();
        let f = StateFile::new(dir.path().join("state.json"));
        for n in 1..=5 {
            f.save(&S { n }).unwrap();
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

    #[test]
    fn failed_write_keeps_previous_state() {
        let dir = tempfile::tempdir().unwrap();
        let f = StateFile::new(dir.path().join("state.json"));
        f.save(&S { n: 7 }).unwrap();
        // Make the temp path a directory so the write fails like a full disk.
        fs::create_dir(f.sibling(".tmp")).unwrap();
        let err = f.save(&S { n: 8 }).unwrap_err();
        assert!(err.to_string().contains("previous state is kept"), "{err}");
        assert_eq!(f.load::<S>().unwrap(), (S { n: 7 }, Loaded::Current));
    }
}
