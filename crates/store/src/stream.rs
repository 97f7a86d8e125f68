//! A streamed answer card as the state keeps it: the answer the chat
//! should see, what the card surely shows, and the one operation sent whose
//! outcome is not known yet. A restart replays that operation with the
//! same sequence and uuid (a no-op for Feishu if it had taken it), so the
//! final answer reaches the card once, whatever crashed when.

use serde::{Deserialize, Serialize};

use super::ids::{ChatTarget, JobId};

/// Longest answer text kept for a stream, in bytes: a card holds at most
/// 30 KB of request body, and the result card carries the whole answer
/// anyway. Longer text keeps its end (see [`bounded_tail`]).
pub const MAX_STREAM_TEXT_BYTES: usize = 12 * 1024;

/// Streams kept at once at most; one per running command, so more is a
/// runaway. The oldest is dropped (its card keeps what it showed).
pub const MAX_STREAMS: usize = 64;

/// One running command's answer card.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswerStream {
    pub job: JobId,
    pub target: ChatTarget,
    pub reply_to: Option<String>,
    pub title: String,
    /// Base of the uuids this stream sends: the message send uses it as
    /// is, each operation `{uuid}-{sequence}`.
    pub uuid: String,
    /// The answer so far, bounded by [`MAX_STREAM_TEXT_BYTES`].
    pub text: String,
    /// Set when the turn ends: the card closes with exactly this text.
    pub final_text: Option<String>,
    /// The CardKit entity, once created.
    pub card_id: Option<String>,
    /// The chat message showing the card, once sent.
    pub message_id: Option<String>,
    /// CardKit refused this card before any message showed it: it is a
    /// plain card, patched instead. A message showing an entity is never
    /// patched (only CardKit updates an entity).
    pub patching: bool,
    /// Interim patches sent while patching (bounded: Feishu stops taking
    /// edits of one message after a few dozen).
    pub patches: u32,
    /// The last sequence used on the entity.
    pub sequence: u32,
    /// The operation sent whose answer did not arrive yet.
    pub in_flight: Option<StreamOp>,
    /// Text the card is known to show.
    pub shown: String,
    pub created_ms: u64,
}

/// An operation on a card entity, written down before it is sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum StreamOp {
    /// Replace the answer element's text.
    Text { sequence: u32, text: String },
    /// Turn streaming mode on again (Feishu ends it after a while).
    Reopen { sequence: u32 },
    /// End streaming mode: the card is final.
    Close { sequence: u32 },
    /// Replace the whole card with its final form (streaming off): the way
    /// out when element updates keep failing.
    Full { sequence: u32, text: String },
}

impl StreamOp {
    pub fn sequence(&self) -> u32 {
        match self {
            StreamOp::Text { sequence, .. }
            | StreamOp::Reopen { sequence }
            | StreamOp::Close { sequence }
            | StreamOp::Full { sequence, .. } => *sequence,
        }
    }

    /// The same operation under another sequence.
    pub fn with_sequence(self, sequence: u32) -> StreamOp {
        match self {
            StreamOp::Text { text, .. } => StreamOp::Text { sequence, text },
            StreamOp::Reopen { .. } => StreamOp::Reopen { sequence },
            StreamOp::Close { .. } => StreamOp::Close { sequence },
            StreamOp::Full { text, .. } => StreamOp::Full { sequence, text },
        }
    }
}

impl AnswerStream {
    pub fn new(
        job: JobId,
        target: ChatTarget,
        reply_to: Option<String>,
        title: String,
        created_ms: u64,
    ) -> Self {
        AnswerStream {
            uuid: format!("st-{}", uuid::Uuid::new_v4().simple()),
            job,
            target,
            reply_to,
            title,
            text: String::new(),
            final_text: None,
            card_id: None,
            message_id: None,
            patching: false,
            patches: 0,
            sequence: 0,
            in_flight: None,
            shown: String::new(),
            created_ms,
        }
    }

    /// The uuid of the operation with this sequence.
    pub fn op_uuid(&self, sequence: u32) -> String {
        format!("{}-{sequence}", self.uuid)
    }
}

/// At most `max` bytes of `text`, its end kept (on a char boundary), with a
/// marker in front when something was cut.
pub fn bounded_tail(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!("…\n{}", &text[start..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tails_keep_the_end_on_a_char_boundary() {
        assert_eq!(bounded_tail("short", 10), "short");
        let cut = bounded_tail("ab界cd", 4);
        assert_eq!(cut, "…\ncd", "界 is 3 bytes: the cut moves past it");
        assert!(bounded_tail(&"x".repeat(100), 10).ends_with(&"x".repeat(10)));
    }
}
