//! The bridge daemon: routes chat messages to projects' agent panes, turns
//! detections into cards (results, approvals, progress), applies the access
//! policy, and keeps state and the event log.

pub mod agent_pane;
pub mod answering;
pub mod chat;
pub mod config;
pub mod console;
pub mod core;
pub mod crash_point;
pub mod daemon;
pub mod feishu_channel;
pub mod hosts;
pub mod long_result;
pub mod names;
pub mod outbox;
pub mod pairing;
pub mod policy;
pub mod present;
pub mod project;
pub mod router;
pub mod run_once;
pub mod texts;
pub mod transcript;
pub mod typing;
pub mod watch_session;
