//! The steps the other agents' tests through `serve` (Codex, Gemini CLI,
//! OpenCode, Aider) take alike: a plain answer, the one approval card, an
//! approved tool call, the database question, a retry without end reported
//! stuck and stopped, and a long answer to interrupt. Each agent's file
//! gives what differs: how it starts, its tool, its labels and its keys.

use std::time::{Duration, Instant};

use clawmux::agentcheck::FakeApi;
use serde_json::{Value, json};

use super::serve::{ANSWER_COMPLETE, ConsoleServe, cards, finished, new_cards, result_card};
use crate::support::claude::STEP_TIMEOUT;

/// Waits until the fake API answered `n` scripted requests.
pub(super) fn wait_requests(api: &FakeApi, n: usize) {
    let deadline = Instant::now() + STEP_TIMEOUT;
    while api.scripted_requests().len() < n {
        assert!(
            Instant::now() < deadline,
            "the agent made {} scripted requests, not {n}",
            api.scripted_requests().len()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The one card so far whose text holds `title`, checked for `needles`.
pub(super) fn one_card(out: &str, title: &str, needles: &[&str]) -> String {
    let all = cards(out);
    let found = new_cards(&all, title);
    assert_eq!(found.len(), 1, "{out}");
    for needle in needles {
        assert!(found[0].contains(needle), "{needle:?} not in\n{}", found[0]);
    }
    found[0].to_string()
}

/// Asks what the shop sells, `first` the wait for the first step (with
/// the agent's start): one result holding exactly `answer` (normalised),
/// from one model call, and no error card.
pub(super) fn plain_answer(serve: &mut ConsoleServe, api: &FakeApi, first: Duration, answer: &str) {
    let title = "tell me what the shop sells";
    serve.say(title);
    let at = serve.wait_within(0, &format!("== shop: {title} ==\n**Finished"), first);
    let at = serve.wait(at, answer);
    serve.wait(at, "└─");
    let out = serve.output();
    assert_eq!(finished(&out, title), 1, "{out}");
    let card = result_card(&out, title);
    assert_eq!(answer_text(&card), normalised(answer), "{card}");
    assert_eq!(api.scripted_requests().len(), 1, "{out}");
    assert!(
        new_cards(&cards(&out), "reported an error").is_empty(),
        "{out}"
    );
}

/// After an approval card was answered with its first option: the tool
/// ran (`made`, a file in the workspace, exists), the model's streamed
/// [`STREAMED_ANSWER`] ends the turn `title`, finished once, streamed as
/// itself (see [`streamed_card_is_the_answer`]), and the tool's result
/// went back in the one further model call.
pub(super) fn approved(serve: &ConsoleServe, api: &FakeApi, (title, made): (&str, &str)) {
    streamed_card_is_the_answer(serve, title);
    let out = serve.output();
    let path = serve.home.path().join("ws/shop").join(made);
    assert!(path.exists(), "{made} not made:\n{out}");
    // The result is the tool's summary and the answer: never a copy of
    // the answered dialog, nor OpenCode's closing rows and busy bar.
    let card = result_card(&out, title);
    assert!(!card.contains("Would you like to run"), "{card}");
    assert!(
        !card.contains("Build · ") && !card.contains("esc interrupt"),
        "{card}"
    );
    let scripted = api.scripted_requests();
    assert_eq!(scripted.len(), 2, "{out}");
    assert_eq!(scripted[1].tool_results().len(), 1, "{out}");
    assert_eq!(api.exhausted(), 0);
}

/// The answer a result card holds, markdown-normalised: the text inside
/// its code fence, each row without the agent's block bullet (`•`, `●`,
/// `✦`) or indentation, joined by single spaces.
pub(super) fn answer_text(card: &str) -> String {
    let body = card.split("```").nth(1).unwrap_or("");
    normalised(&card_rows(body).join(" "))
}

/// `text` with runs of white space made one space, trimmed.
pub(super) fn normalised(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The question the question tests ask, as the question tool's input.
pub(super) fn database_question() -> Value {
    json!({"questions": [{
        "question": "Which database should the shop use?",
        "header": "Database",
        "options": [
            {"label": "SQLite", "description": "One file"},
            {"label": "Postgres", "description": "A server"},
        ],
    }]})
}

/// Asks for a database (the model calls the agent's question tool with
/// [`database_question`], then says `Postgres it is.`): one question card
/// with both options and the agent's own free-answer row `own` last, `2`
/// from the chat picks Postgres alone, and the turn finishes once.
pub(super) fn database_chosen(serve: &mut ConsoleServe, api: &FakeApi, first: Duration, own: &str) {
    serve.say("pick a database");
    let at = serve.wait_within(0, "== Approval needed ==", first);
    let at = serve.wait(at, "└─");
    let own = format!("[3] {own}");
    let question = one_card(
        &serve.output(),
        "== Approval needed ==",
        &[
            "Which database should the shop use?",
            "[1] SQLite",
            "[2] Postgres",
            &own,
        ],
    );
    assert!(!question.contains("[4]"), "{question}");
    let result = database_answered(serve, api, at, "2", "Postgres");
    assert!(!result.contains("SQLite"), "{result}");
}

/// Answers the database question with `/gsd:answer key` (its card shown
/// after `at`): the model's `{label} it is.` ends `pick a database` once,
/// and the one tool result it got names `label`; that result.
pub(super) fn database_answered(
    serve: &mut ConsoleServe,
    api: &FakeApi,
    at: usize,
    key: &str,
    label: &str,
) -> String {
    serve.say(&format!("/gsd:answer {key}"));
    let at = serve.wait(at, &format!("{label} it is."));
    serve.wait(at, "└─");
    let out = serve.output();
    assert_eq!(finished(&out, "pick a database"), 1, "{out}");
    let scripted = api.scripted_requests();
    assert_eq!(scripted.len(), 2, "{out}");
    let results = scripted[1].tool_results();
    assert_eq!(results.len(), 1, "{out}");
    assert!(results[0].contains(label), "{results:?}");
    results[0].clone()
}

/// Says `hello` to an agent whose model call fails for ever: the chat is
/// told `stuck` once (after at least `retried` calls), with no error card,
/// on the command's status card, which carries an Interrupt button;
/// pressing it sends the agent's interrupt (`keys`), the turn is reported
/// stopped once, never finished, and the retrying ends: the next model
/// call is the next prompt's, not another try of `hello`. The stopped
/// card.
pub(super) fn stuck_then_stopped(
    serve: &mut ConsoleServe,
    api: &FakeApi,
    first: Duration,
    (stuck, retried): (&str, usize),
    keys: &str,
) -> String {
    serve.say("hello");
    let at = serve.wait_within(0, "== shop: hello ==", first);
    let at = serve.wait(at, stuck);
    let out = serve.output();
    assert!(
        api.scripted_requests().len() >= retried,
        "not retried: {out}"
    );
    assert_eq!(out.matches(stuck).count(), 1, "{out}");
    assert!(
        new_cards(&cards(&out), "reported an error").is_empty(),
        "{out}"
    );
    let status = serve.wait(at, "└─");
    let out = serve.output();
    let card = (cards(&out).into_iter().rev())
        .find(|(_, t)| t.contains(stuck))
        .map(|(_, t)| t)
        .unwrap_or_default();
    let press = interrupt_press(&card).unwrap_or_else(|| panic!("no Interrupt button:\n{card}"));
    serve.say(&press);
    let at = serve.wait(status, &format!("Sent {keys} to the agent of **shop**."));
    let heading = "== Stopped: shop: hello ==";
    let at = serve.wait(at, heading);
    serve.wait(at, "└─");
    let out = serve.output();
    let all = cards(&out);
    let stopped = new_cards(&all, heading);
    assert_eq!(stopped.len(), 1, "{out}");
    assert_eq!(finished(&out, "hello"), 0, "{out}");
    let stopped = stopped[0].to_string();
    let tries = api.scripted_requests().len();
    serve.say("are you there");
    serve.wait(at, "== shop: are you there ==");
    wait_requests(api, tries + 1);
    let next = &api.scripted_requests()[tries];
    assert!(
        next.body.to_string().contains("are you there"),
        "the agent tried `hello` again after the interrupt: {}",
        next.body
    );
    stopped
}

/// The `/press N` line of the Interrupt button on `card`
/// (`[1] Interrupt · /press 7`).
fn interrupt_press(card: &str) -> Option<String> {
    let line = card.lines().find(|l| l.contains("Interrupt · /press "))?;
    let n = line
        .split("Interrupt · /press ")
        .nth(1)?
        .split_whitespace()
        .next()?;
    Some(format!("/press {n}"))
}

/// A long answer to stop mid-stream, in varied sentences (Gemini halts a
/// repetitive stream as a loop).
pub(super) fn long_answer() -> String {
    (1..400)
        .map(|n| {
            format!(
                "Fact {n} is that shelf {} holds {} jars. ",
                n * 7 % 31,
                n * 13 % 97
            )
        })
        .collect()
}

/// Says `hello` to an agent whose model call fails (`row`: the error row
/// the agent draws, `attempts`: the model calls it makes): one error card
/// holding `row`, the turn reported failed once, no "Finished" and no
/// result card repeating the error; the next message is a turn of its
/// own, answered `Back again.` (the script's next turn).
pub(super) fn error_turn_once(
    serve: &mut ConsoleServe,
    api: &FakeApi,
    first: Duration,
    row: &str,
    attempts: usize,
) {
    serve.say("hello");
    let at = serve.wait_within(0, "== The agent reported an error ==", first);
    let at = serve.wait(at, "└─");
    let at = serve.wait(at, "Failed after");
    let at = serve.wait(at, "└─");
    let out = serve.output();
    let all = cards(&out);
    let errors = new_cards(&all, "== The agent reported an error ==");
    assert_eq!(errors.len(), 1, "{out}");
    assert!(errors[0].contains(row), "{row:?} not in\n{}", errors[0]);
    assert_eq!(finished(&out, "hello"), 0, "{out}");
    let heading = "== shop: hello ==";
    let results = all
        .iter()
        .filter(|(updated, t)| !updated && t.starts_with(heading) && t.contains("```"));
    assert_eq!(results.count(), 0, "{out}");
    assert_eq!(out.matches("Failed after").count(), 1, "{out}");
    assert_eq!(api.scripted_requests().len(), attempts, "{out}");
    serve.say("again");
    let at = serve.wait(at, "== shop: again ==\n**Finished");
    serve.wait(at, "Back again.");
    assert_eq!(api.scripted_requests().len(), attempts + 1);
}

/// The answer [`streamed_answer`] has the fake model stream: paragraphs
/// of plain words (drawn as they are, one row each, by every agent),
/// each starting its own way so that a row's prefix names one row.
pub(super) const STREAMED_ANSWER: &str = "Plums cost two coins a crate.\n\n\
    Figs cost three coins a box.\n\nPears are sold out until Monday.\n\n\
    Apples come in on Friday morning.";

/// Pace of the fake model's chunks for [`streamed_answer`]: slow enough
/// that the agent draws the answer in many frames while it streams.
pub(super) const STREAMED_PACE: Duration = Duration::from_millis(40);

/// Asks what the shop sells while the fake model streams
/// [`STREAMED_ANSWER`] in chunks: see [`streamed_card_is_the_answer`].
pub(super) fn streamed_answer(serve: &mut ConsoleServe, api: &FakeApi, first: Duration) {
    let title = "tell me what the shop sells";
    serve.say(title);
    let at = serve.wait_within(0, &format!("== shop: {title} ==\n**Finished"), first);
    let result = serve.wait_result(at, title);
    assert_eq!(
        answer_text(&result),
        normalised(STREAMED_ANSWER),
        "{result}"
    );
    assert_eq!(api.scripted_requests().len(), 1, "{}", serve.output());
    streamed_card_is_the_answer(serve, title);
}

/// The streamed answer card of the finished turn `title`, whose model
/// answer was [`STREAMED_ANSWER`] (after any tool calls): the result card
/// ends with the answer, once; every update of the streamed card shows
/// rows of that result and nothing else: never a cut-off frame kept above
/// later rows (a row not yet complete only as the card's last row, a
/// prefix of the row it becomes), a tool's row only as drawn (its status
/// word or mark may change as it ends: `Running` → `Ran`, `⊶` → `✓`), never
/// the agent's chrome (spinner, busy bar, sidebar, hook notices) or the
/// answered dialog; the stream ends on the whole result.
pub(super) fn streamed_card_is_the_answer(serve: &ConsoleServe, title: &str) {
    let at = serve.wait(0, &format!("== shop: {title} ==\n**Finished"));
    let card = serve.wait_result(at, title);
    let out = serve.output();
    assert_eq!(finished(&out, title), 1, "{out}");
    let text = answer_text(&card);
    assert!(text.ends_with(&normalised(STREAMED_ANSWER)), "{card}");
    assert_eq!(
        text.matches(&normalised(STREAMED_ANSWER)).count(),
        1,
        "{card}"
    );
    let result = card_rows(card.split("```").nth(1).unwrap_or(""));
    // The stream's last text is printed by its own task: wait for its end.
    let deadline = Instant::now() + STEP_TIMEOUT;
    while !(serve.streamed_with_redraws(title).lines()).any(|l| l == ANSWER_COMPLETE) {
        assert!(Instant::now() < deadline, "the stream never ended:\n{out}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let updates: Vec<Vec<String>> = stream_updates(&serve.streamed_with_redraws(title))
        .iter()
        .map(|u| card_rows(&u.join("\n")))
        .collect();
    assert!(!updates.is_empty(), "no streamed answer card:\n{out}");
    // A tool's row without its status (`Running`/`Ran`; in Gemini CLI's
    // box, `│ ⊶ Shell …`/`│ ✓ Shell …`).
    let after_status = |row: &str| {
        let row = row.trim_start_matches('│').trim_start();
        row.split_once(' ').map(|(_, rest)| rest.trim().to_owned())
    };
    for update in &updates {
        for (i, row) in update.iter().enumerate() {
            let last = i + 1 == update.len();
            let ok = result.iter().any(|r| {
                r == row
                    || (last && r.starts_with(row.as_str()))
                    || after_status(r).is_some_and(|r| Some(r) == after_status(row))
            });
            assert!(
                ok,
                "{row:?} streamed, not a row of the result:\n{card}\n{updates:#?}"
            );
        }
    }
    assert_eq!(
        updates.last(),
        Some(&result),
        "the stream did not end on the result:\n{card}\n{updates:#?}"
    );
}

/// A card's rows as the tests compare them: trimmed, without the agent's
/// block bullet (`•`, `●`, `⏺`, `✦`), empty rows left out.
fn card_rows(text: &str) -> Vec<String> {
    (text.lines())
        .map(|r| {
            r.trim()
                .trim_start_matches(['•', '●', '⏺', '✦'])
                .trim()
                .to_owned()
        })
        .filter(|r| !r.is_empty())
        .collect()
}

/// The texts a streamed card showed, one per update as far as the console
/// tells them apart: rows printed after the head or a `├─ (redrawn)` mark
/// are a whole text; rows printed after them extend it.
fn stream_updates(printed: &str) -> Vec<Vec<String>> {
    let mut updates: Vec<Vec<String>> = Vec::new();
    let mut current: Option<Vec<String>> = None;
    for line in printed.lines() {
        if line == ANSWER_COMPLETE {
            continue;
        }
        if line.starts_with("┌─ (streaming)") || line.starts_with("├─ (redrawn)") {
            updates.extend(current.take());
            current = Some(Vec::new());
        } else if let Some(rows) = current.as_mut() {
            rows.push(line.to_owned());
        }
    }
    updates.extend(current);
    updates
}
