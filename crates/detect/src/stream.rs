//! Detection over a whole tmux control-mode stream, sans-IO: control bytes
//! in, detections for every pane out. One [`PaneWatcher`] per pane, created
//! on its first output, sized from `%layout-change` when known, at most
//! [`MAX_PANES_PER_STREAM`] of them.

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use regex::Regex;

use super::{Detection, DetectorConfig, Millis, PaneId, PaneWatcher, Profile};
use clawmux_control::{Decoder, Event, Notification};

/// Pane size assumed until a `%layout-change` says otherwise (tmux's
/// default window size).
pub const DEFAULT_PANE_SIZE: (u16, u16) = (80, 24);

/// Most panes watched on one stream: each holds a screen and up to
/// [`clawmux_pane::SCROLLBACK_BYTES`] of text, so a stream naming endless
/// pane ids (a corrupt or hostile recording) must not create endless
/// watchers. Output of panes past this is refused and counted; a real
/// tmux server with this many panes in one session is far out of use.
pub const MAX_PANES_PER_STREAM: usize = 256;

/// What a stream held besides pane output: how much of it was control
/// mode, and what was refused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StreamCounts {
    /// Notifications and replies decoded.
    pub control_events: u64,
    /// Lines that were not control mode (stray text, unparseable lines).
    pub non_protocol_lines: u64,
    /// Output notifications of panes past [`MAX_PANES_PER_STREAM`], dropped.
    pub refused_outputs: u64,
    /// Runs of output from refused panes: a new one each time the refused
    /// pane differs from the last one refused (no set of ids is kept, so
    /// counting stays bounded too).
    pub refused_panes: u64,
}

/// A layout leaf: `<cols>x<rows>,<x>,<y>,<pane number>`.
static LAYOUT_LEAF: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(\d+)x(\d+),\d+,\d+,(\d+)").unwrap_or_else(|e| unreachable!("constant regex: {e}"))
});

/// Watches every pane of one control-mode connection.
pub struct StreamWatcher {
    decoder: Decoder,
    profile: Arc<Profile>,
    config: DetectorConfig,
    default_size: (u16, u16),
    sizes: BTreeMap<PaneId, (u16, u16)>,
    panes: BTreeMap<PaneId, PaneWatcher>,
    counts: StreamCounts,
    /// The last pane refused (so a refused pane's run of output counts once).
    last_refused: Option<PaneId>,
}

impl StreamWatcher {
    /// Every pane is watched with `profile`; panes of unknown size get
    /// `default_size` (cols, rows).
    pub fn new(profile: Arc<Profile>, config: DetectorConfig, default_size: (u16, u16)) -> Self {
        StreamWatcher {
            decoder: Decoder::new(),
            profile,
            config,
            default_size,
            sizes: BTreeMap::new(),
            panes: BTreeMap::new(),
            counts: StreamCounts::default(),
            last_refused: None,
        }
    }

    /// What the stream held so far besides pane output.
    pub fn counts(&self) -> StreamCounts {
        self.counts
    }

    /// Panes being watched.
    pub fn pane_count(&self) -> usize {
        self.panes.len()
    }

    /// Feeds control-mode bytes that arrived at `now`.
    pub fn feed(&mut self, now: Millis, bytes: &[u8], sink: &mut impl FnMut(Detection)) {
        let Self { decoder, .. } = self;
        let mut events = Vec::new();
        decoder.feed(bytes, &mut |e| events.push(e));
        for event in events {
            self.on_event(now, event, sink);
        }
    }

    /// Ends the stream at `now`.
    pub fn finish(&mut self, now: Millis, sink: &mut impl FnMut(Detection)) {
        let mut events = Vec::new();
        self.decoder.finish(&mut |e| events.push(e));
        for event in events {
            self.on_event(now, event, sink);
        }
        self.tick(now, sink);
    }

    /// Fires what is due at `now` on every pane.
    pub fn tick(&mut self, now: Millis, sink: &mut impl FnMut(Detection)) {
        for w in self.panes.values_mut() {
            w.tick(now, sink);
        }
    }

    /// The earliest deadline of any pane.
    pub fn next_deadline(&self) -> Option<Millis> {
        self.panes
            .values()
            .filter_map(PaneWatcher::next_deadline)
            .min()
    }

    /// The watcher of `pane`, once it has produced output.
    pub fn pane(&mut self, pane: PaneId) -> Option<&mut PaneWatcher> {
        self.panes.get_mut(&pane)
    }

    fn on_event(&mut self, now: Millis, event: Event, sink: &mut impl FnMut(Detection)) {
        let n = match event {
            Event::Notification(n) => n,
            Event::Reply(_) => {
                self.counts.control_events += 1;
                return;
            }
            Event::Stray(_) | Event::Invalid { .. } => {
                self.counts.non_protocol_lines += 1;
                return;
            }
        };
        self.counts.control_events += 1;
        match n {
            Notification::Output { pane, data }
            | Notification::ExtendedOutput { pane, data, .. } => {
                if !self.panes.contains_key(&pane) && self.panes.len() >= MAX_PANES_PER_STREAM {
                    self.counts.refused_outputs += 1;
                    if self.last_refused != Some(pane) {
                        self.counts.refused_panes += 1;
                        self.last_refused = Some(pane);
                    }
                    return;
                }
                let (cols, rows) = self.sizes.get(&pane).copied().unwrap_or(self.default_size);
                let (profile, config) = (&self.profile, &self.config);
                self.panes
                    .entry(pane)
                    .or_insert_with(|| {
                        PaneWatcher::new(pane, profile.clone(), config.clone(), cols, rows)
                    })
                    .feed(now, &data, sink);
            }
            Notification::LayoutChange { layout, .. } => {
                for c in LAYOUT_LEAF.captures_iter(&layout) {
                    let (Ok(cols), Ok(rows), Ok(id)) = (c[1].parse(), c[2].parse(), c[3].parse())
                    else {
                        continue;
                    };
                    let pane = PaneId(id);
                    // Sizes of panes never seen are bounded like the panes.
                    if !self.sizes.contains_key(&pane)
                        && self.sizes.len() >= MAX_PANES_PER_STREAM
                        && !self.panes.contains_key(&pane)
                    {
                        continue;
                    }
                    self.sizes.insert(pane, (cols, rows));
                    if let Some(w) = self.panes.get_mut(&pane) {
                        w.pane_mut().resize(cols, rows);
                    }
                }
            }
            _ => {}
        }
    }
}

/// Replaying the committed recordings of the real agents
/// (`tests/fixtures/<agent>-<release>/`) in this crate's tests.
#[cfg(test)]
pub(crate) mod replay {
    use clawmux_control::recording::RecordingReader;

    use super::super::{Detection, DetectorConfig, Millis, Profiles};
    use super::{DEFAULT_PANE_SIZE, StreamWatcher};

    /// The recording `tests/fixtures/<name>.rec` of the workspace.
    pub(crate) fn fixture(name: &str) -> Vec<u8> {
        let path = format!(
            "{}/../../tests/fixtures/{name}.rec",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    /// The detections of `recording` watched with `profile` and `config`,
    /// replayed at its recorded times and size as `clawmux detect` does
    /// (what falls due between two lines fires on time), one byte per
    /// feed when `bytewise`.
    pub(crate) fn detections(
        recording: &[u8],
        profile: &str,
        config: DetectorConfig,
        bytewise: bool,
    ) -> Vec<Detection> {
        let profile = Profiles::defaults().unwrap().get(profile).unwrap();
        let mut reader = RecordingReader::new(recording).unwrap();
        let size = (reader.header().and_then(|h| h.size())).unwrap_or(DEFAULT_PANE_SIZE);
        let mut w = StreamWatcher::new(profile, config, size);
        let mut seen = Vec::new();
        let mut now = Millis(0);
        while let Some(chunk) = reader.next_chunk().unwrap() {
            if let Some(at) = chunk.at_ms.map(Millis) {
                while let Some(due) = w.next_deadline().filter(|d| *d <= at) {
                    w.tick(due.max(now), &mut |d| seen.push(d));
                    if w.next_deadline() == Some(due) {
                        break;
                    }
                }
                now = at.max(now);
            }
            if bytewise {
                for b in chunk.bytes {
                    w.feed(now, std::slice::from_ref(b), &mut |d| seen.push(d));
                }
            } else {
                w.feed(now, chunk.bytes, &mut |d| seen.push(d));
            }
        }
        w.finish(now, &mut |d| seen.push(d));
        w.tick(Millis(now.0 + 10_000), &mut |d| seen.push(d));
        seen
    }
}

#[cfg(test)]
mod tests {
    use super::super::Profiles;
    use super::*;

    #[test]
    fn endless_pane_ids_stay_bounded_and_counted() {
        let profile = Profiles::defaults().unwrap().get("shell").unwrap();
        let mut w = StreamWatcher::new(profile, DetectorConfig::default(), (20, 5));
        let panes = 200_000u32;
        let mut input = Vec::new();
        for id in 0..panes {
            input.extend_from_slice(format!("%output %{id} x\\015\\012\n").as_bytes());
            input.extend_from_slice(
                format!("%layout-change @0 abcd,20x5,0,0,{id} abcd,20x5,0,0,{id} *\n").as_bytes(),
            );
        }
        let mut seen = 0usize;
        w.feed(Millis(0), &input, &mut |_| seen += 1);
        assert_eq!(w.pane_count(), MAX_PANES_PER_STREAM);
        assert!(w.sizes.len() <= MAX_PANES_PER_STREAM);
        let refused = u64::from(panes) - MAX_PANES_PER_STREAM as u64;
        assert_eq!(w.counts().refused_outputs, refused);
        assert_eq!(w.counts().refused_panes, refused);
        assert_eq!(w.counts().control_events, 2 * u64::from(panes));
        // A watched pane still works.
        let mut again = Vec::new();
        w.feed(Millis(10), b"%output %3 more\\015\\012\n", &mut |d| {
            again.push(d)
        });
        assert_eq!(w.counts().refused_outputs, refused);
    }

    #[test]
    fn non_protocol_lines_are_counted() {
        let profile = Profiles::defaults().unwrap().get("shell").unwrap();
        let mut w = StreamWatcher::new(profile, DetectorConfig::default(), (20, 5));
        w.feed(Millis(0), b"hello\nworld\n%output %1 x\n", &mut |_| {});
        assert_eq!(w.counts().non_protocol_lines, 2);
        assert_eq!(w.counts().control_events, 1);
    }
}
