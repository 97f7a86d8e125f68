//! The programs the bench runs in panes and beside them: a flooding
//! writer, a marker that stamps lines with the time, and the polling
//! baseline (`capture-pane` of every pane on a fixed interval).
//!
//! Writer and marker wait for Enter on their terminal (the bench sends it
//! with `send-keys` to every pane at once), run for the given time, write a
//! JSON report, then wait for the end of their terminal so the pane stays.

use std::io::{BufRead, Read, Write};
use std::os::fd::AsFd;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::BenchError;

/// Bytes a writer hands the terminal per `write`: large enough that system
/// calls are not the limit, small enough to stop close to the deadline.
const WRITE_CHUNK_BYTES: usize = 16 * 1024;
/// The marker stamps one line per interval (the issue asks for one a second).
pub const MARK_INTERVAL: Duration = Duration::from_secs(1);
/// What starts a marker line; the watcher finds the stamp after it.
pub const MARK_PREFIX: &str = "MARK ";

/// What a writer did.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WriterReport {
    /// Bytes whose `write` returned before the deadline.
    pub bytes: u64,
    pub seconds: f64,
}

/// What a marker did.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MarkerReport {
    pub printed: u64,
}

/// What the poller did: `rounds` captures of every pane in `seconds`
/// (fewer than planned when a round takes longer than the interval).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PollerReport {
    pub rounds: u32,
    pub seconds: f64,
    /// Captures that differed from the pane's previous one.
    pub changes: u64,
}

/// Writes neutral log lines (no error, progress or prompt text) to stdout
/// for `seconds`, as fast as the terminal takes them or paced at `rate`
/// bytes a second, then reports the bytes written to `report`.
pub fn writer(seconds: f64, rate: Option<u64>, report: &Path) -> Result<(), BenchError> {
    let mut out = std::fs::File::from(
        std::io::stdout()
            .as_fd()
            .try_clone_to_owned()
            .map_err(|e| BenchError::io("duplicating stdout", e))?,
    );
    let text = flood_text();
    wait_for_enter()?;
    let start = Instant::now();
    let limit = Duration::from_secs_f64(seconds);
    let (mut bytes, mut at) = (0u64, 0usize);
    while start.elapsed() < limit {
        if let Some(rate) = rate.filter(|r| *r > 0) {
            let due = Duration::from_secs_f64(bytes as f64 / rate as f64);
            if let Some(wait) = due.checked_sub(start.elapsed()) {
                std::thread::sleep(wait.min(limit.saturating_sub(start.elapsed())));
                continue;
            }
        }
        let chunk = &text[at..at + WRITE_CHUNK_BYTES];
        out.write_all(chunk)
            .map_err(|e| BenchError::io("writing to the pane", e))?;
        if start.elapsed() < limit {
            bytes += chunk.len() as u64;
        }
        at = (at + WRITE_CHUNK_BYTES) % (text.len() - WRITE_CHUNK_BYTES);
    }
    let seconds = start.elapsed().as_secs_f64().min(seconds);
    write_report(report, &WriterReport { bytes, seconds })?;
    wait_for_end();
    Ok(())
}

/// Prints `MARK <unix-nanos> [k/n]` every [`MARK_INTERVAL`] for `seconds`
/// (the `[k/n]` is a progress pattern of every profile), then reports.
pub fn marker(seconds: f64, report: &Path) -> Result<(), BenchError> {
    wait_for_enter()?;
    let total = (seconds / MARK_INTERVAL.as_secs_f64()).floor().max(1.0) as u64;
    let start = Instant::now();
    let mut out = std::io::stdout().lock();
    for k in 1..=total {
        let nanos = unix_nanos();
        writeln!(out, "{MARK_PREFIX}{nanos} [{k}/{total}]")
            .and_then(|()| out.flush())
            .map_err(|e| BenchError::io("writing to the pane", e))?;
        let next = MARK_INTERVAL * u32::try_from(k).unwrap_or(u32::MAX);
        if let Some(wait) = next.checked_sub(start.elapsed()) {
            std::thread::sleep(wait);
        }
    }
    drop(out);
    write_report(report, &MarkerReport { printed: total })?;
    wait_for_end();
    Ok(())
}

/// The polling design: every `interval`, one `tmux capture-pane -p`
/// process per pane, its text compared with the last capture (what a
/// polling bridge does to notice change). Runs until stdin closes; prints
/// `ready` once it knows the panes.
pub fn poller(socket: &str, interval: Duration) -> Result<(), BenchError> {
    let listed = Command::new("tmux")
        .args(["-L", socket, "list-panes", "-a", "-F", "#{pane_id}"])
        .output()
        .map_err(|e| BenchError::io("running tmux list-panes", e))?;
    let panes: Vec<String> = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    let mut last = vec![Vec::new(); panes.len()];
    let stop = stop_on_stdin_end();
    println!("ready");
    let (mut changes, mut rounds) = (0u64, 0u32);
    let start = Instant::now();
    for round in 1u32.. {
        rounds = round;
        for (pane, last) in panes.iter().zip(&mut last) {
            let capture = Command::new("tmux")
                .args(["-L", socket, "capture-pane", "-p", "-t", pane])
                .stdin(Stdio::null())
                .output()
                .map_err(|e| BenchError::io("running tmux capture-pane", e))?;
            if capture.stdout != *last {
                changes += 1;
                *last = capture.stdout;
            }
        }
        if let Some(wait) = (interval * round).checked_sub(start.elapsed()) {
            std::thread::sleep(wait);
        }
        if stop.load(Ordering::Relaxed) {
            break;
        }
    }
    let report = PollerReport {
        rounds,
        seconds: start.elapsed().as_secs_f64(),
        changes,
    };
    println!("{}", serde_json::json!(report));
    Ok(())
}

/// Reads a role's JSON report.
pub fn read_report<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T, BenchError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| BenchError::io(format!("reading {}", path.display()), e))?;
    serde_json::from_str(&text)
        .map_err(|e| BenchError::Role(format!("bad report {}: {e}", path.display())))
}

/// Writes the report whole (temp file, rename): the bench waits for the file.
fn write_report(path: &Path, report: &impl Serialize) -> Result<(), BenchError> {
    let temp = path.with_extension("tmp");
    let json = serde_json::to_vec(report)
        .map_err(|e| BenchError::Role(format!("cannot encode the report: {e}")))?;
    std::fs::write(&temp, json)
        .and_then(|()| std::fs::rename(&temp, path))
        .map_err(|e| BenchError::io(format!("writing {}", path.display()), e))
}

/// About 1 MiB of distinct 80-byte log lines with some colour, none of
/// which any profile reads as an error, progress or a prompt.
fn flood_text() -> Vec<u8> {
    let mut text = Vec::with_capacity(1 << 20);
    let mut n = 0u32;
    while text.len() < 1 << 20 {
        n += 1;
        let line = format!(
            "\x1b[32mcompiling\x1b[0m unit {n:07} of the flood: lorem ipsum dolor sit amet\r\n"
        );
        text.extend_from_slice(line.as_bytes());
    }
    text
}

fn wait_for_enter() -> Result<(), BenchError> {
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| BenchError::io("waiting for the start", e))?;
    Ok(())
}

/// Keeps the pane open (its program alive) until the terminal goes away.
fn wait_for_end() {
    let mut sink = Vec::new();
    let _ = std::io::stdin().lock().read_to_end(&mut sink);
}

/// A flag set when stdin reaches its end (the bench's way to stop a role).
fn stop_on_stdin_end() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    std::thread::spawn(move || {
        let mut sink = [0u8; 64];
        while let Ok(1..) = std::io::stdin().lock().read(&mut sink) {}
        flag.store(true, Ordering::Relaxed);
    });
    stop
}

/// Nanoseconds since the Unix epoch (the clock shared by marker and watcher).
pub fn unix_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clawmux::detect::{DetectorConfig, Millis, PaneWatcher, Profiles};

    #[test]
    fn flood_text_triggers_no_detection() {
        let profile = Profiles::defaults().unwrap().get("gsd").unwrap();
        let mut w = PaneWatcher::new(
            "%0".parse().unwrap(),
            profile,
            DetectorConfig::default(),
            160,
            48,
        );
        let mut seen = Vec::new();
        let text = flood_text();
        w.feed(Millis(0), &text[..64 * 1024], &mut |d| seen.push(d));
        w.tick(Millis(10_000), &mut |d| seen.push(d));
        assert_eq!(seen, vec![]);
        // and the marker line is progress
        w.feed(Millis(10_001), b"MARK 123 [1/30]\r\n", &mut |d| {
            seen.push(d)
        });
        assert!(
            matches!(
                seen[..],
                [clawmux::detect::Detection {
                    kind: clawmux::detect::DetectionKind::Progress(_),
                    ..
                }]
            ),
            "{seen:?}"
        );
    }
}
