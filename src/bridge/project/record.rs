//! The agent's own record of a turn (Claude Code's session transcript,
//! Aider's chat history) read for a project's actor without ever stalling
//! it: the file is the agent's, and a hook names it, so it can be a FIFO,
//! a file on a mount that hangs, or huge. The reads themselves take a
//! regular file only and a bounded tail of it
//! ([`crate::hooks::record_file`]); here each runs on a blocking thread
//! and is given up after [`READ_DEADLINE`], the actor going on with the
//! answer read off the screen (or the hook's own text).
//!
//! A read given up on may still hold its thread (a hung mount). At most
//! [`MAX_READS`] run at once, across every project, and a read that finds
//! none free within its deadline is given up too: a stuck file system
//! costs a few threads, never a project's commands, screens or timers.

use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::time::{Instant, sleep, timeout_at};

use crate::agents::claude_transcript::{self, Reading};
use crate::hooks::usage::{FINAL_LINE_POLL, FINAL_LINE_WAIT};

/// Longest one read of an agent's record may take, the wait for a free
/// reader included: a transcript's 8 MiB tail reads in milliseconds from a
/// local disk; past this the disk (or what is behind the path) is stuck.
pub const READ_DEADLINE: Duration = Duration::from_secs(2);

/// Reads of agents' records running at once, across every project: each
/// holds a blocking thread, and a read given up on may hold it on.
pub const MAX_READS: usize = 4;

static READS: Semaphore = Semaphore::const_new(MAX_READS);

/// Why the record was not read.
#[derive(Debug, thiserror::Error)]
pub enum Unread {
    #[error("the agent's record was not read within {READ_DEADLINE:?}")]
    TimedOut,
    #[error("the agent's record could not be read: {0}")]
    Failed(String),
}

/// `read` run on a blocking thread, within [`READ_DEADLINE`] (see the
/// module doc).
pub async fn bounded<T: Send + 'static>(
    read: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Unread> {
    within(READ_DEADLINE, read).await
}

/// [`bounded`], given up after `limit`.
async fn within<T: Send + 'static>(
    limit: Duration,
    read: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Unread> {
    let deadline = Instant::now() + limit;
    let permit = (timeout_at(deadline, READS.acquire()).await)
        .map_err(|_| Unread::TimedOut)?
        .map_err(|e| Unread::Failed(e.to_string()))?;
    let task = tokio::task::spawn_blocking(move || {
        let _held = permit;
        read()
    });
    match timeout_at(deadline, task).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(Unread::Failed(e.to_string())),
        Err(_) => Err(Unread::TimedOut),
    }
}

/// Claude Code's transcript at `path`, which must lie under one of `roots`
/// (see [`claude_transcript`]), once it holds the turn's final message
/// `last` (the `Stop` hook's `last_assistant_message`): Claude Code runs
/// its `Stop` hook before it writes that line, so it is looked for again
/// every [`FINAL_LINE_POLL`], at most [`FINAL_LINE_WAIT`]; what the file
/// holds then is read. `Err` says why nothing was read.
pub async fn transcript(
    path: PathBuf,
    roots: Vec<PathBuf>,
    last: Option<String>,
) -> Result<Reading, String> {
    let until = Instant::now() + FINAL_LINE_WAIT;
    loop {
        let (p, r) = (path.clone(), roots.clone());
        let reading = match bounded(move || claude_transcript::read(&p, &r)).await {
            Ok(Ok(reading)) => reading,
            Ok(Err(refused)) => return Err(refused.to_string()),
            Err(unread) => return Err(unread.to_string()),
        };
        let pending = (last.as_deref()).is_some_and(|l| reading.final_line_pending(l));
        if !pending || Instant::now() >= until {
            return Ok(reading);
        }
        sleep(FINAL_LINE_POLL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn line(v: serde_json::Value) -> String {
        v.to_string()
    }

    /// A `Stop` hook that came before its final line was written is held
    /// until the line is there: its figures then count both calls.
    #[tokio::test]
    async fn a_stop_waits_for_its_final_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let first = [
            line(json!({"type": "user", "message": {"role": "user", "content": "go"}})),
            line(
                json!({"type": "assistant", "message": {"id": "m1", "role": "assistant",
                "usage": {"input_tokens": 100, "output_tokens": 20}}}),
            ),
        ]
        .join("\n");
        std::fs::write(&path, format!("{first}\n")).unwrap();
        let final_line = json!({"type": "assistant", "message": {"id": "m2", "role": "assistant",
            "content": [{"type": "text", "text": "All done."}],
            "usage": {"input_tokens": 130, "output_tokens": 8}}});
        let roots = vec![dir.path().to_path_buf()];
        let read =
            |last: Option<&str>| transcript(path.clone(), roots.clone(), last.map(Into::into));
        assert_eq!(read(None).await.unwrap().usage().tokens, Some(120));
        let late = {
            let path = path.clone();
            tokio::spawn(async move {
                sleep(Duration::from_millis(150)).await;
                std::fs::write(&path, format!("{first}\n{final_line}\n")).unwrap();
            })
        };
        let reading = read(Some("All done.")).await.unwrap();
        assert_eq!(reading.usage().tokens, Some(258));
        assert_eq!(reading.answer().as_deref(), Some("All done."));
        late.await.unwrap();
    }

    /// A FIFO named as the transcript (nobody ever writes to it) is
    /// refused at once, never opened to wait for a writer.
    #[tokio::test]
    async fn a_fifo_named_as_the_transcript_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("t.jsonl");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let roots = vec![dir.path().to_path_buf()];
        let refused = transcript(fifo, roots, Some("All done.".into())).await;
        assert!(refused.is_err_and(|why| why.contains("not a readable")));
    }

    /// A read that never ends is given up at its deadline, its thread no
    /// longer waited for (the deadline short here: the test waits it out).
    #[tokio::test]
    async fn no_read_of_a_record_outlives_its_deadline() {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let stuck = within(Duration::from_millis(50), move || rx.recv().is_ok()).await;
        assert!(matches!(stuck, Err(Unread::TimedOut)), "{stuck:?}");
        drop(tx);
    }
}
