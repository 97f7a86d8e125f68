//! `clawmux pairing approve|list`: the operator's side of chat pairing.

use std::process::ExitCode;

use clawmux::bridge::access::pairing::{Pairing, PairingError};
use clawmux::store::{self, clock};

use super::UsageError;
use super::out;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(clap::Subcommand)]
enum Action {
    /// Let the sender who received CODE use the bot.
    Approve { code: String },
    /// Show pending pairing codes.
    List,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let pairing = Pairing::new(&store::state_dir());
    match args.action {
        Action::Approve { code } => match pairing.approve(&code) {
            Ok(open_id) => out!("approved {open_id}: they can use the bot now"),
            Err(e @ PairingError::UnknownCode(_)) => return Err(UsageError(e.to_string()).into()),
            Err(e) => return Err(e.into()),
        },
        Action::List => {
            for (code, p) in pairing.pending()? {
                out!(
                    "{code}  {}  requested {}",
                    p.open_id,
                    clock::rfc3339(p.created_ms)
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
