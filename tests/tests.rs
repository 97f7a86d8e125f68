//! Integration tests, one binary: real tmux servers and local protocol servers.
//! Each area owns a folder module (`tests/<area>/mod.rs`) registered here.

mod agent;
mod bridge;
mod control_mode;
mod detect;
mod feishu;
mod hosts;
mod hygiene;
mod integ;
mod load;
mod openspec;
mod support;
