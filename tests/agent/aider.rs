//! `clawmux serve --console` driving the real Aider (the release `.ci/run`
//! installs, `$CLAWMUX_AIDER`) against the fake model API's Chat
//! Completions protocol: an answer, an edit that creates a file (approved),
//! a shell command approved and one denied, API errors (retried, then
//! reported) and an interrupt, each reaching the chat as one card; and
//! Aider's notifications command, which clawmux adds when it starts Aider,
//! reaching the daemon as a hook.

use std::path::Path;
use std::time::Duration;

use clawmux::agentcheck::{FakeApi, Turn};

use crate::support::aider::{
    AiderEnv, AiderRun, aider_required, create_file, git_workspace, shell_reply,
};

use super::serve::{
    ConsoleServe, cancel_stops, cards, finished, new_cards, serve_shop, shop_home, with_hook_home,
};
use super::steps;
use crate::support::claude::STEP_TIMEOUT;

const PACE: Duration = Duration::from_millis(15);

/// Longest Aider may take to give up on an API error: it retries with
/// doubling waits, about 64 s of them (measured), then prints the error.
const RETRIES_TIMEOUT: Duration = Duration::from_secs(240);

/// A console daemon whose project `shop` (a git repository) runs Aider
/// against `script`. The project exists already (in the daemon's state),
/// so the first chat line is `/gsd:use shop`.
pub(super) fn start(
    aider: &Path,
    script: Vec<Turn>,
    pace: Duration,
) -> (ConsoleServe, FakeApi, AiderEnv) {
    start_with(aider, script, pace, false)
}

/// [`start`], with `CLAWMUX_HOME` in Aider's environment when `hooks`, so
/// the notifications command clawmux adds finds the daemon.
fn start_with(
    aider: &Path,
    script: Vec<Turn>,
    pace: Duration,
    hooks: bool,
) -> (ConsoleServe, FakeApi, AiderEnv) {
    start_in(aider, script, pace, hooks, &[])
}

/// [`start_with`] in a repository that also holds `files` (committed):
/// Aider offers to add a file its answer names.
fn start_in(
    aider: &Path,
    script: Vec<Turn>,
    pace: Duration,
    hooks: bool,
    files: &[(&str, &str)],
) -> (ConsoleServe, FakeApi, AiderEnv) {
    let api = FakeApi::start_paced(script, pace).unwrap();
    let (home, workspace) = shop_home();
    git_workspace(&workspace);
    for (name, text) in files {
        std::fs::write(workspace.join(name), text).unwrap();
        for args in [&["add", name][..], &["commit", "-q", "-m", name]] {
            let ok = std::process::Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@t"])
                .args(args)
                .current_dir(&workspace)
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "git {args:?}");
        }
    }
    let env = AiderEnv::new(&api.base_url());
    let mut agent = env.env_command(aider);
    if hooks {
        agent = with_hook_home(&agent, home.path());
    }
    (serve_shop(&agent, home, "aider"), api, env)
}

/// The one approval card so far, checked for `needles`.
fn one_approval(out: &str, needles: &[&str]) {
    steps::one_card(out, "== Approval needed ==", needles);
}

#[test]
fn aider_answer_through_serve() {
    let aider = aider_required();
    let (mut serve, api, _env) = start(&aider, vec![Turn::text("The shop sells plums.")], PACE);
    steps::plain_answer(&mut serve, &api, STEP_TIMEOUT, "The shop sells plums.");
}

/// An answer in markdown reaches the chat as Aider recorded it
/// (`.aider.chat.history.md`): heading, bold and list marks kept, where
/// the screen shows them rendered (a centred title, bold text, `•`).
#[test]
fn aider_answer_keeps_its_markdown_through_serve() {
    let aider = aider_required();
    let answer = "# Prices\n\nThe shop sells:\n\n- **plums** at 2 coins\n- *figs* at 3 coins";
    let (mut serve, api, _env) = start(&aider, vec![Turn::text(answer)], PACE);
    steps::plain_answer(&mut serve, &api, STEP_TIMEOUT, answer);
}

/// An edit creating a file: `Create new file? (Y)es/(N)o [Yes]:` is one
/// card with Aider's two answers; `yes` (typed with Enter) creates it and
/// Aider commits it (its commit message is a side request).
#[test]
fn aider_new_file_approved_through_serve() {
    let aider = aider_required();
    let script = vec![Turn::text(&create_file("notes.txt", "hello from aider"))];
    let (mut serve, api, _env) = start(&aider, script, PACE);
    serve.say("write the notes");
    let at = serve.wait(0, "== Approval needed ==");
    let at = serve.wait(at, "└─");
    let out = serve.output();
    one_approval(
        &out,
        &[
            "Create new file? (Y)es/(N)o [Yes]:",
            "[1] Yes",
            "[2] No",
            "/gsd:answer yes|no",
        ],
    );
    serve.say("/gsd:answer yes");
    let at = serve.wait(at, "== shop: write the notes ==\n**Finished");
    serve.wait(at, "└─");
    let out = serve.output();
    let notes = serve.home.path().join("ws/shop/notes.txt");
    assert_eq!(
        std::fs::read_to_string(&notes).unwrap_or_default(),
        "hello from aider\n",
        "{out}"
    );
    assert_eq!(finished(&out, "write the notes"), 1, "{out}");
    assert_eq!(api.scripted_requests().len(), 1, "{out}");
    // The commit message was asked for, and not from the script.
    assert!(api.requests().iter().any(|r| !r.scripted), "{out}");
    assert_eq!(api.exhausted(), 0);
}

/// `Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]:`: one card with
/// the three answers; `answer` reaches Aider and decides whether the
/// command runs.
fn shell_command(answer: &str, runs: bool) {
    let aider = aider_required();
    let script = vec![Turn::text(&shell_reply("touch made-by-aider.txt"))];
    let (mut serve, api, _env) = start(&aider, script, PACE);
    serve.say("make a marker file");
    let at = serve.wait(0, "== Approval needed ==");
    let at = serve.wait(at, "└─");
    let out = serve.output();
    one_approval(
        &out,
        &[
            "Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]:",
            // The command, from the row Aider prints above its question.
            "touch made-by-aider.txt",
            "[1] Yes",
            "[2] No",
            "[3] Don't ask again",
            "/gsd:answer yes|no|don't",
        ],
    );
    serve.say(&format!("/gsd:answer {answer}"));
    let at = serve.wait(at, "== shop: make a marker file ==\n**Finished");
    serve.wait(at, "└─");
    let out = serve.output();
    let pane = serve._tmux.run(&["capture-pane", "-p", "-t", "cm-shop"]);
    assert_eq!(
        serve.home.path().join("ws/shop/made-by-aider.txt").exists(),
        runs,
        "{out}\npane:\n{}",
        String::from_utf8_lossy(&pane.stdout)
    );
    assert_eq!(finished(&out, "make a marker file"), 1, "{out}");
    assert_eq!(
        new_cards(&cards(&out), "== Approval needed ==").len(),
        1,
        "{out}"
    );
    assert_eq!(api.scripted_requests().len(), 1, "{out}");
}

#[test]
fn aider_shell_command_approved_through_serve() {
    shell_command("yes", true);
}

#[test]
fn aider_shell_command_denied_through_serve() {
    shell_command("no", false);
}

/// An API error: Aider retries (a 400 not at all, a 500 or 429 with
/// doubling waits for about a minute), then prints the error and its
/// prompt: one error card, the turn over.
fn http_error_is_reported(status: u16, row: &str, hooks: bool) {
    let aider = aider_required();
    let script = vec![Turn::error(status, "upstream exploded", 1000)];
    let (mut serve, api, _env) = start_with(&aider, script, PACE, hooks);
    serve.say("hello");
    // Aider's own retries (doubling waits up to a minute) outlast one step.
    let deadline = std::time::Instant::now() + RETRIES_TIMEOUT;
    while !serve.output().contains("== The agent reported an error ==") {
        assert!(std::time::Instant::now() < deadline, "{}", serve.output());
        std::thread::sleep(Duration::from_millis(100));
    }
    let at = serve.wait(0, "== The agent reported an error ==");
    let at = serve.wait(at, "└─");
    let at = serve.wait(at, "Failed after");
    serve.wait(at, "└─");
    let out = serve.output();
    let all = cards(&out);
    let errors = new_cards(&all, "== The agent reported an error ==");
    assert_eq!(errors.len(), 1, "{out}");
    // One error card and nothing else: no "Finished", no result card.
    assert_eq!(finished(&out, "hello"), 0, "{out}");
    assert!(errors[0].contains(row), "{row:?} not in\n{}", errors[0]);
    assert!(errors[0].contains("upstream exploded"), "{}", errors[0]);
    assert!(!api.scripted_requests().is_empty());
}

#[test]
fn aider_http_400_is_reported_through_serve() {
    http_error_is_reported(400, "litellm.BadRequestError:", false);
}

/// The same with clawmux's notifications command in Aider's environment:
/// Aider says it waits once the error is printed, and that is no result.
#[test]
fn aider_http_400_with_notifications_is_one_error_through_serve() {
    http_error_is_reported(400, "litellm.BadRequestError:", true);
}

#[test]
fn aider_http_500_is_reported_through_serve() {
    http_error_is_reported(500, "litellm.InternalServerError:", false);
}

#[test]
fn aider_http_429_is_reported_through_serve() {
    http_error_is_reported(429, "litellm.RateLimitError:", false);
}

/// `Add file to the chat? (Y)es/(N)o/(D)on't ask again [Yes]:`, asked when
/// an answer names a file of the repository not in the chat: one card
/// naming the file with every option, `Don't ask again` included, each
/// answerable by the number shown (`answer`). Yes adds the file and Aider
/// asks the model again; the result is both replies as Aider recorded
/// them. Don't ask again adds nothing.
fn add_file(answer: &str, added: bool) {
    let aider = aider_required();
    let mut script = vec![Turn::text("The prices are in menu.txt.")];
    if added {
        script.push(Turn::text("The menu lists plums at 2 coins."));
    }
    let files = [("menu.txt", "plums 2\n")];
    let (mut serve, api, _env) = start_in(&aider, script, PACE, false, &files);
    serve.say("where are the prices?");
    let at = serve.wait(0, "== Approval needed ==");
    let at = serve.wait(at, "└─");
    let out = serve.output();
    one_approval(
        &out,
        &[
            "Add file to the chat? (Y)es/(N)o/(D)on't ask again [Yes]:",
            "menu.txt",
            "[1] Yes",
            "[2] No",
            "[3] Don't ask again",
            "/gsd:answer yes|no|don't",
        ],
    );
    serve.say(&format!("/gsd:answer {answer}"));
    let at = serve.wait(at, "== shop: where are the prices? ==\n**Finished");
    let last = if added { "at 2 coins." } else { "in menu.txt." };
    let at = serve.wait(at, last);
    serve.wait(at, "└─");
    let out = serve.output();
    assert_eq!(finished(&out, "where are the prices?"), 1, "{out}");
    let card = super::serve::result_card(&out, "where are the prices?");
    let expected = if added {
        "The prices are in menu.txt. The menu lists plums at 2 coins."
    } else {
        "The prices are in menu.txt."
    };
    assert_eq!(steps::answer_text(&card), expected, "{card}");
    assert_eq!(api.scripted_requests().len(), if added { 2 } else { 1 });
    assert!(
        new_cards(&cards(&out), "reported an error").is_empty(),
        "{out}"
    );
}

#[test]
fn aider_add_file_answered_by_number_through_serve() {
    add_file("1", true);
}

#[test]
fn aider_add_file_dont_ask_again_by_number_through_serve() {
    add_file("3", false);
}

#[test]
fn aider_add_file_answered_by_key_through_serve() {
    add_file("yes", true);
}

/// A 429 Aider retries (the OpenAI client retries it twice itself, so
/// three in a row reach Aider once), then the answer: no error card, the
/// answer is the result, once.
#[test]
fn aider_retried_429_then_answer_is_one_result_through_serve() {
    let aider = aider_required();
    let script = vec![
        Turn::error(429, "slow down", 3),
        Turn::text("Hello after the wait."),
    ];
    let (mut serve, api, _env) = start(&aider, script, PACE);
    serve.say("hello");
    let at = serve.wait(0, "== shop: hello ==\n**Finished");
    let at = serve.wait(at, "Hello after the wait.");
    serve.wait(at, "└─");
    let out = serve.output();
    let pane = serve._tmux.run(&["capture-pane", "-p", "-t", "cm-shop"]);
    let pane = String::from_utf8_lossy(&pane.stdout);
    assert!(pane.contains("Retrying in 0.2 seconds..."), "{pane}");
    assert!(
        new_cards(&cards(&out), "reported an error").is_empty(),
        "{out}"
    );
    assert_eq!(finished(&out, "hello"), 1, "{out}");
    let card = super::serve::result_card(&out, "hello");
    assert_eq!(steps::answer_text(&card), "Hello after the wait.", "{card}");
    assert_eq!(api.remaining(), 0, "{out}");
}

/// `/gsd:cancel` sends Ctrl-C mid-answer: Aider stops the stream and
/// prints its prompt without a token count: reported once as stopped,
/// never as finished.
#[test]
fn aider_interrupt_through_serve() {
    let aider = aider_required();
    let long: String = (1..3000).map(|n| format!("fact {n} ")).collect();
    let (mut serve, api, _env) = start(&aider, vec![Turn::text(&long)], Duration::from_millis(300));
    serve.say("talk a lot");
    let at = serve.wait(0, "== shop: talk a lot ==");
    let at = serve.wait(at, "└─");
    steps::wait_requests(&api, 1);
    cancel_stops(&mut serve, at, "talk a lot", "Ctrl-C");
}

/// Aider, started by clawmux with `--notifications-command 'clawmux hook
/// --from aider-waiting'`, runs it once it waits after the model's answer:
/// the hook reaches the daemon (with the project's token: it is logged as
/// the project's, not ignored) as a waiting notification, and the turn
/// is still reported once, from the screen.
#[test]
fn aider_notifications_command_through_serve() {
    let aider = aider_required();
    let (mut serve, _api, _env) =
        start_with(&aider, vec![Turn::text("The shop sells figs.")], PACE, true);
    serve.say("tell me what the shop sells");
    let at = serve.wait(0, "== shop: tell me what the shop sells ==\n**Finished");
    let at = serve.wait(at, "The shop sells figs.");
    serve.wait(at, "└─");
    let out = serve.output();
    assert_eq!(finished(&out, "tell me what the shop sells"), 1, "{out}");
    let deadline = std::time::Instant::now() + crate::support::claude::STEP_TIMEOUT;
    let log = loop {
        let tail = std::process::Command::new(env!("CARGO_BIN_EXE_clawmux"))
            .args(["tail", "--json"])
            .env("CLAWMUX_HOME", serve.home.path())
            .output()
            .unwrap();
        let log = String::from_utf8_lossy(&tail.stdout).into_owned();
        if log.contains("\"sent_as\":\"aider-waiting\"") {
            break log;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no aider-waiting hook in the log:\n{log}\n{out}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let hook = log
        .lines()
        .find(|l| l.contains("aider-waiting"))
        .unwrap_or_default();
    assert!(hook.contains("\"event\":\"Notification\""), "{hook}");
    assert!(hook.contains("\"project\":\"shop\""), "{hook}");
    assert!(!log.contains("hook_ignored"), "{log}");
}

/// The screen's last row with text.
fn last_row(screen: &str) -> &str {
    screen.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("")
}

/// Five turns of the real Aider recorded from its first byte (the fixture
/// `tests/fixtures/aider-<release>/turns_with_dialogs.rec`, refreshed with
/// `CLAWMUX_UPDATE_FIXTURES=1`; `tests/detect/claude_recorded.rs` replays it): a
/// plain answer; an edit creating a file (`Create new file?`, yes); a shell
/// command (`Run shell command?`, yes); an answer naming a file of the
/// repository (`Add file to the chat?`, yes, and Aider's second model
/// call with the file); a 429 Aider retries once (`Retrying in 0.2
/// seconds...`), then the answer.
#[test]
fn aider_turns_with_dialogs_recorded() {
    let aider = aider_required();
    let script = vec![
        Turn::text("The shop sells plums."),
        Turn::text(&create_file("notes.txt", "hello from aider")),
        Turn::text(&shell_reply("touch made-by-aider.txt")),
        Turn::text("The prices are in menu.txt."),
        Turn::text("The menu lists plums at 2 coins."),
        // The OpenAI client litellm uses retries a 429 twice itself:
        // the third in a row is Aider's to retry (once, here).
        Turn::error(429, "slow down", 3),
        Turn::text("Hello after the wait."),
    ];
    let mut run = AiderRun::start(&aider, script, &[("menu.txt", "plums 2\n")]);
    let turn_over = |run: &AiderRun, answer: &str| {
        run.wait_for(answer);
        run.settle();
        let screen = run.wait_for("diff>");
        assert_eq!(last_row(&screen).trim_end(), "diff>", "{screen}");
    };
    run.say("what does the shop sell?");
    turn_over(&run, "The shop sells plums.");
    run.say("write the notes");
    run.wait_for("Create new file? (Y)es/(N)o [Yes]:");
    run.settle();
    run.say("yes");
    turn_over(&run, "Applied edit to notes.txt");
    run.say("make a marker file");
    run.wait_for("Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]:");
    run.settle();
    run.say("yes");
    turn_over(&run, "Running touch made-by-aider.txt");
    assert!(run.workspace.join("made-by-aider.txt").exists());
    run.say("where are the prices?");
    run.wait_for("Add file to the chat? (Y)es/(N)o/(D)on't ask again [Yes]:");
    run.settle();
    run.say("yes");
    turn_over(&run, "The menu lists plums at 2 coins.");
    run.say("hello again");
    turn_over(&run, "Hello after the wait.");
    let recording = run.finish();
    let retried = b"Retrying in 0.2 seconds";
    assert!(
        recording.windows(retried.len()).any(|w| w == retried),
        "Aider did not retry the 429"
    );
    assert_eq!(run.api.remaining(), 0);
    run.maybe_save_fixture("turns_with_dialogs");
}

/// The streamed answer card shows the answer as the screen settles it
/// while the fake model streams it in chunks: rows of the answer only,
/// never a cut-off frame of a row kept, nor the agent's chrome.
#[test]
fn aider_streamed_card_shows_only_the_answer_through_serve() {
    let aider = aider_required();
    let script = vec![Turn::text(steps::STREAMED_ANSWER)];
    let (mut serve, api, _env) = start(&aider, script, steps::STREAMED_PACE);
    steps::streamed_answer(&mut serve, &api, STEP_TIMEOUT);
}
