//! `clawmux serve --console` driving the real OpenCode (the release
//! `.ci/run` installs, `$CLAWMUX_OPENCODE`) against the fake model API's
//! Chat Completions protocol: an answer, a permission approved and one
//! rejected (its buttons answered with Left/Right and Enter), a question,
//! API errors (a 400 that ends the turn; 500 and 429, which OpenCode
//! retries for ever: reported stuck, then interrupted) and an interrupt,
//! each reaching the chat as one card; and its events reaching the
//! daemon through the plugin clawmux writes.

use std::path::Path;
use std::time::Duration;

use clawmux::agentcheck::{FakeApi, Turn};

use crate::support::opencode::{OpenCodeEnv, bash, opencode_required};

use super::serve::{
    ConsoleServe, cancel_stops, cards, finished, new_cards, result_card, serve_shop, shop_home,
    with_hook_home,
};
use super::steps;

/// A console daemon whose project `shop` runs OpenCode against `script`,
/// `pace` between streamed chunks, with the clawmux plugin when `plugin`.
pub(super) fn start(
    (opencode, seed): &(std::path::PathBuf, std::path::PathBuf),
    script: Vec<Turn>,
    pace: Duration,
    plugin: bool,
) -> (ConsoleServe, FakeApi, OpenCodeEnv) {
    let api = FakeApi::start_paced(script, pace).unwrap();
    let (home, _) = shop_home();
    let env = OpenCodeEnv::new(&api.base_url(), seed);
    let mut agent = env.env_command(opencode);
    if plugin {
        env.install_plugin(Path::new(env!("CARGO_BIN_EXE_clawmux")));
        agent = with_hook_home(&agent, home.path());
    }
    (serve_shop(&agent, home, "opencode"), api, env)
}

const PACE: Duration = Duration::from_millis(15);

/// Longest wait for OpenCode to start and do its first step: it draws its
/// first screen 15 to 80 s after it starts here (with a plugin, longer),
/// more than one step's wait.
const FIRST_STEP: Duration = Duration::from_secs(240);

/// [`ConsoleServe::wait`] from the start, with [`FIRST_STEP`] (the
/// command is typed once OpenCode is ready).
fn wait_first(serve: &ConsoleServe, needle: &str) -> usize {
    serve.wait_within(0, needle, FIRST_STEP)
}

/// The exact answer, as the other agents' plain answers are checked:
/// against the streaming fake OpenCode's result card held its busy bar
/// frames, sidebar and turn-end rows around the answer (its line log);
/// it is read off the settled screen's panels.
#[test]
fn opencode_answer_through_serve() {
    let oc = opencode_required();
    let (mut serve, api, _env) = start(&oc, vec![Turn::text("The shop sells pears.")], PACE, false);
    steps::plain_answer(&mut serve, &api, FIRST_STEP, "The shop sells pears.");
    // The title request was a side request, not taken from the script.
    assert!(api.requests().iter().any(|r| !r.scripted));
}

/// The approval card OpenCode's permission dialog gives, checked exactly.
/// Fresh starts in [`opencode_first_turn_right_after_start_up_is_not_stopped`]:
/// the sidebar stopped 2 first turns in 3, so three starts all finishing
/// would have been 1 chance in 27 before the fix.
const FIRST_TURN_STARTS: usize = 3;

/// The first prompt said the moment the daemon starts (typed once OpenCode
/// is ready, its sidebar on this 160-column pane): the turn finishes with
/// its answer, never `Stopped after 0s` on the sidebar's `LSPs are
/// disabled` while OpenCode is still busy. Each start is a fresh OpenCode.
#[test]
fn opencode_first_turn_right_after_start_up_is_not_stopped() {
    let oc = opencode_required();
    let title = "tell me what the shop sells";
    for start_no in 1..=FIRST_TURN_STARTS {
        let answer = format!("The shop sells pears, start {start_no}.");
        let (mut serve, api, _env) = start(&oc, vec![Turn::text(&answer)], PACE, false);
        serve.say(title);
        // Either way the turn ends: `== shop: …` or `== Stopped: shop: …`.
        let at = wait_first(&serve, &format!("shop: {title} =="));
        let out = serve.output();
        assert!(
            !out.contains(&format!("== Stopped: shop: {title} ==")),
            "start {start_no}: stopped early:\n{out}"
        );
        let at = serve.wait(at, &answer);
        serve.wait(at, "└─");
        let out = serve.output();
        assert_eq!(finished(&out, title), 1, "start {start_no}:\n{out}");
        let card = result_card(&out, title);
        assert_eq!(steps::answer_text(&card), answer, "{out}");
        assert_eq!(api.scripted_requests().len(), 1, "{out}");
    }
}

fn assert_bash_approval(out: &str, cmd: &str) {
    let needles = [
        "Permission required",
        "# Shell command",
        cmd,
        "[1] Allow once",
        "[2] Allow always",
        "[3] Reject",
    ];
    steps::one_card(out, "== Approval needed ==", &needles);
}

#[test]
fn opencode_approval_approved_through_serve() {
    let oc = opencode_required();
    let script = vec![
        Turn::tool(
            "bash",
            bash("touch made-by-opencode.txt", "Create a marker file"),
        ),
        Turn::text(steps::STREAMED_ANSWER),
    ];
    let (mut serve, api, _env) = start(&oc, script, PACE, false);
    serve.say("make a marker file");
    let at = wait_first(&serve, "== Approval needed ==");
    serve.wait(at, "└─");
    assert_bash_approval(&serve.output(), "$ touch made-by-opencode.txt");
    serve.say("/gsd:answer 1");
    steps::approved(&serve, &api, ("make a marker file", "made-by-opencode.txt"));
}

/// Reject is the third button: two Right presses from the selected first
/// one, then Enter. OpenCode ends the turn without a word (no time on its
/// closing row): reported as stopped, and the model is not asked again.
#[test]
fn opencode_approval_rejected_through_serve() {
    let oc = opencode_required();
    let script = vec![
        Turn::tool("bash", bash("touch denied.txt", "Create a file")),
        Turn::text("Should not come."),
    ];
    let (mut serve, api, _env) = start(&oc, script, PACE, false);
    serve.say("make a file");
    let at = wait_first(&serve, "== Approval needed ==");
    let at = serve.wait(at, "└─");
    assert_bash_approval(&serve.output(), "$ touch denied.txt");
    serve.say("/gsd:answer 3");
    let at = serve.wait(at, "console chose **Reject**");
    let at = serve.wait(at, "== Stopped: shop: make a file ==");
    serve.wait(at, "└─");
    let out = serve.output();
    assert_eq!(
        new_cards(&cards(&out), "== Stopped: shop: make a file ==").len(),
        1,
        "{out}"
    );
    assert!(
        !serve.home.path().join("ws/shop/denied.txt").exists(),
        "{out}"
    );
    assert_eq!(finished(&out, "make a file"), 0, "{out}");
    assert_eq!(api.scripted_requests().len(), 1, "{out}");
}

/// OpenCode's question tool (`OPENCODE_ENABLE_QUESTION_TOOL=1`): one
/// question card with the options as drawn (and the `Type your own
/// answer` row OpenCode adds); a digit answers at once.
#[test]
fn opencode_question_through_serve() {
    let oc = opencode_required();
    let script = vec![
        Turn::tool("question", steps::database_question()),
        Turn::text("Postgres it is."),
    ];
    let (mut serve, api, _env) = start(&oc, script, PACE, false);
    steps::database_chosen(&mut serve, &api, FIRST_STEP, "Type your own answer");
}

/// A 400 (`invalid_request_error`) is not retried: OpenCode draws it in
/// an error box and ends the turn, one error card and no result card;
/// with the plugin too (its `session.idle` comes before `session.error`
/// and used to end the turn as finished, the error card never sent).
fn http_400_is_one_error(plugin: bool) {
    let oc = opencode_required();
    let script = vec![
        Turn::error(400, "the request was malformed", 1),
        Turn::text("Back again."),
    ];
    let (mut serve, api, _env) = start(&oc, script, PACE, plugin);
    serve.say("hello");
    let at = wait_first(&serve, "== The agent reported an error ==");
    let at = serve.wait(at, "└─");
    let at = serve.wait(at, "== shop: hello ==");
    let at = serve.wait(at, "└─");
    let out = serve.output();
    let log = std::fs::read_to_string(serve.home.path().join("serve.log")).unwrap_or_default();
    let out = format!("{out}\nserve log:\n{log}");
    let all = cards(&out);
    let errors = new_cards(&all, "== The agent reported an error ==");
    assert_eq!(errors.len(), 1, "{out}");
    assert!(
        errors[0].contains("the request was malformed"),
        "{}",
        errors[0]
    );
    assert_eq!(finished(&out, "hello"), 0, "{out}");
    assert_eq!(api.scripted_requests().len(), 1, "{out}");
    // The turn is over: the next message is a turn of its own.
    serve.say("again");
    let at = serve.wait(at, "== shop: again ==\n**Finished");
    serve.wait(at, "Back again.");
    assert_eq!(api.scripted_requests().len(), 2);
    let out = serve.output();
    assert_eq!(
        new_cards(&cards(&out), "reported an error").len(),
        1,
        "{out}"
    );
    assert_eq!(finished(&out, "hello"), 0, "{out}");
}

#[test]
fn opencode_http_400_is_reported_through_serve() {
    http_400_is_one_error(false);
}

#[test]
fn opencode_http_400_with_the_plugin_is_one_error_through_serve() {
    http_400_is_one_error(true);
}

/// OpenCode retries a 500 or 429 for ever (`[retrying in 8s attempt
/// #3]` in its busy bar): the chat is told the turn is stuck, once, on a
/// status card whose Interrupt button (Escape twice) ends it, reported as
/// stopped, and the retrying stops.
fn stuck_retry_is_reported_and_interrupted(status: u16) {
    let oc = opencode_required();
    let script = vec![Turn::error(status, "upstream trouble", 10_000)];
    let (mut serve, api, _env) = start(&oc, script, PACE, false);
    let stuck = ("stuck: the call failed 3 times or more (retrying)", 3);
    let stopped = steps::stuck_then_stopped(&mut serve, &api, FIRST_STEP, stuck, "Esc, Esc");
    assert!(stopped.contains("▣  Build · Fake Model"), "{stopped}");
}

#[test]
fn opencode_http_500_stuck_is_reported_and_interrupted_through_serve() {
    stuck_retry_is_reported_and_interrupted(500);
}

#[test]
fn opencode_http_429_stuck_is_reported_and_interrupted_through_serve() {
    stuck_retry_is_reported_and_interrupted(429);
}

/// `/gsd:cancel` mid-answer: Escape twice stops the stream, reported once
/// as stopped, never as finished.
#[test]
fn opencode_interrupt_through_serve() {
    let oc = opencode_required();
    let long = steps::long_answer();
    let (mut serve, api, _env) = start(
        &oc,
        vec![Turn::text(&long)],
        Duration::from_millis(300),
        false,
    );
    serve.say("talk a lot");
    let at = wait_first(&serve, "== shop: talk a lot ==");
    let at = serve.wait(at, "└─");
    steps::wait_requests(&api, 1);
    let stopped = cancel_stops(&mut serve, at, "talk a lot", "Esc, Esc");
    assert!(stopped.contains("▣  Build · Fake Model"), "{stopped}");
}

/// The plugin clawmux writes forwards OpenCode's events to `clawmux
/// hook`, the path Claude Code's hooks take: the permission is a
/// `permission_prompt` notification, the finished turn a `Stop`, the rest
/// logged by name; one approval card, the turn's end reported once.
#[test]
fn opencode_plugin_events_reach_the_daemon() {
    let oc = opencode_required();
    let script = vec![
        Turn::tool("bash", bash("touch hooked.txt", "Create a file")),
        Turn::text(steps::STREAMED_ANSWER),
    ];
    let (mut serve, _api, _env) = start(&oc, script, PACE, true);
    serve.say("make a hooked file");
    // With a plugin in its config OpenCode first tries to install the
    // plugin's dependencies, which costs it more than a minute offline
    // (measured 79 s) before its first screen.
    let at = wait_first(&serve, "== Approval needed ==");
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
    let deadline = std::time::Instant::now() + crate::support::claude::STEP_TIMEOUT;
    loop {
        let tail = std::process::Command::new(env!("CARGO_BIN_EXE_clawmux"))
            .args(["tail", "--kind", "hook", "--json"])
            .env("CLAWMUX_HOME", serve.home.path())
            .output()
            .unwrap();
        let log = String::from_utf8_lossy(&tail.stdout).into_owned();
        let missing: Vec<&str> = [
            "Notification",
            "Stop",
            "session.status",
            "permission.replied",
        ]
        .into_iter()
        .filter(|e| !log.contains(&format!("\"event\":\"{e}\"")))
        .collect();
        if missing.is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no {missing:?} hook in the log:\n{log}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The streamed answer card shows the answer as the screen settles it
/// while the fake model streams it in chunks: rows of the answer only,
/// never a cut-off frame of a row kept, nor the agent's chrome.
#[test]
fn opencode_streamed_card_shows_only_the_answer_through_serve() {
    let oc = opencode_required();
    let script = vec![Turn::text(steps::STREAMED_ANSWER)];
    let (mut serve, api, _env) = start(&oc, script, steps::STREAMED_PACE, false);
    steps::streamed_answer(&mut serve, &api, FIRST_STEP);
}
