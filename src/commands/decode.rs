//! `clawmux decode`: a recorded control-mode stream on stdin, decoded; a
//! plain capture or a timed `clawmux record` recording (times ignored).
//!
//! `--pane %N` writes exactly the bytes that pane's program wrote (to a
//! terminal, with control characters shown as `\x1b` rather than obeyed);
//! `--events` one JSON object per parsed line; neither prints a per-pane
//! summary. Input with no control-mode line at all is bad input (exit 2),
//! and lines that were not control mode are counted on stderr.

use std::collections::BTreeMap;
use std::io::{self, IsTerminal, Write};
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
    /// The pane's bytes; escaped when `.1` (stdout is a terminal).
    Pane(PaneId, bool),
    Events,
    Summary(BTreeMap<PaneId, u64>),
}

/// How much of the input was control mode.
#[derive(Default)]
struct Seen {
    control: u64,
    other: u64,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut mode = match (args.pane, args.events) {
        (Some(pane), _) => Mode::Pane(pane, io::stdout().is_terminal()),
        (None, true) => Mode::Events,
        (None, false) => Mode::Summary(BTreeMap::new()),
    };
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let mut decoder = Decoder::new();
    let mut input =
        RecordingReader::new(io::stdin().lock()).map_err(|e| UsageError(e.to_string()))?;
    let mut written: io::Result<()> = Ok(());
    let mut seen = Seen::default();
    loop {
        let chunk = match input.next_chunk() {
            Ok(Some(chunk)) => chunk,
            Ok(None) => break,
            Err(RecordingError::Io(e)) => return Err(anyhow::anyhow!("reading stdin: {e}")),
            Err(e) => return Err(UsageError(e.to_string()).into()),
        };
        decoder.feed(chunk.bytes, &mut |event| {
            count(&mut seen, &event);
            if written.is_ok() {
                written = handle(&mut mode, &mut out, event);
            }
        });
        if written.is_err() {
            break;
        }
    }
    decoder.finish(&mut |event| {
        count(&mut seen, &event);
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

    if seen.control == 0 {
        return Err(UsageError(format!(
            "the input holds no control-mode line ({} other lines): not a `tmux -C` recording",
            seen.other
        ))
        .into());
    }
    if seen.other > 0 {
        eprintln!(
            "clawmux decode: {} lines were not control mode (kept out of the output)",
            seen.other
        );
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

fn count(seen: &mut Seen, event: &Event) {
    match event {
        Event::Notification(_) | Event::Reply(_) => seen.control += 1,
        Event::Stray(_) | Event::Invalid { .. } => seen.other += 1,
    }
}

fn finish_output(mode: &Mode, out: &mut impl Write) -> io::Result<()> {
    if let Mode::Summary(panes) = mode {
        let panes: BTreeMap<String, u64> = panes.iter().map(|(p, n)| (p.to_string(), *n)).collect();
        let json = serde_json::json!({ "pane_bytes": panes }).to_string();
        writeln!(out, "{}", escape_json_line(&json))?;
    }
    out.flush()
}

fn handle(mode: &mut Mode, out: &mut impl Write, event: Event) -> io::Result<()> {
    match mode {
        Mode::Pane(want, tty) => match &event {
            Event::Notification(
                Notification::Output { pane, data }
                | Notification::ExtendedOutput { pane, data, .. },
            ) if pane == want => {
                if *tty {
                    out.write_all(&escape_bytes(data))
                } else {
                    out.write_all(data)
                }
            }
            _ => Ok(()),
        },
        Mode::Events => {
            let json = serde_json::to_string(&event).map_err(io::Error::other)?;
            writeln!(out, "{}", escape_json_line(&json))
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

// Text for a terminal: control characters shown, never obeyed. What
// `decode` and `detect` print comes from pane output, which can hold
// escape sequences that would drive the reader's terminal.

/// `line` (one JSON document) with the characters JSON leaves raw but a
/// terminal may obey escaped: DEL and the C1 controls (U+007F–U+009F, e.g.
/// U+009B, a CSI on some terminals). The JSON means the same.
pub(super) fn escape_json_line(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    for c in line.chars() {
        if ('\u{7f}'..='\u{9f}').contains(&c) {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// Raw pane bytes made safe to show: newlines and tabs kept, other C0
/// controls, DEL and the C1 controls (as bytes or as UTF-8 characters)
/// written as `\xNN` / `\u{NN}`.
pub(super) fn escape_bytes(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len());
    for chunk in data.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\n' | '\t' => out.push(c as u8),
                c if c < ' ' || c == '\u{7f}' => {
                    out.extend_from_slice(format!("\\x{:02x}", u32::from(c)).as_bytes());
                }
                c if ('\u{80}'..='\u{9f}').contains(&c) => {
                    out.extend_from_slice(format!("\\u{{{:02x}}}", u32::from(c)).as_bytes());
                }
                c => {
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
            }
        }
        for b in chunk.invalid() {
            out.extend_from_slice(format!("\\x{b:02x}").as_bytes());
        }
    }
    out
}

#[cfg(test)]
mod escape_tests {
    use super::*;

    #[test]
    fn controls_are_shown_not_obeyed() {
        assert_eq!(
            escape_bytes(b"a\x1b[2Jb\r\n\tc\x7f\xc2\x9b\x9b"),
            b"a\\x1b[2Jb\\x0d\n\tc\\x7f\\u{9b}\\x9b".to_vec()
        );
        assert_eq!(escape_bytes("é✻".as_bytes()), "é✻".as_bytes());
        let json = escape_json_line("{\"a\":\"x\u{9b}y\u{7f}é\"}");
        assert_eq!(json, "{\"a\":\"x\\u009by\\u007fé\"}");
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["a"], "x\u{9b}y\u{7f}é");
    }
}
