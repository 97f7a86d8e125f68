//! The real Aider (0.86.2) recorded in tmux (`turns_with_dialogs`, made by
//! `agent::aider::aider_turns_with_dialogs_recorded`): five turns, three
//! of them with a yes/no question answered `yes` (`Create new file?`,
//! `Run shell command?`, `Add file to the chat?`), the last with a 429
//! Aider retried once. Replayed sans-IO at the recorded times, whole and
//! one byte at a time, as the daemon drives the pane: each command is
//! told to the detector as it is typed, each answer goes in once the
//! dialog has settled and the detector is told once the screen shows it
//! taken.

use std::time::{Duration, Instant};

use clawmux::bridge::panes::answering::{AnswerStep, Answering, FRAME_QUIET};
use clawmux::detect::{
    ApprovalKind, Detection, DetectionKind, DetectorConfig, Millis, PaneId, Profiles, StreamWatcher,
};

const RECORDING: &[u8] = include_bytes!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/aider-0.86.2/turns_with_dialogs.rec"
));

/// The commands typed, in order, and the row that shows each turn over.
const TURNS: [(&str, &str); 5] = [
    ("what does the shop sell?", "The shop sells plums."),
    ("write the notes", "Applied edit to notes.txt"),
    ("make a marker file", "Running touch made-by-aider.txt"),
    ("where are the prices?", "The menu lists plums at 2 coins."),
    ("hello again", "Hello after the wait."),
];

/// The answer typed into every dialog.
const ANSWER: &str = "yes";

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// Replays the recording with the aider profile, typing commands and
/// answering dialogs as the daemon does; the detections.
fn replay(bytewise: bool) -> Vec<Detection> {
    let profile = Profiles::defaults().unwrap().get("aider").unwrap();
    let mut w = StreamWatcher::new(profile, DetectorConfig::default(), (120, 40));
    let pane: PaneId = "%0".parse().unwrap();
    let start = Instant::now();
    let instant = |ms: u64| start + Duration::from_millis(ms);
    let mut seen: Vec<Detection> = Vec::new();
    let mut answer: Option<Answering> = None;
    let mut answered = 0;
    let mut typed = 0;
    for (at, bytes) in super::timed_lines(RECORDING) {
        // An answer that went in is judged once the screen stood still,
        // before the detector judges that screen.
        if let Some(a) = answer.as_ref().filter(|a| a.tries() > 0)
            && let Some(last) = w.pane(pane).map(|p| p.last_output().0)
            && let whole = last + FRAME_QUIET.as_millis() as u64
            && whole <= at
        {
            while let Some(due) = w.next_deadline().filter(|d| d.0 < whole) {
                w.tick(due, &mut |d| seen.push(d));
            }
            if let Some(p) = w.pane(pane)
                && a.step(&p.look(), instant(last), instant(whole)) == AnswerStep::Taken
            {
                p.detector_mut().forget_prompt(Millis(whole), Some(ANSWER));
                answer = None;
                answered += 1;
            }
        }
        while let Some(due) = w.next_deadline().filter(|d| d.0 <= at) {
            w.tick(due, &mut |d| seen.push(d));
        }
        if answer.is_none() {
            answer = (seen.iter())
                .filter_map(|d| match &d.kind {
                    DetectionKind::Approval { question, body, .. } => {
                        Some(Answering::new(question, body, ANSWER, instant(d.at_ms.0)))
                    }
                    _ => None,
                })
                .nth(answered);
        }
        // The command is told to the detector as the daemon types it.
        if let Some((command, _)) = TURNS.get(typed)
            && contains(&bytes, command)
            && let Some(p) = w.pane(pane)
        {
            p.typed(command);
            typed += 1;
        }
        let before = w.pane(pane).map(|p| (p.look(), instant(p.last_output().0)));
        if bytewise {
            for b in &bytes {
                w.feed(Millis(at), std::slice::from_ref(b), &mut |d| seen.push(d));
            }
        } else {
            w.feed(Millis(at), &bytes, &mut |d| seen.push(d));
        }
        // The answer went in just before the output that echoes it (the
        // recording typed it once the screen had stood still for
        // ANSWER_SETTLE, as the daemon does).
        if let (Some(a), Some((before, _)), Some(p)) = (answer.as_mut(), before, w.pane(pane))
            && a.tries() == 0
            && contains(&bytes, ANSWER)
        {
            p.detector_mut().answered(&a.question);
            a.sent(&before, instant(at));
        }
    }
    let end = super::timed_lines(RECORDING)
        .last()
        .map_or(0, |(at, _)| *at);
    w.finish(Millis(end), &mut |d| seen.push(d));
    w.tick(Millis(end + 10_000), &mut |d| seen.push(d));
    assert_eq!(typed, TURNS.len(), "not every command was seen typed");
    assert_eq!(answered, 3, "not every answer was seen taken");
    seen
}

fn described(seen: &[Detection]) -> Vec<String> {
    (seen.iter())
        .map(|d| format!("{} {}", d.at_ms.0, d.to_json()))
        .collect()
}

/// The time the recording first shows `needle`.
fn shown_at(needle: &str) -> u64 {
    (super::timed_lines(RECORDING).iter())
        .find(|(_, l)| contains(l, needle))
        .map(|(at, _)| *at)
        .unwrap_or_else(|| panic!("{needle:?} not in the recording"))
}

/// Every turn ends once, after the row that shows it over, dialog or not;
/// each dialog is one card; the 429 Aider retried is no error.
#[test]
fn every_aider_turn_ends_once_dialogs_and_retries_included() {
    let whole = replay(false);
    let kinds = described(&whole);
    let ends: Vec<u64> = (whole.iter())
        .filter(|d| d.kind == DetectionKind::Completed)
        .map(|d| d.at_ms.0)
        .collect();
    assert_eq!(ends.len(), TURNS.len(), "{kinds:#?}");
    for (end, (_, over)) in ends.iter().zip(TURNS) {
        assert!(
            *end >= shown_at(over),
            "{over:?} ended at {end}: {kinds:#?}"
        );
    }
    for kind in [
        ApprovalKind::Create,
        ApprovalKind::Permission,
        ApprovalKind::Question,
    ] {
        let n = (whole.iter())
            .filter(|d| matches!(&d.kind, DetectionKind::Approval { approval, .. } if *approval == kind))
            .count();
        assert_eq!(n, 1, "{kind:?}: {kinds:#?}");
    }
    assert!(
        !whole
            .iter()
            .any(|d| matches!(d.kind, DetectionKind::Error { .. })),
        "{kinds:#?}"
    );
    assert_eq!(replay(true), whole, "chunking changed the detections");
}

/// `Add file to the chat?` is carded with the file it names and every
/// option its question offers, `Don't ask again` included.
#[test]
fn aider_add_file_card_has_every_option() {
    let whole = replay(false);
    let card = (whole.iter())
        .find_map(|d| match &d.kind {
            DetectionKind::Approval {
                approval: ApprovalKind::Question,
                question,
                body,
                options,
            } => Some((question.clone(), body.clone(), options.clone())),
            _ => None,
        })
        .expect("the question");
    assert_eq!(
        card.0,
        "Add file to the chat? (Y)es/(N)o/(D)on't ask again [Yes]:"
    );
    assert_eq!(card.1, "menu.txt");
    let labels: Vec<(&str, &str)> = (card.2.iter())
        .map(|o| (o.key.as_str(), o.label.as_str()))
        .collect();
    assert_eq!(
        labels,
        [("yes", "Yes"), ("no", "No"), ("don't", "Don't ask again")]
    );
}

/// Read as an adopted pane is (`clawmux detect`: nobody told the detector
/// a command was typed), every turn still ends once: a command taken at
/// Aider's prompt shows as its echo (`diff> write the notes`) with the
/// cursor below it, and that begins the turn even when no busy row was
/// ever drawn (the three turns with a dialog streamed before Aider drew
/// its spinner, and were missed).
#[test]
fn aider_turns_typed_at_the_desk_end_once() {
    let (code, out, err) =
        crate::support::claude::clawmux_stdin(&["detect", "--profile", "aider"], RECORDING);
    assert_eq!(code, 0, "{err}");
    let kinds: Vec<serde_json::Value> = (out.lines())
        .map(|l| serde_json::from_str(l).expect("a detection"))
        .collect();
    let ends: Vec<u64> = (kinds.iter())
        .filter(|d| d["kind"] == "completed")
        .filter_map(|d| d["at_ms"].as_u64())
        .collect();
    assert_eq!(ends.len(), TURNS.len(), "{out}");
    for (end, (_, over)) in ends.iter().zip(TURNS) {
        assert!(*end >= shown_at(over), "{over:?} ended at {end}: {out}");
    }
    assert!(kinds.iter().all(|d| d["kind"] != "error"), "{out}");
    let retrying = (kinds.iter()).find(|d| d["kind"] == "progress");
    assert_eq!(
        retrying.map(|d| d["stage"].clone()),
        Some("Retrying in 0.2 seconds...".into()),
        "{out}"
    );
}
