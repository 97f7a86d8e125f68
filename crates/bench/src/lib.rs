//! Load bench on real tmux servers: idle cost against the polling design,
//! floods with and without clawmux attached, detection latency under a
//! flood. The `clawmux-bench` program runs it and prints a table; see
//! docs/BENCHMARKS.md. A crate of its own so that none of it ships in the
//! `clawmux` binary.
//!
//! Every design is a separate process measured from `/proc` the same way
//! (CPU with children, peak RSS), together with the tmux server's own CPU:
//! - [`watcher`]: clawmux as the daemon runs per project pane;
//! - [`roles::poller`]: the polling baseline (`capture-pane` every 500 ms);
//! - [`roles::writer`] / [`roles::marker`]: the programs in the panes.
//!
//! Benchmarks report numbers; the tests assert only behaviour.

#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

pub mod hosts;
pub mod procfs;
pub mod report;
pub mod roles;
pub mod scenario;
pub mod server;
pub mod sshd;
pub mod watcher;

pub use report::{Row, rows, table};
pub use scenario::{Results, Settings, run_all};

/// Why a bench run failed.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("tmux {args}: {message}")]
    Tmux { args: String, message: String },
    #[error("cannot read /proc/{pid}: {reason}")]
    Proc { pid: u32, reason: String },
    /// A helper process or its report was not as expected.
    #[error("{0}")]
    Role(String),
}

impl BenchError {
    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        BenchError::Io {
            what: what.into(),
            source,
        }
    }
}
