//! Named crash points for the crash tests: with `CLAWMUX_CRASH_AT=<name>`
//! set, the process aborts (no cleanup, as under `kill -9`) when it reaches
//! that point. Only in builds with the `test-support` feature (tests and
//! benches turn it on); a shipped binary has no way to abort on request
//! and a crash point there is nothing at all.

/// The environment variable naming the point to crash at.
pub const CRASH_AT_VAR: &str = "CLAWMUX_CRASH_AT";

/// Aborts the process if `name` is the configured crash point.
#[cfg(feature = "test-support")]
pub fn crash_point(name: &str) {
    static CRASH_AT: std::sync::LazyLock<Option<String>> =
        std::sync::LazyLock::new(|| std::env::var(CRASH_AT_VAR).ok());
    if CRASH_AT.as_deref() == Some(name) {
        eprintln!("clawmux: crash point {name} reached ({CRASH_AT_VAR})");
        std::process::abort();
    }
}

/// Without `test-support`: no crash points.
#[cfg(not(feature = "test-support"))]
#[inline(always)]
pub fn crash_point(_name: &str) {}
