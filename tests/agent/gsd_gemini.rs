//! The real GSD in the real Gemini CLI, driven from chat through `clawmux
//! serve --console`: GSD installed for Gemini by its own installer
//! (`--gemini --global`: commands `~/.gemini/commands/gsd/<name>.toml`,
//! typed `/gsd:<name>`), a command sent from chat in Claude Code's global
//! spelling (`/gsd-plan-phase 1`) and typed in the one Gemini's install
//! takes, Gemini expanding GSD's real command file, and the fake API
//! scripted to do what GSD's plan-phase tells the model to do: ask (Gemini's
//! `ask_user`), write the plan through the shell (an approval), print GSD's
//! banner.

use std::path::Path;
use std::time::Duration;

use clawmux::agentcheck::{FakeApi, Turn};
use serde_json::json;

use crate::support::gemini::{GeminiEnv, gemini_required, shell};
use crate::support::gsd;

use super::serve::{ConsoleServe, cards, new_cards, result_card, serve_shop, shop_home};

const PACE: Duration = Duration::from_millis(15);

const RULE: &str = "━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━";

/// The plan GSD's planner writes, through the shell.
const WRITE_PLAN: &str = "mkdir -p .planning/phases/01-catalogue && \
printf '%s\\n' '# Plan 01-01: Catalogue' '- [ ] list products' \
> .planning/phases/01-catalogue/01-01-PLAN.md";

/// What the first line of GSD's plan-phase command says (its TOML prompt).
const PLAN_PHASE_PROMPT: &str = "Create executable phase prompts (PLAN.md files)";

fn script() -> Vec<Turn> {
    vec![
        Turn::tool(
            "ask_user",
            json!({"questions": [{
                "question": "Research phase 1 before planning?",
                "header": "Research",
                "type": "choice",
                "options": [
                    {"label": "Research first", "description": "Spawn the phase researcher"},
                    {"label": "Skip research", "description": "Plan from the roadmap"},
                ],
            }]}),
        ),
        Turn::tool(
            "run_shell_command",
            shell(WRITE_PLAN, "Write the phase plan"),
        ),
        Turn::text(&format!(
            "{RULE}\n GSD ► PLANNING PHASE 1\n{RULE}\n\nPlans: 1/1 complete\n\n## ▶ Next Up\n/gsd:execute-phase 1"
        )),
    ]
}

/// A console daemon whose project `shop` runs Gemini CLI with GSD
/// installed for it in its HOME.
fn start(gemini: &Path, package: &Path) -> (ConsoleServe, FakeApi, GeminiEnv) {
    let api = FakeApi::start_paced(script(), PACE).unwrap();
    let (home, _) = shop_home();
    let env = GeminiEnv::new(&api.base_url());
    gsd::install_gemini(package, env.home());
    // `gsd-sdk` (linked into ~/.local/bin) on PATH, and npm offline so the
    // SessionStart update check fails at once.
    let agent = format!(
        "env PATH={}:\"$PATH\" npm_config_offline=true {}",
        env.home().join(".local/bin").display(),
        env.env_command(gemini, &[])
    );
    (serve_shop(&agent, home, "gemini"), api, env)
}

/// Chat to result: the command reaches Gemini in its install's spelling
/// and runs GSD's real plan-phase prompt; its question and its shell
/// approval are answered from chat; the plan is written and the banner
/// is the result.
#[test]
fn gsd_plan_phase_on_gemini_through_serve() {
    let gemini = gemini_required();
    let package = gsd::gsd_required();
    let (mut serve, api, _env) = start(&gemini, &package);
    serve.say("/gsd-plan-phase 1");

    // GSD's question, as Gemini's `ask_user` box.
    let at = serve.wait(0, "== Approval needed ==");
    let at = serve.wait(at, "└─");
    let first: Vec<String> = (api.scripted_requests().iter())
        .map(|r| r.body.to_string())
        .collect();
    assert!(
        first[0].contains(PLAN_PHASE_PROMPT),
        "GSD's plan-phase command reached the model: {}",
        &first[0][..first[0].len().min(3000)]
    );
    let out = serve.output();
    let all = cards(&out);
    let q = new_cards(&all, "== Approval needed ==");
    assert_eq!(q.len(), 1, "{out}");
    assert!(q[0].contains("Research phase 1 before planning?"), "{out}");
    assert!(q[0].contains("[2] Skip research"), "{out}");
    serve.say("/gsd:answer 2");

    // The planner writes its plan through the shell: Gemini asks first.
    // The answered question's box lingers a few frames with its cursor on
    // the answer before Gemini closes it: still the one question, one
    // card, closed by the answer.
    let at = serve.wait(at, "== Approval needed ==\nshop · cm-shop · permission");
    let at = serve.wait(at, "└─");
    let out = serve.output();
    let all = cards(&out);
    let approvals = new_cards(&all, "== Approval needed ==\nshop · cm-shop · permission");
    assert_eq!(approvals.len(), 1, "{out}");
    let questions = new_cards(&all, "== Approval needed ==\nshop · cm-shop · question");
    assert_eq!(questions.len(), 1, "{out}");
    for needle in [
        "mkdir -p .planning/phases/01-catalogue",
        "Allow execution of [Shell]?",
        "[1] Allow once",
    ] {
        assert!(approvals[0].contains(needle), "{needle:?} not in\n{out}");
    }
    serve.say("/gsd:answer 1");

    let at = serve.wait(at, "== shop: /gsd-plan-phase 1 ==\n**Finished");
    let at = serve.wait(at, "Plans: 1/1 complete");
    serve.wait(at, "└─");
    let out = serve.output();
    let result = result_card(&out, "/gsd-plan-phase 1");
    assert!(result.contains("PLANNING PHASE 1"), "{result}");
    assert!(result.contains("Plans: 1/1 complete"), "{result}");
    let answers: Vec<String> = (api.scripted_requests().iter())
        .flat_map(|r| r.tool_results())
        .collect();
    assert!(
        answers.iter().any(|a| a.contains("Skip research")),
        "{answers:?}"
    );
    assert!(
        serve
            .home
            .path()
            .join("ws/shop/.planning/phases/01-catalogue/01-01-PLAN.md")
            .is_file(),
        "{out}"
    );
    assert!(
        new_cards(&cards(&out), "reported an error").is_empty(),
        "{out}"
    );
    // Every dialog one card, each closed by its answer from chat.
    let all = cards(&out);
    assert_eq!(new_cards(&all, "== Approval needed ==").len(), 2, "{out}");
    for closed in ["Approval no longer pending", "Answered in the terminal"] {
        assert!(!out.contains(closed), "{closed:?} in\n{out}");
    }
}
