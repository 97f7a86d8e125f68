//! Recordings the detector's tests replay (`tests/detect`), made with the
//! real agents against the fake model API and refreshed with
//! `CLAWMUX_UPDATE_FIXTURES=1`:
//!
//! - GSD's settings question on Claude Code (`gsd_settings.rec`): GSD's
//!   new-project asks "Which settings do you want to change?" as a
//!   multi-select AskUserQuestion, answered the way clawmux answers one
//!   (digits a key gap apart, then Right, then Submit);
//! - GSD's execute-phase on Claude Code (`gsd_execute_phase.rec`): its stage
//!   banners, the gsd-sdk progress bar of the real `.planning/` files and a
//!   task count, under GSD's statusline, which keeps the screen redrawing;
//! - Gemini CLI retrying a 500 without end (`retry_500.rec` under
//!   `tests/fixtures/gemini-<release>/`): only its spinner and timer move
//!   for 25 s, then Esc cancels.
//!
//! Each run also checks, live, what it recorded.

use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use clawmux::agentcheck::{ClaudeEnv, FakeApi, Turn};
use serde_json::json;

use crate::support::claude::{
    STEP_TIMEOUT, claude_required, fixtures_dir, recorded_placeholder, save_fixture_if_asked, stop,
};
use crate::support::gemini::{GeminiRun, gemini_required};
use crate::support::gsd::{self, Layout};
use crate::support::tmux::TmuxServer;

/// The gap clawmux leaves between the keys of one answer
/// (`panes::agent_pane::KEY_GAP`): digits in one read are a paste.
const KEY_GAP: Duration = Duration::from_millis(250);

/// GSD's stage banner, as its workflows tell the model to print it.
fn banner(stage: &str) -> String {
    let rule = "━".repeat(53);
    format!("{rule}\n GSD ► {stage}\n{rule}")
}

/// The real Claude Code with the real GSD (global install: skills, hooks,
/// statusline, `gsd-sdk`) in a recorded tmux pane.
struct GsdRun {
    api: FakeApi,
    _env: ClaudeEnv,
    tmux: TmuxServer,
    target: String,
    recording: PathBuf,
    recorder: Option<Child>,
    _dir: tempfile::TempDir,
}

impl GsdRun {
    /// Starts Claude Code (manual approvals) with GSD installed, after
    /// `prepare` wrote what the project needs, and waits for its input box.
    fn start(script: Vec<Turn>, prepare: impl FnOnce(&Path)) -> GsdRun {
        let claude = claude_required();
        let package = gsd::gsd_required();
        let api = FakeApi::start_paced(script, Duration::from_millis(15)).expect("fake API");
        let env = ClaudeEnv::new(&api.base_url()).expect("claude env");
        gsd::install(&package, Layout::Global, env.home(), env.project());
        prepare(env.project());
        let env = gsd::agent_env(env);
        let tmux = TmuxServer::new();
        let target = "agent".to_owned();
        let dir = tempfile::tempdir().expect("tempdir");
        let (recording, recorder) = recorded_placeholder(&tmux, &target, dir.path());
        let command = env.shell_command(&claude, &["--permission-mode", "default"]);
        tmux.ok(&["respawn-pane", "-k", "-t", &target, &command]);
        let run = GsdRun {
            api,
            _env: env,
            tmux,
            target,
            recording,
            recorder: Some(recorder),
            _dir: dir,
        };
        run.wait_until("the input box", gsd_idle);
        run
    }

    fn screen(&self) -> String {
        self.tmux.capture(&self.target)
    }

    fn wait_until(&self, what: &str, ready: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + STEP_TIMEOUT;
        loop {
            let screen = self.screen();
            if ready(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn wait_for(&self, needle: &str) -> String {
        self.wait_until(needle, |s| s.contains(needle))
    }

    /// Waits as clawmux does before it answers a dialog.
    fn settle(&self) {
        let settle = clawmux::bridge::panes::answering::ANSWER_SETTLE;
        self.tmux.wait_still(&self.target, settle, STEP_TIMEOUT);
    }

    /// Types `text`, then Enter on its own.
    fn prompt(&self, text: &str) {
        self.tmux.ok(&["send-keys", "-t", &self.target, "-l", text]);
        self.wait_for(text);
        std::thread::sleep(clawmux::tmux::TEXT_ENTER_GAP);
        self.key("Enter");
    }

    fn key(&self, key: &str) {
        self.tmux.ok(&["send-keys", "-t", &self.target, key]);
    }

    /// Stops the recorder; the recording's bytes.
    fn finish(&mut self) -> Vec<u8> {
        if let Some(child) = self.recorder.take() {
            stop(child);
        }
        std::fs::read(&self.recording).expect("recording")
    }

    fn save(&self, name: &str) {
        save_fixture_if_asked(&self.recording, &fixtures_dir(), name);
    }
}

/// Claude Code idle under GSD's statusline (which takes the footer's
/// place: `<model> │ project`), nothing busy.
fn gsd_idle(screen: &str) -> bool {
    screen.contains("│ project") && screen.contains("\n❯") && !screen.contains("esc to interrupt")
}

impl Drop for GsdRun {
    fn drop(&mut self) {
        if let Some(child) = self.recorder.take() {
            stop(child);
        }
    }
}

/// The settings GSD's new-project offers to change, as its workflow words
/// the question (`get-shit-done/workflows/new-project.md`): eight
/// options, more than the four AskUserQuestion takes in one question, so
/// asked as two questions of four, each a multi-select: two tabs.
fn settings_question() -> Turn {
    let question = |question: &str, header: &str, options: &[(&str, &str)]| {
        let options: Vec<serde_json::Value> = (options.iter())
            .map(|(label, description)| json!({"label": label, "description": description}))
            .collect();
        json!({"question": question, "header": header, "multiSelect": true, "options": options})
    };
    Turn::tool(
        "AskUserQuestion",
        json!({"questions": [
            question(SETTINGS_QUESTIONS[0], "Workflow", &[
                ("Mode", "Currently: YOLO"),
                ("Granularity", "Currently: Standard"),
                ("Execution", "Currently: Parallel"),
                ("Git Tracking", "Currently: Yes"),
            ]),
            question(SETTINGS_QUESTIONS[1], "Agents", &[
                ("AI Models", "Currently: Balanced"),
                ("Research", "Currently: Yes"),
                ("Plan Check", "Currently: Yes"),
                ("Verifier", "Currently: Yes"),
            ]),
        ]}),
    )
}

/// The two questions, in the order of their tabs.
const SETTINGS_QUESTIONS: [&str; 2] = [
    "Which settings do you want to change?",
    "Which agent settings do you want to change?",
];

const SETTINGS_DONE: &str = "Mode, Execution and Research will be asked again.";

#[test]
fn gsd_settings_question_recorded() {
    let script = vec![settings_question(), Turn::text(SETTINGS_DONE)];
    let mut run = GsdRun::start(script, |_| {});
    run.prompt("/gsd-new-project");
    // `/gsd:answer 1,3`, then `/gsd:answer 2`, as clawmux types them: each
    // digit ticks (a key gap apart), Right goes on to the next tab, then
    // to the review.
    for (question, keys) in SETTINGS_QUESTIONS.iter().zip([&["1", "3"][..], &["2"]]) {
        run.wait_for(question);
        run.settle();
        for key in keys {
            run.key(key);
            std::thread::sleep(KEY_GAP);
        }
        run.key("Right");
    }
    run.wait_for("Submit answers");
    run.settle();
    run.key("1");
    run.wait_until("the answer, idle", |s| {
        s.contains(SETTINGS_DONE) && gsd_idle(s)
    });
    run.settle();
    run.finish();
    run.save("gsd_settings");
    let answers: Vec<String> = (run.api.scripted_requests().iter())
        .flat_map(|r| r.tool_results())
        .collect();
    assert!(
        answers
            .iter()
            .any(|a| a.contains("Mode") && a.contains("Execution") && a.contains("Research")),
        "{answers:?}"
    );
}

/// `.planning/` as GSD leaves it after three of phase 1's five plans ran:
/// the real `gsd-sdk query progress.bar` reads `3/5 plans (60%)` off it.
fn plans_three_of_five(project: &Path) {
    let phase = project.join(".planning/phases/01-catalogue");
    std::fs::create_dir_all(&phase).expect("phase dir");
    std::fs::write(
        project.join(".planning/ROADMAP.md"),
        "# Roadmap: Shop\n- [ ] **Phase 1: Catalogue** - list products\n",
    )
    .expect("ROADMAP.md");
    for n in 1..=5 {
        std::fs::write(phase.join(format!("01-0{n}-PLAN.md")), "plan\n").expect("plan");
    }
    for n in 1..=3 {
        std::fs::write(phase.join(format!("01-0{n}-SUMMARY.md")), "summary\n").expect("summary");
    }
}

const EXECUTED: &str = "Phase 1 complete: plans 01-04 and 01-05 ran.";

/// The question execute-phase asks between its waves.
const WAVE_QUESTION: &str = "How should wave 2 run?";

/// The model's side of execute-phase: the first wave's banner and the
/// progress bar read from gsd-sdk, a question between the waves (its
/// dialog leaves the screen redrawn), the second wave's banner, a task
/// count, a summary longer than the pane, and the phase's end.
fn execute_phase() -> Vec<Turn> {
    let summary: Vec<String> = (1..=30)
        .map(|n| format!("- 01-0{}: step {n} verified", 4 + n % 2))
        .collect();
    vec![
        Turn::Tools {
            text: Some(format!(
                "{}\n\nPlans 01-01 to 01-03 ran in this wave.",
                banner("EXECUTING WAVE 1")
            )),
            tools: vec![clawmux::agentcheck::ToolUse::new(
                "Bash",
                json!({
                    "command": "gsd-sdk query progress.bar --pick bar",
                    "description": "Read the phase's progress"
                }),
            )],
        },
        Turn::Tools {
            text: Some("Progress: [████████████░░░░░░░░] 3/5 plans (60%)".to_owned()),
            tools: vec![clawmux::agentcheck::ToolUse::new(
                "AskUserQuestion",
                json!({"questions": [{
                    "question": WAVE_QUESTION,
                    "header": "Wave 2",
                    "multiSelect": false,
                    "options": [
                        {"label": "Parallel", "description": "Plans 01-04 and 01-05 at once"},
                        {"label": "Sequential", "description": "One plan at a time"},
                    ],
                }]}),
            )],
        },
        Turn::text(&format!(
            "{}\n\nTasks: 2/4 complete\n\n{}\n\nTasks: 4/4 complete\n\n{}\n\n{EXECUTED}",
            banner("EXECUTING WAVE 2"),
            summary.join("\n"),
            banner("PHASE 1 COMPLETE ✓")
        )),
    ]
}

/// Time given to Claude Code to draw its screen again after a resize (it
/// took ~15 ms here).
const REDRAW_GAP: Duration = Duration::from_secs(2);

#[test]
fn gsd_execute_phase_recorded() {
    let mut run = GsdRun::start(execute_phase(), plans_three_of_five);
    run.prompt("/gsd-execute-phase 1");
    run.wait_for(WAVE_QUESTION);
    run.settle();
    run.key("2");
    run.wait_until("the end of the phase, idle", |s| {
        s.contains(EXECUTED) && gsd_idle(s)
    });
    // A client of another width attaching (and leaving) resizes the
    // window: Claude Code clears its screen and draws it again, twice.
    // The statusline goes on redrawing meanwhile.
    for cols in ["100", "120"] {
        std::thread::sleep(REDRAW_GAP);
        run.tmux
            .ok(&["resize-window", "-t", &run.target, "-x", cols]);
    }
    std::thread::sleep(REDRAW_GAP);
    run.finish();
    run.save("gsd_execute_phase");
    let requests = run.api.scripted_requests();
    let results = requests[1].tool_results().join("\n");
    assert!(results.contains("3/5 plans (60%)"), "{results}");
}

/// How long Gemini's retrying is recorded: its spinner redraws its whole
/// box ~30 times a second (~45 KB of recording a second), so the replay
/// configures a stall time shorter than this (`crates/detect`'s stall
/// test) rather than waiting out the default minute.
const RETRY_RECORDED: Duration = Duration::from_secs(25);

#[test]
fn gemini_retry_500_recorded() {
    let gemini = gemini_required();
    let mut run = GeminiRun::start(&gemini, vec![Turn::error(500, "upstream trouble", 10_000)]);
    run.prompt("hello");
    run.wait_for("esc to cancel");
    std::thread::sleep(RETRY_RECORDED);
    let screen = run.screen();
    assert!(
        screen.contains("esc to cancel"),
        "still retrying:\n{screen}"
    );
    run.keys(&["Escape"]);
    run.wait_for("Request cancelled");
    run.settle();
    run.finish();
    run.maybe_save_fixture("retry_500");
    assert!(run.api.scripted_requests().len() >= 2, "retried");
}
