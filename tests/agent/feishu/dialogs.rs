//! Each dialog of the real Claude Code through Feishu: one card with its
//! exact question, body and options; a click answers it (only an
//! approver's, with a true token), and the option clicked is the one that
//! reaches the agent.

use std::path::Path;

use clawmux::agentcheck::{ClaudeEnv, FakeApi, Turn};
use serde_json::json;

use super::harness::*;
use crate::support::claude::{claude_required, release_at_least};
use crate::support::fake_feishu::{Kind, Pushed, Recorded};
use crate::support::scenarios;

/// The Bash permission prompt is one approval card with its exact
/// command, question and options; clicks that may not answer it are
/// refused and type nothing; the approver's click runs the command; the
/// turn ends once, after the answer, with one result card holding the
/// agent's answer and nothing else of its screen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bash_permission_approved_by_a_click() {
    let claude = claude_required();
    let (serve, api, _env) = start(&claude, bash_script()).await;
    let (asked, from) = serve.new_project_then("make a marker file").await;
    let approval = serve
        .card(from, "approval", |c| c.title() == "Approval needed")
        .await;
    assert_eq!(approval.kind, Kind::Reply);
    assert_eq!(approval.target, asked.message_id, "replies to the prompt");
    assert_eq!(template(&approval), "orange");
    // 2.1.332 puts the description first and the command between `╌`
    // rules, and offers auto mode before No; 2.1.337 dropped the dialog's
    // `Tip:` row and draws a blank row above the first rule.
    let (body, expected) = if release_at_least("2.1.332") {
        let body = if release_at_least("2.1.337") {
            "```\nBash command\nCreate a marker file\n\ntouch made-by-bash.txt\n\nDo you want to proceed?\n```"
        } else {
            "```\nBash command\nCreate a marker file\ntouch made-by-bash.txt\n\nDo you want to proceed?\n```"
        };
        (
            body,
            vec![
                ("1", "Yes".to_owned()),
                (
                    "3",
                    "Yes, and switch to auto mode · auto mode handles these prompts for you"
                        .to_owned(),
                ),
                ("4", "No".to_owned()),
            ],
        )
    } else {
        (
            "```\nBash command\n\n  touch made-by-bash.txt\n  Create a marker file\n\nDo you want to proceed?\n```",
            vec![("1", "Yes".to_owned()), ("3", "No".to_owned())],
        )
    };
    assert_eq!(markdowns(&approval.card), [body], "{}", approval.card);
    let shown = options(&approval);
    for (key, label) in &expected {
        assert!(
            shown.contains(&(key.to_string(), label.clone())),
            "{key}. {label} not in {shown:?}"
        );
    }
    assert_eq!(shown.len(), expected.len() + 1, "{shown:?}");
    // Option 2 names the project's directory: relative before 2.1.332.
    let always = &shown[1].1;
    assert!(
        always.starts_with("Yes, and always allow access to ")
            && (always.ends_with(" shop/ from this project")
                || always.ends_with("/ws/shop from this project")),
        "{always}"
    );

    // Forged clicks, each on "No": typed, it would deny the command.
    let no = button_value(&approval, "No");
    for who in [BOB, EVE] {
        let refused = serve.click(who, &approval.message_id, no.clone()).await;
        assert_eq!(refused["toast"]["type"], "error", "{who}: {refused}");
    }
    let mut moved = no.clone();
    moved["project"] = json!("other");
    let refused = serve.click(ALICE, &approval.message_id, moved).await;
    assert_eq!(refused["toast"]["type"], "error", "{refused}");
    let mut unknown = no.clone();
    unknown["option"] = json!("9");
    let refused = serve.click(ALICE, &approval.message_id, unknown).await;
    assert_eq!(refused["toast"]["type"], "error", "{refused}");
    let mut gone = no.clone();
    gone["approval_id"] = json!("not-an-approval");
    let refused = serve.click(ALICE, &approval.message_id, gone).await;
    assert_eq!(refused["toast"]["type"], "warning", "{refused}");
    // Refused and answered at once: nothing reached the dialog.
    assert!(serve.screen_has("Do you want to proceed?"));
    assert_eq!(api.scripted_requests().len(), 1);
    assert!(
        (serve.fake.sent_cards().iter()).all(|c| !(c.kind == Kind::Patch
            && c.message_id == approval.message_id
            && c.title() != "Approval needed")),
        "{}",
        serve.fake.listing()
    );

    let yes = button_value(&approval, "Yes");
    let answered = serve.click(ALICE, &approval.message_id, yes).await;
    assert_eq!(answered["toast"]["type"], "success", "{answered}");
    assert_eq!(answered["toast"]["content"], "Sending: Yes");
    let resolved = serve.resolved(from, &approval.message_id, "Yes").await;
    let yes = button_value(&approval, "Yes");
    let again = serve.click(ALICE, &approval.message_id, yes).await;
    assert_eq!(again["toast"]["type"], "warning", "single use: {again}");

    let result = serve
        .one_turn_end(&asked, from, BASH_TITLE, Some(resolved))
        .await;
    // 2.1.332 draws the tool as `● Creating a marker file`, then in its
    // place `Ran 1 shell command`.
    let tool = if release_at_least("2.1.332") {
        "● Ran 1 shell command"
    } else {
        "● Bash(touch made-by-bash.txt)\n  ⎿  Done"
    };
    let footer = turn_footer(&result.card).unwrap_or_default();
    assert!(
        footer.ends_with(" s"),
        "the turn's duration: {}",
        result.card
    );
    assert_eq!(
        markdowns(&result.card),
        [format!("```\n{tool}\n● {}\n```", scenarios::BASH_ANSWER)],
        "{}",
        result.card
    );
    assert_eq!(screen_noise(&result.card_text()), Vec::<String>::new());
    assert_eq!(serve.rows_not_on_the_pane(&result), Vec::<String>::new());
    // The pane's screen at the turn's end goes along, closed.
    let panels = result.panels();
    assert!(
        matches!(&panels[..], [(false, screen)] if screen.contains("make a marker file") && screen.contains(scenarios::BASH_ANSWER)),
        "{panels:?}"
    );
    assert_eq!(
        new_cards_of(&serve, from, "orange").len(),
        1,
        "one dialog, one card"
    );

    // The command ran, and its result went back to the model.
    assert!(serve.workspace().join("made-by-bash.txt").exists());
    let scripted = api.scripted_requests();
    assert_eq!(scripted.len(), 2, "the answer's turn, then the next");
    assert_eq!(api.exhausted(), 0);
    let results = scripted[1].tool_results();
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(!results[0].contains("rejected"), "{results:?}");
}

/// Over the webhook, a click without the verification token is refused
/// before it reaches the daemon and types nothing; the same click with it
/// answers the prompt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_click_with_a_bad_token_is_refused_over_the_webhook() {
    let claude = claude_required();
    let (serve, api, _env) = start_setup(
        &claude,
        |_| bash_script(),
        Setup {
            webhook: true,
            ..Setup::default()
        },
    )
    .await;
    let (asked, from) = serve.new_project_then("make a marker file").await;
    let approval = serve
        .card(from, "approval", |c| c.title() == "Approval needed")
        .await;
    assert_eq!(approval.target, asked.message_id, "replies to the prompt");
    let no = button_value(&approval, "No");
    for token in ["", "not-the-token"] {
        let (status, body) = serve
            .post_click(ALICE, &approval.message_id, no.clone(), token)
            .await;
        assert_eq!(status, 401, "token {token:?}: {body}");
        assert!(body.contains("verification token"), "{body}");
    }
    assert!(serve.screen_has("Do you want to proceed?"));
    assert_eq!(api.scripted_requests().len(), 1);

    let answered = serve
        .click(ALICE, &approval.message_id, button_value(&approval, "Yes"))
        .await;
    assert_eq!(answered["toast"]["type"], "success", "{answered}");
    let resolved = serve.resolved(from, &approval.message_id, "Yes").await;
    serve
        .one_turn_end(&asked, from, BASH_TITLE, Some(resolved))
        .await;
    assert!(serve.workspace().join("made-by-bash.txt").exists());
    let scripted = api.scripted_requests();
    assert_eq!(scripted.len(), 2);
    assert_eq!(scripted[1].tool_results().len(), 1);
}

/// A question answered by a click.
struct Clicked {
    serve: FeishuServe,
    api: FakeApi,
    _env: ClaudeEnv,
    /// The prompt that led to the question.
    asked: Pushed,
    /// The card count before the prompt.
    from: usize,
    /// The index of the update that turned the question's card grey.
    resolved: usize,
}

/// AskUserQuestion: one card with the header, each option with its
/// description, and the question; a button per option, the one below the
/// inner rule too. Clicks `label` as an approver.
async fn question_clicked(claude: &Path, label: &str) -> Clicked {
    let (serve, api, _env) = start(claude, question_script()).await;
    let (asked, from) = serve.new_project_then("pick a database").await;
    let approval = serve
        .card(from, "the question", |c| c.title() == "Approval needed")
        .await;
    assert_eq!(approval.target, asked.message_id, "replies to the prompt");
    assert_eq!(
        approval.card["header"]["subtitle"]["content"],
        "shop · cm-shop · question"
    );
    assert_eq!(
        markdowns(&approval.card),
        [format!(
            "```\n☐ Database\n\n1. Postgres: Relational server, strong consistency\n\
             2. SQLite: Embedded file, zero setup\n3. DuckDB: Columnar, for analytics\n\n{}\n```",
            scenarios::QUESTION
        )],
        "{}",
        approval.card
    );
    assert_eq!(
        options(&approval),
        owned(&[
            ("1", "Postgres"),
            ("2", "SQLite"),
            ("3", "DuckDB"),
            ("4", "Type something."),
            ("5", "Chat about this"),
        ])
    );
    let value = button_value(&approval, label);
    let answered = serve.click(ALICE, &approval.message_id, value).await;
    assert_eq!(answered["toast"]["type"], "success", "{answered}");
    let resolved = serve.resolved(from, &approval.message_id, label).await;
    Clicked {
        serve,
        api,
        _env,
        asked,
        from,
        resolved,
    }
}

/// A described option clicked on the card is the one Claude Code reports
/// to the model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn question_answered_by_a_described_option() {
    let claude = claude_required();
    let Clicked {
        serve,
        api,
        asked,
        from,
        resolved,
        _env,
    } = question_clicked(&claude, "SQLite").await;
    let result = serve
        .one_turn_end(&asked, from, "shop: pick a database", Some(resolved))
        .await;
    // The wording around the answer changes between releases.
    let told = question_result(&api);
    let answer = format!("\"{}\"=\"SQLite\"", scenarios::QUESTION);
    assert!(told.contains(&answer), "{told}");
    assert!(
        result.card_text().contains(scenarios::QUESTION_ANSWER),
        "{}",
        result.card_text()
    );
    assert_eq!(screen_noise(&result.card_text()), Vec::<String>::new());
    assert_eq!(serve.rows_not_on_the_pane(&result), Vec::<String>::new());
    assert_eq!(
        new_cards_of(&serve, from, "orange").len(),
        1,
        "one dialog, one card"
    );
}

/// The option below the dialog's inner rule ("Chat about this") clicked
/// on the card reaches Claude Code: it tells the model the user wants to
/// clarify, with no answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn question_answered_by_the_option_below_the_rule() {
    let claude = claude_required();
    let Clicked {
        serve,
        api,
        asked,
        from,
        resolved,
        _env,
    } = question_clicked(&claude, "Chat about this").await;
    let result = serve
        .one_turn_end(&asked, from, "shop: pick a database", Some(resolved))
        .await;
    let told = question_result(&api);
    assert!(
        told.contains("The user wants to clarify these questions."),
        "{told}"
    );
    assert!(
        told.contains(&format!(
            "\"{}\"\n  (No answer provided)",
            scenarios::QUESTION
        )),
        "{told}"
    );
    assert!(!told.contains("=\""), "no option was chosen: {told}");
    assert_eq!(screen_noise(&result.card_text()), Vec::<String>::new());
}

/// The body and question the edit's card must hold: the file's name, the
/// numbered diff, the question.
const EDIT_CARD: &str = "```\nEdit file\nnotes.txt\n1 -hello world\n1 +goodbye world\n\
                         2  second line\n\nDo you want to make this edit to notes.txt?\n```";

/// [`EDIT_CARD`] as 2.1.337 draws it: a blank row above the diff (its
/// dialog lost the `Tip:` row).
const EDIT_CARD_2_1_337: &str = "```\nEdit file\nnotes.txt\n\n1 -hello world\n1 +goodbye world\n\
                                 2  second line\n\nDo you want to make this edit to notes.txt?\n```";

/// An edit approved by a click.
struct Edited {
    serve: FeishuServe,
    _api: FakeApi,
    _env: ClaudeEnv,
    /// The approval card as first sent.
    approval: Recorded,
    result: Recorded,
}

/// An edit approved by a click: one card with the edit's question and
/// options; the file is changed; the turn ends once with the agent's
/// answer.
async fn edit_approved_by_a_click(claude: &Path) -> Edited {
    let script = |project: &Path| {
        let notes = project.join("notes.txt").display().to_string();
        vec![
            Turn::tool("Read", json!({"file_path": notes})),
            Turn::tool(
                "Edit",
                json!({"file_path": notes, "old_string": "hello world", "new_string": "goodbye world"}),
            ),
            Turn::text(scenarios::EDIT_ANSWER),
        ]
    };
    let files = [("notes.txt", "hello world\nsecond line\n")];
    let (serve, api, env) = start_setup(
        claude,
        script,
        Setup {
            files: &files,
            ..Setup::default()
        },
    )
    .await;
    let prompt = "change the greeting in notes.txt";
    let (asked, from) = serve.new_project_then(prompt).await;
    let approval = serve
        .card(from, "approval", |c| c.title() == "Approval needed")
        .await;
    assert_eq!(approval.target, asked.message_id, "replies to the prompt");
    assert_eq!(
        approval.card["header"]["subtitle"]["content"],
        "shop · cm-shop · edit"
    );
    let edits = if release_at_least("2.1.332") {
        "Yes, and switch to accept edits (auto-approve file edits and common file commands) for this session (shift+tab)"
    } else {
        "Yes, allow all edits during this session (shift+tab)"
    };
    assert_eq!(
        options(&approval),
        owned(&[("1", "Yes"), ("2", edits), ("3", "No")])
    );
    let yes = button_value(&approval, "Yes");
    let answered = serve.click(ALICE, &approval.message_id, yes).await;
    assert_eq!(answered["toast"]["type"], "success", "{answered}");
    let resolved = serve.resolved(from, &approval.message_id, "Yes").await;
    let title = format!("{PROJECT}: {prompt}");
    let result = serve
        .one_turn_end(&asked, from, &title, Some(resolved))
        .await;
    let notes = std::fs::read_to_string(serve.workspace().join("notes.txt")).expect("notes.txt");
    assert_eq!(notes, "goodbye world\nsecond line\n");
    assert_eq!(api.exhausted(), 0);
    Edited {
        serve,
        _api: api,
        _env: env,
        approval,
        result,
    }
}

/// The edit permission prompt through Feishu, answered by a click. The
/// card's question is checked here; its diff, which the product sometimes
/// misses, in [`edit_card_holds_the_diff`].
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edit_approved_by_a_click_changes_the_file() {
    let claude = claude_required();
    let Edited {
        approval, result, ..
    } = edit_approved_by_a_click(&claude).await;
    let body = markdowns(&approval.card).join("\n");
    assert!(body.starts_with("```\nEdit file\n"), "{body}");
    assert!(
        body.ends_with("\n\nDo you want to make this edit to notes.txt?\n```"),
        "{body}"
    );
    assert!(body.contains("notes.txt\n"), "{body}");
    let text = result.card_text();
    for row in [
        "● Update(notes.txt)",
        "1 +goodbye world",
        scenarios::EDIT_ANSWER,
    ] {
        assert!(text.contains(row), "{row:?} not in\n{text}");
    }
    assert_eq!(screen_noise(&text), Vec::<String>::new());
}

/// The edit's result card holds the rows as the agent finally shows them:
/// Claude Code draws `● Reading 1 file… (ctrl+o to expand)` / `⎿
/// notes.txt` while it reads, then redraws that row in place as `Read 1
/// file (ctrl+o to expand)`; a read still running is not the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edit_result_card_holds_only_rows_the_agent_still_shows() {
    let claude = claude_required();
    let Edited { serve, result, .. } = edit_approved_by_a_click(&claude).await;
    let stale = serve.rows_not_on_the_pane(&result);
    if !stale.is_empty() {
        serve.fail(&format!(
            "rows of the result card the agent no longer shows: {stale:?}\n{}",
            result.card_text()
        ));
    }
}

/// The edit's card holds the diff Claude Code shows. Claude Code first
/// draws the dialog with `…` where the diff goes; under load the card can
/// go out from that frame (seen twice in about 30 runs beside the other
/// Feishu agent tests): it is then updated once the diff is drawn, before
/// anyone answers it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edit_card_holds_the_diff() {
    let claude = claude_required();
    let Edited {
        serve, approval, ..
    } = edit_approved_by_a_click(&claude).await;
    let shown = (serve.fake.sent_cards().into_iter())
        .rfind(|c| c.message_id == approval.message_id && c.title() == "Approval needed")
        .unwrap_or(approval);
    let expected = if release_at_least("2.1.337") {
        EDIT_CARD_2_1_337
    } else {
        EDIT_CARD
    };
    if markdowns(&shown.card) != [expected] {
        serve.fail(&format!(
            "the edit card lacks the diff:\n{}",
            markdowns(&shown.card).join("\n")
        ));
    }
}

/// Plan mode: the plan-approval dialog is one card with the plan, its
/// question and its three options; the option clicked reaches Claude Code,
/// which leaves plan mode and tells the model the plan was approved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_approved_by_a_click() {
    let claude = claude_required();
    let script = |_: &Path| {
        vec![
            Turn::tool(
                "Write",
                json!({"file_path": clawmux::agentcheck::PLAN_FILE_PLACEHOLDER, "content": scenarios::PLAN}),
            ),
            Turn::tool("ExitPlanMode", json!({})),
            Turn::text(scenarios::PLAN_ANSWER),
        ]
    };
    let args = ["--permission-mode", "plan"];
    let (serve, api, _env) = start_setup(
        &claude,
        script,
        Setup {
            args: &args,
            ..Setup::default()
        },
    )
    .await;
    let (asked, from) = serve.new_project_then("plan the parser").await;
    let approval = serve
        .card(from, "approval", |c| c.title() == "Approval needed")
        .await;
    assert_eq!(approval.target, asked.message_id, "replies to the prompt");
    // 2.1.337 asks only `Would you like to proceed?` (no "Claude has
    // written up a plan and is ready to execute."), the blank row under
    // the plan's heading instead of above it.
    let body = if release_at_least("2.1.337") {
        "```\nReady to code?\nHere is Claude's plan:\n\nParser plan\n\n1. Write the tokenizer\n\
         2. Write the parser\n3. Add tests\n\nWould you like to proceed?\n```"
    } else {
        "```\nReady to code?\n\nHere is Claude's plan:\nParser plan\n\n1. Write the tokenizer\n\
         2. Write the parser\n3. Add tests\n\nClaude has written up a plan and is ready to execute. \
         Would you like to proceed?\n```"
    };
    assert_eq!(markdowns(&approval.card), [body], "{}", approval.card);
    assert_eq!(
        options(&approval),
        owned(&[
            ("1", "Yes, and use auto mode"),
            ("2", "Yes, manually approve edits"),
            ("3", "Tell Claude what to change"),
        ])
    );
    let chosen = "Yes, manually approve edits";
    let answered = serve
        .click(ALICE, &approval.message_id, button_value(&approval, chosen))
        .await;
    assert_eq!(answered["toast"]["type"], "success", "{answered}");
    let resolved = serve.resolved(from, &approval.message_id, chosen).await;
    let result = serve
        .one_turn_end(&asked, from, "shop: plan the parser", Some(resolved))
        .await;
    assert!(
        result.card_text().contains(scenarios::PLAN_ANSWER),
        "{}",
        result.card_text()
    );
    assert_eq!(screen_noise(&result.card_text()), Vec::<String>::new());
    assert_eq!(serve.rows_not_on_the_pane(&result), Vec::<String>::new());
    // The last request holds the dialog's outcome: the plan approved (a
    // tool result), then plan mode left (a message of its own after it).
    let scripted = api.scripted_requests();
    assert_eq!(scripted.len(), 3, "Write, ExitPlanMode, the answer");
    let last = scripted[2].body["messages"].to_string();
    for said in ["User has approved your plan.", "You have exited plan mode."] {
        assert!(last.contains(said), "{said:?} not in {last}");
    }
    assert_eq!(api.exhausted(), 0);
}
