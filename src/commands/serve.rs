//! `clawmux serve`: the bridge daemon.

use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Configuration file (default: $CLAWMUX_HOME/config.toml when present).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Use the console channel even when Feishu credentials are set.
    #[arg(long)]
    pub console: bool,
    /// Agent to run in new project panes: `claude` (default), `sim`, or a command line.
    #[arg(long)]
    pub agent: Option<String>,
}

pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`serve` is not built yet")
}
