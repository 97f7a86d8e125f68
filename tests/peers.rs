//! The peers tier: clawmux against real programs of other projects — the
//! official Feishu SDKs as oracles, the OpenSpec CLI (with the spec
//! workflow it checks), a real sshd on 127.0.0.1 for remote hosts, and root
//! for a really full disk. Not in the default `cargo test`:
//! `cargo test --test peers` (with the peers installed, as `.ci/run` does; a
//! missing one fails its tests).

mod hosts;
mod openspec;
mod oracles;
mod root;
mod support;
