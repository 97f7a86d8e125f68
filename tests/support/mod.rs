//! Shared test fixtures: the real agents' offline set-ups, the daemon
//! harness, scenarios; the local Feishu server, signed events and private
//! tmux servers come from the `clawmux-testkit` crate (the benches use
//! them too).

#![allow(dead_code, unused_imports)] // each tier and area uses a different part

pub mod aider;
pub mod bridge;
pub mod claude;
pub mod codex;
pub mod expect;
pub mod feishu_serve;
pub mod gemini;
pub mod gsd;
pub mod opencode;
pub mod scenarios;
pub mod sshd;
pub mod state;

pub use clawmux_testkit::{fake_feishu, signed, tmux};

/// The program a variable names, when it names a file.
pub fn program_from_env(var: &str) -> Option<std::path::PathBuf> {
    std::env::var_os(var)
        .filter(|p| !p.is_empty())
        .map(std::path::PathBuf::from)
        .filter(|p| p.is_file())
}

/// Fails the test: `program` is not installed. The tiers that need a
/// program require it (a missing one is a failure, never a pass); `how`
/// says how to get it.
pub fn missing(program: &str, how: &str) -> ! {
    let test = std::thread::current()
        .name()
        .unwrap_or("this test")
        .to_string();
    panic!(
        "{program} is not installed, and {test} needs it: {how}. \
         `.ci/run` installs every program the tiers need (README, Tests)."
    )
}
