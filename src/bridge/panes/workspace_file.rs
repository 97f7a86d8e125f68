//! A file of a project's workspace for `/gsd:file`, read on the project's
//! own host and copied for the outbox, by the daemon (the core asks with
//! `Effect::FetchFile` and hears back through `Core::file_fetched`). Only
//! a regular file inside the workspace once every symlink is resolved, at
//! most [`MAX_SEND_FILE_BYTES`]: read here, or on an ssh host by
//! [`super::host_file`]. The bytes are copied into the state directory
//! (0600) before the core queues them, so the outbox's retries send what
//! was asked for even if the workspace changes meanwhile.

use std::io::Read;
use std::path::{Component, Path, PathBuf};

use crate::bridge::outbox_files::write_outbox_file;
use crate::bridge::panes::hosts::Hosts;
use crate::feishu::api::MAX_UPLOAD_BYTES;

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

/// A file read for `/gsd:file`, copied where the outbox sends it from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedFile {
    /// The outbox entry's uuid, which names the copy too.
    pub uuid: String,
    /// The name it is sent under.
    pub name: String,
    /// The private copy (under the state directory).
    pub copy: PathBuf,
    pub size: usize,
}

/// Reads `asked` in `workspace` on `host` (none: this machine) and copies
/// it privately under `state_dir`; off the caller's loop.
pub async fn fetch(
    hosts: &Hosts,
    host: Option<&str>,
    workspace: PathBuf,
    asked: &str,
    state_dir: PathBuf,
) -> Result<FetchedFile, FileError> {
    let (name, bytes) = match host {
        Some(host) => {
            let watch = (hosts.watch(Some(host)))
                .map_err(|e| FileError::Unreadable(asked.to_string(), e.to_string()))?;
            let mut spec = watch.server_spec();
            spec.workspace = workspace;
            let bytes = super::host_file::fetch(&spec, asked).await?;
            (file_name_of(Path::new(asked.trim())), bytes)
        }
        None => {
            let asked = asked.to_string();
            blocking(move || read_local(&workspace, &asked)).await?
        }
    };
    let shown: String = asked.chars().take(200).collect();
    let size = bytes.len();
    let uuid = uuid::Uuid::new_v4().to_string();
    let named = uuid.clone();
    let copy = blocking(move || {
        write_outbox_file(&state_dir, &format!("{named}.file"), &bytes)
            .map_err(|e| FileError::Unreadable(shown, e.to_string()))
    })
    .await?;
    Ok(FetchedFile {
        uuid,
        name,
        copy,
        size,
    })
}

/// `work` on tokio's blocking threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, FileError> + Send + 'static,
) -> Result<T, FileError> {
    (tokio::task::spawn_blocking(work).await)
        .unwrap_or_else(|e| Err(FileError::Unreadable(String::new(), e.to_string())))
}

/// The name and bytes of `asked` in `workspace` on this machine.
fn read_local(workspace: &Path, asked: &str) -> Result<(String, Vec<u8>), FileError> {
    let (real, _) = resolve(workspace, asked)?;
    let bytes = read_bounded(&real)
        .map_err(|e| FileError::Unreadable(asked.chars().take(200).collect(), e.to_string()))?;
    Ok((file_name_of(&real), bytes))
}

/// The name a file is sent under.
fn file_name_of(path: &Path) -> String {
    (path.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into())
}

/// A workspace `ws` in a temporary directory: `sub/notes.txt` (`hello`),
/// and `link`, a symlink to `secret` beside the workspace.
#[cfg(test)]
pub(crate) fn test_workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    std::fs::write(ws.join("sub/notes.txt"), b"hello").unwrap();
    std::fs::write(dir.path().join("secret"), b"no").unwrap();
    std::os::unix::fs::symlink(dir.path().join("secret"), ws.join("link")).unwrap();
    (dir, ws)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_inside_the_workspace_resolve() {
        let (_dir, ws) = test_workspace();
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
