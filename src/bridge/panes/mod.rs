//! The agent panes and the tmux servers they live on: hosts, the watch
//! session, one project's pane, and the sans-IO rules for typing a command
//! once, answering a dialog so that it takes, and reading what a command
//! printed.

pub mod agent_pane;
pub mod answering;
pub mod host_file;
pub mod hosts;
pub mod keys;
pub mod transcript;
pub mod typing;
pub mod watch_session;
pub mod workspace_file;
