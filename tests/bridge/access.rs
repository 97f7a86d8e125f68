//! Approval integrity and access (issue 23) with real components: a real
//! tmux server per test, the simulated agent in its panes, the daemon's
//! core and actors, and the local Feishu server where clicks, replies and
//! images come from Feishu. Each test names the code that makes it pass;
//! without that code it fails.

use std::path::Path;
use std::time::Duration;

use clawmux::bridge::channels::chat::ToastLevel;
use clawmux::store::state::{OutboxEntry, OutboxOp};
use serde_json::{Value, json};

use crate::support::bridge::Shown;
use crate::support::bridge::{Bridge, button_value, is_send, test_config, until};
use crate::support::fake_feishu::{FakeFeishu, Kind, Pushed, Recorded, card_action_event};
use crate::support::feishu_serve::{card, demo_project, feishu_config, image_refused, start};
use crate::support::tmux::TmuxServer;

/// How long a pane has to show its first prompt.
const PANE_WAIT: Duration = Duration::from_secs(20);
/// How long the local Feishu server's side waits for one step.
const WAIT: Duration = Duration::from_secs(60);

/// The simulated agent's command line, with `script` when given.
fn sim(script: Option<&Path>) -> String {
    let exe = env!("CARGO_BIN_EXE_clawmux");
    match script {
        Some(path) => format!("{exe} sim-agent --script {}", path.display()),
        None => format!("{exe} sim-agent"),
    }
}

/// Writes a sim-agent script into `dir`; its path.
fn script(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("script written");
    path
}

/// A user's own session `name` running the simulated agent, ready.
fn desk_session(tmux: &TmuxServer, name: &str) {
    tmux.new_session(name, &sim(None));
    tmux.wait_for_screen(&format!("={name}:"), "❯", PANE_WAIT);
}

/// Types `line` and Enter into `target` as someone at the desk would.
fn type_at_desk(tmux: &TmuxServer, target: &str, line: &str) {
    tmux.ok(&["send-keys", "-t", target, "-l", line]);
    tmux.ok(&["send-keys", "-t", target, "Enter"]);
}

/// The new card answering chat message `id`.
async fn answer_to(b: &mut Bridge, id: &str) -> OutboxEntry {
    b.card(
        &format!("an answer to {id}"),
        |e| matches!(&e.op, OutboxOp::Send { reply_to: Some(r), .. } if r == id),
    )
    .await
}

/// Cards sent so far whose text contains `needle`.
fn count(b: &Bridge, needle: &str) -> usize {
    (b.seen.iter())
        .filter(|e| e.text().contains(needle))
        .count()
}

/// Item 2: a pane adopted from a terminal is its approvers' own. Bob, who
/// may use the bot but not approve, can neither select it, nor read its
/// screen, nor type into it, nor list every pane; nothing of his reaches
/// the pane. Alice, an approver, does all of it.
///
/// Passes by `Core::may_reach` (`src/bridge/core/admission.rs`, called by
/// `use_project`, `/gsd:screen`, `/gsd:cancel` and `submit`) and the
/// approvers-only `/gsd:sessions` arm of `Core::builtin`
/// (`src/bridge/core/builtins.rs`); without them bob's line is typed into
/// the pane and the screen with its secret is shown to him.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_adopted_pane_is_for_approvers_only() {
    let tmux = TmuxServer::new();
    desk_session(&tmux, "work");
    // Something on the user's screen that is theirs alone.
    type_at_desk(&tmux, "=work:", "export TOKEN=s3cret-on-screen");
    tmux.wait_for_screen("=work:", "You said: export TOKEN=s3cret", PANE_WAIT);
    let home = tempfile::tempdir().expect("temp dir");
    let config = test_config(&tmux.socket, home.path());
    let mut b = Bridge::start_with(tmux, home, config).await;
    let asked = b.say("oc_1", "ou_alice", "/gsd:adopt work as mine").await;
    let adopted = answer_to(&mut b, &asked).await;
    assert!(
        adopted.text().contains("== Adopted =="),
        "{}",
        adopted.text()
    );

    const REFUSED: &str = "only approvers may use it, see its screen or type into it";
    const NOT_LISTED: &str = "Only approvers may list the panes of every host";
    // Bob in his own chat: the pane cannot be made his current project.
    let asked = b.say("oc_2", "ou_bob", "/gsd:use mine").await;
    let refused = answer_to(&mut b, &asked).await;
    assert!(refused.text().contains(REFUSED), "{}", refused.text());
    let asked = b.say("oc_2", "ou_bob", "echo bob-in-his-chat").await;
    let refused = answer_to(&mut b, &asked).await;
    assert!(
        refused.text().contains("No project selected"),
        "{}",
        refused.text()
    );
    let asked = b.say("oc_2", "ou_bob", "/gsd:sessions").await;
    let refused = answer_to(&mut b, &asked).await;
    assert!(refused.text().contains(NOT_LISTED), "{}", refused.text());
    // Bob in alice's chat, where the pane is the current project.
    let asked = b.say("oc_1", "ou_bob", "echo bob-typed-this").await;
    let refused = answer_to(&mut b, &asked).await;
    assert!(refused.text().contains(REFUSED), "{}", refused.text());
    let asked = b.say("oc_1", "ou_bob", "/gsd:screen").await;
    let refused = answer_to(&mut b, &asked).await;
    assert!(refused.text().contains(REFUSED), "{}", refused.text());
    let asked = b.say("oc_1", "ou_bob", "/gsd:sessions").await;
    let refused = answer_to(&mut b, &asked).await;
    assert!(refused.text().contains(NOT_LISTED), "{}", refused.text());
    assert_eq!(count(&b, "s3cret"), 0, "the screen was shown to bob");
    assert_eq!(count(&b, "== Sessions =="), 0, "the panes were listed");

    // Alice reaches it all.
    let asked = b.say("oc_1", "ou_alice", "/gsd:screen").await;
    let screen = answer_to(&mut b, &asked).await;
    assert!(
        screen.text().contains("s3cret-on-screen"),
        "{}",
        screen.text()
    );
    let asked = b.say("oc_1", "ou_alice", "/gsd:sessions").await;
    let listed = answer_to(&mut b, &asked).await;
    assert!(
        listed.text().contains("== Sessions =="),
        "{}",
        listed.text()
    );
    assert!(listed.text().contains("work:0.0"), "{}", listed.text());
    b.say("oc_1", "ou_alice", "echo alice-typed-this").await;
    b.sent_with("You said: echo alice-typed-this").await;
    // Messages to the pane go in order: had bob's line gone in, it would
    // be on screen before alice's.
    let screen = b.tmux.capture("=work:");
    assert!(screen.contains("alice-typed-this"), "{screen}");
    assert!(
        !screen.contains("bob-"),
        "bob typed into the pane:\n{screen}"
    );
}

/// The `select_static` callback value on a projects card.
fn menu_value(card: &Value) -> Value {
    fn walk(v: &Value) -> Option<&Value> {
        if v.get("tag").and_then(Value::as_str) == Some("select_static") {
            return v.pointer("/behaviors/0/value");
        }
        match v {
            Value::Array(a) => a.iter().find_map(walk),
            Value::Object(o) => o.values().find_map(walk),
            _ => None,
        }
    }
    walk(card)
        .cloned()
        .unwrap_or_else(|| panic!("no project menu in {card}"))
}

/// Waits for the echo of `text` from the chat's current project; the
/// project's name, from the result card's title (`NAME: TEXT`).
async fn current_project(fake: &FakeFeishu, text: &str) -> String {
    let pushed = fake.push_message("oc_1", "ou_alice", text);
    let echo = card(fake, &format!("the echo of {text}"), |c| {
        c.kind == Kind::Reply
            && c.target == pushed.message_id
            && c.card_text().contains(&format!("You said: {text}"))
    })
    .await;
    let title = echo.title().to_string();
    let (project, _) = title
        .split_once(": ")
        .unwrap_or_else(|| panic!("no project in the title {title:?}"));
    project.to_string()
}

/// Item 4: a click is admitted like a message. Someone the access policy
/// does not serve picks a project in the projects menu (a `select_static`
/// callback, as Feishu sends it): refused, the chat's project stays; an
/// allowed user's same pick switches it.
///
/// Passes by `Core::admit_click` (`src/bridge/core/admission.rs`, called
/// first in `Core::on_click`); without it the stranger's pick switches the
/// group's project.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_click_from_someone_not_allowed_does_not_switch_the_project() {
    let fake = FakeFeishu::start().await;
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().expect("temp dir");
    let config = feishu_config(&tmux, home.path(), &fake);
    let _live = start(&config, home.path()).await;
    assert!(fake.wait_connected(1, WAIT).await, "long connection up");
    for name in ["demo", "other"] {
        fake.push_message("oc_1", "ou_alice", &format!("/gsd:new-project {name}"));
        card(&fake, &format!("{name}'s first result"), |c| {
            c.card_text().contains("You said: /gsd:new-project")
                && c.title().starts_with(&format!("{name}: "))
        })
        .await;
    }
    assert_eq!(current_project(&fake, "where-first").await, "other");

    let asked = fake.push_message("oc_1", "ou_alice", "/gsd:projects");
    let menu = card(&fake, "the projects menu", |c| {
        c.target == asked.message_id && c.title() == "Projects"
    })
    .await;
    let value = menu_value(&menu.card);
    let pick = |who: &str, n: u32| {
        let mut payload = card_action_event(
            &format!("ev_pick_{n}"),
            who,
            &menu.message_id,
            "oc_1",
            value.clone(),
        );
        payload["event"]["action"]["tag"] = json!("select_static");
        payload["event"]["action"]["option"] = json!("demo");
        fake.push_payload("event", &payload, 1)
    };

    let frame = pick("ou_mallory", 1);
    let refused = fake.wait_ack(&frame, WAIT).await.expect("acked").answer;
    assert_eq!(refused["toast"]["type"], "error", "{refused}");
    assert_eq!(
        current_project(&fake, "where-after-mallory").await,
        "other",
        "a stranger's click switched the project"
    );

    let frame = pick("ou_bob", 2);
    let switched = fake.wait_ack(&frame, WAIT).await.expect("acked").answer;
    assert_eq!(switched["toast"]["type"], "success", "{switched}");
    assert_eq!(current_project(&fake, "where-after-bob").await, "demo");
}

/// Who answers the first of two look-alike dialogs.
#[derive(Clone, Copy, PartialEq, Debug)]
enum FirstBy {
    /// Its card's Yes button, from chat.
    Card,
    /// A `1` typed at the desk.
    Desk,
}

/// Asks the agent `ask`, which shows a Bash dialog for each of `commands`
/// in turn, the same question and options but for the command; the first
/// is answered `by`. Each gets its own card; the first card, clicked again,
/// answers nothing; the second dialog waits for its own card's answer.
async fn look_alike_dialogs(b: &mut Bridge, ask: &str, commands: [&str; 2], by: FirstBy) {
    let approval = |e: &OutboxEntry, command: &str| {
        is_send(e) && e.text().contains("Approval needed") && e.text().contains(command)
    };
    b.say("oc_1", "ou_alice", ask).await;
    let first = b
        .card("the first command's card", |e| approval(e, commands[0]))
        .await;
    let yes = button_value(&first, "Yes");
    match by {
        FirstBy::Card => {
            let answered = b.click("oc_1", "ou_alice", yes.clone()).await;
            assert_eq!(
                answered.toast.as_ref().map(|t| t.0),
                Some(ToastLevel::Success),
                "{answered:?}"
            );
        }
        FirstBy::Desk => {
            b.tmux.ok(&["send-keys", "-t", "=cm-demo:", "1"]);
        }
    }
    let second = b
        .card("the second command's own card", |e| {
            approval(e, commands[1])
        })
        .await;
    assert_ne!(second.uuid, first.uuid);
    assert!(!second.text().contains(commands[0]), "{}", second.text());
    if by == FirstBy::Desk {
        b.card("the first card closed", |e| {
            matches!(e.op, OutboxOp::Patch { .. })
                && e.op.handle() == first.op.handle()
                && e.text().contains("Approval no longer pending")
        })
        .await;
    }
    // The first card again: answered already; the second dialog waits.
    let again = b.click("oc_1", "ou_alice", yes).await;
    assert_eq!(
        again.toast.as_ref().map(|t| t.0),
        Some(ToastLevel::Warning),
        "{again:?}"
    );
    let screen = b.tmux.capture("=cm-demo:");
    assert!(
        screen.contains(&format!("Ran {}: ok", commands[0])),
        "{screen}"
    );
    assert!(
        screen.contains(&format!("   {}", commands[1]))
            && screen.contains("Do you want to proceed?"),
        "{screen}"
    );
    assert!(
        !screen.contains(&format!("Ran {}", commands[1])),
        "the first card approved the second command:\n{screen}"
    );

    let answered = b
        .click("oc_1", "ou_alice", button_value(&second, "Yes"))
        .await;
    assert_eq!(
        answered.toast.as_ref().map(|t| t.0),
        Some(ToastLevel::Success),
        "{answered:?}"
    );
    let ran = format!("Ran {}: ok", commands[1]);
    let result = b
        .card("the turn's result", |e| {
            is_send(e) && e.text().contains(ask) && e.text().contains(&ran)
        })
        .await;
    // The answer as the agent gave it: its last words (said in the last
    // turn too) and no row of the dialogs it asked.
    assert!(
        result.text().contains("● Both ran."),
        "{by:?}: {}",
        result.text()
    );
    for command in commands {
        let dialog_row = format!("\n   {command}\n");
        assert!(
            !result.text().contains(&dialog_row),
            "{by:?}: {}",
            result.text()
        );
    }
    for command in commands {
        let cards = (b.seen.iter()).filter(|e| approval(e, command));
        assert_eq!(cards.count(), 1, "one card for {command}");
    }
}

/// Item 7: two dialogs that ask the same (the same Bash question, the same
/// options) about different commands, one right after the other, are two
/// approvals: each gets its own card, and answering the first card does
/// not answer the second dialog, however often it is clicked; the same
/// when the first is answered at the desk (its card then closes, and
/// clicking it must not approve the second command, which has taken its
/// place on screen).
///
/// Passes by the detector's `same` comparing bodies
/// (`src/detect/detector.rs`: a prompt with another body is another),
/// with `Detector::forget_prompt` after a confirmed answer
/// (`src/bridge/project/mod.rs`, `AnswerStep::Taken`), `Core::on_approval`
/// matching a known approval by body too (`src/bridge/core/approvals.rs`)
/// and `Answering::step` typing only into the dialog with the card's body
/// (`src/bridge/panes/answering.rs`). Without `same`'s body check the desk
/// round fails (the second dialog is taken for the first: no card for it,
/// and the first card still open, answering it); the chat round is held by
/// `forget_prompt` as well.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_dialogs_alike_but_for_their_command_get_a_card_each() {
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().expect("temp dir");
    let mut config = test_config(&tmux.socket, home.path());
    let two = script(
        home.path(),
        "two.sim",
        "\
on ~two commands
  spin 200 Checking…
  permission rm -rf build
  permission rm -rf dist
  say ● Both ran.
on ~two more
  spin 200 Checking…
  permission rm -rf cache
  permission rm -rf logs
  say ● Both ran.
on *
  spin 200 Thinking…
  say ● You said: $input
",
    );
    config.agent.command = sim(Some(&two));
    let mut b = Bridge::start_with(tmux, home, config).await;
    super::new_project(&mut b, "oc_1", "ou_alice", "demo").await;

    let chat = ["rm -rf build", "rm -rf dist"];
    look_alike_dialogs(&mut b, "run two commands", chat, FirstBy::Card).await;
    let desk = ["rm -rf cache", "rm -rf logs"];
    look_alike_dialogs(&mut b, "run two more", desk, FirstBy::Desk).await;
}

/// Waits until the daemon knows `card`'s chat message id (its `card` log
/// line), so a reply to it is known as one: the local server records a
/// card before the daemon hears its id.
async fn delivered(home: &Path, card: &Recorded) {
    let uuid = card.uuid.clone().unwrap_or_default();
    let logged = || {
        let log = clawmux::store::log_read::read_all(home);
        let records = log.map(|l| l.records).unwrap_or_default();
        (records.iter()).any(|r| r.kind == "card" && r.fields["uuid"] == uuid.as_str())
    };
    until(logged, "the card's message id known to the daemon").await;
}

/// The card answering pushed message `m`.
async fn reply_to(fake: &FakeFeishu, m: &Pushed, what: &str) -> Recorded {
    card(fake, what, |c| c.target == m.message_id).await
}

/// Item 9: replies to a question card, each a chat message whose parent is
/// the card. A second reply sent right behind the first, while the first
/// is being typed, is refused; so is one sent after the question was
/// answered. The agent gets the first answer once and never the others.
///
/// Passes by `Core::answer_by_reply` (`src/bridge/core/approvals.rs`):
/// "being answered already" (the approval held `Answering` until its
/// `Replied`) and "answered or closed already" (`State::close_card`);
/// without the latter the late reply is typed to the agent as a prompt
/// (seen: `You said: 3`); without the former the project's actor still
/// refuses the second Type, in other words ("an answer is still being
/// typed into this prompt"), which this test does not take.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_reply_to_a_question_card_is_refused_and_never_typed() {
    let fake = FakeFeishu::start().await;
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().expect("temp dir");
    let mut config = feishu_config(&tmux, home.path(), &fake);
    let ask = script(
        home.path(),
        "ask.sim",
        "\
on ~pick a database
  spin 200 Thinking…
  question Which database should we use? | Postgres | SQLite | Type something.
  say ● Noted the database.
on *
  spin 200 Thinking…
  say ● You said: $input
",
    );
    config.agent.command = sim(Some(&ask));
    let _live = start(&config, home.path()).await;
    assert!(fake.wait_connected(1, WAIT).await, "long connection up");
    demo_project(&fake).await;

    fake.push_message("oc_1", "ou_alice", "pick a database");
    let question = card(&fake, "the question", |c| c.title() == "Approval needed").await;
    assert!(
        question
            .card_text()
            .contains("Which database should we use?"),
        "{}",
        question.card_text()
    );
    delivered(home.path(), &question).await;

    // Two replies back to back: the second is in the daemon's queue right
    // behind the first, whose answer takes tmux round trips and two redraws
    // of the agent (the field opened, the words taken) before it is done.
    fake.push_reply("oc_1", "ou_alice", "redis", &question.message_id);
    let second = fake.push_reply("oc_1", "ou_alice", "and also redis", &question.message_id);
    let refused = reply_to(&fake, &second, "the second reply refused").await;
    assert!(
        refused.card_text().contains("being answered already"),
        "{}",
        refused.card_text()
    );
    let resolved = card(&fake, "the question answered", |c| {
        c.kind == Kind::Patch
            && c.message_id == question.message_id
            && c.card_text().contains("redis")
    })
    .await;
    assert!(
        !resolved.card_text().contains("also"),
        "{}",
        resolved.card_text()
    );
    card(&fake, "the turn's end", |c| {
        c.card_text().contains("Noted the database.")
    })
    .await;

    // After the answer: a late reply is refused, not typed as a prompt.
    let late = fake.push_reply("oc_1", "ou_alice", "3", &question.message_id);
    let refused = reply_to(&fake, &late, "the late reply refused").await;
    assert!(
        refused.card_text().contains("answered or closed already"),
        "{}",
        refused.card_text()
    );
    // Messages to the agent go in order: this one's echo comes after
    // anything typed for the replies.
    let after = fake.push_message("oc_1", "ou_alice", "after the replies");
    card(&fake, "the next message's echo", |c| {
        c.target == after.message_id && c.card_text().contains("You said: after the replies")
    })
    .await;
    let screen = tmux.capture("=cm-demo:");
    assert!(
        screen.contains("· Which database should we use? → redis\n"),
        "the first reply is the answer:\n{screen}"
    );
    assert!(
        !screen.contains("and also") && !screen.contains("You said: 3"),
        "a second reply reached the agent:\n{screen}"
    );
    let listing = fake.listing();
    assert!(!listing.contains("You said: 3"), "{listing}");
    assert!(!listing.contains("You said: and also"), "{listing}");
}

/// The answer to chat message `id` that settles an adopt or a new
/// project: `Adopted`, `Project ready` or a refusal.
async fn settled(b: &mut Bridge, id: &str) -> OutboxEntry {
    let found = answer_to(b, id).await;
    assert!(
        ["== Adopted ==", "== Project ready ==", "== Name taken =="]
            .iter()
            .any(|t| found.text().contains(t)),
        "{}",
        found.text()
    );
    found
}

/// Item 11: one name, one pane. Two adopts of different panes under one
/// name, sent back to back: one is watched, the other refused by name; an
/// adopt and a `/gsd:new-project` of one name: likewise. Text sent next
/// goes to the pane the chat was told about.
///
/// Passes by the name reservation of `Core::adopt` and `Core::name_taken`
/// (`src/bridge/core/hosts.rs`; `adopting`, kept until
/// `Core::adopt_located`, which checks the name again) and the `adopting`
/// check of `Core::new_project` (`src/bridge/core/builtins.rs`); without
/// them both adopts are told `Adopted`, and the text goes to the second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_name_goes_to_one_pane() {
    let tmux = TmuxServer::new();
    for session in ["work", "play", "desk"] {
        desk_session(&tmux, session);
    }
    let home = tempfile::tempdir().expect("temp dir");
    let config = test_config(&tmux.socket, home.path());
    let mut b = Bridge::start_with(tmux, home, config).await;

    let one = b.say("oc_1", "ou_alice", "/gsd:adopt work as api").await;
    let two = b.say("oc_1", "ou_alice", "/gsd:adopt play as api").await;
    let (one, two) = (settled(&mut b, &one).await, settled(&mut b, &two).await);
    let adopted: Vec<&OutboxEntry> = [&one, &two]
        .into_iter()
        .filter(|e| e.text().contains("== Adopted =="))
        .collect();
    assert_eq!(
        adopted.len(),
        1,
        "one adopt wins:\n{}\n---\n{}",
        one.text(),
        two.text()
    );
    let (told, other) = if adopted[0].text().contains("session **work**") {
        ("=work:", "=play:")
    } else {
        ("=play:", "=work:")
    };
    b.say("oc_1", "ou_alice", "to the api pane").await;
    b.sent_with("You said: to the api pane").await;
    assert!(b.tmux.capture(told).contains("to the api pane"));
    assert!(
        !b.tmux.capture(other).contains("to the api pane"),
        "the text went to a pane the chat was not told about"
    );

    // An adopt and a new project of one name, back to back.
    let adopt = b.say("oc_1", "ou_alice", "/gsd:adopt desk as web").await;
    let create = b.say("oc_1", "ou_alice", "/gsd:new-project web").await;
    let (adopt, create) = (
        settled(&mut b, &adopt).await,
        settled(&mut b, &create).await,
    );
    let adopted = adopt.text().contains("== Adopted ==");
    let created = create.text().contains("Created **web**");
    assert!(
        adopted != created,
        "exactly one of them makes web:\n{}\n---\n{}",
        adopt.text(),
        create.text()
    );
    b.say("oc_1", "ou_alice", "to the web pane").await;
    b.sent_with("You said: to the web pane").await;
    let desk = b.tmux.capture("=desk:").contains("to the web pane");
    assert_eq!(desk, adopted, "the text went where the chat was told");
    let made = b
        .tmux
        .run(&["has-session", "-t", "=cm-web"])
        .status
        .success();
    assert_eq!(made, created, "a session for web only when created");
}

/// An image from chat for a project with no workspace of
/// clawmux's on this machine is refused with the reason told to the chat,
/// nothing typed and nothing written: a pane adopted from a terminal
/// (before, it went to the daemon's working directory and its relative
/// path was typed into the user's shell). A project on an ssh host is the
/// peers tier's (`tests/hosts`).
///
/// Passes by `Images::folder` (`src/bridge/channels/chat_images.rs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_for_an_adopted_pane_is_refused_with_its_reason() {
    let fake = FakeFeishu::start().await;
    let tmux = TmuxServer::new();
    desk_session(&tmux, "work");
    let home = tempfile::tempdir().expect("temp dir");
    let config = feishu_config(&tmux, home.path(), &fake);
    let _live = start(&config, home.path()).await;
    assert!(fake.wait_connected(1, WAIT).await, "long connection up");

    let asked = fake.push_message("oc_1", "ou_alice", "/gsd:adopt work as mine");
    reply_to(&fake, &asked, "the pane adopted").await;
    image_refused(&fake, home.path(), "mine", "adopted from a terminal").await;
    let screen = tmux.capture("=work:");
    assert!(!screen.contains("Image from chat"), "typed:\n{screen}");
    assert!(screen.contains("after the image mine"), "{screen}");
}

/// Pane identity before every key: the project's pane made to run another
/// program under the same id (`respawn-pane`, as someone at the desk may)
/// gets no key. The command fails, saying why, and is not retried into it.
///
/// Passes by `AgentPane::check` (`src/bridge/panes/agent_pane.rs`), which
/// compares the pane's process and window with those it was attached with
/// before each key, and `ProjectError::Replaced` failing the command
/// rather than retrying it as a lost session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pane_running_another_program_gets_no_keys() {
    let mut b = Bridge::start().await;
    super::new_project(&mut b, "oc_1", "ou_alice", "demo").await;
    b.tmux
        .ok(&["respawn-pane", "-k", "-t", "=cm-demo:", "cat; sleep 600"]);
    b.say("oc_1", "ou_alice", "echo typed-after-respawn").await;
    let failed = b
        .card("the command refused", |e| {
            e.text().contains("is not the one attached")
        })
        .await;
    assert!(
        failed.text().contains("runs another process"),
        "{}",
        failed.text()
    );
    let screen = b.tmux.capture("=cm-demo:");
    assert!(!screen.contains("typed-after-respawn"), "{screen}");
}

/// `dm_policy = "pairing"`: a stranger's message gets a pairing code and
/// runs nothing; asking again gets no second card; once the operator ran
/// `clawmux pairing approve CODE` (another process, the real binary), the
/// stranger's next message is answered like anyone's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stranger_is_paired_by_the_operator_and_then_answered() {
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let mut config = test_config(&tmux.socket, home.path());
    config.policy.dm_policy = clawmux::bridge::config::DmPolicy::Pairing;
    let mut b = Bridge::start_with(tmux, home, config).await;
    let stranger = "ou_stranger";
    b.say("oc_s", stranger, "/gsd:projects").await;
    let asked = b.card_with("pairing code").await;
    let code_of = |text: &str| {
        let start = text.find("**").map(|i| i + 2)?;
        let len = text[start..].find("**")?;
        Some(text[start..start + len].to_owned())
    };
    let code = code_of(&asked.text()).unwrap_or_else(|| panic!("no code in {}", asked.text()));
    assert_eq!(code.len(), 8, "{code}");
    assert!(
        !b.events().iter().any(|r| r.kind == "command"),
        "a stranger's message ran"
    );
    // Asked again before approval: no second card (one a code: each
    // spends the app's send quota), a line in the log. Alice's answer in
    // the same chat comes after anything the daemon sent for it.
    b.say("oc_s", stranger, "/gsd:projects").await;
    b.say("oc_s", "ou_alice", "/gsd:help").await;
    b.card_with("/gsd:status").await;
    assert_eq!(count(&b, "pairing code"), 1, "a second pairing card");
    assert!(
        b.events().iter().any(|r| r.kind == "denied"
            && r.fields["reason"] == "sender is not paired (its pairing code was sent)"),
        "asking again is not in the log"
    );
    let approved = std::process::Command::new(env!("CARGO_BIN_EXE_clawmux"))
        .args(["pairing", "approve", &code])
        .env("CLAWMUX_HOME", b.home.path())
        .output()
        .unwrap();
    assert!(
        approved.status.success(),
        "{}",
        String::from_utf8_lossy(&approved.stderr)
    );
    b.say("oc_s", stranger, "/gsd:help").await;
    b.card_with("/gsd:status").await;
}

/// Item 2 of issue 34: a chat id is made by parsing where Feishu's event
/// comes in. A message whose chat id is not one (a path, a newline) is
/// dropped there: no project is made for it and nothing answers it; the
/// chat's next good message is served as ever.
///
/// Passes by `chat_id_of` (`src/bridge/channels/feishu.rs`); without it the
/// forged chats get a project and its answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_from_a_chat_id_that_is_not_one_is_dropped() {
    let fake = FakeFeishu::start().await;
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().expect("temp dir");
    let config = feishu_config(&tmux, home.path(), &fake);
    let _live = start(&config, home.path()).await;
    assert!(fake.wait_connected(1, WAIT).await, "long connection up");
    let forged: Vec<Pushed> = ["oc_1/../../x", "oc_1\nEnter", ""]
        .iter()
        .map(|chat| fake.push_message(chat, "ou_alice", "/gsd:new-project evil"))
        .collect();
    // Events are taken in order: once this one is answered, the forged
    // ones before it have been read.
    fake.push_message("oc_1", "ou_alice", "/gsd:new-project demo");
    card(&fake, "demo's first result", |c| {
        c.title().starts_with("demo: ")
    })
    .await;
    for pushed in &forged {
        let answers = (fake.sent_cards().into_iter())
            .filter(|c| c.target == pushed.message_id)
            .count();
        assert_eq!(answers, 0, "the forged chat was answered");
    }
    assert!(
        !fake
            .sent_cards()
            .iter()
            .any(|c| c.title().starts_with("evil")),
        "a project for a forged chat"
    );
}
