//! `clawmux serve` (the real binary) on the Feishu channel, pointed at the
//! local Feishu server on 127.0.0.1, driving the real Claude Code in the
//! daemon's own tmux server against the fake Messages API. Chat messages
//! arrive as `im.message.receive_v1` events and button clicks as
//! `card.action.trigger` events, over the long connection (`type=event`
//! frames, as Feishu sends them) or POSTed to the daemon's webhook; the
//! cards are the REST calls the local Feishu records.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use clawmux::agentcheck::{ClaudeEnv, FakeApi, Turn};
use serde_json::{Value, json};

use super::scenarios;
use crate::feishu::fake_server::{self, FakeFeishu, Kind, Pushed, Recorded};
use crate::support::claude::{STEP_TIMEOUT, claude_or_skip};
use crate::support::tmux::TmuxServer;

/// The group chat the bot is in (clicks from the fake server name it).
const CHAT: &str = "oc_fake";
/// May send and answer approvals.
const ALICE: &str = "ou_alice";
/// May send, may not answer approvals.
const BOB: &str = "ou_bob";
/// Neither sends nor answers: not in any list.
const EVE: &str = "ou_eve";
/// The project every test creates; its tmux session is `cm-shop`.
const PROJECT: &str = "shop";

/// A Feishu daemon, killed on drop (its tmux server with it), and the
/// local Feishu it talks to.
struct FeishuServe {
    child: Child,
    home: tempfile::TempDir,
    tmux: TmuxServer,
    fake: FakeFeishu,
    delivery: Delivery,
    /// Events posted to the webhook so far (their ids count up).
    posted: AtomicU32,
}

/// How Feishu hands the daemon its events.
enum Delivery {
    /// Over the long connection to the local Feishu.
    LongConnection,
    /// POSTed to the daemon's webhook at `url`, with the verification token.
    Webhook { url: String },
}

/// The verification token of the webhook tests.
const TOKEN: &str = "verification-token";

impl FeishuServe {
    async fn start(
        agent: &str,
        home: tempfile::TempDir,
        tmux: TmuxServer,
        webhook: bool,
    ) -> FeishuServe {
        let fake = FakeFeishu::start().await;
        let (delivery, intake) = if webhook {
            let port = free_port();
            let url = format!("http://127.0.0.1:{port}/webhook/event");
            let intake = format!(
                "mode = \"webhook\"\nwebhook_bind = \"127.0.0.1:{port}\"\nverification_token = {TOKEN:?}\n"
            );
            (Delivery::Webhook { url }, intake)
        } else {
            (
                Delivery::LongConnection,
                "mode = \"websocket\"\n".to_string(),
            )
        };
        let config = format!(
            "workspace_root = {ws:?}\n\
             [tmux]\nsocket = {socket:?}\nwidth = 120\nheight = 40\n\
             [agent]\ncommand = {agent:?}\nprofile = \"claude\"\n\
             [progress]\ninterval_secs = 1\n\
             [policy]\ndm_policy = \"allowlist\"\nallow_from = [{ALICE:?}, {BOB:?}]\n\
             group_policy = \"allowlist\"\ngroup_allow_from = [{CHAT:?}]\napprovers = [{ALICE:?}]\n\
             [feishu]\ndomain = {domain:?}\napp_id = {app_id:?}\napp_secret = {secret:?}\n{intake}",
            ws = home.path().join("ws").display().to_string(),
            socket = tmux.socket,
            domain = fake.base_url(),
            app_id = fake_server::APP_ID,
            secret = fake_server::APP_SECRET,
        );
        let config_path = home.path().join("config.toml");
        std::fs::write(&config_path, config).expect("config written");
        let log = std::fs::File::create(home.path().join("serve.log")).expect("serve log");
        let child = Command::new(env!("CARGO_BIN_EXE_clawmux"))
            .args(["serve", "--config"])
            .arg(&config_path)
            .env("CLAWMUX_HOME", home.path())
            .env("RUST_LOG", "clawmux=debug")
            .env_remove("FEISHU_APP_ID")
            .env_remove("FEISHU_APP_SECRET")
            .env_remove("FEISHU_DOMAIN")
            .env_remove("FEISHU_ENCRYPT_KEY")
            .env_remove("FEISHU_VERIFICATION_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("clawmux serve");
        let serve = FeishuServe {
            child,
            home,
            tmux,
            fake,
            delivery,
            posted: AtomicU32::new(0),
        };
        serve.wait_listening().await;
        serve
    }

    /// Waits until the daemon takes events: its long connection is up, or
    /// its webhook answers Feishu's URL verification.
    async fn wait_listening(&self) {
        let url = match &self.delivery {
            Delivery::LongConnection => {
                if !self.fake.wait_connected(1, STEP_TIMEOUT).await {
                    self.fail("the long connection never came up");
                }
                return;
            }
            Delivery::Webhook { url } => url,
        };
        let challenge = json!({"type": "url_verification", "challenge": "c-1", "token": TOKEN});
        let deadline = Instant::now() + STEP_TIMEOUT;
        loop {
            if let Ok(r) = reqwest::Client::new()
                .post(url)
                .json(&challenge)
                .send()
                .await
                && r.status().is_success()
            {
                return;
            }
            if Instant::now() >= deadline {
                self.fail("the webhook never answered");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Panics with `what`, every card Feishu got, the daemon's log and the
    /// agent's screen.
    fn fail(&self, what: &str) -> ! {
        let log = std::fs::read_to_string(self.home.path().join("serve.log")).unwrap_or_default();
        let pane = self.tmux.run(&["capture-pane", "-p", "-t", "cm-shop"]);
        panic!(
            "{what}\ncards:\n{}\nserve log:\n{log}\npane:\n{}",
            self.fake.listing(),
            String::from_utf8_lossy(&pane.stdout)
        );
    }

    /// The first card from index `from` on matching `pred`.
    async fn card(&self, from: usize, what: &str, pred: impl Fn(&Recorded) -> bool) -> Recorded {
        match self.fake.wait_for_card_from(from, pred, STEP_TIMEOUT).await {
            Some(c) => c,
            None => self.fail(&format!("no card {what}")),
        }
    }

    /// `text` sent to the group by `from`, mentioning the bot.
    async fn say(&self, from: &str, text: &str) -> Pushed {
        let url = match &self.delivery {
            Delivery::LongConnection => return self.fake.push_message(CHAT, from, text),
            Delivery::Webhook { url } => url,
        };
        let n = self.posted.fetch_add(1, Ordering::Relaxed);
        let (event_id, message_id) = (format!("ev_w{n}"), format!("om_w{n}"));
        let event = fake_server::message_event(&event_id, &message_id, CHAT, from, text);
        match fake_server::post_event(url, TOKEN, &event).await {
            Ok((200, _)) => {}
            other => self.fail(&format!("the webhook refused {text:?}: {other:?}")),
        }
        Pushed {
            frame_id: String::new(),
            event_id,
            message_id,
        }
    }

    /// Clicks `value` on card `message_id` as `who`; the answer Feishu
    /// shows (a toast).
    async fn click(&self, who: &str, message_id: &str, value: Value) -> Value {
        let answer = match &self.delivery {
            Delivery::LongConnection => self.fake.push_card_action(who, message_id, value).await,
            Delivery::Webhook { .. } => {
                match self.post_click(who, message_id, value, TOKEN).await {
                    (200, body) => serde_json::from_str(&body).ok(),
                    other => self.fail(&format!("the webhook refused a click: {other:?}")),
                }
            }
        };
        answer.unwrap_or_else(|| self.fail(&format!("the click of {who} was never answered")))
    }

    /// Posts a click to the webhook with `token`: the HTTP status and body.
    async fn post_click(
        &self,
        who: &str,
        message_id: &str,
        value: Value,
        token: &str,
    ) -> (u16, String) {
        let Delivery::Webhook { url } = &self.delivery else {
            self.fail("no webhook to post to");
        };
        let n = self.posted.fetch_add(1, Ordering::Relaxed);
        let event =
            fake_server::card_action_event(&format!("ev_w{n}"), who, message_id, CHAT, value);
        fake_server::post_event(url, token, &event)
            .await
            .unwrap_or_else(|e| self.fail(&format!("cannot post a click: {e}")))
    }

    /// Creates the project (GSD is not installed: Claude Code rejects
    /// `/gsd:new-project` itself, without a model call), then sends
    /// `prompt`. Returns the prompt's message and the card count before it.
    async fn new_project_then(&self, prompt: &str) -> (Pushed, usize) {
        self.say(ALICE, &format!("/gsd:new-project {PROJECT}"))
            .await;
        let refused = format!("The agent refused: {PROJECT}: /gsd:new-project");
        self.card(0, "refusing /gsd:new-project", |c| c.title() == refused)
            .await;
        let from = self.fake.recorded_count();
        (self.say(ALICE, prompt).await, from)
    }

    fn workspace(&self) -> std::path::PathBuf {
        self.home.path().join("ws").join(PROJECT)
    }
}

impl Drop for FeishuServe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A loopback port free a moment ago, for the daemon's webhook (which
/// does not say which port it got when given 0). The kernel picks bound
/// ephemeral ports at random, so another test taking it in between is
/// unlikely; it would show as the webhook never answering.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("its address").port()
}

async fn start(claude: &Path, script: Vec<Turn>) -> (FeishuServe, FakeApi, ClaudeEnv) {
    start_with(claude, script, false).await
}

async fn start_with(
    claude: &Path,
    script: Vec<Turn>,
    webhook: bool,
) -> (FeishuServe, FakeApi, ClaudeEnv) {
    start_args(claude, |_| script, webhook, &[], &[]).await
}

/// Starts the daemon with `claude args` as its agent, after writing
/// `files` (name, content) into the project's directory; `script` gets
/// that directory.
async fn start_args(
    claude: &Path,
    script: impl FnOnce(&Path) -> Vec<Turn>,
    webhook: bool,
    args: &[&str],
    files: &[(&str, &str)],
) -> (FeishuServe, FakeApi, ClaudeEnv) {
    let api = FakeApi::start_paced(Vec::new(), Duration::from_millis(15)).expect("fake API");
    let home = tempfile::Builder::new()
        .prefix("cmx")
        .tempdir_in("/tmp")
        .expect("home");
    std::fs::create_dir(home.path().join("ws")).expect("workspace root");
    let mut env = ClaudeEnv::new(&api.base_url()).expect("claude env");
    let project = home.path().join("ws").join(PROJECT);
    env.trust(&project).expect("trust the project");
    if !files.is_empty() {
        std::fs::create_dir(&project).expect("project directory");
        for (name, content) in files {
            std::fs::write(project.join(name), content).expect("project file");
        }
    }
    api.push(script(&project));
    let agent = env.env_command(claude, args);
    let serve = FeishuServe::start(&agent, home, TmuxServer::new(), webhook).await;
    (serve, api, env)
}

fn template(c: &Recorded) -> &str {
    c.card["header"]["template"].as_str().unwrap_or_default()
}

/// The buttons of a card: (label, callback value), in order.
fn buttons(card: &Value) -> Vec<(String, Value)> {
    fn walk(v: &Value, out: &mut Vec<(String, Value)>) {
        if v.get("tag").and_then(Value::as_str) == Some("button") {
            let label = v.pointer("/text/content").and_then(Value::as_str);
            let value = v.pointer("/behaviors/0/value");
            if let (Some(label), Some(value)) = (label, value) {
                out.push((label.to_string(), value.clone()));
            }
        }
        match v {
            Value::Array(a) => a.iter().for_each(|i| walk(i, out)),
            Value::Object(o) => o.values().for_each(|i| walk(i, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(card, &mut out);
    out
}

/// The markdown elements of a card, in order.
fn markdowns(card: &Value) -> Vec<String> {
    card["body"]["elements"]
        .as_array()
        .map(|els| {
            els.iter()
                .filter(|e| e["tag"] == "markdown")
                .filter_map(|e| e["content"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The AskUserQuestion of the recorded scenario, then its answer.
fn question_script() -> Vec<Turn> {
    vec![
        Turn::tool(
            "AskUserQuestion",
            json!({"questions": [{
                "question": scenarios::QUESTION,
                "header": "Database",
                "multiSelect": false,
                "options": [
                    {"label": "Postgres", "description": "Relational server, strong consistency"},
                    {"label": "SQLite", "description": "Embedded file, zero setup"},
                    {"label": "DuckDB", "description": "Columnar, for analytics"}
                ]
            }]}),
        ),
        Turn::text(scenarios::QUESTION_ANSWER),
    ]
}

/// What a result card must not hold: the agent's screen around its answer
/// (spinner, tip, input box, footer) or a dialog's rows.
fn screen_noise(text: &str) -> Vec<String> {
    const NOISE: &[&str] = &[
        "Tip:",
        "tokens)",
        "esc to interrupt",
        "? for shortcuts",
        "focus-events",
        "Esc to cancel",
        "shift+tab",
        "───",
        "❯",
        "Do you want to proceed?",
        "1. Yes",
        "3. No",
        "Chat about this",
        "Enter to select",
    ];
    let mut found: Vec<String> = NOISE
        .iter()
        .filter(|n| text.contains(**n))
        .map(|n| n.to_string())
        .collect();
    // Spinner rows, running (`✶ Baking… (1s …)`) or done (`✻ Baked for 0s`).
    for line in text.lines() {
        if line.trim_start().starts_with(['✻', '✢', '✽', '✶', '✳']) {
            found.push(line.to_string());
        }
    }
    found
}

/// Cards from index `from` on, not updates, with this header template.
fn new_cards_of(serve: &FeishuServe, from: usize, color: &str) -> Vec<Recorded> {
    serve.fake.sent_cards()[from..]
        .iter()
        .filter(|c| c.kind != Kind::Patch && template(c) == color)
        .cloned()
        .collect()
}

impl FeishuServe {
    /// Sends `/gsd:status` (answered by clawmux itself) and waits for its
    /// card: the cards queued for what came before it have gone out
    /// (the outbox delivers in order). Returns the card count then.
    async fn barrier(&self) -> usize {
        let asked = self.say(ALICE, "/gsd:status").await;
        self.card(0, "answering /gsd:status", |c| {
            c.kind == Kind::Reply && c.target == asked.message_id
        })
        .await;
        self.fake.recorded_count()
    }

    /// Checks that the turn asked by `asked` (its cards from index `from`
    /// on) was reported ended exactly once (one result card titled
    /// `title`, one "Finished" on its progress card, one DONE reaction),
    /// not before index `after` (its dialog's answer), with no error card
    /// and no panic in the daemon. Returns the result card.
    async fn one_turn_end(
        &self,
        asked: &Pushed,
        from: usize,
        title: &str,
        after: Option<usize>,
    ) -> Recorded {
        let progress = self
            .card(from, "the progress card", |c| {
                c.kind == Kind::Reply
                    && c.target == asked.message_id
                    && c.title() == title
                    && template(c) == "blue"
            })
            .await;
        self.card(from, "the result", |c| {
            c.kind == Kind::Reply && c.target == asked.message_id && template(c) == "green"
        })
        .await;
        let to = self.barrier().await;
        let cards = &self.fake.sent_cards()[..to];
        // Result cards of this turn: replies to its prompt, or sent with
        // its title anywhere.
        let results: Vec<usize> = (from..to)
            .filter(|&i| {
                let c = &cards[i];
                c.kind != Kind::Patch
                    && template(c) == "green"
                    && (c.target == asked.message_id || c.title() == title)
            })
            .collect();
        if results.len() != 1 {
            self.fail(&format!("{} result cards, expected 1", results.len()));
        }
        let finished: Vec<usize> = (from..to)
            .filter(|&i| {
                cards[i].kind == Kind::Patch
                    && cards[i].message_id == progress.message_id
                    && cards[i].card_text().contains("**Finished in")
            })
            .collect();
        if finished.len() != 1 {
            self.fail(&format!(
                "the progress card says Finished {} times, expected once",
                finished.len()
            ));
        }
        if let Some(after) = after
            && (results[0] < after || finished[0] < after)
        {
            self.fail("the turn was reported finished before its dialog was answered");
        }
        let done: Vec<_> = (self.fake.reactions().into_iter())
            .filter(|(m, e)| *m == asked.message_id && e == "DONE")
            .collect();
        if done.len() != 1 {
            self.fail(&format!("{} DONE reactions, expected 1", done.len()));
        }
        if !new_cards_of(self, from, "red").is_empty() {
            self.fail("an error card during the turn");
        }
        let log = std::fs::read_to_string(self.home.path().join("serve.log")).unwrap_or_default();
        if log.contains("panicked") {
            self.fail("the daemon panicked");
        }
        let result = cards[results[0]].clone();
        if result.card_text().is_empty() || result.title() != title {
            self.fail(&format!("the result card is not {title}'s"));
        }
        result
    }

    /// The index of the update turning the approval card `message_id` grey.
    async fn resolved(&self, from: usize, message_id: &str, choice: &str) -> usize {
        let patch = self
            .card(from, "the approval resolved", |c| {
                c.kind == Kind::Patch && c.message_id == message_id
            })
            .await;
        assert_eq!(patch.title(), "Approval answered", "{}", patch.card);
        assert_eq!(template(&patch), "grey");
        assert!(
            patch.card_text().contains(&format!("chose **{choice}**")),
            "{}",
            patch.card_text()
        );
        assert!(buttons(&patch.card).is_empty(), "{}", patch.card);
        let cards = self.fake.sent_cards();
        (from..cards.len())
            .find(|&i| cards[i].kind == Kind::Patch && cards[i].message_id == message_id)
            .unwrap_or_else(|| self.fail("the resolved approval card vanished"))
    }

    /// The rows of the result card `result` that the agent's pane (its
    /// screen and scrollback) does not show now: a row drawn while the
    /// agent worked and replaced since, or one the card made up.
    fn rows_not_on_the_pane(&self, result: &Recorded) -> Vec<String> {
        let pane = self
            .tmux
            .run(&["capture-pane", "-p", "-S", "-", "-t", "cm-shop"]);
        let pane = String::from_utf8_lossy(&pane.stdout).replace('\u{a0}', " ");
        let text = result.card_text();
        text.lines()
            .map(str::trim)
            .filter(|row| !row.is_empty() && !row.starts_with("```"))
            .filter(|row| !pane.contains(row))
            .map(str::to_string)
            .collect()
    }

    /// The pane shows `needle` now.
    fn screen_has(&self, needle: &str) -> bool {
        let pane = self.tmux.run(&["capture-pane", "-p", "-t", "cm-shop"]);
        String::from_utf8_lossy(&pane.stdout).contains(needle)
    }
}

/// The option labels and keys of an approval card's buttons, checked
/// against the approval and project each one names.
fn options(card: &Recorded) -> Vec<(String, String)> {
    buttons(&card.card)
        .into_iter()
        .map(|(label, value)| {
            assert_eq!(value["action"], "approval", "{value}");
            assert_eq!(value["project"], PROJECT, "{value}");
            assert_eq!(value["session"], "cm-shop", "{value}");
            let key = value["option"].as_str().unwrap_or_default().to_string();
            (key, label)
        })
        .collect()
}

fn button_value(card: &Recorded, label: &str) -> Value {
    buttons(&card.card)
        .into_iter()
        .find(|(l, _)| l == label)
        .map(|(_, v)| v)
        .unwrap_or_else(|| panic!("no button {label} in {}", card.card))
}

fn owned(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, l)| (k.to_string(), l.to_string()))
        .collect()
}

const BASH_TITLE: &str = "shop: make a marker file";

/// The Bash permission prompt is one approval card with its exact
/// command, question and options; clicks that may not answer it are
/// refused and type nothing; the approver's click runs the command; the
/// turn ends once, after the answer, with one result card holding the
/// agent's answer and nothing else of its screen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bash_permission_approved_by_a_click() {
    let Some(claude) = claude_or_skip("agent::feishu::bash_permission_approved_by_a_click") else {
        return;
    };
    let (serve, api, _env) = start(&claude, bash_script()).await;
    let (asked, from) = serve.new_project_then("make a marker file").await;
    let approval = serve
        .card(from, "approval", |c| c.title() == "Approval needed")
        .await;
    assert_eq!(approval.kind, Kind::Reply);
    assert_eq!(approval.target, asked.message_id, "replies to the prompt");
    assert_eq!(template(&approval), "orange");
    assert_eq!(
        markdowns(&approval.card),
        [
            "```\nBash command\n\n  touch made-by-bash.txt\n  Create a marker file\n\nDo you want to proceed?\n```"
        ],
        "{}",
        approval.card
    );
    assert_eq!(
        options(&approval),
        owned(&[
            ("1", "Yes"),
            (
                "2",
                "Yes, and always allow access to shop/ from this project"
            ),
            ("3", "No"),
        ])
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
        (serve.fake.sent_cards().iter())
            .all(|c| !(c.kind == Kind::Patch && c.message_id == approval.message_id)),
        "{}",
        serve.fake.listing()
    );

    let yes = button_value(&approval, "Yes");
    let answered = serve.click(ALICE, &approval.message_id, yes).await;
    assert_eq!(answered["toast"]["type"], "success", "{answered}");
    assert_eq!(answered["toast"]["content"], "Answered: Yes");
    let resolved = serve.resolved(from, &approval.message_id, "Yes").await;
    let yes = button_value(&approval, "Yes");
    let again = serve.click(ALICE, &approval.message_id, yes).await;
    assert_eq!(again["toast"]["type"], "warning", "single use: {again}");

    let result = serve
        .one_turn_end(&asked, from, BASH_TITLE, Some(resolved))
        .await;
    assert_eq!(
        markdowns(&result.card),
        [format!(
            "```\n● Bash(touch made-by-bash.txt)\n  ⎿  Done\n● {}\n```",
            scenarios::BASH_ANSWER
        )],
        "{}",
        result.card
    );
    assert_eq!(screen_noise(&result.card_text()), Vec::<String>::new());
    assert_eq!(serve.rows_not_on_the_pane(&result), Vec::<String>::new());
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

/// The question's tool result, from the request after the question.
fn question_result(api: &FakeApi) -> String {
    let scripted = api.scripted_requests();
    assert_eq!(scripted.len(), 2, "the question's turn, then the next");
    assert_eq!(api.exhausted(), 0);
    let results = scripted[1].tool_results();
    assert_eq!(results.len(), 1, "{results:?}");
    results[0].clone()
}

/// A described option clicked on the card is the one Claude Code reports
/// to the model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn question_answered_by_a_described_option() {
    let Some(claude) = claude_or_skip("agent::feishu::question_answered_by_a_described_option")
    else {
        return;
    };
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
    assert_eq!(
        question_result(&api),
        format!(
            "Your questions have been answered: \"{}\"=\"SQLite\". You can now continue with these answers in mind.",
            scenarios::QUESTION
        )
    );
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
    let Some(claude) =
        claude_or_skip("agent::feishu::question_answered_by_the_option_below_the_rule")
    else {
        return;
    };
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

/// A reply quoting permission prompts, menus and error lines raises no
/// approval card and no error card, and is one result card.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quoting_reply_is_one_result_card() {
    let Some(claude) = claude_or_skip("agent::feishu::quoting_reply_is_one_result_card") else {
        return;
    };
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

fn bash_script() -> Vec<Turn> {
    vec![
        Turn::tool(
            "Bash",
            json!({"command": "touch made-by-bash.txt", "description": "Create a marker file"}),
        ),
        Turn::text(scenarios::BASH_ANSWER),
    ]
}

/// Over the webhook, a click without the verification token is refused
/// before it reaches the daemon and types nothing; the same click with it
/// answers the prompt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_click_with_a_bad_token_is_refused_over_the_webhook() {
    let Some(claude) =
        claude_or_skip("agent::feishu::a_click_with_a_bad_token_is_refused_over_the_webhook")
    else {
        return;
    };
    let (serve, api, _env) = start_with(&claude, bash_script(), true).await;
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

// The two reply tests below are ignored because they fail on a bug in the
// product: clawmux types a reply's text and Enter into the agent's menu,
// where the letters do nothing and Enter answers the focused option (the
// first), while the card says the reply's text was chosen. Run them with
// `cargo test --test tests -- agent::feishu --ignored`.

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
#[ignore = "bug: a reply to an approval card answers its focused first option"]
async fn a_reply_no_to_a_bash_card_does_not_run_the_command() {
    let Some(claude) =
        claude_or_skip("agent::feishu::a_reply_no_to_a_bash_card_does_not_run_the_command")
    else {
        return;
    };
    let (serve, api, _env) = start(&claude, bash_script()).await;
    let (asked, from) = serve.new_project_then("make a marker file").await;
    let approval = serve
        .card(from, "approval", |c| c.title() == "Approval needed")
        .await;
    let reply = serve
        .fake
        .push_reply(CHAT, ALICE, "no, do not run that", &approval.message_id);
    // Handled: the card turned grey, or the reply was answered.
    let handled = serve
        .card(from, "the reply handled", |c| {
            (c.kind == Kind::Patch && c.message_id == approval.message_id)
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
#[ignore = "bug: a reply to an approval card answers its focused first option"]
async fn a_reply_to_the_question_card_is_the_answer() {
    let Some(claude) = claude_or_skip("agent::feishu::a_reply_to_the_question_card_is_the_answer")
    else {
        return;
    };
    const ANSWER: &str = "DuckDB, because we do analytics";
    let (serve, api, _env) = start(&claude, question_script()).await;
    let (asked, from) = serve.new_project_then("pick a database").await;
    let approval = serve
        .card(from, "the question", |c| c.title() == "Approval needed")
        .await;
    serve
        .fake
        .push_reply(CHAT, ALICE, ANSWER, &approval.message_id);
    let resolved = serve.resolved(from, &approval.message_id, ANSWER).await;
    serve
        .one_turn_end(&asked, from, "shop: pick a database", Some(resolved))
        .await;
    let told = question_result(&api);
    let expected = format!(
        "Your questions have been answered: \"{}\"=\"{ANSWER}\". You can now continue with these answers in mind.",
        scenarios::QUESTION
    );
    if told != expected {
        serve.fail(&format!(
            "the card says {ANSWER:?}; the model was told {told:?}"
        ));
    }
}

/// A message sent while the agent shows a dialog waits in the queue: it
/// is not typed into the dialog (where Enter would answer it). Once the
/// dialog is answered, the first turn ends once, then the queued message
/// runs as its own turn and ends once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_during_a_dialog_waits_its_turn() {
    let Some(claude) = claude_or_skip("agent::feishu::a_message_during_a_dialog_waits_its_turn")
    else {
        return;
    };
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

/// An edit approved by a click: the card holds the file's name, the diff
/// and the question; the file is changed; the turn ends once with the
/// agent's answer. Returns the daemon and the result card.
async fn edit_approved_by_a_click(claude: &Path) -> (FeishuServe, FakeApi, ClaudeEnv, Recorded) {
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
    let (serve, api, env) = start_args(claude, script, false, &[], &files).await;
    let prompt = "change the greeting in notes.txt";
    let (asked, from) = serve.new_project_then(prompt).await;
    let approval = serve
        .card(from, "approval", |c| c.title() == "Approval needed")
        .await;
    assert_eq!(approval.target, asked.message_id, "replies to the prompt");
    assert_eq!(
        markdowns(&approval.card),
        [
            "```\nEdit file\nnotes.txt\n1 -hello world\n1 +goodbye world\n2  second line\n\n\
             Do you want to make this edit to notes.txt?\n```"
        ],
        "{}",
        approval.card
    );
    assert_eq!(
        options(&approval),
        owned(&[
            ("1", "Yes"),
            ("2", "Yes, allow all edits during this session (shift+tab)"),
            ("3", "No"),
        ])
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
    (serve, api, env, result)
}

/// The edit permission prompt through Feishu, answered by a click.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edit_approved_by_a_click_changes_the_file() {
    let Some(claude) = claude_or_skip("agent::feishu::edit_approved_by_a_click_changes_the_file")
    else {
        return;
    };
    let (_serve, _api, _env, result) = edit_approved_by_a_click(&claude).await;
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

/// The edit's result card holds the rows as the agent finally shows them.
/// Fails on a bug in the product (reported to the lead): Claude Code draws
/// `● Reading 1 file… (ctrl+o to expand)` / `⎿  notes.txt` while it reads,
/// then replaces it with `Read 1 file (ctrl+o to expand)` (no `●`); the
/// transcript keeps the first, so the card shows a read still running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "bug: the result card keeps the agent's transient `Reading 1 file…` row"]
async fn edit_result_card_holds_only_rows_the_agent_still_shows() {
    let Some(claude) =
        claude_or_skip("agent::feishu::edit_result_card_holds_only_rows_the_agent_still_shows")
    else {
        return;
    };
    let (serve, _api, _env, result) = edit_approved_by_a_click(&claude).await;
    let stale = serve.rows_not_on_the_pane(&result);
    if !stale.is_empty() {
        serve.fail(&format!(
            "rows of the result card the agent no longer shows: {stale:?}\n{}",
            result.card_text()
        ));
    }
}

/// Plan mode: the plan-approval dialog is one card with the plan, its
/// question and its three options; the option clicked reaches Claude Code,
/// which leaves plan mode and tells the model the plan was approved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_approved_by_a_click() {
    let Some(claude) = claude_or_skip("agent::feishu::plan_approved_by_a_click") else {
        return;
    };
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
    let (serve, api, _env) = start_args(&claude, script, false, &args, &[]).await;
    let (asked, from) = serve.new_project_then("plan the parser").await;
    let approval = serve
        .card(from, "approval", |c| c.title() == "Approval needed")
        .await;
    assert_eq!(approval.target, asked.message_id, "replies to the prompt");
    assert_eq!(
        markdowns(&approval.card),
        [
            "```\nReady to code?\n\nHere is Claude's plan:\nParser plan\n\n1. Write the tokenizer\n\
             2. Write the parser\n3. Add tests\n\nClaude has written up a plan and is ready to execute. \
             Would you like to proceed?\n```"
        ],
        "{}",
        approval.card
    );
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
