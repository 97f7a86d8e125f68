//! The bench's table: one row per measured quantity, with the issue's
//! target next to it where it has one.

use super::procfs;
use super::scenario::{Flood, FloodRun, Results};

/// The targets.
pub const MAX_FLOOD_RSS_BYTES: u64 = 64 * 1024 * 1024;
/// A flooding pane's program may be this much slower with clawmux attached.
pub const MAX_SLOWDOWN: f64 = 0.05;
/// Idle clawmux must cost at most this share of the polling design.
pub const MAX_IDLE_SHARE: f64 = 1.0 / 20.0;

/// One line of the table.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Row {
    pub name: String,
    pub value: String,
    /// The target, and whether it was met.
    pub target: Option<(String, bool)>,
}

fn row(name: impl Into<String>, value: impl Into<String>) -> Row {
    Row {
        name: name.into(),
        value: value.into(),
        target: None,
    }
}

fn checked(name: impl Into<String>, value: impl Into<String>, target: &str, met: bool) -> Row {
    Row {
        target: Some((target.into(), met)),
        ..row(name, value)
    }
}

/// The rows for `results`.
pub fn rows(results: &Results) -> Vec<Row> {
    let s = &results.settings;
    let (c, p) = (&results.idle_clawmux, &results.idle_polling);
    let share = c.total() / p.total().max(f64::MIN_POSITIVE);
    // /proc counts whole clock ticks: below one tick over the run, the
    // ratio is only known to be at least this.
    let one_tick = 60.0 / (procfs::clock_ticks() * s.idle_seconds);
    let times = if c.total() > 0.0 {
        format!("polling costs {:.0}x", p.total() / c.total())
    } else {
        format!(
            "polling costs >{:.0}x: clawmux used no clock tick",
            p.total() / one_tick
        )
    };
    let idle = format!("idle {} panes", s.idle_panes);
    let mut rows = vec![
        row(
            format!("{idle}: clawmux CPU s/min"),
            format!(
                "{:.3} (process {:.3} + tmux server {:.3})",
                c.total(),
                c.process,
                c.server
            ),
        ),
        row(
            format!("{idle}: polling {} ms CPU s/min", s.poll_ms),
            format!(
                "{:.3} (process {:.3} + tmux server {:.3})",
                p.total(),
                p.process,
                p.server
            ),
        ),
        checked(
            format!("{idle}: clawmux / polling"),
            format!("{share:.4} ({times})"),
            "<= 0.05",
            share <= MAX_IDLE_SHARE,
        ),
    ];
    for flood in &results.floods {
        rows.extend(flood_rows(flood, s.flood_panes));
    }
    rows
}

fn flood_rows(f: &Flood, panes: usize) -> Vec<Row> {
    let pace = match f.pane_pace {
        Some(rate) => format!("{} x {:.2} MB/s", panes, rate as f64 / 1e6),
        None => format!("{panes} x max"),
    };
    let name = |what: &str| format!("{} ({pace}, {} s): {what}", f.name, f.seconds);
    let slowdown = 1.0 - f.watched.pane_rate / f.no_client.pane_rate.max(f64::MIN_POSITIVE);
    // A client variant's rates, and how much slower than no client.
    let floor = |run: &FloodRun| {
        format!(
            "{:.2} mean, {:.2} slowest ({:.1}% slower than no client)",
            run.pane_rate / 1e6,
            run.slowest_pane_rate / 1e6,
            (1.0 - run.pane_rate / f.no_client.pane_rate.max(f64::MIN_POSITIVE)) * 100.0
        )
    };
    let vs_bare = 1.0 - f.watched.pane_rate / f.bare_client.pane_rate.max(f64::MIN_POSITIVE);
    let worst = 1.0 - f.watched.slowest_pane_rate / f.no_client.pane_rate.max(f64::MIN_POSITIVE);
    let w = &f.watcher;
    let written: u64 = f.watched.pane_bytes.iter().sum();
    let mut lat = w.marker_latencies_ms.clone();
    lat.sort_by(f64::total_cmp);
    let exits = if w.exits.is_empty() && w.ended.is_empty() {
        "none".to_string()
    } else {
        format!("exit {:?}, ended {:?}", w.exits, w.ended)
    };
    let too_far = w.exits.iter().any(|e| e.contains("too far behind"));
    vec![
        row(
            name("pane MB/s no client"),
            format!(
                "{:.2} mean, {:.2} slowest",
                f.no_client.pane_rate / 1e6,
                f.no_client.slowest_pane_rate / 1e6
            ),
        ),
        row(name("pane MB/s bare tmux -C"), floor(&f.bare_client)),
        row(name("pane MB/s paused tmux -C"), floor(&f.paused_client)),
        row(
            name("pane MB/s clawmux"),
            format!(
                "{:.2} mean, {:.2} slowest",
                f.watched.pane_rate / 1e6,
                f.watched.slowest_pane_rate / 1e6
            ),
        ),
        checked(
            name("pane slowdown"),
            format!(
                "{:.1}% mean, {:.1}% slowest pane; {:.1}% vs bare tmux -C",
                slowdown * 100.0,
                worst * 100.0,
                vs_bare * 100.0
            ),
            "<= 5%",
            slowdown <= MAX_SLOWDOWN,
        ),
        checked(
            name("clawmux peak RSS"),
            format!("{:.1} MB", f.watcher_peak_rss as f64 / (1024.0 * 1024.0)),
            "<= 64 MB",
            f.watcher_peak_rss <= MAX_FLOOD_RSS_BYTES,
        ),
        row(
            name("clawmux CPU"),
            format!(
                "{:.2} s ({:.0}% of a core)",
                f.watcher_cpu,
                f.watcher_cpu / f.seconds * 100.0
            ),
        ),
        row(
            name("tmux server CPU"),
            format!(
                "{:.2} s no client, {:.2} s clawmux",
                f.no_client.server_cpu, f.watched.server_cpu
            ),
        ),
        row(
            name("output received"),
            format!(
                "{:.1} MB streamed of {:.1} MB written ({:.0}%; the tty adds a CR a line), {} detections",
                w.output_bytes as f64 / 1e6,
                written as f64 / 1e6,
                w.output_bytes as f64 / written.max(1) as f64 * 100.0,
                w.detections
            ),
        ),
        row(
            name("flood guard"),
            format!(
                "{} switches of a pane to its screen, {} snapshots",
                w.flood_switches, w.snapshots
            ),
        ),
        row(
            name("%pause / lagged"),
            format!("{} / {}", w.pauses, w.lagged),
        ),
        checked(
            name("%exit / disconnect"),
            exits,
            "no too far behind",
            !too_far,
        ),
        checked(
            name("marker latency ms"),
            format!(
                "p50 {} p99 {} max {} ({}/{} detected)",
                percentile(&lat, 0.50),
                percentile(&lat, 0.99),
                percentile(&lat, 1.0),
                lat.len(),
                f.watched.markers_printed
            ),
            "all detected",
            lat.len() as u64 >= f.watched.markers_printed && !lat.is_empty(),
        ),
    ]
}

/// Nearest-rank percentile of sorted `values`, formatted; `-` when empty.
fn percentile(sorted: &[f64], q: f64) -> String {
    if sorted.is_empty() {
        return "-".into();
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    format!("{:.1}", sorted[rank - 1])
}

/// The rows as an aligned plain-text table.
pub fn table(rows: &[Row]) -> String {
    let name_w = rows
        .iter()
        .map(|r| r.name.chars().count())
        .max()
        .unwrap_or(0);
    let value_w = rows
        .iter()
        .map(|r| r.value.chars().count())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for r in rows {
        let target = match &r.target {
            Some((t, met)) => format!("{t} {}", if *met { "MET" } else { "NOT MET" }),
            None => String::new(),
        };
        let line = format!("{:name_w$} | {:value_w$} | {target}", r.name, r.value);
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.5), "50.0");
        assert_eq!(percentile(&v, 0.99), "99.0");
        assert_eq!(percentile(&v[..1], 0.99), "1.0");
        assert_eq!(percentile(&[], 0.5), "-");
    }

    #[test]
    fn table_aligns_and_marks_targets() {
        let t = table(&[row("a", "1"), checked("long name", "22", "<= 5", false)]);
        assert_eq!(t, "a         | 1  |\nlong name | 22 | <= 5 NOT MET\n");
    }
}
