//! Sans-IO detection: chunking invariance over a whole sim-agent session,
//! and the completion debounce under an injected clock.

use std::io::Write;
use std::time::Duration;

use clawmux::detect::{
    ApprovalKind, Detection, DetectionKind, DetectorConfig, Millis, PaneWatcher, Profiles,
    UNCLOSED_QUIET,
};
use clawmux::sim::{DEFAULT_SCRIPT, Script, SimAgent, SimOptions};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Time between two writes of the agent in the replay: longer than the
/// debounce, so every frame is judged and every turn completes.
const FRAME_GAP_MS: u64 = 400;

/// Records each `write` call as one chunk, as the terminal would get it.
#[derive(Default)]
struct Chunks(Vec<Vec<u8>>);

impl Write for Chunks {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.push(buf.to_vec());
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The writes of a whole sim-agent session driven by `input`.
fn session(input: &str) -> Vec<Vec<u8>> {
    let mut out = Chunks::default();
    let options = SimOptions {
        speed: 1000.0,
        cols: 80,
        tty: None,
    };
    SimAgent::new(
        Script::parse(DEFAULT_SCRIPT).unwrap(),
        input.as_bytes(),
        &mut out,
        options,
    )
    .run()
    .unwrap();
    out.0
}

const INPUT: &str = "/gsd:plan-phase 2\n1/gsd:execute-phase 3\napproved\nplease fail\n/gsd:discuss-phase 1\n2hello there\n";

fn watcher() -> PaneWatcher {
    watcher_with(DetectorConfig::default())
}

fn watcher_with(config: DetectorConfig) -> PaneWatcher {
    let profile = Profiles::defaults().unwrap().get("gsd").unwrap();
    PaneWatcher::new("%1".parse().unwrap(), profile, config, 80, 30)
}

/// Feeds frame `i` at `i * FRAME_GAP_MS`, each frame cut by `split`.
fn replay(frames: &[Vec<u8>], mut split: impl FnMut(&[u8]) -> Vec<Vec<u8>>) -> Vec<Detection> {
    let mut w = watcher();
    let mut seen = Vec::new();
    for (i, frame) in frames.iter().enumerate() {
        let now = Millis(i as u64 * FRAME_GAP_MS);
        for part in split(frame) {
            w.feed(now, &part, &mut |d| seen.push(d));
        }
    }
    w.tick(Millis(u64::MAX / 2), &mut |d| seen.push(d));
    seen
}

fn random_split(rng: &mut StdRng, bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut parts = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let n = rng.random_range(1..=rest.len().min(40));
        parts.push(rest[..n].to_vec());
        rest = &rest[n..];
    }
    parts
}

fn count(seen: &[Detection], pred: impl Fn(&DetectionKind) -> bool) -> usize {
    seen.iter().filter(|d| pred(&d.kind)).count()
}

#[test]
fn whole_session_detections() {
    let seen = replay(&session(INPUT), |f| vec![f.to_vec()]);
    let approvals: Vec<ApprovalKind> = seen
        .iter()
        .filter_map(|d| match &d.kind {
            DetectionKind::Approval { approval, .. } => Some(*approval),
            _ => None,
        })
        .collect();
    assert_eq!(
        approvals,
        [
            ApprovalKind::Permission,
            ApprovalKind::Checkpoint,
            ApprovalKind::Question
        ]
    );
    let gone = count(&seen, |k| matches!(k, DetectionKind::ApprovalGone { .. }));
    assert_eq!(gone, 3);
    let errors = count(&seen, |k| matches!(k, DetectionKind::Error { .. }));
    assert_eq!(errors, 1, "{seen:#?}");
    // plan-phase, execute-phase (after the checkpoint), fail, discuss, hello.
    assert_eq!(
        count(&seen, |k| *k == DetectionKind::Completed),
        5,
        "{seen:#?}"
    );
}

#[test]
fn detections_do_not_depend_on_chunking() {
    let frames = session(INPUT);
    let reference = replay(&frames, |f| vec![f.to_vec()]);
    let bytewise = replay(&frames, |f| f.iter().map(|b| vec![*b]).collect());
    assert_eq!(reference, bytewise);
    for seed in 0..20 {
        let mut rng = StdRng::seed_from_u64(seed);
        let split = replay(&frames, |f| random_split(&mut rng, f));
        assert_eq!(reference, split, "seed {seed}");
    }
}

#[test]
fn line_detections_do_not_depend_on_frame_boundaries() {
    let frames = session(INPUT);
    // For an agent profile errors are read from the settled screen at the
    // end of a turn (a screen detection, like completion): only progress
    // is read line by line.
    let lines_only = |seen: Vec<Detection>| -> Vec<DetectionKind> {
        seen.into_iter()
            .map(|d| d.kind)
            .filter(|k| matches!(k, DetectionKind::Progress(_)))
            .collect()
    };
    let reference = lines_only(replay(&frames, |f| vec![f.to_vec()]));
    assert!(reference.len() >= 10, "{reference:#?}");
    let all: Vec<u8> = frames.concat();
    for seed in 0..10 {
        let mut rng = StdRng::seed_from_u64(seed);
        let cut: Vec<Vec<u8>> = random_split(&mut rng, &all);
        let seen = replay(&cut, |f| vec![f.to_vec()]);
        assert_eq!(reference, lines_only(seen), "seed {seed}");
    }
}

/// Claude Code's busy line at the start of a turn.
const SPINNER: &str = "\r\x1b[2K✶ Working… (0s · esc to interrupt)";
const IDLE_BOX: &str = "\r\n──────────\r\n❯ \r\n──────────\r\n  ? for shortcuts\x1b[2A\r\x1b[2C";

fn feed(w: &mut PaneWatcher, t: u64, bytes: &str, seen: &mut Vec<Detection>) {
    w.feed(Millis(t), bytes.as_bytes(), &mut |d| seen.push(d));
}

fn tick(w: &mut PaneWatcher, t: u64, seen: &mut Vec<Detection>) {
    w.tick(Millis(t), &mut |d| seen.push(d));
}

#[test]
fn completion_waits_for_the_debounce_and_restarts_on_output() {
    let mut w = watcher();
    let mut seen = Vec::new();
    feed(&mut w, 0, SPINNER, &mut seen);
    assert_eq!(w.next_deadline(), Some(Millis(2)));
    tick(&mut w, 2, &mut seen);
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].kind, DetectionKind::Busy);
    feed(
        &mut w,
        100,
        &format!("\r\x1b[2K✻ Churned for 1s\r\n{IDLE_BOX}"),
        &mut seen,
    );
    tick(&mut w, 102, &mut seen);
    assert_eq!(w.next_deadline(), Some(Millis(400)));
    tick(&mut w, 399, &mut seen);
    assert_eq!(seen.len(), 1, "{seen:#?}");
    // A redraw (the cursor moves) restarts the wait.
    feed(&mut w, 350, "\x1b[1C", &mut seen);
    tick(&mut w, 649, &mut seen);
    assert_eq!(seen.len(), 1, "{seen:#?}");
    tick(&mut w, 650, &mut seen);
    assert_eq!(seen.len(), 2, "{seen:#?}");
    assert_eq!(seen[1].kind, DetectionKind::Completed);
    assert_eq!(seen[1].at_ms, Millis(650));
    assert!(seen[1].context.contains("Churned"));
    assert_eq!(w.next_deadline(), None);
    // Nothing more: a turn completes once.
    tick(&mut w, 100_000, &mut seen);
    assert_eq!(seen.len(), 2);
}

#[test]
fn no_completion_while_the_pane_floods() {
    let mut w = watcher();
    let mut seen = Vec::new();
    feed(&mut w, 0, SPINNER, &mut seen);
    w.detector_mut().set_flooding(Millis(10), true);
    // A snapshot that looks idle, then nothing for a long time: snapshots
    // only come when the screen changed, so this is not silence.
    feed(
        &mut w,
        100,
        &format!("\x1b[H\x1b[2J✻ Churned for 1s\r\n{IDLE_BOX}"),
        &mut seen,
    );
    tick(&mut w, 100_000, &mut seen);
    assert_eq!(seen.len(), 1, "{seen:#?}");
    // Streamed again: the debounce counts from then.
    w.detector_mut().set_flooding(Millis(100_000), false);
    assert_eq!(w.next_deadline(), Some(Millis(100_002)));
    tick(&mut w, 100_002, &mut seen);
    tick(&mut w, 100_299, &mut seen);
    assert_eq!(seen.len(), 1, "{seen:#?}");
    tick(&mut w, 100_300, &mut seen);
    assert_eq!(seen[1].kind, DetectionKind::Completed);
    assert_eq!(seen[1].at_ms, Millis(100_300));
}

#[test]
fn summary_line_alone_is_not_completion() {
    let mut w = watcher();
    let mut seen = Vec::new();
    feed(&mut w, 0, SPINNER, &mut seen);
    feed(&mut w, 100, "\r\x1b[2K✻ Churned for 51s\r\n", &mut seen);
    tick(&mut w, 1_000_000, &mut seen);
    let kinds: Vec<_> = seen.iter().map(|d| d.kind.clone()).collect();
    assert_eq!(kinds, [DetectionKind::Busy]);
}

#[test]
fn debounce_is_configurable() {
    let profile = Profiles::defaults().unwrap().get("claude").unwrap();
    let config = DetectorConfig {
        debounce: Duration::from_millis(50),
        ..DetectorConfig::default()
    };
    let mut w = PaneWatcher::new("%2".parse().unwrap(), profile, config, 80, 24);
    let mut seen = Vec::new();
    feed(&mut w, 0, SPINNER, &mut seen);
    feed(
        &mut w,
        100,
        &format!("\r\x1b[2K✻ Worked for 1s\r\n{IDLE_BOX}"),
        &mut seen,
    );
    tick(&mut w, 149, &mut seen);
    assert_eq!(seen.len(), 1);
    tick(&mut w, 150, &mut seen);
    assert_eq!(seen[1].kind, DetectionKind::Completed);
    assert_eq!(seen[1].at_ms, Millis(150));
}

/// Claude Code 2.1.197 hides its spinner while an answer streams and
/// draws the answer a line at a time: between two lines the screen looks
/// idle. Without the row that closes a turn (`✻ Worked for 2s`) that is a
/// pause, not the end; the turn ends once that row shows, at the debounce,
/// or after [`UNCLOSED_QUIET`] of silence (a turn that ended without it).
#[test]
fn an_idle_screen_without_the_turns_closing_row_is_a_pause() {
    let ends = |seen: &[Detection]| -> Vec<Millis> {
        (seen.iter())
            .filter(|d| d.kind == DetectionKind::Completed)
            .map(|d| d.at_ms)
            .collect()
    };
    let mut w = watcher();
    let mut seen = Vec::new();
    feed(&mut w, 0, SPINNER, &mut seen);
    let first_line = format!("\x1b[H\x1b[2J❯ /gsd:plan-phase 1\r\n● ━━━━━━━━\r\n{IDLE_BOX}");
    feed(&mut w, 100, &first_line, &mut seen);
    tick(&mut w, 1_500, &mut seen);
    assert_eq!(ends(&seen), [], "a pause in the answer ended the turn");
    // The next line and the closing row: over at the debounce.
    let closed = format!(
        "\x1b[H\x1b[2J❯ /gsd:plan-phase 1\r\n● ━━━━━━━━\r\n  Nothing left to plan.\r\n✻ Worked for 2s\r\n{IDLE_BOX}"
    );
    feed(&mut w, 1_600, &closed, &mut seen);
    tick(&mut w, 1_900, &mut seen);
    assert_eq!(ends(&seen), [Millis(1_900)], "{seen:#?}");

    // A turn that never shows the row ends after the longer quiet time.
    let mut w = watcher();
    let mut seen = Vec::new();
    feed(&mut w, 0, SPINNER, &mut seen);
    feed(&mut w, 100, &first_line, &mut seen);
    let end = 100 + UNCLOSED_QUIET.as_millis() as u64;
    tick(&mut w, end - 1, &mut seen);
    assert_eq!(ends(&seen), []);
    tick(&mut w, end, &mut seen);
    assert_eq!(ends(&seen), [Millis(end)], "{seen:#?}");
}

/// A permission prompt as Claude Code draws it (the screen starts here).
const PERMISSION: &str = "\x1b[H\x1b[2J⏺ Bash(make check)\r\n\r\n Bash command\r\n   make check\r\n\r\n Do you want to proceed?\r\n ❯ 1. Yes\r\n   2. No, and tell Claude what to do differently (esc)\r\n";
/// The question [`PERMISSION`] asks.
const QUESTION: &str = "Do you want to proceed?";
/// What follows an answer: the prompt is gone.
const ANSWERED: &str = "\x1b[H\x1b[2J⏺ Bash(make check)\r\n  ⎿  Selected: Yes\r\n";

/// A watcher that has read [`PERMISSION`] and reported it, with what it saw.
fn permission_reported() -> (PaneWatcher, Vec<Detection>) {
    let mut w = watcher();
    let mut seen = Vec::new();
    feed(&mut w, 0, PERMISSION, &mut seen);
    tick(&mut w, 1_000, &mut seen);
    (w, seen)
}

fn approvals(seen: &[Detection]) -> usize {
    count(seen, |k| matches!(k, DetectionKind::Approval { .. }))
}

/// The dialogs reported and gone, in order.
fn approvals_and_gone(seen: &[Detection]) -> Vec<&'static str> {
    (seen.iter())
        .filter_map(|d| match &d.kind {
            DetectionKind::Approval { .. } => Some("approval"),
            DetectionKind::ApprovalGone { .. } => Some("gone"),
            _ => None,
        })
        .collect()
}

#[test]
fn a_prompt_answered_before_it_was_judged_is_not_reported_as_new() {
    // A fresh watcher (a restart, a new client) starts from the screen,
    // and the prompt on it is answered before the screen is judged.
    let mut w = watcher();
    let mut seen = Vec::new();
    feed(&mut w, 0, PERMISSION, &mut seen);
    w.detector_mut().answered(QUESTION);
    // However late the agent redraws, the prompt still shown is the old one.
    tick(&mut w, 10_000, &mut seen);
    assert_eq!(approvals(&seen), 0, "{seen:#?}");
    feed(&mut w, 20_000, ANSWERED, &mut seen);
    tick(&mut w, 20_010, &mut seen);
    // The same question asked again is a new prompt.
    feed(&mut w, 30_000, PERMISSION, &mut seen);
    tick(&mut w, 31_000, &mut seen);
    assert_eq!(approvals(&seen), 1, "{seen:#?}");
}

#[test]
fn an_answered_question_is_forgotten_once_a_judged_screen_lacks_it() {
    let mut w = watcher();
    let mut seen = Vec::new();
    feed(&mut w, 0, ANSWERED, &mut seen);
    w.detector_mut().answered(QUESTION);
    tick(&mut w, 10, &mut seen);
    feed(&mut w, 1_000, PERMISSION, &mut seen);
    tick(&mut w, 2_000, &mut seen);
    assert_eq!(approvals(&seen), 1, "{seen:#?}");
}

#[test]
fn a_dialog_with_the_same_question_and_another_body_is_another_dialog() {
    let (mut w, mut seen) = permission_reported();
    // Redrawn at once over the first: another command, asked the same way.
    feed(
        &mut w,
        2_000,
        &PERMISSION.replace("make check", "make deploy"),
        &mut seen,
    );
    tick(&mut w, 3_000, &mut seen);
    let kinds = approvals_and_gone(&seen);
    assert_eq!(kinds, ["approval", "gone", "approval"], "{seen:#?}");
}

#[test]
fn the_same_dialog_once_answered_is_a_new_one_when_seen_again() {
    let (mut w, mut seen) = permission_reported();
    // Answered; the agent asks about the same command again at once.
    w.detector_mut().forget_prompt(Millis(2_000), Some("1"));
    feed(&mut w, 2_000, PERMISSION, &mut seen);
    tick(&mut w, 3_000, &mut seen);
    assert_eq!(approvals(&seen), 2, "{seen:#?}");
}

#[test]
fn a_dialog_redrawn_in_two_writes_with_its_answer_chosen_is_not_a_new_one() {
    let (mut w, mut seen) = permission_reported();
    // Option 2 typed: the agent redraws the dialog with its cursor on the
    // answer (as Gemini CLI does before it closes it), the frame cut in
    // two writes on a loaded machine: its first half lacks the dialog.
    feed(
        &mut w,
        2_000,
        "\x1b[H\x1b[2J⏺ Bash(make check)\r\n",
        &mut seen,
    );
    tick(&mut w, 2_002, &mut seen);
    let rest = "\r\n Bash command\r\n   make check\r\n\r\n Do you want to proceed?\r\n   1. Yes\r\n ❯ 2. No, and tell Claude what to do differently (esc)\r\n";
    feed(&mut w, 2_010, rest, &mut seen);
    tick(&mut w, 2_012, &mut seen);
    // The answer is judged on the still screen first, as the daemon does.
    w.detector_mut().forget_prompt(Millis(2_060), Some("2"));
    tick(&mut w, 2_060, &mut seen);
    feed(&mut w, 2_400, ANSWERED, &mut seen);
    tick(&mut w, 3_000, &mut seen);
    let kinds = approvals_and_gone(&seen);
    assert_eq!(kinds, ["approval"], "{seen:#?}");
}

/// The idle box after a finished turn, with the terminal's echo of a typed
/// command in it (the agent has not read the command yet).
fn box_with_echo(command: &str) -> String {
    format!("\r\x1b[2K✻ Churned for 1s\r\n{IDLE_BOX}{command}\r\n")
}

#[test]
fn a_typed_command_still_in_the_input_box_does_not_end_the_turn() {
    let command = "/gsd:plan-phase 2";
    // A turn begun without saying what was typed: this screen looks idle.
    let mut w = watcher();
    let mut seen = Vec::new();
    w.detector_mut().begin_turn();
    feed(&mut w, 0, &box_with_echo(command), &mut seen);
    tick(&mut w, 10_000, &mut seen);
    assert_eq!(count(&seen, |k| *k == DetectionKind::Completed), 1);

    // Typed: however long the agent takes to read it, the turn goes on.
    let mut w = watcher();
    let mut seen = Vec::new();
    w.detector_mut().typed(command);
    feed(&mut w, 0, &box_with_echo(command), &mut seen);
    tick(&mut w, 10_000, &mut seen);
    assert!(seen.is_empty(), "{seen:#?}");
    // The agent takes it (the box empties), works, and is idle again.
    feed(
        &mut w,
        10_100,
        &format!("\r\x1b[3A\x1b[J> {command}\r\n{SPINNER}"),
        &mut seen,
    );
    feed(&mut w, 10_200, &box_with_echo(""), &mut seen);
    tick(&mut w, 20_000, &mut seen);
    let kinds: Vec<_> = seen.iter().map(|d| d.kind.clone()).collect();
    assert_eq!(kinds, [DetectionKind::Busy, DetectionKind::Completed]);
}

/// A spinner, then a quoted menu whose write also carried the spinner row,
/// split so that the row comes 12 ms later (as seen on a loaded machine).
fn split_frame(w: &mut PaneWatcher, seen: &mut Vec<Detection>) {
    feed(w, 0, SPINNER, seen);
    let quoted = "\r\x1b[2K Do you want to proceed?\r\n ❯ 1. Yes\r\n   2. No, quoted\r\n";
    feed(w, 100, quoted, seen);
    feed(w, 112, SPINNER, seen);
    tick(w, 10_000, seen);
}

#[test]
fn half_a_frame_that_looks_like_a_prompt_is_not_one() {
    // Judged as soon as the output settles, the half frame is a prompt.
    let mut hasty = watcher_with(DetectorConfig {
        prompt_quiet: Duration::ZERO,
        ..DetectorConfig::default()
    });
    let mut seen = Vec::new();
    split_frame(&mut hasty, &mut seen);
    assert_eq!(approvals(&seen), 1, "{seen:#?}");

    // Waiting until a prompt is still, it is not one.
    let mut w = watcher();
    let mut seen = Vec::new();
    split_frame(&mut w, &mut seen);
    assert_eq!(approvals(&seen), 0, "{seen:#?}");
    // A real prompt is still once drawn: reported when it has been still
    // for the quiet time.
    feed(&mut w, 20_000, PERMISSION, &mut seen);
    tick(&mut w, 20_049, &mut seen);
    assert_eq!(approvals(&seen), 0, "{seen:#?}");
    tick(&mut w, 20_050, &mut seen);
    assert_eq!(approvals(&seen), 1, "{seen:#?}");
    assert_eq!(seen.last().map(|d| d.at_ms), Some(Millis(20_050)));
}

#[test]
fn a_typed_command_the_agent_has_not_echoed_does_not_end_on_the_last_turns_screen() {
    let command = "waiting its turn";
    let mut w = watcher();
    let mut seen = Vec::new();
    // The last turn's answer under an empty input box: idle-looking.
    let last_turn = format!("● You said: earlier\r\n{}", box_with_echo(""));
    feed(&mut w, 0, &last_turn, &mut seen);
    tick(&mut w, 1_000, &mut seen);
    seen.clear();
    // Typed and submitted, but the agent has not drawn anything of it yet
    // (a loaded machine): its box is empty and the old answer still shows.
    w.detector_mut().typed(command);
    feed(&mut w, 2_000, &last_turn, &mut seen);
    tick(&mut w, 12_000, &mut seen);
    assert!(
        seen.is_empty(),
        "completed on the last turn's screen: {seen:#?}"
    );
    // The agent echoes the command and answers: now the turn ends.
    let answered = format!(
        "\x1b[H\x1b[2J● You said: earlier\r\n❯ {command}\r\n● You said: {command}\r\n{}",
        box_with_echo("")
    );
    feed(&mut w, 12_100, &answered, &mut seen);
    tick(&mut w, 20_000, &mut seen);
    assert_eq!(
        count(&seen, |k| *k == DetectionKind::Completed),
        1,
        "{seen:#?}"
    );
}

/// A screen of GSD's decision checkpoint above Claude Code's input box,
/// with `below` between them: the spinner row while the agent still
/// writes, the turn's closing row once it is over.
fn checkpoint_frame(below: &str) -> String {
    format!(
        "\x1b[H\x1b[2J⏺ Executing wave 1\r\n  ║  CHECKPOINT: Decision Required  ║\r\n  Decision: Which store?\r\n  Options:\r\n  1. redis - fast\r\n  2. sqlite - one file\r\n  ────────\r\n  → Select: redis / sqlite\r\n  ────────\r\n{below}\r\n{IDLE_BOX}"
    )
}

#[test]
fn a_checkpoint_is_reported_once_the_turn_is_over_like_any_turn_end() {
    let mut w = watcher();
    let mut seen = Vec::new();
    feed(&mut w, 0, &checkpoint_frame(SPINNER), &mut seen);
    // A frame drawn without the spinner row, 150 ms before the next one
    // (as a loaded machine drew it): the agent still writes.
    feed(&mut w, 100, &checkpoint_frame(""), &mut seen);
    feed(&mut w, 250, &checkpoint_frame(SPINNER), &mut seen);
    tick(&mut w, 1_000, &mut seen);
    assert_eq!(approvals(&seen), 0, "{seen:#?}");
    // No spinner and no closing row for longer than the debounce (Claude
    // Code 2.1.197 drawing the answer a line at a time): still writing.
    feed(&mut w, 1_100, &checkpoint_frame(""), &mut seen);
    tick(&mut w, 1_900, &mut seen);
    assert_eq!(approvals(&seen), 0, "{seen:#?}");
    // The turn's end: the checkpoint waits, still, for the debounce.
    feed(
        &mut w,
        2_000,
        &checkpoint_frame("✻ Worked for 3s"),
        &mut seen,
    );
    tick(&mut w, 2_299, &mut seen);
    assert_eq!(approvals(&seen), 0, "{seen:#?}");
    tick(&mut w, 2_300, &mut seen);
    let asked: Vec<_> = (seen.iter())
        .filter_map(|d| match &d.kind {
            DetectionKind::Approval {
                approval, question, ..
            } => Some((*approval, question)),
            _ => None,
        })
        .collect();
    assert_eq!(asked.len(), 1, "{seen:#?}");
    assert_eq!(asked[0].0, ApprovalKind::Checkpoint);
    assert!(
        asked[0].1.contains("CHECKPOINT: Decision Required"),
        "{seen:#?}"
    );
}
