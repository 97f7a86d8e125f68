//! `clawmux hook` (run by Claude Code: forward its hook payload to the
//! daemon) and `clawmux hooks install` (the settings that make it do so).
//!
//! `clawmux hook` must never disturb Claude Code: it prints nothing on
//! stdout (Claude Code would read it), always exits 0 (exit 2 would block
//! the turn), and returns as soon as the line is written or the daemon is
//! found to be away. Problems are logged at debug level only.

use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::SystemTime;

use clawmux::hooks::{self, Envelope, MAX_PAYLOAD_BYTES, settings};
use clawmux::store;

use super::UsageError;

#[derive(clap::Args)]
pub struct HookArgs {}

#[derive(clap::Args)]
pub struct HooksArgs {
    #[command(subcommand)]
    command: HooksCommand,
}

#[derive(clap::Subcommand)]
enum HooksCommand {
    /// Print the hook configuration for `.claude/settings.json`, or merge it
    /// in with `--write`.
    Install(InstallArgs),
}

#[derive(clap::Args)]
struct InstallArgs {
    /// Merge into DIR/.claude/settings.json, keeping everything already there.
    #[arg(long)]
    write: bool,
    /// The project directory whose settings `--write` changes.
    #[arg(long, value_name = "DIR", default_value = ".", requires = "write")]
    dir: PathBuf,
    /// Absolute path of the clawmux binary the hook runs (default: `clawmux` on PATH).
    #[arg(long, value_name = "PATH")]
    bin: Option<PathBuf>,
}

pub fn run_hook(_args: HookArgs) -> anyhow::Result<ExitCode> {
    if std::io::stdin().is_terminal() {
        eprintln!(
            "clawmux hook reads a Claude Code hook payload on stdin; Claude Code runs it (see `clawmux hooks install`)"
        );
        return Ok(ExitCode::SUCCESS);
    }
    if let Err(e) = forward_stdin() {
        tracing::debug!("hook not forwarded: {:#}", anyhow::Error::from(e));
    }
    Ok(ExitCode::SUCCESS)
}

fn forward_stdin() -> Result<(), hooks::HookError> {
    let received_at = SystemTime::now();
    let mut payload = Vec::new();
    let limit = u64::try_from(MAX_PAYLOAD_BYTES).unwrap_or(u64::MAX) + 1;
    std::io::stdin()
        .take(limit)
        .read_to_end(&mut payload)
        .map_err(|e| hooks::HookError::Payload(format!("cannot read stdin: {e}")))?;
    let pane = std::env::var("TMUX_PANE").ok();
    let token = std::env::var(hooks::token::TOKEN_ENV).ok();
    let envelope = Envelope::with_token(&payload, pane.as_deref(), token.as_deref(), received_at)?;
    hooks::forward(&store::state_dir(), &envelope)
}

pub fn run_hooks(args: HooksArgs) -> anyhow::Result<ExitCode> {
    let HooksCommand::Install(args) = args.command;
    if let Some(bin) = &args.bin
        && !bin.is_absolute()
    {
        return Err(UsageError(format!(
            "--bin {} is not an absolute path; Claude Code runs hooks from the project directory",
            bin.display()
        ))
        .into());
    }
    let command = settings::hook_command(args.bin.as_deref());
    if !args.write {
        let config = serde_json::to_string_pretty(&settings::hooks_config(&command))?;
        super::print_out(&format!("{config}\n"))?;
        return Ok(ExitCode::SUCCESS);
    }
    let (path, report) = settings::install(&args.dir, &command)?;
    let mut said = String::new();
    for event in &report.added {
        said.push_str(&format!("added {event} hook to {}\n", path.display()));
    }
    for event in &report.updated {
        said.push_str(&format!(
            "updated {event} hook in {} to `{command}`\n",
            path.display()
        ));
    }
    if !report.changed() {
        said = format!("clawmux hooks already installed in {}\n", path.display());
    }
    super::print_out(&said)?;
    Ok(ExitCode::SUCCESS)
}
