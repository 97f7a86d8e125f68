//! Detection tests: real tmux panes running `clawmux sim-agent` (or a
//! shell), watched through `tmux -C`; plus sans-IO tests of chunking
//! invariance and the clock-controlled debounce, and the `detect` CLI.

mod aider_recorded;
mod answered_replay;
mod claude_2_1_337;
mod claude_recorded;
mod cli;
mod codex_states;
mod forged;
mod gemini_recorded;
mod gsd_recorded;
mod live;
mod real;
mod recorded;
mod sansio;

use clawmux::control::recording::RecordingReader;
use clawmux::detect::{ApprovalKind, Detection, DetectionKind};

use live::Live;

fn is_approval(d: &Detection, want: ApprovalKind) -> bool {
    matches!(&d.kind, DetectionKind::Approval { approval, .. } if *approval == want)
}

fn is_gone(d: &Detection, want: ApprovalKind) -> bool {
    matches!(&d.kind, DetectionKind::ApprovalGone { approval, .. } if *approval == want)
}

fn keys_and_labels(d: &Detection) -> Vec<(String, String)> {
    match &d.kind {
        DetectionKind::Approval { options, .. } => options
            .iter()
            .map(|o| (o.key.clone(), o.label.clone()))
            .collect(),
        other => panic!("not an approval: {other:?}"),
    }
}

#[test]
fn reply_is_busy_then_completed_with_the_literal_text() {
    let mut live = Live::sim("", "claude");
    let text = r#"hello $(echo no) 'quoted' "double" ; C-c"#;
    live.type_line(text);
    let busy = live.wait_for("busy", |d| d.kind == DetectionKind::Busy);
    // The spinner row, as Claude Code 2.1.197 draws it.
    assert!(busy.context.contains("Thinking… ("), "{busy:?}");
    assert!(busy.context.contains("tokens)"), "{busy:?}");
    let done = live.completed();
    assert!(
        done.context.contains(&format!("● You said: {text}")),
        "{done:?}"
    );
    assert!(done.at_ms > busy.at_ms);
    assert!(
        live.approvals().is_empty() && live.errors().is_empty(),
        "{:#?}",
        live.seen
    );
}

#[test]
fn permission_prompt_is_one_approval_then_gone_when_answered() {
    let mut live = Live::sim("", "gsd");
    live.type_line("/gsd:plan-phase 2");
    let approval = live.wait_for("permission", |d| is_approval(d, ApprovalKind::Permission));
    let DetectionKind::Approval { question, .. } = &approval.kind else {
        unreachable!()
    };
    assert_eq!(question, "Do you want to proceed?");
    let options = keys_and_labels(&approval);
    assert_eq!(options.len(), 3);
    assert_eq!(options[0], ("1".into(), "Yes".into()));
    assert!(
        options[1]
            .1
            .starts_with("Yes, and don't ask again for make commands")
    );
    assert_eq!(options[2].0, "3");
    // The agent waits: no completion while the prompt is up.
    assert!(!live.seen.iter().any(|d| d.kind == DetectionKind::Completed));
    live.key("1");
    live.wait_for("approval gone", |d| is_gone(d, ApprovalKind::Permission));
    let done = live.completed();
    assert!(done.context.contains("Churned"), "{done:?}");
    assert!(
        live.seen
            .iter()
            .any(|d| d.context.contains("Ran make build-check-phase-2: ok")),
        "{:#?}",
        live.seen
    );
    assert_eq!(live.approvals().len(), 1, "{:#?}", live.seen);
}

#[test]
fn permission_answered_no_is_the_users_answer_not_an_error() {
    let mut live = Live::sim("", "gsd");
    live.type_line("/gsd:plan-phase 2");
    let approval = live.wait_for("permission", |d| is_approval(d, ApprovalKind::Permission));
    let DetectionKind::Approval { body, .. } = &approval.kind else {
        unreachable!()
    };
    assert_eq!(
        body,
        "Bash command\n\n  make build-check-phase-2\n  Run the project's check"
    );
    live.key("3");
    live.completed();
    let interrupted: Vec<&Detection> = live
        .seen
        .iter()
        .filter(|d| matches!(d.kind, DetectionKind::Interrupted { .. }))
        .collect();
    assert_eq!(interrupted.len(), 1, "{:#?}", live.seen);
    assert!(live.errors().is_empty(), "{:#?}", live.seen);
}

#[test]
fn plan_dialog_is_a_plan_approval_with_the_plan() {
    let mut live = Live::sim("", "claude");
    live.type_line("please make a plan");
    let plan = live.wait_for("plan", |d| is_approval(d, ApprovalKind::Plan));
    let DetectionKind::Approval { question, body, .. } = &plan.kind else {
        unreachable!()
    };
    assert_eq!(
        question,
        "Claude has written up a plan and is ready to execute. Would you like to proceed?"
    );
    assert!(body.contains("1. Write the parser\n2. Add tests"), "{body}");
    assert_eq!(keys_and_labels(&plan)[1].1, "Yes, manually approve edits");
    assert!(!live.seen.iter().any(|d| d.kind == DetectionKind::Completed));
    live.key("2");
    live.wait_for("plan gone", |d| is_gone(d, ApprovalKind::Plan));
    let done = live.completed();
    assert!(done.context.contains("Parser written."), "{done:?}");
    assert_eq!(live.approvals().len(), 1, "{:#?}", live.seen);
}

#[test]
fn ask_user_question_is_a_question_approval() {
    let mut live = Live::sim("", "claude");
    live.type_line("/gsd:discuss-phase 4");
    let q = live.wait_for("question", |d| is_approval(d, ApprovalKind::Question));
    let DetectionKind::Approval { question, .. } = &q.kind else {
        unreachable!()
    };
    assert_eq!(question, "Which scope should phase 4 cover?");
    let labels: Vec<String> = keys_and_labels(&q).into_iter().map(|(_, l)| l).collect();
    assert_eq!(
        labels,
        ["Minimal", "Full", "Type something.", "Chat about this"]
    );
    let DetectionKind::Approval { options, .. } = &q.kind else {
        unreachable!()
    };
    assert_eq!(
        options[0].description.as_deref(),
        Some("the core flow only")
    );
    assert_eq!(options[3].description, None);
    live.key("2");
    live.wait_for("question gone", |d| is_gone(d, ApprovalKind::Question));
    live.completed();
    assert_eq!(live.approvals().len(), 1, "{:#?}", live.seen);
}

#[test]
fn execute_phase_reports_progress_and_one_checkpoint() {
    let mut live = Live::sim("", "gsd");
    live.type_line("/gsd:execute-phase 3");
    let checkpoint = live.wait_for("checkpoint", |d| is_approval(d, ApprovalKind::Checkpoint));
    assert_eq!(
        keys_and_labels(&checkpoint),
        [("approved".to_string(), "approved".to_string())]
    );
    assert!(checkpoint.context.contains("YOUR ACTION"), "{checkpoint:?}");
    live.type_line("approved");
    live.wait_for("checkpoint gone", |d| is_gone(d, ApprovalKind::Checkpoint));
    live.wait_for("phase complete banner", |d| {
        matches!(&d.kind, DetectionKind::Progress(p) if p.stage.as_deref() == Some("PHASE 3 COMPLETE ✓"))
    });
    live.completed();
    let percents: Vec<u8> = live
        .seen
        .iter()
        .filter_map(|d| match &d.kind {
            DetectionKind::Progress(p) => p.percent,
            _ => None,
        })
        .collect();
    assert_eq!(percents, [20, 40, 60, 80, 100]);
    let stages: Vec<&str> = live
        .seen
        .iter()
        .filter_map(|d| match &d.kind {
            DetectionKind::Progress(p) => p.stage.as_deref(),
            _ => None,
        })
        .collect();
    assert_eq!(
        stages,
        ["EXECUTING WAVE 1", "EXECUTING WAVE 2", "PHASE 3 COMPLETE ✓"]
    );
    // The old checkpoint text is still on screen after the turn: it must
    // not come back as a new approval.
    assert!(
        live.tmux
            .capture("a")
            .contains("CHECKPOINT: Verification Required")
    );
    assert_eq!(live.approvals().len(), 1, "{:#?}", live.seen);
}

#[test]
fn api_error_is_an_error_then_completed() {
    let mut live = Live::sim("", "claude");
    live.type_line("please fail now");
    // The agent's error row is judged on the settled screen at the end of
    // the turn: reported just before the completion.
    live.completed();
    let errors = live.errors();
    assert_eq!(errors.len(), 1, "{:#?}", live.seen);
    let DetectionKind::Error { line } = &errors[0].kind else {
        unreachable!()
    };
    assert!(line.starts_with("● API Error: 500"), "{line}");
    let kinds: Vec<&DetectionKind> = live.seen.iter().map(|d| &d.kind).collect();
    let at = kinds
        .iter()
        .position(|k| matches!(k, DetectionKind::Error { .. }))
        .unwrap();
    assert_eq!(kinds[at + 1], &DetectionKind::Completed);
}

#[test]
fn retries_are_a_status_not_an_error() {
    let mut live = Live::sim("", "claude");
    live.type_line("a flaky request");
    let done = live.completed();
    assert!(done.context.contains("third attempt"), "{done:?}");
    let stages: Vec<&str> = live
        .seen
        .iter()
        .filter_map(|d| match &d.kind {
            DetectionKind::Progress(p) => p.stage.as_deref(),
            _ => None,
        })
        .collect();
    assert_eq!(stages, ["retrying 1/2", "retrying 2/2"], "{:#?}", live.seen);
    assert!(live.errors().is_empty(), "{:#?}", live.seen);
}

#[test]
fn lookalikes_are_neither_approvals_nor_errors() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/detect/example.sim");
    let mut live = Live::sim(&format!("--script {script}"), "gsd");
    live.type_line("lookalikes");
    let done = live.completed();
    assert!(done.context.contains("all clear"), "{done:?}");
    assert!(live.approvals().is_empty(), "{:#?}", live.seen);
    assert!(live.errors().is_empty(), "{:#?}", live.seen);
}

#[test]
fn flood_completes_without_false_detections() {
    let mut live = Live::sim("", "gsd");
    live.type_line("/gsd:flood");
    let done = live.completed();
    assert!(done.context.contains("Churned"), "{done:?}");
    assert!(live.approvals().is_empty() && live.errors().is_empty());
}

#[test]
fn shell_profile_completes_on_the_prompt() {
    let mut live = Live::start("env PS1='$ ' bash --norc --noprofile", "shell");
    live.type_line("sleep 0.3; echo the-output");
    live.wait_for("busy", |d| d.kind == DetectionKind::Busy);
    let done = live.completed();
    assert!(done.context.contains("the-output"), "{done:?}");
}

/// A timed recording's lines: (time in ms, control-mode line with its
/// `\n`), read by the recording reader the `detect` command uses.
fn timed_lines(recording: &[u8]) -> Vec<(u64, Vec<u8>)> {
    let mut reader = RecordingReader::new(recording).expect("a recording");
    let mut out: Vec<(u64, Vec<u8>)> = Vec::new();
    let mut at = 0;
    while let Some(chunk) = reader.next_chunk().expect("a well-formed recording") {
        match chunk.at_ms {
            Some(ms) => {
                at = ms;
                out.push((at, chunk.bytes.to_vec()));
            }
            // The rest of an over-long line.
            None => match out.last_mut() {
                Some((_, line)) => line.extend_from_slice(chunk.bytes),
                None => out.push((at, chunk.bytes.to_vec())),
            },
        }
    }
    out
}
