//! The real Claude Code in real tmux against the fake Messages API: each
//! scenario recorded with `clawmux record` (committed under
//! `tests/fixtures/claude-2.1.197/`, refreshed with
//! `CLAWMUX_UPDATE_FIXTURES=1`), checked live and by replay.

mod aider;
mod claude_tabs;
mod codex;
mod detect_recordings;
mod doctor;
mod fake_api;
mod feishu;
mod gemini;
mod gsd;
mod gsd_gemini;
mod hooks;
mod live;
mod native;
mod opencode;
mod paste;
mod run;
mod serve;
mod soak;
mod steps;
