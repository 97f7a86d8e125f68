//! `clawmux screenshot -t PANE -o FILE.png`: a picture of any tmux pane,
//! one clawmux does not watch included: its `capture-pane -e -p` output
//! and cursor fed to a fresh terminal model no larger than the picture
//! ([`clawmux::render::Grid::from_capture`], whatever the pane's size)
//! and drawn with the machine's fonts ([`clawmux::render`]).
//!
//! Its errors name the server and the pane: no server on the socket tried
//! (tmux 3.3a says only "error connecting to PATH"), or no such pane on it
//! (tmux 3.3a's `display-message -t` prints an empty line and exits 0 for
//! an unknown pane). Characters no font on the machine has are drawn as
//! boxes and named in a warning on stderr, with the package that brings them.

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
        if info.trim().is_empty() {
            return Err(UsageError(format!(
                "no pane {:?} on {}: list the panes with `tmux {}list-panes -a`",
                args.target,
                server(&args),
                server_args(&args)
            ))
            .into());
        }
        anyhow::bail!(
            "tmux did not say the size of pane {:?} on {}: it answered {:?}",
            args.target,
            server(&args),
            info.trim()
        );
    };
    let capture = tmux(&args, &["capture-pane", "-e", "-p", "-t", &args.target])?;
    let cursor = (shown == 1).then_some((y, x));
    let grid = Grid::from_capture(&capture, cols, rows, cursor);
    let fonts = render::fonts::shared(&FontPaths::default())?;
    let missing = fonts.missing(grid.cells.iter().flat_map(|c| c.text.chars()));
    if !missing.is_empty() {
        eprintln!(
            "clawmux screenshot: warning: no font on this machine has {}: drawn as boxes; {}",
            render::fonts::describe(&missing),
            render::fonts::remedy(&missing)
        );
    }
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

/// Most bytes of tmux's stderr kept: its messages are one short line.
const MAX_TMUX_STDERR_BYTES: u64 = 4096;

/// The server as the user chose it, for messages.
fn server(args: &Args) -> String {
    match args.server.socket() {
        Some(socket) => format!("the tmux server `{}`", socket.args().join(" ")),
        None => "the default tmux server: no -L or -S given".into(),
    }
}

/// The `-L NAME ` / `-S PATH ` words for a tmux command line, or nothing.
fn server_args(args: &Args) -> String {
    args.server
        .socket()
        .map(|s| format!("{} ", s.args().join(" ")))
        .unwrap_or_default()
}

/// Runs tmux with `argv` on the chosen server; its stdout, at most
/// [`render::grid::MAX_CAPTURE_BYTES`]. A failure says which server and
/// pane, and what to do.
fn tmux(args: &Args, argv: &[&str]) -> anyhow::Result<Vec<u8>> {
    let mut cmd = Command::new("tmux");
    if let Some(socket) = args.server.socket() {
        cmd.args(socket.args());
    }
    let mut child = cmd
        .args(argv)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot run tmux (is it installed? `sudo apt-get install tmux`)")?;
    // Read on its own thread: a child blocked writing stderr would never
    // close stdout.
    let stderr = child.stderr.take().map(|e| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            let _ = e.take(MAX_TMUX_STDERR_BYTES).read_to_end(&mut text);
            text
        })
    });
    let mut out = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        stdout
            .take(render::grid::MAX_CAPTURE_BYTES as u64)
            .read_to_end(&mut out)?;
    }
    let status = child.wait()?;
    let stderr = stderr
        .and_then(|t| t.join().ok())
        .map(|e| String::from_utf8_lossy(&e).trim().to_owned())
        .unwrap_or_default();
    if status.success() {
        return Ok(out);
    }
    if let Some(rest) = stderr
        .strip_prefix("error connecting to ")
        .or_else(|| stderr.strip_prefix("no server running on "))
    {
        let socket = rest.split(" (").next().unwrap_or(rest);
        anyhow::bail!(
            "no tmux server at {socket} ({}): name the server the pane is on with -L NAME or -S PATH (clawmux serve's is -L clawmux)",
            server(args)
        );
    }
    if stderr.starts_with("can't find") {
        return Err(UsageError(format!(
            "no pane {:?} on {} (tmux: {stderr}): list the panes with `tmux {}list-panes -a`",
            args.target,
            server(args),
            server_args(args)
        ))
        .into());
    }
    anyhow::bail!(
        "tmux {} on {} failed ({status}): {stderr}",
        argv.first().unwrap_or(&""),
        server(args)
    )
}
