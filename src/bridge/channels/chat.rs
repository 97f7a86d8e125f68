//! What the bridge receives from a chat channel (Feishu or the console), in
//! one channel-neutral form.

use crate::i18n::Text;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::bridge::access::policy::ChatKind;
use crate::store::state::ChatTarget;

/// The sender id of the local console user (the operator at the terminal).
pub const CONSOLE_USER: &str = "console";

#[derive(Debug)]
pub enum ChatEvent {
    Message(ChatMessage),
    Click(CardClick),
}

#[derive(Debug, Clone)]
pub struct ChatMessage {
    /// Feishu's `header.event_id` (dedupe key), or a local id.
    pub event_id: String,
    pub message_id: String,
    pub target: ChatTarget,
    pub kind: ChatKind,
    pub sender: String,
    /// The text with @mentions removed.
    pub text: String,
    pub mentions_bot: bool,
    /// The message this one replies to (e.g. an approval card).
    pub parent_id: Option<String>,
    /// Its sender's rate-limit slot was taken already (by the image
    /// fetcher, which admits an image's message before fetching it).
    pub rate_counted: bool,
    /// An image sent that was not saved, and why: the chat is told, and
    /// nothing is typed (`text` is empty).
    pub image_not_saved: Option<crate::bridge::channels::chat_images::ImageNotSaved>,
}

/// A button press or menu choice on a card.
#[derive(Debug)]
pub struct CardClick {
    pub event_id: String,
    pub operator: String,
    /// The callback value we put on the button.
    pub value: Value,
    /// The option chosen in a select menu.
    pub option: Option<String>,
    pub message_id: String,
    pub target: ChatTarget,
    /// Where the immediate answer (toast, new card) goes; Feishu needs it
    /// within 3 s.
    pub respond: Option<oneshot::Sender<ClickAnswer>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToastLevel {
    Success,
    Info,
    Warning,
    Error,
}

/// The immediate answer to a click.
#[derive(Debug, Clone, PartialEq)]
pub struct ClickAnswer {
    /// A short note to the clicker, in both languages (Feishu's client
    /// shows its reader's).
    pub toast: Option<(ToastLevel, Text)>,
    /// A card to show in place of the clicked one.
    pub card: Option<Value>,
}

impl ClickAnswer {
    pub fn toast(level: ToastLevel, text: impl Into<Text>) -> ClickAnswer {
        ClickAnswer {
            toast: Some((level, text.into())),
            card: None,
        }
    }
}
