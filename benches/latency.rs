//! End-to-end detection latency in a real tmux pane, side by side with the
//! design clawmux replaces (poll `capture-pane` every 500 ms; a turn is
//! complete after 3 identical polls), both watching the same pane in the
//! same run.
//!
//! The pane runs this binary as an emitter (`CLAWMUX_LATENCY_EMIT=1`): it
//! prints progress markers carrying their own wall-clock timestamp at random
//! 20-80 ms intervals, then a few agent-like turns (spinner, then the idle
//! box, whose summary line carries the final redraw's timestamp). clawmux
//! watches through `tmux -C` (`StreamWatcher`, `gsd` profile, default
//! 300 ms debounce); the poller runs `tmux capture-pane` in a thread.
//!
//! `cargo bench --bench latency` (env `CLAWMUX_LATENCY_MARKERS`, default
//! 300, and `CLAWMUX_LATENCY_TURNS`, default 8).

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clawmux::detect::{Detection, DetectionKind, DetectorConfig, Millis, Profiles, StreamWatcher};
use rand::Rng;
use regex::Regex;

/// The polling design being replaced.
const POLL_INTERVAL: Duration = Duration::from_millis(500);
/// Identical polls that make the poller call a turn complete.
const STABLE_POLLS: usize = 3;
/// Quiet time after each turn: enough for the poller's stable polls.
const TURN_GAP: Duration = Duration::from_millis(2500);
/// Longest the whole run may take before it is abandoned.
const RUN_LIMIT: Duration = Duration::from_secs(300);

fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

fn env_count(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The program in the pane.
fn emit(markers: usize, turns: usize) {
    let mut out = std::io::stdout().lock();
    let mut rng = rand::rng();
    let rule = "─".repeat(60);
    for i in 0..markers {
        std::thread::sleep(Duration::from_millis(rng.random_range(20..80)));
        let _ = write!(out, "⏺ Progress: 50% mark {i} t={}\r\n", now_ns());
        let _ = out.flush();
    }
    for _ in 0..turns {
        for glyph in ["✶", "✻", "✽"] {
            let _ = write!(out, "\r\x1b[2K{glyph} Working… (esc to interrupt)");
            let _ = out.flush();
            std::thread::sleep(Duration::from_millis(80));
        }
        // The final redraw: summary with its timestamp, then the idle box.
        let _ = write!(
            out,
            "\r\x1b[2K✻ Churned for 1s t={}\r\n\r\n{rule}\r\n❯ \r\n{rule}\r\n  ? for shortcuts\x1b[2A\r\x1b[2C",
            now_ns()
        );
        let _ = out.flush();
        std::thread::sleep(TURN_GAP);
        let _ = write!(out, "\r\x1b[3A\x1b[J");
        let _ = out.flush();
    }
}

/// Latencies in ms, per kind of event.
#[derive(Default)]
struct Samples {
    marker: Vec<f64>,
    completion: Vec<f64>,
}

fn ms_since(t_ns: u128) -> f64 {
    (now_ns().saturating_sub(t_ns)) as f64 / 1e6
}

/// The polling design: capture every 500 ms.
fn poll(socket: String, target: String) -> Samples {
    let marker = Regex::new(r"mark (\d+) t=(\d+)").unwrap_or_else(|e| unreachable!("{e}"));
    let summary = Regex::new(r"Churned for 1s t=(\d+)").unwrap_or_else(|e| unreachable!("{e}"));
    let mut samples = Samples::default();
    let mut seen_markers = BTreeSet::new();
    let mut seen_turns = BTreeSet::new();
    let (mut last, mut same) = (String::new(), 0usize);
    let started = Instant::now();
    while started.elapsed() < RUN_LIMIT {
        let out = Command::new("tmux")
            .args(["-L", &socket, "capture-pane", "-p", "-t", &target])
            .output();
        let Some(out) = out.ok().filter(|o| o.status.success()) else {
            break; // the pane is gone: the run is over
        };
        let screen = String::from_utf8_lossy(&out.stdout).into_owned();
        for c in marker.captures_iter(&screen) {
            if seen_markers.insert(c[1].to_owned()) {
                samples.marker.push(ms_since(c[2].parse().unwrap_or(0)));
            }
        }
        same = if screen == last { same + 1 } else { 1 };
        if same >= STABLE_POLLS
            && screen.contains("? for shortcuts")
            && let Some(c) = summary.captures_iter(&screen).last()
            && seen_turns.insert(c[1].to_owned())
        {
            samples.completion.push(ms_since(c[1].parse().unwrap_or(0)));
        }
        last = screen;
        std::thread::sleep(POLL_INTERVAL);
    }
    samples
}

/// clawmux: a control client and a `StreamWatcher`, detections as they come.
/// Runs until the emitter exits (its session ends, and the client with it).
fn stream(socket: &str) -> Samples {
    let marker = Regex::new(r"mark (\d+) t=(\d+)").unwrap_or_else(|e| unreachable!("{e}"));
    let summary = Regex::new(r"Churned for 1s t=(\d+)").unwrap_or_else(|e| unreachable!("{e}"));
    let mut client = Command::new("tmux")
        .args(["-L", socket, "-f", "/dev/null", "-C", "attach", "-t", "lat"])
        .env("LANG", "C.UTF-8")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("tmux -C attach: {e}"));
    let mut stdout = client
        .stdout
        .take()
        .unwrap_or_else(|| unreachable!("piped"));
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let profile = Profiles::defaults()
        .and_then(|p| p.get("gsd"))
        .unwrap_or_else(|e| panic!("{e}"));
    let mut watcher = StreamWatcher::new(profile, DetectorConfig::default(), (120, 40));
    let start = Instant::now();
    let clock = |at: Instant| Millis(at.duration_since(start).as_millis() as u64);
    let mut samples = Samples::default();
    let mut attached = false;
    while start.elapsed() < RUN_LIMIT {
        let wait = watcher
            .next_deadline()
            .map(|due| {
                (start + Duration::from_millis(due.0)).saturating_duration_since(Instant::now())
            })
            .unwrap_or(Duration::from_secs(1));
        match rx.recv_timeout(wait) {
            Ok(bytes) => {
                watcher.feed(clock(Instant::now()), &bytes, &mut |d| {
                    record(&d, &mut samples, &marker, &summary)
                });
                if !attached && bytes.windows(17).any(|w| w == b"%session-changed ") {
                    attached = true;
                    // The emitter waits for this: no output is missed.
                    let _ = Command::new("tmux")
                        .args(["-L", socket, "wait-for", "-S", "go"])
                        .status();
                }
            }
            Err(RecvTimeoutError::Timeout) => watcher.tick(clock(Instant::now()), &mut |d| {
                record(&d, &mut samples, &marker, &summary)
            }),
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    let _ = client.kill();
    let _ = client.wait();
    samples
}

/// Records the latency a detection carries (its line's own timestamp).
fn record(d: &Detection, samples: &mut Samples, marker: &Regex, summary: &Regex) {
    match &d.kind {
        DetectionKind::Progress(_) => {
            if let Some(c) = marker.captures_iter(&d.context).last() {
                samples.marker.push(ms_since(c[2].parse().unwrap_or(0)));
            }
        }
        DetectionKind::Completed => {
            if let Some(c) = summary.captures_iter(&d.context).last() {
                samples.completion.push(ms_since(c[1].parse().unwrap_or(0)));
            }
        }
        _ => {}
    }
}

fn percentile(sorted: &[f64], p: usize) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}

fn report(what: &str, ours: &mut [f64], theirs: &mut [f64]) {
    ours.sort_by(f64::total_cmp);
    theirs.sort_by(f64::total_cmp);
    let (o50, o99) = (percentile(ours, 50), percentile(ours, 99));
    let (t50, t99) = (percentile(theirs, 50), percentile(theirs, 99));
    println!(
        "{what}: clawmux n={} p50 {o50:.2} ms p99 {o99:.2} ms | polling n={} p50 {t50:.1} ms p99 {t99:.1} ms | p50 ratio {:.0}x",
        ours.len(),
        theirs.len(),
        t50 / o50
    );
}

fn main() {
    let markers = env_count("CLAWMUX_LATENCY_MARKERS", 300);
    let turns = env_count("CLAWMUX_LATENCY_TURNS", 8);
    if std::env::var_os("CLAWMUX_LATENCY_EMIT").is_some() {
        emit(markers, turns);
        return;
    }
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("own path: {e}"));
    let socket = format!("clawmux-latency-{}", std::process::id());
    let pane_cmd = format!(
        "tmux wait-for go; env CLAWMUX_LATENCY_EMIT=1 CLAWMUX_LATENCY_MARKERS={markers} CLAWMUX_LATENCY_TURNS={turns} {}",
        exe.display()
    );
    let status = Command::new("tmux")
        .args([
            "-L",
            &socket,
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "lat",
            "-x",
            "120",
            "-y",
            "40",
            &pane_cmd,
        ])
        .env("LANG", "C.UTF-8")
        .status();
    assert!(status.is_ok_and(|s| s.success()), "tmux new-session failed");
    let poller = {
        let socket = socket.clone();
        std::thread::spawn(move || poll(socket, "lat".to_owned()))
    };
    let mut ours = stream(&socket);
    // Usually gone already (the emitter exited); make sure, and remove
    // its socket file.
    clawmux::tmux::kill_server(&socket);
    let mut theirs = poller.join().unwrap_or_default();
    println!(
        "latency bench: {markers} markers, {turns} turns, 2 CPUs, load average {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .split(' ')
            .next()
            .unwrap_or("?")
    );
    report("marker detection", &mut ours.marker, &mut theirs.marker);
    report(
        "turn completion (after final redraw)",
        &mut ours.completion,
        &mut theirs.completion,
    );
}
