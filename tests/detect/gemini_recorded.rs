//! The real Gemini CLI (0.61.0) recorded in tmux (`question_then_shell`,
//! made by `agent::gemini::gemini_question_then_shell_recorded`): its
//! question answered with its second option, then a shell approval,
//! notifications on. Replayed sans-IO at the recorded times, whole and one
//! byte at a time.
//!
//! - The answer goes in through the shared driver (`answered_replay`), as
//!   the daemon types it. Gemini moves its cursor onto the option typed
//!   and closes the dialog ~0.4 s later: that frame is not a second
//!   question.
//! - Its OSC 777 notifications, wrapped in tmux's passthrough, are read
//!   as signals: the question, the approval, the turn's end.

use clawmux::detect::Millis;
use clawmux::detect::{ApprovalKind, Detection, DetectionKind, DetectorConfig, PaneId, Profiles};
use clawmux::pane::Pane;
use clawmux::pane::signal::Signal;

use super::answered_replay::{Replay, SentWhen, approvals, described};

const RECORDING: &[u8] = include_bytes!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/gemini-0.61.0/question_then_shell.rec"
));

/// The recording, its question answered with its second option as it was.
const REPLAY: Replay<'static> = Replay {
    recording: RECORDING,
    profile: "gemini",
    typed: &[],
    answer: "2",
    answers: Some(ApprovalKind::Question),
    sent: SentWhen::PromptChanged,
};

/// The detections of [`REPLAY`], its answer seen taken.
fn replay(bytewise: bool) -> Vec<Detection> {
    let r = REPLAY.run(bytewise);
    assert_eq!(r.answered, 1, "the recorded answer was never seen taken");
    r.seen
}

/// Every dialog one card: the answered question, still drawn for a few
/// frames with its cursor on the answer, is not reported again (nor gone
/// "in the terminal"); the shell approval after it is reported once.
#[test]
fn gemini_answered_question_lingering_is_not_a_second_question() {
    let whole = replay(false);
    let kinds = described(&whole);
    assert_eq!(approvals(&whole, ApprovalKind::Question), 1, "{kinds:#?}");
    assert_eq!(approvals(&whole, ApprovalKind::Permission), 1, "{kinds:#?}");
    assert!(
        !whole.iter().any(|d| matches!(
            &d.kind,
            DetectionKind::ApprovalGone {
                approval: ApprovalKind::Question,
                ..
            }
        )),
        "{kinds:#?}"
    );
    assert_eq!(
        (whole.iter())
            .filter(|d| d.kind == DetectionKind::Completed)
            .count(),
        1,
        "{kinds:#?}"
    );
    assert_eq!(replay(true), whole, "chunking changed the detections");
}

/// The pane's output, fed to a pane model whole (each `%output` as it
/// came) or one byte at a time: the notifications it read.
fn notifications(bytewise: bool) -> Vec<(String, String)> {
    let mut decoder = clawmux::control::Decoder::new();
    let mut pane = Pane::new(120, 40);
    let mut found = Vec::new();
    for (_, line) in super::timed_lines(RECORDING) {
        let outputs = pane_outputs(&mut decoder, &line);
        for bytes in outputs {
            if bytewise {
                for b in &bytes {
                    pane.feed(std::slice::from_ref(b));
                }
            } else {
                pane.feed(&bytes);
            }
            for signal in pane.take_signals() {
                if let Signal::Notification { title, body } = signal {
                    found.push((title, body));
                }
            }
        }
    }
    found
}

/// Gemini inside tmux wraps each OSC 777 in tmux's passthrough (`ESC P
/// tmux; … ESC \`, its ESCs doubled): the pane reads the three it sent,
/// in order, however the bytes were cut.
#[test]
fn gemini_notifications_in_tmux_passthrough_are_signals() {
    let whole = notifications(false);
    let attention = "Gemini CLI needs your attention";
    assert_eq!(
        whole,
        [
            (
                attention.into(),
                "Answer requested by agent | Database".into()
            ),
            (
                attention.into(),
                "Approval required | Approve tool action: Confirm Shell Command".into()
            ),
            (
                "Gemini CLI session complete".into(),
                "Run finished | Gemini CLI finished responding.".into()
            ),
        ]
    );
    assert_eq!(notifications(true), whole);
}

/// `bytes` without window titles (OSC 0 `…` BEL), as Gemini draws with
/// its title's state icons off (`ui.dynamicWindowTitle: false`).
fn without_titles(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rest = bytes;
    while let Some(at) = rest.windows(4).position(|w| w == b"\x1b]0;") {
        out.extend_from_slice(&rest[..at]);
        let end = rest[at..].iter().position(|b| *b == 0x07);
        let end = end.expect("a whole title in one output");
        rest = &rest[at + end + 1..];
    }
    out.extend_from_slice(rest);
    out
}

/// The recording's pane output, titles removed, through a pane watcher
/// with `profile`: the completions, in ms.
fn completions_without_titles(profile: std::sync::Arc<clawmux::detect::Profile>) -> Vec<u64> {
    let mut decoder = clawmux::control::Decoder::new();
    let pane: PaneId = "%0".parse().unwrap();
    let mut w =
        clawmux::detect::PaneWatcher::new(pane, profile, DetectorConfig::default(), 120, 40);
    let mut seen = Vec::new();
    let mut end = 0;
    for (at, line) in super::timed_lines(RECORDING) {
        while let Some(due) = w.next_deadline().filter(|d| d.0 <= at) {
            w.tick(due, &mut |d| seen.push(d));
        }
        let outputs = pane_outputs(&mut decoder, &line);
        for bytes in outputs {
            w.feed(Millis(at), &without_titles(&bytes), &mut |d| seen.push(d));
        }
        end = at;
    }
    w.tick(Millis(end + 10_000), &mut |d| seen.push(d));
    (seen.iter())
        .filter(|d| d.kind == DetectionKind::Completed)
        .map(|d| d.at_ms.0)
        .collect()
}

/// Without its title's state, Gemini's notifications are its state (the
/// `gemini` profile's `notification_states`): the question's and the
/// approval's `needs your attention` hold the turn, `session complete`
/// ends it, once, after the answer. A profile that does not read them
/// never ends it: a Gemini turn ends only after Gemini said it worked.
#[test]
fn gemini_notifications_say_its_state_without_its_title() {
    let profiles = Profiles::defaults().unwrap();
    let done = completions_without_titles(profiles.get("gemini").unwrap());
    let complete_at = super::timed_lines(RECORDING)
        .iter()
        .find(|(_, l)| l.windows(27).any(|w| w == b"Gemini CLI session complete"))
        .map(|(at, _)| *at)
        .expect("the turn's end in the recording");
    assert_eq!(done.len(), 1, "{done:?}");
    assert!(done[0] >= complete_at, "{done:?} before {complete_at}");
    let deaf = Profiles::from_toml_layers(Some((
        "deaf.toml",
        "[profiles.gemini]\nnotification_states = []\n",
    )))
    .unwrap();
    assert_eq!(
        completions_without_titles(deaf.get("gemini").unwrap()),
        [0u64; 0]
    );
}

/// The pane output (`%output`) a control-mode `line` carries.
fn pane_outputs(decoder: &mut clawmux::control::Decoder, line: &[u8]) -> Vec<Vec<u8>> {
    let mut outputs = Vec::new();
    decoder.feed(line, &mut |e| {
        if let clawmux::control::Event::Notification(clawmux::control::Notification::Output {
            data,
            ..
        }) = e
        {
            outputs.push(data.to_vec());
        }
    });
    outputs
}

/// Gemini's `Answer Questions` box is carded with the question it asks,
/// not with the box's scroll arrow (`▲`) or its title.
#[test]
fn gemini_question_card_carries_its_question_text() {
    let whole = replay(false);
    let questions: Vec<&str> = (whole.iter())
        .filter_map(|d| match &d.kind {
            DetectionKind::Approval {
                approval: ApprovalKind::Question,
                question,
                ..
            } => Some(question.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(questions, ["Which database should the shop use?"]);
}
