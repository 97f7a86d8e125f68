//! `clawmux openspec detect|new|lint|mirror|archive`: OpenSpec authoring with
//! Chorus mirrors. Environment: `CHORUS_URL`, `CHORUS_API_KEY`,
//! `CHORUS_OPENSPEC_MODE` (flags override).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;

use clawmux::openspec::change::{self, Detection};
use clawmux::openspec::chorus::ChorusClient;
use clawmux::openspec::cli::{INSTALL_HINT, OpenSpecCli};
use clawmux::openspec::lint::{LintError, lint_change};
use clawmux::openspec::{archive, mirror};

use super::UsageError;
use super::out;

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
    /// Create or update the Chorus drafts of a change (proposal, design, specs).
    Mirror {
        slug: String,
        /// The Chorus proposal UUID.
        #[arg(long)]
        proposal: String,
        /// Compare the server copies with the files instead of writing.
        #[arg(long)]
        check: bool,
        /// Human title for the PRD and tech-design drafts (default: the slug).
        #[arg(long)]
        title: Option<String>,
        #[arg(long, default_value = ".")]
        root: PathBuf,
        #[command(flatten)]
        chorus: ChorusArgs,
    },
    /// After the last task: `openspec archive <slug> --yes`, then mirror the merged specs.
    Archive {
        slug: String,
        #[arg(long)]
        proposal: String,
        #[arg(long, default_value = ".")]
        root: PathBuf,
        #[command(flatten)]
        chorus: ChorusArgs,
    },
    /// Print the proposal description line `OpenSpec change slug: <slug>`.
    SlugLine { slug: String },
}

#[derive(clap::Args)]
struct ChorusArgs {
    /// Chorus base URL (the MCP endpoint is <url>/api/mcp).
    #[arg(long = "chorus-url", env = "CHORUS_URL")]
    url: Option<String>,
    /// Chorus API key.
    #[arg(
        long = "chorus-api-key",
        env = "CHORUS_API_KEY",
        hide_env_values = true
    )]
    api_key: Option<String>,
}

impl ChorusArgs {
    fn client(&self) -> anyhow::Result<ChorusClient> {
        let (Some(url), Some(key)) = (&self.url, &self.api_key) else {
            return Err(UsageError(
                "set CHORUS_URL and CHORUS_API_KEY (or --chorus-url/--chorus-api-key)".into(),
            )
            .into());
        };
        Ok(ChorusClient::new(url, key)?)
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        Cmd::Detect { root, mode } => {
            let d: Detection = change::detect(&root, mode.as_deref(), &OpenSpecCli::default());
            if d.needs_install_hint() {
                eprintln!("OpenSpec repository detected; install the CLI with: {INSTALL_HINT}");
            }
            out!("CHORUS_OPENSPEC_ACTIVE={}", u8::from(d.active()));
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
                    out!("{}", dir.display());
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
                out!("{}", serde_json::to_string_pretty(&report.to_json())?);
            } else {
                super::print_out(&report.to_text())?;
            }
            Ok(if report.valid {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Cmd::Mirror {
            slug,
            proposal,
            check,
            title,
            root,
            chorus,
        } => {
            change::validate_slug(&slug).map_err(|e| UsageError(e.to_string()))?;
            let client = chorus.client()?;
            let rt = runtime()?;
            if check {
                let mismatches = rt.block_on(mirror::check(&client, &root, &slug, &proposal))?;
                for m in &mismatches {
                    out!("{}: {}", m.rel, m.detail);
                }
                if mismatches.is_empty() {
                    out!("all mirrored files match the server byte for byte");
                    return Ok(ExitCode::SUCCESS);
                }
                return Ok(ExitCode::from(1));
            }
            let title = title.unwrap_or_else(|| slug.clone());
            for action in rt.block_on(mirror::mirror(&client, &root, &slug, &proposal, &title))? {
                match action {
                    mirror::Action::Created { rel, draft_uuid } => {
                        out!("created {rel} -> draft {draft_uuid}")
                    }
                    mirror::Action::Updated { rel, draft_uuid } => {
                        out!("updated {rel} -> draft {draft_uuid}")
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Archive {
            slug,
            proposal,
            root,
            chorus,
        } => {
            change::validate_slug(&slug).map_err(|e| UsageError(e.to_string()))?;
            let client = chorus.client()?;
            let cli = OpenSpecCli::default();
            match runtime()?.block_on(archive::archive(&client, &cli, &root, &slug, &proposal))? {
                archive::Outcome::NotReady(reason) => eprintln!("not archiving {slug}: {reason}"),
                archive::Outcome::Archived { mirrored } => {
                    for (cap, uuid) in mirrored {
                        out!("mirrored openspec/specs/{cap}/spec.md -> document {uuid}");
                    }
                    out!("archived {slug}");
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::SlugLine { slug } => {
            change::validate_slug(&slug).map_err(|e| UsageError(e.to_string()))?;
            out!("{}", change::slug_line(&slug));
            Ok(ExitCode::SUCCESS)
        }
    }
}
