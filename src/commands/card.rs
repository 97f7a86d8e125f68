//! `clawmux card`: markdown on stdin, the paginated Feishu cards (a JSON
//! array, one card per page) on stdout: exactly what the bridge would send.

use std::io::{Read, Write};
use std::process::ExitCode;

use clawmux::feishu::card::Template;
use clawmux::feishu::paginate::paginate;

use super::UsageError;

#[derive(clap::Args)]
pub struct Args {
    /// Card title (pages get ` [i/N]` appended).
    #[arg(long, default_value = "clawmux")]
    title: String,
    /// Header colour: info (blue), success (green), error (red), warning (orange).
    #[arg(long, value_enum, default_value_t = Theme::Info)]
    theme: Theme,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Theme {
    Info,
    Success,
    Error,
    Warning,
}

impl Theme {
    fn template(self) -> Template {
        match self {
            Theme::Info => Template::Blue,
            Theme::Success => Template::Green,
            Theme::Error => Template::Red,
            Theme::Warning => Template::Orange,
        }
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut input = Vec::new();
    std::io::stdin().read_to_end(&mut input)?;
    let markdown = String::from_utf8(input).map_err(|e| {
        UsageError(format!(
            "stdin is not UTF-8 (invalid byte at offset {}): convert it first, e.g. with iconv",
            e.utf8_error().valid_up_to()
        ))
    })?;
    let cards = paginate(&args.title, args.theme.template(), &markdown);
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, &cards)?;
    writeln!(out)?;
    Ok(ExitCode::SUCCESS)
}
