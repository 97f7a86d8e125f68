//! `clawmux watch`: attach a control client to a running tmux server and
//! print what happens, live, one line an event (flushed at once): the
//! notifications, and the detections the panes' output gives.

use std::collections::HashMap;
use std::io::{self, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clawmux::control::PaneId;
use clawmux::detect::{Detection, DetectorConfig, Millis, PaneWatcher, Profiles};
use clawmux::store::clock::now_ms;
use clawmux::tmux::{self, ClientConfig, ClientEvent, TmuxCommand, TmuxError};

use clawmux::text_escape::{Keep, escape_controls};

use super::UsageError;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    server: super::SocketArgs,
    /// Session to attach to (default: the most recently used).
    #[arg(short = 't', long, value_name = "SESSION")]
    target: Option<String>,
    /// One JSON object a line: `{"ts":…,"kind":…,"pane":"%3",…}`.
    #[arg(long)]
    json: bool,
    /// Detection profile for the detections printed next to the output.
    #[arg(long, default_value = "gsd")]
    profile: String,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(watch(args))
}

async fn watch(args: Args) -> anyhow::Result<ExitCode> {
    // The profile is compiled before attaching: a watcher that compiles
    // its patterns once attached (half a second in a debug build, more on
    // a loaded machine) takes a whole short turn in one burst, too late to
    // see it busy.
    let profile = Profiles::defaults()?
        .get(&args.profile)
        .map_err(|e| UsageError(e.to_string()))?;
    let mut config = ClientConfig::attach(args.target.as_deref());
    config.socket = args.server.socket();
    let client = tmux::connect(config)
        .await
        .map_err(|e| anyhow::anyhow!("{e} (is a tmux server running on that socket?)"))?;
    let mut events = client.subscribe();
    let (id, name) = client.session();
    eprintln!("clawmux: watching session {name} ({id}); Ctrl-C to stop");
    let stdout = io::stdout();
    let epoch = Instant::now();
    let mut panes: HashMap<PaneId, PaneWatcher> = HashMap::new();
    let mut found = Vec::new();
    loop {
        let next = panes.values().filter_map(PaneWatcher::next_deadline).min();
        let wake = next.map(|m| epoch + Duration::from_millis(m.0));
        let event = tokio::select! {
            _ = tokio::signal::ctrl_c() => return Ok(ExitCode::SUCCESS),
            event = events.recv() => event,
            _ = sleep_until(wake) => {
                let now = Millis(epoch.elapsed().as_millis() as u64);
                panes.values_mut().for_each(|w| w.tick(now, &mut |d| found.push(d)));
                print_detections(&mut stdout.lock(), &mut found, args.json)?;
                continue;
            }
        };
        let Some(event) = event else {
            return Ok(ExitCode::SUCCESS);
        };
        if let ClientEvent::Output { pane, data } = &event {
            if !panes.contains_key(pane) {
                let (cols, rows) = pane_size(&client, *pane).await;
                panes.insert(
                    *pane,
                    PaneWatcher::new(
                        *pane,
                        profile.clone(),
                        DetectorConfig::default(),
                        cols,
                        rows,
                    ),
                );
            }
            let now = Millis(epoch.elapsed().as_millis() as u64);
            if let Some(watcher) = panes.get_mut(pane) {
                watcher.feed(now, data, &mut |d| found.push(d));
            }
        }
        let mut out = stdout.lock();
        if args.json {
            let mut json = serde_json::to_value(&event)?;
            if let Some(object) = json.as_object_mut() {
                object.insert("ts".into(), now_ms().into());
            }
            writeln!(out, "{json}")?;
        } else {
            writeln!(out, "{}", readable(&event)?)?;
        }
        print_detections(&mut out, &mut found, args.json)?;
        out.flush()?;
        if let ClientEvent::Ended(end) = event {
            return match end {
                TmuxError::Exited { .. } => Ok(ExitCode::SUCCESS),
                other => Err(other.into()),
            };
        }
    }
}

/// [`human`] with every control character made visible: JSON escapes C0
/// controls but leaves DEL and C1 controls (U+009B is CSI to some
/// terminals) as they are.
fn readable(event: &ClientEvent) -> anyhow::Result<String> {
    Ok(escape_controls(&human(event)?, Keep::Nothing).into_owned())
}

/// One line: pane output as escaped text, the rest as compact JSON.
fn human(event: &ClientEvent) -> anyhow::Result<String> {
    Ok(match event {
        ClientEvent::Output { pane, data } => {
            format!("{pane} {}", String::from_utf8_lossy(data).escape_debug())
        }
        other => serde_json::to_string(other)?,
    })
}

/// Prints (and clears) the detections found, as JSON lines or readably
/// (with the pane's control characters escaped).
pub(super) fn print_detections(
    out: &mut impl Write,
    found: &mut Vec<Detection>,
    json: bool,
) -> io::Result<()> {
    for d in found.drain(..) {
        if json {
            let mut value = serde_json::to_value(&d).unwrap_or_default();
            if let Some(object) = value.as_object_mut() {
                object.insert("ts".into(), now_ms().into());
            }
            writeln!(out, "{value}")?;
        } else {
            let line = format!("{} detected {}", d.pane, d.to_json());
            writeln!(out, "{}", escape_controls(&line, Keep::Nothing))?;
        }
    }
    out.flush()
}

/// The pane's size, so its screen model wraps like the real one.
async fn pane_size(client: &tmux::Client, pane: PaneId) -> (u16, u16) {
    let cmd = TmuxCommand::new("display-message")
        .args(["-p"])
        .target_pane(pane)
        .arg("#{pane_width} #{pane_height}");
    let reply = client.command(cmd).await.unwrap_or_default();
    let text = reply
        .first()
        .map(|l| String::from_utf8_lossy(l).into_owned())
        .unwrap_or_default();
    let mut dims = text
        .split_whitespace()
        .filter_map(|n| n.parse::<u16>().ok());
    (dims.next().unwrap_or(80), dims.next().unwrap_or(24))
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readable_lines_hold_no_control_characters() {
        let hostile: &[u8] = b"\x1b]2;title\x07\x1b[2J\xc2\x9b31m\x7fok\r\n";
        for event in [
            ClientEvent::Output {
                pane: PaneId(3),
                data: bytes::Bytes::from_static(hostile),
            },
            ClientEvent::Stray(bytes::Bytes::from_static(hostile)),
        ] {
            let line = readable(&event).unwrap();
            assert!(!line.chars().any(char::is_control), "{line:?}");
            assert!(line.contains("ok"), "{line}");
        }
        // Without the escaping, JSON would have let C1 and DEL through.
        let raw = human(&ClientEvent::Stray(bytes::Bytes::from_static(hostile))).unwrap();
        assert!(raw.contains('\u{9b}'), "{raw:?}");
    }
}
