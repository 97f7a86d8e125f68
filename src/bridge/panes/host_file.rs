//! A file of a project's workspace read on the project's own host (an ssh
//! host), for `/gsd:file`: the same rules as on this machine (inside the
//! workspace once symlinks are resolved, a regular file, at most
//! [`MAX_SEND_FILE_BYTES`]) checked by one short script there, run the way
//! the host's tmux is run, within the host's timeout, its output bounded.

use super::workspace_file::{self as files, FileError, MAX_SEND_FILE_BYTES};
use crate::bridge::panes::agent_pane::PaneSpec;
use crate::tmux::one_shot::{self, OneShotError, SSH_FAILED};

/// `$1` the workspace, `$2` the path asked for, `$3` the size bound. Exits
/// 3 (no workspace: not there, or not an absolute path, so an empty one
/// never means the login's home), 4 (missing), 5 (outside: an absolute
/// path or a `..` component refused before anything is looked at, else
/// the resolved path), 6 (not a file), 7 (too large, its size printed),
/// else prints at most one byte past the bound (a file that grew is told
/// from one that fits). One line: a remote login shell that is not a POSIX
/// one refuses a quoted newline.
const FETCH_SCRIPT: &str = "case \"$1\" in /*) ;; *) exit 3;; esac; \
case \"$2\" in /*) exit 5;; esac; case \"/$2/\" in */../*) exit 5;; esac; \
cd -- \"$1\" 2>/dev/null || exit 3; r=$(pwd -P); \
f=$(realpath -e -- \"$2\" 2>/dev/null) || exit 4; \
case \"$f\" in \"$r\"/*) ;; *) exit 5;; esac; [ -f \"$f\" ] || exit 6; \
s=$(wc -c < \"$f\"); [ \"$s\" -le \"$3\" ] || { printf '%s' \"$s\"; exit 7; }; \
head -c \"$(($3 + 1))\" -- \"$f\"";

/// The bytes of `asked` in `spec`'s workspace on its host.
pub async fn fetch(spec: &PaneSpec, asked: &str) -> Result<Vec<u8>, FileError> {
    let shown: String = asked.chars().take(200).collect();
    let host = spec.host_name().to_string();
    let unreadable =
        |why: String| FileError::Unreadable(shown.clone(), format!("host {host}: {why}"));
    if !spec.workspace.is_absolute() {
        // An adopted pane's record has none: the script would otherwise
        // start where ssh logged in, the login's home.
        return Err(unreadable(format!(
            "the project has no workspace there ({:?} is not an absolute path)",
            spec.workspace
        )));
    }
    if files::leaves_on_its_face(asked.trim()) {
        return Err(FileError::NotInWorkspace(shown));
    }
    let workspace = spec.workspace.to_string_lossy();
    let max = MAX_SEND_FILE_BYTES.to_string();
    let cmd = one_shot::host_shell(
        &spec.program,
        spec.remote_shell,
        FETCH_SCRIPT,
        &[&workspace, asked.trim(), &max],
    )
    .map_err(|e| unreadable(e.to_string()))?
    .ok_or_else(|| {
        unreadable("its command does not end in `tmux`, so no file can be read there".into())
    })?;
    let out = match one_shot::run_up_to(cmd, spec.timeout, MAX_SEND_FILE_BYTES + 1).await {
        Ok(out) => out,
        Err(OneShotError::TooMuchOutput) => {
            return Err(unreadable("the file grew past the size bound".into()));
        }
        Err(e) => return Err(unreadable(e.to_string())),
    };
    match out.status.code() {
        Some(0) if out.stdout.len() > MAX_SEND_FILE_BYTES => {
            Err(unreadable("the file grew past the size bound".into()))
        }
        Some(0) => Ok(out.stdout),
        Some(4 | 5) => Err(FileError::NotInWorkspace(shown)),
        Some(6) => Err(FileError::NotAFile(shown)),
        Some(7) => {
            let size = String::from_utf8_lossy(&out.stdout)
                .trim()
                .parse()
                .unwrap_or(0);
            Err(FileError::TooLarge { path: shown, size })
        }
        Some(3) => Err(unreadable("the project's workspace is not there".into())),
        Some(SSH_FAILED) => Err(unreadable(format!(
            "unreachable: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))),
        _ => Err(unreadable(format!(
            "the shell failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The script, run by a local `sh` as the host's would run it.
    async fn local(workspace: &std::path::Path, asked: &str, max: usize) -> (Option<i32>, Vec<u8>) {
        let out = tokio::process::Command::new("sh")
            .args(["-c", FETCH_SCRIPT, "sh"])
            .arg(workspace)
            .arg(asked)
            .arg(max.to_string())
            .output()
            .await
            .unwrap();
        (out.status.code(), out.stdout)
    }

    #[tokio::test]
    async fn the_script_keeps_to_the_workspace_and_the_bound() {
        let (dir, ws) = files::test_workspace();
        assert_eq!(
            local(&ws, "sub/notes.txt", 100).await,
            (Some(0), b"hello".to_vec())
        );
        assert_eq!(local(&ws, "nope", 100).await.0, Some(4));
        assert_eq!(local(&ws, "../secret", 100).await.0, Some(5));
        assert_eq!(
            local(&ws, "link", 100).await.0,
            Some(5),
            "no symlink escape"
        );
        assert_eq!(local(&ws, "/etc/passwd", 100).await.0, Some(5));
        assert_eq!(local(&ws, "sub", 100).await.0, Some(6));
        assert_eq!(
            local(&ws, "sub/notes.txt", 4).await,
            (Some(7), b"5".to_vec())
        );
        assert_eq!(local(&dir.path().join("gone"), "x", 4).await.0, Some(3));
        assert_eq!(local(&ws, "sub/../../secret", 100).await.0, Some(5));
    }

    /// An empty (or relative) workspace is no workspace: the script does
    /// not read from where it happens to start (ssh's: the login's home).
    #[tokio::test]
    async fn the_script_refuses_a_workspace_that_is_not_an_absolute_path() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("id_ed25519"), b"key").unwrap();
        let in_home = |ws: &'static str| {
            let home = dir.path().to_path_buf();
            async move {
                let out = tokio::process::Command::new("sh")
                    .current_dir(&home)
                    .args(["-c", FETCH_SCRIPT, "sh", ws, "id_ed25519", "100"])
                    .output()
                    .await
                    .unwrap();
                (out.status.code(), out.stdout)
            }
        };
        assert_eq!(in_home("").await, (Some(3), Vec::new()));
        assert_eq!(in_home(".").await, (Some(3), Vec::new()));
    }

    /// The same refusal in Rust, before the host is asked at all: the
    /// host here is a port nothing listens on, so only a check made first
    /// answers about the workspace.
    #[tokio::test]
    async fn a_fetch_without_a_workspace_is_refused_before_the_host_is_asked() {
        // A port just bound and released: nothing listens on it.
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = free.local_addr().unwrap().port().to_string();
        drop(free);
        let host = crate::bridge::config::HostConfig {
            command: [
                "ssh",
                "-o",
                "BatchMode=yes",
                "-p",
                &port,
                "127.0.0.1",
                "tmux",
            ]
            .map(String::from)
            .to_vec(),
            socket: None,
            workspace_root: None,
            remote_shell: None,
            timeout_secs: None,
        };
        let tmux = crate::bridge::config::TmuxConfig::default();
        let spec = PaneSpec::on_host(
            "box",
            &host,
            &tmux,
            crate::store::state::SessionName::watch(),
        );
        let why = fetch(&spec, "id_ed25519").await.unwrap_err().to_string();
        assert!(why.contains("the project has no workspace there"), "{why}");
        let mut spec = spec;
        spec.workspace = "/srv/ws".into();
        let why = fetch(&spec, "../../etc/passwd").await.unwrap_err();
        assert_eq!(why, FileError::NotInWorkspace("../../etc/passwd".into()));
    }
}
