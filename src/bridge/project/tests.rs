//! The job runner without tmux: queueing, what detections and hooks mean for
//! the running command, and what is reported, on an injected clock.

use std::time::{Duration, Instant};

use super::runner::{Admit, AgentFailure, Finished, JobRunner, MAX_QUEUED, Step, TaskNews};
use super::{ProjectEventKind, TurnEnding};
use crate::control::PaneId;
use crate::detect::{ApprovalKind, ApprovalOption, Detection, DetectionKind, Millis};
use crate::hooks::{Question, QuestionOption, ToolRequest};
use crate::store::state::{ChatTarget, Job, Stage};

const T0_MS: u64 = 1_700_000_000_000;

fn job(id: &str) -> Job {
    Job {
        id: id.parse().unwrap(),
        text: format!("/gsd:{id}"),
        ..Job::new(
            &crate::store::ids::project("demo"),
            "",
            ChatTarget::Console,
            None,
            600,
            T0_MS,
        )
    }
}

fn detection(kind: DetectionKind) -> Detection {
    Detection {
        pane: PaneId(1),
        at_ms: Millis(0),
        kind,
        context: "context".into(),
    }
}

fn see(runner: &mut JobRunner, kind: DetectionKind) -> Vec<Step> {
    runner.on_detection(detection(kind), &crate::store::ids::session("cm-demo"))
}

fn dialog(kind: ApprovalKind, question: &str, body: &str, labels: &[&str]) -> DetectionKind {
    DetectionKind::Approval {
        approval: kind,
        question: question.into(),
        body: body.into(),
        options: ApprovalOption::numbered(labels),
    }
}

/// A permission dialog for a Bash command, with `body`.
fn bash_dialog(body: &str) -> DetectionKind {
    dialog(
        ApprovalKind::Permission,
        "Do you want to proceed?",
        body,
        &["Yes", "No"],
    )
}

fn bash(command: &str) -> ToolRequest {
    ToolRequest::Bash {
        command: command.into(),
        description: None,
    }
}

/// A runner running `job("a")` in Claude Code (the answer's blocks, as
/// its profile draws them).
fn running() -> JobRunner {
    let mut runner = JobRunner::default();
    runner.reads_as(
        crate::detect::Profiles::defaults()
            .unwrap()
            .get("claude")
            .unwrap(),
    );
    runner.begin(job("a"), false, Instant::now(), T0_MS);
    runner
}

fn kinds(steps: &[Step]) -> Vec<&ProjectEventKind> {
    (steps.iter())
        .filter_map(|s| match s {
            Step::Emit(_, kind) => Some(kind),
            Step::Complete | Step::Finished(_) => None,
        })
        .collect()
}

fn report(runner: &mut JobRunner) -> ProjectEventKind {
    match runner.finish(None) {
        Some(Finished::Report(_, kind)) => kind,
        Some(Finished::Recovery(_)) => panic!("a recovery turn ended"),
        None => panic!("nothing was running"),
    }
}

/// A profile like the shell's but for `field` (how it draws and records
/// its answer).
fn profile_with(field: &str) -> std::sync::Arc<crate::detect::Profile> {
    let toml = format!("[profiles.test]\nextends = \"shell\"\n{field}\n");
    let profiles = crate::detect::Profiles::from_toml_layers(Some(("test.toml", &toml)));
    profiles.unwrap().get("test").unwrap()
}

fn lines(rows: &[&str]) -> Vec<String> {
    rows.iter().map(|r| r.to_string()).collect()
}

#[test]
fn commands_wait_in_line_behind_the_running_one_up_to_the_bound() {
    let mut runner = JobRunner::default();
    let Admit::Start(first) = runner.submit(job("a")) else {
        panic!("an idle runner starts the first command");
    };
    runner.begin(first, false, Instant::now(), T0_MS);
    for n in 1..=MAX_QUEUED {
        match runner.submit(job(&format!("q{n}"))) {
            Admit::Queued { position, .. } => assert_eq!(position, n),
            _ => panic!("command {n} should wait"),
        }
    }
    assert!(matches!(runner.submit(job("over")), Admit::Full(_)));
    assert!(runner.next_waiting().is_none(), "not while one runs");
    assert_eq!(runner.status(true).queued, MAX_QUEUED);
}

#[test]
fn a_deadline_recorded_before_a_restart_still_holds() {
    let now = Instant::now();
    let mut fresh = JobRunner::default();
    let recorded = fresh.begin(job("a"), false, now, T0_MS);
    assert_eq!(
        recorded,
        Some(T0_MS + 600_000),
        "a new deadline is recorded"
    );
    assert_eq!(
        fresh.running().map(|r| r.deadline),
        Some(now + Duration::from_secs(600))
    );

    let mut resumed = JobRunner::default();
    let old = Job {
        stage: Stage::Started {
            deadline_ms: Some(T0_MS + 100_000),
        },
        ..job("a")
    };
    assert_eq!(
        resumed.begin(old, false, now, T0_MS),
        None,
        "kept, not renewed"
    );
    let r = resumed.running().map(|r| r.deadline);
    assert_eq!(r, Some(now + Duration::from_secs(100)));
}

#[test]
fn errors_are_reported_once_each_and_at_most_three_per_command() {
    let mut runner = running();
    let error = |line: &str| DetectionKind::Error { line: line.into() };
    let mut reported = 0;
    for line in ["e1", "e1", "e2", "e3", "e4"] {
        reported += kinds(&see(&mut runner, error(line))).len();
    }
    assert_eq!(reported, 3);
    let ProjectEventKind::Completed { errors, .. } = report(&mut runner) else {
        panic!("a command ends completed");
    };
    assert_eq!(errors, 3);
}

#[test]
fn a_turn_waiting_at_a_prompt_is_not_complete_and_a_prompt_is_reported_once() {
    let mut runner = running();
    let prompt = || bash_dialog("ls");
    let first = see(&mut runner, prompt());
    assert!(matches!(kinds(&first)[..], [ProjectEventKind::Approval(_)]));
    assert!(
        see(&mut runner, prompt()).is_empty(),
        "the same prompt seen again"
    );
    assert!(
        see(&mut runner, DetectionKind::Completed).is_empty(),
        "a prompt waits"
    );
    assert!(!runner.hook_stop(None), "nor does a Stop hook end it");
    runner.prompt_closed();
    assert_eq!(
        see(&mut runner, DetectionKind::Completed),
        vec![Step::Complete]
    );
}

#[test]
fn the_users_no_ends_the_turn_as_interrupted_not_as_an_error() {
    let mut runner = running();
    let line = "⎿  Interrupted · What should Claude do instead?".to_string();
    assert!(
        see(
            &mut runner,
            DetectionKind::Interrupted { line: line.clone() }
        )
        .is_empty()
    );
    assert_eq!(
        see(&mut runner, DetectionKind::Completed),
        vec![Step::Complete]
    );
    let ProjectEventKind::Completed { ending, errors, .. } = report(&mut runner) else {
        panic!("a command ends completed");
    };
    assert_eq!((ending, errors), (TurnEnding::Interrupted(line), 0));
}

#[test]
fn the_stop_hooks_answer_stands_in_when_the_screen_lost_lines() {
    let mut runner = running();
    runner.lines(&lines(&["● The first half of the answer"]));
    runner.gap();
    assert!(runner.hook_stop(Some("The whole answer, from the hook.".into())));
    // The pane's screen goes along as it is (a closed panel on the card).
    let rows = lines(&["● …the second half.", "", "❯ ", ""]);
    let Some(Finished::Report(_, ProjectEventKind::Completed { output, screen, .. })) =
        runner.finish(Some(&rows))
    else {
        panic!("a command ends completed");
    };
    assert_eq!(output, "The whole answer, from the hook.");
    assert_eq!(screen, "● …the second half.\n\n❯");

    // The hook overtook the last frame: the answer ends with its text.
    let mut runner = running();
    runner.lines(&lines(&["● Bash(touch marker)", "  ⎿  Done"]));
    assert!(runner.hook_stop(Some("Created the **marker** file.\nNothing else.".into())));
    let ProjectEventKind::Completed { output, .. } = report(&mut runner) else {
        panic!("a command ends completed");
    };
    assert_eq!(
        output,
        "● Bash(touch marker)\n  ⎿  Done\n● Created the **marker** file.\n  Nothing else."
    );

    // Its block's bullet was drawn, its words not yet: the hook's text
    // takes the bullet's place (no stray `●` row above it).
    let mut runner = running();
    runner.lines(&lines(&["● Bash(touch marker)", "  ⎿  Done", "●"]));
    assert!(runner.hook_stop(Some("The project is set up.".into())));
    let ProjectEventKind::Completed { output, .. } = report(&mut runner) else {
        panic!("a command ends completed");
    };
    assert_eq!(
        output,
        "● Bash(touch marker)\n  ⎿  Done\n● The project is set up."
    );

    // A whole answer on screen: the rows before it (the tool calls as
    // drawn) stay, the record (transcript or hook text) replaces the
    // answer as drawn, its markdown kept.
    let mut runner = running();
    runner.lines(&lines(&[
        "● Bash(ls)",
        "  ⎿  src",
        "● Done: one",
        "  folder.",
    ]));
    assert!(runner.hook_stop(Some("Done: **one**\nfolder.".into())));
    let ProjectEventKind::Completed { output, .. } = report(&mut runner) else {
        panic!("a command ends completed");
    };
    assert_eq!(output, "● Bash(ls)\n  ⎿  src\n● Done: **one**\nfolder.");

    // The hook overtook a streamed answer (measured with Claude Code
    // 2.1.332 against a model streaming in chunks): the rows drawn so far
    // give way to the whole record, not the record after them.
    let mut runner = running();
    runner.lines(&lines(&[
        "● Bash(ls)",
        "  ⎿  src",
        "● Shop stock",
        "  The shop sells pe",
    ]));
    let answer = "## Shop stock\n\nThe shop sells **pears**.\n\n- pears, 12 crates";
    assert!(runner.hook_stop(Some(answer.into())));
    let ProjectEventKind::Completed { output, .. } = report(&mut runner) else {
        panic!("a command ends completed");
    };
    assert_eq!(output, format!("● Bash(ls)\n  ⎿  src\n● {answer}"));
}

/// Codex and Gemini CLI: the turn-end hook is the answer's record, never
/// the turn's end. Gemini's `AfterAgent` comes before an API error's row:
/// the error row, then the screen's end, end the turn as failed.
#[test]
fn a_recording_hook_gives_the_answer_and_the_screen_ends_the_turn() {
    let mut runner = running();
    runner.reads_as(profile_with(r#"answer = "hook""#));
    assert!(!runner.hook_stop(Some("[no response text]".into())));
    let line = "✕ [API Error: bad request]".to_string();
    let steps = see(&mut runner, DetectionKind::Error { line: line.clone() });
    assert!(matches!(
        kinds(&steps)[..],
        [ProjectEventKind::Error { .. }]
    ));
    runner.lines(&lines(&[line.as_str()]));
    assert_eq!(
        see(&mut runner, DetectionKind::Completed),
        vec![Step::Complete]
    );
    let ProjectEventKind::Completed { ending, .. } = report(&mut runner) else {
        panic!("a command ends completed");
    };
    assert_eq!(ending, TurnEnding::Failed);

    // The record replaces the answer as drawn; a later hook without text
    // (Codex's `Stop` after its `notify`) keeps it.
    let mut runner = running();
    runner.reads_as(profile_with(r#"answer = "hook""#));
    runner.lines(&lines(&["• Ran ls", "  └ src", "• The shop sells pears."]));
    assert!(!runner.hook_stop(Some("The shop sells **pears**.".into())));
    assert!(!runner.hook_stop(None));
    let ProjectEventKind::Completed { output, ending, .. } = report(&mut runner) else {
        panic!("a command ends completed");
    };
    assert_eq!(ending, TurnEnding::Finished);
    assert_eq!(output, "• Ran ls\n  └ src\n• The shop sells **pears**.");
}

/// OpenCode: the plugin's `session.idle` never ends the turn (it can come
/// before `session.error`, or before the screen settled); the screen's end
/// does, the plugin's record is the answer of a finished turn, and an
/// error turn is the error alone whatever the plugin said.
#[test]
fn a_panel_agents_plugin_records_the_answer_and_the_screen_ends_the_turn() {
    let typed = "/gsd:a";
    let settled = lines(&[
        "  ┃",
        &format!("  ┃  {typed}"),
        "  ┃",
        "",
        "  ╏",
        "  ╏  $ ls",
        "  ╏",
        "",
        "     The shop sells pears.",
        "",
        "     ▣  Build · Fake Model · 1.2s",
        "  ┃",
        "  ┃  Build · Fake Model Fake",
        "  ╹▀▀▀▀▀▀",
        "   ⬝⬝⬝⬝⬝⬝⬝⬝  esc interrupt",
    ]);
    let mut runner = running();
    runner.reads_as(profile_with("cells = true"));
    runner.lines(&lines(&["   ■■⬝⬝⬝⬝⬝⬝  esc interrupt", "     The shop sel"]));
    assert!(!runner.hook_stop(Some("The shop sells **pears**.".into())));
    assert!(runner.running().is_some(), "the screen ends it");
    let Some(Finished::Report(_, ProjectEventKind::Completed { output, ending, .. })) =
        runner.finish(Some(&settled))
    else {
        panic!("a command ends completed");
    };
    // The tool call drawn before the answer stays.
    assert_eq!(
        (output.as_str(), ending),
        ("$ ls\n\n   The shop sells **pears**.", TurnEnding::Finished)
    );

    // Without the plugin: the settled screen, not the log of frames.
    let mut runner = running();
    runner.reads_as(profile_with("cells = true"));
    runner.lines(&lines(&["   ■■⬝⬝⬝⬝⬝⬝  esc interrupt", "     The shop sel"]));
    let Some(Finished::Report(_, ProjectEventKind::Completed { output, .. })) =
        runner.finish(Some(&settled))
    else {
        panic!("a command ends completed");
    };
    assert_eq!(output, "$ ls\n\n   The shop sells pears.");

    // `session.idle` (outcome `done`, no text) before `session.error`,
    // then the screen's error box: one error, a failed turn.
    let mut runner = running();
    runner.reads_as(profile_with("cells = true"));
    assert!(!runner.hook_stop(Some("partial".into())));
    let line = "the request was malformed".to_string();
    let steps = see(&mut runner, DetectionKind::Error { line: line.clone() });
    assert!(matches!(
        kinds(&steps)[..],
        [ProjectEventKind::Error { .. }]
    ));
    let failed = lines(&[
        "  ┃",
        &format!("  ┃  {typed}"),
        "  ┃",
        "",
        "  ╏",
        &format!("  ╏  {line}"),
        "  ╏",
        "",
        "     ▣  Build · Fake Model",
    ]);
    let Some(Finished::Report(_, ProjectEventKind::Completed { output, ending, .. })) =
        runner.finish(Some(&failed))
    else {
        panic!("a command ends completed");
    };
    assert_eq!(
        (output.as_str(), ending),
        (line.as_str(), TurnEnding::Failed)
    );
}

#[test]
fn a_permission_hook_that_agrees_with_the_screen_adds_nothing() {
    let mut runner = running();
    assert!(
        runner
            .hook_permission(bash("cargo test --workspace"))
            .is_empty()
    );
    let body = "Bash command\n  cargo test --workspace\n  Run the tests";
    let steps = see(&mut runner, bash_dialog(body));
    assert!(matches!(kinds(&steps)[..], [ProjectEventKind::Approval(_)]));
}

#[test]
fn a_dialog_that_disagrees_with_the_permission_hook_is_flagged_whichever_comes_first() {
    // The hook first: the dialog shows another command.
    let mut runner = running();
    runner.hook_permission(bash("rm -rf target"));
    let body = "Bash command\n  ls -la";
    let steps = see(&mut runner, bash_dialog(body));
    let [
        ProjectEventKind::Approval(seen),
        ProjectEventKind::DialogMismatch {
            approval_id,
            detail,
        },
    ] = kinds(&steps)[..]
    else {
        panic!("the approval, then the mismatch: {steps:?}");
    };
    assert_eq!(&seen.id, approval_id);
    assert!(detail.contains("rm -rf target"), "{detail}");

    // The dialog first: a question whose options the screen misread.
    let mut runner = running();
    see(
        &mut runner,
        dialog(
            ApprovalKind::Question,
            "Which database?",
            "",
            &["Postgres", "Type something."],
        ),
    );
    let question = Question {
        question: "Which database?".into(),
        header: None,
        multi_select: false,
        options: ["Postgres", "SQLite"]
            .iter()
            .map(|l| QuestionOption {
                label: l.to_string(),
                description: None,
            })
            .collect(),
    };
    let steps = runner.hook_permission(ToolRequest::Question {
        questions: vec![question],
    });
    let [ProjectEventKind::DialogMismatch { detail, .. }] = kinds(&steps)[..] else {
        panic!("a mismatch: {steps:?}");
    };
    assert!(
        detail.contains("\"SQLite\"") && !detail.contains("Postgres"),
        "{detail}"
    );

    // Another kind altogether.
    let mut runner = running();
    runner.hook_permission(ToolRequest::Plan {
        plan: "1. Do it".into(),
        plan_file_path: None,
    });
    let steps = see(&mut runner, bash_dialog("ls"));
    assert!(matches!(
        kinds(&steps)[..],
        [_, ProjectEventKind::DialogMismatch { .. }]
    ));
}

#[test]
fn a_bash_dialog_drawn_without_its_body_shows_the_hooks_command() {
    let mut runner = running();
    runner.hook_permission(ToolRequest::Bash {
        command: "make deploy".into(),
        description: Some("Deploy to staging".into()),
    });
    let steps = see(&mut runner, bash_dialog(""));
    let [ProjectEventKind::Approval(seen)] = kinds(&steps)[..] else {
        panic!("one approval, no mismatch: {steps:?}");
    };
    assert_eq!(seen.body, "make deploy\nDeploy to staging");
}

#[test]
fn task_hooks_are_the_running_commands_progress() {
    let mut runner = running();
    let news = [
        TaskNews::Created {
            id: "1".into(),
            subject: "Write tests".into(),
        },
        TaskNews::Created {
            id: "2".into(),
            subject: "Fix bug".into(),
        },
        TaskNews::Created {
            id: "2".into(),
            subject: "Fix bug".into(),
        },
        TaskNews::Completed {
            id: "1".into(),
            subject: "Write tests".into(),
        },
    ];
    let mut last = Vec::new();
    for n in news {
        last = runner.hook_task(n);
    }
    let [
        ProjectEventKind::Progress {
            summary, percent, ..
        },
    ] = kinds(&last)[..]
    else {
        panic!("progress: {last:?}");
    };
    assert_eq!(
        (summary.as_str(), *percent),
        ("tasks 1/2 · done: Write tests", Some(50))
    );
    assert_eq!(
        runner.status(true).last_progress.as_deref(),
        Some("tasks 1/2 · done: Write tests")
    );

    let mut idle = JobRunner::default();
    let news = TaskNews::Created {
        id: "1".into(),
        subject: "x".into(),
    };
    assert!(
        idle.hook_task(news).is_empty(),
        "no command, no progress card"
    );
}

#[test]
fn a_recovery_turn_reports_nothing_and_hands_its_command_back() {
    let mut runner = JobRunner::default();
    runner.begin(job("a"), true, Instant::now(), T0_MS);
    let error = DetectionKind::Error {
        line: "boom".into(),
    };
    assert!(
        see(&mut runner, error).is_empty(),
        "no error cards for the recovery prompt"
    );
    assert_eq!(
        see(&mut runner, DetectionKind::Completed),
        vec![Step::Complete]
    );
    match runner.finish(None) {
        Some(Finished::Recovery(j)) => assert_eq!(j.id, "a"),
        _ => panic!("the command itself comes next"),
    }
}

/// Draws `screen` (a real Claude Code 2.1.197 screen) from the top.
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

/// Output that arrives together with a turn's end that fell due: the turn
/// ends first, on the screen as it was, and the output belongs to what
/// follows (it is in the finished lines, not in the finished turn).
#[test]
fn a_turn_end_that_fell_due_is_finished_before_the_output_that_follows() {
    use super::runner::take_output;
    use crate::detect::{DetectorConfig, PaneWatcher, Profiles};
    let profile = Profiles::defaults().unwrap().get("claude").unwrap();
    let mut watcher = PaneWatcher::new(
        PaneId(1),
        profile.clone(),
        DetectorConfig::default(),
        120,
        40,
    );
    let mut runner = JobRunner::default();
    runner.reads_as(profile);
    let prompt = "quote some errors";
    let at = &crate::store::ids::session("cm-demo");
    runner.begin(
        Job {
            text: prompt.into(),
            ..job("a")
        },
        false,
        Instant::now(),
        T0_MS,
    );
    watcher.detector_mut().begin_turn();
    watcher.typed(prompt);
    let busy = include_str!("../../../tests/detect/screens/busy-spinner.txt");
    let idle = include_str!("../../../tests/detect/screens/quote-idle.txt");
    let mut steps = take_output(&mut runner, &mut watcher, Millis(0), &draw(busy), at);
    steps.extend(take_output(
        &mut runner,
        &mut watcher,
        Millis(100),
        &draw(idle),
        at,
    ));
    // The answer so far is reported as it is drawn (what a streamed card
    // shows); nothing else before the debounce.
    let (answers, others): (Vec<Step>, Vec<Step>) = steps
        .into_iter()
        .partition(|s| matches!(s, Step::Emit(_, ProjectEventKind::Answer { .. })));
    assert!(
        others.is_empty(),
        "not over before the debounce: {others:?}"
    );
    assert!(
        answers.iter().any(|s| matches!(s,
            Step::Emit(_, ProjectEventKind::Answer { text }) if text.contains("Here is what I found"))),
        "the answer so far: {answers:?}"
    );
    // Long after the turn's end fell due, more output (the next thing the
    // pane shows) arrives before any tick.
    let later = b"\r\n\r\nNEXT TURN OUTPUT\r\n";
    let steps = take_output(&mut runner, &mut watcher, Millis(5_000), later, at);
    let [Step::Finished(Finished::Report(job, ProjectEventKind::Completed { output, .. }))] =
        &steps[..]
    else {
        panic!("the turn's end first: {steps:?}");
    };
    assert_eq!(job.id, "a");
    assert!(output.contains("Here is what I found"), "{output}");
    assert!(!output.contains("NEXT TURN OUTPUT"), "{output}");
    assert!(runner.running().is_none());
}

/// A progress line redrawn (GSD's statusline redraws the screen many times
/// a second) is reported once per command; a new value is reported.
#[test]
fn progress_is_reported_once_until_it_changes() {
    let mut runner = running();
    let line = |done: u32| {
        DetectionKind::Progress(crate::detect::ProgressFields {
            done: Some(done),
            total: Some(4),
            stage: Some("Tasks".into()),
            ..Default::default()
        })
    };
    let mut reported = Vec::new();
    for done in [2, 2, 2, 2, 2, 3, 3, 3, 2] {
        for step in see(&mut runner, line(done)) {
            if let Step::Emit(_, ProjectEventKind::Progress { summary, .. }) = step {
                reported.push(summary);
            }
        }
    }
    // Redraws finish several lines in turn: each value is told once.
    assert_eq!(reported, ["Tasks · 2/4", "Tasks · 3/4"]);
    assert_eq!(
        runner.status(true).last_progress.as_deref(),
        Some("Tasks · 2/4")
    );

    // The next command reports its own progress, even the same value;
    // a line that was on screen before it began is the last command's.
    runner.finish(None);
    let banner = "━━━ GSD ► EXECUTING WAVE 1".to_string();
    runner.lines(std::slice::from_ref(&banner));
    runner.begin(job("b"), false, Instant::now(), T0_MS);
    let mut redrawn = detection(DetectionKind::Progress(crate::detect::ProgressFields {
        stage: Some("EXECUTING WAVE 1".into()),
        ..Default::default()
    }));
    redrawn.context = format!("earlier\n{banner}");
    assert!(
        runner
            .on_detection(redrawn, &crate::store::ids::session("cm-demo"))
            .is_empty()
    );
    assert_eq!(kinds(&see(&mut runner, line(2))).len(), 1);
}

/// Counts after a stage banner are told within that stage: a card that
/// moves once a second (the banner's event overtaken by the next count)
/// still says which stage the count belongs to.
#[test]
fn counts_are_told_within_the_last_stage() {
    let mut runner = running();
    let fields = |stage: Option<&str>, done: Option<u32>| {
        DetectionKind::Progress(crate::detect::ProgressFields {
            stage: stage.map(str::to_owned),
            done,
            total: done.map(|_| 3),
            ..Default::default()
        })
    };
    let mut told = Vec::new();
    for kind in [
        fields(Some("PLANNING PHASE 2"), None),
        fields(None, Some(1)),
        fields(Some("VERIFYING"), None),
        fields(None, Some(3)),
    ] {
        for step in see(&mut runner, kind) {
            if let Step::Emit(_, ProjectEventKind::Progress { summary, .. }) = step {
                told.push(summary);
            }
        }
    }
    assert_eq!(
        told,
        [
            "PLANNING PHASE 2",
            "PLANNING PHASE 2 · 1/3",
            "VERIFYING",
            "VERIFYING · 3/3"
        ]
    );
}

/// Codex's API error: the `■` row is reported as an error card, then the
/// turn ends with nothing else said. That is one report, not an error and
/// then a result holding the same row; an answer after a retried error
/// is still a result.
#[test]
fn a_turn_that_ended_on_its_error_is_reported_once() {
    // Codex's turn: its `›` echo is its chrome.
    let mut runner = JobRunner::default();
    runner.reads_as(
        crate::detect::Profiles::defaults()
            .unwrap()
            .get("codex")
            .unwrap(),
    );
    runner.begin(job("a"), false, Instant::now(), T0_MS);
    let row = "■ We’re currently experiencing high demand".to_string();
    runner.lines(&lines(&["› /gsd:demo", &row]));
    let steps = see(&mut runner, DetectionKind::Error { line: row.clone() });
    assert!(
        matches!(&steps[..], [Step::Emit(_, ProjectEventKind::Error { .. })]),
        "{steps:?}"
    );
    assert_eq!(
        see(&mut runner, DetectionKind::Completed),
        vec![Step::Complete]
    );
    let ProjectEventKind::Completed { ending, errors, .. } = report(&mut runner) else {
        panic!("a command ends completed");
    };
    assert_eq!((ending, errors), (TurnEnding::Failed, 1));

    let mut runner = running();
    let row = "API Error: 529 Overloaded · retrying".to_string();
    see(&mut runner, DetectionKind::Error { line: row.clone() });
    runner.lines(&lines(&[&row, "● Here is the answer after all."]));
    see(&mut runner, DetectionKind::Completed);
    let ProjectEventKind::Completed { ending, output, .. } = report(&mut runner) else {
        panic!("a command ends completed");
    };
    assert_eq!(ending, TurnEnding::Finished, "{output}");
}

/// Aider's retried error, as it draws it (through litellm): the error row,
/// its explanation, `Retrying in … seconds...`, again and again, and at
/// last the error with its explanation alone. Nothing but the error: one
/// report. An answer after a retry is a result.
#[test]
fn aider_s_retried_error_rows_are_the_error_not_a_result() {
    let error = "litellm.RateLimitError: RateLimitError: OpenAIException - upstream exploded";
    let why = "The API provider has rate limited you. Try again later or check your quotas.";
    let mut runner = running();
    see(
        &mut runner,
        DetectionKind::Error {
            line: format!("░{error}"),
        },
    );
    let drawn = [
        &format!("       ░{error}")[..],
        &format!("        ░{why}"),
        "Retrying in 0.2 seconds...",
        error,
        why,
        "Retrying in 0.5 seconds...",
        // A frame of the scanner left at the row's start (measured under
        // load), the error given up on after it.
        &format!("        █░ Waiting for openai/fake-model{error}"),
        why,
    ];
    runner.lines(&lines(&drawn));
    see(&mut runner, DetectionKind::Completed);
    let ProjectEventKind::Completed { ending, output, .. } = report(&mut runner) else {
        panic!("a command ends completed");
    };
    assert_eq!(ending, TurnEnding::Failed, "{output}");

    let mut runner = running();
    see(
        &mut runner,
        DetectionKind::Error {
            line: error.to_string(),
        },
    );
    runner.lines(&lines(&[
        error,
        why,
        "Retrying in 0.2 seconds...",
        "The shop sells figs.",
    ]));
    see(&mut runner, DetectionKind::Completed);
    let ProjectEventKind::Completed { ending, output, .. } = report(&mut runner) else {
        panic!("a command ends completed");
    };
    assert_eq!(ending, TurnEnding::Finished, "{output}");
}

/// A question whose list scrolls (Gemini CLI in a short pane: one option
/// shown) offers every option its `ask_user` hook names, keyed by number,
/// whether the hook came before the dialog or after its card went out
/// (then reported again under its id), and no mismatch is told.
#[test]
fn a_scrolled_question_offers_the_options_its_hook_names() {
    let asked = || ToolRequest::Question {
        questions: vec![Question {
            question: "Which database?".into(),
            header: None,
            multi_select: false,
            options: ["SQLite", "Postgres", "Redis"]
                .iter()
                .map(|l| QuestionOption {
                    label: l.to_string(),
                    description: None,
                })
                .collect(),
        }],
    };
    let scrolled = || {
        dialog(
            ApprovalKind::Question,
            "Which database?",
            crate::detect::SCROLLED_NOTE,
            &["SQLite"],
        )
    };
    let labels = |a: &crate::store::state::Approval| -> Vec<String> {
        (a.options.iter())
            .map(|o| format!("{} {}", o.key, o.label))
            .collect()
    };
    let want = ["1 SQLite", "2 Postgres", "3 Redis"];
    // The hook first (Gemini's `BeforeTool` runs before the box is drawn).
    let mut runner = running();
    assert!(runner.hook_permission(asked()).is_empty());
    let steps = see(&mut runner, scrolled());
    let [ProjectEventKind::Approval(a)] = kinds(&steps)[..] else {
        panic!("one approval: {steps:?}");
    };
    assert_eq!(labels(a), want);
    // The card first: the hook's options are reported under its id.
    let mut runner = running();
    let steps = see(&mut runner, scrolled());
    let [ProjectEventKind::Approval(first)] = kinds(&steps)[..] else {
        panic!("one approval: {steps:?}");
    };
    let id = first.id.clone();
    let steps = runner.hook_permission(asked());
    let [ProjectEventKind::Approval(again)] = kinds(&steps)[..] else {
        panic!("the approval again, no mismatch: {steps:?}");
    };
    assert_eq!(
        (&again.id, labels(again)),
        (&id, want.map(String::from).to_vec())
    );
}

/// The agent's `StopFailure` (or its transcript's API-error entry) ends
/// the running command as an error the screen never recognised (a glyph
/// its profile does not know): reported once, the turn `Failed` (no result
/// card follows).
#[test]
fn a_stop_failure_ends_the_turn_as_an_error_reported_once() {
    let failure = |message: Option<&str>| AgentFailure {
        category: Some("server_error".into()),
        message: message.map(Into::into),
    };
    let said = "API Error: 500 Internal server error. This is a server-side issue, usually temporary — try again in a moment.";
    let errors = |steps: &[Step]| -> Vec<String> {
        (kinds(steps).into_iter())
            .filter_map(|k| match k {
                ProjectEventKind::Error { line, .. } => Some(line.clone()),
                _ => None,
            })
            .collect()
    };
    let ended = |runner: &mut JobRunner| match report(runner) {
        ProjectEventKind::Completed { ending, .. } => ending,
        other => panic!("a command ends completed: {other:?}"),
    };

    // The screen said nothing of it (`∷ API Error: 500 …`, unknown).
    let mut runner = running();
    runner.lines(&lines(&["∷ API Error: 500 Internal server error."]));
    let (steps, ends) = runner.hook_failed(failure(Some(said)));
    assert_eq!((errors(&steps), ends), (vec![said.to_string()], true));
    assert_eq!(ended(&mut runner), TurnEnding::Failed);

    // The screen's row first: the hook's is the same error.
    let mut runner = running();
    let row = "● API Error: 500 Internal server error. This is a server-side issue, usually temporary — try";
    let steps = see(&mut runner, DetectionKind::Error { line: row.into() });
    assert_eq!(errors(&steps).len(), 1);
    let (steps, _) = runner.hook_failed(failure(Some(said)));
    assert!(errors(&steps).is_empty(), "{steps:?}");
    assert_eq!(ended(&mut runner), TurnEnding::Failed);

    // The hook first: the row drawn after it is not reported again.
    let mut runner = running();
    let (steps, _) = runner.hook_failed(failure(Some(said)));
    assert_eq!(errors(&steps).len(), 1);
    let steps = see(&mut runner, DetectionKind::Error { line: row.into() });
    assert!(errors(&steps).is_empty(), "{steps:?}");

    // No words from the hook: the screen's error is it; without one, the
    // category is.
    let mut runner = running();
    see(&mut runner, DetectionKind::Error { line: row.into() });
    assert!(errors(&runner.hook_failed(failure(None)).0).is_empty());
    let mut runner = running();
    assert_eq!(
        errors(&runner.hook_failed(failure(None)).0),
        ["StopFailure: server_error"]
    );
    // Another error the screen reported before is not this one.
    let mut runner = running();
    see(
        &mut runner,
        DetectionKind::Error {
            line: "● Bash failed: exit 1".into(),
        },
    );
    assert_eq!(errors(&runner.hook_failed(failure(Some(said))).0).len(), 1);
}

/// A scrolled question takes its hidden options only from the hook's
/// question that is the one on screen, word for word, and only when the
/// options the screen shows are that question's at the same keys: an
/// empty or shorter question is in every dialog's words, and its options
/// offered on the card would be answered by the keys of the options on
/// screen (a card offered "Oracle", and its key typed `2`: Postgres).
#[test]
fn a_scrolled_question_takes_hidden_options_only_from_its_own_question() {
    let question = |text: &str, labels: &[&str]| Question {
        question: text.into(),
        header: None,
        multi_select: false,
        options: (labels.iter())
            .map(|l| QuestionOption {
                label: l.to_string(),
                description: None,
            })
            .collect(),
    };
    let offered = |questions: Vec<Question>| -> Vec<String> {
        let mut runner = running();
        runner.hook_permission(ToolRequest::Question { questions });
        let steps = see(
            &mut runner,
            dialog(
                ApprovalKind::Question,
                "Which database should the shop use?",
                crate::detect::SCROLLED_NOTE,
                &["SQLite"],
            ),
        );
        let Some(ProjectEventKind::Approval(a)) = kinds(&steps).first().copied() else {
            panic!("an approval: {steps:?}");
        };
        (a.options.iter())
            .map(|o| format!("{} {}", o.key, o.label))
            .collect()
    };
    let ours = || {
        question(
            "Which database should the shop use?",
            &["SQLite", "Postgres", "Redis"],
        )
    };
    // An empty question, or one the screen's holds, asked first.
    for other in ["", "  ", "database", "Which database"] {
        let asked = vec![question(other, &["SQLite", "Oracle"]), ours()];
        assert_eq!(
            offered(asked),
            ["1 SQLite", "2 Postgres", "3 Redis"],
            "{other:?}"
        );
    }
    // The screen's question wrapped over rows is still its own.
    let wrapped = question(
        "Which database\n  should the shop   use?",
        &["SQLite", "Postgres"],
    );
    assert_eq!(offered(vec![wrapped]), ["1 SQLite", "2 Postgres"]);
    // The same words, other options at the keys on screen: none is taken.
    let other_list = question("Which database should the shop use?", &["MySQL", "Oracle"]);
    assert_eq!(offered(vec![other_list]), ["1 SQLite"]);
    // No question of the hook's is the screen's: nothing is added.
    let elsewhere = question("Which cache?", &["SQLite", "Memcached"]);
    assert_eq!(offered(vec![elsewhere]), ["1 SQLite"]);
}

/// An answer read off the screen (Codex, Gemini, OpenCode, Aider) is read
/// at most once per 350 ms however often output comes (each read builds
/// the whole screen), and once more after output the step held back.
#[test]
fn a_streamed_answer_off_the_screen_is_read_at_most_every_step() {
    let mut runner = running();
    runner.reads_as(profile_with(r#"answer = "settled_screen""#));
    let mut reads = Vec::new();
    for at in [0, 100, 340, 350, 400, 720] {
        runner.lines(&lines(&["• More of the answer"]));
        let _ = runner.answer_news(Millis(at), || {
            reads.push(at);
            Some(Vec::new())
        });
    }
    assert_eq!(reads, [0, 350, 720]);
    assert_eq!(runner.answer_read_due(), None, "all read");
    // Output within the step: read again once the step is over.
    runner.lines(&lines(&["• The answer's last row"]));
    assert!(runner.answer_news(Millis(800), || None).is_none());
    assert_eq!(runner.answer_read_due(), Some(Millis(1070)));
    let _ = runner.answer_news(Millis(1070), || Some(Vec::new()));
    assert_eq!(runner.answer_read_due(), None);
}

/// A dialog is on its own card, never in the streamed answer read off the
/// screen: not while it waits or its answer is being typed (the screen is
/// not even read), nor while the screen draws one not yet recognised (the
/// reader gives no rows), nor the first rows of a box still being drawn.
#[test]
fn a_streamed_answer_off_the_screen_holds_no_dialog() {
    let mut runner = running();
    runner.reads_as(profile_with(r#"answer = "settled_screen""#));
    let reads = std::cell::Cell::new(0);
    let read = |runner: &mut JobRunner, at: u64, screen: Option<&[&str]>| {
        runner.lines(&lines(&["• Ran touch x"]));
        let news = runner.answer_news(Millis(at), || {
            reads.set(reads.get() + 1);
            screen.map(lines)
        });
        match news {
            Some(Step::Emit(_, ProjectEventKind::Answer { text })) => Some(text),
            _ => None,
        }
    };
    let drawn = ["› /gsd:a", "• Ran touch x", "╭─────╮", "│ ? Shell rm x │"];
    assert_eq!(read(&mut runner, 0, None), None, "a dialog drawn: nothing");
    see(&mut runner, bash_dialog("touch x"));
    assert_eq!(read(&mut runner, 400, Some(&drawn)), None, "a dialog waits");
    runner.answer_sent();
    assert_eq!(
        read(&mut runner, 800, Some(&drawn)),
        None,
        "an answer typed"
    );
    assert_eq!(
        reads.get(),
        1,
        "the screen is read only when no dialog is known"
    );
    runner.answer_done(true);
    assert_eq!(
        read(&mut runner, 1200, Some(&drawn)).as_deref(),
        Some("• Ran touch x\n"),
        "the answer again, without the box being drawn"
    );
}

/// The streamed answer is the answer so far, never a bare bullet (Claude
/// Code's frame before the first word of a chunked answer).
#[test]
fn the_streamed_answer_holds_back_a_bare_bullet() {
    let mut runner = running();
    let news = |runner: &mut JobRunner| match runner.answer_news(Millis(0), || Some(Vec::new())) {
        Some(Step::Emit(_, ProjectEventKind::Answer { text })) => Some(text),
        _ => None,
    };
    runner.lines(&lines(&["● "]));
    assert_eq!(news(&mut runner), None);
    runner.lines(&lines(&["● Stock by crate", "  1. Crate 1 holds 3 pears."]));
    runner.lines(&lines(&["●"]));
    let shown = news(&mut runner).unwrap_or_default();
    assert!(
        shown.trim_end().ends_with("1. Crate 1 holds 3 pears."),
        "{shown:?}"
    );
    runner.lines(&lines(&["  2."]));
    let shown = news(&mut runner).unwrap_or_default();
    assert!(shown.trim_end().ends_with("2."), "{shown:?}");
}

/// A stall is the running command's status: reported once, its end only
/// after it was reported, and nothing while no command runs.
#[test]
fn a_stall_is_reported_once_and_its_end_only_after_it() {
    let mut runner = JobRunner::default();
    let stalled = DetectionKind::Stalled { secs: 60 };
    let resumed = DetectionKind::Resumed { secs: 75 };
    assert!(see(&mut runner, stalled.clone()).is_empty(), "no command");
    let mut runner = running();
    assert!(
        see(&mut runner, resumed.clone()).is_empty(),
        "never stalled"
    );
    let steps = see(&mut runner, stalled.clone());
    assert_eq!(kinds(&steps), [&ProjectEventKind::Stalled { secs: 60 }]);
    assert!(see(&mut runner, stalled).is_empty(), "once");
    let steps = see(&mut runner, resumed.clone());
    assert_eq!(kinds(&steps), [&ProjectEventKind::Resumed { secs: 75 }]);
    assert!(see(&mut runner, resumed).is_empty(), "once");
}
