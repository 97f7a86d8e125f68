//! A file an agent writes about its own turns (Claude Code's session
//! transcript, Aider's chat history), read so that it cannot hold its
//! reader up: the path a hook names is the agent's to choose, and any
//! program the agent runs can put a FIFO there (whose `open` waits for a
//! writer for ever) or a device.
//!
//! So a record is read only when it is a regular file: checked on the path
//! before anything opens it, then opened without blocking (`O_NONBLOCK`:
//! a FIFO swapped in meanwhile opens at once instead of waiting) and
//! checked again on what was opened (`fstat`). Only its last `max` bytes
//! are read. A slow file system can still make a read slow: callers that
//! must stay responsive read on a blocking thread within a deadline.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use rustix::fs::{FileType, Mode, OFlags};

/// Why a record file was not read.
#[derive(Debug, thiserror::Error)]
pub enum RecordFileError {
    #[error("{0} is not a regular file")]
    NotRegular(PathBuf),
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl RecordFileError {
    fn io(path: &Path) -> impl FnOnce(std::io::Error) -> RecordFileError {
        let path = path.to_path_buf();
        move |source| RecordFileError::Io { path, source }
    }
}

/// The regular file at `path` opened for reading, never waiting to open
/// it (see the module doc).
pub fn open_regular(path: &Path) -> Result<File, RecordFileError> {
    // Before anything opens it: a FIFO or a device is never opened.
    let meta = std::fs::metadata(path).map_err(RecordFileError::io(path))?;
    if !meta.is_file() {
        return Err(RecordFileError::NotRegular(path.to_path_buf()));
    }
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY;
    let fd = rustix::fs::open(path, flags, Mode::empty())
        .map_err(|e| RecordFileError::io(path)(e.into()))?;
    // What was opened, which may not be what was checked.
    let stat = rustix::fs::fstat(&fd).map_err(|e| RecordFileError::io(path)(e.into()))?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(RecordFileError::NotRegular(path.to_path_buf()));
    }
    // `O_NONBLOCK` changes nothing for a regular file's reads.
    Ok(File::from(fd))
}

/// The last `max` bytes of the regular file at `path`, and whether that is
/// the whole file.
pub fn read_tail(path: &Path, max: u64) -> Result<(Vec<u8>, bool), RecordFileError> {
    let mut file = open_regular(path)?;
    let len = file.metadata().map_err(RecordFileError::io(path))?.len();
    let from = len.saturating_sub(max);
    file.seek(SeekFrom::Start(from))
        .map_err(RecordFileError::io(path))?;
    let mut tail = Vec::new();
    file.take(max)
        .read_to_end(&mut tail)
        .map_err(RecordFileError::io(path))?;
    Ok((tail, from == 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_is_read_from_its_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        std::fs::write(&path, b"0123456789").unwrap();
        assert_eq!(read_tail(&path, 4).unwrap(), (b"6789".to_vec(), false));
        assert_eq!(
            read_tail(&path, 64).unwrap(),
            (b"0123456789".to_vec(), true)
        );
        assert!(matches!(
            read_tail(&dir.path().join("gone.jsonl"), 4),
            Err(RecordFileError::Io { .. })
        ));
    }

    /// A FIFO (nobody writing to it), a directory and a device are refused
    /// at once, never opened to wait; a symlink to a regular file is read.
    #[test]
    fn anything_but_a_regular_file_is_refused_without_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("t.jsonl");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            FileType::Fifo,
            Mode::RUSR | Mode::WUSR,
            0,
        )
        .unwrap();
        for path in [
            &fifo,
            &dir.path().to_path_buf(),
            &PathBuf::from("/dev/zero"),
        ] {
            assert!(
                matches!(read_tail(path, 4), Err(RecordFileError::NotRegular(_))),
                "{}",
                path.display()
            );
        }
        let file = dir.path().join("real.jsonl");
        std::fs::write(&file, b"abc").unwrap();
        let link = dir.path().join("link.jsonl");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert_eq!(read_tail(&link, 8).unwrap().0, b"abc");
    }
}
