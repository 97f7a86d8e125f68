//! `clawmux detect`: the detections in a recorded control-mode stream on
//! stdin, one JSON object a line, deterministic. A timed `clawmux record`
//! recording is replayed at its recorded times (the detector's clock follows
//! them; nothing sleeps) and at its recorded window size. Input with no
//! control-mode line is bad input (exit 2); lines that were not control
//! mode, and panes past the per-stream bound, are counted on stderr.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clawmux::control::recording::{RecordingError, RecordingReader};
use clawmux::detect::{
    DEFAULT_DEBOUNCE, DEFAULT_PANE_SIZE, Detection, DetectorConfig, MAX_PANES_PER_STREAM, Millis,
    Profiles, StreamWatcher,
};

use super::UsageError;
use super::decode::escape_json_line;

#[derive(clap::Args)]
pub struct Args {
    /// Pattern profile: shell, claude, gsd, codex, or one from --profiles.
    #[arg(long, default_value = "gsd")]
    profile: String,
    /// A TOML file overriding or extending the built-in profiles.
    #[arg(long, value_name = "FILE")]
    profiles: Option<PathBuf>,
    /// A plain capture has no timestamps: each `%output` line is taken to arrive
    /// this many milliseconds after the previous one. The default, longer
    /// than the debounce, judges the screen after every `%output`.
    #[arg(long, default_value_t = 1000, value_name = "MS")]
    gap_ms: u64,
    /// Completion debounce in milliseconds.
    #[arg(long, default_value_t = DEFAULT_DEBOUNCE.as_millis() as u64, value_name = "MS")]
    debounce_ms: u64,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let profiles =
        Profiles::load_checked(args.profiles.as_deref()).map_err(|e| UsageError(e.to_string()))?;
    let profile = profiles
        .get(&args.profile)
        .map_err(|e| UsageError(e.to_string()))?;
    let config = DetectorConfig {
        debounce: Duration::from_millis(args.debounce_ms),
        ..DetectorConfig::default()
    };

    let mut input =
        RecordingReader::new(std::io::stdin().lock()).map_err(|e| UsageError(e.to_string()))?;
    let size = input
        .header()
        .and_then(|h| h.size())
        .unwrap_or(DEFAULT_PANE_SIZE);
    let mut watcher = StreamWatcher::new(profile, config.clone(), size);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut failed = None;
    let mut sink = |d: Detection| {
        if failed.is_none()
            && let Err(e) = writeln!(out, "{}", escape_json_line(&d.to_json()))
        {
            failed = Some(e);
        }
    };
    let mut now = Millis(0);
    let mut at_line_start = true;
    loop {
        // Bounded pieces: an over-long line arrives in parts (the decoder
        // drops it), never as one unbounded buffer.
        let chunk = match input.next_chunk() {
            Ok(Some(chunk)) => chunk,
            Ok(None) => break,
            Err(RecordingError::Io(e)) => {
                return Err(e).context("reading the recording from stdin");
            }
            Err(e) => return Err(UsageError(e.to_string()).into()),
        };
        let line = chunk.bytes;
        if let Some(at) = chunk.at_ms {
            // Deadlines that fell between two recorded lines fire at their
            // time, as they would have live.
            let at = Millis(at);
            while let Some(deadline) = watcher.next_deadline().filter(|d| *d <= at) {
                watcher.tick(deadline.max(now), &mut sink);
                if watcher.next_deadline() == Some(deadline) {
                    break;
                }
            }
            now = at.max(now);
        } else if at_line_start
            && (line.starts_with(b"%output ") || line.starts_with(b"%extended-output "))
        {
            now = now + Duration::from_millis(args.gap_ms);
        }
        at_line_start = line.ends_with(b"\n");
        watcher.feed(now, line, &mut sink);
    }
    // The recording ended: let every pending settle and debounce fire.
    let end = now + config.debounce + config.settle;
    watcher.finish(now, &mut sink);
    watcher.tick(end, &mut sink);
    // A reader that went away (`| head`) had what it wanted: end quietly.
    if let Some(e) = failed.filter(|e| e.kind() != std::io::ErrorKind::BrokenPipe) {
        return Err(e).context("writing detections to stdout");
    }
    let counts = watcher.counts();
    if counts.refused_outputs > 0 {
        eprintln!(
            "clawmux detect: more than {MAX_PANES_PER_STREAM} panes: {} outputs of other panes were not watched",
            counts.refused_outputs
        );
    }
    if counts.control_events == 0 {
        return Err(UsageError(format!(
            "the input holds no control-mode line ({} other lines): not a `tmux -C` recording",
            counts.non_protocol_lines
        ))
        .into());
    }
    if counts.non_protocol_lines > 0 {
        eprintln!(
            "clawmux detect: {} lines were not control mode (skipped)",
            counts.non_protocol_lines
        );
    }
    Ok(ExitCode::SUCCESS)
}
