//! The `clawmux` command line: parse arguments, set up tracing, call the library.
#![forbid(unsafe_code)]

mod commands;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    clawmux::fds::close_inherited_on_exec();
    let cli = commands::Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("CLAWMUX_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    match commands::run(cli) {
        Ok(code) => code,
        Err(err) => {
            let usage = err.downcast_ref::<commands::UsageError>().is_some();
            eprintln!("clawmux: {err:#}");
            if usage {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}
