//! The console channel: chat lines from stdin, cards printed as readable
//! text on stdout. It lets the bridge run with no Feishu credentials, and
//! lets a newcomer drive an agent from a terminal.

use std::io::Write;

use tokio::io::{AsyncBufRead, AsyncBufReadExt};
use tokio::sync::mpsc;

use super::chat::{CONSOLE_USER, ChatEvent, ChatMessage};
use super::outbox::{Courier, DeliveryError};
use super::policy::ChatKind;
use crate::store::state::{ChatTarget, OutboxEntry, OutboxOp};

/// Reads chat lines until end of input; every non-empty line is a message
/// from the console user.
pub async fn read_lines(input: impl AsyncBufRead + Unpin, chat: mpsc::Sender<ChatEvent>) {
    let mut lines = input.lines();
    let mut n: u64 = 0;
    let started = crate::store::clock::now_ms();
    while let Ok(Some(line)) = lines.next_line().await {
        let text = line.trim();
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
        };
        if chat.send(ChatEvent::Message(message)).await.is_err() {
            return;
        }
    }
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
            OutboxOp::Send { handle, .. } => ("┌─", Some(handle.clone())),
            OutboxOp::Patch { .. } => ("├─ (updated)", None),
            OutboxOp::File { handle, .. } => ("┌─ (file)", Some(handle.clone())),
            OutboxOp::React { .. } => return Ok(None),
        };
        let mut out = std::io::stdout().lock();
        let written =
            writeln!(out, "{mark}\n{}\n└─", entry.text.trim_end()).and_then(|_| out.flush());
        written.map_err(|e| DeliveryError::Transient(format!("stdout: {e}")))?;
        Ok(id)
    }
}
