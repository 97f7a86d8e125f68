//! The `clawmux` command line: parse arguments, set up tracing, call the library.
#![forbid(unsafe_code)]

mod commands;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    clawmux::fds::close_inherited_on_exec();
    let cli = commands::Cli::parse();
    clawmux::diagnostics::log_to_stderr();
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
