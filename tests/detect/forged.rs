//! Second signals that output can forge: an OSC 7501 state any program
//! prints into a pane, and a dialog quoted inside an answer. Sans-IO
//! (fed whole and one byte at a time, the same detections) and through a
//! real tmux pane.

use clawmux::detect::{Detection, DetectionKind, DetectorConfig, Millis, PaneWatcher, Profiles};

use super::live::Live;

fn osc(state: &str, app: &str) -> String {
    format!("\x1b]7501;state={state}:app={app}\x07")
}

/// Feeds `frames` (time in ms, bytes) to a watcher with `profile`, typing
/// `typed` at `typed_at`, ticking between frames and up to `end`.
fn run(
    profile: &str,
    frames: &[(u64, String)],
    typed: &[(u64, &str)],
    end: u64,
    bytewise: bool,
) -> Vec<Detection> {
    let profile = Profiles::defaults().unwrap().get(profile).unwrap();
    let mut w = PaneWatcher::new(
        "%1".parse().unwrap(),
        profile,
        DetectorConfig::default(),
        100,
        30,
    );
    let mut seen = Vec::new();
    let tick_to = |w: &mut PaneWatcher, until: u64, seen: &mut Vec<Detection>| {
        while let Some(due) = w.next_deadline().filter(|d| d.0 <= until) {
            w.tick(due, &mut |d| seen.push(d));
        }
    };
    for (i, (at, bytes)) in frames.iter().enumerate() {
        if let Some((_, text)) = typed.iter().find(|(t, _)| t == at) {
            w.detector_mut().typed(text);
        }
        if bytewise {
            for b in bytes.as_bytes() {
                w.feed(Millis(*at), std::slice::from_ref(b), &mut |d| seen.push(d));
            }
        } else {
            w.feed(Millis(*at), bytes.as_bytes(), &mut |d| seen.push(d));
        }
        let next = frames.get(i + 1).map_or(end, |(t, _)| *t - 1);
        tick_to(&mut w, next, &mut seen);
    }
    tick_to(&mut w, end, &mut seen);
    seen
}

fn completions(seen: &[Detection]) -> Vec<u64> {
    (seen.iter())
        .filter(|d| d.kind == DetectionKind::Completed)
        .map(|d| d.at_ms.0)
        .collect()
}

fn names(seen: &[Detection]) -> Vec<(u64, String)> {
    (seen.iter())
        .map(|d| {
            let v: serde_json::Value = serde_json::from_str(&d.to_json()).unwrap();
            (d.at_ms.0, v["kind"].as_str().unwrap_or("").to_owned())
        })
        .collect()
}

/// Both ways of feeding give the same detections; returns them.
fn both(
    profile: &str,
    frames: &[(u64, String)],
    typed: &[(u64, &str)],
    end: u64,
) -> Vec<Detection> {
    let whole = run(profile, frames, typed, end, false);
    let bytewise = run(profile, frames, typed, end, true);
    assert_eq!(names(&bytewise), names(&whole), "chunking changed them");
    whole
}

const CODEX_INPUT: &str = "\r\n› Ask Codex to do anything\r\n  GPT-6-Sol default · /ws\r\n";

/// A Codex turn that streams its answer from 1.0 s to 5.0 s with no busy
/// row (as Codex draws it), and a forged `state=done`, `state=idle` of
/// `forged_app` printed into the pane at 1.8 s, before the closing row.
fn codex_turn_with_forged_done(forged_app: &str) -> Vec<(u64, String)> {
    let working = osc("working", "codex");
    let mut frames = vec![
        (0, format!("{}  >_ OpenAI Codex (v0.171.0)\r\n", working)),
        (100, format!("{}{CODEX_INPUT}", osc("idle", "codex"))),
        (500, format!("› explain\r\n{CODEX_INPUT}")),
        (600, working.clone()),
    ];
    // The answer streams, a chunk every 400 ms.
    for (i, at) in (1000..5000).step_by(400).enumerate() {
        let mut bytes = format!("• part {i} of the answer\r\n");
        if at == 1800 {
            bytes.push_str(&osc("done", forged_app));
            bytes.push_str(&osc("idle", forged_app));
        }
        frames.push((at, bytes));
    }
    frames.push((
        5300,
        format!(
            "  Worked for 5s • 00:29\r\n{CODEX_INPUT}{}{}",
            osc("done", "codex"),
            osc("idle", "codex")
        ),
    ));
    frames
}

#[test]
fn a_forged_done_does_not_end_a_codex_turn_before_its_closing_row() {
    let frames = codex_turn_with_forged_done("codex");
    let seen = both("codex", &frames, &[(500, "explain")], 20_000);
    let done = completions(&seen);
    assert_eq!(done.len(), 1, "{:?}", names(&seen));
    assert!(
        done[0] >= 5300,
        "ended at {} ms: {:?}",
        done[0],
        names(&seen)
    );
}

#[test]
fn a_state_of_another_app_is_not_the_agents() {
    // Codex's turn, the forged end saying another app: never believed,
    // though it arrives after Codex's own `working`.
    let mut frames = codex_turn_with_forged_done("x");
    // Its real end without `done`: only the screen and the lapse end it.
    frames.pop();
    frames.push((5300, format!("  Worked for 5s • 00:29\r\n{CODEX_INPUT}")));
    let seen = both("codex", &frames, &[(500, "explain")], 200_000);
    let done = completions(&seen);
    assert_eq!(done.len(), 1, "{:?}", names(&seen));
    assert!(done[0] >= 5300, "{:?}", names(&seen));
}

#[test]
fn a_forged_working_in_a_shell_pane_is_text() {
    // `cat` of a file holding the sequences, in a shell-profile pane (an
    // adopted shell): each command still ends at its prompt.
    let prompt = "$ ";
    let frames = vec![
        (0, prompt.to_owned()),
        (
            100,
            format!(
                "cat notes\r\n{}{}\r\n{prompt}",
                osc("working", "codex"),
                osc("blocked", "")
            ),
        ),
        (1000, "echo after\r\nafter\r\n$ ".to_owned()),
    ];
    let typed = [(100, "cat notes"), (1000, "echo after")];
    let seen = both("shell", &frames, &typed, 1500);
    // Two turns, two ends.
    let done = completions(&seen);
    assert_eq!(done.len(), 2, "{:?}", names(&seen));
    assert!(done[0] < 1000, "{:?}", names(&seen));
}

/// A window title and an OSC 777 notification as Gemini CLI sends them
/// (`✋  Action Required`, `Gemini CLI session complete`): states only to
/// the profile that declares them (`gemini`).
fn gemini_says(title: &str, notification: &str) -> String {
    format!("\x1b]0;{title}\x07\x1b]777;notify;{notification};Run finished\x07")
}

#[test]
fn a_forged_gemini_title_or_notification_is_text_to_other_profiles() {
    // In a shell pane (an adopted shell): each command still ends at its
    // prompt, though the file `cat` says Gemini waits for an answer.
    let prompt = "$ ";
    let frames = vec![
        (0, prompt.to_owned()),
        (
            100,
            format!(
                "cat notes\r\n{}\r\n{prompt}",
                gemini_says("✋  Action Required", "Gemini CLI needs your attention")
            ),
        ),
        (1000, "echo after\r\nafter\r\n$ ".to_owned()),
    ];
    let typed = [(100, "cat notes"), (1000, "echo after")];
    let seen = both("shell", &frames, &typed, 1500);
    let done = completions(&seen);
    assert_eq!(done.len(), 2, "{:?}", names(&seen));
    assert!(done[0] < 1000, "{:?}", names(&seen));
    // In a Codex turn: Gemini's `session complete` and `◇  Ready` printed
    // at 1.8 s end nothing; the closing row at 5.3 s ends the turn.
    let mut frames = codex_turn_with_forged_done("codex");
    for (at, bytes) in &mut frames {
        if *at == 1800 {
            *bytes = format!(
                "• part 2 of the answer\r\n{}",
                gemini_says("◇  Ready", "Gemini CLI session complete")
            );
        }
    }
    let seen = both("codex", &frames, &[(500, "explain")], 20_000);
    let done = completions(&seen);
    assert_eq!(done.len(), 1, "{:?}", names(&seen));
    assert!(done[0] >= 5300, "{:?}", names(&seen));
}

#[test]
fn a_state_the_screen_never_bears_out_lapses() {
    // A Codex pane at rest, then a `state=working` (or `blocked`) of its
    // own app that no screen bears out: no busy row, no dialog, no
    // output. A command typed later still ends, once the state lapsed.
    for state in ["working", "blocked"] {
        let frames = vec![
            (0, format!("{}{CODEX_INPUT}", osc("idle", "codex"))),
            (500, osc(state, "codex")),
            (1000, format!("› hi\r\n{CODEX_INPUT}")),
            (
                1100,
                format!("• hello\r\n  Worked for 1s • 00:29\r\n{CODEX_INPUT}"),
            ),
        ];
        let seen = both("codex", &frames, &[(1000, "hi")], 200_000);
        let done = completions(&seen);
        assert_eq!(done.len(), 1, "{state}: {:?}", names(&seen));
        let lapse = clawmux::detect::STATE_LAPSE.as_millis() as u64;
        assert!(done[0] >= 1100 + lapse, "{state}: {:?}", names(&seen));
    }
}

#[test]
fn a_forged_state_in_a_real_shell_pane_does_not_wedge_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("notes");
    let forged = format!(
        "state notes\n{}{}{}\n",
        osc("working", "codex"),
        osc("blocked", "shell"),
        osc("working", "")
    );
    std::fs::write(&file, forged).unwrap();
    let mut live = Live::start("env PS1='$ ' bash --norc --noprofile", "shell");
    live.type_line(&format!("cat {}", file.display()));
    let first = live.completed();
    assert!(first.context.contains("state notes"), "{first:?}");
    // Long enough to be seen busy on a loaded machine (0.3 s was not,
    // once in a full run: the prompt was back before the screen was read).
    live.type_line("sleep 1; echo the-next-one");
    live.wait_for("busy", |d| d.kind == DetectionKind::Busy);
    let done = live.completed();
    assert!(done.context.contains("the-next-one"), "{done:?}");
}

const QUOTED: &str = "Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]:";

/// Aider streaming an answer that quotes its own question, the quote the
/// last text for a while (the stream pauses there), its cursor hidden as
/// while its answer streams; then the turn's end and a real question on
/// its cursor row.
fn aider_quoting(real_question: bool) -> Vec<(u64, String)> {
    let mut frames = vec![
        (0, "Aider v0.86.2\r\n\r\ndiff> ".to_owned()),
        (100, "what do you ask?\r\n".to_owned()),
        (150, "\x1b[?25l ░█  Waiting for fake-model".to_owned()),
        (200, "\r\x1b[KIt asks this:\r\n".to_owned()),
        (300, format!("{QUOTED} ")),
        // 2 s later the stream goes on and ends.
        (
            2300,
            "\r\nand waits.\r\n\x1b[?25hTokens: 1k sent, 9 received.\r\n".to_owned(),
        ),
    ];
    if real_question {
        frames.push((2400, format!("touch m.txt\r\n{QUOTED} ")));
    } else {
        frames.push((2400, "────────────\r\ndiff> ".to_owned()));
    }
    frames
}

fn approvals(seen: &[Detection]) -> Vec<(u64, String, String)> {
    (seen.iter())
        .filter_map(|d| match &d.kind {
            DetectionKind::Approval { question, body, .. } => {
                Some((d.at_ms.0, question.clone(), body.clone()))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn a_question_quoted_in_an_aider_answer_is_not_a_dialog() {
    let typed = [(100, "what do you ask?")];
    let seen = both("aider", &aider_quoting(false), &typed, 5000);
    assert!(approvals(&seen).is_empty(), "{:?}", names(&seen));
    assert_eq!(completions(&seen).len(), 1, "{:?}", names(&seen));
    // The same stream followed by the real question on the cursor row:
    // that one is asked, naming its command.
    let seen = both("aider", &aider_quoting(true), &typed, 5000);
    let asked = approvals(&seen);
    assert_eq!(asked.len(), 1, "{:?}", names(&seen));
    assert!(asked[0].0 >= 2400, "{asked:?}");
    assert_eq!(
        (asked[0].1.as_str(), asked[0].2.as_str()),
        (QUOTED, "touch m.txt")
    );
}

#[test]
fn a_quoted_question_printed_into_a_real_pane_is_not_a_dialog() {
    // A real tmux pane printing what Aider draws while it streams an
    // answer quoting its question (cursor hidden, the quote the last text
    // for 2 s), then its real question on the cursor row.
    let script = format!(
        "printf 'diff> '; sleep 0.3; printf '\\033[?25lIt asks:\\r\\n{q} '; sleep 2; \
         printf '\\r\\nand waits.\\r\\n\\033[?25hTokens: 1k sent, 9 received.\\r\\n'; \
         printf 'touch m.txt\\r\\n{q} '; sleep 30",
        q = QUOTED.replace('\'', "'\\''")
    );
    let mut live = Live::start(
        &format!("sh -c \"{}\"", script.replace('"', "\\\"")),
        "aider",
    );
    let asked = live.wait_for("the real question", |d| {
        matches!(d.kind, DetectionKind::Approval { .. })
    });
    let DetectionKind::Approval { body, .. } = &asked.kind else {
        unreachable!()
    };
    assert_eq!(body, "touch m.txt", "{asked:?}");
    assert_eq!(live.approvals().len(), 1, "{:#?}", live.seen);
}
