//! Detection over a whole tmux control-mode stream, sans-IO: control bytes
//! in, detections for every pane out. One [`PaneWatcher`] per pane, created
//! on its first output, sized from `%layout-change` when known.

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use regex::Regex;

use super::{Detection, DetectorConfig, Millis, PaneId, PaneWatcher, Profile};
use crate::control::{Decoder, Event, Notification};

/// Pane size assumed until a `%layout-change` says otherwise (tmux's
/// default window size).
pub const DEFAULT_PANE_SIZE: (u16, u16) = (80, 24);

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
        }
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
        let Event::Notification(n) = event else {
            return;
        };
        match n {
            Notification::Output { pane, data }
            | Notification::ExtendedOutput { pane, data, .. } => {
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
