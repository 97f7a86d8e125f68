//! `clawmux openspec detect|new|lint|mirror|archive`: OpenSpec authoring with
//! Chorus mirrors. Environment: `CHORUS_URL`, `CHORUS_API_KEY`,
//! `CHORUS_OPENSPEC_MODE` (flags override).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;

use clawmux::openspec::change::{self, Detection};
use clawmux::openspec::cli::{INSTALL_HINT, OpenSpecCli};
use clawmux::openspec::lint::{LintError, lint_change};

use super::UsageError;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Print CHORUS_OPENSPEC_ACTIVE=1|0 (mode not off, openspec/ exists, CLI on PATH).
    Detect {
        /// Project root.
        #[arg(long, default_value = ".")]
        root: PathBuf,
        /// `off` disables OpenSpec mode.
        #[arg(long, env = "CHORUS_OPENSPEC_MODE")]
        mode: Option<String>,
    },
    /// Create openspec/changes/<slug>/ (through the openspec CLI when present).
    New {
        slug: String,
        /// One-line summary of the idea.
        #[arg(long)]
        description: String,
        #[arg(long, default_value = ".")]
        root: PathBuf,
    },
    /// Validate a change like `openspec validate <slug>`; exit 1 when invalid.
    Lint {
        slug: String,
        #[arg(long, default_value = ".")]
        root: PathBuf,
        /// Warnings (e.g. no SHALL/MUST) make the change invalid.
        #[arg(long)]
        strict: bool,
        /// Print `openspec validate --json` shaped output.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        Cmd::Detect { root, mode } => {
            let d: Detection = change::detect(&root, mode.as_deref(), &OpenSpecCli::default());
            if d.needs_install_hint() {
                eprintln!("OpenSpec repository detected; install the CLI with: {INSTALL_HINT}");
            }
            println!("CHORUS_OPENSPEC_ACTIVE={}", u8::from(d.active()));
            Ok(ExitCode::SUCCESS)
        }
        Cmd::New {
            slug,
            description,
            root,
        } => {
            change::validate_slug(&slug).map_err(|e| UsageError(e.to_string()))?;
            let cli = OpenSpecCli::default();
            let cli = cli.version().is_some().then_some(&cli);
            match change::new_change(&root, &slug, &description, cli) {
                Ok(dir) => {
                    println!("{}", dir.display());
                    Ok(ExitCode::SUCCESS)
                }
                Err(
                    e @ (change::NewChangeError::Exists(_) | change::NewChangeError::NoOpenSpec(_)),
                ) => Err(UsageError(e.to_string()).into()),
                Err(e) => Err(e.into()),
            }
        }
        Cmd::Lint {
            slug,
            root,
            strict,
            json,
        } => {
            let report = match lint_change(&root, &slug, strict) {
                Ok(r) => r,
                Err(e @ LintError::NoChange(_)) => return Err(UsageError(e.to_string()).into()),
                Err(e) => return Err(e.into()),
            };
            if json {
                println!("{}", serde_json::to_string_pretty(&report.to_json())?);
            } else {
                print!("{}", report.to_text());
            }
            Ok(if report.valid {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
    }
}
