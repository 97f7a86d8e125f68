//! `clawmux decode`: a recorded control-mode stream on stdin, decoded; a
//! plain capture or a timed `clawmux record` recording (times ignored).
//!
//! `--pane %N` writes exactly the bytes that pane's program wrote; `--events`
//! one JSON object per parsed line; neither prints a per-pane summary.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::process::ExitCode;

use clawmux::control::recording::{RecordingError, RecordingReader};
use clawmux::control::{Decoder, Event, Notification, PaneId};

use super::UsageError;

#[derive(clap::Args)]
pub struct Args {
    /// Write this pane's decoded bytes, exactly, to stdout (e.g. `%0`).
    #[arg(long, value_name = "%N", conflicts_with = "events")]
    pane: Option<PaneId>,
    /// Print one JSON object per parsed line.
    #[arg(long)]
    events: bool,
}

/// What `decode` prints.
enum Mode {
    Pane(PaneId),
    Events,
    Summary(BTreeMap<PaneId, u64>),
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut mode = match (args.pane, args.events) {
        (Some(pane), _) => Mode::Pane(pane),
        (None, true) => Mode::Events,
        (None, false) => Mode::Summary(BTreeMap::new()),
    };
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let mut decoder = Decoder::new();
    let mut input =
        RecordingReader::new(io::stdin().lock()).map_err(|e| UsageError(e.to_string()))?;
    let mut written: io::Result<()> = Ok(());
    loop {
        let chunk = match input.next_chunk() {
            Ok(Some(chunk)) => chunk,
            Ok(None) => break,
            Err(RecordingError::Io(e)) => return Err(anyhow::anyhow!("reading stdin: {e}")),
            Err(e) => return Err(UsageError(e.to_string()).into()),
        };
        decoder.feed(chunk.bytes, &mut |event| {
            if written.is_ok() {
                written = handle(&mut mode, &mut out, event);
            }
        });
        if written.is_err() {
            break;
        }
    }
    decoder.finish(&mut |event| {
        if written.is_ok() {
            written = handle(&mut mode, &mut out, event);
        }
    });
    match written.and_then(|()| finish_output(&mode, &mut out)) {
        // The reader went away (`| head`): not an error of ours.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(ExitCode::SUCCESS),
        Err(e) => return Err(anyhow::anyhow!("writing stdout: {e}")),
        Ok(()) => {}
    }

    let c = decoder.counters();
    if c.invalid_lines + c.malformed_escapes + c.reply_lines_dropped > 0 {
        return Err(UsageError(format!(
            "the input is not a clean control-mode stream: {} bad lines ({} over {} bytes, dropped), \
             {} malformed escapes (kept literally), {} reply lines dropped; everything else was decoded",
            c.invalid_lines,
            c.lines_too_long,
            clawmux::control::MAX_LINE_BYTES,
            c.malformed_escapes,
            c.reply_lines_dropped
        ))
        .into());
    }
    Ok(ExitCode::SUCCESS)
}

fn finish_output(mode: &Mode, out: &mut impl Write) -> io::Result<()> {
    if let Mode::Summary(panes) = mode {
        let panes: BTreeMap<String, u64> = panes.iter().map(|(p, n)| (p.to_string(), *n)).collect();
        serde_json::to_writer(&mut *out, &serde_json::json!({ "pane_bytes": panes }))?;
        writeln!(out)?;
    }
    out.flush()
}

fn handle(mode: &mut Mode, out: &mut impl Write, event: Event) -> io::Result<()> {
    match mode {
        Mode::Pane(want) => match &event {
            Event::Notification(
                Notification::Output { pane, data }
                | Notification::ExtendedOutput { pane, data, .. },
            ) if pane == want => out.write_all(data),
            _ => Ok(()),
        },
        Mode::Events => {
            serde_json::to_writer(&mut *out, &event)?;
            writeln!(out)
        }
        Mode::Summary(panes) => {
            if let Event::Notification(
                Notification::Output { pane, data }
                | Notification::ExtendedOutput { pane, data, .. },
            ) = &event
            {
                *panes.entry(*pane).or_default() += data.len() as u64;
            }
            Ok(())
        }
    }
}
