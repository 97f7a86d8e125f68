//! Files waiting in the state directory for the outbox to send them (a
//! long result's output, a workspace's file, a screen's picture), private
//! to the user and synced before the entry that names them is queued.
//! Below the channels, the panes and the project actors, which all write
//! them.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Results longer than this (bytes of output) go as a summary and a file
/// by default: about what one card holds.
pub const DEFAULT_LONG_RESULT_BYTES: usize = 24 * 1024;

/// Where files wait for delivery, under the state directory.
pub const OUTBOX_FILES_DIR: &str = "outbox-files";

/// A long result's output, written where the outbox sends files from by
/// the shell before the core sees the result (the core touches no disk):
/// what the result's file message names. `uuid` names the file and its
/// outbox entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptOutput {
    pub uuid: String,
    pub path: PathBuf,
}

/// Keeps `output` as a file under `state_dir` when it is a long result
/// (over `threshold` bytes; 0 disables). None when it is short, or when
/// it cannot be written (logged: the result then goes as cards, nothing
/// is lost).
pub fn keep_long_output(state_dir: &Path, threshold: usize, output: &str) -> Option<KeptOutput> {
    if threshold == 0 || output.len() <= threshold {
        return None;
    }
    let uuid = uuid::Uuid::new_v4().to_string();
    match write_outbox_file(state_dir, &format!("{uuid}.txt"), output.as_bytes()) {
        Ok(path) => Some(KeptOutput { uuid, path }),
        Err(e) => {
            tracing::warn!(error = %e, "cannot keep a long result as a file; sending it as cards");
            None
        }
    }
}

/// Writes `bytes` where the outbox sends files from, as `name`: a 0700
/// directory and a new 0600 file (they hold what the agent printed, a
/// workspace's file, a screen's picture), synced before the outbox entry
/// that names it is queued.
pub fn write_outbox_file(state_dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = state_dir.join(OUTBOX_FILES_DIR);
    crate::store::private::create_dir(&dir)?;
    let path = dir.join(name);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    Ok(path)
}
