//! `clawmux hook` (run by Claude Code: forward its hook payload to the
//! daemon) and `clawmux hooks install` (the settings that make it do so).
//! The same command takes Codex's and Gemini's hooks (stdin, Claude Code's
//! shape), Codex's `notify` program (`--from codex-notify JSON`) and
//! Aider's notifications command (`--from aider-waiting`, no payload).
//!
//! `clawmux hook` must never disturb Claude Code: it prints nothing on
//! stdout (Claude Code would read it), always exits 0 (exit 2 would block
//! the turn), and returns as soon as the line is written or the daemon is
//! found to be away. Problems are logged at debug level only.

use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::SystemTime;

use clawmux::hooks::notify::{self, Source};
use clawmux::hooks::settings::{self, Agent};
use clawmux::hooks::{self, Envelope, MAX_PAYLOAD_BYTES};
use clawmux::store;

use super::UsageError;

#[derive(clap::Args)]
pub struct HookArgs {
    /// Where the event comes from: a hook payload on stdin (Claude Code,
    /// Codex and Gemini hooks), Codex's `notify` program (its JSON is the
    /// last argument), or Aider's notifications command (no payload).
    #[arg(long, value_enum, default_value_t = HookFrom::Stdin)]
    from: HookFrom,
    /// The JSON Codex's `notify` adds as its last argument.
    #[arg(value_name = "JSON")]
    payload: Option<std::ffi::OsString>,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum HookFrom {
    Stdin,
    CodexNotify,
    AiderWaiting,
}

impl HookFrom {
    fn source(self) -> Source {
        match self {
            HookFrom::Stdin => Source::Stdin,
            HookFrom::CodexNotify => Source::CodexNotify,
            HookFrom::AiderWaiting => Source::AiderWaiting,
        }
    }
}

/// The agent `clawmux hooks install` writes for.
#[derive(Clone, Copy, clap::ValueEnum)]
enum AgentArg {
    Claude,
    Codex,
    Gemini,
    Opencode,
}

#[derive(clap::Args)]
pub struct HooksArgs {
    #[command(subcommand)]
    command: HooksCommand,
}

#[derive(clap::Subcommand)]
enum HooksCommand {
    /// Print the hook configuration for `.claude/settings.json` (or, with
    /// `--agent`, Codex's `hooks.json` or Gemini's `settings.json`), or merge
    /// it in with `--write`.
    Install(InstallArgs),
}

#[derive(clap::Args)]
struct InstallArgs {
    /// Merge into DIR/.claude/settings.json, keeping everything already there.
    #[arg(long)]
    write: bool,
    /// The project directory whose settings `--write` changes (Claude Code;
    /// Codex's and Gemini's files are in their own homes).
    #[arg(long, value_name = "DIR", default_value = ".", requires = "write")]
    dir: PathBuf,
    /// Absolute path of the clawmux binary the hook runs (default: `clawmux` on PATH).
    #[arg(long, value_name = "PATH")]
    bin: Option<PathBuf>,
    /// The agent: `claude` (DIR/.claude/settings.json), `codex`
    /// ($CODEX_HOME/hooks.json, default ~/.codex, and `notify` in its
    /// config.toml), `gemini` (~/.gemini/settings.json) or `opencode` (a
    /// plugin, ~/.config/opencode/plugin/clawmux.js).
    #[arg(long, value_enum, default_value_t = AgentArg::Claude)]
    agent: AgentArg,
}

pub fn run_hook(args: HookArgs) -> anyhow::Result<ExitCode> {
    let source = args.from.source();
    if source == Source::Stdin && std::io::stdin().is_terminal() {
        eprintln!(
            "clawmux hook reads a Claude Code hook payload on stdin; Claude Code runs it (see `clawmux hooks install`)"
        );
        return Ok(ExitCode::SUCCESS);
    }
    if let Err(e) = forward(source, args.payload.as_deref()) {
        tracing::debug!("hook not forwarded: {:#}", anyhow::Error::from(e));
    }
    Ok(ExitCode::SUCCESS)
}

fn forward(source: Source, arg: Option<&std::ffi::OsStr>) -> Result<(), hooks::HookError> {
    use std::os::unix::ffi::OsStrExt;
    let received_at = SystemTime::now();
    let cwd = std::env::current_dir().ok();
    let payload = match source {
        Source::Stdin => {
            let mut payload = Vec::new();
            let limit = u64::try_from(MAX_PAYLOAD_BYTES).unwrap_or(u64::MAX) + 1;
            std::io::stdin()
                .take(limit)
                .read_to_end(&mut payload)
                .map_err(|e| hooks::HookError::Payload(format!("cannot read stdin: {e}")))?;
            payload
        }
        Source::CodexNotify => {
            let arg = arg.ok_or_else(|| {
                hooks::HookError::Payload("Codex notify gave no JSON argument".into())
            })?;
            notify::codex_notify(arg.as_bytes(), cwd.as_deref())?
        }
        Source::AiderWaiting => notify::aider_waiting(cwd.as_deref())?,
    };
    let pane = std::env::var("TMUX_PANE").ok();
    let token = std::env::var(hooks::token::TOKEN_ENV).ok();
    let envelope = Envelope::with_token(&payload, pane.as_deref(), token.as_deref(), received_at)?;
    hooks::forward(&store::state_dir(), &envelope)
}

/// OpenCode has no hook commands: a plugin forwards its events to
/// `clawmux hook` (see [`hooks::opencode`]), run by its absolute path.
fn install_opencode_plugin(args: &InstallArgs) -> anyhow::Result<ExitCode> {
    let bin = match &args.bin {
        Some(bin) => bin.clone(),
        None => std::env::current_exe()?,
    };
    if !args.write {
        super::print_out(&hooks::opencode::plugin_source(&bin))?;
        return Ok(ExitCode::SUCCESS);
    }
    let config = match std::env::var_os("XDG_CONFIG_HOME").filter(|d| !d.is_empty()) {
        Some(dir) => PathBuf::from(dir).join("opencode"),
        None => home()?.join(".config/opencode"),
    };
    let path = hooks::opencode::install_plugin(&config, &bin)?;
    super::print_out(&format!("wrote the OpenCode plugin {}\n", path.display()))?;
    Ok(ExitCode::SUCCESS)
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
    let agent = match args.agent {
        AgentArg::Claude => Agent::Claude,
        AgentArg::Codex => Agent::Codex,
        AgentArg::Gemini => Agent::Gemini,
        AgentArg::Opencode => return install_opencode_plugin(&args),
    };
    let notify = settings::codex_notify_argv(args.bin.as_deref());
    if !args.write {
        let config = serde_json::to_string_pretty(&settings::hooks_config_for(agent, &command))?;
        super::print_out(&format!("{config}\n"))?;
        if agent == Agent::Codex {
            eprintln!(
                "and in Codex's config.toml (before any [table]): {}",
                settings::codex_notify_line(&notify)
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let (path, report) = match agent {
        Agent::Claude => settings::install(&args.dir, &command)?,
        Agent::Codex => settings::install_file(agent, &codex_home()?.join("hooks.json"), &command)?,
        Agent::Gemini => {
            settings::install_file(agent, &home()?.join(".gemini/settings.json"), &command)?
        }
    };
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
    for setting in &report.set {
        said.push_str(&format!("set {setting} in {}\n", path.display()));
    }
    if !report.changed() {
        said = format!("clawmux hooks already installed in {}\n", path.display());
    }
    if agent == Agent::Codex {
        let config = codex_home()?.join("config.toml");
        match settings::install_codex_notify(&config, &notify)? {
            settings::NotifyReport::Added => {
                said.push_str(&format!("added notify to {}\n", config.display()));
            }
            settings::NotifyReport::Present => {
                said.push_str(&format!("notify already set in {}\n", config.display()));
            }
            settings::NotifyReport::Kept(other) => said.push_str(&format!(
                "{} runs another notify program ({other}), left as it is: Codex runs only one; the Stop hook still ends turns\n",
                config.display()
            )),
        }
    }
    super::print_out(&said)?;
    Ok(ExitCode::SUCCESS)
}

/// Codex's configuration directory: `$CODEX_HOME`, else `~/.codex`.
fn codex_home() -> anyhow::Result<PathBuf> {
    match std::env::var_os("CODEX_HOME").filter(|h| !h.is_empty()) {
        Some(dir) => Ok(PathBuf::from(dir)),
        None => Ok(home()?.join(".codex")),
    }
}

fn home() -> anyhow::Result<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| {
            UsageError("HOME is not set: cannot find the agent's settings".into()).into()
        })
}
