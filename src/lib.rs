//! clawmux: drive AI coding agents in tmux panes from chat, without polling.
//!
//! The daemon and the command line, above the workspace's crates: the
//! [`bridge`] (router, sans-IO core, project actors, channels, presenter),
//! [`agentcheck`] (the real Claude Code offline for `doctor --agent`),
//! [`prompts`] (`{{variable}}` templates) and [`diagnostics`]. Every crate
//! below is re-exported under its module name (`clawmux::detect` is the
//! crate `clawmux-detect`). The one list of what each crate owns, bottom up,
//! is the Modules table of the repository's `docs/ARCHITECTURE.md`, with the
//! data flow, the invariants, and the tmux, Feishu and agent facts they
//! rely on.

// `unsafe` lives in the `clawmux-fds` crate alone (descriptors by number).
#![forbid(unsafe_code)]

pub mod agentcheck;
pub use clawmux_agents as agents;
pub mod bridge;
pub use clawmux_control as control;
pub use clawmux_detect as detect;
pub mod diagnostics;
pub use clawmux_fds as fds;
pub use clawmux_feishu as feishu;
pub use clawmux_gsd as gsd;
pub use clawmux_hooks as hooks;
pub use clawmux_i18n as i18n;
pub use clawmux_message as message;
pub use clawmux_openspec as openspec;
pub use clawmux_pane as pane;
pub mod prompts;
pub use clawmux_render as render;
pub use clawmux_sim as sim;
pub use clawmux_store as store;
pub use clawmux_text::{shell, text_escape};
pub use clawmux_tmux as tmux;
