//! Claude Code's AskUserQuestion with several questions: its dialog shows
//! them as tabs (`←  ☐ Database  ☐ Features  ☐ Hosting  ✔ Submit  →`), one
//! question at a time, then a review with `Submit answers`. Recorded from
//! its first byte with the real Claude Code against the fake model API
//! (`tests/fixtures/claude-<release>/multi_tab_question.rec`, refreshed with
//! `CLAWMUX_UPDATE_FIXTURES=1`) and replayed: each question is carded once,
//! in order, as the person answers it; never again when the tabs redraw.

use std::time::Duration;

use serde_json::json;

use clawmux::agentcheck::Turn;

use crate::support::claude::{
    ClaudeRun, RunOptions, agent_home, claude_required, clawmux_stdin, fixtures_dir_of,
};
use crate::support::tmux::TmuxServer;

use super::serve::{ConsoleServe, cards, finished, new_cards};

/// The three questions, in the order Claude Code shows their tabs.
const QUESTIONS: [&str; 3] = [
    "Which database should the shop use?",
    "Which payment provider should the shop use?",
    "Where should the shop be hosted?",
];

/// What the model answers once the questions are answered.
const ANSWER: &str = "Postgres, Stripe and Fly it is.";

/// AskUserQuestion with [`QUESTIONS`], two options each.
fn three_questions() -> serde_json::Value {
    let q = |question: &str, header: &str, a: (&str, &str), b: (&str, &str)| {
        json!({
            "question": question,
            "header": header,
            "multiSelect": false,
            "options": [
                {"label": a.0, "description": a.1},
                {"label": b.0, "description": b.1},
            ],
        })
    };
    json!({"questions": [
        q(QUESTIONS[0], "Database", ("SQLite", "One file"), ("Postgres", "A server")),
        q(QUESTIONS[1], "Payments", ("Stripe", "Cards"), ("PayPal", "Wallets")),
        q(QUESTIONS[2], "Hosting", ("Fly", "Small machines"), ("AWS", "Everything")),
    ]})
}

/// The questions carded (`approval` detections of kind `question`), in
/// order, read off a recording by `clawmux detect --profile claude`.
fn carded(recording: &[u8]) -> Vec<String> {
    let (code, out, err) = clawmux_stdin(&["detect", "--profile", "claude"], recording);
    assert_eq!(code, 0, "{err}");
    (out.lines())
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|d| d["kind"] == "approval")
        .map(|d| d["question"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn claude_multi_tab_question_recorded() {
    let claude = claude_required();
    let script = vec![
        Turn::tool("AskUserQuestion", three_questions()),
        Turn::text(ANSWER),
    ];
    let mut run = ClaudeRun::start(&claude, script, RunOptions::default());
    run.prompt("set up the shop");
    for (question, key) in QUESTIONS.iter().zip(["2", "1", "1"]) {
        run.wait_for(question);
        run.wait_for_watch_approval();
        run.keys(&[key]);
    }
    run.wait_for("Submit answers");
    run.wait_for_watch_approval();
    run.keys(&["1"]);
    run.wait_idle_with(ANSWER);
    let recording = run.finish();
    run.maybe_save_fixture("multi_tab_question");
    let results = run.api.scripted_requests()[1].tool_results().join("\n");
    for chosen in ["Postgres", "Stripe", "Fly"] {
        assert!(results.contains(chosen), "{chosen} not answered: {results}");
    }
    assert_eq!(carded(&recording)[..QUESTIONS.len()], QUESTIONS);
}

/// The committed recording of [`claude_multi_tab_question_recorded`]: one
/// card per question, in the order asked, each once; then the review,
/// carded as what it is (`Review your answers`), not its last row.
#[test]
fn claude_multi_tab_question_replayed() {
    // Recorded on 2.1.332 (the release that draws the tabs this way); a
    // replay needs no Claude Code, so it reads that recording whatever
    // release is installed.
    let path = fixtures_dir_of("2.1.332").join("multi_tab_question.rec");
    let recording = std::fs::read(&path).unwrap();
    let mut want: Vec<&str> = QUESTIONS.to_vec();
    want.push("Review your answers");
    assert_eq!(carded(&recording), want);
}

/// Through `serve --console`: each question is one card, in order, as the
/// chat answers the one before (`/gsd:answer N`); the review is one card
/// whose Submit sends the three answers; the turn finishes once with the
/// model's answer. No question is carded twice when the tabs redraw.
#[test]
fn claude_multi_tab_question_through_serve() {
    let claude = claude_required();
    let script = vec![
        Turn::tool("AskUserQuestion", three_questions()),
        Turn::text(ANSWER),
    ];
    let api = clawmux::agentcheck::FakeApi::start_paced(script, Duration::from_millis(15)).unwrap();
    let (home, env) = agent_home(&api, "shop");
    let agent = env.env_command(&claude, &[]);
    let mut serve = ConsoleServe::start_with_profile(&agent, home, TmuxServer::new(), "claude");
    // GSD is not installed here: Claude Code refuses its command, and the
    // project exists from then on.
    serve.say("/gsd:new-project shop");
    let at = serve.wait(0, "== The agent refused: shop: /gsd:new-project ==\n");
    let mut at = serve.wait(at, "└─");
    serve.say("set up the shop");
    for (question, key) in QUESTIONS.iter().zip(["2", "1", "1"]) {
        at = serve.wait(at, question);
        at = serve.wait(at, "└─");
        serve.say(&format!("/gsd:answer {key}"));
    }
    at = serve.wait(at, "Submit answers");
    at = serve.wait(at, "└─");
    serve.say("/gsd:answer 1");
    at = serve.wait(at, ANSWER);
    serve.wait(at, "└─");
    let out = serve.output();
    let all = cards(&out);
    let asked = new_cards(&all, "== Approval needed ==");
    for question in QUESTIONS {
        let carded = asked.iter().filter(|c| c.contains(question)).count();
        // The review lists every question too: count the cards asking it.
        let asking = (asked.iter())
            .filter(|c| c.contains(question) && !c.contains("Submit answers"))
            .count();
        assert_eq!(asking, 1, "{question}: {carded} cards\n{out}");
    }
    assert_eq!(asked.len(), QUESTIONS.len() + 1, "{out}");
    assert_eq!(finished(&out, "set up the shop"), 1, "{out}");
    let results = api.scripted_requests()[1].tool_results().join("\n");
    for chosen in ["Postgres", "Stripe", "Fly"] {
        assert!(results.contains(chosen), "{chosen} not answered: {results}");
    }
}
