//! Replies to an approval card (a chat message whose parent is the card),
//! as answers to the real Claude Code's dialogs.
//!
//! Typed into the agent's menu, a reply's letters would do nothing and its
//! Enter would answer the focused option (the first) while the card said
//! the reply was chosen: a reply names an option, fills the question's text
//! field, or is refused.

use super::harness::*;
use crate::support::claude::claude_required;
use crate::support::fake_feishu::{Kind, Pushed, Recorded};
use crate::support::scenarios;

/// Waits until the turn asked by `asked` ended: its result card, or the
/// card saying the agent stopped (denied). The card.
async fn turn_ended(serve: &FeishuServe, asked: &Pushed, from: usize) -> Recorded {
    serve
        .card(from, "the turn's end", |c| {
            c.kind == Kind::Reply
                && c.target == asked.message_id
                && (template(c) == "green" || c.title().starts_with("Stopped:"))
        })
        .await
}

/// Replying "no" to a Bash approval card must not run the command: not
/// as an answer, and not by answering something else. If clawmux does not
/// take the reply as an answer, the card's "No" button closes the dialog.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_no_to_a_bash_card_does_not_run_the_command() {
    let claude = claude_required();
    let (serve, api, _env) = start(&claude, bash_script()).await;
    let (asked, from) = serve.new_project_then("make a marker file").await;
    let approval = serve
        .card(from, "approval", |c| c.title() == "Approval needed")
        .await;
    serve.delivered(&approval).await;
    let reply = serve
        .fake
        .push_reply(CHAT, ALICE, "no, do not run that", &approval.message_id);
    // Handled: the card turned grey, or the reply was answered.
    let handled = serve
        .card(from, "the reply handled", |c| {
            (c.kind == Kind::Patch
                && c.message_id == approval.message_id
                && c.title() != "Approval needed")
                || c.target == reply.message_id
        })
        .await;
    if handled.kind != Kind::Patch {
        let no = button_value(&approval, "No");
        let answered = serve.click(ALICE, &approval.message_id, no).await;
        assert_eq!(answered["toast"]["type"], "success", "{answered}");
    }
    turn_ended(&serve, &asked, from).await;
    let ran = serve.workspace().join("made-by-bash.txt").exists();
    let results: Vec<String> = (api.scripted_requests().iter())
        .flat_map(|r| r.tool_results())
        .collect();
    if ran {
        serve.fail(&format!(
            "the reply \"no\" ran the command; the agent was told {results:?}"
        ));
    }
}

/// A reply to a question's card is the answer typed in the question's own
/// "Type something." field: the model is told the reply's text, and the
/// card says the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_to_the_question_card_is_the_answer() {
    let claude = claude_required();
    const ANSWER: &str = "DuckDB, because we do analytics";
    let (serve, api, _env) = start(&claude, question_script()).await;
    let (asked, from) = serve.new_project_then("pick a database").await;
    let approval = serve
        .card(from, "the question", |c| c.title() == "Approval needed")
        .await;
    serve.delivered(&approval).await;
    serve
        .fake
        .push_reply(CHAT, ALICE, ANSWER, &approval.message_id);
    let resolved = serve.resolved(from, &approval.message_id, ANSWER).await;
    serve
        .one_turn_end(&asked, from, "shop: pick a database", Some(resolved))
        .await;
    let told = question_result(&api);
    // The wording around the answer changes between releases.
    let expected = format!("\"{}\"=\"{ANSWER}\"", scenarios::QUESTION);
    if !told.contains(&expected) {
        serve.fail(&format!(
            "the card says {ANSWER:?}; the model was told {told:?}"
        ));
    }
}
