//! `/gsd:file PATH`: a file from the current project's workspace sent to
//! the chat (`im/v1/files`, through the outbox's file delivery). Only a
//! regular file inside the workspace once every symlink is resolved, at
//! most [`MAX_SEND_FILE_BYTES`], read on the project's own host: here, or
//! for a project on an ssh host there, off the daemon's loop
//! ([`crate::bridge::panes::host_file`], the answer back through
//! [`Core::file_fetched`]). The file is copied into the state directory
//! (0600) before it is queued, so the outbox retries send what was asked
//! for, even if the workspace changes meanwhile.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use super::Core;
use crate::bridge::channels::long_result::OUTBOX_FILES_DIR;
use crate::bridge::present;
use crate::bridge::project::Reply;
use crate::feishu::api::MAX_UPLOAD_BYTES;
use crate::store::LogEvent;
use crate::store::clock;
use crate::store::state::{CardHandle, ChatTarget, OutboxEntry, OutboxOp};

/// Largest file `/gsd:file` sends: Feishu's limit for file messages.
pub const MAX_SEND_FILE_BYTES: usize = MAX_UPLOAD_BYTES;

/// Why a file is not sent.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FileError {
    #[error("`{0}` is not in the project's workspace (paths are resolved, symlinks included)")]
    Outside(String),
    #[error("`{0}` does not exist in the project's workspace")]
    Missing(String),
    #[error("`{0}` is not a regular file")]
    NotAFile(String),
    #[error("`{path}` is {size} bytes; at most {MAX_SEND_FILE_BYTES} bytes are sent")]
    TooLarge { path: String, size: u64 },
    #[error("cannot read `{0}`: {1}")]
    Unreadable(String, String),
}

/// The file `asked` names inside `workspace`, resolved: Err when it is
/// outside (through `..` or a symlink), missing, not a file, or too large.
pub fn resolve(workspace: &Path, asked: &str) -> Result<(PathBuf, u64), FileError> {
    let shown: String = asked.chars().take(200).collect();
    let root = std::fs::canonicalize(workspace)
        .map_err(|e| FileError::Unreadable(workspace.display().to_string(), e.to_string()))?;
    let wanted = root.join(asked.trim());
    let real = match std::fs::canonicalize(&wanted) {
        Ok(p) => p,
        Err(_) => return Err(FileError::Missing(shown)),
    };
    if !real.starts_with(&root) {
        return Err(FileError::Outside(shown));
    }
    let meta = std::fs::metadata(&real)
        .map_err(|e| FileError::Unreadable(shown.clone(), e.to_string()))?;
    if !meta.is_file() {
        return Err(FileError::NotAFile(shown));
    }
    if meta.len() > MAX_SEND_FILE_BYTES as u64 {
        return Err(FileError::TooLarge {
            path: shown,
            size: meta.len(),
        });
    }
    Ok((real, meta.len()))
}

/// The bytes of `from`, at most [`MAX_SEND_FILE_BYTES`].
fn read_bounded(from: &Path) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    std::fs::File::open(from)?
        .take(MAX_SEND_FILE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() > MAX_SEND_FILE_BYTES {
        return Err(std::io::Error::other("the file grew past the size bound"));
    }
    Ok(bytes)
}

/// Writes `bytes` into the outbox's private directory under `state_dir`.
fn store_private(state_dir: &Path, bytes: &[u8], uuid: &str) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let dir = state_dir.join(OUTBOX_FILES_DIR);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)?;
    let path = dir.join(format!("{uuid}.file"));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    Ok(path)
}

impl Core {
    /// `/gsd:file PATH` in the current project.
    pub(super) fn send_file(
        &mut self,
        target: &ChatTarget,
        reply_to: Option<&str>,
        sender: &str,
        asked: &str,
    ) {
        let Some(project) = self.current_project(target) else {
            self.error(target, reply_to, "No project selected", "/gsd:file", "");
            return;
        };
        let record = self.shared.read(|s| s.projects.get(&project).cloned());
        let Some(record) = record else {
            self.error(target, reply_to, "No such project", &project, "");
            return;
        };
        if let Some(host) = record.host.clone() {
            // Read there, off this loop; the answer comes to `file_fetched`.
            self.effects.push(super::Effect::FetchFile {
                project,
                host,
                workspace: record.workspace.clone(),
                asked: asked.to_string(),
                sender: sender.to_string(),
                reply: Reply {
                    target: target.clone(),
                    reply_to: reply_to.map(String::from),
                },
            });
            return;
        }
        let read = resolve(Path::new(&record.workspace), asked).and_then(|(real, _)| {
            let bytes = read_bounded(&real).map_err(|e| {
                FileError::Unreadable(asked.chars().take(200).collect(), e.to_string())
            })?;
            Ok((file_name_of(&real), bytes))
        });
        let reply = Reply {
            target: target.clone(),
            reply_to: reply_to.map(String::from),
        };
        self.queue_file(&project, sender, asked, &reply, read);
    }

    /// What the project's host gave for `/gsd:file asked`.
    pub(crate) fn file_fetched(
        &mut self,
        project: &str,
        sender: &str,
        asked: &str,
        reply: &Reply,
        fetched: Result<Vec<u8>, FileError>,
    ) {
        let read = fetched.map(|bytes| (file_name_of(Path::new(asked.trim())), bytes));
        self.queue_file(project, sender, asked, reply, read);
    }

    /// Stores a file read for `/gsd:file` privately and queues it, or says
    /// why it is not sent.
    fn queue_file(
        &mut self,
        project: &str,
        sender: &str,
        asked: &str,
        reply: &Reply,
        read: Result<(String, Vec<u8>), FileError>,
    ) {
        let (target, reply_to) = (&reply.target, reply.reply_to.as_deref());
        let (file_name, bytes) = match read {
            Ok(read) => read,
            Err(e) => {
                self.error(target, reply_to, "File not sent", &e.to_string(), "");
                return;
            }
        };
        let uuid = uuid::Uuid::new_v4().to_string();
        let copy = match store_private(&self.state_dir, &bytes, &uuid) {
            Ok(p) => p,
            Err(e) => {
                let why = FileError::Unreadable(asked.chars().take(200).collect(), e.to_string());
                self.error(target, reply_to, "File not sent", &why.to_string(), "");
                return;
            }
        };
        self.log(LogEvent::Command {
            project: project.to_string(),
            sender: sender.to_string(),
            text: format!("/gsd:file {}", file_name),
            job: None,
        });
        let size = bytes.len();
        let card = present::info_card("File", &format!("`{file_name}` ({size} bytes)"));
        let entry = OutboxEntry {
            uuid,
            op: OutboxOp::File {
                target: target.clone(),
                handle: CardHandle::random(),
                reply_to: reply_to.map(String::from),
                path: copy.display().to_string(),
                file_name,
            },
            card: serde_json::Value::Null,
            text: card.to_text(),
            created_ms: clock::now_ms(),
        };
        self.shared.update(|s| s.outbox.push_back(entry));
    }
}

/// The name a file is sent under.
fn file_name_of(path: &Path) -> String {
    (path.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_inside_the_workspace_resolve() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        std::fs::write(ws.join("sub/notes.txt"), b"hello").unwrap();
        std::fs::write(dir.path().join("secret"), b"no").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret"), ws.join("link")).unwrap();
        let (p, size) = resolve(&ws, "sub/notes.txt").unwrap();
        assert!(p.ends_with("sub/notes.txt") && size == 5);
        assert!(matches!(
            resolve(&ws, "../secret"),
            Err(FileError::Outside(_))
        ));
        assert!(
            matches!(resolve(&ws, "link"), Err(FileError::Outside(_))),
            "no symlink escape"
        );
        assert!(matches!(
            resolve(&ws, "/etc/passwd"),
            Err(FileError::Outside(_))
        ));
        assert!(matches!(resolve(&ws, "sub"), Err(FileError::NotAFile(_))));
        assert!(matches!(resolve(&ws, "nope"), Err(FileError::Missing(_))));
    }

    #[test]
    fn a_file_past_the_bound_is_refused_and_never_copied_whole() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let limit = MAX_SEND_FILE_BYTES as u64;
        // Sparse: the bound is checked without reading the file.
        let at_limit = std::fs::File::create(ws.join("fits.bin")).unwrap();
        at_limit.set_len(limit).unwrap();
        let (fits, size) = resolve(&ws, "fits.bin").unwrap();
        assert_eq!(size, limit);
        let big = std::fs::File::create(ws.join("big.bin")).unwrap();
        big.set_len(limit + 1).unwrap();
        assert!(
            matches!(resolve(&ws, "big.bin"), Err(FileError::TooLarge { .. })),
            "one byte over"
        );
        // A file that grew after it was resolved is cut off at the read.
        at_limit.set_len(limit + 1).unwrap();
        assert!(read_bounded(&fits).is_err());
    }
}
