//! Turns through Feishu that raise no dialog of their own: a reply quoting
//! dialogs and errors, and a message sent while a dialog waits.

use clawmux::agentcheck::Turn;

use super::harness::*;
use crate::support::claude::claude_required;
use crate::support::fake_feishu::{Kind, Recorded};
use crate::support::scenarios;

/// A reply quoting permission prompts, menus and error lines raises no
/// approval card and no error card, and is one result card.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quoting_reply_is_one_result_card() {
    let claude = claude_required();
    let (serve, api, _env) = start(&claude, vec![Turn::text(scenarios::QUOTING_REPLY)]).await;
    let (asked, from) = serve.new_project_then("show me the dialogs").await;
    let result = serve
        .one_turn_end(&asked, from, "shop: show me the dialogs", None)
        .await;
    let text = result.card_text();
    // Claude Code draws the `+ ` list item with `- `.
    let drawn = scenarios::QUOTING_REPLY.replace("\n+ fn", "\n- fn");
    for line in drawn.lines().filter(|l| !l.is_empty()) {
        if !text.contains(line) {
            serve.fail(&format!("{line:?} not in the result:\n{text}"));
        }
    }
    assert!(
        new_cards_of(&serve, from, "orange").is_empty(),
        "{}",
        serve.fake.listing()
    );
    assert!(
        new_cards_of(&serve, from, "red").is_empty(),
        "{}",
        serve.fake.listing()
    );
    // Nothing but the reply and the transcript around it.
    let noise: Vec<String> = screen_noise(&text)
        .into_iter()
        .filter(|n| !scenarios::QUOTING_REPLY.contains(n.as_str()))
        .collect();
    assert_eq!(noise, Vec::<String>::new(), "{text}");
    assert_eq!(serve.rows_not_on_the_pane(&result), Vec::<String>::new());
    assert_eq!(api.scripted_requests().len(), 1);
    assert_eq!(api.exhausted(), 0);
}

/// A message sent while the agent shows a dialog waits in the queue: it
/// is not typed into the dialog (where Enter would answer it). Once the
/// dialog is answered, the first turn ends once, then the queued message
/// runs as its own turn and ends once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_during_a_dialog_waits_its_turn() {
    let claude = claude_required();
    const SECOND_ANSWER: &str = "Second answer here.";
    let mut script = bash_script();
    script.push(Turn::text(SECOND_ANSWER));
    let (serve, api, _env) = start(&claude, script).await;
    let (asked, from) = serve.new_project_then("make a marker file").await;
    let approval = serve
        .card(from, "approval", |c| c.title() == "Approval needed")
        .await;
    let second = serve.say(ALICE, "and then say something").await;
    let queued = serve
        .card(from, "the second message queued", |c| {
            c.target == second.message_id
        })
        .await;
    assert_eq!(queued.title(), "Queued", "{}", serve.fake.listing());
    assert!(serve.screen_has("Do you want to proceed?"));
    assert!(!serve.workspace().join("made-by-bash.txt").exists());
    assert_eq!(api.scripted_requests().len(), 1);

    let yes = button_value(&approval, "Yes");
    let answered = serve.click(ALICE, &approval.message_id, yes).await;
    assert_eq!(answered["toast"]["type"], "success", "{answered}");
    let resolved = serve.resolved(from, &approval.message_id, "Yes").await;
    let first = serve
        .one_turn_end(&asked, from, BASH_TITLE, Some(resolved))
        .await;
    assert!(first.card_text().contains(scenarios::BASH_ANSWER));
    assert!(
        !first.card_text().contains(SECOND_ANSWER),
        "{}",
        first.card_text()
    );
    assert!(serve.workspace().join("made-by-bash.txt").exists());

    let title = "shop: and then say something";
    let result = serve.one_turn_end(&second, from, title, None).await;
    assert_eq!(
        markdowns(&result.card),
        [format!("```\n● {SECOND_ANSWER}\n```")],
        "{}",
        result.card
    );
    // The queued command started after the first one's result.
    let cards = serve.fake.sent_cards();
    let at = |pred: &dyn Fn(&Recorded) -> bool| cards.iter().position(pred);
    let first_result = at(&|c| c.kind != Kind::Patch && template(c) == "green");
    let second_progress = at(&|c| c.kind == Kind::Reply && c.title() == title);
    assert!(first_result < second_progress, "{}", serve.fake.listing());
    let scripted = api.scripted_requests();
    assert_eq!(scripted.len(), 3, "the Bash turn, its answer, the second");
    assert_eq!(api.exhausted(), 0);
}
