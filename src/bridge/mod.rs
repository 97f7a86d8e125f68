//! The bridge daemon: routes chat messages to projects' agent panes, turns
//! detections into cards (results, approvals, progress), applies the access
//! policy, and keeps state and the event log.
//!
//! Its parts: `channels` (what comes in from and goes out to a chat),
//! `panes` (the tmux servers, agent panes and typing into them), `access`
//! (who may do what, names), `core` (decisions, sans-IO), `project` (one
//! actor per project), `present` (cards), `screen_picture` (pictures of panes in cards), and the
//! daemon around them.

pub mod access;
pub mod channels;
pub mod config;
pub mod core;
pub mod crash_point;
pub mod daemon;
pub mod names;
pub mod outbox_files;
pub mod panes;
pub mod present;
pub mod project;
pub mod router;
pub mod runs;
pub mod screen_picture;
pub mod texts;
