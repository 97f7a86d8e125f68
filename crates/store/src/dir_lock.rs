//! The state directory's owner. One process at a time saves the state,
//! listens on the state directory's sockets and drives the projects' panes:
//! a `serve`, or a `clawmux run` when no `serve` runs. It holds an advisory
//! lock on `state.lock` (`flock`), which the system releases when the
//! process ends, however it ends.

use std::fs::{File, TryLockError};
use std::io;
use std::path::Path;

use super::private;

/// The lock file's name in the state directory.
pub const LOCK_FILE: &str = "state.lock";

/// The state directory, owned while this lives.
#[derive(Debug)]
pub struct StateLock {
    _file: File,
}

impl StateLock {
    /// The state directory `dir` (made if missing), if no one owns it.
    pub fn try_take(dir: &Path) -> io::Result<Option<StateLock>> {
        let file = open(dir)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(StateLock { _file: file })),
            Err(TryLockError::WouldBlock) => Ok(None),
            Err(TryLockError::Error(e)) => Err(e),
        }
    }

    /// The state directory `dir`, once its owner lets it go (blocks).
    pub fn take(dir: &Path) -> io::Result<StateLock> {
        let file = open(dir)?;
        file.lock()?;
        Ok(StateLock { _file: file })
    }
}

fn open(dir: &Path) -> io::Result<File> {
    private::create_dir(dir)?;
    private::open_append(&dir.join(LOCK_FILE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_owner_at_a_time_and_the_next_once_it_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let first = StateLock::try_take(dir.path()).unwrap();
        assert!(first.is_some());
        assert!(StateLock::try_take(dir.path()).unwrap().is_none());
        drop(first);
        assert!(StateLock::try_take(dir.path()).unwrap().is_some());
    }
}
