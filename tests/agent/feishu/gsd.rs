//! The real GSD through Feishu: a decision checkpoint GSD's execute-phase
//! prints is an approval card whose buttons are its named options, and a
//! click on one reaches the agent; the continuation is the result.

use clawmux::agentcheck::Turn;

use super::harness::*;
use crate::support::claude::claude_required;
use crate::support::gsd::{self, Layout};

const RULE: &str = "━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━";
const CONTINUED: &str = "Continuing with sqlite: the store is written.";

/// execute-phase stopping at a decision checkpoint, as GSD prints it.
fn checkpoint() -> String {
    format!(
        "{RULE}\n GSD ► EXECUTING WAVE 1\n{RULE}\n\nTasks: 1/3 complete\n\n\
         ╔══════════════════════════════════════════════════════════════╗\n\
         ║  CHECKPOINT: Decision Required                               ║\n\
         ╚══════════════════════════════════════════════════════════════╝\n\n\
         Decision: Which store should the catalogue use?\n\n\
         Options:\n  1. redis - fast, needs a server\n  2. sqlite - one file\n\n\
         ──────────────────────────────────────────────────────────────\n\
         → Select: redis / sqlite\n\
         ──────────────────────────────────────────────────────────────"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gsd_decision_checkpoint_is_answered_by_its_button() {
    let claude = claude_required();
    let package = gsd::gsd_required();
    let script = vec![
        Turn::text("The project is set up."),
        Turn::text(&checkpoint()),
        Turn::text(CONTINUED),
    ];
    let setup = Setup {
        // The dialogs GSD's workflows meet, whatever the version's default.
        args: &["--permission-mode", "default"],
        gsd: Some((&package, Layout::Global)),
        ..Setup::default()
    };
    let (serve, api, _env) = start_setup(&claude, |_| script, setup).await;

    // clawmux creates the project, then GSD's own new-project runs in it.
    let created = serve.say(ALICE, "/gsd:new-project shop").await;
    serve
        .one_turn_end(&created, 0, "shop: /gsd:new-project", None)
        .await;

    let from = serve.fake.recorded_count();
    let asked = serve.say(ALICE, "/gsd:execute-phase 1").await;
    let approval = serve
        .card(from, "the checkpoint", |c| {
            c.title() == "Approval needed" && c.card_text().contains("CHECKPOINT")
        })
        .await;
    let labels: Vec<String> = buttons(&approval.card).into_iter().map(|b| b.0).collect();
    for option in ["redis", "sqlite"] {
        assert!(
            labels.iter().any(|l| l == option),
            "{option} not among {labels:?}"
        );
    }
    let sqlite = button_value(&approval, "sqlite");
    let answered = serve.click(ALICE, &approval.message_id, sqlite).await;
    assert_eq!(answered["toast"]["type"], "success", "{answered}");
    let resolved = serve.resolved(from, &approval.message_id, "sqlite").await;
    let title = "shop: /gsd:execute-phase 1";
    let result = serve
        .one_turn_end(&asked, from, title, Some(resolved))
        .await;
    assert!(
        result.card_text().contains(CONTINUED),
        "{}",
        result.card_text()
    );
    let last = (api.scripted_requests().last())
        .map(|r| r.body.to_string())
        .unwrap_or_default();
    assert!(
        last.contains("sqlite"),
        "the clicked answer reached the model"
    );
    assert_eq!(api.exhausted(), 0);
}
