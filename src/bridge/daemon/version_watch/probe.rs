//! Asking a project's Claude Code for its release, as the pane would run
//! it: the agent command's own words up to its program (`env K=V …`
//! kept), then `--version`, within [`VERSION_PROBE_BUDGET`] and reading at
//! most [`MAX_PROBE_OUTPUT_BYTES`].

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;

use crate::agents::claude::AUTOUPDATER_OFF;

/// Longest `claude --version` may take: it answers in well under a
/// second, but the first start of a 400 MB binary from a cold disk can
/// take a few; a hung program must not hold a probe for ever.
pub(super) const VERSION_PROBE_BUDGET: Duration = Duration::from_secs(15);

/// Most bytes of `--version`'s output read: the release is its first
/// word (`2.1.337 (Claude Code)`); a program that prints more is not
/// read further.
const MAX_PROBE_OUTPUT_BYTES: u64 = 4096;

/// Why a probe found no release.
#[derive(Debug, thiserror::Error)]
pub(super) enum ProbeError {
    #[error("cannot run {program}: {source}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{program} --version did not answer within {} s", VERSION_PROBE_BUDGET.as_secs())]
    TimedOut { program: String },
    #[error("{program} --version printed no release: {printed:?}")]
    NoRelease { program: String, printed: String },
}

/// Runs `probe` (a [`crate::agents::claude::version_probe`] command line)
/// and reads the release from its first word (`2.1.337`).
pub(super) async fn release(probe: &[String]) -> Result<String, ProbeError> {
    let (program, args) = probe.split_first().ok_or_else(|| ProbeError::NoRelease {
        program: String::new(),
        printed: String::new(),
    })?;
    let spawn = |source| ProbeError::Spawn {
        program: program.clone(),
        source,
    };
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .env(AUTOUPDATER_OFF.0, AUTOUPDATER_OFF.1)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(spawn)?;
    let Some(stdout) = child.stdout.take() else {
        return Err(ProbeError::NoRelease {
            program: program.clone(),
            printed: String::new(),
        });
    };
    let read = async {
        let mut out = Vec::new();
        stdout
            .take(MAX_PROBE_OUTPUT_BYTES)
            .read_to_end(&mut out)
            .await
            .map(|_| out)
    };
    let out = match tokio::time::timeout(VERSION_PROBE_BUDGET, read).await {
        Ok(read) => read.map_err(spawn)?,
        Err(_) => {
            return Err(ProbeError::TimedOut {
                program: program.clone(),
            });
        }
    };
    // Killed on drop if it is still running (it printed past the bound).
    drop(child);
    let printed = String::from_utf8_lossy(&out);
    release_in(&printed).ok_or_else(|| ProbeError::NoRelease {
        program: program.clone(),
        printed: printed.trim().chars().take(80).collect(),
    })
}

/// The release `--version` printed: its first word, when that is made of
/// digits and dots (`2.1.337 (Claude Code)` → `2.1.337`).
pub(super) fn release_in(printed: &str) -> Option<String> {
    let word = printed.split_whitespace().next()?;
    let numbered = word.starts_with(|c: char| c.is_ascii_digit())
        && word.chars().all(|c| c.is_ascii_digit() || c == '.');
    numbered.then(|| word.to_owned())
}

/// The file the probe's program word names: itself when it has a `/`,
/// else the first such file in `path` (`PATH`, as the pane inherits it).
pub(super) fn resolve(program: &str, path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    if program.contains('/') {
        return Some(PathBuf::from(program)).filter(|p| p.is_file());
    }
    std::env::split_paths(path?)
        .map(|dir| dir.join(program))
        .find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_release_is_the_first_word_when_it_is_numbered() {
        assert_eq!(
            release_in("2.1.337 (Claude Code)\n").as_deref(),
            Some("2.1.337")
        );
        assert_eq!(release_in("  2.1.197\n").as_deref(), Some("2.1.197"));
        for not in ["", "claude: not found", "v2.1.337", "2.1.337-beta (x)"] {
            assert_eq!(release_in(not), None, "{not:?}");
        }
    }

    #[tokio::test]
    async fn a_probe_reads_the_release_and_names_what_went_wrong() {
        let dir = tempfile::tempdir().unwrap();
        let script = |name: &str, body: &str| {
            use std::os::unix::fs::PermissionsExt;
            let path = dir.path().join(name);
            std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
            path.display().to_string()
        };
        let good = script(
            "good",
            r#"[ "$1" = --version ] && echo "9.9.9 (Claude Code)""#,
        );
        assert_eq!(release(&[good, "--version".into()]).await.unwrap(), "9.9.9");
        let chatty = script("chatty", "echo 'Claude Code, the best'");
        let e = release(&[chatty, "--version".into()]).await.unwrap_err();
        assert!(matches!(e, ProbeError::NoRelease { .. }), "{e}");
        let missing = dir.path().join("missing").display().to_string();
        let e = release(&[missing, "--version".into()]).await.unwrap_err();
        assert!(matches!(e, ProbeError::Spawn { .. }), "{e}");
        let found = resolve("good", Some(dir.path().as_os_str()));
        assert_eq!(found, Some(dir.path().join("good")));
        assert_eq!(resolve("nothing", Some(dir.path().as_os_str())), None);
    }
}
