//! Shared test fixtures: real tmux servers on private sockets.

#![allow(dead_code)] // each test area uses a different part of the fixtures

pub mod aider;
pub mod claude;
pub mod codex;
pub mod gemini;
pub mod gsd;
pub mod opencode;
pub mod sshd;
pub mod tmux;
