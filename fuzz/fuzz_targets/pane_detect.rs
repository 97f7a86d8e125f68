//! Pane text layer + detector on arbitrary pane bytes: never panics, pane
//! text stays within its bound, and the detections promised to be
//! chunking-invariant are (the same as `tests/detect/sansio.rs`):
//! - every detection is the same whether each frame (the bytes that arrive
//!   at one instant) is fed whole or cut into chunks;
//! - the line detections (errors, progress) are the same however the
//!   stream is cut into frames at different instants.
//!
//! Input: `[profile, frame_len, chunk_len, gap, stream @ ..]`.
#![no_main]

use clawmux::detect::{
    Detection, DetectionKind, DetectorConfig, Millis, PaneWatcher, Profile, Profiles,
};
use clawmux::pane::{MAX_LINE_CHARS, Pane};
use libfuzzer_sys::fuzz_target;
use std::sync::{Arc, LazyLock};

const COLS: u16 = 40;
const ROWS: u16 = 8;
/// A small scrollback, so the fuzzer's inputs can reach the bound.
const SCROLLBACK: usize = 512;

static PROFILES: LazyLock<[Arc<Profile>; 2]> = LazyLock::new(|| {
    let p = Profiles::defaults().expect("built-in profiles load");
    [
        p.get("claude").expect("claude profile"),
        p.get("gsd").expect("gsd profile"),
    ]
});

/// Feeds frame `i` at `i * gap` ms, each cut into `chunk` bytes, ticking
/// at every deadline that falls before the next frame, then draining.
fn run(profile: &Arc<Profile>, frames: &[&[u8]], chunk: usize, gap: u64) -> Vec<Detection> {
    let id = "%1".parse().expect("pane id");
    let mut w = PaneWatcher::new(id, profile.clone(), DetectorConfig::default(), COLS, ROWS);
    let mut seen = Vec::new();
    for (i, frame) in frames.iter().enumerate() {
        let now = Millis(i as u64 * gap);
        while let Some(at) = w.next_deadline().filter(|at| *at < now) {
            w.tick(at, &mut |d| seen.push(d));
        }
        for part in frame.chunks(chunk) {
            w.feed(now, part, &mut |d| seen.push(d));
        }
    }
    while let Some(at) = w.next_deadline() {
        w.tick(at, &mut |d| seen.push(d));
    }
    seen
}

fn line_kinds(seen: Vec<Detection>) -> Vec<DetectionKind> {
    seen.into_iter()
        .map(|d| d.kind)
        .filter(|k| matches!(k, DetectionKind::Error { .. } | DetectionKind::Progress(_)))
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let [profile, frame_len, chunk_len, gap, stream @ ..] = data else {
        return;
    };
    let profile = &PROFILES[usize::from(*profile & 1)];
    let frame_len = usize::from(*frame_len).max(1);
    // Gaps from 0 (one instant) past the 300 ms debounce.
    let gap = u64::from(*gap) * 2;
    let frames: Vec<&[u8]> = stream.chunks(frame_len).collect();

    let whole = run(profile, &frames, usize::MAX, gap);
    let chunked = run(profile, &frames, usize::from(*chunk_len).max(1), gap);
    assert_eq!(whole, chunked, "chunking inside a frame changed detections");
    let bytewise = run(profile, &frames, 1, gap);
    assert_eq!(whole, bytewise, "byte-at-a-time feeding changed detections");

    // Line detections do not depend on where the frames are cut.
    let one_frame = run(profile, &[stream], usize::MAX, gap);
    assert_eq!(line_kinds(whole), line_kinds(one_frame));

    // The pane's text stays bounded: the log plus the live rows, each at
    // most MAX_LINE_CHARS chars of at most 4 bytes.
    let mut pane = Pane::with_scrollback(COLS, ROWS, SCROLLBACK);
    let start = pane.mark();
    for part in stream.chunks(frame_len) {
        for line in pane.feed(part) {
            assert!(line.chars().count() <= MAX_LINE_CHARS + 1, "line too long");
        }
    }
    let text = pane.text_since(start);
    let bound = SCROLLBACK + usize::from(ROWS + 1) * (4 * (MAX_LINE_CHARS + 1) + 1);
    assert!(text.len() <= bound, "{} bytes of text kept", text.len());
});
