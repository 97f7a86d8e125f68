//! The real GSD in the real Claude Code, driven from chat through `clawmux
//! serve --console`: GSD installed as its users install it (global skills
//! `/gsd-<name>` with its hooks and statusline, or project-local commands
//! `/gsd:<name>`), Claude Code expanding its real command files, and the
//! fake API scripted to do what GSD's workflows tell the model to do
//! (ask with AskUserQuestion, write `.planning/` through Bash, print GSD's
//! banners, progress lines and checkpoint boxes).

use std::path::Path;
use std::time::Duration;

use clawmux::agentcheck::{FakeApi, Turn};
use serde_json::{Value, json};

use crate::support::claude::{agent_home, claude_required};
use crate::support::gsd::{self, Layout};
use crate::support::tmux::TmuxServer;

use super::serve::{ConsoleServe, cards, new_cards, result_card};

const RULE: &str = "━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━";

fn banner(stage: &str) -> String {
    format!("{RULE}\n GSD ► {stage}\n{RULE}")
}

fn question(text: &str, header: &str, multi: bool, labels: &[&str]) -> Turn {
    let options: Vec<Value> = (labels.iter())
        .map(|l| json!({"label": l, "description": format!("{l}, as GSD would offer it")}))
        .collect();
    Turn::tool(
        "AskUserQuestion",
        json!({"questions": [{"question": text, "header": header, "multiSelect": multi, "options": options}]}),
    )
}

/// STATE.md and ROADMAP.md as GSD's new-project leaves them (phase 1 of 3,
/// nothing planned yet), written the way its workflow does: through Bash.
const WRITE_PLANNING: &str = "mkdir -p .planning && printf '%s\\n' '---' 'status: planning' \
'progress:' '  total_phases: 3' '  completed_phases: 0' '  total_plans: 2' '  completed_plans: 0' '---' \
'# Project State' '## Current Position' 'Phase: 1 of 3 (Catalogue)' 'Plan: 0 of 2 in current phase' \
'Progress: [░░░░░░░░░░] 0%' > .planning/STATE.md && printf '%s\\n' '# Roadmap: Shop' \
'- [ ] **Phase 1: Catalogue** - list products' '- [ ] **Phase 2: Cart** - the cart' \
'- [ ] **Phase 3: Checkout** - paying' > .planning/ROADMAP.md";

const CONTINUED: &str = "Continuing with sqlite: the store is written.";
const VERIFIED: &str = "Verified: phase 1 passes its checks.";

/// The model's side of new-project, plan-phase and execute-phase.
fn script() -> Vec<Turn> {
    vec![
        // new-project: GSD's questions, one single-select, one multi-select.
        question(
            "What do you want to build?",
            "Project",
            false,
            &["A web shop", "A command-line tool"],
        ),
        question(
            "Which features belong in v1?",
            "Scope",
            true,
            &["Catalogue", "Cart", "Checkout"],
        ),
        Turn::tool(
            "Bash",
            json!({"command": WRITE_PLANNING, "description": "Write the planning files"}),
        ),
        Turn::text(&format!(
            "{}\n\nRoadmap: 3 phases.\n\nProgress: ░░░░░░░░░░ 0%\n\n## ▶ Next Up\n/gsd-plan-phase 1",
            banner("PROJECT INITIALIZED ✓")
        )),
        // plan-phase 1.
        Turn::text(&format!(
            "{}\n\nPlans: 2/2 complete\n\n| Phase | Plans | Done |\n|---|---|---|\n| 1 | 2 | 100% |\n| 2 | 0 | 25% |",
            banner("PLANNING PHASE 1")
        )),
        // execute-phase 1, to a decision checkpoint.
        Turn::text(&format!(
            "{}\n\nTasks: 1/3 complete\n\n\
             ╔══════════════════════════════════════════════════════════════╗\n\
             ║  CHECKPOINT: Decision Required                               ║\n\
             ╚══════════════════════════════════════════════════════════════╝\n\n\
             Decision: Which store should the catalogue use?\n\n\
             Options:\n  1. redis - fast, needs a server\n  2. sqlite - one file\n\n\
             ──────────────────────────────────────────────────────────────\n\
             → Select: redis / sqlite\n\
             ──────────────────────────────────────────────────────────────",
            banner("EXECUTING WAVE 1")
        )),
        // The continuation after the answer.
        Turn::text(&format!(
            "{CONTINUED}\n\nTasks: 3/3 complete\n\n{}",
            banner("PHASE 1 COMPLETE ✓")
        )),
        // verify-work: the orchestrator's checkpoint heading.
        Turn::text(
            "## Checkpoint: human-verify — the catalogue page\n\n\
             **Plan:** 01-02 Catalogue page\n\
             **Progress:** 2/3 tasks complete\n\n\
             Open the catalogue page and check that it lists the products.\n\n\
             Awaiting: type \"approved\" or describe issues",
        ),
        Turn::text(VERIFIED),
    ]
}

fn start(claude: &Path, package: &Path, layout: Layout) -> (ConsoleServe, FakeApi) {
    let api = FakeApi::start_paced(script(), Duration::from_millis(15)).unwrap();
    let (home, env) = agent_home(&api, "shop");
    let workspace = home.path().join("ws/shop");
    gsd::install(package, layout, env.home(), &workspace);
    let env = gsd::agent_env(env);
    // The dialogs GSD's workflows meet, whatever the version's default mode
    // (2.1.332 defaults to auto; `default` is accepted by both).
    let agent = env.env_command(claude, &["--permission-mode", "default"]);
    std::mem::forget(env); // its HOME holds the install; removed with /tmp
    let serve = ConsoleServe::start_with_profile(&agent, home, TmuxServer::new(), "gsd");
    (serve, api)
}

/// A scripted request's user text (what Claude Code sent for a command).
fn request_text(api: &FakeApi) -> Vec<String> {
    api.scripted_requests()
        .iter()
        .map(|r| r.body.to_string())
        .collect()
}

fn flow(layout: Layout) {
    let claude = claude_required();
    let package = gsd::gsd_required();
    let (mut serve, api) = start(&claude, &package, layout);
    let (typed_new, typed_plan) = match layout {
        Layout::Global => ("/gsd-new-project", "/gsd-plan-phase 1"),
        Layout::Local => ("/gsd:new-project", "/gsd:plan-phase 1"),
    };

    // New project: clawmux creates it, then GSD's own new-project runs.
    serve.say("/gsd:new-project shop");
    let at = serve.wait(0, "== Approval needed ==");
    let at = serve.wait(at, "└─");
    let first = request_text(&api);
    assert!(
        first[0].contains("PROJECT.md") && first[0].contains("new-project"),
        "the real new-project command reached the model: {}",
        &first[0][..first[0].len().min(2000)]
    );
    let out = serve.output();
    let all = cards(&out);
    let q = new_cards(&all, "== Approval needed ==");
    assert!(q[0].contains("What do you want to build?"), "{out}");
    assert!(q[0].contains("A web shop"), "{out}");
    serve.say("/gsd:answer 1");

    // The multi-select question: `1,3` from chat ticks those two and goes
    // on to Claude Code's "Review your answers", submitted from its card.
    let at = serve.wait(at, "Which features belong in v1?");
    let at = serve.wait(at, "└─");
    serve.say("/gsd:answer 1,3");
    let at = serve.wait(at, "chose **Catalogue, Checkout**");
    let at = serve.wait(at, "Submit answers");
    let at = serve.wait(at, "└─");
    serve.say("/gsd:answer 1");

    // GSD writes its planning files (Bash is in the skill's allowed tools:
    // no permission prompt) and ends with its banner.
    // The result card itself (its progress card can show the banner first).
    let at = serve.wait(at, "== shop: /gsd:new-project ==\n```");
    let at = serve.wait(at, "└─");
    let requests = api.scripted_requests();
    let answers: Vec<String> = requests.iter().flat_map(|r| r.tool_results()).collect();
    assert!(
        answers.iter().any(|a| a.contains("A web shop")),
        "{answers:?}"
    );
    assert!(
        answers
            .iter()
            .any(|a| a.contains("Catalogue") && a.contains("Checkout") && !a.contains("Cart")),
        "the two toggled options were submitted: {answers:?}"
    );
    let out = serve.output();
    let created = result_card(&out, "/gsd:new-project");
    assert!(created.contains("PROJECT INITIALIZED"), "{created}");
    assert!(
        serve
            .home
            .path()
            .join("ws/shop/.planning/STATE.md")
            .is_file(),
        "{out}"
    );

    // /gsd:status reads GSD's own planning files.
    serve.say("/gsd:status");
    let at = serve.wait(at, "GSD planning");
    let at = serve.wait(at, "└─");
    let out = serve.output();
    let status = new_cards(&cards(&out), "GSD planning")[0].to_string();
    assert!(
        status.contains("phase 1 of 3 (Catalogue)") && status.contains("0/2 plans done"),
        "{status}"
    );

    // plan-phase: typed in the install's spelling, GSD's progress read,
    // the phase table's rows not taken for the run's progress.
    serve.say("/gsd:plan-phase 1");
    let at = serve.wait(at, "== shop: /gsd:plan-phase 1 ==\n```");
    let at = serve.wait(at, "└─");
    let plan_request = request_text(&api).last().cloned().unwrap_or_default();
    assert!(
        plan_request.contains(typed_plan),
        "the command was typed as {typed_plan}"
    );
    let out = serve.output();
    let planned = result_card(&out, "/gsd:plan-phase 1");
    assert!(planned.contains("Plans: 2/2 complete"), "{planned}");
    let progress = progress_log(&serve);
    assert!(progress.iter().any(|p| p.contains("2/2")), "{progress:?}");
    assert!(
        !progress
            .iter()
            .any(|p| p.contains("25%") || p.contains("100%")),
        "a phase-table row became the run's progress: {progress:?}"
    );

    // execute-phase to the checkpoint: one approval with its named options.
    serve.say("/gsd:execute-phase 1");
    let at = serve.wait(at, "CHECKPOINT: Decision Required");
    let at = serve.wait(at, "└─");
    let out = serve.output();
    let all = cards(&out);
    let checkpoint = (new_cards(&all, "== Approval needed =="))
        .into_iter()
        .rfind(|c| c.contains("CHECKPOINT"))
        .unwrap_or_else(|| panic!("no checkpoint card:\n{out}"));
    for needle in [
        "Answer with /gsd:answer redis|sqlite",
        "Which store should the catalogue use?",
    ] {
        assert!(
            checkpoint.contains(needle),
            "{needle:?} not in\n{checkpoint}"
        );
    }
    assert!(
        !checkpoint.contains('❯'),
        "the input box is not the body:\n{checkpoint}"
    );
    if layout == Layout::Global {
        // GSD's statusline row (`<model> │ <phase> │ shop`) is on the
        // pane's screen mid-run, so the checks below that no result card
        // carries it prove something.
        let screen = serve._tmux.capture("cm-shop");
        assert!(screen.contains("│ shop"), "no statusline on\n{screen}");
    }

    // The card's answer reaches GSD, and the continuation's result the chat.
    serve.say("/gsd:answer sqlite");
    let at = serve.wait(at, "== shop: /gsd:execute-phase 1 ==\n**Finished");
    let at = serve.wait(at, "└─");
    let at = serve.wait(at, CONTINUED);
    let at = serve.wait(at, "└─");
    let continued = result_card(&serve.output(), "/gsd:execute-phase 1");
    assert!(continued.contains(CONTINUED), "{continued}");
    // GSD's statusline (`<model> │ <phase> │ shop`, redrawn under the input
    // box all the time) is screen furniture, never a result.
    for card in [&created, &planned, &continued] {
        assert!(!card.contains("│ shop"), "a statusline row in\n{card}");
    }
    let last = api
        .scripted_requests()
        .last()
        .map(|r| r.body.to_string())
        .unwrap_or_default();
    assert!(last.contains("sqlite"), "the answer reached the model");
    assert_eq!(api.exhausted(), 0);

    // The orchestrator's heading form, answered "approved" from its card.
    serve.say("/gsd:verify-work 1");
    let at = serve.wait(at, "== Approval needed ==");
    let at = serve.wait(at, "└─");
    let out = serve.output();
    let verify = (new_cards(&cards(&out), "== Approval needed =="))
        .into_iter()
        .rfind(|c| c.contains("Checkpoint: human-verify"))
        .unwrap_or_else(|| panic!("no verification card:\n{out}"))
        .to_string();
    assert!(
        verify.contains("Answer with /gsd:answer approved"),
        "{verify}"
    );
    assert!(
        verify.contains("check that it lists the products"),
        "{verify}"
    );
    serve.say("/gsd:answer approved");
    serve.wait(at, VERIFIED);
    let last = api
        .scripted_requests()
        .last()
        .map(|r| r.body.to_string())
        .unwrap_or_default();
    assert!(last.contains("approved"), "the answer reached the model");

    let progress = progress_log(&serve);
    for seen in ["EXECUTING WAVE 1", "1/3", "3/3", "PHASE 1 COMPLETE"] {
        assert!(
            progress.iter().any(|p| p.contains(seen)),
            "{seen}: {progress:?}"
        );
    }
    // Each stage or value once, not once per redraw (GSD's statusline
    // redraws the screen all the time).
    for p in &progress {
        let times = progress.iter().filter(|q| *q == p).count();
        assert_eq!(times, 1, "{p:?} reported {times} times: {progress:?}");
    }
    let first = request_text(&api);
    assert!(first[0].contains(typed_new), "typed as {typed_new}");
}

/// The progress summaries the daemon logged, in order.
fn progress_log(serve: &ConsoleServe) -> Vec<String> {
    let tail = std::process::Command::new(env!("CARGO_BIN_EXE_clawmux"))
        .args(["tail", "--kind", "detection", "--json"])
        .env("CLAWMUX_HOME", serve.home.path())
        .output()
        .unwrap();
    String::from_utf8_lossy(&tail.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["detection"] == "progress")
        .filter_map(|v| v["summary"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn global_install_end_to_end_through_serve() {
    flow(Layout::Global);
}

#[test]
fn local_install_end_to_end_through_serve() {
    flow(Layout::Local);
}

/// The planning parser on STATE.md as GSD's own `gsd-sdk` writes it: the
/// package's STATE template at phase 2 of 3, synced by `gsd-sdk query
/// state.sync` against a roadmap and plan files (3 of 5 plans summarised).
#[test]
fn planning_files_as_gsd_sdk_writes_them() {
    let package = gsd::gsd_required();
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("shop");
    gsd::install(&package, Layout::Global, home.path(), home.path());
    let planning = project.join(".planning");
    for (phase, plans, done) in [("01-core", 2, 2), ("02-cart", 3, 1)] {
        let dir = planning.join("phases").join(phase);
        std::fs::create_dir_all(&dir).unwrap();
        let n = &phase[..2];
        for p in 1..=plans {
            std::fs::write(dir.join(format!("{n}-0{p}-PLAN.md")), "# plan\n").unwrap();
            if p <= done {
                std::fs::write(dir.join(format!("{n}-0{p}-SUMMARY.md")), "# done\n").unwrap();
            }
        }
    }
    std::fs::write(
        planning.join("ROADMAP.md"),
        "# Roadmap: Shop\n\n## Phases\n\n- [x] **Phase 1: Core** - data\n\
         - [ ] **Phase 2: Cart** - cart\n- [ ] **Phase 3: Checkout** - pay\n\n\
         ## Phase Details\n\n### Phase 1: Core\n**Plans**: 2 plans\n\n\
         ### Phase 2: Cart\n**Plans**: 3 plans\n\n### Phase 3: Checkout\n**Plans**: TBD\n",
    )
    .unwrap();
    // The package's own STATE.md template (its fenced block), positioned.
    let template =
        std::fs::read_to_string(package.join("get-shit-done/templates/state.md")).unwrap();
    let body = template
        .split_once("```markdown\n")
        .and_then(|(_, rest)| rest.split_once("\n```"))
        .map(|(block, _)| block)
        .expect("the template's block");
    let state = body
        .replace("Phase: [X] of [Y] ([Phase name])", "Phase: 2 of 3 (Cart)")
        .replace(
            "Plan: [A] of [B] in current phase",
            "Plan: 2 of 3 in current phase",
        );
    std::fs::write(planning.join("STATE.md"), state).unwrap();
    let out = std::process::Command::new(home.path().join(".local/bin/gsd-sdk"))
        .args(["query", "state.sync"])
        .current_dir(&project)
        .env("HOME", home.path())
        .env("npm_config_offline", "true")
        .output()
        .expect("gsd-sdk runs");
    assert!(out.status.success(), "{out:?}");
    let written = std::fs::read_to_string(planning.join("STATE.md")).unwrap();
    assert!(
        written.starts_with("---\n"),
        "gsd-sdk wrote frontmatter:\n{written}"
    );
    let p = clawmux::gsd::planning::Planning::read_local(&project)
        .unwrap()
        .expect("planning files");
    assert_eq!(p.phase, Some((2, 3)), "{written}");
    assert_eq!(p.phase_name.as_deref(), Some("Cart"));
    assert_eq!(p.plan, Some((2, 3)));
    assert_eq!(p.plans_done, Some((3, 5)), "{written}");
    assert_eq!(p.percent, Some(60), "{written}");
    assert_eq!(p.roadmap_phases, Some((3, 1)));
    assert!(p.status.is_some(), "{written}");
}

/// A command the installed GSD lacks is typed as sent; Claude Code's own
/// refusal comes back as a refusal card whose button runs its suggestion
/// (with the refused command's arguments).
#[test]
fn a_refused_command_offers_the_agents_suggestion() {
    let claude = claude_required();
    let package = gsd::gsd_required();
    let api = FakeApi::start_paced(vec![Turn::text("ok")], Duration::from_millis(15)).unwrap();
    let (home, env) = agent_home(&api, "shop");
    gsd::install(
        &package,
        Layout::Global,
        env.home(),
        &home.path().join("ws/shop"),
    );
    let env = gsd::agent_env(env);
    let agent = env.env_command(&claude, &["--permission-mode", "default"]);
    let mut serve = ConsoleServe::start_with_profile(&agent, home, TmuxServer::new(), "gsd");
    // `/gsd:new-project NAME` would start GSD's setup: create the project
    // with a first command the agent refuses instead.
    serve.say("/gsd:new-project shop --no-such-flag");
    let at = serve.wait(0, "└─");
    serve.say("/gsd:plan-phse 2");
    let at = serve.wait(at, "== The agent refused: shop: /gsd:plan-phse 2 ==");
    serve.wait(at, "└─");
    let out = serve.output();
    let refused = new_cards(
        &cards(&out),
        "== The agent refused: shop: /gsd:plan-phse 2 ==",
    )[0]
    .to_string();
    assert!(
        refused.contains("Unknown command: /gsd:plan-phse"),
        "{refused}"
    );
    assert!(refused.contains("Run /gsd-plan-phase 2"), "{refused}");
    assert!(!refused.contains("Finished"), "{refused}");
}
