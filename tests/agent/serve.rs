//! `clawmux serve --console` driving the real Claude Code end to end: chat
//! lines on stdin, cards on stdout, the agent in the daemon's own tmux
//! server against the fake API.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clawmux::agentcheck::{ClaudeEnv, FakeApi, Turn};
use clawmux::bridge::channels::streaming::CONSOLE_REDRAWN as REDRAWN;
use clawmux::bridge::present::footer;

/// The console's line after a streamed answer's last text.
pub(super) const ANSWER_COMPLETE: &str = "└─ (answer complete)";
use serde_json::json;

use crate::support::claude::{
    STEP_TIMEOUT, agent_home, bash_no_key, claude_required, release_at_least,
};
use crate::support::tmux::TmuxServer;

use crate::support::scenarios::{self, bash_script};

/// A console daemon, killed on drop (its tmux server with it).
pub(super) struct ConsoleServe {
    child: Child,
    stdin: Option<ChildStdin>,
    out: Arc<Mutex<String>>,
    /// The streamed answers as printed: each card's `┌─ (streaming)
    /// <title>` line, then its rows (`│ …`, each delta).
    streamed: Arc<Mutex<String>>,
    /// When each line reached `out`: (its end offset, the time), for
    /// latency measured to the card (bounded by the test's own output).
    arrivals: Arc<Mutex<Vec<(usize, Instant)>>>,
    pub(super) home: tempfile::TempDir,
    pub(super) _tmux: TmuxServer,
}

impl ConsoleServe {
    fn start(agent: &str, home: tempfile::TempDir, tmux: TmuxServer) -> ConsoleServe {
        Self::start_with_profile(agent, home, tmux, "claude")
    }

    /// [`ConsoleServe::start`] with another detection profile (`gsd`).
    pub(super) fn start_with_profile(
        agent: &str,
        home: tempfile::TempDir,
        tmux: TmuxServer,
        profile: &str,
    ) -> ConsoleServe {
        Self::start_sized(agent, home, tmux, profile, (120, 40))
    }

    /// [`ConsoleServe::start_with_profile`] with the agent's pane `width`
    /// columns by `height` rows.
    pub(super) fn start_sized(
        agent: &str,
        home: tempfile::TempDir,
        tmux: TmuxServer,
        profile: &str,
        size: (u16, u16),
    ) -> ConsoleServe {
        Self::start_configured(agent, home, tmux, profile, size, "")
    }

    /// [`ConsoleServe::start_sized`] with more lines for the config's
    /// `[agent]` table (`agent_lines`, e.g. a `profiles_file`).
    pub(super) fn start_configured(
        agent: &str,
        home: tempfile::TempDir,
        tmux: TmuxServer,
        profile: &str,
        (width, height): (u16, u16),
        agent_lines: &str,
    ) -> ConsoleServe {
        let config = format!(
            "workspace_root = {ws:?}\n[tmux]\nsocket = {socket:?}\nwidth = {width}\nheight = {height}\n\
             [agent]\ncommand = {agent:?}\nprofile = {profile:?}\n{agent_lines}",
            ws = home.path().join("ws").display().to_string(),
            socket = tmux.socket,
        );
        let config_path = home.path().join("config.toml");
        std::fs::write(&config_path, config).unwrap();
        let log = std::fs::File::create(home.path().join("serve.log")).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_clawmux"))
            .args(["serve", "--console", "--config"])
            .arg(&config_path)
            .env("CLAWMUX_HOME", home.path())
            .env_remove("FEISHU_APP_ID")
            .env_remove("FEISHU_APP_SECRET")
            // As on a CI machine: the tmux server serve starts inherits
            // them, and an agent that saw them would go headless.
            .env("CI", "true")
            .env("GITHUB_ACTIONS", "true")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("clawmux serve");
        let stdout = child.stdout.take().unwrap();
        let out = Arc::new(Mutex::new(String::new()));
        let arrivals = Arc::new(Mutex::new(Vec::new()));
        let streamed = Arc::new(Mutex::new(String::new()));
        {
            let out = out.clone();
            let arrivals = arrivals.clone();
            let streamed = streamed.clone();
            std::thread::spawn(move || {
                // Inside a card (`┌─` or `├─ (updated)` to `└─`), printed
                // whole: its rows may start with `│ ` too (a boxed row).
                let mut in_card = false;
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { return };
                    if matches!(line.as_str(), "┌─" | "┌─ (file)" | "├─ (updated)") {
                        in_card = true;
                    } else if line == "└─" {
                        in_card = false;
                    }
                    // The answer streamed as it comes (`┌─ (streaming)`,
                    // `│ …`, `└─ (answer complete)`) is not a card: these
                    // tests read the cards (bridge::streaming reads it).
                    let row = (line.strip_prefix("│ ")).or_else(|| {
                        (line.starts_with("┌─ (streaming)") || line == REDRAWN).then_some(&line[..])
                    });
                    let row = row.filter(|_| !in_card || line.starts_with("┌─ (streaming)"));
                    if let Some(row) = row {
                        let mut s = streamed.lock().unwrap();
                        s.push_str(row);
                        s.push('\n');
                        continue;
                    }
                    if line == ANSWER_COMPLETE {
                        let mut s = streamed.lock().unwrap();
                        s.push_str(&line);
                        s.push('\n');
                        continue;
                    }
                    let mut o = out.lock().unwrap();
                    o.push_str(&line);
                    o.push('\n');
                    arrivals.lock().unwrap().push((o.len(), Instant::now()));
                }
            });
        }
        let stdin = child.stdin.take();
        ConsoleServe {
            child,
            stdin,
            out,
            streamed,
            arrivals,
            home,
            _tmux: tmux,
        }
    }

    pub(super) fn say(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    /// When the output up to byte `offset` had arrived.
    pub(super) fn arrived_at(&self, offset: usize) -> Option<Instant> {
        let arrivals = self.arrivals.lock().unwrap();
        arrivals
            .iter()
            .find(|(end, _)| *end >= offset)
            .map(|(_, at)| *at)
    }

    pub(super) fn output(&self) -> String {
        self.out.lock().unwrap().clone()
    }

    /// The rows the streamed answer of command `title` printed so far.
    pub(super) fn streamed(&self, title: &str) -> String {
        (self.streamed_with_redraws(title).lines())
            .filter(|l| !l.starts_with("┌─ (streaming)") && *l != REDRAWN && *l != ANSWER_COMPLETE)
            .map(|l| format!("{l}\n"))
            .collect()
    }

    /// What the streamed answer of command `title` printed so far: its
    /// head line, its rows, and the console's `├─ (redrawn)` mark before
    /// each text that replaced the card's rather than extending it.
    pub(super) fn streamed_with_redraws(&self, title: &str) -> String {
        let all = self.streamed.lock().unwrap().clone();
        let mut rows = String::new();
        let mut mine = false;
        for line in all.lines() {
            if line.starts_with("┌─ (streaming)") {
                mine = line.contains(title);
            }
            if mine {
                rows.push_str(line);
                rows.push('\n');
            }
        }
        rows
    }

    /// Waits until the cards printed after `from` bytes contain `needle`;
    /// returns the end of that text.
    pub(super) fn wait(&self, from: usize, needle: &str) -> usize {
        self.wait_within(from, needle, STEP_TIMEOUT)
    }

    /// [`ConsoleServe::wait`], at most `limit`.
    pub(super) fn wait_within(&self, from: usize, needle: &str, limit: Duration) -> usize {
        self.wait_until(from, needle, limit, |t| {
            t.find(needle).map(|i| i + needle.len())
        })
    }

    /// Waits until the result card of command `title` (a new card under
    /// its heading, holding the answer's block) is printed whole after
    /// `from`; returns its text. The progress card's "Finished" update is
    /// a separate card printed before it: under load the result card can
    /// come a while later, so a test reads it only once it is there.
    pub(super) fn wait_result(&self, from: usize, title: &str) -> String {
        let heading = format!("== shop: {title} ==");
        let found = |t: &str| {
            let all = cards(t);
            (all.iter()).find_map(|(updated, text)| {
                (!updated && text.starts_with(&heading) && text.contains("```"))
                    .then(|| text.clone())
            })
        };
        self.wait_until(from, "the result card", STEP_TIMEOUT, |t| {
            found(t).map(|_| 0)
        });
        let out = self.output();
        found(&out[from..]).unwrap_or_default()
    }

    fn wait_until(
        &self,
        from: usize,
        what: &str,
        limit: Duration,
        found: impl Fn(&str) -> Option<usize>,
    ) -> usize {
        let deadline = Instant::now() + limit;
        loop {
            let out = self.output();
            if let Some(i) = out.get(from..).and_then(&found) {
                return from + i;
            }
            if Instant::now() >= deadline {
                let log =
                    std::fs::read_to_string(self.home.path().join("serve.log")).unwrap_or_default();
                let pane = self._tmux.run(&["capture-pane", "-p", "-t", "cm-shop"]);
                panic!(
                    "no {what:?} in the cards:\n{out}\nserve log:\n{log}\npane:\n{}",
                    String::from_utf8_lossy(&pane.stdout)
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for ConsoleServe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(claude: &Path, script: Vec<Turn>) -> (ConsoleServe, FakeApi, ClaudeEnv) {
    let api = FakeApi::start_paced(script, Duration::from_millis(15)).unwrap();
    let (home, env) = agent_home(&api, "shop");
    let agent = env.env_command(claude, &[]);
    let serve = ConsoleServe::start(&agent, home, TmuxServer::new());
    (serve, api, env)
}

/// The cards printed so far: `(updated, text)`, new cards and updates in
/// order.
pub(super) fn cards(out: &str) -> Vec<(bool, String)> {
    let mut cards = Vec::new();
    let mut current: Option<(bool, String)> = None;
    for line in out.lines() {
        match line {
            "┌─" => current = Some((false, String::new())),
            "├─ (updated)" => current = Some((true, String::new())),
            "└─" => cards.extend(current.take()),
            text => {
                if let Some((_, body)) = current.as_mut() {
                    body.push_str(text);
                    body.push('\n');
                }
            }
        }
    }
    cards
}

/// New cards (not updates) whose text contains `needle`.
pub(super) fn new_cards<'a>(cards: &'a [(bool, String)], needle: &str) -> Vec<&'a str> {
    cards
        .iter()
        .filter(|(updated, text)| !updated && text.contains(needle))
        .map(|(_, text)| text.as_str())
        .collect()
}

/// Creates the project (GSD is not installed: Claude Code rejects
/// `/gsd:new-project` itself, without a model call), then sends `prompt`.
pub(super) fn new_project_then(serve: &mut ConsoleServe, prompt: &str) -> usize {
    serve.say("/gsd:new-project shop");
    // GSD is not installed for this agent: it refuses the command, and the
    // chat is told so.
    let at = serve.wait(0, "== The agent refused: shop: /gsd:new-project ==\n");
    let at = serve.wait(at, "└─");
    serve.say(prompt);
    at
}

/// The result card of the command `title` (the card after its "Finished").
/// A fresh daemon home (under /tmp: socket paths stay short) whose state
/// holds project `shop` already, so the first chat line is `/gsd:use
/// shop`; its workspace (`ws/shop`) is made.
pub(super) fn shop_home() -> (tempfile::TempDir, std::path::PathBuf) {
    let home = tempfile::Builder::new()
        .prefix("cmx")
        .tempdir_in("/tmp")
        .unwrap();
    let workspace = home.path().join("ws/shop");
    std::fs::create_dir_all(&workspace).unwrap();
    let mut state = clawmux::store::state::State::default();
    state.projects.insert(
        clawmux::store::ids::project("shop"),
        clawmux::store::state::ProjectRecord {
            workspace: workspace.display().to_string(),
            ..Default::default()
        },
    );
    clawmux::store::StateFile::new(home.path().join("state.json"))
        .save(&state)
        .unwrap();
    (home, workspace)
}

/// A console daemon in `home` (see [`shop_home`]) running `agent` with
/// `profile`, project `shop` selected.
pub(super) fn serve_shop(agent: &str, home: tempfile::TempDir, profile: &str) -> ConsoleServe {
    let mut serve = ConsoleServe::start_with_profile(agent, home, TmuxServer::new(), profile);
    serve.say("/gsd:use shop");
    serve
}

/// `agent` run so that its hooks (`clawmux hook`) find the daemon's
/// socket in `home` through its environment.
pub(super) fn with_hook_home(agent: &str, home: &Path) -> String {
    format!("env CLAWMUX_HOME={} {agent}", home.display())
}

/// `/gsd:cancel` while command `title` runs: the reply names the agent's
/// interrupt `keys`, and the command is reported stopped once, never
/// finished. The stopped card, for what the agent said.
pub(super) fn cancel_stops(serve: &mut ConsoleServe, at: usize, title: &str, keys: &str) -> String {
    serve.say("/gsd:cancel");
    let at = serve.wait(at, &format!("Sent {keys} to the agent of **shop**."));
    let heading = format!("== Stopped: shop: {title} ==");
    let at = serve.wait(at, &heading);
    serve.wait(at, "└─");
    let out = serve.output();
    let all = cards(&out);
    let stopped = new_cards(&all, &heading);
    assert_eq!(stopped.len(), 1, "{out}");
    assert_eq!(finished(&out, title), 0, "{out}");
    stopped[0].to_string()
}

/// The cards of command `title` that say it finished.
pub(super) fn finished(out: &str, title: &str) -> usize {
    let heading = format!("== shop: {title} ==");
    cards(out)
        .iter()
        .filter(|(_, t)| t.starts_with(&heading) && t.contains("**Finished"))
        .count()
}

pub(super) fn result_card(out: &str, title: &str) -> String {
    let cards = cards(out);
    let heading = format!("== shop: {title} ==");
    cards
        .iter()
        .rev()
        .find(|(updated, text)| !updated && text.starts_with(&heading) && text.contains("```"))
        .map(|(_, text)| text.clone())
        .unwrap_or_else(|| panic!("no result card for {title}:\n{out}"))
}

fn bash_through_serve(claude: &Path) -> (ConsoleServe, FakeApi, ClaudeEnv, String) {
    let (mut serve, api, env) = start(claude, bash_script());
    let at = new_project_then(&mut serve, "make a marker file");
    let at = serve.wait(at, "== Approval needed ==");
    let at = serve.wait(at, "└─");
    serve.say("/gsd:answer 1");
    serve.wait(at, scenarios::BASH_ANSWER);
    let out = serve.output();
    (serve, api, env, out)
}

/// The permission prompt becomes one approval card with its question and
/// options, and the chat's answer reaches the dialog: the command ran and
/// Claude Code sent its result back to the model.
#[test]
fn bash_permission_through_serve() {
    let claude = claude_required();
    let (serve, api, _env, out) = bash_through_serve(&claude);
    let all = cards(&out);
    let approvals = new_cards(&all, "== Approval needed ==");
    assert_eq!(approvals.len(), 1, "{out}");
    let no = format!("[{}] No", bash_no_key());
    let keys = if bash_no_key() == "4" {
        "1|2|3|4"
    } else {
        "1|2|3"
    };
    let how = format!("Answer with /gsd:answer {keys}");
    for needle in ["Do you want to proceed?", "[1] Yes", &no, &how] {
        assert!(
            approvals[0].contains(needle),
            "{needle:?} not in\n{}",
            approvals[0]
        );
    }
    assert!(out.contains("console chose **Yes**"), "{out}");
    assert!(serve.home.path().join("ws/shop/made-by-bash.txt").exists());
    let scripted = api.scripted_requests();
    assert_eq!(scripted.len(), 2);
    assert_eq!(api.exhausted(), 0);
    assert_eq!(scripted[1].tool_results().len(), 1);
    assert!(new_cards(&all, "error").is_empty(), "{out}");
}

/// Every turn's end is reported once, after the turn, with its answer.
/// Measured here: in 3 of 11 runs the first command (typed while Claude
/// Code was starting) was "Finished in 0s" with no output, and the next
/// command's card then carried the first one's output and finished before
/// its own dialog.
#[test]
fn turn_ends_once_and_never_early_through_serve() {
    let claude = claude_required();
    let (serve, _api, _env, _) = bash_through_serve(&claude);
    let at = serve.wait(0, "== shop: make a marker file ==\n**Finished");
    serve.wait(at, "└─");
    let out = serve.output();
    let all = cards(&out);
    let first = new_cards(&all, "== The agent refused: shop: /gsd:new-project ==");
    assert_eq!(first.len(), 1, "{out}");
    assert!(
        first[0].contains("Unknown command: /gsd:new-project"),
        "{out}"
    );
    let finished = all
        .iter()
        .filter(|(_, t)| {
            t.starts_with("== shop: make a marker file ==") && t.contains("**Finished")
        })
        .count();
    assert_eq!(finished, 1, "{out}");
    let result = result_card(&out, "make a marker file");
    assert!(result.contains(scenarios::BASH_ANSWER), "{out}");
    assert!(!result.contains("Unknown command"), "{out}");
}

/// Issue 13: the approval card says what is approved, and the result card
/// holds the agent's answer, not the screen.
#[test]
fn approval_and_result_cards_show_what_matters() {
    let claude = claude_required();
    let (_serve, _api, _env, out) = bash_through_serve(&claude);
    let all = cards(&out);
    let approval = new_cards(&all, "== Approval needed ==")[0];
    assert!(approval.contains("touch made-by-bash.txt"), "{approval}");
    assert!(approval.contains("Create a marker file"), "{approval}");
    let result = result_card(&out, "make a marker file");
    for noise in [
        "Tip:",
        "Hatching",
        "Do you want to proceed?",
        "focus-events",
        "for 1s",
    ] {
        assert!(
            !result.contains(noise),
            "{noise:?} in the result card:\n{result}"
        );
    }
    assert!(result.contains(scenarios::BASH_ANSWER));
    // The agent's own rejection is said plainly, not "Finished".
    let rejected = all
        .iter()
        .filter(|(_, t)| t.starts_with("== shop: /gsd:new-project =="))
        .any(|(_, t)| t.contains("**Finished"));
    assert!(!rejected, "{out}");
}

/// Plan mode: the plan dialog becomes a card with the plan; the answer
/// goes on.
#[test]
fn plan_through_serve() {
    let claude = claude_required();
    let api = FakeApi::start_paced(
        vec![
            Turn::tool(
                "Write",
                json!({"file_path": clawmux::agentcheck::PLAN_FILE_PLACEHOLDER, "content": scenarios::PLAN}),
            ),
            Turn::tool("ExitPlanMode", json!({})),
            Turn::text(scenarios::PLAN_ANSWER),
        ],
        Duration::from_millis(15),
    )
    .unwrap();
    let (home, env) = agent_home(&api, "shop");
    let agent = env.env_command(&claude, &["--permission-mode", "plan"]);
    let mut serve = ConsoleServe::start(&agent, home, TmuxServer::new());
    let at = new_project_then(&mut serve, "plan the parser");
    let at = serve.wait(at, "== Approval needed ==");
    let at = serve.wait(at, "└─");
    let out = serve.output();
    let all = cards(&out);
    let approval = new_cards(&all, "== Approval needed ==")[0];
    assert!(
        approval.contains("Would you like to proceed?"),
        "{approval}"
    );
    assert!(approval.contains("Write the tokenizer"), "{approval}");
    serve.say("/gsd:answer 2");
    serve.wait(at, scenarios::PLAN_ANSWER);
}

/// A reply that quotes prompts and errors raises neither.
#[test]
fn quoting_reply_through_serve() {
    let claude = claude_required();
    let (mut serve, _api, _env) = start(&claude, vec![Turn::text(scenarios::QUOTING_REPLY)]);
    let at = new_project_then(&mut serve, "show me the dialogs");
    let at = serve.wait(at, "**Finished");
    serve.wait(at, scenarios::QUOTING_LAST);
    let out = serve.output();
    let all = cards(&out);
    assert!(new_cards(&all, "== Approval needed ==").is_empty(), "{out}");
    assert!(new_cards(&all, "reported an error").is_empty(), "{out}");
}

/// With clawmux's hooks installed in the project, the real agent's hooks
/// reach the daemon through `clawmux hook`: the permission hook agrees with
/// the dialog read off the screen (no "Check this prompt" card), and the
/// turn ends once, with its answer.
#[test]
fn hooks_through_serve_confirm_the_dialog_and_end_the_turn() {
    let claude = claude_required();
    let (mut serve, _api, env) = start_with_hooks(&claude, bash_script());
    let at = new_project_then(&mut serve, "make a marker file");
    let at = serve.wait(at, "== Approval needed ==");
    let at = serve.wait(at, "└─");
    serve.say("/gsd:answer 1");
    serve.wait_result(at, "make a marker file");
    let out = serve.output();
    let all = cards(&out);
    assert_eq!(new_cards(&all, "== Approval needed ==").len(), 1, "{out}");
    assert!(new_cards(&all, "Check this prompt").is_empty(), "{out}");
    let finished = (all.iter())
        .filter(|(_, t)| {
            t.starts_with("== shop: make a marker file ==") && t.contains("**Finished")
        })
        .count();
    assert_eq!(finished, 1, "{out}");
    // The answer after the approval: once, after the tool call as drawn,
    // never the answered dialog.
    let result = result_card(&out, "make a marker file");
    assert_eq!(
        result.matches(scenarios::BASH_ANSWER).count(),
        1,
        "{result}"
    );
    // The tool call as this version drew it (2.1.332: `● Ran 1 shell
    // command`; 2.1.197: `● Bash(…)` and its `⎿` row) above the answer.
    let body: Vec<&str> = (result.split("```").nth(1).unwrap_or_default().lines())
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert_eq!(body.last(), Some(&"● Created the marker file."), "{result}");
    assert!(body.len() >= 2, "no tool call above the answer: {result}");
    assert!(!result.contains("Do you want to proceed"), "{result}");
    assert_no_hook_ignored(&serve);
    // The hooks did arrive: the log has them, from the project's pane.
    let tail = Command::new(env!("CARGO_BIN_EXE_clawmux"))
        .args(["tail", "--kind", "hook", "--json"])
        .env("CLAWMUX_HOME", serve.home.path())
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&tail.stdout);
    for event in ["PermissionRequest", "Stop"] {
        assert!(
            log.contains(&format!("\"event\":\"{event}\"")),
            "no {event} hook in the log:\n{log}"
        );
    }
    // The result's footer has the figures Claude Code wrote in its
    // transcript for the turn (from the fake API's usage), and no cost.
    let (tokens, context) = transcript_figures(&env.home().join(".claude/projects"));
    let result = result_card(&out, "make a marker file");
    let footer = format!(
        "· {} tokens · context {} tokens",
        footer::thousands(tokens),
        footer::thousands(context)
    );
    assert!(result.contains(&footer), "{footer} not in:\n{result}");
    assert!(!result.contains('$'), "{result}");
}

/// Like [`start`], with clawmux's hooks installed in the project's
/// workspace (`clawmux hooks install --write`), found by the agent through
/// `CLAWMUX_HOME`.
fn start_with_hooks(claude: &Path, script: Vec<Turn>) -> (ConsoleServe, FakeApi, ClaudeEnv) {
    let api = FakeApi::start_paced(script, Duration::from_millis(15)).unwrap();
    let (home, env) = agent_home(&api, "shop");
    let workspace = home.path().join("ws/shop");
    std::fs::create_dir(&workspace).unwrap();
    let install = Command::new(env!("CARGO_BIN_EXE_clawmux"))
        .args(["hooks", "install", "--write", "--dir"])
        .arg(&workspace)
        .arg("--bin")
        .arg(env!("CARGO_BIN_EXE_clawmux"))
        .output()
        .unwrap();
    assert!(install.status.success(), "{install:?}");
    let agent = format!(
        "env CLAWMUX_HOME={} {}",
        home.path().display(),
        env.env_command(claude, &[])
    );
    let serve = ConsoleServe::start(&agent, home, TmuxServer::new());
    (serve, api, env)
}

/// A markdown answer streamed in chunks, with hooks installed: the result
/// card holds it as the model wrote it (`##`, `**`, `` ` ``, list marks:
/// Claude Code's transcript), once, not as the screen drew it (bold
/// without its stars, the heading without `##`).
#[test]
fn the_result_is_the_answer_from_the_transcript_markdown_kept() {
    let answer = "## Shop stock\n\nThe shop sells **pears** and `figs`:\n\n\
        - pears, 12 crates\n- figs, 3 boxes\n\nAsk again *tomorrow* for plums.";
    the_result_is_exactly(answer);
}

/// A one-line answer: the card holds it and nothing else.
#[test]
fn a_plain_answer_is_the_result_exactly() {
    the_result_is_exactly("Plain answer from the fake model, in one line.");
}

/// An answer longer than the pane (40 rows): the rows that scrolled off
/// while it streamed are in the card, in order, each once.
#[test]
fn a_long_answer_is_the_result_exactly_once() {
    let rows: Vec<String> = (1..=60)
        .map(|i| format!("{i}. Crate {i} holds **{}** pears.", i * 3))
        .collect();
    let answer = format!("## Stock by crate\n\n{}", rows.join("\n"));
    the_result_is_exactly(&answer);
}

/// Asks one question of Claude Code with hooks installed, the fake model
/// streaming `answer` in chunks: one result card, once, its text exactly
/// `answer` (Claude Code's transcript read, not the hook's text standing
/// in for it).
fn the_result_is_exactly(answer: &str) {
    let claude = claude_required();
    let (mut serve, api, _env) = start_with_hooks(&claude, vec![Turn::text(answer)]);
    let title = "what does the shop sell";
    let at = new_project_then(&mut serve, title);
    let result = serve.wait_result(at, title);
    let out = serve.output();
    let body = result.split("```").nth(1).unwrap_or_default();
    let body = body.trim().trim_start_matches(['●', '⏺']).trim_start();
    assert_eq!(body, answer, "{result}");
    assert_eq!(api.scripted_requests().len(), 1, "{out}");
    // Once: one result card, one "Finished".
    let heading = format!("== shop: {title} ==");
    let results = (cards(&out).into_iter())
        .filter(|(updated, t)| !updated && t.starts_with(&heading) && t.contains("```"))
        .count();
    assert_eq!(results, 1, "{out}");
    assert_eq!(finished(&out, title), 1, "{out}");
    assert_no_hook_ignored(&serve);
    // The streamed answer card showed the answer and nothing else: every
    // row it printed is answer text (the console prints what was added to
    // the card: a row, or the rest of a row that grew), as drawn or as the
    // record has it, never Claude Code's chrome (spinner, footer, `Tip:`
    // rows, the input box) nor a bare bullet with no text yet. A short
    // answer can be drawn whole at the turn's end: then there was no
    // stream; a long one streams.
    let streamed = serve.streamed(title);
    if answer.lines().count() > 20 {
        assert!(!streamed.trim().is_empty(), "no streamed answer:\n{out}");
    }
    let letters = |s: &str| -> String { s.chars().filter(|c| c.is_alphanumeric()).collect() };
    let rows: Vec<String> = answer.lines().map(letters).collect();
    // `…` is the stream's own mark of a text cut to its bounded tail.
    for row in (streamed.lines()).filter(|r| !r.trim().is_empty() && *r != "…") {
        // A row with no letters is part of one of the answer's (a list's
        // `-`, or what a growing row added: `.`), never the agent's bare
        // bullet.
        let mark = row.trim();
        let ok = match letters(row) {
            l if l.is_empty() => {
                !mark.starts_with(['●', '⏺']) && answer.lines().any(|r| r.contains(mark))
            }
            l => rows.iter().any(|r| r.contains(&l)),
        };
        assert!(ok, "{row:?} streamed, not the answer's:\n{streamed}");
    }
}

/// The event log holds no `hook_ignored`: every hook was taken, and a
/// transcript named was read (its answer not replaced by the hook's text).
fn assert_no_hook_ignored(serve: &ConsoleServe) {
    let ignored = Command::new(env!("CARGO_BIN_EXE_clawmux"))
        .args(["tail", "--kind", "hook_ignored", "--json"])
        .env("CLAWMUX_HOME", serve.home.path())
        .output()
        .unwrap();
    assert!(ignored.status.success(), "{ignored:?}");
    let ignored = String::from_utf8_lossy(&ignored.stdout);
    assert_eq!(ignored.trim(), "", "{ignored}");
}

/// The last turn's (tokens, context tokens) in the newest transcript under
/// `dir`, read the way a person would: the assistant messages after the
/// last typed prompt, each message id once.
fn transcript_figures(dir: &Path) -> (u64, u64) {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                files.push(p);
            }
        }
    }
    let newest = (files.iter())
        .max_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
        .unwrap_or_else(|| panic!("no transcript under {}", dir.display()));
    let text = std::fs::read_to_string(newest).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let typed = |v: &serde_json::Value| {
        v["type"] == "user"
            && v["isMeta"] != true
            && (v["message"]["content"].is_string()
                || (v["message"]["content"].as_array().into_iter().flatten())
                    .any(|b| b["type"] == "text"))
    };
    let start = lines
        .iter()
        .rposition(typed)
        .expect("a prompt in the transcript");
    let mut per_id: Vec<(String, u64)> = Vec::new();
    for v in &lines[start + 1..] {
        if v["type"] != "assistant" {
            continue;
        }
        let u = &v["message"]["usage"];
        let n = |k: &str| u[k].as_u64().unwrap_or(0);
        let total = n("input_tokens")
            + n("cache_creation_input_tokens")
            + n("cache_read_input_tokens")
            + n("output_tokens");
        let id = v["message"]["id"].as_str().unwrap_or_default().to_string();
        match per_id.iter_mut().find(|(i, _)| *i == id) {
            Some(entry) => entry.1 = total,
            None => per_id.push((id, total)),
        }
    }
    let context = per_id.last().map(|(_, t)| *t).expect("assistant usage");
    (per_id.iter().map(|(_, t)| t).sum(), context)
}

/// Answers sent as soon as clawmux allows: each approval card answered the
/// moment it is printed, fifty times in one turn. Every answer takes once:
/// each command ran, the model's script ran to its end, no dialog went without
/// its card (a key that reached the next dialog), none was reported not
/// taken. Prints the counts and the latency from the answer to its
/// confirmation (`cargo test --test tests -- agent::serve::fifty --nocapture`).
#[test]
fn fifty_answers_sent_at_once_each_take_once() {
    const ANSWERS: usize = 50;
    let claude = claude_required();
    let mut script: Vec<Turn> = (0..ANSWERS)
        .map(|i| {
            Turn::tool(
                "Bash",
                json!({"command": format!("touch answer-{i}.txt"), "description": format!("Answer {i}")}),
            )
        })
        .collect();
    script.push(Turn::text("All fifty answered."));
    let (mut serve, api, _env) = start(&claude, script);
    let mut at = new_project_then(&mut serve, "answer fifty prompts");
    let mut latencies = Vec::new();
    for _ in 0..ANSWERS {
        at = serve.wait(at, "== Approval needed ==");
        at = serve.wait(at, "└─");
        let sent = Instant::now();
        serve.say("/gsd:answer 1");
        at = serve.wait(at, "console chose **Yes**");
        latencies.push(sent.elapsed());
    }
    serve.wait(at, "All fifty answered.");
    let out = serve.output();
    let ws = serve.home.path().join("ws/shop");
    let taken = (0..ANSWERS)
        .filter(|i| ws.join(format!("answer-{i}.txt")).exists())
        .count();
    let cards = new_cards(&cards(&out), "== Approval needed ==").len();
    let not_taken = out.matches("== Answer not taken ==").count();
    let events = std::fs::read_to_string(serve.home.path().join("events.jsonl")).unwrap();
    let resent = events.matches("\"kind\":\"answer_resent\"").count();
    latencies.sort();
    let ms = |d: Duration| d.as_millis();
    eprintln!(
        "answers: {ANSWERS} sent, {taken} taken, {} lost, {} sent twice, {resent} keys sent again; \
         answer to confirmation p50 {} ms, p90 {} ms, max {} ms",
        ANSWERS - taken,
        taken.saturating_sub(cards),
        ms(latencies[ANSWERS / 2]),
        ms(latencies[ANSWERS * 9 / 10]),
        ms(latencies[ANSWERS - 1]),
    );
    assert_eq!(taken, ANSWERS, "every command ran");
    assert_eq!(
        (api.remaining(), api.exhausted()),
        (0, 0),
        "the model's every turn came, none more"
    );
    assert_eq!(
        cards, ANSWERS,
        "every dialog had its card: no key reached the next one"
    );
    assert_eq!(not_taken, 0, "{out}");
}

/// `/gsd:mode` from chat: the project starts in manual mode (clawmux's
/// choice, read back from the footer), `/gsd:mode plan` cycles the real
/// agent with shift+tab until its footer says plan, and `/gsd:status`
/// shows it.
#[test]
fn mode_is_shown_and_switched_from_chat() {
    let claude = claude_required();
    let (mut serve, _api, _env) = start(&claude, vec![Turn::text("Nothing to do.")]);
    let at = new_project_then(&mut serve, "/gsd:mode");
    let at = serve.wait(
        at,
        "is in **manual** mode: every approval reaches this chat.",
    );
    serve.say("/gsd:mode plan");
    let at = serve.wait(at, "is in **plan** mode now");
    serve.say("/gsd:status");
    let at = serve.wait(at, "== Status ==");
    serve.wait(at, "| plan |");
    serve.say("/gsd:mode manual");
    serve.wait(at, "is in **manual** mode now");
}

/// Claude Code started through a wrapper script whose name says nothing
/// of it (`agent = "…/cc-work.sh"`): clawmux cannot add the mode to that
/// command line, so it sets the configured mode (manual) from the keyboard
/// once the footer shows another (2.1.332 starts in auto mode), before the
/// first command is typed, and tells the chat.
#[test]
fn a_wrapper_scripts_claude_code_gets_the_configured_mode() {
    let claude = claude_required();
    let api = FakeApi::start_paced(vec![Turn::text("Nothing to do.")], Duration::ZERO).unwrap();
    let (home, env) = agent_home(&api, "shop");
    let wrapper = home.path().join("cc-work.sh");
    let script = format!("#!/bin/sh\nexec {}\n", env.env_command(&claude, &[]));
    std::fs::write(&wrapper, script).unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let agent = wrapper.display().to_string();
    let mut serve = ConsoleServe::start(&agent, home, TmuxServer::new());
    let at = new_project_then(&mut serve, "/gsd:mode");
    serve.wait(
        at,
        "is in **manual** mode: every approval reaches this chat.",
    );
    let out = serve.output();
    // Older releases start in manual mode: nothing to set.
    if release_at_least("2.1.332") {
        assert!(out.contains("is in **manual** mode now"), "{out}");
    }
}

/// A workspace Claude Code was never told to trust opens with its folder
/// trust dialog (2.1.332: a menu without numbers). It reaches the chat as
/// a card with its options, the answer from chat trusts the folder, and
/// the command that was waiting is then typed into the agent, not into
/// the dialog.
#[test]
fn folder_trust_reaches_the_chat_and_is_answered_from_it() {
    let claude = claude_required();
    let api =
        FakeApi::start_paced(vec![Turn::text("Trusted and working.")], Duration::ZERO).unwrap();
    // The home trusts another folder: `shop` is new to Claude Code.
    let (home, env) = agent_home(&api, "elsewhere");
    let agent = env.env_command(&claude, &[]);
    let mut serve = ConsoleServe::start(&agent, home, TmuxServer::new());
    serve.say("/gsd:new-project shop");
    let at = serve.wait(0, "== Approval needed ==");
    let at = serve.wait(at, "└─");
    let out = serve.output();
    let card = new_cards(&cards(&out), "== Approval needed ==")[0].to_owned();
    assert!(card.contains("trust"), "{card}");
    let yes = card
        .lines()
        .find(|l| l.contains("Yes, I trust this folder"))
        .unwrap_or_else(|| panic!("no trust option in\n{card}"));
    let key = yes
        .trim_start_matches(|c: char| c != '[')
        .trim_start_matches('[')
        .split(']')
        .next()
        .unwrap_or_default()
        .to_owned();
    serve.say(&format!("/gsd:answer {key}"));
    let at = serve.wait(at, "chose **Yes, I trust this folder**");
    serve.say("say hello");
    serve.wait(at, "Trusted and working.");
    // Claude Code asked the model once: the command, not the dialog, got
    // the text.
    assert_eq!(api.scripted_requests().len(), 1, "{}", serve.output());
}

/// A multi-select question (GSD's workflows ask them): one card with its
/// tick-box options; `1,3` from chat ticks exactly those and goes on to
/// Claude Code's review, whose Submit is answered from its own card; the
/// model gets both choices.
#[test]
fn multi_select_is_ticked_and_submitted_from_chat() {
    let claude = claude_required();
    let script = vec![
        Turn::tool(
            "AskUserQuestion",
            json!({"questions": [{
                "question": "Which features do you want?",
                "header": "Features",
                "multiSelect": true,
                "options": [
                    {"label": "Auth", "description": "Login and sessions"},
                    {"label": "Export", "description": "CSV and JSON"},
                    {"label": "Search", "description": "Full text"}
                ]
            }]}),
        ),
        Turn::text("Noted: auth and search."),
    ];
    let (mut serve, api, _env) = start(&claude, script);
    let at = new_project_then(&mut serve, "pick features");
    let at = serve.wait(at, "Which features do you want?");
    let at = serve.wait(at, "└─");
    let out = serve.output();
    let card = new_cards(&cards(&out), "== Approval needed ==")[0].to_owned();
    for needle in ["[ ] Auth", "[ ] Search", "/gsd:answer 1,3"] {
        assert!(card.contains(needle), "{needle:?} not in\n{card}");
    }
    serve.say("/gsd:answer 1,3");
    let at = serve.wait(at, "chose **Auth, Search**");
    // Claude Code's review of the answers: its own dialog, its own card.
    let at = serve.wait(at, "Submit answers");
    let at = serve.wait(at, "└─");
    serve.say("/gsd:answer 1");
    serve.wait(at, "Noted: auth and search.");
    let scripted = api.scripted_requests();
    assert_eq!(scripted.len(), 2, "{}", serve.output());
    let results = scripted[1].tool_results().join("\n");
    assert!(
        results.contains("Auth, Search"),
        "{results}\n{}",
        serve.output()
    );
}

/// A command sent the moment the previous result card arrives (what a
/// person on a phone does) is its own turn: twelve in a row, each with
/// one result card carrying its own answer, none "Finished" empty.
#[test]
fn commands_sent_right_after_each_result_each_get_their_own() {
    let claude = claude_required();
    const RUNS: usize = 12;
    let script = (1..=RUNS)
        .map(|i| Turn::text(&format!("Answer number {i}.")))
        .collect();
    let (mut serve, _api, _env) = start(&claude, script);
    let mut at = new_project_then(&mut serve, "question 1");
    for i in 1..=RUNS {
        at = serve.wait(at, &format!("Answer number {i}."));
        at = serve.wait(at, "└─");
        if i < RUNS {
            serve.say(&format!("question {}", i + 1));
        }
    }
    let out = serve.output();
    let all = cards(&out);
    for i in 1..=RUNS {
        let title = format!("== shop: question {i} ==");
        let finished: Vec<&str> = (all.iter())
            .filter(|(_, t)| t.starts_with(&title) && t.contains("```"))
            .map(|(_, t)| t.as_str())
            .collect();
        assert_eq!(finished.len(), 1, "question {i}:\n{out}");
        assert!(
            finished[0].contains(&format!("Answer number {i}.")),
            "question {i} got another answer:\n{}",
            finished[0]
        );
    }
    assert!(!out.contains("(no output)"), "{out}");
}
