//! The watcher under test: what the daemon does for each project pane,
//! for every session of a tmux server, in its own process so its CPU and
//! memory can be read from `/proc`.
//!
//! Per session, as `bridge::project` does: attach its pane through the
//! server's watch session ([`WatchSession::attach`]: one control client
//! with the daemon's settings: fixed size, `pause-after`, the flood guard),
//! feed a [`PaneWatcher`] (text and screen model + detector)
//! from the pane's output, tick it at its deadlines, and start again from
//! the screen after a `%pause` resync, a flood snapshot or a lag. On top, it
//! counts what the bench reports: bytes, `%pause`, flood switches and
//! snapshots, `%exit`, lags, and how late each marker line was detected.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use tokio::time::sleep_until;
use tokio_util::sync::CancellationToken;

use super::BenchError;
use super::roles::{MARK_PREFIX, unix_nanos};
use clawmux::bridge::config::TmuxConfig;
use clawmux::bridge::panes::agent_pane::{AgentPane, PaneSpec};
use clawmux::bridge::panes::watch_session::WatchSession;
use clawmux::control::Notification;
use clawmux::detect::{Detection, DetectionKind, DetectorConfig, Millis, PaneWatcher, Profile};
use clawmux::store::state::SessionName;
use clawmux::tmux::ClientEvent;

/// What the watcher saw, summed over its sessions.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct WatcherReport {
    pub sessions: usize,
    /// Pane output bytes received (decoded).
    pub output_bytes: u64,
    pub detections: u64,
    /// `%pause` notifications (tmux dropped a pane's backlog).
    pub pauses: u64,
    /// Times the flood guard switched a pane to snapshots of its screen,
    /// and the snapshots published (`Resync` events).
    #[serde(default)]
    pub flood_switches: u64,
    #[serde(default)]
    pub snapshots: u64,
    /// `%exit` reasons (`too far behind` is the failure to avoid).
    pub exits: Vec<String>,
    /// Clients that ended, and why.
    pub ended: Vec<String>,
    /// Times a subscriber fell behind its event queue.
    pub lagged: u64,
    /// Marker lines detected, and how late (detection time minus the stamp).
    pub marker_latencies_ms: Vec<f64>,
}

impl WatcherReport {
    pub(super) fn add(&mut self, other: WatcherReport) {
        self.sessions += other.sessions;
        self.output_bytes += other.output_bytes;
        self.detections += other.detections;
        self.pauses += other.pauses;
        self.flood_switches += other.flood_switches;
        self.snapshots += other.snapshots;
        self.exits.extend(other.exits);
        self.ended.extend(other.ended);
        self.lagged += other.lagged;
        self.marker_latencies_ms.extend(other.marker_latencies_ms);
    }
}

/// Watches every session on tmux server `socket` until `stop`; prints
/// `ready` on stdout once every pane is attached and drawn.
pub async fn watch(
    socket: &str,
    profile: Arc<Profile>,
    (width, height): (u16, u16),
    stop: CancellationToken,
) -> Result<WatcherReport, BenchError> {
    let tmux = TmuxConfig {
        socket: socket.into(),
        width,
        height,
        ..TmuxConfig::default()
    };
    let server = PaneSpec::on_server(&tmux, SessionName::watch());
    watch_servers(vec![server], profile, stop).await
}

/// Watches every session of every server (a [`PaneSpec`] naming its
/// program, socket, size: local or behind `ssh`), one watch session and
/// control client per server as the daemon has, until `stop`; prints
/// `ready` once every pane is attached and drawn.
pub async fn watch_servers(
    servers: Vec<PaneSpec>,
    profile: Arc<Profile>,
    stop: CancellationToken,
) -> Result<WatcherReport, BenchError> {
    let start = Instant::now();
    let mut attached = Vec::new();
    let mut watches = Vec::new();
    for server in servers {
        let listed = server
            .list_panes()
            .await
            .map_err(|e| BenchError::Role(format!("listing {}: {e}", server.host_name())))?;
        let mut sessions: Vec<SessionName> = listed
            .iter()
            .filter_map(|l| l.split_once(':').and_then(|(s, _)| s.parse().ok()))
            .collect();
        sessions.dedup();
        let watch = WatchSession::on(server.clone());
        for session in sessions {
            let spec = watch.spec_for(session.clone());
            let (agent, _) = watch
                .attach(&spec, false)
                .await
                .map_err(|e| BenchError::Role(format!("attaching session {session}: {e}")))?;
            let mut pane = PaneWatcher::new(
                agent.pane,
                profile.clone(),
                DetectorConfig::default(),
                agent.width,
                agent.height,
            );
            if let Ok(screen) = agent.capture().await {
                pane.feed(now(start), &screen, &mut |_| {});
            }
            attached.push((agent, pane));
        }
        watches.push(watch);
    }
    println!("ready");
    let tasks: Vec<_> = attached
        .into_iter()
        .map(|(agent, pane)| tokio::spawn(watch_pane(agent, pane, start, stop.clone())))
        .collect();
    let mut report = WatcherReport::default();
    for task in tasks {
        let one = task
            .await
            .map_err(|e| BenchError::Role(format!("a pane task failed: {e}")))?;
        report.add(one);
    }
    drop(watches);
    // Every pane's task sees the shared client's `%exit` and end.
    for reasons in [&mut report.exits, &mut report.ended] {
        reasons.sort();
        reasons.dedup();
    }
    Ok(report)
}

/// One session's loop, as the daemon's project task runs it.
async fn watch_pane(
    mut agent: AgentPane,
    mut pane: PaneWatcher,
    start: Instant,
    stop: CancellationToken,
) -> WatcherReport {
    let mut report = WatcherReport {
        sessions: 1,
        ..WatcherReport::default()
    };
    let mut seen = Seen::default();
    loop {
        let deadline = pane.next_deadline();
        let event = tokio::select! {
            () = stop.cancelled() => break,
            () = sleep_until(at(start, deadline)), if deadline.is_some() => {
                pane.tick(now(start), &mut |d| seen.on(&d));
                continue;
            }
            event = agent.recv() => event,
        };
        let now = now(start);
        match event {
            Some(ClientEvent::Output { pane: id, data }) if id == agent.pane => {
                report.output_bytes += data.len() as u64;
                pane.feed(now, &data, &mut |d| seen.on(&d));
            }
            Some(ClientEvent::Resync { pane: id, screen }) if id == agent.pane => {
                report.snapshots += 1;
                pane.feed(now, b"\x1b[H\x1b[2J", &mut |_| {});
                pane.feed(now, &screen, &mut |d| seen.on(&d));
            }
            Some(ClientEvent::Lagged { .. }) => {
                report.lagged += 1;
                if let Ok(screen) = agent.capture().await {
                    pane.feed(now, b"\x1b[H\x1b[2J", &mut |_| {});
                    pane.feed(now, &screen, &mut |d| seen.on(&d));
                }
            }
            // The pane's own queue (`subscribe_pane`): its `%pause` only.
            Some(ClientEvent::Notification(Notification::Pause { .. })) => report.pauses += 1,
            Some(ClientEvent::Flood { pane: id, flooding }) if id == agent.pane => {
                report.flood_switches += u64::from(flooding);
                pane.detector_mut().set_flooding(now, flooding);
            }
            Some(ClientEvent::Notification(Notification::Exit { reason })) => {
                report.exits.push(reason.unwrap_or_default());
            }
            Some(ClientEvent::Ended(error)) => {
                report.ended.push(error.to_string());
                break;
            }
            None => break,
            Some(_) => {}
        }
    }
    report.detections = seen.detections;
    report.marker_latencies_ms = seen.latencies_ms;
    report
}

/// Detections counted, and marker lines timed.
#[derive(Default)]
struct Seen {
    detections: u64,
    /// Stamps already timed: a marker line can be seen again (a resync
    /// redraws the screen); only its first detection counts.
    stamps: HashSet<u128>,
    latencies_ms: Vec<f64>,
}

impl Seen {
    /// A marker line's delay is measured on the Unix clock the marker
    /// stamped it with.
    fn on(&mut self, detection: &Detection) {
        self.detections += 1;
        if !matches!(detection.kind, DetectionKind::Progress(_)) {
            return;
        }
        let stamp = detection
            .context
            .lines()
            .last()
            .and_then(|line| line.strip_prefix(MARK_PREFIX))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse::<u128>().ok());
        if let Some(stamp) = stamp.filter(|s| self.stamps.insert(*s)) {
            let late = unix_nanos().saturating_sub(stamp);
            self.latencies_ms.push(late as f64 / 1e6);
        }
    }
}

fn now(start: Instant) -> Millis {
    Millis(u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX))
}

fn at(start: Instant, deadline: Option<Millis>) -> tokio::time::Instant {
    let ms = deadline.map_or(0, |d| d.0);
    (start + std::time::Duration::from_millis(ms)).into()
}
