//! The bridge daemon: routes chat messages to projects' agent panes, turns
//! detections into cards (results, approvals, progress), applies the access
//! policy, and keeps state and the event log.

pub mod config;
pub mod names;
pub mod outbox;
pub mod pairing;
pub mod policy;
pub mod router;
