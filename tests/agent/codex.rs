//! `clawmux serve --console` driving the real Codex CLI (the release
//! `.ci/run` installs, `$CLAWMUX_CODEX`) against the fake model API's
//! Responses protocol: answers, approvals approved and denied, API errors
//! and an interrupt, each reaching the chat as one card.

use std::path::Path;
use std::time::Duration;

use clawmux::agentcheck::{FakeApi, Turn};

use crate::support::codex::{CodexEnv, codex_required, exec};

use super::serve::{
    ConsoleServe, cancel_stops, cards, finished, new_cards, serve_shop, shop_home, with_hook_home,
};
use super::steps;
use crate::support::claude::STEP_TIMEOUT;

/// A console daemon whose project `shop` runs Codex against `script`.
/// The project exists already (in the daemon's state), so the first chat
/// line is `/gsd:use shop`: Codex has no `/gsd:new-project` command and
/// leaves an unknown one in its input row.
pub(super) fn start(codex: &Path, script: Vec<Turn>) -> (ConsoleServe, FakeApi, CodexEnv) {
    start_paced(codex, script, Duration::from_millis(15))
}

/// [`start`] with `pace` between the fake API's streamed events.
fn start_paced(
    codex: &Path,
    script: Vec<Turn>,
    pace: Duration,
) -> (ConsoleServe, FakeApi, CodexEnv) {
    start_with(codex, script, pace, false)
}

/// [`start_paced`], with Codex's hooks running `clawmux hook` when `hooks`.
fn start_with(
    codex: &Path,
    script: Vec<Turn>,
    pace: Duration,
    hooks: bool,
) -> (ConsoleServe, FakeApi, CodexEnv) {
    let api = FakeApi::start_paced(script, pace).unwrap();
    let (home, workspace) = shop_home();
    let env = CodexEnv::new(&api.base_url(), &workspace);
    let mut agent = env.env_command(codex, &[]);
    if hooks {
        env.install_hooks(Path::new(env!("CARGO_BIN_EXE_clawmux")));
        agent = with_hook_home(&agent, home.path());
    }
    (serve_shop(&agent, home, "codex"), api, env)
}

#[test]
fn codex_answer_through_serve() {
    let codex = codex_required();
    let (mut serve, api, _env) = start(&codex, vec![Turn::text("The shop sells apples.")]);
    steps::plain_answer(&mut serve, &api, STEP_TIMEOUT, "The shop sells apples.");
}

#[test]
fn codex_approval_approved_through_serve() {
    let codex = codex_required();
    let script = vec![
        Turn::tool(
            "exec",
            exec("touch made-by-codex.txt", "Create a marker file"),
        ),
        Turn::text(steps::STREAMED_ANSWER),
    ];
    let (mut serve, api, _env) = start(&codex, script);
    serve.say("make a marker file");
    let at = serve.wait(0, "== Approval needed ==");
    serve.wait(at, "└─");
    let needles = [
        "Would you like to run the following command?",
        "touch made-by-codex.txt",
        "[1] Yes, proceed (y)",
        "[3] No, and tell Codex what to do differently (esc)",
    ];
    steps::one_card(&serve.output(), "== Approval needed ==", &needles);
    serve.say("/gsd:answer 1");
    steps::approved(&serve, &api, ("make a marker file", "made-by-codex.txt"));
}

#[test]
fn codex_approval_denied_through_serve() {
    let codex = codex_required();
    let script = vec![
        Turn::tool("exec", exec("touch denied.txt", "Create a file")),
        Turn::text("Should not come."),
    ];
    let (mut serve, api, _env) = start(&codex, script);
    serve.say("make a file");
    let at = serve.wait(0, "== Approval needed ==");
    let at = serve.wait(at, "└─");
    serve.say("/gsd:answer 3");
    let at = serve.wait(
        at,
        "console chose **No, and tell Codex what to do differently (esc)**",
    );
    let at = serve.wait(at, "== Stopped: shop: make a file ==");
    serve.wait(at, "└─");
    let out = serve.output();
    let all = cards(&out);
    let stopped = new_cards(&all, "== Stopped: shop: make a file ==");
    assert_eq!(stopped.len(), 1, "{out}");
    assert!(stopped[0].contains("■ Conversation interrupted"), "{out}");
    assert!(
        !serve.home.path().join("ws/shop/denied.txt").exists(),
        "{out}"
    );
    assert_eq!(new_cards(&all, "== Approval needed ==").len(), 1, "{out}");
    // Codex ends the turn itself; the model is not asked again.
    assert_eq!(api.scripted_requests().len(), 1, "{out}");
}

/// An API error Codex gives up on (after its bounded retries) ends the
/// turn with one `■` row: one error card with that row, the turn over.
/// `attempts`: the requests Codex makes before it gives up (measured).
fn http_error_is_reported(status: u16, attempts: u32, row: &str) {
    let codex = codex_required();
    let script = vec![
        Turn::error(status, "upstream exploded", attempts),
        Turn::text("Back again."),
    ];
    let (mut serve, api, _env) = start(&codex, script);
    steps::error_turn_once(&mut serve, &api, STEP_TIMEOUT, row, attempts as usize);
}

#[test]
fn codex_http_500_is_reported_through_serve() {
    http_error_is_reported(
        500,
        // Measured on 0.171: (request_max_retries + 1) x
        // (stream_max_retries + 1) requests for a 500.
        6,
        "■ We’re currently experiencing high demand",
    );
}

#[test]
fn codex_http_429_is_reported_through_serve() {
    http_error_is_reported(
        429,
        // Measured on 0.171: a 429 without `retry-after` is not retried.
        1,
        "■ exceeded retry limit, last status: 429 Too Many Requests",
    );
}

/// `/gsd:cancel` sends Codex its interrupt key (Escape) mid-answer: the
/// turn stops, reported once as stopped, and the stream is not finished.
#[test]
fn codex_interrupt_through_serve() {
    let codex = codex_required();
    let long = "word ".repeat(600);
    let (mut serve, _api, _env) =
        start_paced(&codex, vec![Turn::text(&long)], Duration::from_millis(300));
    serve.say("talk a lot");
    let at = serve.wait(0, "== shop: talk a lot ==");
    let at = serve.wait(at, "└─");
    // Until the answer streams (Codex is busy by its state sequence).
    std::thread::sleep(Duration::from_secs(2));
    let stopped = cancel_stops(&mut serve, at, "talk a lot", "Esc");
    assert!(stopped.contains("■ Conversation interrupted"), "{stopped}");
}

/// With clawmux's hooks and `notify` installed, the result is Codex's own
/// record of the answer (`last-assistant-message`), markdown kept, once:
/// the screen draws `**apples**` as bold and `pears` without backticks.
#[test]
fn codex_answer_from_its_record_through_serve() {
    let codex = codex_required();
    let answer = "The shop sells **apples** and `pears`.";
    let script = vec![Turn::text(answer)];
    let (mut serve, api, _env) = start_with(&codex, script, Duration::from_millis(15), true);
    steps::plain_answer(&mut serve, &api, STEP_TIMEOUT, answer);
}

/// An API error with clawmux's hooks installed: one error card, no result.
#[test]
fn codex_http_500_with_hooks_is_one_error_through_serve() {
    let codex = codex_required();
    let script = vec![
        Turn::error(500, "upstream exploded", 6),
        Turn::text("Back again."),
    ];
    let (mut serve, api, _env) = start_with(&codex, script, Duration::from_millis(15), true);
    let row = "■ We’re currently experiencing high demand";
    steps::error_turn_once(&mut serve, &api, STEP_TIMEOUT, row, 6);
}

/// Codex's own hooks (`hooks.json`, Claude Code's schema) and its `notify`
/// program, both written by `clawmux hooks install --agent codex`, reach
/// the daemon through `clawmux hook`, the path Claude Code's use: the
/// permission hook agrees with the dialog read off the screen (one approval
/// card, no "Check this prompt"), and the turn ends once although its end
/// is told twice (the `Stop` hook and `notify`'s `agent-turn-complete`).
#[test]
fn codex_hooks_through_serve() {
    let codex = codex_required();
    let script = vec![
        Turn::tool("exec", exec("touch hooked.txt", "Create a file")),
        Turn::text(steps::STREAMED_ANSWER),
    ];
    let (mut serve, _api, _env) = start_with(&codex, script, Duration::from_millis(15), true);
    serve.say("make a hooked file");
    let at = serve.wait(0, "== Approval needed ==");
    serve.wait(at, "└─");
    serve.say("/gsd:answer 1");
    steps::streamed_card_is_the_answer(&serve, "make a hooked file");
    let out = serve.output();
    let all = cards(&out);
    assert_eq!(new_cards(&all, "== Approval needed ==").len(), 1, "{out}");
    assert!(new_cards(&all, "Check this prompt").is_empty(), "{out}");
    assert_eq!(finished(&out, "make a hooked file"), 1, "{out}");
    let tail = std::process::Command::new(env!("CARGO_BIN_EXE_clawmux"))
        .args(["tail", "--kind", "hook", "--json"])
        .env("CLAWMUX_HOME", serve.home.path())
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&tail.stdout);
    for event in ["PermissionRequest", "Stop"] {
        assert!(
            log.contains(&format!("\"event\":\"{event}\"")),
            "no {event} hook in the log:\n{log}"
        );
    }
    // One turn, one notify (its Stop hooks are counted above).
    assert_eq!(
        log.matches("\"sent_as\":\"agent-turn-complete\"").count(),
        1,
        "one notify for the turn:\n{log}"
    );
}

/// Codex's question picker (its `request_user_input` tool, offered in
/// plan mode and, with `features.default_mode_request_user_input`, in the
/// default mode used here): `Question 1/1` over the question and its
/// numbered options is one question card with every option (Codex adds
/// `None of the above`), and `/gsd:answer 2` picks Postgres.
#[test]
fn codex_question_through_serve() {
    let codex = codex_required();
    let mut ask = steps::database_question();
    ask["questions"][0]["id"] = "database".into();
    let script = vec![
        Turn::tool("request_user_input", ask),
        Turn::text("Postgres it is."),
    ];
    let api = FakeApi::start_paced(script, Duration::from_millis(15)).unwrap();
    let (home, workspace) = shop_home();
    let env = CodexEnv::new(&api.base_url(), &workspace);
    let feature = "features.default_mode_request_user_input=true";
    let agent = env.env_command(&codex, &["-c", feature]);
    let mut serve = serve_shop(&agent, home, "codex");
    steps::database_chosen(&mut serve, &api, STEP_TIMEOUT, "None of the above");
}

/// Codex's question picker in its plan collaboration mode, where
/// `request_user_input` is offered without a feature flag. The person
/// switches to it at the desk with Shift+Tab once Codex answered a first
/// turn (its footer then says `Plan mode (shift+tab to cycle)`): the
/// picker it draws there is the default mode's (`Question 1/1`, the
/// options, `None of the above`), one question card, `/gsd:answer 2`
/// picks Postgres. (`/plan` from chat switches too, but Codex draws no
/// turn for it, and the command is never reported ended.)
#[test]
fn codex_plan_mode_question_through_serve() {
    let codex = codex_required();
    let mut ask = steps::database_question();
    ask["questions"][0]["id"] = "database".into();
    let script = vec![
        Turn::text("Ready."),
        Turn::tool("request_user_input", ask),
        Turn::text("Postgres it is."),
    ];
    let (mut serve, api, _env) = start(&codex, script);
    serve.say("are you ready");
    let at = serve.wait(0, "== shop: are you ready ==\n**Finished");
    let at = serve.wait(at, "└─");
    serve._tmux.ok(&["send-keys", "-t", "cm-shop", "BTab"]);
    let mode = "Plan mode (shift+tab to cycle)";
    (serve._tmux).wait_for_screen("cm-shop", mode, STEP_TIMEOUT);
    serve.say("pick a database");
    let at = serve.wait(at, "== Approval needed ==");
    let at = serve.wait(at, "└─");
    steps::one_card(
        &serve.output(),
        "== Approval needed ==",
        &[
            "Which database should the shop use?",
            "[1] SQLite",
            "[2] Postgres",
            "[3] None of the above",
        ],
    );
    // The picker hides the footer; the transcript says the mode.
    let screen = serve._tmux.capture("cm-shop");
    assert!(
        screen.contains("for Plan mode."),
        "not in plan mode:\n{screen}"
    );
    serve.say("/gsd:answer 2");
    let at = serve.wait(at, "Postgres it is.");
    serve.wait(at, "└─");
    let out = serve.output();
    assert_eq!(finished(&out, "pick a database"), 1, "{out}");
    let results = api.scripted_requests()[2].tool_results().join("\n");
    assert!(results.contains("Postgres"), "{results}");
    assert!(!results.contains("SQLite"), "{results}");
}

/// `/plan` from chat: Codex switches to plan mode with no model turn (no
/// busy row, no state); the command is still reported over once, and the
/// next command is Codex's next turn, not queued for ever behind it.
#[test]
fn codex_plan_command_from_chat_ends() {
    let codex = codex_required();
    let (mut serve, api, _env) = start(&codex, vec![Turn::text("Planning now.")]);
    serve.say("/plan");
    let at = serve.wait(0, "== shop: /plan ==\n**Finished");
    let at = serve.wait(at, "└─");
    let screen = serve._tmux.capture("cm-shop");
    assert!(screen.contains("for Plan mode."), "{screen}");
    serve.say("make a plan");
    let at = serve.wait(at, "Planning now.");
    serve.wait(at, "└─");
    let out = serve.output();
    assert_eq!(finished(&out, "/plan"), 1, "{out}");
    assert_eq!(finished(&out, "make a plan"), 1, "{out}");
    assert_eq!(api.scripted_requests().len(), 1, "{out}");
}

/// The streamed answer card shows the answer as the screen settles it
/// while the fake model streams it in chunks: rows of the answer only,
/// never a cut-off frame of a row kept, nor the agent's chrome.
#[test]
fn codex_streamed_card_shows_only_the_answer_through_serve() {
    let codex = codex_required();
    let script = vec![Turn::text(steps::STREAMED_ANSWER)];
    let (mut serve, api, _env) = start_paced(&codex, script, steps::STREAMED_PACE);
    steps::streamed_answer(&mut serve, &api, STEP_TIMEOUT);
}
