//! `clawmux record`: attach a control client to a session and save the
//! control-mode stream with each line's arrival time, in the
//! `clawmux-recording v1` format ([`clawmux::control::recording`]), which
//! `clawmux decode` and `clawmux detect` read like a plain `.ctl` capture.
//!
//! A recording starts with each pane's screen as it was (`capture-pane`,
//! written as one `%output` line per pane at `+0`: clear, the rows, the
//! cursor), so a recording begun while an agent is already running replays
//! from what was on screen, not from a blank pane.
//!
//! Recording stops when the session ends (tmux sends `%exit`), on Ctrl-C or
//! SIGTERM. Every line is flushed as it arrives, so a recorder that is
//! killed loses nothing already received.

use std::fs;
use std::io::BufWriter;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use clawmux::control::MAX_LINE_BYTES;
use clawmux::control::recording::{RecordingHeader, RecordingWriter};
use tokio::io::{AsyncBufReadExt, AsyncReadExt};

use super::UsageError;

/// How long tmux gets to end its control client after its stdin closes.
const DETACH_GRACE: Duration = Duration::from_secs(2);

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    server: super::SocketArgs,
    /// Session to record.
    #[arg(short = 't', long, value_name = "SESSION")]
    target: String,
    /// The recording file (created 0600; an existing file is replaced).
    #[arg(short = 'o', long, value_name = "FILE")]
    output: PathBuf,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.target.is_empty() || args.target.contains(['\n', '\r', '\0']) {
        return Err(UsageError(format!("invalid session name {:?}", args.target)).into());
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(record(args))
}

fn tmux_base(args: &Args) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new("tmux");
    if let Some(socket) = args.server.socket() {
        cmd.args(socket.args());
    }
    cmd
}

/// Asks tmux for the session's window size and its version.
async fn header(args: &Args) -> anyhow::Result<RecordingHeader> {
    // `display-message -t` falls back to another session when the target
    // does not exist: ask for exactly this one first.
    let exists = tmux_base(args)
        .args(["has-session", "-t", &format!("={}", args.target)])
        .output()
        .await
        .context("running tmux")?;
    if !exists.status.success() {
        return Err(UsageError(format!(
            "no session {:?} on that tmux server: {}",
            args.target,
            String::from_utf8_lossy(&exists.stderr).trim()
        ))
        .into());
    }
    let out = tmux_base(args)
        .args(["display-message", "-p", "-t", &format!("={}:", args.target)])
        .arg("#{window_width} #{window_height}")
        .output()
        .await
        .context("running tmux")?;
    if !out.status.success() {
        return Err(UsageError(format!(
            "no session {:?} on that tmux server: {}",
            args.target,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
        .into());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut dims = text.split_whitespace().map(str::parse::<u16>);
    let version = tokio::process::Command::new("tmux")
        .arg("-V")
        .output()
        .await
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .filter(|v| !v.is_empty());
    Ok(RecordingHeader {
        session: Some(args.target.clone()),
        cols: dims.next().and_then(Result::ok),
        rows: dims.next().and_then(Result::ok),
        tmux: version,
    })
}

/// Longest screen capture kept per pane: a 500x200 screen with colours is
/// well under a MiB; more means something is wrong, and it is cut.
const MAX_SCREEN_BYTES: usize = 4 << 20;

/// One `%output %N …` line per pane of the session: clear the screen, draw
/// the captured rows (with colours), put the cursor back.
async fn initial_screens(args: &Args) -> anyhow::Result<Vec<Vec<u8>>> {
    let panes = tmux_base(args)
        .args(["list-panes", "-s", "-t", &format!("={}", args.target)])
        .args(["-F", "#{pane_id} #{cursor_x} #{cursor_y}"])
        .output()
        .await?;
    let mut lines = Vec::new();
    for row in String::from_utf8_lossy(&panes.stdout).lines() {
        let mut fields = row.split(' ');
        let (Some(pane), Some(x), Some(y)) = (fields.next(), fields.next(), fields.next()) else {
            continue;
        };
        let (Ok(x), Ok(y)) = (x.parse::<u32>(), y.parse::<u32>()) else {
            continue;
        };
        if pane.parse::<clawmux::control::PaneId>().is_err() {
            continue;
        }
        let capture = tmux_base(args)
            .args(["capture-pane", "-p", "-e", "-t", pane])
            .output()
            .await?;
        let mut screen = b"\x1b[H\x1b[2J".to_vec();
        let text = capture
            .stdout
            .strip_suffix(b"\n")
            .unwrap_or(&capture.stdout);
        for (i, row) in text.split(|&b| b == b'\n').enumerate() {
            if i > 0 {
                screen.extend_from_slice(b"\r\n");
            }
            screen.extend_from_slice(row);
        }
        screen.truncate(MAX_SCREEN_BYTES);
        screen.extend_from_slice(format!("\x1b[0m\x1b[{};{}H", y + 1, x + 1).as_bytes());
        let mut line = format!("%output {pane} ").into_bytes();
        line.extend_from_slice(&clawmux::control::escape(&screen));
        lines.push(line);
    }
    Ok(lines)
}

async fn record(args: Args) -> anyhow::Result<ExitCode> {
    let header = header(&args).await?;
    let file = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&args.output)
        .with_context(|| format!("creating {}", args.output.display()))?;
    let mut writer = RecordingWriter::new(BufWriter::new(file), &header)
        .and_then(|mut w| w.flush().map(|()| w))
        .with_context(|| format!("writing {}", args.output.display()))?;

    let screens = initial_screens(&args)
        .await
        .context("capturing the panes' screens")?;
    for line in &screens {
        writer
            .line(0, line)
            .with_context(|| format!("writing {}", args.output.display()))?;
    }
    let mut child = tmux_base(&args)
        .args(["-C", "attach-session", "-t", &format!("={}", args.target)])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .context("starting the tmux control client")?;
    let start = Instant::now();
    let mut stdin = child.stdin.take();
    let stdout = child
        .stdout
        .take()
        .context("the tmux control client has no stdout")?;
    let mut reader = tokio::io::BufReader::new(stdout);
    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("installing the SIGTERM handler")?;
    eprintln!(
        "clawmux: recording session {} to {}; Ctrl-C to stop",
        args.target,
        args.output.display()
    );
    let mut line = Vec::new();
    let mut lines: u64 = 0;
    let mut stop_at: Option<tokio::time::Instant> = None;
    loop {
        line.clear();
        let read = async {
            // Bounded: an over-long line is written in pieces, as tmux sent
            // it; the decoder drops it on replay.
            let mut limited = (&mut reader).take(MAX_LINE_BYTES as u64);
            limited.read_until(b'\n', &mut line).await
        };
        let deadline = async {
            match stop_at {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        let n = tokio::select! {
            n = read => n.context("reading the tmux control client")?,
            _ = tokio::signal::ctrl_c(), if stop_at.is_none() => {
                stdin.take();
                stop_at = Some(tokio::time::Instant::now() + DETACH_GRACE);
                continue;
            }
            _ = sigterm.recv(), if stop_at.is_none() => {
                stdin.take();
                stop_at = Some(tokio::time::Instant::now() + DETACH_GRACE);
                continue;
            }
            () = deadline => break,
        };
        if n == 0 {
            break;
        }
        let at_ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
        writer
            .line(at_ms, &line)
            .and_then(|()| writer.flush())
            .with_context(|| format!("writing {}", args.output.display()))?;
        lines += 1;
    }
    drop(stdin);
    let _ = child.start_kill();
    let _ = child.wait().await;
    writer
        .flush()
        .with_context(|| format!("writing {}", args.output.display()))?;
    eprintln!(
        "clawmux: recorded {lines} lines to {}",
        args.output.display()
    );
    Ok(ExitCode::SUCCESS)
}
