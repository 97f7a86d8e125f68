//! `clawmux card`: markdown on stdin, the paginated Feishu cards (a JSON
//! array, one card per page) on stdout: exactly what the bridge would send.

use std::io::{Read, Write};
use std::process::ExitCode;

use clawmux::feishu::card::Card;
use clawmux::feishu::paginate::paginate;
use clawmux::message::Tone;

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
    fn tone(self) -> Tone {
        match self {
            Theme::Info => Tone::Info,
            Theme::Success => Tone::Done,
            Theme::Error => Tone::Failed,
            Theme::Warning => Tone::Asking,
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
    let messages = paginate(&args.title, args.theme.tone(), &markdown);
    let cards: Vec<Card> = messages.iter().map(Card::from).collect();
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, &cards)?;
    writeln!(out)?;
    Ok(ExitCode::SUCCESS)
}
