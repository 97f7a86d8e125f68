//! The flood guard: decides when a pane writes too fast to be streamed and
//! is watched through snapshots of its screen instead, and when it is
//! streamed again. Sans-IO: the caller passes the time in; the client
//! ([`super::client`]) does the switching and the capturing.
//!
//! Why: tmux 3.3a formats every byte it sends a control client with a
//! `printf` call of its own, and stops reading a pane while a control client
//! has more than 512 bytes waiting (`control.c`, `server-client.c`). So a
//! control client that streams a pane whose program writes flat out slows
//! that program by more than half (`clawmux bench`, the bare `tmux -C` row),
//! however fast the client reads. Nobody reads such a flood on a phone; its
//! screen a few times a second is enough to see a prompt, an error or the
//! end, and the agent keeps its full speed.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use bytes::Bytes;

use clawmux_control::PaneId;

/// The streamed panes together may write as much as this many panes at
/// the limit (see [`FloodLimits::total_bytes`]).
const TOTAL_PANES: u64 = 8;

/// When a pane counts as flooding, and how it is watched meanwhile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FloodLimits {
    /// A pane that writes more than this many bytes within one `window`
    /// goes to snapshots.
    pub bytes: u64,
    pub window: Duration,
    /// All streamed panes together: when they write more than this within
    /// one `window`, every pane that wrote more than `bytes / 8` within
    /// it goes to snapshots too. Many panes flooding at once each stay under
    /// `bytes` (tmux shares its time among them), yet streaming them all
    /// slows every one.
    pub total_bytes: u64,
    /// How often a flooding pane's screen is captured: every
    /// `snapshot_every` at first and after a screen that held still (to
    /// confirm the end quickly), the wait doubling up to `snapshot_cap`
    /// while the screen keeps changing.
    pub snapshot_every: Duration,
    pub snapshot_cap: Duration,
    /// After this many snapshots in a row showing the same screen the pane
    /// has calmed down and is streamed again.
    pub quiet_snapshots: u32,
    /// A pane whose screen keeps changing (a spinner, a flood that never
    /// ends) is streamed again after this long, to measure it afresh; if it
    /// floods again straight away the next wait doubles, up to `probe_cap`.
    pub probe_first: Duration,
    pub probe_cap: Duration,
}

impl Default for FloodLimits {
    fn default() -> Self {
        FloodLimits {
            // 256 KiB/s. Claude Code's busiest redraws stay far below it; a
            // program writing flat out crosses it within a fraction of the
            // short window even while tmux throttles it (about 0.5 MB/s each
            // with 20 such panes on two cores), so it is throttled briefly.
            bytes: 32 * 1024,
            window: Duration::from_millis(125),
            // 2 MiB/s.
            total_bytes: TOTAL_PANES * 32 * 1024,
            // A flood's end is seen within a second and a quarter. Each
            // capture is work for tmux, the bottleneck of a flood: a pane
            // that keeps changing is captured once a second, not four times.
            snapshot_every: Duration::from_millis(250),
            snapshot_cap: Duration::from_secs(1),
            quiet_snapshots: 2,
            // Each probe streams the pane only until it crosses the limit
            // again, a fraction of one window; probing at 8 s doubling to
            // 32 s keeps those moments rare in a long flood.
            probe_first: Duration::from_secs(8),
            probe_cap: Duration::from_secs(32),
        }
    }
}

impl FloodLimits {
    /// The defaults with the limit set to `bytes` a second.
    pub fn per_second(bytes: u64) -> Self {
        let limits = FloodLimits::default();
        let bytes = (u128::from(bytes) * limits.window.as_millis() / 1000) as u64;
        FloodLimits {
            bytes,
            total_bytes: bytes.saturating_mul(TOTAL_PANES),
            ..limits
        }
    }

    /// The wait before the next snapshot, after one taken `waited` after
    /// its predecessor that `changed` the screen or not.
    pub fn next_snapshot_wait(&self, waited: Duration, changed: bool) -> Duration {
        if changed {
            (waited * 2).min(self.snapshot_cap).max(self.snapshot_every)
        } else {
            self.snapshot_every
        }
    }

    /// The limit in bytes a second.
    pub fn per_second_rate(&self) -> u64 {
        (u128::from(self.bytes) * 1000 / self.window.as_millis().max(1)) as u64
    }
}

/// What the guard knows of one pane.
#[derive(Debug)]
struct PaneFlow {
    window_start: Instant,
    window_bytes: u64,
    /// Watched through snapshots (its output paused at tmux).
    snapshots: bool,
    /// When it was last streamed again after snapshots.
    streamed_again: Option<Instant>,
    probe_after: Duration,
    /// The last snapshot published for it, to publish only changes.
    last_screen: Option<Bytes>,
}

/// The flood guard for one control client's panes.
#[derive(Debug)]
pub(crate) struct FloodGuard {
    limits: FloodLimits,
    panes: HashMap<PaneId, PaneFlow>,
    /// The streamed panes' bytes in the current window, all together.
    total_start: Option<Instant>,
    total_bytes: u64,
}

impl FloodGuard {
    pub(crate) fn new(limits: FloodLimits) -> Self {
        FloodGuard {
            limits,
            panes: HashMap::new(),
            total_start: None,
            total_bytes: 0,
        }
    }

    pub(crate) fn limits(&self) -> FloodLimits {
        self.limits
    }

    /// Counts `bytes` of `pane`'s output. `Some(wait)` when the pane just
    /// went over the limit: watch it through snapshots from now on, and
    /// stream it again after `wait` at the latest.
    pub(crate) fn on_output(
        &mut self,
        pane: PaneId,
        bytes: usize,
        now: Instant,
    ) -> Option<Duration> {
        let limits = self.limits;
        let flow = self.panes.entry(pane).or_insert_with(|| PaneFlow {
            window_start: now,
            window_bytes: 0,
            snapshots: false,
            streamed_again: None,
            probe_after: limits.probe_first,
            last_screen: None,
        });
        if flow.snapshots {
            // Output tmux sent before it took the switch.
            return None;
        }
        if now.saturating_duration_since(flow.window_start) >= limits.window {
            flow.window_start = now;
            flow.window_bytes = 0;
        }
        flow.window_bytes = flow.window_bytes.saturating_add(bytes as u64);
        if self
            .total_start
            .is_none_or(|start| now.saturating_duration_since(start) >= limits.window)
        {
            (self.total_start, self.total_bytes) = (Some(now), 0);
        }
        self.total_bytes = self.total_bytes.saturating_add(bytes as u64);
        let together =
            self.total_bytes > limits.total_bytes && flow.window_bytes > limits.bytes / 8;
        if flow.window_bytes <= limits.bytes && !together {
            return None;
        }
        flow.snapshots = true;
        flow.probe_after = match flow.streamed_again {
            Some(at) if now.saturating_duration_since(at) < limits.probe_first => {
                (flow.probe_after * 2).min(limits.probe_cap)
            }
            _ => limits.probe_first,
        };
        Some(flow.probe_after)
    }

    /// Whether `screen`, a snapshot of `pane`, differs from the last one
    /// published; remembers it.
    pub(crate) fn screen_changed(&mut self, pane: PaneId, screen: &Bytes) -> bool {
        let Some(flow) = self.panes.get_mut(&pane) else {
            return true;
        };
        if flow.last_screen.as_ref() == Some(screen) {
            return false;
        }
        flow.last_screen = Some(screen.clone());
        true
    }

    /// `pane` is streamed again from `now`.
    pub(crate) fn streaming_again(&mut self, pane: PaneId, now: Instant) {
        if let Some(flow) = self.panes.get_mut(&pane) {
            flow.snapshots = false;
            flow.window_start = now;
            flow.window_bytes = 0;
            flow.streamed_again = Some(now);
            flow.last_screen = None;
        }
    }

    /// Whether `pane` is being watched through snapshots.
    pub(crate) fn in_snapshots(&self, pane: PaneId) -> bool {
        self.panes.get(&pane).is_some_and(|f| f.snapshots)
    }

    /// Forgets a pane that is gone.
    pub(crate) fn forget(&mut self, pane: PaneId) {
        self.panes.remove(&pane);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: PaneId = PaneId(1);

    fn limits() -> FloodLimits {
        FloodLimits {
            bytes: 1000,
            window: Duration::from_millis(100),
            total_bytes: 8000,
            ..FloodLimits::default()
        }
    }

    fn ms(start: Instant, n: u64) -> Instant {
        start + Duration::from_millis(n)
    }

    #[test]
    fn snapshots_back_off_while_the_screen_changes_and_hurry_once_it_holds() {
        let l = FloodLimits::default();
        let mut waits = vec![l.snapshot_every];
        for changed in [true, true, true, true, false, true] {
            let last = *waits.last().unwrap();
            waits.push(l.next_snapshot_wait(last, changed));
        }
        let ms: Vec<u128> = waits.iter().map(Duration::as_millis).collect();
        assert_eq!(ms, [250, 500, 1000, 1000, 1000, 250, 500]);
    }

    #[test]
    fn many_panes_under_the_rate_each_switch_when_together_over_the_total() {
        let t0 = Instant::now();
        let mut guard = FloodGuard::new(limits());
        // 20 panes at 500 bytes per 100 ms each (half the limit), and one
        // writing 100 (under an eighth of it): 10,100 bytes a window.
        let mut switched = Vec::new();
        for tick in 0..20u64 {
            for pane in 0..20 {
                if guard
                    .on_output(PaneId(pane), 50, ms(t0, tick * 10))
                    .is_some()
                {
                    switched.push(pane);
                }
            }
            assert_eq!(guard.on_output(PaneId(99), 10, ms(t0, tick * 10)), None);
        }
        switched.sort();
        assert_eq!(switched, (0..20).collect::<Vec<_>>());
        assert!(!guard.in_snapshots(PaneId(99)));
    }

    #[test]
    fn a_few_busy_panes_under_the_total_stream_on() {
        let t0 = Instant::now();
        let mut guard = FloodGuard::new(limits());
        // 8 panes at 900 bytes per 100 ms: 7,200 together, under 8,000.
        for tick in 0..1000u64 {
            for pane in 0..8 {
                let at = ms(t0, tick * 10);
                assert_eq!(guard.on_output(PaneId(pane), 90, at), None, "at {tick}");
            }
        }
    }

    #[test]
    fn a_pane_under_the_rate_streams_forever() {
        let t0 = Instant::now();
        let mut guard = FloodGuard::new(limits());
        // 900 bytes per 100 ms window, for 10 s.
        for i in 0..1000u64 {
            assert_eq!(guard.on_output(P, 90, ms(t0, i * 10)), None, "at {i}");
        }
        assert!(!guard.in_snapshots(P));
    }

    #[test]
    fn going_over_within_one_window_switches_to_snapshots_once() {
        let t0 = Instant::now();
        let mut guard = FloodGuard::new(limits());
        assert_eq!(guard.on_output(P, 600, t0), None);
        assert_eq!(
            guard.on_output(P, 600, ms(t0, 50)),
            Some(Duration::from_secs(8))
        );
        assert!(guard.in_snapshots(P));
        // Late bytes while switched over do not switch it again.
        assert_eq!(guard.on_output(P, 100_000, ms(t0, 60)), None);
        // Another pane is not affected.
        assert!(!guard.in_snapshots(PaneId(2)));
    }

    #[test]
    fn the_window_resets() {
        let t0 = Instant::now();
        let mut guard = FloodGuard::new(limits());
        assert_eq!(guard.on_output(P, 600, t0), None);
        assert_eq!(guard.on_output(P, 600, ms(t0, 100)), None);
        assert_eq!(guard.on_output(P, 300, ms(t0, 150)), None);
        assert!(guard.on_output(P, 200, ms(t0, 190)).is_some());
    }

    #[test]
    fn probes_back_off_while_the_flood_goes_on_and_reset_after_calm() {
        let t0 = Instant::now();
        let mut guard = FloodGuard::new(limits());
        let mut now = t0;
        let mut waits = Vec::new();
        for _ in 0..6 {
            let wait = guard.on_output(P, 2000, now).unwrap();
            waits.push(wait.as_secs());
            now += wait;
            guard.streaming_again(P, now);
            now += Duration::from_millis(10);
        }
        assert_eq!(waits, [8, 16, 32, 32, 32, 32]);
        // Calm for longer than the first probe: the next flood starts over.
        now += Duration::from_secs(9);
        assert_eq!(guard.on_output(P, 2000, now), Some(Duration::from_secs(8)));
    }

    #[test]
    fn only_changed_screens_are_published_and_streaming_forgets_the_last() {
        let t0 = Instant::now();
        let mut guard = FloodGuard::new(limits());
        guard.on_output(P, 2000, t0);
        let a = Bytes::from_static(b"a");
        let b = Bytes::from_static(b"b");
        assert!(guard.screen_changed(P, &a));
        assert!(!guard.screen_changed(P, &a));
        assert!(guard.screen_changed(P, &b));
        guard.streaming_again(P, ms(t0, 500));
        assert!(!guard.in_snapshots(P));
        assert!(guard.screen_changed(P, &b));
        guard.forget(P);
        assert!(
            guard.screen_changed(P, &b),
            "an unknown pane always publishes"
        );
    }
}
