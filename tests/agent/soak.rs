//! A soak per agent (ignored: minutes each; `scripts/answer-soak.sh` runs
//! them): `CLAWMUX_ANSWER_SOAK_TURNS` (50) turns through `serve --console`
//! against the fake model API streaming every answer in random pieces
//! (1–8 characters, 20–60 ms apart, a seed per run). Every turn's result
//! card must hold exactly the answer the fake sent (after markdown
//! normalisation), once. Prints one table row: turns, exact results, and
//! the latency from the model's last frame to the result card's arrival
//! on the console (p50/p95), for docs/BENCHMARKS.md.

use std::time::{Duration, Instant};

use clawmux::agentcheck::{ClaudeEnv, FakeApi, Turn};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::serve::{ConsoleServe, cards, finished, serve_shop, shop_home};
use super::steps::{answer_text, normalised};
use crate::support::claude::STEP_TIMEOUT;
use crate::support::claude::claude_required;

/// Turns per soak unless `CLAWMUX_ANSWER_SOAK_TURNS` says otherwise.
const DEFAULT_TURNS: usize = 50;

/// Words the answers are made of: plain prose, no markdown an agent would
/// render differently from its source.
const WORDS: [&str; 24] = [
    "the", "shop", "sells", "apples", "pears", "and", "plums", "every", "morning", "from", "seven",
    "until", "noon", "while", "jars", "of", "honey", "stand", "on", "shelf", "three", "near",
    "door", "today",
];

fn turns() -> usize {
    std::env::var("CLAWMUX_ANSWER_SOAK_TURNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_TURNS)
}

/// `n` answers of one to three sentences (20–200 characters), seeded.
fn answers(n: usize, seed: u64) -> Vec<String> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n)
        .map(|i| {
            let sentences = rng.random_range(1..=3);
            let mut out = format!("Answer {i}:");
            for _ in 0..sentences {
                let words = rng.random_range(4..=12);
                for w in 0..words {
                    let word = WORDS[rng.random_range(0..WORDS.len())];
                    out.push(' ');
                    if w == 0 {
                        let mut c = word.chars();
                        let first = c.next().map(|f| f.to_ascii_uppercase()).unwrap_or('X');
                        out.push(first);
                        out.push_str(c.as_str());
                    } else {
                        out.push_str(word);
                    }
                }
                out.push('.');
            }
            out
        })
        .collect()
}

/// The `p`th percentile (0–100) of `sorted`.
fn percentile(sorted: &[Duration], p: usize) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = (sorted.len() * p).div_ceil(100).max(1) - 1;
    sorted[rank.min(sorted.len() - 1)]
}

/// Runs the soak on a started daemon; panics unless every result is exact.
fn soak(agent: &str, serve: &mut ConsoleServe, api: &FakeApi, answers: &[String]) {
    let mut latencies = Vec::new();
    let mut wrong = Vec::new();
    let mut at = 0;
    let started = Instant::now();
    for (i, answer) in answers.iter().enumerate() {
        let title = format!("question {i}");
        serve.say(&title);
        let heading = format!("== shop: {title} ==\n```");
        let card_at = serve.wait_within(at, &heading, STEP_TIMEOUT * 2);
        at = serve.wait(card_at, "└─");
        let arrived = serve.arrived_at(card_at).expect("the card arrived");
        if let Some(end) = api.answered().get(i) {
            latencies.push(arrived.saturating_duration_since(*end));
        }
        let out = serve.output();
        let card = cards(&out)
            .into_iter()
            .rev()
            .find(|(updated, t)| !updated && t.starts_with(&heading))
            .map(|(_, t)| t)
            .unwrap_or_default();
        let got = answer_text(&card);
        if got != normalised(answer) || finished(&out, &title) != 1 {
            wrong.push(format!("turn {i}: want {answer:?}\n{card}"));
        }
    }
    latencies.sort();
    let n = answers.len();
    println!(
        "| {agent} | {n} | {exact}/{n} | {p50} | {p95} | {total} |",
        exact = n - wrong.len(),
        p50 = percentile(&latencies, 50).as_millis(),
        p95 = percentile(&latencies, 95).as_millis(),
        total = started.elapsed().as_secs(),
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
    assert_eq!(api.scripted_requests().len(), n, "one model call a turn");
}

fn script(answers: &[String]) -> Vec<Turn> {
    answers.iter().map(|a| Turn::text(a)).collect()
}

/// Claude Code's soak on whichever release `CLAWMUX_CLAUDE` names
/// (`scripts/answer-soak.sh` runs it on 2.1.332 and on 2.1.197); the row
/// names the release.
#[test]
#[ignore = "a soak: minutes; scripts/answer-soak.sh"]
fn claude_answer_soak() {
    let claude = claude_required();
    let release = clawmux::agentcheck::claude_version(&claude).expect("claude --version");
    let answers = answers(turns(), 31);
    let api = FakeApi::start_paced(script(&answers), Duration::from_millis(15)).expect("fake api");
    let (home, workspace) = shop_home();
    let mut env = ClaudeEnv::new(&api.base_url()).expect("claude env");
    env.trust(&workspace).expect("trust the project");
    let agent = env.env_command(&claude, &[]);
    let mut serve = serve_shop(&agent, home, "claude");
    serve.wait(0, "Messages now go to **shop**.");
    soak(
        &format!("Claude Code {release}"),
        &mut serve,
        &api,
        &answers,
    );
}

#[test]
#[ignore = "a soak: minutes; scripts/answer-soak.sh"]
fn codex_answer_soak() {
    let codex = crate::support::codex::codex_required();
    let answers = answers(turns(), 32);
    let (mut serve, api, _env) = super::codex::start(&codex, script(&answers));
    serve.wait(0, "Messages now go to **shop**.");
    soak("Codex", &mut serve, &api, &answers);
}

#[test]
#[ignore = "a soak: minutes; scripts/answer-soak.sh"]
fn aider_answer_soak() {
    let aider = crate::support::aider::aider_required();
    let answers = answers(turns(), 33);
    let pace = Duration::from_millis(15);
    let (mut serve, api, _env) = super::aider::start(&aider, script(&answers), pace);
    serve.wait(0, "Messages now go to **shop**.");
    soak("Aider", &mut serve, &api, &answers);
}

#[test]
#[ignore = "a soak: minutes; scripts/answer-soak.sh"]
fn gemini_answer_soak() {
    let gemini = crate::support::gemini::gemini_required();
    let answers = answers(turns(), 34);
    let pace = Duration::from_millis(15);
    let (mut serve, api, _env) = super::gemini::start(&gemini, script(&answers), pace);
    serve.wait(0, "Messages now go to **shop**.");
    soak("Gemini CLI", &mut serve, &api, &answers);
}

#[test]
#[ignore = "a soak: minutes; scripts/answer-soak.sh"]
fn opencode_answer_soak() {
    let oc = crate::support::opencode::opencode_required();
    let answers = answers(turns(), 35);
    let pace = Duration::from_millis(15);
    let (mut serve, api, _env) = super::opencode::start(&oc, script(&answers), pace, false);
    serve.wait(0, "Messages now go to **shop**.");
    soak("OpenCode", &mut serve, &api, &answers);
}

#[test]
fn soak_answers_repeat_for_a_seed_and_percentiles_pick_ranks() {
    let a = answers(5, 1);
    assert_eq!(a, answers(5, 1));
    assert!(a.iter().all(|t| t.ends_with('.') && t.len() >= 20), "{a:?}");
    let ms = |v: &[u64]| {
        v.iter()
            .map(|m| Duration::from_millis(*m))
            .collect::<Vec<_>>()
    };
    let sorted = ms(&[10, 20, 30, 40, 50, 60, 70, 80, 90, 100]);
    assert_eq!(percentile(&sorted, 50), Duration::from_millis(50));
    assert_eq!(percentile(&sorted, 95), Duration::from_millis(100));
    assert_eq!(percentile(&[], 95), Duration::ZERO);
}
