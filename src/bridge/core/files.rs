//! `/gsd:file PATH`: a file from the current project's workspace sent to
//! the chat (`im/v1/files`, through the outbox's file delivery). Only a
//! regular file inside the workspace once every symlink is resolved, at
//! most [`MAX_SEND_FILE_BYTES`], read on the project's own host: here, or
//! for a project on an ssh host there, off the daemon's loop
//! ([`crate::bridge::panes::host_file`], the answer back through
//! [`Core::file_fetched`]). The file is copied into the state directory
//! (0600) before it is queued, so the outbox retries send what was asked
//! for, even if the workspace changes meanwhile.

use crate::bridge::texts::Msg;
use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};

use super::Core;
use crate::bridge::channels::long_result::OUTBOX_FILES_DIR;
use crate::bridge::present;
use crate::bridge::present::words::said;
use crate::bridge::project::Reply;
use crate::feishu::api::MAX_UPLOAD_BYTES;
use crate::store::state::{CardHandle, ChatTarget, OutboxEntry, OutboxOp, ProjectName};
use crate::store::{Denial, LogEvent};

/// Largest file `/gsd:file` sends: Feishu's limit for file messages.
pub const MAX_SEND_FILE_BYTES: usize = MAX_UPLOAD_BYTES;

/// Why a file is not sent.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FileError {
    /// Outside the workspace or missing: one answer for both, so a chat
    /// cannot probe which paths exist on the host.
    #[error(
        "`{0}` is not in the project's workspace: no such file there, or outside it (no `..`, no absolute path; symlinks are resolved)"
    )]
    NotInWorkspace(String),
    #[error("`{0}` is not a regular file")]
    NotAFile(String),
    #[error("`{path}` is {size} bytes; at most {MAX_SEND_FILE_BYTES} bytes are sent")]
    TooLarge { path: String, size: u64 },
    #[error("cannot read `{0}`: {1}")]
    Unreadable(String, String),
}

/// The chat's words for a refused file (the catalogue's; `Display` is
/// the log's).
impl crate::bridge::present::words::ChatWords for FileError {
    fn chat_words(&self) -> crate::i18n::Text {
        match self {
            FileError::NotInWorkspace(path) => Msg::ErrNotInWorkspace.with(&[("path", path)]),
            FileError::NotAFile(path) => Msg::ErrNotAFile.with(&[("path", path)]),
            FileError::TooLarge { path, size } => Msg::ErrFileTooLarge.with(&[
                ("path", path),
                ("size", &size.to_string()),
                ("max", &MAX_SEND_FILE_BYTES.to_string()),
            ]),
            // The system's own reason, as it is.
            FileError::Unreadable(path, why) => {
                Msg::ErrUnreadable.with(&[("path", path), ("why", why)])
            }
        }
    }
}

/// Whether `asked` leaves the workspace on its face (an absolute path, a
/// `..` component): refused before anything on the host is looked at, so
/// an outside path is never stat'ed. The host script applies the same rule.
pub(crate) fn leaves_on_its_face(asked: &str) -> bool {
    Path::new(asked)
        .components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
}

/// The file `asked` names inside `workspace`, resolved: Err when it is
/// outside (through `..`, an absolute path or a symlink), missing, not a
/// file, or too large.
pub fn resolve(workspace: &Path, asked: &str) -> Result<(PathBuf, u64), FileError> {
    let shown: String = asked.chars().take(200).collect();
    let asked = asked.trim();
    if workspace.as_os_str().is_empty() {
        // Not "here": an empty path would resolve against the daemon's
        // working directory.
        return Err(FileError::Unreadable(
            shown,
            "the project has no workspace".into(),
        ));
    }
    if leaves_on_its_face(asked) {
        return Err(FileError::NotInWorkspace(shown));
    }
    let root = std::fs::canonicalize(workspace)
        .map_err(|e| FileError::Unreadable(workspace.display().to_string(), e.to_string()))?;
    let real = match std::fs::canonicalize(root.join(asked)) {
        Ok(p) if p.starts_with(&root) => p,
        _ => return Err(FileError::NotInWorkspace(shown)),
    };
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
            self.error(target, reply_to, Msg::NoProjectSelected, "/gsd:file", "");
            return;
        };
        let record = self
            .shared
            .read(|s| s.projects.get(project.as_str()).cloned());
        let Some(record) = record else {
            self.error(target, reply_to, Msg::NoSuchProject, project.as_str(), "");
            return;
        };
        if record.adopted.is_some() {
            // Someone's own terminal: its workspace is not clawmux's (an
            // adopted record has none; on an ssh host the read would start
            // in the login's home). Never served, whoever asks.
            self.log(LogEvent::Denied(Denial {
                sender: Some(sender.to_string()),
                reason: format!("/gsd:file on adopted {project}"),
                ..Default::default()
            }));
            let text = Msg::AdoptedNoFiles.with(&[("project", project.as_str())]);
            self.error(target, reply_to, Msg::FileNotSent, &text, "");
            return;
        }
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
        project: &ProjectName,
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
        project: &ProjectName,
        sender: &str,
        asked: &str,
        reply: &Reply,
        read: Result<(String, Vec<u8>), FileError>,
    ) {
        let (target, reply_to) = (&reply.target, reply.reply_to.as_deref());
        let (file_name, bytes) = match read {
            Ok(read) => read,
            Err(e) => {
                self.error(target, reply_to, Msg::FileNotSent, said(&e), "");
                return;
            }
        };
        let uuid = uuid::Uuid::new_v4().to_string();
        let copy = match store_private(&self.state_dir, &bytes, &uuid) {
            Ok(p) => p,
            Err(e) => {
                let why = FileError::Unreadable(asked.chars().take(200).collect(), e.to_string());
                self.error(target, reply_to, Msg::FileNotSent, said(&why), "");
                return;
            }
        };
        self.log(LogEvent::Command {
            project: project.clone(),
            sender: sender.to_string(),
            text: format!("/gsd:file {}", file_name),
            job: None,
        });
        let size = bytes.len();
        let size = size.to_string();
        let text = Msg::FileSize.with(&[("file", &file_name), ("size", &size)]);
        let card = present::info_card(Msg::FileTitle, text);
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
            created_ms: self.now_ms,
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
        let not_in = |asked: &str| FileError::NotInWorkspace(asked.into());
        assert_eq!(resolve(&ws, "../secret"), Err(not_in("../secret")));
        assert_eq!(
            resolve(&ws, "link"),
            Err(not_in("link")),
            "no symlink escape"
        );
        assert_eq!(resolve(&ws, "/etc/passwd"), Err(not_in("/etc/passwd")));
        assert!(matches!(resolve(&ws, "sub"), Err(FileError::NotAFile(_))));
        assert_eq!(resolve(&ws, "nope"), Err(not_in("nope")));
        assert!(matches!(
            resolve(Path::new(""), "sub/notes.txt"),
            Err(FileError::Unreadable(..))
        ));
    }

    /// An outside path gets the same answer whether it exists or not, so
    /// the host's paths cannot be probed; and it is refused on its face.
    #[test]
    fn outside_and_missing_are_one_answer() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(dir.path().join("there"), b"x").unwrap();
        std::os::unix::fs::symlink(dir.path().join("there"), ws.join("link-there")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("not-there"), ws.join("link-missing")).unwrap();
        for (exists, missing) in [
            ("../there", "../not-there"),
            ("/etc/passwd", "/etc/no-such-file"),
            ("link-there", "link-missing"),
        ] {
            let exists_answer = resolve(&ws, exists).unwrap_err().to_string();
            let missing_answer = resolve(&ws, missing).unwrap_err().to_string();
            assert_eq!(
                exists_answer.replace(exists, "PATH"),
                missing_answer.replace(missing, "PATH")
            );
        }
        assert!(leaves_on_its_face("../x") && leaves_on_its_face("a/../../x"));
        assert!(leaves_on_its_face("/etc/passwd"));
        assert!(!leaves_on_its_face("./sub/notes.txt") && !leaves_on_its_face("a..b"));
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
