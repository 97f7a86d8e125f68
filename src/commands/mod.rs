//! One file per subcommand: its clap arguments and the glue that calls the library.

mod adopt;
mod agent_check;
mod card;
mod decode;
mod detect;
mod doctor;
mod hook;
mod openspec;
mod pairing;
mod prompt;
mod record;
mod run;
mod screenshot;
mod serve;
mod serve_notes;
mod sim_agent;
mod tail;
mod watch;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Bad usage or bad input: the process exits with code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// `-L NAME` / `-S PATH`: the tmux server a command talks to (the default
/// server without either).
#[derive(clap::Args)]
pub struct SocketArgs {
    /// tmux socket name (`tmux -L`).
    #[arg(short = 'L', value_name = "SOCKET", conflicts_with = "socket_path")]
    socket_name: Option<String>,
    /// tmux socket path (`tmux -S`).
    #[arg(short = 'S', value_name = "PATH")]
    socket_path: Option<std::path::PathBuf>,
}

impl SocketArgs {
    pub fn socket(&self) -> Option<clawmux::tmux::Socket> {
        use clawmux::tmux::Socket;
        match (&self.socket_name, &self.socket_path) {
            (Some(name), _) => Some(Socket::Name(name.clone())),
            (None, Some(path)) => Some(Socket::Path(path.clone())),
            (None, None) => None,
        }
    }
}

#[derive(Parser)]
#[command(
    name = "clawmux",
    version,
    about = "Drive AI coding agents in tmux panes from chat, without polling"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the bridge daemon (console channel when no Feishu credentials are set).
    Serve(serve::Args),
    /// Send one message as the chat would and print the result.
    Run(run::Args),
    /// Attach to a running tmux server and print notifications live.
    Watch(watch::Args),
    /// Decode a recorded control-mode stream from stdin.
    Decode(decode::Args),
    /// Record a session's control-mode stream with arrival times.
    Record(record::Args),
    /// Print the detections in a recorded control-mode stream from stdin.
    Detect(detect::Args),
    /// Print the paginated Feishu cards for markdown on stdin.
    Card(card::Args),
    /// Check everything serving needs (tmux, fonts, directories, agents,
    /// hooks, Feishu) and print each finding with its fix.
    Doctor(doctor::Args),
    /// Read the event log.
    Tail(tail::Args),
    /// Render a prompt template.
    Prompt(prompt::Args),
    /// Receive an agent's hook (stdin) or notification (`--from`) and forward it to the daemon.
    Hook(hook::HookArgs),
    /// Claude Code hook configuration.
    Hooks(hook::HooksArgs),
    /// Approve or list chat pairing requests.
    Pairing(pairing::Args),
    /// OpenSpec authoring mirrored to Chorus.
    Openspec(openspec::Args),
    /// A simulated Claude Code + GSD agent for tests and demos.
    SimAgent(sim_agent::Args),
    /// Watch a pane you already run (never resized or restarted) and print
    /// its detections until Ctrl-C, which lets go of it.
    Adopt(adopt::Args),
    /// Draw a tmux pane's screen as a PNG (colours, wide characters, cursor).
    Screenshot(screenshot::Args),
}

/// `println!` through [`print_out`]: a closed stdout (`| head`) ends the
/// command quietly instead of panicking. Returns from the calling function
/// on any other write error.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::commands::print_out(&format!("{}\n", format_args!($($arg)*)))?
    };
}
pub(crate) use out;

/// Writes `text` to stdout. A reader that went away (`| head`) is not an
/// error: what it wanted was written.
pub(crate) fn print_out(text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        written => written,
    }
}

pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Serve(a) => serve::run(a),
        Command::Run(a) => run::run(a),
        Command::Watch(a) => watch::run(a),
        Command::Decode(a) => decode::run(a),
        Command::Record(a) => record::run(a),
        Command::Detect(a) => detect::run(a),
        Command::Card(a) => card::run(a),
        Command::Doctor(a) => doctor::run(a),
        Command::Tail(a) => tail::run(a),
        Command::Prompt(a) => prompt::run(a),
        Command::Hook(a) => hook::run_hook(a),
        Command::Hooks(a) => hook::run_hooks(a),
        Command::Pairing(a) => pairing::run(a),
        Command::Openspec(a) => openspec::run(a),
        Command::SimAgent(a) => sim_agent::run(a),
        Command::Adopt(a) => adopt::run(a),
        Command::Screenshot(a) => screenshot::run(a),
    }
}
