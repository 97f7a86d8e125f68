//! The state directory's owner. One process at a time saves the state,
//! listens on the state directory's sockets and drives the projects' panes:
//! a `serve`, or a `clawmux run` when no `serve` runs. It holds an advisory
//! lock on `state.lock` (`flock`), which the system releases when the
//! process ends, however it ends, and writes its pid in the file (and
//! `serve` when it is one), so a process that finds the directory taken can
//! say by whom (see [`StateLock::holder`]).

use std::fs::{File, TryLockError};
use std::io::{self, Read, Write};
use std::path::Path;

use super::private;

/// The lock file's name in the state directory.
pub const LOCK_FILE: &str = "state.lock";
/// The word after the pid that says the owner is a `clawmux serve`.
const SERVE_MARK: &str = "serve";
/// Longest lock file read: a pid and a word; anything longer is not ours.
const MAX_LOCK_FILE_BYTES: u64 = 64;

/// The state directory, owned while this lives.
#[derive(Debug)]
pub struct StateLock {
    _file: File,
}

/// Who owns a state directory, as its lock file says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holder {
    /// A `clawmux serve`.
    Serve { pid: u32 },
    /// Another process: a `clawmux run`, or a release that wrote no pid
    /// (`None`), or an owner that has not written it yet.
    Other { pid: Option<u32> },
}

impl StateLock {
    /// The state directory `dir` (made if missing), if no one owns it.
    pub fn try_take(dir: &Path) -> io::Result<Option<StateLock>> {
        Self::try_take_as(dir, None)
    }

    /// [`StateLock::try_take`] for a `clawmux serve`, which says so in the
    /// lock file.
    pub fn try_take_serving(dir: &Path) -> io::Result<Option<StateLock>> {
        Self::try_take_as(dir, Some(SERVE_MARK))
    }

    fn try_take_as(dir: &Path, mark: Option<&str>) -> io::Result<Option<StateLock>> {
        let file = open(dir)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => return Ok(None),
            Err(TryLockError::Error(e)) => return Err(e),
        }
        // Opened for appending: after the truncation it writes at 0.
        file.set_len(0)?;
        let mut line = std::process::id().to_string();
        if let Some(mark) = mark {
            line.push(' ');
            line.push_str(mark);
        }
        line.push('\n');
        (&file).write_all(line.as_bytes())?;
        Ok(Some(StateLock { _file: file }))
    }

    /// Who owns `dir` as its lock file says (read without the lock, so
    /// possibly just as the owner changes: [`Holder::Other`] with no pid).
    pub fn holder(dir: &Path) -> Holder {
        let mut text = String::new();
        let read = File::open(dir.join(LOCK_FILE))
            .and_then(|f| f.take(MAX_LOCK_FILE_BYTES).read_to_string(&mut text));
        if read.is_err() {
            return Holder::Other { pid: None };
        }
        let mut words = text.split_whitespace();
        let pid = words.next().and_then(|w| w.parse::<u32>().ok());
        match (pid, words.next()) {
            (Some(pid), Some(SERVE_MARK)) => Holder::Serve { pid },
            (pid, _) => Holder::Other { pid },
        }
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

    #[test]
    fn the_lock_file_says_who_owns_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let pid = std::process::id();
        assert_eq!(StateLock::holder(dir.path()), Holder::Other { pid: None });
        let run = StateLock::try_take(dir.path()).unwrap();
        assert_eq!(
            StateLock::holder(dir.path()),
            Holder::Other { pid: Some(pid) }
        );
        drop(run);
        let serve = StateLock::try_take_serving(dir.path()).unwrap();
        assert!(serve.is_some());
        assert_eq!(StateLock::holder(dir.path()), Holder::Serve { pid });
        // Taken again by a run: the serve's line is gone, not appended to.
        drop(serve);
        let _run = StateLock::try_take(dir.path()).unwrap();
        assert_eq!(
            StateLock::holder(dir.path()),
            Holder::Other { pid: Some(pid) }
        );
        std::fs::write(dir.path().join(LOCK_FILE), "x".repeat(1000)).unwrap();
        assert_eq!(StateLock::holder(dir.path()), Holder::Other { pid: None });
    }
}
