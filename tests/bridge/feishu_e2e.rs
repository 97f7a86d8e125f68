//! The bridge against the local Feishu-protocol server: messages arrive over
//! the long connection (pbbp2 frames), cards leave through the HTTP API,
//! clicks come back as `type=event` frames (as real Feishu sends them).

use std::time::Duration;

use serde_json::Value;

use crate::support::fake_feishu::{FakeFeishu, Kind, Recorded};
use crate::support::tmux::TmuxServer;

use crate::support::feishu_serve::{button, card, demo_project, feishu_config, start};

const WAIT: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_to_pane_to_cards_over_the_feishu_protocol() {
    let fake = FakeFeishu::start().await;
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let config = feishu_config(&tmux, home.path(), &fake);
    let mut live = start(&config, home.path()).await;
    assert!(fake.wait_connected(1, WAIT).await, "long connection up");

    fake.push_message("oc_1", "ou_alice", "/gsd:new-project demo");
    card(&fake, "project ready", |c| {
        c.card_text().contains("Created **demo**")
    })
    .await;
    card(&fake, "first result", |c| {
        c.kind == Kind::Reply && c.card_text().contains("You said: /gsd:new-project")
    })
    .await;

    let asked = fake.push_message("oc_1", "ou_alice", "/gsd:plan-phase 2");
    let approval = card(&fake, "approval", |c| c.title() == "Approval needed").await;
    assert_eq!(
        approval.target, asked.message_id,
        "the approval replies to the command"
    );
    card(&fake, "a progress update", |c| {
        c.kind == Kind::Patch && c.card_text().contains("PLANNING PHASE 2")
    })
    .await;

    // A click from someone who may not approve: refused with a toast.
    let yes = button(&approval.card, "Yes");
    let refused = fake
        .push_card_action("ou_bob", &approval.message_id, yes.clone())
        .await
        .expect("ack");
    assert_eq!(refused["toast"]["type"], "error", "{refused}");

    // Restart clawmux between the card and the click: the button still works.
    live.stop().await;
    live = start(&config, home.path()).await;
    assert!(fake.wait_connected(2, WAIT).await, "reconnected");
    let answer = fake
        .push_card_action("ou_alice", &approval.message_id, yes.clone())
        .await
        .expect("ack");
    assert_eq!(answer["toast"]["type"], "success", "{answer}");
    let resolved = card(&fake, "resolved", |c| {
        c.kind == Kind::Patch && c.message_id == approval.message_id
    })
    .await;
    assert!(
        resolved.card_text().contains("chose **Yes**"),
        "{}",
        resolved.card_text()
    );
    let again = fake
        .push_card_action("ou_alice", &approval.message_id, yes)
        .await
        .expect("ack");
    assert_eq!(again["toast"]["type"], "warning", "single use: {again}");

    card(&fake, "result", |c| {
        c.kind != Kind::Patch && c.card_text().contains("Created 2 plans for phase 2")
    })
    .await;

    // Every card Feishu got is within its limits and schema 2.0.
    for c in fake.sent_cards() {
        assert_eq!(c.card["schema"], "2.0");
        assert!(c.card.to_string().len() <= 30 * 1024);
    }
    drop(live);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_deliveries_run_once_and_feishu_errors_lose_nothing() {
    let fake = FakeFeishu::start().await;
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let config = feishu_config(&tmux, home.path(), &fake);
    let _live = start(&config, home.path()).await;
    assert!(fake.wait_connected(1, WAIT).await);

    demo_project(&fake).await;

    // Feishu answers 500 for a while and rate-limits: cards wait, then go once.
    fake.fail_for(Duration::from_secs(3));
    let pushed = fake.push_message("oc_1", "ou_alice", "say hi");
    fake.redeliver(&pushed.frame_id);
    card(&fake, "the echo", |c| {
        c.card_text().contains("You said: say hi")
    })
    .await;
    fake.rate_limit_next(2, 1);
    fake.push_message("oc_1", "ou_alice", "say bye");
    card(&fake, "the second echo", |c| {
        c.card_text().contains("You said: say bye")
    })
    .await;

    let echoes = fake
        .sent_cards()
        .iter()
        .filter(|c| c.card_text().contains("You said: say hi"))
        .count();
    assert_eq!(echoes, 1, "a redelivered message runs once");
    assert_eq!(
        fake.duplicate_uuids(),
        Vec::<String>::new(),
        "no card was sent twice"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_message_mentioning_a_colleague_is_ignored() {
    let fake = FakeFeishu::start().await;
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let config = feishu_config(&tmux, home.path(), &fake);
    assert!(config.policy.require_mention, "groups need a mention");
    let _live = start(&config, home.path()).await;
    assert!(fake.wait_connected(1, WAIT).await);

    // "@colleague /gsd:new-project other": not addressed to the bot.
    let ignored =
        fake.push_message_mentioning("oc_1", "ou_alice", "/gsd:new-project other", "ou_colleague");
    assert!(
        fake.wait_ack(&ignored.frame_id, WAIT).await.is_some(),
        "acked all the same"
    );
    fake.push_message("oc_1", "ou_alice", "/gsd:new-project demo");
    card(&fake, "project ready", |c| {
        c.card_text().contains("Created **demo**")
    })
    .await;
    // Messages are handled in order and cards go out in order: a card for
    // the first message would have come before this one.
    let listing = fake.listing();
    assert!(
        !listing.contains("other"),
        "the colleague's mention woke the bot:\n{listing}"
    );
    assert!(fake.bot_info_requests() >= 1, "the bot's open_id was asked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_card_feishu_refuses_for_good_does_not_hold_up_the_next() {
    let fake = FakeFeishu::start().await;
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let config = feishu_config(&tmux, home.path(), &fake);
    let _live = start(&config, home.path()).await;
    assert!(fake.wait_connected(1, WAIT).await);
    demo_project(&fake).await;

    // The next message call is refused for good (content too long).
    fake.reject_next(&[(230025, "The message content is too long.")]);
    fake.push_message("oc_1", "ou_alice", "say hi");
    fake.push_message("oc_1", "ou_alice", "say bye");
    card(&fake, "the second echo", |c| {
        c.card_text().contains("You said: say bye")
    })
    .await;
    let notice = card(&fake, "the chat told", |c| {
        c.title() == "A card was not delivered"
    })
    .await;
    assert!(
        notice.card_text().contains("230025"),
        "{}",
        notice.card_text()
    );
    // The refused card is kept aside in the state, and was tried once:
    // Feishu never stored its uuid.
    let state: Value = crate::support::state::read(home.path());
    let dead = state["dead_letters"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert_eq!(dead[0]["code"], 230025);
    let uuid = dead[0]["entry"]["uuid"].as_str().unwrap_or_default();
    assert!(
        fake.sent_cards()
            .iter()
            .all(|c| c.uuid.as_deref() != Some(uuid)),
        "the refused card was sent after all:\n{}",
        fake.listing()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_result_is_one_summary_card_and_one_file() {
    let fake = FakeFeishu::start().await;
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let config = feishu_config(&tmux, home.path(), &fake);
    let _live = start(&config, home.path()).await;
    assert!(fake.wait_connected(1, WAIT).await);
    demo_project(&fake).await;

    let before = fake.sent_cards().len();
    let asked = fake.push_message("oc_1", "ou_alice", "print a flood");
    let file = card(&fake, "the output as a file", |c| c.kind == Kind::File).await;
    assert_eq!(
        file.target, asked.message_id,
        "the file replies to the command"
    );
    let files = fake.files();
    assert_eq!(files.len(), 1, "one file uploaded");
    let (key, name, bytes) = &files[0];
    assert_eq!(file.card["file_key"], key.as_str());
    assert!(name.ends_with(".txt"), "{name}");
    let text = String::from_utf8_lossy(bytes);
    assert!(text.contains("20000"), "the whole flood is in the file");
    // Apart from progress updates, the result is one summary card and the file.
    let result: Vec<Recorded> = fake.sent_cards()[before..]
        .iter()
        .filter(|c| c.kind != Kind::Patch && c.title() != "Queued")
        .filter(|c| !c.card_text().contains("Running"))
        .cloned()
        .collect();
    let kinds: Vec<(Kind, String)> = result
        .iter()
        .map(|c| (c.kind, c.title().to_string()))
        .collect();
    assert_eq!(result.len(), 2, "{kinds:?}\n{}", fake.listing());
    assert!(
        result[0].card_text().contains("lines,"),
        "{}",
        result[0].card_text()
    );
    assert_eq!(result[1].kind, Kind::File);
    println!(
        "output file: {} bytes; summary card: {} bytes of JSON",
        bytes.len(),
        result[0].card.to_string().len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_from_chat_is_saved_in_the_workspace_and_its_path_typed() {
    let fake = FakeFeishu::start().await;
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let config = feishu_config(&tmux, home.path(), &fake);
    let _live = start(&config, home.path()).await;
    assert!(fake.wait_connected(1, WAIT).await);
    demo_project(&fake).await;

    let png = [&[0x89, b'P', b'N', b'G', 0x0d, 0x0a][..], &[7u8; 100]].concat();
    let pushed = fake.push_image_message("oc_1", "ou_alice", &png);
    let echo = card(&fake, "the path typed for the agent", |c| {
        c.card_text().contains("You said: Image from chat saved at")
    })
    .await;
    let path = config
        .workspace_root()
        .join("demo/.clawmux/images")
        .join(format!("{}.png", pushed.message_id));
    assert_eq!(std::fs::read(&path).expect("saved image"), png);
    assert!(
        echo.card_text().contains(&path.display().to_string()),
        "{}",
        echo.card_text()
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

/// A PNG's first bytes and a little more.
fn png() -> Vec<u8> {
    [&[0x89, b'P', b'N', b'G', 0x0d, 0x0a][..], &[7u8; 100]].concat()
}

/// An image is fetched only when its message is within the sender's rate
/// limit, and that message counts once: one over the limit is dropped
/// before anything is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_over_the_rate_limit_is_not_stored() {
    let fake = FakeFeishu::start().await;
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let mut config = feishu_config(&tmux, home.path(), &fake);
    config.policy.rate_per_minute = 3;
    let _live = start(&config, home.path()).await;
    assert!(fake.wait_connected(1, WAIT).await);
    demo_project(&fake).await;
    let images = config.workspace_root().join("demo/.clawmux/images");
    let saved = |id: &str| images.join(format!("{id}.png")).exists();

    // The second message: fetched and typed.
    let within = fake.push_image_message("oc_1", "ou_alice", &png());
    card(&fake, "the image's path typed", |c| {
        c.card_text().contains("You said: Image from chat saved at")
    })
    .await;
    assert!(saved(&within.message_id));
    // The third: still within the limit (the image counted once).
    fake.push_message("oc_1", "ou_alice", "the third message");
    card(&fake, "the third message's echo", |c| {
        c.card_text().contains("You said: the third message")
    })
    .await;
    // The fourth, an image: over the limit, dropped, not stored.
    let over = fake.push_image_message("oc_1", "ou_alice", &png());
    card(&fake, "the rate limit's answer", |c| {
        c.card_text().contains("faster than this bot accepts")
    })
    .await;
    assert!(!saved(&over.message_id), "stored before the rate limit");
}

/// A link planted where the images folder goes is not followed: the image
/// is not saved (the chat is told why), and nothing is written where the
/// link points; nothing is typed for it either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_is_never_written_through_a_symlink() {
    let fake = FakeFeishu::start().await;
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let config = feishu_config(&tmux, home.path(), &fake);
    let _live = start(&config, home.path()).await;
    assert!(fake.wait_connected(1, WAIT).await);
    demo_project(&fake).await;
    let elsewhere = tempfile::tempdir().unwrap();
    let planted = config.workspace_root().join("demo/.clawmux");
    let _ = std::fs::remove_dir_all(&planted);
    std::os::unix::fs::symlink(elsewhere.path(), &planted).unwrap();

    fake.push_image_message("oc_1", "ou_alice", &png());
    let refused = card(&fake, "the image refused", |c| {
        c.title() == "Image not saved"
    })
    .await;
    assert!(
        refused.card_text().contains("is a symbolic link"),
        "{}",
        refused.card_text()
    );
    let written: Vec<_> = std::fs::read_dir(elsewhere.path()).unwrap().collect();
    assert!(written.is_empty(), "written through the link: {written:?}");
    let listing = fake.listing();
    assert!(!listing.contains("You said: Image"), "{listing}");
}

/// A slow image download runs off the intake: another chat's message and
/// a click are handled meanwhile; the same chat's next message waits
/// behind its image, so the agent gets them in the order they were sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_image_holds_up_only_its_own_chat() {
    let fake = FakeFeishu::start().await;
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let config = feishu_config(&tmux, home.path(), &fake);
    let _live = start(&config, home.path()).await;
    assert!(fake.wait_connected(1, WAIT).await);
    demo_project(&fake).await;

    const SLOW: Duration = Duration::from_secs(8);
    fake.set_image_delay(SLOW);
    let png = [&[0x89, b'P', b'N', b'G', 0x0d, 0x0a][..], &[7u8; 100]].concat();
    fake.push_image_message("oc_1", "ou_alice", &png);
    fake.push_message("oc_1", "ou_alice", "what is in the picture");
    fake.push_message("oc_fake", "ou_bob", "/gsd:help");
    card(&fake, "the other chat's help", |c| {
        c.card_text().contains("**clawmux commands**")
    })
    .await;
    let saved = |f: &FakeFeishu| {
        (f.sent_cards().iter()).any(|c| c.card_text().contains("Image from chat saved"))
    };
    assert!(!saved(&fake), "the other chat waited for the download");
    card(&fake, "the question's echo", |c| {
        c.card_text().contains("You said: what is in the picture")
    })
    .await;
    let order: Vec<String> = (fake.sent_cards().iter())
        .map(|c| c.card_text())
        .filter(|t| t.contains("You said: Image from chat") || t.contains("You said: what is"))
        .collect();
    assert!(
        order.first().is_some_and(|t| t.contains("Image from chat")),
        "the image first, then the question: {order:?}"
    );
}

/// With `require_mention`, an image in a group is held to the same rule as
/// text: Feishu's image messages carry no mention, so it is not for the bot,
/// and it is neither typed nor fetched into the workspace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_in_a_group_without_a_mention_is_ignored_and_not_fetched() {
    image_not_fetched(true, "ou_alice").await;
}

/// An image from a sender the bot does not serve is not fetched either,
/// even where no mention is required: nobody else puts files in a
/// workspace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_from_a_stranger_is_not_fetched() {
    image_not_fetched(false, "ou_mallory").await;
}

/// Sends an image from `sender` to the group `oc_1`, which has a project;
/// checks it was neither saved nor typed.
async fn image_not_fetched(require_mention: bool, sender: &str) {
    let fake = FakeFeishu::start().await;
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let mut config = feishu_config(&tmux, home.path(), &fake);
    config.policy.require_mention = require_mention;
    let _live = start(&config, home.path()).await;
    assert!(fake.wait_connected(1, WAIT).await);
    fake.push_message("oc_1", "ou_alice", "/gsd:new-project demo");
    card(&fake, "project ready", |c| {
        c.card_text().contains("Created **demo**")
    })
    .await;

    // An image message as Feishu sends it: no mentions.
    let png = [&[0x89, b'P', b'N', b'G', 0x0d, 0x0a][..], &[7u8; 100]].concat();
    let mut image =
        crate::support::fake_feishu::message_event("ev_img_1", "om_img_1", "oc_1", sender, "");
    let message = &mut image["event"]["message"];
    message["message_type"] = serde_json::json!("image");
    message["content"] = serde_json::json!(r#"{"image_key":"img_v3_1"}"#);
    message
        .as_object_mut()
        .expect("message object")
        .remove("mentions");
    fake.add_image("om_img_1", "img_v3_1", &png);
    let frame = fake.push_payload("event", &image, 1);
    assert!(
        fake.wait_ack(&frame, WAIT).await.is_some(),
        "acked all the same"
    );
    // Messages are handled in order: once the next one is answered, the
    // image has been dealt with.
    fake.push_message("oc_1", "ou_alice", "after the image");
    card(&fake, "the next message", |c| {
        c.card_text().contains("You said: after the image")
    })
    .await;
    let images = config.workspace_root().join("demo/.clawmux/images");
    assert!(
        !images.exists(),
        "an image not for the bot was saved: {}",
        images.display()
    );
    let listing = fake.listing();
    assert!(!listing.contains("Image from chat"), "{listing}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_line_message_reaches_the_agent_with_its_lines_and_indentation() {
    let fake = FakeFeishu::start().await;
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let mut config = feishu_config(&tmux, home.path(), &fake);
    // An agent that keeps every line it is given, with a prompt between.
    config.agent.profile = "shell".into();
    config.agent.command =
        "sh -c 'while printf \"$ \"; IFS= read -r l; do printf \"%s\\n\" \"$l\" >> got.txt; done'"
            .into();
    let _live = start(&config, home.path()).await;
    assert!(fake.wait_connected(1, WAIT).await, "long connection up");
    fake.push_message("oc_1", "ou_alice", "/gsd:new-project demo");
    card(&fake, "project ready", |c| {
        c.card_text().contains("Created **demo**")
    })
    .await;
    let code = "fix this:\r\n    fn main() {\n        run();\n    }  \n\n";
    fake.push_message("oc_1", "ou_alice", code);
    let got = home.path().join("ws/demo/got.txt");
    let want = "fix this:\n    fn main() {\n        run();\n    }\n";
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let now = std::fs::read_to_string(&got).unwrap_or_default();
        if now.ends_with(want) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the agent got {now:?}, not {want:?}; cards:\n{}",
            fake.listing()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Every card carries the bridge's words in Chinese and English (each
/// reader's client shows its own); `[chat] locale = "zh_cn"` makes Chinese
/// the fallback text; the agent's words are never translated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cards_carry_chinese_and_english_and_the_agents_words_as_they_are() {
    let fake = FakeFeishu::start().await;
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let mut config = feishu_config(&tmux, home.path(), &fake);
    config.chat.locale = clawmux::i18n::Lang::Zh;
    let _live = start(&config, home.path()).await;
    assert!(fake.wait_connected(1, WAIT).await);
    fake.push_message("oc_1", "ou_alice", "/gsd:new-project demo");
    let ready = card(&fake, "project ready", |c| {
        c.card["header"]["title"]["i18n_content"]["en_us"] == "Project ready"
    })
    .await;
    let title = &ready.card["header"]["title"];
    assert_eq!(
        title["content"], "项目已就绪",
        "the chat's locale is the fallback"
    );
    assert_eq!(title["i18n_content"]["zh_cn"], "项目已就绪");
    assert_eq!(
        ready.card["config"]["locales"],
        serde_json::json!(["zh_cn", "en_us"])
    );
    let text = &ready.card["body"]["elements"][0];
    let en = text["i18n_content"]["en_us"].as_str().unwrap_or_default();
    let zh = text["i18n_content"]["zh_cn"].as_str().unwrap_or_default();
    assert!(en.starts_with("Created **demo** in `"), "{en}");
    assert!(
        zh.starts_with("已在 `") && zh.contains("创建 **demo**"),
        "{zh}"
    );
    // The agent's answer is its own: one text, no translation.
    let answer = card(&fake, "first result", |c| {
        c.card_text().contains("You said: /gsd:new-project")
    })
    .await;
    let said = (answer.card["body"]["elements"]
        .as_array()
        .into_iter()
        .flatten())
    .find(|e| {
        e["content"]
            .as_str()
            .is_some_and(|t| t.contains("You said:"))
    })
    .expect("the answer's element");
    assert!(said.get("i18n_content").is_none(), "{said}");
    // A card the bridge writes in full: the help, both languages.
    fake.push_message("oc_1", "ou_alice", "/gsd:help");
    let help = card(&fake, "help", |c| {
        c.card["header"]["title"]["i18n_content"]["en_us"] == "clawmux help"
    })
    .await;
    let help_zh = help.card["body"]["elements"][0]["i18n_content"]["zh_cn"]
        .as_str()
        .unwrap_or_default();
    assert!(
        help_zh.contains("**clawmux 命令**") && help_zh.contains("`/gsd:status`"),
        "{help_zh}"
    );
}
