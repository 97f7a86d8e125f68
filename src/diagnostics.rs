//! Where a clawmux program's own diagnostics go: `tracing` to stderr,
//! filtered by `CLAWMUX_LOG` (an `EnvFilter` directive, default `warn`),
//! so stdout stays the command's output.

/// The variable holding the filter (`CLAWMUX_LOG=clawmux=debug`).
pub const LOG_VAR: &str = "CLAWMUX_LOG";

/// Sends `tracing` events to stderr, filtered by [`LOG_VAR`], coloured
/// only when stderr is a terminal.
pub fn log_to_stderr() {
    use std::io::IsTerminal;
    tracing_subscriber::fmt()
        // Colour codes only for a terminal: a redirected stderr is a log
        // file, where they would be noise.
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env(LOG_VAR)
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
}
