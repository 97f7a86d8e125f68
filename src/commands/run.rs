//! `clawmux run`: send one message as the chat would and print the result.

use std::path::PathBuf;
use std::process::ExitCode;

/// How `run` prints its result, per channel.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Format {
    /// Markdown, for channels that render it.
    Markdown,
    /// No markup, for SMS-like channels.
    Plain,
    /// Feishu card JSON 2.0 (a JSON array of cards).
    Card,
    /// Machine-readable: status, output, detections, approval with options.
    Json,
}

#[derive(clap::Args)]
pub struct Args {
    /// The project (tmux session) to send the message to.
    #[arg(long)]
    pub project: String,
    /// Output format for the channel that relays the result.
    #[arg(long, value_enum, default_value = "markdown")]
    pub format: Format,
    /// Answer the pending approval of this project with this option key.
    #[arg(long, value_name = "KEY")]
    pub answer: Option<String>,
    /// Configuration file (default: $CLAWMUX_HOME/config.toml when present).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// The message, e.g. `/gsd:progress`.
    #[arg(last = true)]
    pub text: Vec<String>,
}

pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`run` is not built yet")
}
