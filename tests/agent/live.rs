//! Each scenario run live: what Claude Code showed and sent back to the
//! fake API, and what the recording holds.

use crate::support::claude::{ClaudeRun, RunOptions, claude_required, clawmux_stdin, retries_400};

use crate::support::expect;
use crate::support::scenarios::{self, Done};

fn watching() -> RunOptions {
    RunOptions {
        watch: true,
        ..RunOptions::default()
    }
}

/// The pane's bytes in a recording, decoded by `clawmux decode`.
fn decoded(done: &Done) -> String {
    let (code, out, err) = clawmux_stdin(&["decode", "--pane", "%0"], &done.recording);
    assert_eq!(code, 0, "decode failed: {err}");
    out
}

/// Live and replayed detections of this run agree (whatever the detector
/// says), and the live ones are returned.
fn live_matches_replay(name: &str, done: &Done) -> Vec<serde_json::Value> {
    let live = expect::detections(done.run.watch_lines());
    let replayed = expect::replay(&done.recording);
    let (left, right) = (expect::signatures(&live), expect::signatures(&replayed));
    assert!(
        left == right,
        "live and replayed detections differ (recording kept at {}):\nlive: {left:#?}\nreplayed: {right:#?}",
        keep(name, done)
    );
    live
}

/// The expected outcome, on the live detections.
fn expect_live(name: &str, done: &Done) {
    let live = live_matches_replay(name, done);
    if let Err(e) = expect::check(name, &live) {
        panic!("{name} live: {e}\nrecording kept at {}", keep(name, done));
    }
}

/// Copies a failed run's recording under `target/` (its temporary home is
/// removed with the run), so `clawmux detect` can be run on it later.
fn keep(name: &str, done: &Done) -> String {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("failed-recordings");
    let path = dir.join(format!("{name}-{}.rec", std::process::id()));
    let watched: String = done
        .run
        .watch_lines()
        .iter()
        .map(|l| format!("{l}\n"))
        .collect();
    let kept = std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(&path, &done.recording))
        .and_then(|()| std::fs::write(path.with_extension("watch.jsonl"), watched))
        .and_then(|()| std::fs::write(path.with_extension("watch.err"), done.run.watch_errors()));
    match kept {
        Ok(()) => path.display().to_string(),
        Err(e) => format!("nowhere ({e})"),
    }
}

/// The tool results Claude Code sent back, all requests together.
fn tool_results(done: &Done) -> Vec<String> {
    done.run
        .api
        .scripted_requests()
        .iter()
        .flat_map(|r| r.tool_results())
        .collect()
}

#[test]
fn bash_permission() {
    let claude = claude_required();
    let done = scenarios::bash_permission(&claude, &watching());
    assert!(
        done.screens[0].contains("touch made-by-bash.txt"),
        "{}",
        done.screens[0]
    );
    assert!(done.run.env.project().join("made-by-bash.txt").exists());
    assert_eq!(done.run.api.remaining(), 0);
    assert_eq!(done.run.api.exhausted(), 0);
    let text = decoded(&done);
    // Claude Code moves the cursor instead of writing spaces: look for words.
    assert!(text.contains("proceed?"), "{text}");
    assert!(text.contains("marker"), "{text}");
    expect_live("bash_permission", &done);
}

#[test]
fn bash_denied() {
    let claude = claude_required();
    let done = scenarios::bash_denied(&claude, &watching());
    assert!(
        done.screens[0].contains("rm -rf build"),
        "{}",
        done.screens[0]
    );
    assert!(
        done.screens[1].contains("Interrupted"),
        "{}",
        done.screens[1]
    );
    // "No" ends the turn without another model call.
    assert_eq!(done.run.api.scripted_requests().len(), 1);
    expect_live("bash_denied", &done);
}

#[test]
fn edit_file() {
    let claude = claude_required();
    let done = scenarios::edit_file(&claude, &watching());
    assert!(done.screens[0].contains("notes.txt"), "{}", done.screens[0]);
    let notes = std::fs::read_to_string(done.run.env.project().join("notes.txt")).unwrap();
    assert_eq!(notes, "goodbye world\nsecond line\n");
    assert_eq!(done.run.api.exhausted(), 0);
    expect_live("edit_file", &done);
}

#[test]
fn create_file() {
    let claude = claude_required();
    let done = scenarios::create_file(&claude, &watching());
    assert!(done.screens[0].contains("hello.py"), "{}", done.screens[0]);
    let made = std::fs::read_to_string(done.run.env.project().join("hello.py")).unwrap();
    assert_eq!(made, "print('hello')\nprint('world')\n");
    expect_live("create_file", &done);
}

#[test]
fn ask_question() {
    let claude = claude_required();
    let done = scenarios::ask_question(&claude, &watching());
    let dialog = &done.screens[0];
    for needle in [
        scenarios::QUESTION,
        "Embedded file, zero setup",
        "Chat about this",
    ] {
        assert!(dialog.contains(needle), "{needle:?} not in\n{dialog}");
    }
    // The digit chose the second option, and Claude Code says so.
    let results = tool_results(&done);
    assert!(results.iter().any(|r| r.contains("SQLite")), "{results:?}");
    expect_live("ask_question", &done);
}

#[test]
fn plan_mode() {
    let claude = claude_required();
    let done = scenarios::plan_mode(&claude, &watching());
    let dialog = &done.screens[0];
    assert!(dialog.contains("Write the tokenizer"), "{dialog}");
    let results = tool_results(&done);
    assert!(!results.is_empty());
    assert_eq!(done.run.api.exhausted(), 0);
    expect_live("plan_mode", &done);
}

#[test]
fn api_error_500() {
    let claude = claude_required();
    let done = scenarios::api_error(
        &claude,
        &watching(),
        500,
        "Internal server error",
        "API Error: 500",
    );
    // One try and one retry (CLAUDE_CODE_MAX_RETRIES=1), both answered 500.
    assert_eq!(done.run.api.scripted_requests().len(), 2);
    expect_live("api_error_500", &done);
}

#[test]
fn api_error_529() {
    let claude = claude_required();
    let done = scenarios::api_error(&claude, &watching(), 529, "Overloaded", "529");
    assert_eq!(done.run.api.scripted_requests().len(), 2);
    expect_live("api_error_529", &done);
}

#[test]
fn api_error_401() {
    let claude = claude_required();
    let done = scenarios::api_error(
        &claude,
        &watching(),
        401,
        "invalid x-api-key",
        "Invalid API key",
    );
    assert!(!done.run.api.scripted_requests().is_empty());
    expect_live("api_error_401", &done);
}

#[test]
fn api_error_400() {
    let claude = claude_required();
    let done = scenarios::api_error(
        &claude,
        &watching(),
        400,
        "messages: text content blocks must be non-empty",
        "API Error: 400",
    );
    // 400 is not retried before 2.1.332; since, it is.
    let tries = if retries_400() {
        scenarios::RETRIED_400_REQUESTS as usize
    } else {
        1
    };
    assert_eq!(done.run.api.scripted_requests().len(), tries);
    assert_eq!(done.run.api.exhausted(), 0);
    expect_live("api_error_400", &done);
}

#[test]
fn long_answer() {
    let claude = claude_required();
    let done = scenarios::long_answer(&claude, &watching());
    // 2.1.332 redraws only the cells that change, so the pane's bytes need
    // not hold `120` in a row: the screen at the end is the proof.
    assert!(
        done.screens[0].contains(scenarios::LONG_LAST),
        "the last line was drawn"
    );
    expect_live("long_answer", &done);
}

#[test]
fn task_list() {
    let claude = claude_required();
    let done = scenarios::task_list(&claude, &watching());
    let text = decoded(&done);
    assert!(text.contains("parser"), "{text}");
    assert_eq!(done.run.api.exhausted(), 0);
    expect_live("task_list", &done);
}

#[test]
fn quoting_reply() {
    let claude = claude_required();
    let done = scenarios::quoting_reply(&claude, &watching());
    assert!(
        done.screens[0].contains("Fatal errors: none."),
        "{}",
        done.screens[0]
    );
    expect_live("quoting_reply", &done);
}

/// A slash command Claude Code does not know (no GSD installed): it
/// refuses it itself, with no model call and no echo of the command, in
/// one row (`● Unknown command: /gsd:new-project` up to 2.1.332, `∷
/// Unknown command: …` since 2.1.337). Recorded as `unknown_command` for
/// the installed release when asked; a watcher that was not told of the
/// command sees no turn in it, so the replay that tells it, as the daemon
/// does, checks the detection (`tests/detect/claude_2_1_337.rs`), and the
/// daemon's own tests through `serve` start with such a refusal.
#[test]
fn unknown_command() {
    let claude = claude_required();
    let mut run = ClaudeRun::start(&claude, Vec::new(), RunOptions::default());
    run.prompt("/gsd:new-project");
    let screen = run.wait_idle_with("Unknown command: /gsd:new-project");
    let recording = run.finish();
    run.maybe_save_fixture("unknown_command");
    assert!(run.api.scripted_requests().is_empty(), "{screen}");
    let (code, text, err) = clawmux_stdin(&["decode", "--pane", "%0"], &recording);
    assert_eq!(code, 0, "{err}");
    // The pane's bytes, not a screen: a release may move the cursor over
    // a blank instead of writing it, so the words are compared without
    // escape sequences and spaces.
    let csi = regex::Regex::new(r"\x1b\[[0-9;?]*[ -/]*[@-~]").unwrap();
    let words: String = (csi.replace_all(&text, "").chars())
        .filter(|c| !c.is_whitespace())
        .collect();
    assert!(words.contains("Unknowncommand:/gsd:new-project"), "{text}");
}
