//! Aider's own record of a turn: `.aider.chat.history.md`, the markdown log
//! Aider appends to in its git repository's top directory. A turn's answer
//! is read from it as Aider wrote it (markdown kept), not off the screen,
//! where Aider renders the markdown (bold without its asterisks, code
//! without its fences) and redraws the answer at every streamed piece.
//!
//! The file's shape (Aider 0.86.2, `aider/io.py`):
//! - what the user typed: each line prefixed `#### `, the lines joined by
//!   two trailing spaces (a markdown line break);
//! - the model's reply, written whole once its stream ends: a blank line,
//!   the text (stripped), a blank line;
//! - Aider's own notes (errors, `Retrying in …`, answered questions,
//!   `Applied edit to …`, the token count): `> ` + one line + two trailing
//!   spaces each. The token note (`> Tokens: … sent, … received.`) comes
//!   after the reply, so a reply followed by it was written whole.
//!
//! Reading is bounded ([`MAX_HISTORY_TAIL_BYTES`] from the end, a regular
//! file only) and never fatal: a missing, unreadable, cut or foreign file
//! gives no answer, and the caller keeps the answer it read off the screen.

use std::path::{Path, PathBuf};

/// The history file's name, in the repository's top directory (Aider's
/// default `--chat-history-file`).
pub const HISTORY_FILE: &str = ".aider.chat.history.md";

/// Most bytes read from the end of the history file (256 KiB): the file
/// grows with every session Aider ever ran in the repository, while one
/// turn's reply and notes are a few KiB; a reply longer than this is
/// read off the screen instead.
pub const MAX_HISTORY_TAIL_BYTES: u64 = 256 * 1024;

/// Most directories looked at from the workspace upwards for the history
/// file: Aider writes it at the git repository's top, which a workspace
/// inside a repository lies under.
const MAX_PARENT_DIRS: usize = 16;

/// The prefix Aider writes before each line the user typed.
const USER_PREFIX: &str = "#### ";

/// The prefix of Aider's own notes in the file.
const NOTE_PREFIX: &str = "> ";

/// The note Aider writes after a finished reply (its token count).
const TOKENS_NOTE: &str = "> Tokens: ";

/// Why the record gave no answer (the caller falls back to the screen).
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("no {HISTORY_FILE} in {0} or a directory above it")]
    Missing(PathBuf),
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}: the last reply is not valid UTF-8")]
    NotUtf8(PathBuf),
    #[error("{0}: no finished reply to the command in its last {MAX_HISTORY_TAIL_BYTES} bytes")]
    NoReply(PathBuf),
}

/// The reply Aider recorded to `asked`, the command typed for the turn
/// that just ended, from the history file of the repository `workspace`
/// is in.
pub fn read_reply(workspace: &Path, asked: &str) -> Result<String, HistoryError> {
    let path = find(workspace).ok_or_else(|| HistoryError::Missing(workspace.to_path_buf()))?;
    let tail = read_tail(&path).map_err(|source| HistoryError::Read {
        path: path.clone(),
        source,
    })?;
    let text = tail_text(&tail).ok_or_else(|| HistoryError::NotUtf8(path.clone()))?;
    last_reply(text, asked).ok_or(HistoryError::NoReply(path))
}

/// The history file in `workspace` or the nearest directory above it
/// that has one, stopping at a repository's top (`.git`).
fn find(workspace: &Path) -> Option<PathBuf> {
    for dir in workspace.ancestors().take(MAX_PARENT_DIRS) {
        let file = dir.join(HISTORY_FILE);
        if file.is_file() {
            return Some(file);
        }
        if dir.join(".git").exists() {
            return None;
        }
    }
    None
}

/// The last [`MAX_HISTORY_TAIL_BYTES`] of the file at `path`, a regular
/// file (a FIFO put there is refused, never opened to wait on: see
/// [`clawmux_hooks::record_file`]).
fn read_tail(path: &Path) -> std::io::Result<Vec<u8>> {
    clawmux_hooks::record_file::read_tail(path, MAX_HISTORY_TAIL_BYTES)
        .map(|(tail, _)| tail)
        .map_err(std::io::Error::other)
}

/// The tail as text from its first whole line on (the cut may fall inside
/// a line, or inside a character); `None` when what follows is not UTF-8.
fn tail_text(tail: &[u8]) -> Option<&str> {
    let from = match tail.iter().position(|b| *b == b'\n') {
        Some(nl) if tail.len() as u64 >= MAX_HISTORY_TAIL_BYTES => nl + 1,
        _ => 0,
    };
    std::str::from_utf8(&tail[from..]).ok()
}

/// Whether `line` is one of Aider's own notes rather than reply text.
fn is_note(line: &str) -> bool {
    line.starts_with(NOTE_PREFIX) && line.ends_with("  ")
}

/// Text with each run of whitespace one space, for comparing what was
/// typed with what Aider recorded.
fn squeeze(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The reply to the last user entry of `history`, if that entry is
/// `asked` and the reply was written whole (the token note follows it).
/// Several replies in one turn (Aider answering its own reflection) are
/// joined by a blank line.
pub fn last_reply(history: &str, asked: &str) -> Option<String> {
    let lines: Vec<&str> = history.lines().collect();
    let last_user = lines.iter().rposition(|l| l.starts_with(USER_PREFIX))?;
    let first_user = lines[..last_user]
        .iter()
        .rposition(|l| !l.starts_with(USER_PREFIX))
        .map_or(0, |i| i + 1);
    let entry: Vec<&str> = lines[first_user..=last_user]
        .iter()
        .map(|l| l.trim_start_matches(USER_PREFIX))
        .collect();
    if squeeze(&entry.join("\n")) != squeeze(asked) {
        return None;
    }
    let after = &lines[last_user + 1..];
    let tokens = after.iter().rposition(|l| l.starts_with(TOKENS_NOTE))?;
    let mut replies: Vec<String> = Vec::new();
    let mut block: Vec<&str> = Vec::new();
    for line in &after[..tokens] {
        if is_note(line) {
            push_block(&mut replies, &mut block);
        } else {
            block.push(line);
        }
    }
    push_block(&mut replies, &mut block);
    (!replies.is_empty()).then(|| replies.join("\n\n"))
}

/// Adds the reply text gathered in `block` (if any) to `replies`.
fn push_block(replies: &mut Vec<String>, block: &mut Vec<&str>) {
    let text = block.join("\n");
    let text = text.trim_matches('\n').trim_end();
    if !text.trim().is_empty() {
        replies.push(text.to_owned());
    }
    block.clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A history as Aider 0.86.2 writes it: a session's banner, a turn
    /// with a retried 429 then the reply, a turn with an edit.
    const HISTORY: &str = "\n# aider chat started at 2026-12-04 08:00:00\n\n\
> /opt/aider --model openai/fake-model  \n\
> Aider v0.86.2  \n\
> Model: openai/fake-model with diff edit format  \n\n\
#### what does the shop sell?  \n\n\
> litellm.RateLimitError: RateLimitError: OpenAIException - slow down  \n\
> Retrying in 0.2 seconds...  \n\n\
The shop sells **plums**.\n\n\
- fresh\n\
- cheap\n\n\
> Tokens: 2.5k sent, 24 received.  \n\n\
#### write the  \n\
#### notes  \n\n\
notes.txt\n\
```\n\
<<<<<<< SEARCH\n\
=======\n\
hello\n\
>>>>>>> REPLACE\n\
```\n\n\
> Tokens: 2.6k sent, 30 received.  \n\
> notes.txt  \n\
> Create new file? (Y)es/(N)o [Yes]: y  \n\
> Applied edit to notes.txt  \n\
> Commit 1a2b3c4 feat: add notes  \n";

    #[test]
    fn the_last_reply_is_read_with_its_markdown() {
        assert_eq!(
            last_reply(HISTORY, "write the\nnotes").as_deref(),
            Some("notes.txt\n```\n<<<<<<< SEARCH\n=======\nhello\n>>>>>>> REPLACE\n```")
        );
        let first = HISTORY.split("#### write").next().unwrap_or_default();
        assert_eq!(
            last_reply(first, "what does the shop sell?").as_deref(),
            Some("The shop sells **plums**.\n\n- fresh\n- cheap"),
            "the retried error's notes are not the reply"
        );
    }

    #[test]
    fn another_command_or_an_unfinished_reply_gives_no_answer() {
        assert_eq!(last_reply(HISTORY, "what does the shop sell?"), None);
        assert_eq!(last_reply("", "hi"), None);
        // The reply written, the token note not yet: it may be cut.
        let cut = "#### hi  \n\nThe shop sells pl";
        assert_eq!(last_reply(cut, "hi"), None);
        // An error turn: notes only.
        let failed =
            "#### hi  \n\n> litellm.BadRequestError: no  \n> Tokens: 1k sent, 0 received.  \n";
        assert_eq!(last_reply(failed, "hi"), None);
    }

    #[test]
    fn the_file_is_found_above_the_workspace_and_read_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        let sub = repo.join("web/app");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        assert!(matches!(
            read_reply(&sub, "hi"),
            Err(HistoryError::Missing(_))
        ));
        // A long history: only its tail is read, the answer is still there.
        let old = "#### old  \n\nold reply\n\n> Tokens: 1 sent, 1 received.  \n".repeat(20_000);
        assert!(old.len() as u64 > 2 * MAX_HISTORY_TAIL_BYTES);
        let text =
            format!("{old}#### hi  \n\nhello **there**\n\n> Tokens: 1 sent, 2 received.  \n");
        std::fs::write(repo.join(HISTORY_FILE), &text).unwrap();
        assert_eq!(read_reply(&sub, "hi").unwrap(), "hello **there**");
        assert!(matches!(
            read_reply(&sub, "other"),
            Err(HistoryError::NoReply(_))
        ));
        // A reply longer than the bound is not read (the screen has it).
        let long = format!(
            "#### hi  \n\n{}\n\n> Tokens: 1 sent, 2 received.  \n",
            "x".repeat(MAX_HISTORY_TAIL_BYTES as usize)
        );
        std::fs::write(repo.join(HISTORY_FILE), long).unwrap();
        assert!(matches!(
            read_reply(&sub, "hi"),
            Err(HistoryError::NoReply(_))
        ));
    }

    #[test]
    fn a_corrupt_file_gives_no_answer() {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes =
            b"#### hi  \n\nhello \xff\xfe there\n\n> Tokens: 1 sent, 2 received.  \n".to_vec();
        std::fs::write(dir.path().join(HISTORY_FILE), &bytes).unwrap();
        assert!(matches!(
            read_reply(dir.path(), "hi"),
            Err(HistoryError::NotUtf8(_))
        ));
        // Cut inside a character at the bound: the partial line is skipped.
        bytes = "é".repeat(MAX_HISTORY_TAIL_BYTES as usize).into_bytes();
        bytes.extend_from_slice(b"\n#### hi  \n\nhello\n\n> Tokens: 1 sent, 2 received.  \n");
        std::fs::write(dir.path().join(HISTORY_FILE), &bytes).unwrap();
        assert_eq!(read_reply(dir.path(), "hi").unwrap(), "hello");
    }
}
