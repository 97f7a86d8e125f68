//! Screens of the real Claude Code 2.1.197 (captured from a run against a
//! local fake API, in `screens/`), drawn into a [`PaneWatcher`] whole and
//! one byte at a time: the same detections either way, and the right ones.

use clawmux::detect::{
    ApprovalKind, Detection, DetectionKind, DetectorConfig, MAX_LOADING_WAIT, Millis, PaneWatcher,
    Profiles,
};

/// The size the screens were captured at.
const COLS: u16 = 100;
const ROWS: u16 = 40;

macro_rules! real {
    ($name:literal) => {
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/detect/screens/",
            $name,
            ".txt"
        ))
    };
}

/// The bytes that draw `screen` from a cleared terminal.
fn draw(screen: &str) -> Vec<u8> {
    let mut out = b"\x1b[H\x1b[2J".to_vec();
    out.extend_from_slice(
        screen
            .trim_end_matches('\n')
            .replace('\n', "\r\n")
            .as_bytes(),
    );
    out
}

/// Feeds each screen a second after the previous one (the debounce and
/// the prompt's quiet time pass between them), `bytewise` one byte per
/// feed; returns what was detected.
fn replay(screens: &[&str], bytewise: bool) -> Vec<Detection> {
    let profile = Profiles::defaults().unwrap().get("claude").unwrap();
    let mut w = PaneWatcher::new(
        "%7".parse().unwrap(),
        profile,
        DetectorConfig::default(),
        COLS,
        ROWS,
    );
    let mut seen = Vec::new();
    for (i, screen) in screens.iter().enumerate() {
        let now = Millis(i as u64 * 1000);
        let bytes = draw(screen);
        if bytewise {
            for b in &bytes {
                w.feed(now, std::slice::from_ref(b), &mut |d| seen.push(d));
            }
        } else {
            w.feed(now, &bytes, &mut |d| seen.push(d));
        }
    }
    w.tick(Millis(screens.len() as u64 * 1000 + 1000), &mut |d| {
        seen.push(d)
    });
    seen
}

/// The detections of `screens`, checked to be the same fed byte by byte.
fn detect(screens: &[&str]) -> Vec<DetectionKind> {
    let whole: Vec<DetectionKind> = replay(screens, false).into_iter().map(|d| d.kind).collect();
    let bytewise: Vec<DetectionKind> = replay(screens, true).into_iter().map(|d| d.kind).collect();
    assert_eq!(whole, bytewise, "byte by byte differs");
    whole
}

fn name(k: &DetectionKind) -> &'static str {
    match k {
        DetectionKind::Busy => "busy",
        DetectionKind::Completed => "completed",
        DetectionKind::Approval { .. } => "approval",
        DetectionKind::ApprovalGone { .. } => "approval_gone",
        DetectionKind::Error { .. } => "error",
        DetectionKind::Interrupted { .. } => "interrupted",
        DetectionKind::Rejected { .. } => "rejected",
        DetectionKind::Progress(_) => "progress",
        DetectionKind::Stalled { .. } => "stalled",
        DetectionKind::Resumed { .. } => "resumed",
    }
}

fn names(seen: &[DetectionKind]) -> Vec<&'static str> {
    seen.iter().map(name).collect()
}

fn approval(seen: &[DetectionKind]) -> (ApprovalKind, &str, &str, Vec<(&str, &str)>) {
    seen.iter()
        .find_map(|k| match k {
            DetectionKind::Approval {
                approval,
                question,
                body,
                options,
            } => Some((
                *approval,
                question.as_str(),
                body.as_str(),
                options
                    .iter()
                    .map(|o| (o.key.as_str(), o.label.as_str()))
                    .collect(),
            )),
            _ => None,
        })
        .expect("an approval")
}

#[test]
fn bash_permission_then_no_is_an_interruption_not_an_error() {
    let seen = detect(&[
        real!("busy-spinner"),
        real!("permission-bash"),
        real!("interrupted-after-no"),
    ]);
    assert_eq!(
        names(&seen),
        [
            "busy",
            "approval",
            "approval_gone",
            "interrupted",
            "completed"
        ]
    );
    let (kind, question, body, options) = approval(&seen);
    assert_eq!(kind, ApprovalKind::Permission);
    assert_eq!(question, "Do you want to proceed?");
    assert!(body.contains("rm -rf build && touch done.txt"), "{body}");
    assert!(body.contains("Remove the build directory"), "{body}");
    assert_eq!(options[2], ("3", "No"));
}

#[test]
fn edit_create_question_and_plan_dialogs() {
    for (screen, want, question, n) in [
        (
            real!("edit"),
            ApprovalKind::Edit,
            "Do you want to make this edit to main.rs?",
            3,
        ),
        (
            real!("create"),
            ApprovalKind::Create,
            "Do you want to create notes.md?",
            3,
        ),
        (
            real!("question"),
            ApprovalKind::Question,
            "Which scope should phase 2 cover?",
            5,
        ),
        (
            real!("plan"),
            ApprovalKind::Plan,
            "Claude has written up a plan and is ready to execute. Would you like to proceed?",
            3,
        ),
        (
            real!("question-two-tabs"),
            ApprovalKind::Question,
            "Which database should we use for the new reporting service?",
            4,
        ),
        (
            real!("question-multi-select"),
            ApprovalKind::Question,
            "Which features do you want?",
            4,
        ),
        (
            real!("exit-plan"),
            ApprovalKind::Plan,
            "Claude wants to exit plan mode",
            2,
        ),
    ] {
        let seen = detect(&[real!("busy-spinner"), screen]);
        assert_eq!(names(&seen), ["busy", "approval"], "{question}");
        let (kind, q, _, options) = approval(&seen);
        assert_eq!((kind, q, options.len()), (want, question, n));
    }
}

/// A question with its selection footer under an input box and footer
/// still drawn above it: the turn waits on the question (an approval), it
/// does not end (it ended as completed, the question never carded).
#[test]
fn a_question_under_a_drawn_input_box_is_asked_not_the_end_of_the_turn() {
    let seen = detect(&[real!("busy-spinner"), real!("question-under-input-box")]);
    assert_eq!(names(&seen), ["busy", "approval"]);
    let (kind, question, _, options) = approval(&seen);
    assert_eq!(kind, ApprovalKind::Question);
    assert_eq!(
        question,
        "Which database should we use for the new reporting service?"
    );
    assert_eq!(options.len(), 4);
}

#[test]
fn api_errors_are_reported_once_at_the_end_of_the_turn() {
    let seen = detect(&[
        real!("busy-spinner"),
        real!("retry-500"),
        real!("error-500"),
    ]);
    assert_eq!(names(&seen), ["busy", "progress", "error", "completed"]);
    assert!(
        matches!(&seen[1], DetectionKind::Progress(p) if p.stage.as_deref() == Some("retrying 1/1")),
        "{seen:?}"
    );
    assert!(
        matches!(&seen[2], DetectionKind::Error { line } if line.starts_with("● API Error: 500")),
        "{seen:?}"
    );
    for (screen, start) in [
        (real!("error-529"), "● API Error: 529 Overloaded"),
        (real!("error-401"), "⎿  Invalid API key"),
    ] {
        let seen = detect(&[real!("busy-spinner"), screen]);
        assert_eq!(names(&seen), ["busy", "error", "completed"]);
        assert!(
            matches!(&seen[1], DetectionKind::Error { line } if line.starts_with(start)),
            "{seen:?}"
        );
    }
}

#[test]
fn an_answer_quoting_errors_and_prompts_is_neither() {
    let seen = detect(&[real!("busy-spinner"), real!("quote-idle")]);
    assert_eq!(names(&seen), ["busy", "completed"]);
}

#[test]
fn an_unknown_command_is_the_agents_refusal() {
    let seen = detect(&[real!("busy-spinner"), real!("unknown-command")]);
    assert_eq!(names(&seen), ["busy", "rejected", "completed"]);
    assert_eq!(
        seen[1],
        DetectionKind::Rejected {
            line: "● Unknown command: /gsd:new-project".into()
        }
    );
}

#[test]
fn a_half_drawn_frame_does_not_end_the_turn() {
    // The busy screen with neither its spinner row nor its footer drawn yet.
    let half: String = real!("busy-spinner")
        .lines()
        .filter(|r| !r.contains("Crunching") && !r.contains("esc to interrupt"))
        .map(|r| format!("{r}\n"))
        .collect();
    let seen = detect(&[real!("busy-spinner"), &half]);
    assert_eq!(names(&seen), ["busy"]);
    // Plan mode's footer with `esc to interrupt` is busy too.
    let seen = detect(&[real!("plan-mode-busy")]);
    assert_eq!(names(&seen), ["busy"]);
}

#[test]
fn a_dialog_waits_a_little_for_its_diff() {
    // Claude Code draws the edit dialog with `…` where the diff goes, then
    // the diff: the approval carries the diff.
    let edit = real!("edit");
    let loading: String = {
        let rows: Vec<&str> = edit.lines().collect();
        let first = rows
            .iter()
            .position(|r| r.starts_with(" 1  fn main"))
            .unwrap();
        let last = rows.iter().position(|r| r.starts_with(" 3  }")).unwrap();
        let mut out: Vec<&str> = rows[..first].to_vec();
        out.push("…");
        out.extend_from_slice(&rows[last + 1..]);
        out.join("\n")
    };
    let profile = Profiles::defaults().unwrap().get("claude").unwrap();
    for bytewise in [false, true] {
        let mut w = PaneWatcher::new(
            "%7".parse().unwrap(),
            profile.clone(),
            DetectorConfig::default(),
            COLS,
            ROWS,
        );
        let mut seen = Vec::new();
        let feed = |w: &mut PaneWatcher, t: u64, screen: &str, seen: &mut Vec<Detection>| {
            let bytes = draw(screen);
            if bytewise {
                for b in &bytes {
                    w.feed(Millis(t), std::slice::from_ref(b), &mut |d| seen.push(d));
                }
            } else {
                w.feed(Millis(t), &bytes, &mut |d| seen.push(d));
            }
        };
        feed(&mut w, 0, real!("busy-spinner"), &mut seen);
        feed(&mut w, 1000, &loading, &mut seen);
        // Still for longer than the prompt's quiet time: not reported yet.
        w.tick(Millis(1100), &mut |d| seen.push(d));
        feed(&mut w, 1150, edit, &mut seen);
        w.tick(Millis(5000), &mut |d| seen.push(d));
        let kinds: Vec<&str> = seen.iter().map(|d| name(&d.kind)).collect();
        assert_eq!(kinds, ["busy", "approval"]);
        let DetectionKind::Approval { body, .. } = &seen[1].kind else {
            unreachable!()
        };
        assert!(
            body.contains("2 +    println!(\"hello, world\");"),
            "{body}"
        );
        // A diff that never comes holds the card back only so long.
        let mut w = PaneWatcher::new(
            "%7".parse().unwrap(),
            profile.clone(),
            DetectorConfig::default(),
            COLS,
            ROWS,
        );
        let mut seen = Vec::new();
        feed(&mut w, 0, real!("busy-spinner"), &mut seen);
        feed(&mut w, 1000, &loading, &mut seen);
        w.tick(Millis(5000), &mut |d| seen.push(d));
        let approval = seen.iter().find(|d| name(&d.kind) == "approval").unwrap();
        assert!(approval.at_ms.0 >= 1000 + MAX_LOADING_WAIT.as_millis() as u64);
        assert!(approval.at_ms.0 <= 1000 + 2 * MAX_LOADING_WAIT.as_millis() as u64);
        // When it comes after all, the dialog is reported again, whole.
        feed(&mut w, 6000, edit, &mut seen);
        w.tick(Millis(9000), &mut |d| seen.push(d));
        let bodies: Vec<&str> = (seen.iter())
            .filter_map(|d| match &d.kind {
                DetectionKind::Approval { body, .. } => Some(body.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(bodies.len(), 2, "{bodies:?}");
        assert!(!bodies[0].contains("println!") && bodies[1].contains("println!"));
        assert!(!seen.iter().any(|d| name(&d.kind) == "approval_gone"));
    }
}

#[test]
fn shuffled_real_rows_never_panic_and_dialogs_stay_well_formed() {
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    let all: Vec<&str> = [
        real!("permission-bash"),
        real!("question"),
        real!("question-multi-select"),
        real!("plan"),
        real!("edit"),
        real!("quote-idle"),
        real!("busy-spinner"),
        real!("error-401"),
        real!("permission-wrapped-60-cols"),
    ]
    .iter()
    .flat_map(|s| s.lines())
    .collect();
    let decorations = [
        "",
        "│ ",
        "╭",
        "  ",
        "❯ ",
        "\u{a0}",
        " │",
        "╰──╯",
        "1. ",
        "é",
    ];
    let profile = Profiles::defaults().unwrap().get("claude").unwrap();
    let mut rng = StdRng::seed_from_u64(13);
    for round in 0..300 {
        let n = rng.random_range(1..60);
        let screen: String = (0..n)
            .map(|_| {
                let row = all[rng.random_range(0..all.len())];
                let d = decorations[rng.random_range(0..decorations.len())];
                let cut = rng.random_range(0..=row.chars().count());
                let row: String = row.chars().take(cut.max(row.chars().count() / 2)).collect();
                format!("{d}{row}\n")
            })
            .collect();
        let mut w = PaneWatcher::new(
            "%1".parse().unwrap(),
            profile.clone(),
            DetectorConfig::default(),
            COLS,
            ROWS,
        );
        let mut seen = Vec::new();
        w.feed(Millis(0), &draw(&screen), &mut |d| seen.push(d));
        w.tick(Millis(10_000), &mut |d| seen.push(d));
        for d in &seen {
            if let DetectionKind::Approval {
                question,
                body,
                options,
                ..
            } = &d.kind
            {
                assert!(!question.is_empty(), "round {round}: {screen}");
                assert!(options.len() >= 2, "round {round}: {screen}");
                assert!(body.len() <= clawmux::detect::MAX_BODY_BYTES);
                for (i, o) in options.iter().enumerate() {
                    assert_eq!(o.key, (i + 1).to_string(), "round {round}: {screen}");
                }
            }
        }
    }
}
