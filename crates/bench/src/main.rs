//! `clawmux-bench`: the load bench (idle cost, floods, detection latency)
//! on real tmux servers, and the hidden roles it runs as helper processes
//! (this same program, started with a role).

#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use clawmux::detect::Profiles;
use clawmux_bench::{self as bench, Settings, roles, watcher};
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

/// Bad usage or bad input: the process exits with code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct UsageError(String);

/// Writes a line to stdout; a reader that went away (`| head`) is not an
/// error: what it wanted was written.
macro_rules! out {
    ($($arg:tt)*) => {
        print_out(&format!("{}\n", format_args!($($arg)*)))?
    };
}

fn print_out(text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

fn main() -> ExitCode {
    clawmux::fds::close_inherited_on_exec();
    let args = Args::parse();
    clawmux::diagnostics::log_to_stderr();
    match run(args) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("clawmux-bench: {err:#}");
            let usage = err.downcast_ref::<UsageError>().is_some();
            ExitCode::from(if usage { 2 } else { 1 })
        }
    }
}

/// The load bench on real tmux servers: idle cost against polling, floods
/// with and without clawmux attached, detection latency under a flood.
#[derive(Parser)]
#[command(name = "clawmux-bench", version)]
struct Args {
    /// A smoke run of a few seconds per part instead of about four minutes.
    #[arg(long)]
    quick: bool,
    /// Also print everything measured as one JSON object after the table.
    #[arg(long)]
    json: bool,
    /// Panes in each flood (default 20; the paced flood's total rate stays).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=500))]
    flood_panes: Option<u16>,
    /// Instead: the gateway with projects on N hosts over ssh to private
    /// loopback sshds (needs /usr/sbin/sshd), against the same panes local.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=100))]
    hosts: Option<u16>,
    #[command(subcommand)]
    role: Option<Role>,
}

/// The helper processes the bench starts (not for direct use).
#[derive(clap::Subcommand)]
enum Role {
    /// Watch every session of a tmux server as the daemon does.
    #[command(hide = true)]
    Watcher {
        #[arg(short = 'L')]
        socket: String,
        #[arg(long, default_value = "gsd")]
        profile: String,
    },
    /// Watch every session of several servers (local or over ssh).
    #[command(hide = true)]
    HostsWatcher {
        /// JSON: `[{"command": [...], "socket": "..."}]`.
        #[arg(long)]
        servers: PathBuf,
        #[arg(long, default_value = "gsd")]
        profile: String,
    },
    /// The polling baseline: capture-pane of every pane on an interval.
    #[command(hide = true)]
    Poller {
        #[arg(short = 'L')]
        socket: String,
        #[arg(long, default_value_t = 500)]
        interval_ms: u64,
    },
    /// Flood the terminal after Enter, report bytes written.
    #[command(hide = true)]
    Writer {
        #[arg(long)]
        seconds: f64,
        /// Bytes a second (default: as fast as possible).
        #[arg(long)]
        rate: Option<u64>,
        #[arg(long)]
        report: PathBuf,
    },
    /// Print a time-stamped marker line every second after Enter.
    #[command(hide = true)]
    Marker {
        #[arg(long)]
        seconds: f64,
        #[arg(long)]
        report: PathBuf,
    },
}

fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.role {
        None => match args.hosts {
            Some(hosts) => run_hosts(args.quick, args.json, usize::from(hosts)),
            None => run_bench(args.quick, args.json, args.flood_panes),
        },
        Some(Role::HostsWatcher { servers, profile }) => run_hosts_watcher(&servers, &profile),
        Some(Role::Watcher { socket, profile }) => run_watcher(&socket, &profile),
        Some(Role::Poller {
            socket,
            interval_ms,
        }) => {
            roles::poller(&socket, Duration::from_millis(interval_ms))?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Role::Writer {
            seconds,
            rate,
            report,
        }) => {
            check_seconds(seconds)?;
            roles::writer(seconds, rate, &report)?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Role::Marker { seconds, report }) => {
            check_seconds(seconds)?;
            roles::marker(seconds, &report)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn check_seconds(seconds: f64) -> anyhow::Result<()> {
    if !(seconds.is_finite() && seconds > 0.0) {
        return Err(UsageError(format!(
            "--seconds must be a positive number, not {seconds}"
        ))
        .into());
    }
    Ok(())
}

fn run_bench(quick: bool, json: bool, flood_panes: Option<u16>) -> anyhow::Result<ExitCode> {
    let exe = std::env::current_exe()?;
    let mut settings = if quick {
        Settings::quick(exe)
    } else {
        Settings::full(exe)
    };
    if let Some(panes) = flood_panes {
        settings.flood_panes = usize::from(panes);
    }
    eprintln!("clawmux bench: {}", machine());
    let results = bench::run_all(&settings, &mut |part| eprintln!("clawmux bench: {part}…"))?;
    let rows = bench::rows(&results);
    out!("machine: {}", machine());
    print!("{}", bench::table(&rows));
    if json {
        out!(
            "{}",
            serde_json::json!({ "rows": rows, "results": results })
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn run_hosts(quick: bool, json: bool, hosts: usize) -> anyhow::Result<ExitCode> {
    let exe = std::env::current_exe()?;
    let settings = if quick {
        Settings::quick(exe)
    } else {
        Settings::full(exe)
    };
    eprintln!("clawmux bench --hosts {hosts}: {}", machine());
    let results = bench::hosts::run_hosts(&settings, hosts)?;
    out!("machine: {}", machine());
    print!("{}", results.table());
    if json {
        out!("{}", serde_json::json!({ "hosts": results }));
    }
    Ok(ExitCode::SUCCESS)
}

fn run_hosts_watcher(servers: &PathBuf, profile: &str) -> anyhow::Result<ExitCode> {
    let profile = Profiles::defaults()?
        .get(profile)
        .map_err(|e| UsageError(e.to_string()))?;
    let servers = bench::hosts::read_servers(servers).map_err(|e| UsageError(e.to_string()))?;
    let tmux = clawmux::bridge::config::TmuxConfig {
        width: bench::scenario::PANE_SIZE.0,
        height: bench::scenario::PANE_SIZE.1,
        ..Default::default()
    };
    let specs = servers
        .into_iter()
        .enumerate()
        .map(|(i, s)| {
            let host = clawmux::bridge::config::HostConfig {
                command: s.command,
                socket: Some(s.socket),
                workspace_root: None,
                remote_shell: None,
                timeout_secs: None,
            };
            clawmux::bridge::panes::agent_pane::PaneSpec::on_host(
                &format!("h{i}"),
                &host,
                &tmux,
                clawmux::store::state::SessionName::watch(),
            )
        })
        .collect();
    let runtime = tokio::runtime::Runtime::new()?;
    let report = runtime.block_on(async {
        watcher::watch_servers(specs, profile, stop_when_stdin_closes()).await
    })?;
    out!("{}", serde_json::to_string(&report)?);
    Ok(ExitCode::SUCCESS)
}

fn run_watcher(socket: &str, profile: &str) -> anyhow::Result<ExitCode> {
    let profile = Profiles::defaults()?
        .get(profile)
        .map_err(|e| UsageError(e.to_string()))?;
    // The daemon's runtime: multi-threaded, one worker per CPU.
    let runtime = tokio::runtime::Runtime::new()?;
    let report = runtime.block_on(async {
        let stop = stop_when_stdin_closes();
        watcher::watch(socket, profile, bench::scenario::PANE_SIZE, stop).await
    })?;
    out!("{}", serde_json::to_string(&report)?);
    Ok(ExitCode::SUCCESS)
}

/// CPUs, memory and tmux version, for the README line.
fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, usize::from);
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or("?".into(), |kb| {
            format!("{:.1} GiB", kb as f64 / 1024.0 / 1024.0)
        });
    let tmux = std::process::Command::new("tmux")
        .arg("-V")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|_| "tmux ?".into());
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_default();
    format!(
        "{cpus} CPUs ({cpu}), {mem} RAM, {tmux}, {}",
        std::env::consts::OS
    )
}

/// Cancelled when stdin closes: the bench closes a watcher's stdin to stop
/// it.
fn stop_when_stdin_closes() -> CancellationToken {
    let stop = CancellationToken::new();
    let stopper = stop.clone();
    tokio::spawn(async move {
        let mut sink = Vec::new();
        let _ = tokio::io::stdin().read_to_end(&mut sink).await;
        stopper.cancel();
    });
    stop
}
