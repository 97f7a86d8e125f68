//! `clawmux serve`: the bridge daemon.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clawmux::bridge::access::policy::RateWindow;
use clawmux::bridge::channels::{console, feishu as feishu_channel, outbox, streaming};
use clawmux::bridge::config::Config;
use clawmux::bridge::daemon::run_socket as socket;
use clawmux::bridge::daemon::{self, Daemon, DaemonSetup};
use clawmux::bridge::texts::Msg;
use clawmux::detect::Profiles;
use clawmux::i18n::Lang;
use clawmux::store::dir_lock::{Holder, StateLock};
use clawmux::store::state_file::Loaded;
use clawmux::store::{self, LogEvent, SharedState};
use tokio::sync::mpsc;
use tokio_util::task::TaskTracker;

use super::UsageError;
use super::serve_notes;

/// Chat events waiting for the daemon at most.
const CHAT_CAPACITY: usize = 256;

#[derive(clap::Args)]
pub struct Args {
    /// Configuration file [default: ~/.config/clawmux/config.toml
    /// ($XDG_CONFIG_HOME), or $CLAWMUX_HOME/config.toml when CLAWMUX_HOME is
    /// set; built-in defaults when there is none]. The state directory is
    /// $CLAWMUX_HOME [default: ~/.local/state/clawmux].
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Use the console channel even when Feishu credentials are set.
    #[arg(long)]
    pub console: bool,
    /// Agent to run in new project panes: `claude` (default), `sim`, or a command line.
    #[arg(long)]
    pub agent: Option<String>,
}

/// Loads the config the way `serve` and `run` share: `--config`, else
/// `$CLAWMUX_HOME/config.toml` when it exists, else the defaults.
pub fn load_config(
    path: Option<&Path>,
    state_dir: &Path,
    agent: Option<&str>,
) -> anyhow::Result<Config> {
    let path = path
        .map(Path::to_path_buf)
        .or_else(|| default_config_path(state_dir));
    let mut config = Config::load(path.as_deref()).map_err(|e| UsageError(e.to_string()))?;
    if let Some(agent) = agent {
        config.agent.command = agent.to_string();
    }
    let tmux = &config.tmux.command[0];
    if !on_path(tmux) && !Path::new(tmux).is_file() {
        return Err(UsageError(format!(
            "`{tmux}` is not installed (clawmux runs agents in tmux). Install it, e.g. `sudo apt-get install tmux`"
        ))
        .into());
    }
    if config.agent.command == "claude" && !on_path("claude") {
        return Err(UsageError(
            "the agent `claude` (Claude Code) is not installed on this machine. Install it, or try the built-in simulated agent: add `--agent sim`".into(),
        )
        .into());
    }
    Ok(config)
}

/// The configuration file's name, wherever it lives.
const CONFIG_FILE: &str = "config.toml";

/// The config file read when `--config` is not given, if there is one.
/// With `CLAWMUX_HOME` set, the one in that directory (an instance kept
/// whole in one place, as tests and second daemons do); otherwise
/// `$XDG_CONFIG_HOME/clawmux/config.toml` (`~/.config/clawmux/…`). A file
/// at the old place, the state directory, is still read, with a notice.
pub fn default_config_path(state_dir: &Path) -> Option<PathBuf> {
    let in_state = state_dir.join(CONFIG_FILE);
    if std::env::var_os("CLAWMUX_HOME").is_some_and(|h| !h.is_empty()) {
        return in_state.exists().then_some(in_state);
    }
    let config_dir = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    let path = config_dir.join("clawmux").join(CONFIG_FILE);
    if path.exists() {
        return Some(path);
    }
    in_state.exists().then(|| {
        eprintln!(
            "clawmux: reading {} from the state directory, its old place; move it to {}",
            in_state.display(),
            path.display()
        );
        in_state
    })
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// The command line that runs this binary's simulated agent in a pane.
pub fn sim_agent_command() -> anyhow::Result<String> {
    let exe = std::env::current_exe().context("cannot find the clawmux binary")?;
    let exe = exe.to_string_lossy();
    // tmux runs the command through `sh -c`: quote the path for the shell.
    Ok(format!("{} sim-agent", clawmux::shell::quote(&exe)?))
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let state_dir = store::state_dir();
    let config = load_config(args.config.as_deref(), &state_dir, args.agent.as_deref())?;
    let profiles = Profiles::load_checked(config.agent.profiles_file.as_deref())
        .map_err(|e| UsageError(e.to_string()))?;
    profiles
        .get(&config.agent.profile)
        .map_err(|e| UsageError(e.to_string()))?;
    // Held until the process ends (before the signal handlers exist: a
    // serve waiting for a run stops on SIGTERM as any process does).
    let _owner = own_state(&state_dir, longest_run(&config), Lang::from_env())?;
    let runtime = tokio::runtime::Runtime::new()?;
    let result = runtime.block_on(serve(args, config, profiles, state_dir));
    // Dropping a runtime waits for its blocking tasks without limit; a stop
    // must not hang on one (a blocking read, a stuck write).
    runtime.shutdown_timeout(SHUTDOWN_GRACE);
    result
}

/// How often a serve waiting for the state directory looks again.
const OWNER_POLL: Duration = Duration::from_millis(100);
/// A run's time besides its command's timeout: its agent's start (20 s at
/// most), attaching, typing and the answer read, with room to spare.
const RUN_START_ALLOWANCE: Duration = Duration::from_secs(120);

/// The longest a `clawmux run` holds the state directory: its command's
/// timeout (the longest this config gives any command) and its start.
fn longest_run(config: &Config) -> Duration {
    let timeouts = &config.timeouts;
    let longest = (timeouts.commands.values().copied())
        .chain([timeouts.default_secs])
        .max()
        .unwrap_or(timeouts.default_secs);
    Duration::from_secs(longest) + RUN_START_ALLOWANCE
}

/// Why this serve cannot have the state directory.
#[derive(Debug, PartialEq, Eq)]
enum Refusal {
    /// A serve answers on the run socket.
    AnotherServe,
    /// A serve holds the directory, its run socket does not answer.
    ServeWithoutSocket { pid: u32 },
    /// Held longer than a run takes.
    HeldTooLong,
}

/// What a serve finding the state directory owned does: wait (`None`),
/// or give up. A serve answering on the run socket, or one that said so
/// in the lock file, is never waited for (it does not end by itself); any
/// other owner is taken for a `clawmux run`, waited for as long as a run
/// lasts (`bound`).
fn judge(
    holder: Holder,
    socket_answers: bool,
    held_for: Duration,
    bound: Duration,
) -> Option<Refusal> {
    match holder {
        _ if socket_answers => Some(Refusal::AnotherServe),
        Holder::Serve { pid } => Some(Refusal::ServeWithoutSocket { pid }),
        Holder::Other { .. } if held_for >= bound => Some(Refusal::HeldTooLong),
        Holder::Other { .. } => None,
    }
}

/// The state directory, owned by this serve: at once, or once the
/// `clawmux run` using it ends (at most `bound`, see [`judge`]).
fn own_state(state_dir: &Path, bound: Duration, lang: Lang) -> anyhow::Result<StateLock> {
    let dir = state_dir.display().to_string();
    let cannot = |e| anyhow::anyhow!("cannot lock the state directory {dir}: {e}");
    let socket_path = socket::socket_path(state_dir);
    let mut told = false;
    // The owner seen, and since when (a new owner starts the bound again).
    let mut seen: Option<(Holder, std::time::Instant)> = None;
    loop {
        if let Some(lock) = StateLock::try_take_serving(state_dir).map_err(cannot)? {
            return Ok(lock);
        }
        let holder = StateLock::holder(state_dir);
        let since = match seen {
            Some((h, since)) if h == holder => since,
            _ => seen.insert((holder, std::time::Instant::now())).1,
        };
        let pid = match holder {
            Holder::Serve { pid } | Holder::Other { pid: Some(pid) } => Some(pid),
            Holder::Other { pid: None } => None,
        };
        let who = match pid {
            Some(pid) => Msg::OwnerPid.with(&[("pid", &pid.to_string())]),
            None => Msg::OwnerPidUnknown.text(),
        };
        let who = who.get(lang).to_string();
        // `msg` in the terminal's language, with the owner, the directory
        // and `more`.
        let say = |msg: Msg, more: Vec<(&'static str, String)>| {
            let mut args = vec![("who", who.clone()), ("dir", dir.clone())];
            args.extend(more);
            let args: Vec<(&str, &str)> = args.iter().map(|(k, v)| (*k, v.as_str())).collect();
            msg.with(&args).get(lang).to_string()
        };
        let answers = std::os::unix::net::UnixStream::connect(&socket_path).is_ok();
        match judge(holder, answers, since.elapsed(), bound) {
            None => {}
            Some(Refusal::AnotherServe) => anyhow::bail!(say(Msg::AnotherServe, vec![])),
            Some(Refusal::ServeWithoutSocket { pid }) => {
                let socket = socket_path.display().to_string();
                let more = vec![("socket", socket), ("pid", pid.to_string())];
                anyhow::bail!(say(Msg::ServeWithoutSocket, more))
            }
            Some(Refusal::HeldTooLong) => {
                let find = match pid {
                    Some(pid) => format!("`ps -p {pid} -o pid,args`"),
                    None => {
                        let lock = state_dir.join(store::dir_lock::LOCK_FILE);
                        format!("`fuser -v {}`", lock.display())
                    }
                };
                let secs = since.elapsed().as_secs().to_string();
                let more = vec![("secs", secs), ("find", find)];
                anyhow::bail!(say(Msg::OwnerHeldTooLong, more))
            }
        }
        if !told {
            told = true;
            eprintln!("{}", say(Msg::WaitingForRun, vec![]));
        }
        std::thread::sleep(OWNER_POLL);
    }
}

/// How long a stop waits for the runtime's blocking tasks before the
/// process exits anyway.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(300);

/// Why the daemon stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// The daemon's loop ended (its chat channel closed).
    Finished,
    Signal(&'static str),
    /// End of input on the console (Ctrl-D).
    EndOfInput,
    /// The Feishu intake stopped for good: no event can arrive any more.
    IntakeLost,
}

/// Resolves at the first of SIGINT, SIGTERM and SIGHUP. Handlers are
/// installed before the daemon starts, so an early signal is not lost.
fn stop_signals() -> anyhow::Result<impl Future<Output = Stop>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut int = signal(SignalKind::interrupt()).context("cannot handle SIGINT")?;
    let mut term = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
    let mut hup = signal(SignalKind::hangup()).context("cannot handle SIGHUP")?;
    Ok(async move {
        tokio::select! {
            _ = int.recv() => Stop::Signal("SIGINT"),
            _ = term.recv() => Stop::Signal("SIGTERM"),
            _ = hup.recv() => Stop::Signal("SIGHUP"),
        }
    })
}

/// After the daemon finished, how long to wait for the Feishu intake to
/// say why it stopped (it ends at the same moment when it stops for good).
const INTAKE_REASON_WAIT: Duration = Duration::from_millis(500);

/// After end of input, how long the daemon may go on handling the lines
/// read before it (it normally returns at once when they are handled).
const EOF_GRACE: Duration = Duration::from_secs(2);

/// After end of input on the console, how long the cards still queued may
/// take to be printed.
const OUTBOX_DRAIN_GRACE: Duration = Duration::from_secs(2);
/// How often the drain looks at the outbox (the console prints at once).
const OUTBOX_DRAIN_POLL: Duration = Duration::from_millis(20);

async fn outbox_drained(shared: &SharedState) {
    while shared.read(|s| !s.outbox.is_empty()) {
        tokio::time::sleep(OUTBOX_DRAIN_POLL).await;
    }
}

async fn eof_then_grace(eof: impl Future<Output = ()>) {
    eof.await;
    tokio::time::sleep(EOF_GRACE).await;
}

async fn serve(
    args: Args,
    config: Config,
    profiles: Profiles,
    state_dir: PathBuf,
) -> anyhow::Result<ExitCode> {
    let signals = stop_signals()?;
    let (shared, opened) = SharedState::open_reporting(&state_dir)?;
    let lang = Lang::from_env();
    if let Some(note) = serve_notes::migration(opened.migration.as_ref(), lang) {
        eprintln!("{note}");
    }
    match opened.loaded {
        Loaded::Backup { backup, problem } => {
            eprintln!("clawmux: {problem}; using the backup {}", backup.display())
        }
        Loaded::Reset { problem } => {
            eprintln!("clawmux: {problem}; no good backup, starting with empty state")
        }
        Loaded::Current | Loaded::Fresh => {}
    }
    let hook_rx = daemon::listen_for_hooks(&state_dir).unwrap_or_else(|e| {
        eprintln!("clawmux: Claude Code hooks are off: {e}");
        mpsc::channel(1).1
    });
    let (chat_tx, chat_rx) = mpsc::channel(CHAT_CAPACITY);
    let use_console = args.console || !config.has_feishu();
    let mut end_of_input = None;
    let mut intake_task = None;
    let rates = RateWindow::default();
    if use_console {
        let why = if args.console {
            "--console"
        } else {
            Msg::NoCredentials.template(lang)
        };
        let (agent, dir) = (&config.agent.command, state_dir.display().to_string());
        let serving = Msg::ConsoleServing.with(&[("why", why), ("agent", agent), ("dir", &dir)]);
        println!(
            "{}\n{}",
            serving.get(lang),
            shared.read(|state| serve_notes::greeting(state, lang))
        );
        let courier = console::ConsoleCourier::from_env();
        let buttons = courier.buttons.clone();
        tokio::spawn(outbox::run(shared.clone(), courier));
        if config.feishu.stream_answers {
            tokio::spawn(streaming::run(
                shared.clone(),
                streaming::ConsoleStream::from_env(),
            ));
        }
        end_of_input = Some(console::spawn_stdin_reader(chat_tx, buttons));
    } else {
        let (courier, intake) =
            feishu_channel::start(&config, &shared, &state_dir, chat_tx, rates.clone()).await?;
        intake_task = Some(intake);
        if config.feishu.stream_answers {
            let sink = streaming::FeishuStream(courier.api());
            tokio::spawn(streaming::run(shared.clone(), sink));
        }
        tokio::spawn(outbox::run(shared.clone(), courier));
        eprintln!(
            "clawmux: serving Feishu ({:?} intake); state in {}",
            config.feishu.mode,
            state_dir.display()
        );
    }
    shared.log.event(&LogEvent::Serve {
        console: use_console,
        agent: config.agent.command.clone(),
    });
    let tmux = config.tmux.clone();
    let setup = DaemonSetup {
        config: Arc::new(config),
        shared,
        profiles,
        state_dir: state_dir.clone(),
        sim_agent: sim_agent_command()?,
        rates,
        actors: TaskTracker::new(),
    };
    let log = setup.shared.log.clone();
    let shared = setup.shared.clone();
    let eof = async {
        match end_of_input {
            // Also a reader that could not start: the console takes no input.
            Some(done) => {
                let _ = done.await;
            }
            None => std::future::pending().await,
        }
    };
    // Why the intake stopped by itself; pending while it runs (or when
    // it ended because the daemon closed its channel).
    let mut lost = None;
    let has_intake = intake_task.is_some();
    let intake_lost = async {
        match intake_task {
            Some(task) => match task.await {
                Ok(Some(why)) => why,
                Ok(None) | Err(_) => std::future::pending().await,
            },
            None => std::future::pending().await,
        }
    };
    let daemon = Daemon::new(setup).watch_versions();
    if let Err(e) = socket::listen(&state_dir, daemon.runs()) {
        eprintln!("clawmux: clawmux run cannot reach this serve: {e}");
    }
    tokio::pin!(intake_lost);
    let mut stop = tokio::select! {
        why = &mut intake_lost => {
            lost = Some(why);
            Stop::IntakeLost
        }
        _ = daemon.run(chat_rx, hook_rx) => Stop::Finished,
        stop = signals => stop,
        // The daemon also ends once it has drained the closed chat channel;
        // this stops it even while it is busy with a project.
        () = eof_then_grace(eof) => Stop::EndOfInput,
    };
    if stop == Stop::Finished && has_intake {
        // The intake ending closes the daemon's chat channel too, so the
        // daemon may finish first: a lost intake is still the reason.
        if let Ok(why) = tokio::time::timeout(INTAKE_REASON_WAIT, &mut intake_lost).await {
            lost = Some(why);
            stop = Stop::IntakeLost;
        }
    }
    if stop == Stop::Finished && use_console && !has_intake {
        // The console's chat channel closes only at the end of its input
        // (Ctrl-D, or a pipe that ended): the daemon drained it and ended
        // before the grace after it ran out.
        stop = Stop::EndOfInput;
    }
    let reason = match stop {
        Stop::Finished => "finished",
        Stop::Signal(name) => name,
        Stop::EndOfInput => "end of input",
        Stop::IntakeLost => "no Feishu events can arrive",
    };
    if use_console && stop != Stop::Signal("SIGINT") && stop != Stop::Signal("SIGTERM") {
        // `echo /gsd:help | clawmux serve --console`: the cards made for the
        // last lines are printed before the process ends (a bounded wait; what
        // is left stays in the outbox for the next start).
        let _ = tokio::time::timeout(OUTBOX_DRAIN_GRACE, outbox_drained(&shared)).await;
    }
    log.event(&LogEvent::ServeStopped {
        reason: reason.to_string(),
    });
    if use_console {
        let running = serve_notes::agent_sessions(&tmux).await;
        let left =
            shared.read(|state| serve_notes::left_running(state, running, &tmux.socket, lang));
        let reason = match stop {
            Stop::Finished => Msg::StopFinished.template(lang),
            Stop::EndOfInput => Msg::StopEndOfInput.template(lang),
            Stop::IntakeLost => Msg::StopIntakeLost.template(lang),
            Stop::Signal(name) => name,
        };
        let stopped = Msg::ConsoleStopped.with(&[("reason", reason), ("left", &left)]);
        eprintln!("{}", stopped.get(lang));
    }
    if let Some(why) = lost {
        // A supervisor restarts a failed daemon; exiting 0 would leave the
        // bot deaf. main prints this as one line.
        anyhow::bail!("stopped: {why}; no Feishu events can arrive");
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_serve_waits_for_a_run_as_long_as_a_run_lasts_and_never_for_a_serve() {
        let bound = Duration::from_secs(60);
        let (run, serve) = (Holder::Other { pid: Some(7) }, Holder::Serve { pid: 7 });
        let short = Duration::from_secs(1);
        assert_eq!(judge(run, false, short, bound), None);
        assert_eq!(judge(run, false, bound, bound), Some(Refusal::HeldTooLong));
        assert_eq!(
            judge(Holder::Other { pid: None }, false, bound * 2, bound),
            Some(Refusal::HeldTooLong)
        );
        assert_eq!(
            judge(serve, false, Duration::ZERO, bound),
            Some(Refusal::ServeWithoutSocket { pid: 7 })
        );
        // An older serve that wrote no pid, answering on its socket.
        assert_eq!(
            judge(Holder::Other { pid: None }, true, Duration::ZERO, bound),
            Some(Refusal::AnotherServe)
        );
        assert_eq!(
            judge(serve, true, Duration::ZERO, bound),
            Some(Refusal::AnotherServe)
        );
    }

    #[test]
    fn a_run_lasts_its_longest_command_timeout_and_its_start() {
        let mut config = Config::default();
        config.timeouts.commands.clear();
        config.timeouts.default_secs = 60;
        assert_eq!(
            longest_run(&config),
            Duration::from_secs(60) + RUN_START_ALLOWANCE
        );
        config
            .timeouts
            .commands
            .insert("execute-phase".into(), 3600);
        assert_eq!(
            longest_run(&config),
            Duration::from_secs(3600) + RUN_START_ALLOWANCE
        );
    }
}
