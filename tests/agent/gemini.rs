//! `clawmux serve --console` driving the real Gemini CLI (the release
//! `.ci/run` installs, `$CLAWMUX_GEMINI`) against the fake model API's
//! Gemini protocol: an answer, approvals approved and denied, API errors
//! (a 400 that ends the turn; 500 and 429, which Gemini retries without
//! end: reported stuck, then interrupted) and an interrupt, each reaching
//! the chat as one card.

use std::time::Duration;

use clawmux::agentcheck::{FakeApi, Turn};
use clawmux_bench::procfs::process_group;

use crate::support::gemini::{
    GeminiEnv, GeminiRun, gemini_required, notifications, pane_output, shell,
};

use super::serve::{
    ConsoleServe, cancel_stops, cards, finished, new_cards, serve_shop, shop_home, with_hook_home,
};
use super::steps;
use crate::support::claude::STEP_TIMEOUT;

/// A console daemon whose project `shop` runs Gemini CLI against
/// `script`, `pace` between streamed chunks. The project exists already
/// (in the daemon's state), so the first chat line is `/gsd:use shop`.
pub(super) fn start(
    gemini: &std::path::Path,
    script: Vec<Turn>,
    pace: Duration,
) -> (ConsoleServe, FakeApi, GeminiEnv) {
    start_with(gemini, script, pace, false)
}

/// [`start`], with Gemini's hooks running `clawmux hook` when `hooks`.
fn start_with(
    gemini: &std::path::Path,
    script: Vec<Turn>,
    pace: Duration,
    hooks: bool,
) -> (ConsoleServe, FakeApi, GeminiEnv) {
    let api = FakeApi::start_paced(script, pace).unwrap();
    let (home, _) = shop_home();
    let env = GeminiEnv::new(&api.base_url());
    let mut agent = env.env_command(gemini, &[]);
    if hooks {
        env.install_hooks(std::path::Path::new(env!("CARGO_BIN_EXE_clawmux")));
        agent = with_hook_home(&agent, home.path());
    }
    (serve_shop(&agent, home, "gemini"), api, env)
}

const PACE: Duration = Duration::from_millis(15);

#[test]
fn gemini_answer_through_serve() {
    let gemini = gemini_required();
    let (mut serve, api, _env) = start(&gemini, vec![Turn::text("The shop sells pears.")], PACE);
    steps::plain_answer(&mut serve, &api, STEP_TIMEOUT, "The shop sells pears.");
    // The router's side call came first and was not taken from the script.
    assert!(
        api.requests()
            .iter()
            .any(|r| !r.scripted && r.path.ends_with(":generateContent"))
    );
}

/// The approval card Gemini's shell dialog gives, checked exactly.
fn assert_shell_approval(out: &str, cmd: &str) {
    let needles = [
        "Allow execution of [Shell]?",
        cmd,
        "[1] Allow once",
        "[2] Allow for this session",
        "[3] No, suggest changes (esc)",
    ];
    let card = steps::one_card(out, "== Approval needed ==", &needles);
    assert!(!card.contains("[4]"), "{card}");
}

#[test]
fn gemini_approval_approved_through_serve() {
    let gemini = gemini_required();
    let script = vec![
        Turn::tool(
            "run_shell_command",
            shell("touch made-by-gemini.txt", "Create a marker file"),
        ),
        Turn::text(steps::STREAMED_ANSWER),
    ];
    let (mut serve, api, _env) = start(&gemini, script, PACE);
    serve.say("make a marker file");
    let at = serve.wait(0, "== Approval needed ==");
    serve.wait(at, "└─");
    assert_shell_approval(&serve.output(), "touch made-by-gemini.txt");
    serve.say("/gsd:answer 1");
    steps::approved(&serve, &api, ("make a marker file", "made-by-gemini.txt"));
}

#[test]
fn gemini_approval_denied_through_serve() {
    let gemini = gemini_required();
    let script = vec![
        Turn::tool(
            "run_shell_command",
            shell("touch denied.txt", "Create a file"),
        ),
        Turn::text("Should not come."),
    ];
    let (mut serve, api, _env) = start(&gemini, script, PACE);
    serve.say("make a file");
    let at = serve.wait(0, "== Approval needed ==");
    let at = serve.wait(at, "└─");
    assert_shell_approval(&serve.output(), "touch denied.txt");
    serve.say("/gsd:answer 3");
    let at = serve.wait(at, "console chose **No, suggest changes (esc)**");
    let at = serve.wait(at, "== Stopped: shop: make a file ==");
    serve.wait(at, "└─");
    let out = serve.output();
    let all = cards(&out);
    let stopped = new_cards(&all, "== Stopped: shop: make a file ==");
    assert_eq!(stopped.len(), 1, "{out}");
    assert!(stopped[0].contains("Request cancelled."), "{out}");
    assert!(
        !serve.home.path().join("ws/shop/denied.txt").exists(),
        "{out}"
    );
    assert_eq!(finished(&out, "make a file"), 0, "{out}");
    // Gemini ends the turn itself; the model is not asked again.
    assert_eq!(api.scripted_requests().len(), 1, "{out}");
}

/// Gemini's `ask_user` tool: its `Answer Questions` box is one question
/// card with the options as drawn (and the custom-value row Gemini adds);
/// a digit answers at once and the choice reaches the model.
#[test]
fn gemini_question_through_serve() {
    let gemini = gemini_required();
    let mut ask = steps::database_question();
    ask["questions"][0]["type"] = "choice".into();
    let script = vec![Turn::tool("ask_user", ask), Turn::text("Postgres it is.")];
    let (mut serve, api, _env) = start(&gemini, script, PACE);
    steps::database_chosen(&mut serve, &api, STEP_TIMEOUT, "Enter a custom value");
}

/// A 400 is not retried: `✕ [API Error: …]` ends the turn, one error
/// card and no result card; with clawmux's hooks installed too, though
/// Gemini's `AfterAgent` fires (`[no response text]`) before the error row
/// is drawn.
fn http_400_is_one_error(hooks: bool) {
    let gemini = gemini_required();
    let script = vec![
        Turn::error(400, "the request was malformed", 1),
        Turn::text("Back again."),
    ];
    let (mut serve, api, _env) = start_with(&gemini, script, PACE, hooks);
    let row = "✕ [API Error:";
    steps::error_turn_once(&mut serve, &api, STEP_TIMEOUT, row, 1);
    let out = serve.output();
    let all = cards(&out);
    let errors = new_cards(&all, "== The agent reported an error ==");
    assert!(
        errors[0].contains("the request was malformed"),
        "{}",
        errors[0]
    );
}

#[test]
fn gemini_http_400_is_reported_through_serve() {
    http_400_is_one_error(false);
}

#[test]
fn gemini_http_400_with_hooks_is_reported_through_serve() {
    http_400_is_one_error(true);
}

/// Gemini retries a 500 or 429 without end, showing only its spinner:
/// the chat is told the turn is stuck, once, on a status card whose
/// Interrupt button (Escape) ends it, reported as stopped, not finished,
/// and the retrying stops.
fn stuck_retry_is_reported_and_interrupted(status: u16) {
    stuck_retry_with(status, false);
}

/// [`stuck_retry_is_reported_and_interrupted`], with clawmux's hooks
/// installed when `hooks` (no hook event ends the retrying turn).
fn stuck_retry_with(status: u16, hooks: bool) {
    let gemini = gemini_required();
    let script = vec![Turn::error(status, "upstream trouble", 10_000)];
    let (mut serve, api, _env) = start_with(&gemini, script, PACE, hooks);
    let stuck = ("stuck: no answer for 30s or more (retrying?)", 2);
    let stopped = steps::stuck_then_stopped(&mut serve, &api, STEP_TIMEOUT, stuck, "Esc");
    assert!(stopped.contains("Request cancelled."), "{stopped}");
}

#[test]
fn gemini_http_500_stuck_is_reported_and_interrupted_through_serve() {
    stuck_retry_is_reported_and_interrupted(500);
}

#[test]
fn gemini_http_500_stuck_with_hooks_is_reported_and_interrupted_through_serve() {
    stuck_retry_with(500, true);
}

#[test]
fn gemini_http_429_stuck_is_reported_and_interrupted_through_serve() {
    stuck_retry_is_reported_and_interrupted(429);
}

/// `/gsd:cancel` mid-answer: Escape stops the stream, reported once as
/// stopped, never as finished.
#[test]
fn gemini_interrupt_through_serve() {
    let gemini = gemini_required();
    let long = steps::long_answer();
    let (mut serve, api, _env) =
        start(&gemini, vec![Turn::text(&long)], Duration::from_millis(300));
    serve.say("talk a lot");
    let at = serve.wait(0, "== shop: talk a lot ==");
    let at = serve.wait(at, "└─");
    steps::wait_requests(&api, 1);
    let stopped = cancel_stops(&mut serve, at, "talk a lot", "Esc");
    assert!(stopped.contains("Request cancelled."), "{stopped}");
}

/// With clawmux's hooks installed, the result is Gemini's own record of
/// the answer (`AfterAgent`'s `prompt_response`), markdown kept, once: the
/// screen draws `**pears**` as bold and `figs` without its backticks.
#[test]
fn gemini_answer_from_its_record_through_serve() {
    let gemini = gemini_required();
    let answer = "The shop sells **pears** and `figs`.";
    let (mut serve, api, _env) = start_with(&gemini, vec![Turn::text(answer)], PACE, true);
    steps::plain_answer(&mut serve, &api, STEP_TIMEOUT, answer);
}

/// Gemini's own hooks (`AfterAgent`, `Notification`) reach the daemon
/// through `clawmux hook`, the path Claude Code's use: one approval card,
/// the turn's end reported once, the hooks in the event log.
#[test]
fn gemini_hooks_through_serve() {
    let gemini = gemini_required();
    let script = vec![
        Turn::tool(
            "run_shell_command",
            shell("touch hooked.txt", "Create a file"),
        ),
        Turn::text(steps::STREAMED_ANSWER),
    ];
    let (mut serve, _api, _env) = start_with(&gemini, script, PACE, true);
    serve.say("make a hooked file");
    let at = serve.wait(0, "== Approval needed ==");
    serve.wait(at, "└─");
    serve.say("/gsd:answer 1");
    steps::streamed_card_is_the_answer(&serve, "make a hooked file");
    let out = serve.output();
    let all = cards(&out);
    assert_eq!(new_cards(&all, "== Approval needed ==").len(), 1, "{out}");
    assert_eq!(finished(&out, "make a hooked file"), 1, "{out}");
    assert!(
        serve.home.path().join("ws/shop/hooked.txt").exists(),
        "{out}"
    );
    let tail = std::process::Command::new(env!("CARGO_BIN_EXE_clawmux"))
        .args(["tail", "--kind", "hook", "--json"])
        .env("CLAWMUX_HOME", serve.home.path())
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&tail.stdout);
    // AfterAgent is read as Claude Code's Stop.
    for event in ["Notification", "Stop"] {
        assert!(
            log.contains(&format!("\"event\":\"{event}\"")),
            "no {event} hook in the log:\n{log}"
        );
    }
}

/// Gemini's question (`ask_user`) answered with its second option, then a
/// shell approval, recorded from the first byte (the fixture
/// `tests/fixtures/gemini-<release>/question_then_shell.rec`, refreshed
/// with `CLAWMUX_UPDATE_FIXTURES=1`; `tests/detect/gemini_recorded.rs`
/// replays it): inside tmux, with notifications on (the test home's
/// settings, as `clawmux hooks install --agent gemini` writes them),
/// Gemini wraps its OSC 777 notifications in tmux's passthrough, and the
/// pane reads each as a signal: the question, the approval and the turn's
/// end.
#[test]
fn gemini_question_then_shell_recorded() {
    let gemini = gemini_required();
    let mut ask = steps::database_question();
    ask["questions"][0]["type"] = "choice".into();
    let script = vec![
        Turn::tool("ask_user", ask),
        Turn::tool(
            "run_shell_command",
            shell("touch made.txt", "Create a marker file"),
        ),
        Turn::text("Postgres it is."),
    ];
    let mut run = GeminiRun::start(&gemini, script);
    run.prompt("pick a database");
    run.wait_for("Which database should the shop use?");
    run.settle();
    run.keys(&["2"]);
    run.wait_for("Allow execution of [Shell]?");
    run.settle();
    run.keys(&["1"]);
    run.wait_for("Postgres it is.");
    // Its turn's end, said after the answer is drawn.
    run.wait_recorded("Gemini CLI session complete");
    let recording = run.finish();
    // As tmux's passthrough: `ESC P tmux; <the OSC, every ESC doubled> ESC \`.
    let wrapped = b"\x1bPtmux;\x1b\x1b]777;notify;";
    let bytes: Vec<u8> = (pane_output(&recording).into_iter())
        .flat_map(|(_, b)| b)
        .collect();
    assert!(
        bytes.windows(wrapped.len()).any(|w| w == wrapped),
        "no OSC 777 in tmux's passthrough in the output"
    );
    let notes = notifications(&recording);
    for (title, body) in [
        (
            "Gemini CLI needs your attention",
            "Answer requested by agent",
        ),
        ("Gemini CLI needs your attention", "Approval required"),
        ("Gemini CLI session complete", "Run finished"),
    ] {
        assert!(
            notes.iter().any(|(t, b)| t == title && b.starts_with(body)),
            "no {title:?} / {body:?} in {notes:?}"
        );
    }
    run.maybe_save_fixture("question_then_shell");
}

/// With its window title's state icons off (`ui.dynamicWindowTitle:
/// false`, the title no longer says ready, working or waiting), Gemini's
/// OSC 777 notifications are the state clawmux reads (the `gemini`
/// profile's `notification_states`): the approval's `Approval required`,
/// then `session complete` ending the turn, once. Without them no turn of
/// this Gemini ends: clawmux ends one only after the agent said it worked.
#[test]
fn gemini_notifications_end_turns_without_title_icons_through_serve() {
    let gemini = gemini_required();
    let script = vec![
        Turn::tool(
            "run_shell_command",
            shell("touch noted.txt", "Create a marker file"),
        ),
        Turn::text("Noted the marker file."),
    ];
    let api = FakeApi::start_paced(script, PACE).unwrap();
    let (home, _) = shop_home();
    let env = GeminiEnv::new(&api.base_url());
    env.write_settings(serde_json::json!({"ui": {"dynamicWindowTitle": false}}));
    let mut serve = serve_shop(&env.env_command(&gemini, &[]), home, "gemini");
    serve.say("make a noted file");
    let at = serve.wait(0, "== Approval needed ==");
    let at = serve.wait(at, "└─");
    assert_shell_approval(&serve.output(), "touch noted.txt");
    serve.say("/gsd:answer 1");
    let at = serve.wait(at, "== shop: make a noted file ==\n**Finished");
    let at = serve.wait(at, "Noted the marker file.");
    serve.wait(at, "└─");
    let out = serve.output();
    assert_eq!(finished(&out, "make a noted file"), 1, "{out}");
    assert!(
        serve.home.path().join("ws/shop/noted.txt").exists(),
        "{out}"
    );
    assert_eq!(api.exhausted(), 0, "{out}");
}

/// A session killed at the desk takes Gemini along, though Gemini outlives
/// the hangup tmux sends: left running, it would work on in the workspace
/// beside the agent a recovered session starts there.
#[test]
fn a_killed_session_ends_gemini_though_it_outlives_the_hangup() {
    let gemini = gemini_required();
    let (mut serve, api, _env) = start(&gemini, vec![Turn::text("The shop sells pears.")], PACE);
    steps::plain_answer(&mut serve, &api, STEP_TIMEOUT, "The shop sells pears.");
    let tmux = &serve._tmux;
    let pid = tmux.ok(&["display-message", "-p", "-t", "=cm-shop:", "#{pane_pid}"]);
    let pgid: u32 = pid.trim().parse().expect("the pane's process");
    assert!(!process_group(pgid).is_empty(), "Gemini runs");

    tmux.ok(&["kill-session", "-t", "=cm-shop"]);
    let deadline = std::time::Instant::now() + STEP_TIMEOUT;
    while !process_group(pgid).is_empty() {
        let left = process_group(pgid);
        assert!(
            std::time::Instant::now() < deadline,
            "Gemini's processes {left:?} outlived their session"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Gemini's question box in a short pane (15 rows): the box scrolls its
/// options and draws `▲` above and `▼` under them. Recorded from the first
/// byte (`tests/fixtures/gemini-<release>/question_short_pane.rec`,
/// refreshed with `CLAWMUX_UPDATE_FIXTURES=1`, replayed by
/// [`gemini_question_in_a_short_pane_replayed`]): the question read off it
/// is the question asked, never the scroll mark.
#[test]
fn gemini_question_in_a_short_pane_recorded() {
    let gemini = gemini_required();
    let mut ask = steps::database_question();
    ask["questions"][0]["type"] = "choice".into();
    let script = vec![Turn::tool("ask_user", ask), Turn::text("Postgres it is.")];
    let mut run = GeminiRun::start(&gemini, script);
    run.tmux
        .ok(&["resize-window", "-t", &run.target, "-x", "100", "-y", "15"]);
    run.settle();
    run.prompt("pick a database");
    run.wait_for("Answer Questions");
    let screen = run.wait_for("▼");
    assert!(screen.contains("▲"), "the options do not scroll:\n{screen}");
    run.settle();
    run.keys(&["2"]);
    run.wait_for("Postgres it is.");
    let recording = run.finish();
    run.maybe_save_fixture("question_short_pane");
    assert_eq!(
        questions(&recording),
        ["Which database should the shop use?"]
    );
}

/// The committed recording of [`gemini_question_in_a_short_pane_recorded`]
/// read by `clawmux detect --profile gemini`: one question, its text the
/// question asked (was `▲`, the scroll mark above the options), with the
/// two options the box shows.
#[test]
fn gemini_question_in_a_short_pane_replayed() {
    let path = crate::support::gemini::fixtures_dir().join("question_short_pane.rec");
    let recording = std::fs::read(&path).unwrap();
    assert_eq!(
        questions(&recording),
        ["Which database should the shop use?"]
    );
    let json = detections(&recording);
    let card = json
        .iter()
        .find(|d| d["kind"] == "approval")
        .expect("a question");
    let labels: Vec<&str> = (card["options"].as_array().unwrap().iter())
        .filter_map(|o| o["label"].as_str())
        .collect();
    assert_eq!(labels, ["SQLite", "Postgres"], "{card}");
}

/// What `clawmux detect --profile gemini` reads off a recording.
fn detections(recording: &[u8]) -> Vec<serde_json::Value> {
    use std::io::Write;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_clawmux"))
        .args(["detect", "--profile", "gemini"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(recording).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    (out.stdout.split(|b| *b == b'\n'))
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect()
}

/// The questions (approval kind `question`) read off a recording.
fn questions(recording: &[u8]) -> Vec<String> {
    (detections(recording).iter())
        .filter(|d| d["kind"] == "approval" && d["approval"] == "question")
        .filter_map(|d| d["question"].as_str().map(str::to_owned))
        .collect()
}

/// A question of four options in a 13-row pane: Gemini CLI 0.61.0's
/// `Answer Questions` box then shows one option at a time between its
/// scroll marks (`▲`, `● 1.  SQLite`, `▼`; `↓` moves to the next, wrapping
/// after `Enter a custom value`). Recorded from its first byte
/// (`tests/fixtures/gemini-<release>/question_one_option_shown.rec`,
/// refreshed with `CLAWMUX_UPDATE_FIXTURES=1`), answered `4` as the chat
/// would; replayed by [`gemini_question_showing_one_option_replayed`].
#[test]
fn gemini_question_showing_one_option_recorded() {
    let gemini = gemini_required();
    let script = redis_picked();
    let mut run = GeminiRun::start(&gemini, script);
    run.tmux
        .ok(&["resize-window", "-t", &run.target, "-x", "100", "-y", "13"]);
    run.settle();
    run.prompt("pick a database");
    run.wait_for("Answer Questions");
    run.settle();
    let screen = run.screen();
    assert!(
        screen.contains("● 1.  SQLite") && !screen.contains("2.  Postgres"),
        "not one option at a time:\n{screen}"
    );
    run.keys(&["4"]);
    run.wait_for("Redis it is.");
    let _ = run.finish();
    run.maybe_save_fixture("question_one_option_shown");
}

/// The same question through `serve`, the pane as short (13 rows: one
/// option shows, between `▲` and `▼`), with clawmux's hooks installed:
/// Gemini's `BeforeTool` hook of `ask_user` names every option, so the
/// card offers all four, and `/gsd:answer 4` picks one the pane never
/// showed, as Gemini takes a digit for any option.
#[test]
fn gemini_scrolled_question_offers_every_option_with_hooks_through_serve() {
    let gemini = gemini_required();
    let script = redis_picked();
    let api = FakeApi::start_paced(script, PACE).unwrap();
    let (home, _) = shop_home();
    let env = GeminiEnv::new(&api.base_url());
    env.install_hooks(std::path::Path::new(env!("CARGO_BIN_EXE_clawmux")));
    let agent = with_hook_home(&env.env_command(&gemini, &[]), home.path());
    let tmux = crate::support::tmux::TmuxServer::new();
    let mut serve = ConsoleServe::start_sized(&agent, home, tmux, "gemini", (100, 13));
    serve.say("/gsd:use shop");
    serve.say("pick a database");
    let at = serve.wait(0, "== Approval needed ==");
    let at = serve.wait(at, "[4] Redis");
    let card = serve.output()[..at]
        .rsplit("Approval needed")
        .next()
        .unwrap_or_default()
        .to_owned();
    for option in ["[1] SQLite", "[2] Postgres", "[3] MySQL"] {
        assert!(card.contains(option), "{option} not offered:\n{card}");
    }
    steps::database_answered(&mut serve, &api, at, "4", "Redis");
}

/// The database question with four options, then the model's words once
/// Redis is picked.
fn redis_picked() -> Vec<Turn> {
    vec![
        Turn::tool("ask_user", four_databases()),
        Turn::text("Redis it is."),
    ]
}

/// The database question with four options.
fn four_databases() -> serde_json::Value {
    serde_json::json!({"questions": [{
        "question": "Which database should the shop use?",
        "header": "Database",
        "type": "choice",
        "options": [
            {"label": "SQLite", "description": "One file"},
            {"label": "Postgres", "description": "A server"},
            {"label": "MySQL", "description": "Another server"},
            {"label": "Redis", "description": "In memory"},
        ],
    }]})
}

/// The committed recording of [`gemini_question_showing_one_option_recorded`]
/// read by `clawmux detect --profile gemini`: the question is carded (it
/// was not: one option on screen was no menu) with its own text, never the
/// scroll mark `▲`, the option the pane shows, and a note that the list
/// has more. The screen holds no more than that; the other options are in
/// the `ask_user` call itself, which Gemini's `BeforeTool` hook reports
/// (see [`gemini_scrolled_question_offers_every_option_with_hooks_through_serve`]).
#[test]
fn gemini_question_showing_one_option_replayed() {
    let path = crate::support::gemini::fixtures_dir().join("question_one_option_shown.rec");
    let recording = std::fs::read(&path).unwrap();
    assert_eq!(
        questions(&recording),
        ["Which database should the shop use?"]
    );
    let json = detections(&recording);
    let card = (json.iter())
        .find(|d| d["kind"] == "approval")
        .expect("a question");
    let labels: Vec<&str> = (card["options"].as_array().unwrap().iter())
        .filter_map(|o| o["label"].as_str())
        .collect();
    assert_eq!(labels, ["SQLite"], "{card}");
    let body = card["body"].as_str().unwrap_or_default();
    assert!(body.contains(clawmux::detect::SCROLLED_NOTE), "{card}");
    assert!(!card.to_string().contains("\"▲\""), "{card}");
}

/// The streamed answer card shows the answer as the screen settles it
/// while the fake model streams it in chunks: rows of the answer only,
/// never a cut-off frame of a row kept, nor the agent's chrome.
#[test]
fn gemini_streamed_card_shows_only_the_answer_through_serve() {
    let gemini = gemini_required();
    let script = vec![Turn::text(steps::STREAMED_ANSWER)];
    let (mut serve, api, _env) = start(&gemini, script, steps::STREAMED_PACE);
    steps::streamed_answer(&mut serve, &api, STEP_TIMEOUT);
}
