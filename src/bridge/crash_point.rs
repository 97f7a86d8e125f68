//! Named crash points for the crash tests: with `CLAWMUX_CRASH_AT=<name>`
//! set, the process aborts (no cleanup, as under `kill -9`) when it reaches
//! that point. Unset, a crash point costs one comparison.

use std::sync::LazyLock;

/// The environment variable naming the point to crash at.
pub const CRASH_AT_VAR: &str = "CLAWMUX_CRASH_AT";

static CRASH_AT: LazyLock<Option<String>> = LazyLock::new(|| std::env::var(CRASH_AT_VAR).ok());

/// Aborts the process if `name` is the configured crash point.
pub fn crash_point(name: &str) {
    if CRASH_AT.as_deref() == Some(name) {
        eprintln!("clawmux: crash point {name} reached ({CRASH_AT_VAR})");
        std::process::abort();
    }
}
