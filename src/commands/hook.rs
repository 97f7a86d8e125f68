//! `clawmux hook` and `clawmux hooks install` (placeholder until its work lands).

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct HookArgs {}

#[derive(clap::Args)]
pub struct HooksArgs {}

pub fn run_hook(_args: HookArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`hook` is not built yet")
}

pub fn run_hooks(_args: HooksArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`hooks` is not built yet")
}
