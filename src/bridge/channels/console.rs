//! The console channel: chat lines from stdin, cards printed as readable
//! text on stdout. It lets the bridge run with no Feishu credentials, and
//! lets a newcomer drive an agent from a terminal.

use std::io::Write;

use crate::text_escape::{Keep, escape_controls};

use std::io::BufRead;

use tokio::sync::{mpsc, oneshot};

use crate::bridge::access::policy::ChatKind;
use crate::bridge::channels::chat::{CONSOLE_USER, ChatEvent, ChatMessage};
use crate::bridge::channels::outbox::{Courier, DeliveryError};
use crate::store::state::{ChatTarget, OutboxEntry, OutboxOp};

/// Longest console line taken as a message, in bytes: far above anything
/// typed or pasted by hand (Feishu caps a text message at 150 KB); a longer
/// line is dropped with a note instead of being buffered whole.
pub const MAX_CONSOLE_LINE_BYTES: usize = 256 << 10;

/// Reads chat lines from stdin on a thread of its own until end of input;
/// every non-empty line is a message from the console user. The thread is
/// never joined: a blocking read on a terminal cannot be interrupted, so the
/// process ends without waiting for it. The returned receiver resolves at
/// end of input (Ctrl-D) or a read error.
pub fn spawn_stdin_reader(chat: mpsc::Sender<ChatEvent>) -> oneshot::Receiver<()> {
    let (done_tx, done_rx) = oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name("console-stdin".into())
        .spawn(move || {
            read_lines(std::io::stdin().lock(), &chat);
            let _ = done_tx.send(());
        });
    if let Err(e) = spawned {
        // Without a reader the console cannot take messages: treat as end of input.
        tracing::error!("cannot start the console reader: {e}");
    }
    done_rx
}

/// Reads chat lines until end of input (blocking; run it on its own thread).
pub fn read_lines(mut input: impl BufRead, chat: &mpsc::Sender<ChatEvent>) {
    let mut n: u64 = 0;
    let started = crate::store::clock::now_ms();
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = match read_bounded_line(&mut input, &mut line) {
            Ok(read) => read,
            Err(e) => {
                tracing::error!("console input: {e}");
                return;
            }
        };
        let too_long = match read {
            Line::End => return,
            Line::Complete => false,
            Line::TooLong => true,
        };
        if too_long {
            eprintln!(
                "clawmux: a console line longer than {MAX_CONSOLE_LINE_BYTES} bytes was dropped"
            );
            continue;
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        n += 1;
        let id = format!("console-{started}-{n}");
        let message = ChatMessage {
            event_id: id.clone(),
            message_id: id,
            target: ChatTarget::Console,
            kind: ChatKind::Direct,
            sender: CONSOLE_USER.into(),
            text: text.to_string(),
            mentions_bot: true,
            parent_id: None,
            rate_counted: false,
            image_not_saved: None,
        };
        if chat.blocking_send(ChatEvent::Message(message)).is_err() {
            return;
        }
    }
}

enum Line {
    /// A line (its newline removed), or the unterminated last one.
    Complete,
    /// A line past [`MAX_CONSOLE_LINE_BYTES`], skipped to its end.
    TooLong,
    /// End of input.
    End,
}

/// One line into `line`, never holding more than the bound.
fn read_bounded_line(input: &mut impl BufRead, line: &mut Vec<u8>) -> std::io::Result<Line> {
    let mut seen = 0usize;
    loop {
        let chunk = match input.fill_buf() {
            Ok(chunk) => chunk,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok(match seen {
                0 => Line::End,
                n if n > MAX_CONSOLE_LINE_BYTES => Line::TooLong,
                _ => Line::Complete,
            });
        }
        let (part, done) = match memchr::memchr(b'\n', chunk) {
            Some(i) => (&chunk[..i], true),
            None => (chunk, false),
        };
        seen += part.len();
        if seen <= MAX_CONSOLE_LINE_BYTES {
            line.extend_from_slice(part);
        } else {
            line.clear();
        }
        let used = part.len() + usize::from(done);
        input.consume(used);
        if done {
            return Ok(if seen > MAX_CONSOLE_LINE_BYTES {
                Line::TooLong
            } else {
                Line::Complete
            });
        }
    }
}

/// A card as printed: its text (agent output, chat text) with control
/// characters made visible, so it cannot drive the operator's terminal.
fn card_text(mark: &str, text: &str) -> String {
    let text = escape_controls(text.trim_end(), Keep::LinesAndTabs);
    format!("{mark}\n{text}\n└─\n")
}

/// Prints cards to stdout.
pub struct ConsoleCourier;

impl Courier for ConsoleCourier {
    async fn deliver(
        &self,
        entry: &OutboxEntry,
        _message_id: Option<&str>,
    ) -> Result<Option<String>, DeliveryError> {
        let (mark, id) = match &entry.op {
            OutboxOp::Send { handle, .. } => ("┌─", Some(handle.to_string())),
            OutboxOp::Patch { .. } => ("├─ (updated)", None),
            OutboxOp::File { handle, .. } => ("┌─ (file)", Some(handle.to_string())),
            OutboxOp::React { .. } => return Ok(None),
        };
        let mut out = std::io::stdout().lock();
        let written = out
            .write_all(card_text(mark, &entry.text).as_bytes())
            .and_then(|_| out.flush());
        written.map_err(|e| DeliveryError::Transient(format!("stdout: {e}")))?;
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn card_text_keeps_lines_and_escapes_controls() {
        let shown = card_text("┌─", "Done\x1b]2;pwned\x07\n\tline \x1b[2J\u{9b}1m\rX\n\n");
        assert_eq!(
            shown,
            "┌─\nDone\\x1b]2;pwned\\x07\n\tline \\x1b[2J\\u{9b}1m\\x0dX\n└─\n"
        );
    }

    #[test]
    fn lines_become_messages_and_overlong_ones_are_dropped() {
        let long = "y".repeat(MAX_CONSOLE_LINE_BYTES + 1);
        let input = format!("/gsd:help\n\n  {long}\n  status?  \nlast");
        let (tx, mut rx) = mpsc::channel(8);
        read_lines(std::io::Cursor::new(input), &tx);
        drop(tx);
        let mut texts = Vec::new();
        while let Ok(ChatEvent::Message(m)) = rx.try_recv() {
            texts.push(m.text);
        }
        assert_eq!(texts, ["/gsd:help", "status?", "last"]);
    }
}
