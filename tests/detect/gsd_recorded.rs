//! GSD's runs in the real Claude Code 2.1.197, recorded against the fake
//! API (`tests/agent/detect_recordings.rs` made `gsd_settings` and
//! `gsd_execute_phase`; `gsd_streaming` is new-project and plan-phase
//! through `serve`), replayed through `clawmux detect --profile gsd`: the
//! questions asked and GSD's progress, each as often as it was asked or
//! printed, exactly.

use serde_json::Value;

use crate::support::claude::{clawmux_stdin, fixtures_dir_of};

/// What `clawmux detect --profile gsd` reads off the 2.1.197 recording
/// `name`.
fn detections(name: &str) -> Vec<Value> {
    let path = fixtures_dir_of("2.1.197").join(format!("{name}.rec"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let (code, out, err) = clawmux_stdin(&["detect", "--profile", "gsd"], &bytes);
    assert_eq!(code, 0, "{err}");
    (out.lines())
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The questions asked (`approval` detections), in order.
fn asked(ds: &[Value]) -> Vec<String> {
    (ds.iter())
        .filter(|d| d["kind"] == "approval")
        .map(|d| d["question"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The progress detections, each as its fields (`clawmux detect`'s JSON
/// without pane, time and context).
fn progress(ds: &[Value]) -> Vec<Value> {
    (ds.iter())
        .filter(|d| d["kind"] == "progress")
        .map(|d| {
            let mut d = d.clone();
            if let Some(o) = d.as_object_mut() {
                for key in ["pane", "at_ms", "context", "kind"] {
                    o.remove(key);
                }
            }
            d
        })
        .collect()
}

/// GSD's settings asked as two multi-select tabs (eight settings, four a
/// question), answered as clawmux answers them: two digits a key gap
/// apart and Right, one digit and Right, then Submit on the review. Each
/// question is one approval, asked once while its boxes are ticked (each
/// tick was a new approval of the same question), then the review; no
/// question is left over as text (the free-text row's `Next` button is not
/// its description).
#[test]
fn gsd_settings_tabs_are_one_approval_each_however_often_they_are_ticked() {
    let ds = detections("gsd_settings");
    assert_eq!(
        asked(&ds),
        [
            "Which settings do you want to change?",
            "Which agent settings do you want to change?",
            "Ready to submit your answers?",
        ],
        "{ds:#?}"
    );
    let first = &ds[(ds.iter())
        .position(|d| d["kind"] == "approval")
        .unwrap_or_default()];
    let labels: Vec<&str> = (first["options"].as_array().into_iter().flatten())
        .filter_map(|o| o["label"].as_str())
        .collect();
    assert_eq!(
        labels,
        [
            "[ ] Mode",
            "[ ] Granularity",
            "[ ] Execution",
            "[ ] Git Tracking",
            "Type something",
            "Chat about this"
        ]
    );
    let body = first["body"].as_str().unwrap_or_default();
    assert!(!body.contains("Next"), "{body}");
    let gone = (ds.iter()).filter(|d| d["kind"] == "approval_gone").count();
    assert_eq!(gone, 3, "each question went once: {ds:#?}");
    assert_eq!(ds.iter().filter(|d| d["kind"] == "completed").count(), 1);
}

/// new-project's multi-select (`Which features belong in v1?`, two boxes
/// ticked from chat) is one approval too.
#[test]
fn a_multi_select_ticked_twice_is_one_approval() {
    let ds = detections("gsd_streaming");
    assert_eq!(
        asked(&ds),
        [
            "What do you want to build?",
            "Which features belong in v1?",
            "Ready to submit your answers?",
        ]
    );
}

/// execute-phase under GSD's statusline: the wave banners, gsd-sdk's bar
/// as the Bash tool's output and in the model's report (`Progress: [█…░]
/// 3/5 plans (60%)`), the task counts, the phase's end; a window resized
/// twice after the turn (Claude Code clears its screen and draws it anew)
/// reports none of them again.
#[test]
fn execute_phase_progress_is_each_line_printed_once() {
    let ds = detections("gsd_execute_phase");
    let bar = serde_json::json!({"percent": 60, "done": 3, "total": 5});
    assert_eq!(
        progress(&ds),
        [
            serde_json::json!({"stage": "EXECUTING WAVE 1"}),
            bar.clone(),
            bar,
            serde_json::json!({"stage": "EXECUTING WAVE 2"}),
            serde_json::json!({"done": 2, "total": 4}),
            serde_json::json!({"done": 4, "total": 4}),
            serde_json::json!({"phase": 1, "stage": "PHASE 1 COMPLETE ✓"}),
        ],
        "{ds:#?}"
    );
}

/// new-project then plan-phase: Claude Code drew its whole screen again as
/// plan-phase began (its frame grew taller than the pane), and the
/// new-project banner and bar on it are not reported a second time.
#[test]
fn a_redrawn_screen_does_not_report_its_banner_again() {
    let ds = detections("gsd_streaming");
    assert_eq!(
        progress(&ds),
        [
            serde_json::json!({"stage": "PROJECT INITIALIZED ✓"}),
            serde_json::json!({"percent": 0}),
            serde_json::json!({"phase": 1, "stage": "PLANNING PHASE 1"}),
            serde_json::json!({"done": 2, "total": 2}),
        ],
        "{ds:#?}"
    );
}
