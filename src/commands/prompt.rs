//! `clawmux prompt NAME [--var key=value]… [--dir DIR] [--check]`: render a
//! prompt template, or with `--check` list the placeholders left without a
//! value.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clawmux::prompts::{self, PromptError, Template};

use super::UsageError;
use super::out;

#[derive(clap::Args)]
pub struct Args {
    /// context_recovery, command_mapping or error_recovery.
    name: String,
    /// A variable's value (repeatable; a later one for the same key wins).
    #[arg(long = "var", value_name = "KEY=VALUE")]
    vars: Vec<String>,
    /// Read NAME.md from DIR instead of the built-in template when it is there.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Print the placeholders left without a value, one a line, instead of
    /// the text; exit 1 if there are any.
    #[arg(long)]
    check: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let vars = args
        .vars
        .iter()
        .map(|v| parse_var(v))
        .collect::<Result<Vec<_>, _>>()?;
    // Every load error is about the input (the name, the --dir or a file in
    // it): bad input exits 2, and the cause is folded into one line once.
    let template =
        Template::load(&args.name, args.dir.as_deref()).map_err(|e| UsageError(describe(&e)))?;
    let rendered = template.render(&vars);
    if !args.check {
        std::io::stdout().write_all(rendered.text.as_bytes())?;
        return Ok(ExitCode::SUCCESS);
    }
    for key in &rendered.unused {
        eprintln!(
            "clawmux: warning: --var {key} is not used by {}",
            template.name()
        );
    }
    if rendered.unresolved.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    for name in &rendered.unresolved {
        out!("{name}");
    }
    eprintln!(
        "clawmux: {} placeholder(s) of {} have no value; pass --var NAME=VALUE",
        rendered.unresolved.len(),
        template.name()
    );
    Ok(ExitCode::FAILURE)
}

/// The error and its cause on one line, e.g. `cannot read prompt directory
/// /x: No such file or directory (os error 2)`.
fn describe(err: &PromptError) -> String {
    match std::error::Error::source(err) {
        Some(cause) => format!("{err}: {cause}"),
        None => err.to_string(),
    }
}

fn parse_var(arg: &str) -> Result<(&str, &str), UsageError> {
    match arg.split_once('=') {
        Some((key, value)) if prompts::is_variable_name(key) => Ok((key, value)),
        _ => Err(UsageError(format!(
            "--var {arg:?} is not KEY=VALUE with KEY made of letters, digits and _"
        ))),
    }
}
