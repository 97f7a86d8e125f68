//! The drift self-test behind `clawmux doctor --agent`: the installed
//! `claude`, in a private tmux server, against the built-in [`FakeApi`],
//! through a short script — a Bash permission prompt, an AskUserQuestion
//! question, a completed turn, an API error — watched by
//! [`crate::detect`] exactly as the daemon watches a pane. Each signal is
//! reported as detected or not, so a Claude Code release that changed its
//! screens is found before a user misses a prompt.
//!
//! Each step waits for the screen to show what Claude Code draws (the
//! ground truth) and for the detection, each with a deadline; a missed
//! detection is reported and the script goes on. [`run_bounded`] runs it
//! within an overall time and stops it on request (`serve` runs it in the
//! background when a project's Claude Code turns out to be a release
//! nobody tested, see `bridge::daemon::version_watch`).

use std::collections::VecDeque;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::json;
use tokio::time::Instant;

use super::{AgentCheckError, ClaudeEnv, FakeApi, Turn};
use crate::agents::claude::{DIALOG_SETTLE, PermissionMode};
use crate::control::PaneId;
use crate::detect::{
    ApprovalKind, Detection, DetectionKind, DetectorConfig, Millis, PaneWatcher, Profiles,
};
use crate::tmux::{self, ClientConfig, ClientEvent, Socket, TmuxCommand};

/// How long one step may take: Claude Code starts in a few seconds; a
/// loaded machine gets generous room. A bound on a hung step, not a target.
pub const STEP_DEADLINE: Duration = Duration::from_secs(45);

/// Retries Claude Code makes on the scripted 500 (each try is answered 500).
const API_ERROR_RETRIES: u32 = 1;

/// Detections kept while a step waits; the oldest go first. A step sees a
/// few dozen.
const MAX_PENDING_DETECTIONS: usize = 1024;

/// The pane size the self-test runs at.
const PANE_SIZE: (u16, u16) = (120, 40);

/// The scripted texts (what the screen must show).
const BASH_COMMAND: &str = "touch clawmux-selftest.txt";
const BASH_DONE: &str = "Self-test file created.";
const QUESTION: &str = "Which self-test answer do you pick?";
const QUESTION_DONE: &str = "Self-test question answered.";

/// A signal the self-test checks, in the order it checks them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Signal {
    /// A Bash command's permission prompt.
    Permission,
    /// The end of a turn.
    Completion,
    /// An AskUserQuestion question.
    Question,
    /// The API error Claude Code gave up on.
    ApiError,
}

impl Signal {
    /// Every signal, in the order the self-test checks them.
    pub const ALL: [Signal; 4] = [
        Signal::Permission,
        Signal::Completion,
        Signal::Question,
        Signal::ApiError,
    ];

    /// Its name in `doctor --agent`'s lines and the event log.
    pub fn name(self) -> &'static str {
        match self {
            Signal::Permission => "permission prompt",
            Signal::Completion => "completion",
            Signal::Question => "question",
            Signal::ApiError => "API error",
        }
    }
}

/// The result of one signal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignalResult {
    pub signal: Signal,
    pub ok: bool,
    /// What was detected, or what went wrong.
    pub detail: String,
}

/// The whole self-test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelfTestReport {
    pub version: String,
    pub signals: Vec<SignalResult>,
}

impl SelfTestReport {
    pub fn all_ok(&self) -> bool {
        self.signals.iter().all(|s| s.ok)
    }
}

/// A fresh name for the self-test's own tmux server (`tmux -L`): whoever
/// runs the self-test in the background knows it, so it can kill the
/// server should the process end before the self-test does.
pub fn private_socket() -> String {
    let tag: u32 = rand::random();
    format!("clawmux-selftest-{}-{tag:08x}", std::process::id())
}

/// A private tmux server, killed on drop.
struct PrivateTmux {
    socket: String,
}

impl PrivateTmux {
    fn start(socket: &str, session: &str) -> Result<PrivateTmux, AgentCheckError> {
        let tmux = PrivateTmux {
            socket: socket.to_owned(),
        };
        let (cols, rows) = PANE_SIZE;
        tmux.run(&[
            "new-session",
            "-d",
            "-s",
            session,
            "-x",
            &cols.to_string(),
            "-y",
            &rows.to_string(),
            "cat",
        ])?;
        Ok(tmux)
    }

    fn run(&self, args: &[&str]) -> Result<String, AgentCheckError> {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "-f", "/dev/null"])
            .args(args)
            .env("LANG", "C.UTF-8")
            .output()
            .map_err(|e| AgentCheckError::Tmux(format!("cannot run tmux: {e}")))?;
        if !out.status.success() {
            return Err(AgentCheckError::Tmux(format!(
                "tmux {}: {}",
                args.first().unwrap_or(&""),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

impl Drop for PrivateTmux {
    fn drop(&mut self) {
        crate::tmux::kill_server(&self.socket);
    }
}

/// The script: one turn per model call.
fn script() -> Vec<Turn> {
    vec![
        // Step 1: a Bash permission prompt, then the answer.
        Turn::tool(
            "Bash",
            json!({"command": BASH_COMMAND, "description": "Create the self-test file"}),
        ),
        Turn::text(BASH_DONE),
        // Step 2: a question with two options.
        Turn::tool(
            "AskUserQuestion",
            json!({"questions": [{
                "question": QUESTION,
                "header": "Self-test",
                "multiSelect": false,
                "options": [
                    {"label": "First", "description": "The first answer"},
                    {"label": "Second", "description": "The second answer"}
                ]
            }]}),
        ),
        Turn::text(QUESTION_DONE),
        // Step 3: the API fails, every try.
        Turn::error(500, "Internal server error", API_ERROR_RETRIES + 1),
    ]
}

/// Runs the self-test with `claude` (its version already read).
pub fn run(claude: &Path, version: &str) -> Result<SelfTestReport, AgentCheckError> {
    let runtime = runtime()?;
    runtime.block_on(run_async(claude, version, &private_socket()))
}

/// Runs the self-test as [`run`] does, on the tmux server named `socket`
/// (see [`private_socket`]), for at most `budget`, and stops it once
/// `cancel` fires or its sender is dropped. Stopped either way, its tmux
/// server is killed and its throwaway home removed before this returns.
/// Blocks: run it on a thread of its own.
pub fn run_bounded(
    claude: &Path,
    version: &str,
    socket: &str,
    budget: Duration,
    cancel: tokio::sync::oneshot::Receiver<()>,
) -> Result<SelfTestReport, AgentCheckError> {
    let runtime = runtime()?;
    runtime.block_on(async {
        tokio::select! {
            report = run_async(claude, version, socket) => report,
            () = tokio::time::sleep(budget) => Err(AgentCheckError::TimedOut {
                secs: budget.as_secs(),
            }),
            _ = cancel => Err(AgentCheckError::Cancelled),
        }
    })
}

fn runtime() -> Result<tokio::runtime::Runtime, AgentCheckError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| AgentCheckError::io("start", "a runtime", e))
}

/// The pane, its watcher and the detections not yet looked at.
struct Watch {
    client: tmux::Client,
    events: tmux::Subscription,
    pane: PaneId,
    watcher: PaneWatcher,
    epoch: Instant,
    found: VecDeque<Detection>,
    /// The pane's tmux server went (Claude Code exited: the pane closed).
    ended: bool,
}

impl Watch {
    fn now(&self) -> Millis {
        Millis(u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX))
    }

    /// Feeds output until `until` or the deadline; returns whether `until`
    /// held. Detections collect in `found`.
    async fn pump(&mut self, deadline: Instant, until: impl Fn(&Watch) -> bool) -> bool {
        loop {
            if until(self) {
                return true;
            }
            let wake = self
                .watcher
                .next_deadline()
                .map(|m| self.epoch + Duration::from_millis(m.0))
                .map_or(deadline, |w| w.min(deadline));
            tokio::select! {
                event = self.events.recv() => match event {
                    Some(ClientEvent::Output { pane, data }) if pane == self.pane => {
                        let now = self.now();
                        let found = &mut self.found;
                        self.watcher.feed(now, &data, &mut |d| keep(found, d));
                    }
                    Some(ClientEvent::Ended(_)) | None => {
                        self.ended = true;
                        return until(self);
                    }
                    Some(_) => {}
                },
                () = tokio::time::sleep_until(wake) => {
                    let now = self.now();
                    let found = &mut self.found;
                    self.watcher.tick(now, &mut |d| keep(found, d));
                    if Instant::now() >= deadline {
                        return until(self);
                    }
                }
            }
        }
    }

    fn screen_has(&self, needle: &str) -> bool {
        self.watcher.pane().screen().contains(needle)
    }

    /// Waits for a detection matching `want` (taking it and everything
    /// before it) until the deadline.
    async fn detection(
        &mut self,
        deadline: Instant,
        want: impl Fn(&Detection) -> bool,
    ) -> Option<Detection> {
        self.pump(deadline, |w| w.found.iter().any(&want)).await;
        let at = self.found.iter().position(&want)?;
        self.found.drain(..=at).next_back()
    }

    async fn type_prompt(&self, text: &str) -> Result<(), AgentCheckError> {
        self.client
            .send_text(self.pane, text)
            .await
            .map_err(|e| AgentCheckError::Tmux(e.to_string()))
    }

    /// Answers the dialog on screen as the daemon does: once it has been
    /// drawn for [`DIALOG_SETTLE`] (2.1.332 drops keys sent sooner).
    async fn answer(&mut self, key: &str) -> Result<(), AgentCheckError> {
        self.pump(Instant::now() + DIALOG_SETTLE, |_| false).await;
        self.keys(&[key]).await
    }

    async fn keys(&self, keys: &[&str]) -> Result<(), AgentCheckError> {
        self.client
            .send_keys(self.pane, keys)
            .await
            .map_err(|e| AgentCheckError::Tmux(e.to_string()))
    }
}

/// Queues a detection within [`MAX_PENDING_DETECTIONS`].
fn keep(found: &mut VecDeque<Detection>, d: Detection) {
    if found.len() >= MAX_PENDING_DETECTIONS {
        found.pop_front();
    }
    found.push_back(d);
}

fn approval(d: &Detection, kind: ApprovalKind) -> bool {
    matches!(&d.kind, DetectionKind::Approval { approval, .. } if *approval == kind)
}

fn describe(d: &Detection) -> String {
    match &d.kind {
        DetectionKind::Approval {
            question, options, ..
        } => {
            let options: Vec<String> = options
                .iter()
                .map(|o| format!("{}. {}", o.key, o.label))
                .collect();
            format!("{question:?} with options [{}]", options.join(", "))
        }
        DetectionKind::Error { line } => format!("{line:?}"),
        _ => d.to_json(),
    }
}

/// What the dialog reader could not find on the screen now.
fn missing_part(w: &Watch) -> String {
    match w.watcher.dialog_missing() {
        Some(missing) => format!("missing: {missing}"),
        None => "the dialog reader finds it now, but it was not reported in time".into(),
    }
}

fn last_rows(w: &Watch) -> String {
    let rows = w.watcher.pane().screen_rows();
    let text: Vec<&str> = rows
        .iter()
        .map(|r| r.trim_end())
        .filter(|r| !r.is_empty())
        .collect();
    let from = text.len().saturating_sub(6);
    text[from..].join(" | ")
}

async fn run_async(
    claude: &Path,
    version: &str,
    socket: &str,
) -> Result<SelfTestReport, AgentCheckError> {
    let api = FakeApi::start_paced(script(), Duration::from_millis(10))?;
    let env = ClaudeEnv::new(&api.base_url())?.with_max_retries(API_ERROR_RETRIES);
    let session = "selftest";
    let tmux = PrivateTmux::start(socket, session)?;
    let mut config = ClientConfig::attach(Some(session));
    config.socket = Some(Socket::Name(tmux.socket.clone()));
    config.config_file = Some("/dev/null".into());
    let client = tmux::connect(config)
        .await
        .map_err(|e| AgentCheckError::Tmux(e.to_string()))?;
    let events = client.subscribe();
    let reply = client
        .command(TmuxCommand::new("display-message").args(["-p", "-t", session, "#{pane_id}"]))
        .await
        .map_err(|e| AgentCheckError::Tmux(e.to_string()))?;
    let pane: PaneId = reply
        .first()
        .and_then(|l| std::str::from_utf8(l).ok())
        .and_then(|s| s.trim().parse().ok())
        .ok_or_else(|| AgentCheckError::Tmux("no pane id for the self-test session".into()))?;
    let profile = Profiles::defaults()
        .and_then(|p| p.get("claude"))
        .map_err(|e| AgentCheckError::Claude(format!("the claude profile: {e}")))?;
    let (cols, rows) = PANE_SIZE;
    let mut w = Watch {
        client,
        events,
        pane,
        watcher: PaneWatcher::new(pane, profile, DetectorConfig::default(), cols, rows),
        epoch: Instant::now(),
        found: VecDeque::new(),
        ended: false,
    };
    // Start Claude Code in the watched pane, so the watcher sees every byte.
    tmux.run(&[
        "respawn-pane",
        "-k",
        "-t",
        session,
        &env.shell_command(
            claude,
            &["--permission-mode", PermissionMode::Manual.flag()],
        ),
    ])?;
    let mut signals = Vec::new();
    // Its idle input box as the detector reads it: a `❯` row between `─`
    // rules with a footer under it and nothing busy (the footer's words
    // change between releases).
    let started = w
        .pump(Instant::now() + STEP_DEADLINE, |w| {
            let look = w.watcher.look();
            look.input.is_some() && !look.busy && !look.dialog()
        })
        .await;
    if !started && w.ended {
        return Err(AgentCheckError::Claude(format!(
            "Claude Code exited before it showed its input box; its screen: {}",
            last_rows(&w)
        )));
    }
    if !started {
        let look = w.watcher.look();
        let missing = if look.input.is_none() {
            "no input box (a `❯` row between two `─` rules)"
        } else if look.busy {
            "the input box, but the agent still looks busy"
        } else {
            "the input box, but a dialog in front of it"
        };
        return Err(AgentCheckError::Claude(format!(
            "Claude Code did not reach its input box within {} s: found {missing}; its screen: {}",
            STEP_DEADLINE.as_secs(),
            last_rows(&w)
        )));
    }

    // 1. The permission prompt, then the turn's completion.
    w.found.clear();
    w.type_prompt("Run the self-test command.").await?;
    let deadline = Instant::now() + STEP_DEADLINE;
    let drawn = w
        .pump(deadline, |w| {
            // Its last option (`3. No` before 2.1.332, `4. No` since).
            w.screen_has(BASH_COMMAND) && w.screen_has(". No")
        })
        .await;
    let hit = w
        .detection(deadline, |d| approval(d, ApprovalKind::Permission))
        .await;
    signals.push(match (&hit, drawn) {
        (Some(d), _) => SignalResult {
            signal: Signal::Permission,
            ok: true,
            detail: describe(d),
        },
        (None, true) => SignalResult {
            signal: Signal::Permission,
            ok: false,
            detail: format!(
                "the dialog is on screen but was not detected ({}): {}",
                missing_part(&w),
                last_rows(&w)
            ),
        },
        (None, false) => SignalResult {
            signal: Signal::Permission,
            ok: false,
            detail: format!("Claude Code never drew the dialog: {}", last_rows(&w)),
        },
    });
    if drawn {
        w.answer("1").await?;
    }
    let deadline = Instant::now() + STEP_DEADLINE;
    let answered = w.pump(deadline, |w| w.screen_has(BASH_DONE)).await;
    let done = w
        .detection(deadline, |d| matches!(d.kind, DetectionKind::Completed))
        .await;
    signals.push(SignalResult {
        signal: Signal::Completion,
        ok: done.is_some(),
        detail: match (&done, answered) {
            (Some(_), _) => "the turn's end was detected".into(),
            (None, true) => format!(
                "the answer is on screen but the turn's end was not detected: {}",
                last_rows(&w)
            ),
            (None, false) => format!("the turn did not finish: {}", last_rows(&w)),
        },
    });

    // 2. The question.
    w.found.clear();
    w.type_prompt("Ask me the self-test question.").await?;
    let deadline = Instant::now() + STEP_DEADLINE;
    let drawn = w.pump(deadline, |w| w.screen_has(QUESTION)).await;
    let hit = w
        .detection(deadline, |d| approval(d, ApprovalKind::Question))
        .await;
    let result = match &hit {
        Some(d) => {
            let right = matches!(&d.kind, DetectionKind::Approval { question, options, .. }
                if question.contains(QUESTION)
                    && options.iter().any(|o| o.key == "1" && o.label == "First")
                    && options.iter().any(|o| o.key == "2" && o.label == "Second"));
            SignalResult {
                signal: Signal::Question,
                ok: right,
                detail: if right {
                    describe(d)
                } else {
                    format!(
                        "detected with the wrong question or options: {}",
                        describe(d)
                    )
                },
            }
        }
        None => SignalResult {
            signal: Signal::Question,
            ok: false,
            detail: if drawn {
                format!(
                    "the question is on screen but was not detected ({}): {}",
                    missing_part(&w),
                    last_rows(&w)
                )
            } else {
                format!("Claude Code never drew the question: {}", last_rows(&w))
            },
        },
    };
    signals.push(result);
    if drawn {
        w.answer("1").await?;
    }
    let deadline = Instant::now() + STEP_DEADLINE;
    w.pump(deadline, |w| w.screen_has(QUESTION_DONE)).await;
    w.detection(deadline, |d| matches!(d.kind, DetectionKind::Completed))
        .await;

    // 3. The API error, after the retry.
    w.found.clear();
    w.type_prompt("Fail, please.").await?;
    let deadline = Instant::now() + STEP_DEADLINE;
    let drawn = w.pump(deadline, |w| w.screen_has("API Error: 500")).await;
    let is_final = |d: &Detection| matches!(&d.kind, DetectionKind::Error { line } if line.contains("API Error"));
    w.pump(deadline, |w| w.found.iter().any(is_final)).await;
    // Errors reported before Claude Code's own final one (the retry row,
    // say) would be false alarms in the chat.
    let early: Vec<String> = w
        .found
        .iter()
        .take_while(|d| !is_final(d))
        .filter(|d| matches!(d.kind, DetectionKind::Error { .. }))
        .map(describe)
        .collect();
    let hit = w.detection(deadline, is_final).await;
    signals.push(SignalResult {
        signal: Signal::ApiError,
        ok: hit.is_some() && early.is_empty(),
        detail: match (&hit, drawn) {
            (Some(d), _) if early.is_empty() => describe(d),
            (Some(d), _) => format!(
                "{} detected, but also, while Claude Code was still retrying: {}",
                describe(d),
                early.join("; ")
            ),
            (None, true) => format!(
                "the error is on screen but was not detected: {}",
                last_rows(&w)
            ),
            (None, false) => format!("Claude Code never showed the error: {}", last_rows(&w)),
        },
    });
    Ok(SelfTestReport {
        version: version.to_owned(),
        signals,
    })
}
