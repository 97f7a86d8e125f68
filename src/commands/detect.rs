//! `clawmux detect` (placeholder until its work lands).

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`detect` is not built yet")
}
