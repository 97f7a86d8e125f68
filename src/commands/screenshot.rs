//! `clawmux screenshot -t PANE -o FILE.png`: a picture of any tmux pane,
//! one clawmux does not watch included: its `capture-pane -e -p` output
//! and cursor fed to a fresh terminal model no larger than the picture
//! ([`clawmux::render::Grid::from_capture`], whatever the pane's size)
//! and drawn with the machine's fonts ([`clawmux::render`]).

use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};

use anyhow::Context;
use clawmux::render::{self, FontPaths, Grid};

use super::UsageError;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    server: super::SocketArgs,
    /// The pane (`%3`, `session:window.pane`).
    #[arg(short = 't', long, value_name = "PANE")]
    target: String,
    /// The PNG file written (created 0600; an existing file is replaced).
    #[arg(short = 'o', long, value_name = "FILE")]
    output: PathBuf,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.target.is_empty() || args.target.contains(['\n', '\r', '\0']) {
        return Err(UsageError(format!("invalid pane {:?}", args.target)).into());
    }
    let format = "#{pane_width} #{pane_height} #{cursor_x} #{cursor_y} #{cursor_flag}";
    let info = tmux(
        &args,
        &["display-message", "-p", "-t", &args.target, format],
    )?;
    let info = String::from_utf8_lossy(&info);
    let n: Vec<u16> = info
        .split_whitespace()
        .filter_map(|f| f.parse().ok())
        .collect();
    let &[cols, rows, x, y, shown] = n.as_slice() else {
        anyhow::bail!("tmux did not say the pane's size: {}", info.trim());
    };
    let capture = tmux(&args, &["capture-pane", "-e", "-p", "-t", &args.target])?;
    let cursor = (shown == 1).then_some((y, x));
    let grid = Grid::from_capture(&capture, cols, rows, cursor);
    let fonts = render::fonts::shared(&FontPaths::default())?;
    let picture = render::render(&grid, &fonts)?;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&args.output)
        .with_context(|| format!("cannot write {}", args.output.display()))?;
    file.write_all(&picture.png)?;
    super::print_out(&format!(
        "{} ({}x{} pixels, {cols}x{rows} cells)\n",
        args.output.display(),
        picture.width,
        picture.height
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// Runs tmux with `argv` on the chosen server; its stdout, at most
/// [`render::grid::MAX_CAPTURE_BYTES`].
fn tmux(args: &Args, argv: &[&str]) -> anyhow::Result<Vec<u8>> {
    let mut cmd = Command::new("tmux");
    if let Some(socket) = args.server.socket() {
        cmd.args(socket.args());
    }
    let mut child = cmd
        .args(argv)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .context("cannot run tmux")?;
    let mut out = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        stdout
            .take(render::grid::MAX_CAPTURE_BYTES as u64)
            .read_to_end(&mut out)?;
    }
    let status = child.wait()?;
    if !status.success() {
        anyhow::bail!("tmux {} failed ({status})", argv.first().unwrap_or(&""));
    }
    Ok(out)
}
