//! The harness of the Feishu-path tests: `clawmux serve` (the real binary)
//! on the Feishu channel against the local Feishu server, with the real
//! Claude Code as its agent; events go in as Feishu sends them, and cards
//! are read back from the REST calls the local Feishu recorded.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use clawmux::agentcheck::{ClaudeEnv, FakeApi, Turn};
use serde_json::{Value, json};

use crate::support::claude::{STEP_TIMEOUT, agent_home};
use crate::support::fake_feishu::{self, FakeFeishu, Kind, Pushed, Recorded};
use crate::support::gsd::Layout;
pub(super) use crate::support::scenarios::{bash_script, question_script};
use crate::support::signed;
use crate::support::tmux::TmuxServer;

/// The group chat the bot is in (clicks from the fake server name it).
pub(super) const CHAT: &str = "oc_fake";
/// May send and answer approvals.
pub(super) const ALICE: &str = "ou_alice";
/// May send, may not answer approvals.
pub(super) const BOB: &str = "ou_bob";
/// Neither sends nor answers: not in any list.
pub(super) const EVE: &str = "ou_eve";
/// The project every test creates; its tmux session is `cm-shop`.
pub(super) const PROJECT: &str = "shop";

/// A Feishu daemon, killed on drop (its tmux server with it), and the
/// local Feishu it talks to.
pub(super) struct FeishuServe {
    child: Child,
    home: tempfile::TempDir,
    tmux: TmuxServer,
    pub(super) fake: FakeFeishu,
    delivery: Delivery,
    /// Events posted to the webhook so far (their ids count up).
    posted: AtomicU32,
}

/// How Feishu hands the daemon its events.
pub(super) enum Delivery {
    /// Over the long connection to the local Feishu.
    LongConnection,
    /// POSTed to the daemon's webhook at `url`, with the verification token.
    Webhook { url: String },
}

/// The verification token of the webhook tests.
pub(super) const TOKEN: &str = "verification-token";
/// The app's encrypt key: webhook requests are encrypted and signed with it.
pub(super) const ENCRYPT_KEY: &str = "encrypt-key";

impl FeishuServe {
    pub(super) async fn start(
        agent: &str,
        home: tempfile::TempDir,
        tmux: TmuxServer,
        webhook: bool,
        profile: &str,
    ) -> FeishuServe {
        let fake = FakeFeishu::start().await;
        let (delivery, intake) = if webhook {
            let port = free_port();
            let url = format!("http://127.0.0.1:{port}/webhook/event");
            let intake = format!(
                "mode = \"webhook\"\nwebhook_bind = \"127.0.0.1:{port}\"\nverification_token = {TOKEN:?}\nencrypt_key = {ENCRYPT_KEY:?}\n"
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
             [agent]\ncommand = {agent:?}\nprofile = {profile:?}\n\
             [progress]\ninterval_secs = 1\n\
             [policy]\ndm_policy = \"allowlist\"\nallow_from = [{ALICE:?}, {BOB:?}]\n\
             group_policy = \"allowlist\"\ngroup_allow_from = [{CHAT:?}]\napprovers = [{ALICE:?}]\n\
             [feishu]\ndomain = {domain:?}\napp_id = {app_id:?}\napp_secret = {secret:?}\n{intake}",
            ws = home.path().join("ws").display().to_string(),
            socket = tmux.socket,
            domain = fake.base_url(),
            app_id = fake_feishu::APP_ID,
            secret = fake_feishu::APP_SECRET,
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
    pub(super) async fn wait_listening(&self) {
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
    /// Waits until the daemon has `card`'s chat message id (its `card` log
    /// line), so a reply to it is known as one. Feishu shows a card only
    /// after answering its send; the local server records it before.
    pub(super) async fn delivered(&self, card: &Recorded) {
        let uuid = card.uuid.clone().unwrap_or_default();
        let deadline = Instant::now() + STEP_TIMEOUT;
        loop {
            let log = clawmux::store::log_read::read_all(self.home.path());
            let records = log.map(|l| l.records).unwrap_or_default();
            if (records.iter()).any(|r| r.kind == "card" && r.fields["uuid"] == uuid.as_str()) {
                return;
            }
            if Instant::now() >= deadline {
                self.fail(&format!("card {uuid} never recorded as delivered"));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub(super) fn fail(&self, what: &str) -> ! {
        let log = std::fs::read_to_string(self.home.path().join("serve.log")).unwrap_or_default();
        let pane = self.tmux.run(&["capture-pane", "-p", "-t", "cm-shop"]);
        panic!(
            "{what}\ncards:\n{}\nserve log:\n{log}\npane:\n{}",
            self.fake.listing(),
            String::from_utf8_lossy(&pane.stdout)
        );
    }

    /// The first card from index `from` on matching `pred`.
    pub(super) async fn card(
        &self,
        from: usize,
        what: &str,
        pred: impl Fn(&Recorded) -> bool,
    ) -> Recorded {
        match self.fake.wait_for_card_from(from, pred, STEP_TIMEOUT).await {
            Some(c) => c,
            None => self.fail(&format!("no card {what}")),
        }
    }

    /// `text` sent to the group by `from`, mentioning the bot.
    pub(super) async fn say(&self, from: &str, text: &str) -> Pushed {
        let url = match &self.delivery {
            Delivery::LongConnection => return self.fake.push_message(CHAT, from, text),
            Delivery::Webhook { url } => url,
        };
        let n = self.posted.fetch_add(1, Ordering::Relaxed);
        let (event_id, message_id) = (format!("ev_w{n}"), format!("om_w{n}"));
        let event = fake_feishu::message_event(&event_id, &message_id, CHAT, from, text);
        match signed::post_event(url, ENCRYPT_KEY, TOKEN, &event).await {
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
    pub(super) async fn click(&self, who: &str, message_id: &str, value: Value) -> Value {
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
    pub(super) async fn post_click(
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
            fake_feishu::card_action_event(&format!("ev_w{n}"), who, message_id, CHAT, value);
        signed::post_event(url, ENCRYPT_KEY, token, &event)
            .await
            .unwrap_or_else(|e| self.fail(&format!("cannot post a click: {e}")))
    }

    /// Creates the project (GSD is not installed: Claude Code rejects
    /// `/gsd:new-project` itself, without a model call), then sends
    /// `prompt`. Returns the prompt's message and the card count before it.
    pub(super) async fn new_project_then(&self, prompt: &str) -> (Pushed, usize) {
        self.say(ALICE, &format!("/gsd:new-project {PROJECT}"))
            .await;
        let refused = format!("The agent refused: {PROJECT}: /gsd:new-project");
        self.card(0, "refusing /gsd:new-project", |c| c.title() == refused)
            .await;
        let from = self.fake.recorded_count();
        (self.say(ALICE, prompt).await, from)
    }

    pub(super) fn workspace(&self) -> std::path::PathBuf {
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
pub(super) fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("its address").port()
}

/// How a test's daemon and agent start, beyond the defaults.
#[derive(Default)]
pub(super) struct Setup<'a> {
    /// Events reach the daemon through its webhook, not the long connection.
    pub(super) webhook: bool,
    /// Extra `claude` arguments (e.g. `--permission-mode plan`).
    pub(super) args: &'a [&'a str],
    /// Files (name, content) in the project's directory before the agent starts.
    pub(super) files: &'a [(&'a str, &'a str)],
    /// The real GSD (its package) installed in this layout for the agent,
    /// and the `gsd` detection profile.
    pub(super) gsd: Option<(&'a Path, Layout)>,
}

/// The daemon on the long connection, its agent answered by `script`.
pub(super) async fn start(claude: &Path, script: Vec<Turn>) -> (FeishuServe, FakeApi, ClaudeEnv) {
    start_setup(claude, |_| script, Setup::default()).await
}

/// The daemon as `setup` says; `script` gets the project's directory.
pub(super) async fn start_setup(
    claude: &Path,
    script: impl FnOnce(&Path) -> Vec<Turn>,
    setup: Setup<'_>,
) -> (FeishuServe, FakeApi, ClaudeEnv) {
    let api = FakeApi::start_paced(Vec::new(), Duration::from_millis(15)).expect("fake API");
    let (home, env) = agent_home(&api, PROJECT);
    let project = home.path().join("ws").join(PROJECT);
    if !setup.files.is_empty() {
        std::fs::create_dir(&project).expect("project directory");
        for (name, content) in setup.files {
            std::fs::write(project.join(name), content).expect("project file");
        }
    }
    api.push(script(&project));
    let (env, profile) = match setup.gsd {
        Some((package, layout)) => {
            crate::support::gsd::install(package, layout, env.home(), &project);
            (crate::support::gsd::agent_env(env), "gsd")
        }
        None => (env, "claude"),
    };
    let agent = env.env_command(claude, setup.args);
    let tmux = TmuxServer::new();
    let serve = FeishuServe::start(&agent, home, tmux, setup.webhook, profile).await;
    (serve, api, env)
}

pub(super) fn template(c: &Recorded) -> &str {
    c.card["header"]["template"].as_str().unwrap_or_default()
}

/// The buttons of a card: (label, callback value), in order.
pub(super) fn buttons(card: &Value) -> Vec<(String, Value)> {
    pub(super) fn walk(v: &Value, out: &mut Vec<(String, Value)>) {
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

/// The markdown elements of a card, in order, the turn's footer
/// (`⏱ 1 s`, see [`turn_footer`]) aside.
pub(super) fn markdowns(card: &Value) -> Vec<String> {
    card["body"]["elements"]
        .as_array()
        .map(|els| {
            els.iter()
                .filter(|e| e["tag"] == "markdown")
                .filter_map(|e| e["content"].as_str().map(str::to_string))
                .filter(|m| !m.starts_with("⏱ "))
                .collect()
        })
        .unwrap_or_default()
}

/// The result card's footer: how long the turn took (`⏱ 1 s`).
pub(super) fn turn_footer(card: &Value) -> Option<String> {
    (card["body"]["elements"].as_array()?.iter())
        .filter_map(|e| e["content"].as_str())
        .find(|m| m.starts_with("⏱ "))
        .map(str::to_string)
}

/// What a result card must not hold: the agent's screen around its answer
/// (spinner, tip, input box, footer) or a dialog's rows.
pub(super) fn screen_noise(text: &str) -> Vec<String> {
    pub(super) const NOISE: &[&str] = &[
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
pub(super) fn new_cards_of(serve: &FeishuServe, from: usize, color: &str) -> Vec<Recorded> {
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
    pub(super) async fn barrier(&self) -> usize {
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
    pub(super) async fn one_turn_end(
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

    /// The index of the update turning the approval card `message_id` grey
    /// (not an update that drew its body in, still waiting).
    pub(super) async fn resolved(&self, from: usize, message_id: &str, choice: &str) -> usize {
        let answered = |c: &Recorded| {
            c.kind == Kind::Patch && c.message_id == message_id && c.title() != "Approval needed"
        };
        let patch = self.card(from, "the approval resolved", answered).await;
        if patch.title() != "Approval answered" {
            self.fail(&format!("the approval closed otherwise: {}", patch.card));
        }
        assert_eq!(template(&patch), "grey");
        assert!(
            patch.card_text().contains(&format!("chose **{choice}**")),
            "{}",
            patch.card_text()
        );
        assert!(buttons(&patch.card).is_empty(), "{}", patch.card);
        let cards = self.fake.sent_cards();
        (from..cards.len())
            .find(|&i| answered(&cards[i]))
            .unwrap_or_else(|| self.fail("the resolved approval card vanished"))
    }

    /// The rows of the result card `result` that the agent's pane (its
    /// screen and scrollback) does not show now: a row drawn while the
    /// agent worked and replaced since, or one the card made up.
    pub(super) fn rows_not_on_the_pane(&self, result: &Recorded) -> Vec<String> {
        let pane = self
            .tmux
            .run(&["capture-pane", "-p", "-S", "-", "-t", "cm-shop"]);
        let pane = String::from_utf8_lossy(&pane.stdout).replace('\u{a0}', " ");
        let text = result.card_text();
        text.lines()
            .map(str::trim)
            // The turn's footer (`⏱ 1 s`) is clawmux's, not the pane's.
            .filter(|row| !row.is_empty() && !row.starts_with("```") && !row.starts_with("⏱ "))
            // The bullet of a finished tool's row blinks on and off.
            .filter(|row| !pane.contains(row.trim_start_matches(['●', '⏺']).trim_start()))
            .map(str::to_string)
            .collect()
    }

    /// The pane shows `needle` now.
    pub(super) fn screen_has(&self, needle: &str) -> bool {
        let pane = self.tmux.run(&["capture-pane", "-p", "-t", "cm-shop"]);
        String::from_utf8_lossy(&pane.stdout).contains(needle)
    }
}

/// The option labels and keys of an approval card's buttons, checked
/// against the approval and project each one names.
pub(super) fn options(card: &Recorded) -> Vec<(String, String)> {
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

pub(super) fn button_value(card: &Recorded, label: &str) -> Value {
    buttons(&card.card)
        .into_iter()
        .find(|(l, _)| l == label)
        .map(|(_, v)| v)
        .unwrap_or_else(|| panic!("no button {label} in {}", card.card))
}

pub(super) fn owned(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, l)| (k.to_string(), l.to_string()))
        .collect()
}

pub(super) const BASH_TITLE: &str = "shop: make a marker file";

/// The question's tool result, from the request after the question.
pub(super) fn question_result(api: &FakeApi) -> String {
    let scripted = api.scripted_requests();
    assert_eq!(scripted.len(), 2, "the question's turn, then the next");
    assert_eq!(api.exhausted(), 0);
    let results = scripted[1].tool_results();
    assert_eq!(results.len(), 1, "{results:?}");
    results[0].clone()
}
