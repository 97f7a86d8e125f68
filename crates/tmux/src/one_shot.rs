//! Running one short command on a host (`tmux …`, `ssh host tmux …`) with
//! a time and a size bound: a host whose ssh never answers, or that prints
//! without end, must not hold a project (or every host's `/gsd:sessions`)
//! for ever nor fill the daemon's memory.

use std::process::ExitStatus;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;

use clawmux_text::shell::{self, ShellError};

/// Longest a one-shot command may take, connecting included: ssh's own
/// connect timeout is often minutes; a tmux command answers in
/// milliseconds, a slow ssh login in a few seconds.
pub const ONE_SHOT_TIMEOUT: Duration = Duration::from_secs(15);

/// Most bytes of a one-shot command's output kept: `list-panes` of a busy
/// server is a few kilobytes, a captured screen with its escapes well
/// under one megabyte.
pub const MAX_ONE_SHOT_OUTPUT: usize = 4 * 1024 * 1024;

/// `ssh` exits with this status when it could not connect or log in (the
/// remote command's own status otherwise).
pub const SSH_FAILED: i32 = 255;

/// Most bytes of its error output kept (it is shown in chat).
const MAX_ONE_SHOT_ERRORS: usize = 16 * 1024;

/// What a finished one-shot command gave.
#[derive(Debug)]
pub struct Output {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    /// Cut at `MAX_ONE_SHOT_ERRORS`.
    pub stderr: Vec<u8>,
}

/// Why a one-shot command gave nothing usable.
#[derive(Debug, thiserror::Error)]
pub enum OneShotError {
    #[error("cannot run it: {0}")]
    Spawn(std::io::Error),
    #[error("no answer within {} s", .0.as_secs())]
    TimedOut(Duration),
    #[error("it printed more than {} MiB", MAX_ONE_SHOT_OUTPUT / (1024 * 1024))]
    TooMuchOutput,
}

/// Runs `cmd` (stdin closed), killing it once it runs past `limit` or
/// prints more than [`MAX_ONE_SHOT_OUTPUT`].
pub async fn run(cmd: Command, limit: Duration) -> Result<Output, OneShotError> {
    run_up_to(cmd, limit, MAX_ONE_SHOT_OUTPUT).await
}

/// [`run`], keeping at most `max_output` bytes of standard output: a file
/// fetched from a host is larger than any command's answer.
pub async fn run_up_to(
    mut cmd: Command,
    limit: Duration,
    max_output: usize,
) -> Result<Output, OneShotError> {
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(OneShotError::Spawn)?;
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(OneShotError::Spawn(std::io::Error::other("no pipes")));
    };
    let finish = async {
        // Error output is read alongside, so a command that fills that
        // pipe does not stall its standard output.
        let errors = tokio::spawn(read_bounded(stderr, MAX_ONE_SHOT_ERRORS, true));
        let (stdout, whole) = read_bounded(stdout, max_output, false)
            .await
            .map_err(OneShotError::Spawn)?;
        if !whole {
            errors.abort();
            return Err(OneShotError::TooMuchOutput);
        }
        let (stderr, _) = errors
            .await
            .map_err(|e| OneShotError::Spawn(std::io::Error::other(e)))?
            .map_err(OneShotError::Spawn)?;
        let status = child.wait().await.map_err(OneShotError::Spawn)?;
        Ok(Output {
            status,
            stdout,
            stderr,
        })
    };
    // On either error the child is dropped, and so killed.
    tokio::time::timeout(limit, finish)
        .await
        .map_err(|_| OneShotError::TimedOut(limit))?
}

/// The host's command (`ssh … box tmux`) with `sh -c script sh args…` in
/// place of its last word, `tmux`, each quoted for the remote shell: a
/// short script run where the host's tmux runs. `None` for a local host
/// or one whose command does not end in a `tmux` program; an error for
/// an argument the shell cannot carry (a NUL byte).
pub fn host_shell(
    program: &[String],
    remote_shell: bool,
    script: &str,
    args: &[&str],
) -> Result<Option<Command>, ShellError> {
    let Some((last, prefix)) = program.split_last() else {
        return Ok(None);
    };
    let runs_tmux = std::path::Path::new(last)
        .file_name()
        .is_some_and(|n| n == "tmux");
    let Some((program, leading)) = prefix.split_first() else {
        return Ok(None);
    };
    if !remote_shell || !runs_tmux {
        return Ok(None);
    }
    let mut cmd = Command::new(program);
    cmd.args(leading);
    cmd.args(["sh", "-c"]);
    cmd.arg(shell::quote(script)?.as_ref());
    cmd.arg("sh");
    for arg in args {
        cmd.arg(shell::quote(arg)?.as_ref());
    }
    cmd.env("LANG", "C.UTF-8");
    Ok(Some(cmd))
}

/// Reads `from` to its end, keeping at most `max` bytes; whether it all
/// fitted. With `drain`, what is past `max` is read and dropped (error
/// output: the command must not block on a full pipe); without, reading
/// ends there (the command is then killed).
async fn read_bounded(
    mut from: impl AsyncRead + Unpin,
    max: usize,
    drain: bool,
) -> std::io::Result<(Vec<u8>, bool)> {
    let mut kept = Vec::new();
    let mut whole = true;
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = from.read(&mut chunk).await?;
        if n == 0 {
            return Ok((kept, whole));
        }
        let room = max - kept.len();
        kept.extend_from_slice(&chunk[..n.min(room)]);
        if n > room {
            whole = false;
            if !drain {
                return Ok((kept, whole));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_tmux_command_is_replaced_by_the_script() {
        let program = |words: &[&str]| words.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        let ssh = program(&["ssh", "-p", "22", "box", "tmux"]);
        let cmd = host_shell(&ssh, true, "echo 'x'", &["a b", "$(id)"])
            .unwrap()
            .unwrap();
        let args: Vec<String> = (cmd.as_std().get_args())
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(args[..5], ["-p", "22", "box", "sh", "-c"]);
        // The remote shell reads back the script and each argument whole.
        assert_eq!(
            shell::split(&args[3..].join(" ")).unwrap(),
            ["sh", "-c", "echo 'x'", "sh", "a b", "$(id)"]
        );
        assert!(matches!(
            host_shell(&ssh, true, "true", &["a\0b"]),
            Err(ShellError::Nul { .. })
        ));
        let wrapper = program(&["ssh", "box", "tmux-wrapper"]);
        assert!(host_shell(&wrapper, true, "true", &[]).unwrap().is_none());
        assert!(
            host_shell(&program(&["tmux"]), false, "true", &[])
                .unwrap()
                .is_none()
        );
        assert!(host_shell(&ssh, false, "true", &[]).unwrap().is_none());
    }

    fn sh(script: &str) -> Command {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", script]);
        cmd
    }

    #[tokio::test]
    async fn output_and_status_come_back() {
        let out = run(sh("echo out; echo err >&2; exit 3"), ONE_SHOT_TIMEOUT)
            .await
            .unwrap();
        assert_eq!(out.stdout, b"out\n");
        assert_eq!(out.stderr, b"err\n");
        assert_eq!(out.status.code(), Some(3));
    }

    #[tokio::test]
    async fn a_command_that_never_answers_is_given_up_on() {
        let limit = Duration::from_millis(200);
        let e = run(sh("sleep 30"), limit).await.unwrap_err();
        assert!(matches!(e, OneShotError::TimedOut(l) if l == limit), "{e}");
    }

    #[tokio::test]
    async fn endless_output_is_cut_at_its_bound() {
        let e = run(sh("yes"), ONE_SHOT_TIMEOUT).await.unwrap_err();
        assert!(matches!(e, OneShotError::TooMuchOutput), "{e}");
    }

    #[tokio::test]
    async fn endless_error_output_is_kept_short() {
        let out = run(
            sh("head -c 100000 /dev/zero >&2; echo done"),
            ONE_SHOT_TIMEOUT,
        )
        .await
        .unwrap();
        assert_eq!(out.stdout, b"done\n");
        assert_eq!(out.stderr.len(), MAX_ONE_SHOT_ERRORS);
    }
}
