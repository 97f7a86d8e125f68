use serde_json::json;

use super::*;
use crate::feishu::card::{Card, MAX_REQUEST_BODY_BYTES};
use crate::feishu::markdown::unescape_code_text;
use crate::store::state::{Approval, ChatTarget};

/// A message as the card Feishu is sent.
fn feishu(message: &Message) -> serde_json::Value {
    serde_json::to_value(Card::from(message)).unwrap()
}

fn option(key: &str, label: &str) -> ApprovalOption {
    ApprovalOption {
        key: key.into(),
        label: label.into(),
        description: None,
        press: None,
        own_words: false,
    }
}

fn pending(body: &str, question: &str, options: Vec<ApprovalOption>) -> PendingApproval {
    PendingApproval {
        approval: Approval {
            id: "a1".parse().unwrap(),
            session: crate::store::ids::session("s1"),
            pane: crate::control::PaneId(0),
            kind: ApprovalKind::Permission,
            question: question.into(),
            body: body.into(),
            options,
        },
        project: crate::store::ids::project("web"),
        target: ChatTarget::Console,
        card: "card".parse().unwrap(),
        created_ms: 0,
        shown: true,
        stage: Default::default(),
    }
}

fn simple() -> PendingApproval {
    pending(
        "",
        "Do you want to proceed?",
        vec![option("1", "Yes"), option("3", "No")],
    )
}

#[test]
fn approval_card_exact_json() {
    let v = feishu(&approval_card(&simple()));
    let expected = json!({
        "schema": "2.0",
        // The card's own words in both languages; the agent's (the
        // question, the options' labels) as they are.
        "config": {"update_multi": true, "locales": ["zh_cn", "en_us"]},
        "header": {
            "title": {"tag": "plain_text", "content": "Approval needed",
                "i18n_content": {"zh_cn": "需要审批", "en_us": "Approval needed"}},
            "subtitle": {"tag": "plain_text", "content": "web · s1 · permission",
                "i18n_content": {"zh_cn": "web · s1 · 权限", "en_us": "web · s1 · permission"}},
            "template": "orange"
        },
        "body": {"elements": [
            {"tag": "markdown", "content": "```\nDo you want to proceed?\n```"},
            {"tag": "column_set", "flex_mode": "flow", "columns": [
                {"tag": "column", "width": "auto", "elements": [
                    {"tag": "button", "text": {"tag": "plain_text", "content": "Yes"}, "type": "primary",
                     "behaviors": [{"type": "callback", "value":
                        {"action": "approval", "approval_id": "a1", "project": "web", "session": "s1", "option": "1"}}]}
                ]},
                {"tag": "column", "width": "auto", "elements": [
                    {"tag": "button", "text": {"tag": "plain_text", "content": "No"}, "type": "default",
                     "behaviors": [{"type": "callback", "value":
                        {"action": "approval", "approval_id": "a1", "project": "web", "session": "s1", "option": "3"}}]}
                ]}
            ]}
        ]}
    });
    assert_eq!(v, expected);
}

/// An approval with what it is about and three options: the body above the
/// question, one button per option, each carrying its typed action.
#[test]
fn approval_with_body_and_options() {
    let a = pending(
        "Bash command\n  rm -rf build ```x```",
        "Do you want to proceed?",
        vec![
            option("1", "Yes"),
            option("2", "Yes, and don't ask again"),
            option("3", "No"),
        ],
    );
    let card = approval_card(&a);
    let code = card.text();
    assert!(
        code.starts_with("```\nBash command\n  rm -rf build ")
            && code.ends_with("\n\nDo you want to proceed?\n```"),
        "{code}"
    );
    // The body's fence cannot close the block.
    assert_eq!(code.matches("```").count(), 2, "{code}");
    assert_eq!(
        unescape_code_text(&code),
        "```\nBash command\n  rm -rf build ```x```\n\nDo you want to proceed?\n```"
    );
    let actions: Vec<CardAction> = card
        .actions()
        .into_iter()
        .map(|v| CardAction::from_value(v).unwrap())
        .collect();
    let keys: Vec<&str> = actions
        .iter()
        .map(|a| match a {
            CardAction::Approval(choice) => {
                assert_eq!(
                    (
                        &*choice.approval_id,
                        choice.project.as_str(),
                        choice.session.as_str()
                    ),
                    ("a1", "web", "s1")
                );
                choice.option.as_str()
            }
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(keys, ["1", "2", "3"]);
    let text = card.to_text();
    assert!(
        text.ends_with("[1] Yes\n[2] Yes, and don't ask again\n[3] No\n"),
        "{text}"
    );
}

#[test]
fn resolved_and_gone_cards_are_grey_without_buttons() {
    for card in [
        approval_resolved_card(&simple(), "alice", "Yes", "12:00"),
        approval_gone_card(&simple()),
    ] {
        assert_eq!(card.tone, Tone::Closed);
        assert!(card.actions().is_empty());
    }
    let text = approval_resolved_card(&simple(), "alice", "Yes", "12:00").to_text();
    assert!(text.contains("alice chose **Yes** at 12:00"), "{text}");
}

#[test]
fn error_card_shape_and_code_block() {
    let card = error_card(
        "Command failed",
        "API Error: 401 ```boom```",
        "Run `/login` in the pane.",
        vec![ActionButton::new("Help", CardAction::Help)],
    );
    let v = feishu(&card);
    assert_eq!(v["header"]["template"], "red");
    let els = v["body"]["elements"].as_array().unwrap();
    let code = els[0]["content"].as_str().unwrap();
    assert!(code.starts_with("```\n") && code.ends_with("\n```"));
    // The fence inside the error text cannot close our block.
    assert_eq!(code.matches("```").count(), 2, "{code}");
    assert_eq!(
        els[1],
        json!({"tag": "markdown", "content": "Run `/login` in the pane."})
    );
    assert_eq!(
        els[2]["columns"][0]["elements"][0]["behaviors"][0]["value"],
        json!({"action": "help"})
    );
}

#[test]
fn projects_card_select_menu() {
    let card = projects_card(
        &[
            crate::store::ids::project("api"),
            crate::store::ids::project("web"),
        ],
        Some("web"),
    );
    let v = feishu(&card);
    assert_eq!(
        v["body"]["elements"][1],
        json!({
            "tag": "select_static",
            "placeholder": {"tag": "plain_text", "content": "Choose a project",
                "i18n_content": {"zh_cn": "选择项目", "en_us": "Choose a project"}},
            "options": [
                {"text": {"tag": "plain_text", "content": "api"}, "value": "api"},
                {"text": {"tag": "plain_text", "content": "web"}, "value": "web"}
            ],
            "initial_option": "web",
            "behaviors": [{"type": "callback", "value": {"action": "select_project"}}]
        })
    );
    assert!(card.to_text().contains(" * web"));
    let zh = card.to_text_in(crate::i18n::Lang::Zh);
    assert!(
        zh.starts_with("== 项目 ==\n当前项目：**web**\n选择项目:\n"),
        "{zh}"
    );
    assert!(zh.contains(" * web"), "{zh}");
}

/// A card read back from its saved form reads in either language; the
/// agent's words stay as they are in both.
#[test]
fn a_card_reads_in_both_languages_from_its_saved_form() {
    use crate::i18n::Lang;
    let card = approval_card(&simple());
    let back: crate::message::Message =
        serde_json::from_value(serde_json::to_value(&card).unwrap()).expect("it reads back");
    assert_eq!(back.to_text_in(Lang::En), card.to_text());
    let zh = back.to_text_in(Lang::Zh);
    assert!(zh.starts_with("== 需要审批 ==\nweb · s1 · 权限\n"), "{zh}");
    assert!(
        zh.contains("Do you want to proceed?") && zh.contains("[1] Yes"),
        "{zh}"
    );
}

#[test]
fn text_rendering_numbers_buttons() {
    let text = approval_card(&simple()).to_text();
    assert_eq!(
        text,
        "== Approval needed ==\nweb · s1 · permission\n```\nDo you want to proceed?\n```\n[1] Yes\n[2] No\n"
    );
    let md = approval_card(&simple()).to_markdown();
    assert!(md.starts_with("**Approval needed**\n"));
}

#[test]
fn progress_card_has_bar_and_tail() {
    let card = progress_card("Working", "EXECUTING WAVE 1", Some(40), "line a\nline b");
    let v = feishu(&card);
    assert_eq!(v["header"]["template"], "blue");
    assert_eq!(
        v["body"]["elements"][0]["content"],
        "**EXECUTING WAVE 1**  `████░░░░░░` 40%"
    );
    assert_eq!(
        v["body"]["elements"][1]["content"],
        "```\nline a\nline b\n```"
    );
}

/// The stall card: its status in both languages with the command's
/// Interrupt, and, once over, the same title without a button.
#[test]
fn the_stall_card_offers_the_interrupt_until_it_is_over() {
    use crate::i18n::Lang;
    let project = crate::store::ids::project("web");
    let job: JobId = "j1".parse().unwrap();
    let card = stall::stalled_card("web: hello", 60, &project, &job);
    let en = card.to_text_in(Lang::En);
    assert!(en.starts_with("== No output: web: hello ==\n"), "{en}");
    assert!(en.contains("No output for 60 s"), "{en}");
    assert!(en.contains("[1] Interrupt"), "{en}");
    let zh = card.to_text_in(Lang::Zh);
    assert!(
        zh.contains("没有输出：web: hello") && zh.contains("60 秒没有输出"),
        "{zh}"
    );
    assert!(zh.contains("[1] 中断"), "{zh}");
    let v = feishu(&card);
    let value = v.to_string();
    assert!(value.contains(r#""action":"interrupt""#), "{value}");
    let over = stall::stall_over_card("web: hello", Some(75));
    let en = over.to_text_in(Lang::En);
    assert!(en.contains("Output resumed after 75 s"), "{en}");
    assert!(!en.contains("Interrupt"), "{en}");
    let ended = stall::stall_over_card("web: hello", None).to_text_in(Lang::Zh);
    assert!(ended.contains("命令已结束"), "{ended}");
}

#[test]
fn screen_card_shows_the_pane_as_code() {
    let v = feishu(&screen_card("web", "❯ ls\n```x```\n\n"));
    assert_eq!(v["header"]["title"]["content"], "Screen of web");
    let code = v["body"]["elements"][0]["content"].as_str().unwrap();
    assert!(
        code.starts_with("```\n❯ ls\n") && code.ends_with("\n```"),
        "{code}"
    );
    assert_eq!(code.matches("```").count(), 2, "{code}");
}

/// The panel of a result card: its JSON, as the card's last element.
fn panel_of(card: &Message) -> Option<serde_json::Value> {
    let v = feishu(card);
    v["body"]["elements"]
        .as_array()?
        .last()
        .filter(|e| e["tag"] == "collapsible_panel")
        .cloned()
}

#[test]
fn result_card_carries_the_screen_in_a_closed_panel() {
    let screen = "● Done.\n```\"quoted\"```\n\u{1b}[2J❯ \n\n";
    let cards = result_cards("web: /gsd:plan", "The plan has **3** steps.", Some(screen));
    assert_eq!(cards.len(), 1);
    let card = &cards[0];
    // The answer is the card's text; the screen is only in the panel.
    assert_eq!(card.text(), "The plan has **3** steps.");
    let panel = panel_of(card).expect("a screen panel");
    assert_eq!(panel["expanded"], false);
    assert_eq!(
        panel["header"]["title"],
        json!({"tag": "plain_text", "content": "Screen",
            "i18n_content": {"zh_cn": "屏幕", "en_us": "Screen"}})
    );
    let code = panel["elements"][0]["content"].as_str().unwrap();
    assert_eq!(panel["elements"][0]["tag"], "markdown");
    assert!(
        code.starts_with("```\n● Done.\n") && code.ends_with("❯\n```"),
        "{code:?}"
    );
    // The screen's own fence cannot close the panel's block; the escape
    // byte travels as JSON's \u001b, not raw.
    assert_eq!(code.matches("```").count(), 2, "{code}");
    assert!(Card::from(card).to_json().contains("\\u001b[2J"));
    assert!(body_len(card) <= TARGET_BODY_BYTES);
    // Text renderings keep the panel closed: its header, not the screen.
    let text = card.to_text();
    assert!(text.ends_with("steps.\n▸ Screen\n"), "{text}");

    // Without a screen (or an empty one), no panel.
    for none in [None, Some("  \n")] {
        let cards = result_cards("t", "answer", none);
        assert!(panel_of(&cards[0]).is_none());
    }
}

#[test]
fn a_full_last_page_puts_the_screen_on_a_card_of_its_own() {
    // A result that fills its page to the brim.
    let mut answer = String::new();
    while result_cards("t", &answer, None).len() == 1 {
        answer.push_str("word word word word word\n");
    }
    answer.truncate(answer.len() - "word word word word word\n".len());
    let screen = "row\n".repeat(10_000);
    let cards = result_cards("t", &answer, Some(&screen));
    assert_eq!(cards.len(), 2);
    assert!(panel_of(&cards[0]).is_none());
    assert_eq!(cards[0].text(), answer.trim_end());
    let panel = panel_of(&cards[1]).expect("a screen panel");
    let code = panel["elements"][0]["content"].as_str().unwrap();
    assert!(code.ends_with("row\nrow\n```") || code.ends_with("row\n```"));
    for c in &cards {
        assert!(body_len(c) <= TARGET_BODY_BYTES, "{}", body_len(c));
    }
    // The panel keeps the bottom rows, within its own cap.
    assert!(crate::feishu::markdown::body_text_len(code.as_bytes()) <= SCREEN_PANEL_BYTES);
}

use proptest::prelude::*;

/// Text that is expensive once escaped twice: quotes, backslashes,
/// control bytes, JSON log lines, backtick runs, multi-byte characters.
fn hostile() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("\"".to_string()),
        Just("\\".to_string()),
        Just("\u{1}".to_string()),
        Just("\n".to_string()),
        Just("```".to_string()),
        Just("日本語".to_string()),
        Just("*_[]<>&|".to_string()),
        Just(r#"{"level":"error","msg":"\"x\" at C:\\a\\b"}"#.to_string()),
        Just("plain words ".to_string()),
    ];
    (proptest::collection::vec(piece, 1..8), 1usize..6000)
        .prop_map(|(pieces, n)| pieces.concat().repeat(n))
}

/// Session names, up to the longest there can be.
fn session_name() -> impl Strategy<Value = String> {
    "[A-Za-z0-9_,-]{1,128}"
}

/// Ids, up to the longest there can be (an id is made only by parsing).
fn id_text() -> impl Strategy<Value = String> {
    "[A-Za-z0-9_-]{1,64}"
}

/// Project names, up to the longest there can be (a project is named only
/// by parsing).
fn project_name() -> impl Strategy<Value = String> {
    "[a-z0-9][a-z0-9._-]{0,63}"
}

fn assert_fits(card: &Message) -> Result<(), TestCaseError> {
    let b = body_len(card);
    prop_assert!(b <= TARGET_BODY_BYTES, "body of {b} bytes");
    let body = json!({"receive_id": "oc_".repeat(33), "msg_type": "interactive",
        "content": Card::from(card).to_json(), "uuid": "u".repeat(50)})
    .to_string();
    prop_assert!(
        body.len() <= MAX_REQUEST_BODY_BYTES,
        "request of {} bytes",
        body.len()
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    #[test]
    fn every_builder_fits_on_hostile_text(
        text in hostile(), other in hostile(), small in hostile(), screen in hostile(),
        id in id_text(), project in project_name(), session in session_name(),
        labels in proptest::collection::vec(hostile(), 0..14),
        projects in proptest::collection::vec(project_name(), 0..400),
    ) {
        let small = first_body_bytes(&small, 3000);
        let mut a = pending(
            &other,
            &text,
            labels
                .iter()
                .enumerate()
                .map(|(i, l)| option(&i.to_string(), l))
                .collect(),
        );
        (a.approval.id, a.project, a.approval.session) = (id.parse().unwrap(), crate::store::ids::project(&project), crate::store::ids::session(&session));
        assert_fits(&approval_card(&a))?;
        assert_fits(&approval_resolved_card(&a, small, &other, small))?;
        assert_fits(&approval_gone_card(&a))?;
        assert_fits(&progress_card(&other, small, Some(50), &text))?;
        let actions = [CardAction::Help, CardAction::Projects, CardAction::Status, a_action(&a)];
        let buttons = labels
            .iter()
            .zip(actions.iter().cycle())
            .map(|(l, act)| ActionButton::new(l.clone(), act.clone()))
            .collect();
        assert_fits(&error_card(&other, &text, &other, buttons))?;
        let projects: Vec<ProjectName> = projects.iter().map(|p| crate::store::ids::project(p)).collect();
        assert_fits(&projects_card(&projects, projects.first().map(ProjectName::as_str)))?;
        assert_fits(&info_card(&other, &text))?;
        assert_fits(&summary_card(&other, &text, small))?;
        assert_fits(&screen_card(&project, &text))?;
        for c in result_cards(small, &text, None) {
            assert_fits(&c)?;
        }
        // With the screen panel: every card fits, and the screen is shown
        // exactly once, closed.
        let with_screen = result_cards(small, &text, Some(&screen));
        let mut panels = 0;
        for c in &with_screen {
            assert_fits(c)?;
            if let Some(p) = panel_of(c) {
                prop_assert_eq!(&p["expanded"], &json!(false));
                panels += 1;
            }
        }
        let shown = !screen.trim().is_empty();
        prop_assert_eq!(panels, usize::from(shown));
    }
}

fn a_action(a: &PendingApproval) -> CardAction {
    ApprovalView::from(a).action("1")
}

#[test]
fn a_refusal_offers_the_suggested_command_with_its_arguments() {
    let line = "● Unknown command: /gsd:plan-phase. Did you mean /gsd-plan-phase?";
    assert_eq!(suggested_command(line), Some("/gsd-plan-phase"));
    assert_eq!(suggested_command("● Unknown command: /gsd:zzz"), None);
    assert_eq!(suggested_command("Did you mean ?"), None);
    assert_eq!(suggested_command("Did you mean plain?"), None);
    let card = refusal_card(
        "The agent refused: shop: /gsd:plan-phase 2",
        line,
        "check",
        &crate::store::ids::project("shop"),
        "/gsd:plan-phase 2",
        vec![ActionButton::new("Help", CardAction::Help)],
    );
    let json = feishu(&card);
    let text = json.to_string();
    assert!(text.contains("Run /gsd-plan-phase 2"), "{text}");
    let want = CardAction::Command(CommandChoice {
        project: crate::store::ids::project("shop"),
        command: "/gsd-plan-phase 2".into(),
    })
    .to_value();
    assert!(text.contains(&want.to_string()), "{text}");
    // Without a suggestion: the usual buttons only.
    let plain = refusal_card(
        "t",
        "● Unknown command: /gsd:zzz",
        "",
        &crate::store::ids::project("shop"),
        "/gsd:zzz",
        vec![],
    );
    assert!(
        !serde_json::to_string(&plain)
            .unwrap()
            .contains("\"command\"")
    );
}
