//! What comes in from a chat and goes out to it: the channel-neutral chat
//! event, the console and Feishu channels, the outbox that delivers in
//! order, and long results as a summary plus a file.

pub mod chat;
pub mod console;
pub mod feishu;
pub mod long_result;
pub mod outbox;
