//! Shared test fixtures: real tmux servers on private sockets.

pub mod tmux;
