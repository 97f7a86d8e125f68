//! What comes in from a chat and goes out to it: the channel-neutral chat
//! event, the console and Feishu channels (images from chat apart), the outbox that delivers in
//! order, long results as a summary plus a file, and the running
//! command's answer streamed into a card.

pub mod chat;
pub mod chat_images;
pub mod console;
pub mod feishu;
pub mod long_result;
pub mod outbox;
pub mod streaming;
