//! `clawmux watch`: attach a control client to a running tmux server and
//! print what happens, live, one line an event (flushed at once).

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use clawmux::tmux::{self, ClientConfig, ClientEvent, Socket, TmuxError};

#[derive(clap::Args)]
pub struct Args {
    /// tmux socket name (`tmux -L`).
    #[arg(short = 'L', value_name = "SOCKET", conflicts_with = "socket_path")]
    socket_name: Option<String>,
    /// tmux socket path (`tmux -S`).
    #[arg(short = 'S', value_name = "PATH")]
    socket_path: Option<PathBuf>,
    /// Session to attach to (default: the most recently used).
    #[arg(short = 't', long, value_name = "SESSION")]
    target: Option<String>,
    /// One JSON object a line: `{"ts":…,"kind":…,"pane":"%3",…}`.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(watch(args))
}

async fn watch(args: Args) -> anyhow::Result<ExitCode> {
    let mut config = ClientConfig::attach(args.target.as_deref());
    config.socket = match (args.socket_name, args.socket_path) {
        (Some(name), _) => Some(Socket::Name(name)),
        (None, Some(path)) => Some(Socket::Path(path)),
        (None, None) => None,
    };
    let client = tmux::connect(config)
        .await
        .map_err(|e| anyhow::anyhow!("{e} (is a tmux server running on that socket?)"))?;
    let mut events = client.subscribe();
    let (id, name) = client.session();
    eprintln!("clawmux: watching session {name} ({id}); Ctrl-C to stop");
    let stdout = io::stdout();
    loop {
        let event = tokio::select! {
            _ = tokio::signal::ctrl_c() => return Ok(ExitCode::SUCCESS),
            event = events.recv() => event,
        };
        let Some(event) = event else {
            return Ok(ExitCode::SUCCESS);
        };
        let mut out = stdout.lock();
        if args.json {
            let mut json = serde_json::to_value(&event)?;
            if let Some(object) = json.as_object_mut() {
                object.insert("ts".into(), now_ms().into());
            }
            writeln!(out, "{json}")?;
        } else {
            writeln!(out, "{}", human(&event)?)?;
        }
        out.flush()?;
        if let ClientEvent::Ended(end) = event {
            return match end {
                TmuxError::Exited { .. } => Ok(ExitCode::SUCCESS),
                other => Err(other.into()),
            };
        }
    }
}

/// One readable line: pane output as escaped text, the rest as compact JSON.
fn human(event: &ClientEvent) -> anyhow::Result<String> {
    Ok(match event {
        ClientEvent::Output { pane, data } => {
            format!("{pane} {}", String::from_utf8_lossy(data).escape_debug())
        }
        other => serde_json::to_string(other)?,
    })
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
