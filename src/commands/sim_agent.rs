//! `clawmux sim-agent`: the simulated Claude Code + GSD agent on this
//! terminal.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clawmux::sim::{DEFAULT_SCRIPT, Script, SimAgent, SimOptions};

use super::UsageError;

#[derive(clap::Args)]
pub struct Args {
    /// Script to run instead of the built-in one (a text file of steps, in
    /// the format of the built-in script).
    #[arg(long, value_name = "FILE")]
    script: Option<PathBuf>,
    /// Time divisor: 2 runs every step twice as fast.
    #[arg(long, env = "CLAWMUX_SIM_SPEED", default_value_t = 1.0)]
    speed: f64,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if !(args.speed.is_finite() && args.speed > 0.0) {
        return Err(UsageError(format!(
            "--speed must be a positive number, not {}",
            args.speed
        ))
        .into());
    }
    let text = match &args.script {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| UsageError(format!("cannot read script {}: {e}", path.display())))?,
        None => DEFAULT_SCRIPT.to_owned(),
    };
    let script = Script::parse(&text).map_err(|e| UsageError(e.to_string()))?;
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    SimAgent::new(
        script,
        stdin.lock(),
        stdout.lock(),
        SimOptions::for_terminal(args.speed),
    )
    .run()
    .context("sim-agent terminal I/O")?;
    Ok(ExitCode::SUCCESS)
}
