//! What only tests and benches use, kept out of the product: a dev-dependency
//! of the workspace, never of the `clawmux` binary.
//!
//! - [`fake_feishu`]: a local Feishu on 127.0.0.1 (Open API, CardKit, image
//!   uploads and the long-connection WebSocket) with Feishu's own limits,
//!   codes and faults, checked against the official SDKs in the peers tier.
//! - [`signed`]: webhook events signed and encrypted as Feishu sends them.
//! - [`tmux`]: a private tmux server per test on a unique `-L` socket,
//!   killed when dropped.

#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

pub mod fake_feishu;
pub mod signed;
pub mod tmux;
