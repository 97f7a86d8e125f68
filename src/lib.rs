//! clawmux: drive AI coding agents in tmux panes from chat, without polling.
//!
//! The repository's `docs/ARCHITECTURE.md` describes the data flow between
//! these modules, the invariants they keep, and the tmux, Feishu and Claude
//! Code facts they rely on.
//!
//! # Layout
//! - [`control`] (crate `clawmux-control`): tmux control-mode protocol, sans-IO: framer, nom line parser, `%output` unescape, block assembly.
//! - [`tmux`] (crate `clawmux-tmux`): tmux process I/O: spawn/attach, FIFO command correlation, quoting, flow control.
//! - [`pane`] (crate `clawmux-pane`): per-pane state: bytes to clean text (vte), bounded scrollback, screen snapshot (vt100).
//! - [`detect`] (crate `clawmux-detect`): streaming matchers (completion, approval, error, progress) and pattern profiles.
//! - [`diagnostics`]: tracing to stderr under `CLAWMUX_LOG`, for the clawmux programs.
//! - [`sim`]: the simulated Claude Code + GSD agent used by tests and demos.
//! - [`feishu`] (crate `clawmux-feishu`): card JSON 2.0 builder and paginator, API client, WebSocket and webhook intake.
//! - [`render`] (crate `clawmux-render`): pictures of terminal screens: a pane's cell grid drawn as a PNG with the machine's fonts.
//! - [`store`] (crate `clawmux-store`): event log, atomic state file, outbox.
//! - [`agents`]: the coding agents clawmux drives, as data (claude, codex, gemini, opencode, aider: start command per permission mode, profile, interrupt keys, signals).
//! - [`bridge`]: the daemon: router, sessions, approvals, progress, access policy, console channel.
//! - [`hooks`]: Claude Code hook payloads and the Unix socket that carries them to the daemon.
//! - [`prompts`]: `{{variable}}` prompt templates.
//! - [`fds`]: descriptors inherited from the caller made close-on-exec, so no long-lived child holds the caller's pipes.
//! - [`i18n`] (crate `clawmux-i18n`): the two languages (en_us, zh_cn), text that carries both, the terminal's language.
//! - [`shell`]: POSIX shell words quoted and split (the `shlex` crate), NUL refused.
//! - [`text_escape`]: control characters in outside text made visible before it reaches a terminal.
//! - [`gsd`] (crate `clawmux-gsd`): GSD as installed for a project: its command spelling, its planning files' state, read here or on the project's host.
//! - [`openspec`]: OpenSpec detection, delta-spec lint, Chorus MCP client, mirror and archive.
//! - [`agentcheck`]: the real Claude Code offline: the fake model API (crate `clawmux-fakeapi`, re-exported), throwaway environment, drift self-test.

// `unsafe` lives in the `clawmux-fds` crate alone (descriptors by number).
#![forbid(unsafe_code)]

pub mod agentcheck;
pub mod agents;
pub mod bridge;
pub use clawmux_control as control;
pub use clawmux_detect as detect;
pub mod diagnostics;
pub use clawmux_fds as fds;
pub use clawmux_feishu as feishu;
pub use clawmux_gsd as gsd;
pub mod hooks;
pub use clawmux_i18n as i18n;
pub use clawmux_openspec as openspec;
pub use clawmux_pane as pane;
pub mod prompts;
pub use clawmux_render as render;
pub use clawmux_sim as sim;
pub use clawmux_store as store;
pub use clawmux_text::{shell, text_escape};
pub use clawmux_tmux as tmux;
