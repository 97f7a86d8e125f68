//! The agents tier: the real agent CLIs (Claude Code and GSD, Codex, Gemini
//! CLI, OpenCode, Aider) in real tmux against the fake model API, through
//! `clawmux serve`, `watch` and `doctor --agent`. Not in the default
//! `cargo test`: `cargo test --test agents` (with every agent installed, as
//! `.ci/run` does; a missing agent fails its tests).

mod agent;
mod support;
