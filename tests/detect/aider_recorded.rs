//! The real Aider (0.86.2) recorded in tmux (`turns_with_dialogs`, made by
//! `agent::aider::aider_turns_with_dialogs_recorded`): five turns, three
//! of them with a yes/no question answered `yes` (`Create new file?`,
//! `Run shell command?`, `Add file to the chat?`), the last with a 429
//! Aider retried once. Replayed by the shared driver
//! (`answered_replay`): each command told to the detector as it is typed,
//! `yes` into every dialog, seen going in by its echo.

use clawmux::detect::{ApprovalKind, Detection, DetectionKind};

use super::answered_replay::{Replay, SentWhen, approvals, described};

/// The commands typed, in order, and the row that shows each turn over.
const TURNS: [(&str, &str); 5] = [
    ("what does the shop sell?", "The shop sells plums."),
    ("write the notes", "Applied edit to notes.txt"),
    ("make a marker file", "Running touch made-by-aider.txt"),
    ("where are the prices?", "The menu lists plums at 2 coins."),
    ("hello again", "Hello after the wait."),
];

/// The recording, typed and answered (`yes` to every dialog) as it was.
const REPLAY: Replay<'static> = Replay {
    recording: include_bytes!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/aider-0.86.2/turns_with_dialogs.rec"
    )),
    profile: "aider",
    typed: &[TURNS[0].0, TURNS[1].0, TURNS[2].0, TURNS[3].0, TURNS[4].0],
    answer: "yes",
    answers: None,
    sent: SentWhen::Echoed,
};

/// The detections of [`REPLAY`], every command seen typed and every
/// answer seen taken.
fn replay(bytewise: bool) -> Vec<Detection> {
    let r = REPLAY.run(bytewise);
    assert_eq!(r.typed, TURNS.len(), "not every command was seen typed");
    assert_eq!(r.answered, 3, "not every answer was seen taken");
    r.seen
}

fn shown_at(needle: &str) -> u64 {
    REPLAY.shown_at(needle)
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
        assert_eq!(approvals(&whole, kind), 1, "{kind:?}: {kinds:#?}");
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

/// `Run shell command?` is carded naming the command, which Aider prints
/// on the row above its question, with its three options.
#[test]
fn aider_shell_command_card_names_the_command() {
    let whole = replay(false);
    let card = (whole.iter())
        .find_map(|d| match &d.kind {
            DetectionKind::Approval {
                approval: ApprovalKind::Permission,
                question,
                body,
                options,
            } => Some((question.clone(), body.clone(), options.len())),
            _ => None,
        })
        .expect("the shell command's approval");
    assert_eq!(
        card,
        (
            "Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]:".to_owned(),
            "touch made-by-aider.txt".to_owned(),
            3
        )
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
        crate::support::claude::clawmux_stdin(&["detect", "--profile", "aider"], REPLAY.recording);
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
