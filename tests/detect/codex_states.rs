//! Codex's OSC 7501 state sequence read from its output stream, sans-IO:
//! a command echoed at once does not end its turn before Codex says it
//! worked on it; `done` after work does, once. Fed whole and one byte at a
//! time, with the same detections.

use clawmux::detect::{Detection, DetectorConfig, Millis, PaneWatcher, Profiles};

fn osc(state: &str) -> String {
    format!("\x1b]7501;state={state}:app=codex\x07")
}

/// Codex's frames as (time in ms, bytes): start-up, a typed command
/// echoed (the screen looks idle), then its state says working, a reply,
/// `done` and `idle`.
fn frames() -> Vec<(u64, String)> {
    let input = "\r\n› Ask Codex to do anything\r\n  GPT-6-Sol default · /ws\r\n";
    vec![
        (
            0,
            format!("{}  >_ OpenAI Codex (v0.171.0)\r\n", osc("working")),
        ),
        (100, format!("{}{input}", osc("idle"))),
        // Typed and echoed, nothing said yet: 2 s of an idle-looking screen.
        (1000, format!("› say hi\r\n{input}")),
        (3000, format!("{}\x1b]0;⠙ say hi | ws\x07", osc("working"))),
        (
            3500,
            format!("• Hi there.\r\n  Worked for 1s • 00:29\r\n{input}"),
        ),
        (3600, format!("{}{}", osc("done"), osc("idle"))),
    ]
}

/// A watcher of a Codex pane, as the daemon makes one.
fn codex_watcher() -> PaneWatcher {
    let profile = Profiles::defaults().unwrap().get("codex").unwrap();
    PaneWatcher::new(
        "%1".parse().unwrap(),
        profile,
        DetectorConfig::default(),
        100,
        30,
    )
}

/// Feeds `bytes` at `at`, whole or one byte at a time.
fn feed(w: &mut PaneWatcher, at: u64, bytes: &str, bytewise: bool, seen: &mut Vec<Detection>) {
    if bytewise {
        for b in bytes.as_bytes() {
            w.feed(Millis(at), std::slice::from_ref(b), &mut |d| seen.push(d));
        }
    } else {
        w.feed(Millis(at), bytes.as_bytes(), &mut |d| seen.push(d));
    }
}

fn run(bytewise: bool) -> Vec<Detection> {
    let mut w = codex_watcher();
    let mut seen = Vec::new();
    for (at, bytes) in frames() {
        if at == 1000 {
            w.detector_mut().typed("say hi");
        }
        feed(&mut w, at, &bytes, bytewise, &mut seen);
        // Time passes to the next frame (the debounce runs out in gaps).
        w.tick(Millis(at + 450), &mut |d| seen.push(d));
    }
    w.tick(Millis(10_000), &mut |d| seen.push(d));
    seen
}

fn kinds(ds: &[Detection]) -> Vec<(u64, String)> {
    ds.iter()
        .map(|d| {
            let v: serde_json::Value = serde_json::from_str(&d.to_json()).unwrap();
            (d.at_ms.0, v["kind"].as_str().unwrap_or("").to_owned())
        })
        .collect()
}

/// Feeds `frames` to `w`, typing `typed.1` just before the frame at
/// `typed.0`, each deadline ticked in the gaps (a minute after the last):
/// when the turns completed, and every detection for a message.
fn completions(
    w: &mut PaneWatcher,
    frames: &[(u64, String)],
    typed: (u64, &str),
    bytewise: bool,
) -> (Vec<u64>, String) {
    let mut seen = Vec::new();
    for (i, (at, bytes)) in frames.iter().enumerate() {
        if *at == typed.0 {
            w.typed(typed.1);
        }
        feed(w, *at, bytes, bytewise, &mut seen);
        let next = frames.get(i + 1).map_or(60_000, |(t, _)| *t - 1);
        while let Some(due) = w.next_deadline().filter(|d| d.0 <= next) {
            w.tick(due, &mut |d| seen.push(d));
        }
    }
    let done = (kinds(&seen).into_iter())
        .filter(|(_, k)| k == "completed")
        .map(|(at, _)| at)
        .collect();
    (done, format!("{:?}", kinds(&seen)))
}

#[test]
fn codex_turn_ends_once_after_it_said_it_worked() {
    let whole = run(false);
    let completed: Vec<u64> = (kinds(&whole).into_iter())
        .filter(|(_, k)| k == "completed")
        .map(|(at, _)| at)
        .collect();
    assert_eq!(completed.len(), 1, "{:?}", kinds(&whole));
    assert!(completed[0] >= 3600, "completed early: {:?}", kinds(&whole));
    assert!(
        kinds(&whole)
            .iter()
            .any(|(at, k)| k == "busy" && *at >= 3000)
    );
    assert_eq!(
        kinds(&run(true)),
        kinds(&whole),
        "chunking changed the detections"
    );
}

/// `/plan` typed into Codex: it draws `• Model changed to … for Plan
/// mode.` and its input row, with no busy row and no state at all (no
/// model turn). The command ends once, after the screen stayed idle for
/// [`clawmux::detect::SILENT_COMMAND_QUIET`]: it was never reported ended,
/// and every later command queued behind it.
#[test]
fn a_codex_command_without_a_model_turn_ends_once() {
    let input = "\r\n› Ask Codex to do anything\r\n  GPT-6-Sol default · /ws\r\n";
    let frames = [
        (
            0,
            format!("{}  >_ OpenAI Codex (v0.171.0)\r\n", osc("working")),
        ),
        (100, format!("{}{input}", osc("idle"))),
        (
            1100,
            format!("• Model changed to gpt-6-sol medium for Plan mode.\r\n{input}"),
        ),
    ];
    let quiet = clawmux::detect::SILENT_COMMAND_QUIET.as_millis() as u64;
    for bytewise in [false, true] {
        let (done, log) = completions(&mut codex_watcher(), &frames, (1100, "/plan"), bytewise);
        assert_eq!(done.len(), 1, "{log}");
        assert!(done[0] >= 1100 + quiet, "{log}");
    }
}

/// A new Codex starting, as measured with 0.171.0: its idle screen, then
/// `idle` 300 ms later, at times followed by `working`, `idle` within
/// 50 ms. Its start-up is over once it said `idle` and stayed quiet for
/// [`clawmux::detect::START_QUIET`] (not at its first idle screen, nor
/// between the two `idle`s, where the first command would take the
/// start-up's `working` for its own), and `/plan` typed then ends after
/// [`clawmux::detect::SILENT_COMMAND_QUIET`]: the start-up's `idle` after
/// `working` is not that command's end waiting for a `Worked for` row that
/// never comes (it held the command for a minute).
#[test]
fn a_codex_start_up_is_over_once_it_said_so_and_is_not_the_first_commands() {
    let input = "\r\n› Ask Codex to do anything\r\n  GPT-6-Sol default · /ws\r\n";
    let start_quiet = clawmux::detect::START_QUIET.as_millis() as u64;
    let quiet = clawmux::detect::SILENT_COMMAND_QUIET.as_millis() as u64;
    let plan_at = 3000;
    for states in [&["idle"][..], &["idle", "working", "idle"]] {
        let mut frames = vec![(0, format!("  >_ OpenAI Codex (v0.171.0)\r\n{input}"))];
        let said_at = |i: usize| 300 + 30 * i as u64;
        for (i, state) in states.iter().enumerate() {
            frames.push((said_at(i), osc(state)));
        }
        let last_said = said_at(states.len() - 1);
        frames.push((
            plan_at,
            format!("• Model changed to gpt-6-sol medium for Plan mode.\r\n{input}"),
        ));
        let mut w = codex_watcher();
        w.detector_mut().begin_start_up();
        let (done, log) = completions(&mut w, &frames, (plan_at, "/plan"), false);
        let log = format!("{states:?}: {log}");
        assert_eq!(done.len(), 2, "{log}");
        assert!(done[0] >= last_said + start_quiet, "{log}");
        assert!(done[0] < plan_at, "{log}");
        assert!(done[1] >= plan_at + quiet, "{log}");
        assert!(done[1] < plan_at + 2 * quiet, "{log}");
    }
}
