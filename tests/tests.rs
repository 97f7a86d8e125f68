//! The fast tier, the default `cargo test`: real tmux servers on private
//! sockets, `clawmux serve` driving the simulated agent, local protocol
//! servers (Feishu, Chorus), recordings of the real agents replayed. Needs
//! only tmux. The real agents and other projects' programs are the
//! `agents` and `peers` tiers (`tests/agents.rs`, `tests/peers.rs`).
//! Each area owns a folder module (`tests/<area>/mod.rs`) registered here.

mod bridge;
mod control_mode;
mod detect;
mod feishu;
mod hygiene;
mod integ;
mod support;
