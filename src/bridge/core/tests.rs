//! The core alone: inputs in, cards in the state and effects out, on an
//! injected clock. No tmux, no agent: what the tmux harness reaches in
//! seconds, here in milliseconds.

use std::time::Duration;

use serde_json::{Value, json};

use super::*;
use crate::bridge::access::policy::ChatKind;
use crate::bridge::channels::chat::{ChatMessage, ToastLevel};
use crate::bridge::config::DmPolicy;
use crate::bridge::panes::agent_pane::{PaneError, PaneLocation};
use crate::bridge::project::{Approval, Reply, TaskNews, TurnEnding};
use crate::hooks::HookKind;
use crate::hooks::token::HookKey;
use crate::store::state::{
    ApprovalKind, ApprovalOption, OutboxEntry, PaneIdentity, PendingApproval, ProjectRecord, Stage,
};
use crate::tmux::TmuxError;

/// What a queued entry shows: its text (English), as the console prints
/// it, and its card as Feishu is sent it.
trait Shown {
    fn text(&self) -> String;
    fn card(&self) -> Value;
}

impl Shown for OutboxEntry {
    fn text(&self) -> String {
        (self.message.as_ref()).map_or_else(String::new, |m| m.to_text())
    }

    fn card(&self) -> Value {
        let card = self.message.as_ref().map(crate::feishu::card::Card::from);
        serde_json::to_value(card).unwrap()
    }
}

struct World {
    core: Core,
    shared: SharedState,
    clock: Instant,
    /// The wall clock at `clock`, in ms since the Unix epoch.
    wall_ms: u64,
    next: u32,
    _dir: tempfile::TempDir,
}

impl World {
    fn new() -> World {
        World::with_config("")
    }

    /// A world whose config is `toml` (then the test defaults).
    fn with_config(toml: &str) -> World {
        World::with_setup(toml, |_| {})
    }

    /// A world whose config is `toml`, then the test defaults, then `f`'s.
    fn with_setup(toml: &str, f: impl FnOnce(&mut Config)) -> World {
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config::parse(toml).unwrap();
        config.workspace_root = dir.path().join("ws").display().to_string();
        config.progress.interval_secs = 1;
        config.policy.dm_policy = DmPolicy::Allowlist;
        config.policy.allow_from = vec!["ou_alice".into(), "ou_bob".into()];
        config.policy.approvers = vec!["ou_alice".into()];
        f(&mut config);
        let (shared, _) = SharedState::open(dir.path()).unwrap();
        World {
            core: Core::new(
                Arc::new(config.clone()),
                shared.clone(),
                Arc::new(Hosts::new(&config)),
                HookKey::load_or_create(dir.path()),
                Instant::now(),
            ),
            shared,
            clock: Instant::now(),
            wall_ms: crate::store::clock::now_ms(),
            next: 0,
            _dir: dir,
        }
    }

    fn at(&mut self, after: Duration, input: Input) -> Vec<Effect> {
        let wall_ms = self.wall_ms + after.as_millis() as u64;
        self.core.handle(self.clock + after, wall_ms, input)
    }

    fn say(&mut self, sender: &str, text: &str) -> Vec<Effect> {
        self.message(sender, text, None)
    }

    /// A reply to the chat message `parent` (a card).
    fn reply(&mut self, sender: &str, text: &str, parent: &str) -> Vec<Effect> {
        self.message(sender, text, Some(parent))
    }

    fn message(&mut self, sender: &str, text: &str, parent: Option<&str>) -> Vec<Effect> {
        self.message_at(Duration::ZERO, sender, text, parent)
    }

    /// A message `after` the world's start.
    fn message_at(
        &mut self,
        after: Duration,
        sender: &str,
        text: &str,
        parent: Option<&str>,
    ) -> Vec<Effect> {
        self.next += 1;
        let m = ChatMessage {
            event_id: format!("ev{}", self.next),
            message_id: format!("om{}", self.next),
            target: chat(),
            kind: ChatKind::Direct,
            sender: sender.into(),
            text: text.into(),
            mentions_bot: false,
            parent_id: parent.map(String::from),
            rate_counted: false,
            image_not_saved: None,
        };
        self.at(after, Input::Message(m))
    }

    fn click(&mut self, operator: &str, value: Value) -> Vec<Effect> {
        self.next += 1;
        let c = CardClick {
            event_id: format!("click{}", self.next),
            operator: operator.into(),
            value,
            option: None,
            message_id: "om_card".into(),
            target: chat(),
            respond: None,
        };
        self.at(Duration::ZERO, Input::Click(c))
    }

    fn event(&mut self, job: Option<&Job>, kind: ProjectEventKind) -> Vec<Effect> {
        let e = ProjectEvent {
            project: crate::store::ids::project("demo"),
            job: job.cloned(),
            kind,
        };
        self.at(Duration::ZERO, Input::Project(e))
    }

    fn outbox(&self) -> Vec<OutboxEntry> {
        self.shared.read(|s| s.outbox.iter().cloned().collect())
    }

    fn texts(&self) -> String {
        let texts: Vec<String> = self.outbox().into_iter().map(|e| e.text()).collect();
        texts.join("\n----\n")
    }

    fn kinds(&self) -> Vec<String> {
        let log = crate::store::log_read::read_all(self._dir.path()).unwrap();
        log.records.into_iter().map(|r| r.kind).collect()
    }

    /// Records project `name` as an adopted pane (`work:%0`).
    fn adopted(&mut self, name: &str) {
        self.shared.update(|s| {
            let record = ProjectRecord {
                adopted: serde_json::from_str("\"work:%0\"").ok(),
                ..ProjectRecord::default()
            };
            s.projects.insert(crate::store::ids::project(name), record);
        });
    }

    /// Creates project `demo` and returns its first command.
    fn with_project(&mut self) -> Job {
        let effects = self.say("ou_alice", "/gsd:new-project demo");
        submitted(&effects).remove(0)
    }
}

fn chat() -> ChatTarget {
    ChatTarget::Chat {
        id: crate::store::ids::chat("oc_1"),
    }
}

fn submitted(effects: &[Effect]) -> Vec<Job> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Project {
                cmd: ProjectCmd::Submit(job),
                ..
            } => Some(job.clone()),
            _ => None,
        })
        .collect()
}

fn toast(effects: &[Effect]) -> Option<(ToastLevel, String)> {
    effects.iter().find_map(|e| match e {
        Effect::Respond { answer, .. } => (answer.toast.clone())
            .map(|(level, text)| (level, text.get(crate::i18n::Lang::En).to_string())),
        _ => None,
    })
}

#[test]
fn a_command_is_recorded_then_handed_to_its_project() {
    let mut w = World::new();
    let job = w.with_project();
    assert_eq!(
        (job.project.as_str(), job.text.as_str()),
        ("demo", "/gsd:new-project")
    );
    assert!(w.texts().contains("Created **demo**"), "{}", w.texts());
    // The record is on disk before the project is asked to type it.
    assert_eq!(w.shared.read(|s| s.jobs.clone()), vec![job.clone()]);
    let effects = w.say("ou_alice", "hello");
    let job = &submitted(&effects)[0];
    assert_eq!(job.text, "hello");
    assert_eq!(job.stage, Stage::Waiting);
}

#[test]
fn a_stranger_gets_nothing_done() {
    let mut w = World::new();
    assert!(w.say("ou_eve", "/gsd:new-project demo").is_empty());
    assert!(
        w.shared
            .read(|s| s.jobs.is_empty() && s.projects.is_empty())
    );
    assert!(w.kinds().contains(&"denied".to_string()));
}

/// The `denied` records of the log so far, as written.
fn denials(w: &World) -> Vec<serde_json::Map<String, Value>> {
    let log = crate::store::log_read::read_all(w._dir.path()).unwrap();
    (log.records.into_iter())
        .filter(|r| r.kind == "denied")
        .map(|r| r.fields)
        .collect()
}

/// Issue 48, item 6: a refused sender's lines are counted in a window of
/// its own. The first `MAX_REFUSALS_PER_WINDOW` of a minute are logged,
/// each with a bounded prefix of its text and the text's length; the rest
/// are dropped, and one summary line counts them when the window ends (a
/// tick) or, with no tick between, before the sender's next line.
///
/// Passes by `Core::log_denied` and `Core::summarise_refusals`
/// (`admission.rs`, over `access::refusals`) and `Denial::with_text`;
/// without them each of the 40 messages is a line holding all its text.
#[test]
fn a_refused_senders_lines_are_bounded_and_summarised() {
    use crate::bridge::access::refusals::{MAX_REFUSALS_PER_WINDOW, REFUSAL_WINDOW};
    use crate::store::log_event::DENIED_TEXT_BYTES;
    let mut w = World::new();
    let text = "x".repeat(100_000);
    for _ in 0..40 {
        w.say("ou_eve", &text);
    }
    let lines = denials(&w);
    assert_eq!(lines.len(), MAX_REFUSALS_PER_WINDOW as usize, "{lines:?}");
    for line in &lines {
        let logged = line["text"].as_str().unwrap_or_default();
        assert_eq!(logged.len(), DENIED_TEXT_BYTES);
        assert_eq!(line["text_bytes"], json!(100_000));
    }
    // Told once, not 40 times (each card spends the shared send quota).
    assert_eq!(w.outbox().len(), 1, "{}", w.texts());

    let dropped = 40 - u64::from(MAX_REFUSALS_PER_WINDOW);
    w.at(REFUSAL_WINDOW - Duration::from_millis(1), Input::Tick);
    assert_eq!(denials(&w).len(), lines.len(), "not before the window ends");
    w.at(REFUSAL_WINDOW, Input::Tick);
    let summary = denials(&w).pop().unwrap_or_default();
    assert_eq!(summary["sender"], "ou_eve", "{summary:?}");
    assert_eq!(summary["more"], json!(dropped), "{summary:?}");
    assert_eq!(
        summary["reason"],
        format!("{dropped} more refused (not logged one by one)")
    );
    w.at(2 * REFUSAL_WINDOW, Input::Tick);
    assert_eq!(denials(&w).len(), lines.len() + 1, "summarised once");

    // No tick before the sender's next window: its first line brings the
    // summary of the last.
    let t = 3 * REFUSAL_WINDOW;
    for _ in 0..MAX_REFUSALS_PER_WINDOW + 2 {
        w.message_at(t, "ou_eve", "again", None);
    }
    w.message_at(t + REFUSAL_WINDOW, "ou_eve", "later", None);
    let last: Vec<_> = denials(&w).into_iter().rev().take(2).collect();
    assert_eq!(last[0]["text"], "later", "{last:?}");
    assert_eq!(last[1]["more"], json!(2), "{last:?}");
}

/// Issue 48, item 5: under `dm_policy = "pairing"` a stranger gets one
/// pairing card for its code's lifetime, however often it writes; what it
/// sends meanwhile is counted in its refusal window, and past that
/// dropped silently.
///
/// Passes by `Core::pair` (`admission.rs`: a card only for a new code,
/// counted by `refusal_counted`); without it each message is a card.
#[test]
fn a_stranger_gets_one_pairing_card_a_code() {
    use crate::bridge::access::pairing::PAIRING_CODE_TTL_MS;
    use crate::bridge::access::refusals::MAX_REFUSALS_PER_WINDOW;
    let mut w = World::with_setup("", |c| c.policy.dm_policy = DmPolicy::Pairing);
    let mut saved = 0;
    for _ in 0..40 {
        let effects = w.say("ou_eve", "let me in");
        saved += (effects.iter())
            .filter(|e| matches!(e, Effect::SavePairingCode { .. }))
            .count();
    }
    assert_eq!(saved, 1);
    assert_eq!(w.outbox().len(), 1, "{}", w.texts());
    assert!(w.texts().contains("pairing code"), "{}", w.texts());
    let kinds = w.kinds();
    let count = |k: &str| kinds.iter().filter(|r| *r == k).count();
    assert_eq!(count("pairing"), 1, "{kinds:?}");
    assert_eq!(
        count("denied"),
        MAX_REFUSALS_PER_WINDOW as usize - 1,
        "{kinds:?}"
    );
    // The code expired: a new one, on a new card.
    let later = Duration::from_millis(PAIRING_CODE_TTL_MS);
    w.message_at(later, "ou_eve", "let me in", None);
    assert_eq!(w.outbox().len(), 2, "{}", w.texts());
}

#[test]
fn a_command_s_cards_follow_its_lifecycle() {
    let mut w = World::new();
    let job = w.with_project();
    w.event(Some(&job), ProjectEventKind::Started);
    assert!(w.texts().contains("Running…"), "{}", w.texts());
    let output = "● Project initialised".to_string();
    let done = ProjectEventKind::Completed {
        screen: String::new(),
        output,
        seconds: 2,
        errors: 0,
        ending: TurnEnding::Finished,
        usage: Default::default(),
        kept: None,
    };
    w.event(Some(&job), done);
    assert!(w.texts().contains("Project initialised"), "{}", w.texts());
    assert!(w.shared.read(|s| s.jobs.is_empty()), "the job is over");
}

/// A long result's output comes kept as a file (the shell wrote it): to a
/// chat the core names it in a file message after a summary card; a result
/// read as cards (the console), or with no command left, has it removed.
/// The core opens no file either way.
#[test]
fn a_kept_output_goes_as_a_file_to_a_chat_and_is_removed_otherwise() {
    use crate::bridge::outbox_files::KeptOutput;
    let output = "line\n".repeat(10_000);
    let done = |n: u8| ProjectEventKind::Completed {
        screen: String::new(),
        output: output.clone(),
        seconds: 2,
        errors: 0,
        ending: TurnEnding::Finished,
        usage: Default::default(),
        kept: Some(KeptOutput {
            uuid: format!("u{n}"),
            path: format!("/nowhere/u{n}.txt").into(),
        }),
    };
    let removed = |effects: &[Effect]| -> Vec<String> {
        (effects.iter())
            .filter_map(|e| match e {
                Effect::RemoveFile(path) => Some(path.display().to_string()),
                _ => None,
            })
            .collect()
    };
    let mut w = World::new();
    let job = w.with_project();
    let effects = w.event(Some(&job), done(1));
    assert_eq!(removed(&effects), Vec::<String>::new());
    let entries = w.outbox();
    let file = entries.iter().find_map(|e| match &e.op {
        OutboxOp::File {
            path, file_name, ..
        } => Some((e.uuid.as_str(), path, file_name)),
        _ => None,
    });
    assert_eq!(
        file,
        Some((
            "u1",
            &"/nowhere/u1.txt".to_string(),
            &"demo-gsd-new-project.txt".to_string()
        )),
        "{}",
        w.texts()
    );
    assert!(
        w.texts().contains("10000 lines"),
        "the summary: {}",
        w.texts()
    );

    let mut w = World::new();
    let job = w.with_project();
    w.shared.update(|s| s.jobs[0].target = ChatTarget::Console);
    let effects = w.event(Some(&job), done(2));
    assert_eq!(removed(&effects), ["/nowhere/u2.txt"]);
    assert!(
        !w.outbox()
            .iter()
            .any(|e| matches!(e.op, OutboxOp::File { .. })),
        "{}",
        w.texts()
    );
    assert_eq!(removed(&w.event(None, done(3))), ["/nowhere/u3.txt"]);
}

/// A crash may come between any two state changes: no state a command's end
/// leaves may hold neither the command (to be resumed) nor its result (to be
/// delivered), and its progress card's last update goes with the result.
#[test]
fn a_command_is_forgotten_in_the_same_change_that_queues_its_result() {
    let endings = [
        ProjectEventKind::Completed {
            screen: String::new(),
            output: "● Project initialised".into(),
            seconds: 2,
            errors: 0,
            ending: TurnEnding::Finished,
            usage: Default::default(),
            kept: None,
        },
        ProjectEventKind::TimedOut {
            screen: "still going".into(),
            seconds: 600,
            unrecognised: false,
        },
        ProjectEventKind::NotSubmitted {
            screen: "❯ hello".into(),
        },
    ];
    for ending in endings {
        let what = format!("{ending:?}");
        let mut w = World::new();
        let job = w.with_project();
        w.event(Some(&job), ProjectEventKind::Started);
        let before = w.outbox().len();
        w.shared.record_changes();
        w.event(Some(&job), ending);
        let states = w.shared.recorded_changes();
        assert!(!states.is_empty(), "{what}: nothing changed");
        for (i, s) in states.iter().enumerate() {
            let gone = !s.jobs.iter().any(|j| j.id == job.id);
            let sent =
                (s.outbox.iter().skip(before)).any(|e| matches!(e.op, OutboxOp::Send { .. }));
            let progress_patched =
                (s.outbox.iter().skip(before)).any(|e| matches!(e.op, OutboxOp::Patch { .. }));
            assert!(
                !gone || sent,
                "{what}: change {i} forgot the command before its result was queued"
            );
            assert_eq!(
                sent, gone,
                "{what}: change {i}: result queued, command kept"
            );
            if what.starts_with("Completed") {
                assert_eq!(progress_patched, gone, "{what}: change {i}");
            }
        }
        assert!(
            w.shared.read(|s| s.jobs.is_empty()),
            "{what}: the job is over"
        );
    }
}

#[test]
fn progress_updates_wait_for_the_interval_on_the_injected_clock() {
    let mut w = World::new();
    let job = w.with_project();
    w.event(Some(&job), ProjectEventKind::Started);
    let progress = |summary: &str| ProjectEventKind::Progress {
        summary: summary.into(),
        percent: None,
        tail: String::new(),
    };
    let patches = |w: &World| {
        w.outbox()
            .iter()
            .filter(|e| matches!(e.op, OutboxOp::Patch { .. }))
            .map(|e| e.text().clone())
            .collect::<Vec<_>>()
    };
    let e = ProjectEvent {
        project: crate::store::ids::project("demo"),
        job: Some(job.clone()),
        kind: progress("first"),
    };
    w.at(Duration::from_millis(100), Input::Project(e));
    w.at(Duration::from_millis(600), Input::Tick);
    assert!(
        patches(&w).is_empty(),
        "within the interval: {:?}",
        patches(&w)
    );
    w.at(Duration::from_millis(1100), Input::Tick);
    let sent = patches(&w);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert!(sent[0].contains("first"), "{sent:?}");
}

/// A GSD project's progress card says where its planning files stand,
/// read when the card is made: a change GSD writes shows on the next one.
#[test]
fn progress_cards_carry_the_gsd_planning_position() {
    let mut w = World::new();
    let job = w.with_project();
    let workspace = w.shared.read(|s| s.projects["demo"].workspace.clone());
    let planning = std::path::Path::new(&workspace).join(".planning");
    std::fs::create_dir_all(&planning).unwrap();
    let progress = |w: &mut World, at: u64, phase: u32| {
        let state = format!("# Project State\n\nPhase: {phase} of 3 (Cart)\nStatus: executing\n");
        std::fs::write(planning.join("STATE.md"), state).unwrap();
        let e = ProjectEvent {
            project: crate::store::ids::project("demo"),
            job: Some(job.clone()),
            kind: ProjectEventKind::Progress {
                summary: "Executing".into(),
                percent: None,
                tail: String::new(),
            },
        };
        w.at(Duration::from_secs(at), Input::Project(e));
        let patched = w.outbox().iter().rev().find_map(|e| match e.op {
            OutboxOp::Patch { .. } => Some(e.text().clone()),
            _ => None,
        });
        patched.unwrap_or_default()
    };
    w.event(Some(&job), ProjectEventKind::Started);
    let first = progress(&mut w, 5, 2);
    assert!(first.contains("GSD: phase 2 of 3 (Cart)"), "{first}");
    let card = (w.outbox().iter().rev())
        .find(|e| matches!(e.op, OutboxOp::Patch { .. }))
        .and_then(|e| e.message.clone())
        .unwrap();
    let zh = card.to_text_in(crate::i18n::Lang::Zh);
    assert!(zh.contains("GSD 进度：第 2/3 阶段 (Cart)"), "{zh}");
    let next = progress(&mut w, 10, 3);
    assert!(next.contains("GSD: phase 3 of 3 (Cart)"), "{next}");
}

/// A position the planning watch read, with nothing printed, updates the
/// running command's progress card, keeping the progress it showed.
#[test]
fn a_planning_change_alone_updates_the_progress_card() {
    let mut w = World::new();
    let job = w.with_project();
    w.event(Some(&job), ProjectEventKind::Started);
    let progress = ProjectEventKind::Progress {
        summary: "EXECUTING WAVE 1".into(),
        percent: None,
        tail: String::new(),
    };
    w.at(
        Duration::from_secs(2),
        Input::Project(ProjectEvent {
            project: crate::store::ids::project("demo"),
            job: Some(job.clone()),
            kind: progress,
        }),
    );
    let planning = ProjectEventKind::Planning {
        summary: "phase 3 of 3 (Cart) · executing".into(),
    };
    w.at(
        Duration::from_secs(4),
        Input::Project(ProjectEvent {
            project: crate::store::ids::project("demo"),
            job: Some(job.clone()),
            kind: planning,
        }),
    );
    let patched = (w.outbox().iter().rev())
        .find_map(|e| matches!(e.op, OutboxOp::Patch { .. }).then(|| e.text().clone()))
        .unwrap_or_default();
    assert!(patched.contains("GSD: phase 3 of 3 (Cart)"), "{patched}");
    assert!(patched.contains("EXECUTING WAVE 1"), "{patched}");
}

fn approval() -> Approval {
    Approval {
        id: "ap1".parse().unwrap(),
        session: crate::store::ids::session("cm-demo"),
        pane: crate::control::PaneId(1),
        kind: ApprovalKind::Permission,
        question: "Do you want to proceed?".into(),
        body: "Bash command\n  rm -rf build\n  Remove the build output".into(),
        options: ApprovalOption::numbered(&["Yes", "No"]),
    }
}

#[test]
fn an_approval_is_answered_once_by_an_approver() {
    let mut w = World::new();
    let job = w.with_project();
    w.event(Some(&job), ProjectEventKind::Approval(approval()));
    // The card says what is approved, not only the question.
    for shown in [
        "Do you want to proceed?",
        "rm -rf build",
        "Remove the build output",
    ] {
        assert!(w.texts().contains(shown), "{shown}: {}", w.texts());
    }
    let value = json!({"action": "approval", "approval_id": "ap1", "project": "demo", "session": "cm-demo", "option": "1"});

    let bob = w.click("ou_bob", value.clone());
    assert_eq!(toast(&bob).map(|t| t.0), Some(ToastLevel::Error));
    assert!(bob.iter().all(|e| !matches!(e, Effect::Project { .. })));

    let alice = w.click("ou_alice", value.clone());
    assert_eq!(
        toast(&alice),
        Some((ToastLevel::Success, "Sending: Yes".into()))
    );
    let answers: Vec<&str> = alice
        .iter()
        .filter_map(|e| match e {
            Effect::Project {
                cmd: ProjectCmd::Answer { key, .. },
                ..
            } => Some(key.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(answers, ["1"]);
    // Pressed again before the answer is typed: nothing is typed twice.
    let again = w.click("ou_alice", value.clone());
    assert_eq!(toast(&again).map(|t| t.0), Some(ToastLevel::Info));
    assert!(again.iter().all(|e| !matches!(e, Effect::Project { .. })));

    let answered = ProjectEventKind::Answered {
        approval_id: "ap1".parse().unwrap(),
        by: "ou_alice".into(),
        label: "Yes".into(),
        reply: Reply {
            target: chat(),
            reply_to: None,
        },
        result: Ok(()),
    };
    w.event(None, answered);
    assert!(w.shared.read(|s| s.approvals.is_empty()));
    let late = w.click("ou_alice", value);
    assert_eq!(toast(&late).map(|t| t.0), Some(ToastLevel::Warning));
}

/// The click is only sent; the card says "answered" once the screen shows
/// the dialog changed, and "not taken" when it never did.
#[test]
fn an_answer_the_dialog_never_took_is_told_and_can_be_given_again() {
    let mut w = World::new();
    let job = w.with_project();
    w.event(Some(&job), ProjectEventKind::Approval(approval()));
    let value = json!({"action": "approval", "approval_id": "ap1", "project": "demo", "session": "cm-demo", "option": "1"});
    let first = w.click("ou_alice", value.clone());
    assert_eq!(
        toast(&first),
        Some((ToastLevel::Success, "Sending: Yes".into()))
    );
    assert!(!w.texts().contains("Answered"), "{}", w.texts());
    let not_taken = ProjectEventKind::Answered {
        approval_id: "ap1".parse().unwrap(),
        by: "ou_alice".into(),
        label: "Yes".into(),
        reply: Reply {
            target: chat(),
            reply_to: None,
        },
        result: Err(ProjectError::NotTaken { tries: 2 }),
    };
    w.event(None, not_taken);
    assert!(w.texts().contains("Answer not taken"), "{}", w.texts());
    assert!(w.texts().contains("sent 2 times"), "{}", w.texts());
    // Still pending: pressing again sends the key again.
    assert!(w.shared.read(|s| s.approvals.contains_key("ap1")));
    let again = w.click("ou_alice", value);
    assert!(
        again.iter().any(|e| matches!(
            e,
            Effect::Project {
                cmd: ProjectCmd::Answer { .. },
                ..
            }
        )),
        "{again:?}"
    );
}

#[test]
fn cancel_with_nothing_running_says_so() {
    let mut w = World::new();
    w.with_project();
    let effects = w.say("ou_alice", "/gsd:cancel");
    assert!(matches!(
        effects.as_slice(),
        [Effect::Project {
            cmd: ProjectCmd::Cancel { .. },
            ..
        }]
    ));
    let outcome = ProjectEventKind::Cancelled {
        by: "ou_alice".into(),
        keys: "Esc".into(),
        reply: Reply {
            target: chat(),
            reply_to: None,
        },
        result: Err(ProjectError::NothingToCancel),
    };
    w.event(None, outcome);
    assert!(w.texts().contains("Nothing to cancel"), "{}", w.texts());
    assert!(!w.kinds().contains(&"cancel".to_string()));
}

/// `/gsd:cancel` presses Esc, which answers a waiting permission dialog
/// (rejects it): like the Interrupt button, `/gsd:keys` and `/gsd:answer`,
/// it is for approvers only.
#[test]
fn cancel_is_for_approvers_only() {
    let mut w = World::new();
    w.with_project();
    let cancels = |effects: &[Effect]| {
        effects.iter().any(|e| {
            matches!(
                e,
                Effect::Project {
                    cmd: ProjectCmd::Cancel { .. },
                    ..
                }
            )
        })
    };
    let refused = w.say("ou_bob", "/gsd:cancel");
    assert!(!cancels(&refused), "{refused:?}");
    assert!(
        w.texts().contains("Only approvers may interrupt"),
        "{}",
        w.texts()
    );
    assert!(w.kinds().contains(&"denied".to_string()), "{:?}", w.kinds());
    assert!(!w.kinds().contains(&"keys".to_string()), "no intent logged");
    assert!(cancels(&w.say("ou_alice", "/gsd:cancel")));
}

#[test]
fn status_is_what_the_projects_last_reported() {
    let mut w = World::new();
    w.with_project();
    let status = ProjectStatus {
        attached: true,
        starting: true,
        ..Default::default()
    };
    w.event(None, ProjectEventKind::Status(status));
    let effects = w.say("ou_alice", "/gsd:status");
    assert!(effects.is_empty(), "no project is asked");
    assert!(
        w.texts().contains("| demo | starting its agent |"),
        "{}",
        w.texts()
    );
    // The cells clawmux writes are in Chinese too.
    let card = w.outbox().pop().unwrap().message.unwrap();
    let zh = card.to_text_in(crate::i18n::Lang::Zh);
    assert!(
        zh.contains("| demo | 正在启动智能体 |  |  | 0 | 本机 |"),
        "{zh}"
    );
}

#[test]
fn a_mode_whose_approvals_skip_the_chat_is_said_once_per_change() {
    use crate::agents::claude::PermissionMode;
    let mut w = World::new();
    w.with_project();
    let said = |w: &World| w.texts().matches("Approvals off").count();
    for (mode, cards) in [
        (PermissionMode::Auto, 1),
        (PermissionMode::Auto, 1),
        (PermissionMode::Manual, 1),
        (PermissionMode::Auto, 2),
        (PermissionMode::AcceptEdits, 3),
    ] {
        let status = ProjectStatus {
            attached: true,
            mode: Some(mode),
            ..Default::default()
        };
        w.event(None, ProjectEventKind::Status(status));
        assert_eq!(said(&w), cards, "after {mode}:\n{}", w.texts());
    }
    assert!(w.texts().contains("runs in **auto** mode"), "{}", w.texts());
}

#[test]
fn a_command_its_project_refuses_is_ended_and_told() {
    let mut w = World::new();
    let job = w.with_project();
    w.core.undeliverable(
        &crate::store::ids::project("demo"),
        ProjectCmd::Submit(job),
        &ProjectError::Overloaded,
    );
    assert!(w.shared.read(|s| s.jobs.is_empty()));
    assert!(w.texts().contains("not keeping up"), "{}", w.texts());
}

#[test]
fn a_queued_command_is_announced_once_across_restarts() {
    let mut w = World::new();
    let job = w.with_project();
    let queued = || ProjectEventKind::Queued { position: 1 };
    w.event(Some(&job), queued());
    // A new core on the same state: the command resumed queues again.
    let hosts = w.core.hosts.clone();
    w.core = Core::new(
        w.core.config.clone(),
        w.shared.clone(),
        hosts,
        HookKey::load_or_create(w._dir.path()),
        Instant::now(),
    );
    w.event(Some(&job), queued());
    assert_eq!(w.texts().matches("number 1 in the queue").count(), 1);
}

#[test]
fn a_failing_event_log_is_told_to_every_chat_once_per_outage() {
    let mut w = World::new();
    w.with_project();
    let failing = LogHealth::Failing {
        first_error: "No space left on device".into(),
        since_ms: 0,
    };
    w.at(Duration::ZERO, Input::LogHealth(failing));
    assert_eq!(w.texts().matches("cannot write its event log").count(), 1);
    assert!(
        w.texts().contains("No space left on device"),
        "{}",
        w.texts()
    );
    w.at(Duration::ZERO, Input::LogHealth(LogHealth::Ok));
    assert_eq!(w.texts().matches("writes its event log again").count(), 1);
}

#[test]
fn a_refused_or_stopped_command_is_not_reported_as_finished() {
    let mut w = World::new();
    let job = w.with_project();
    w.event(Some(&job), ProjectEventKind::Started);
    let refused = ProjectEventKind::Completed {
        screen: String::new(),
        output: String::new(),
        seconds: 1,
        errors: 0,
        ending: TurnEnding::Rejected("Unknown command: /gsd:new-project".into()),
        usage: Default::default(),
        kept: None,
    };
    w.event(Some(&job), refused);
    let texts = w.texts();
    assert!(
        texts.contains("The agent refused: demo: /gsd:new-project"),
        "{texts}"
    );
    assert!(
        texts.contains("Unknown command: /gsd:new-project"),
        "{texts}"
    );
    assert!(!texts.contains("Finished"), "{texts}");

    let job = submitted(&w.say("ou_alice", "rm -rf build")).remove(0);
    let stopped = ProjectEventKind::Completed {
        screen: String::new(),
        output: String::new(),
        seconds: 1,
        errors: 0,
        ending: TurnEnding::Interrupted("Interrupted · What should Claude do instead?".into()),
        usage: Default::default(),
        kept: None,
    };
    w.event(Some(&job), stopped);
    let texts = w.texts();
    assert!(texts.contains("Stopped: demo: rm -rf build"), "{texts}");
    assert!(
        !texts.contains("error"),
        "the user's own No is not an error: {texts}"
    );
}

#[test]
fn a_timeout_with_nothing_recognised_raises_the_drift_alarm() {
    let mut w = World::new();
    let job = w.with_project();
    let timed_out = |unrecognised| ProjectEventKind::TimedOut {
        screen: "???".into(),
        seconds: 600,
        unrecognised,
    };
    w.event(Some(&job), timed_out(true));
    assert!(w.kinds().contains(&"detection_drift".to_string()));
    assert!(
        w.texts().contains("clawmux doctor --agent"),
        "{}",
        w.texts()
    );
    let job = submitted(&w.say("ou_alice", "again")).remove(0);
    w.event(Some(&job), timed_out(false));
    let drifts = w.kinds().iter().filter(|k| *k == "detection_drift").count();
    assert_eq!(drifts, 1);
}

/// A hook from project demo's agent pane, with its token.
fn hook(w: &World, event: HookKind) -> Input {
    Input::Hook(hook_event(w, event))
}

/// A hook from the project's agent (its token, its pane), to alter.
fn hook_event(w: &World, event: HookKind) -> HookEvent {
    HookEvent {
        name: String::new(),
        event,
        session_id: None,
        cwd: None,
        transcript_path: None,
        tmux_pane: Some("%1".into()),
        token: Some(w.core.hook_token("demo")),
        received_at: std::time::SystemTime::now(),
    }
}

fn project_cmds(effects: Vec<Effect>) -> Vec<ProjectCmd> {
    (effects.into_iter())
        .filter_map(|e| match e {
            Effect::Project { cmd, .. } => Some(cmd),
            _ => None,
        })
        .collect()
}

#[test]
fn hooks_reach_their_projects_actor_with_what_they_carry() {
    let mut w = World::new();
    w.with_project();
    w.event(
        None,
        ProjectEventKind::Attached {
            pane: crate::control::PaneId(1),
        },
    );
    let stop = HookKind::Stop {
        stop_hook_active: false,
        last_assistant_message: Some("All done.".into()),
    };
    // The transcript it names goes to the actor unread (the core does no
    // file I/O: the path does not even exist).
    let mut stop = hook_event(&w, stop);
    let path = std::path::PathBuf::from("/nowhere/session.jsonl");
    stop.transcript_path = Some(path.clone());
    let cmds = project_cmds(w.at(Duration::ZERO, Input::Hook(stop)));
    assert!(
        matches!(&cmds[..], [ProjectCmd::HookStop { answer: Some(a), transcript: Some(t) }]
            if a == "All done." && *t == path),
        "{cmds:?}"
    );
    let permission = HookKind::PermissionRequest {
        tool_name: "Bash".into(),
        tool_input: serde_json::json!({"command": "cargo test"}),
    };
    let cmds = project_cmds(w.at(Duration::ZERO, hook(&w, permission)));
    assert!(
        matches!(&cmds[..], [ProjectCmd::HookPermission(crate::hooks::ToolRequest::Bash { command, .. })] if command == "cargo test")
    );
    let task = HookKind::TaskCompleted {
        task_id: Some("3".into()),
        task_subject: Some("Write the parser".into()),
    };
    let cmds = project_cmds(w.at(Duration::ZERO, hook(&w, task)));
    assert!(
        matches!(&cmds[..], [ProjectCmd::HookTask(TaskNews::Completed { id, subject })] if id == "3" && subject == "Write the parser")
    );
    let unknown = HookKind::Other("UserPromptSubmit".into());
    assert!(project_cmds(w.at(Duration::ZERO, hook(&w, unknown))).is_empty());
}

#[test]
fn a_hook_without_its_projects_token_is_ignored() {
    let mut w = World::new();
    w.with_project();
    w.event(
        None,
        ProjectEventKind::Attached {
            pane: crate::control::PaneId(1),
        },
    );
    let stop = || HookKind::Stop {
        stop_hook_active: false,
        last_assistant_message: Some("invented".into()),
    };
    let other_project = Some(w.core.hook_token("blog"));
    for token in [None, Some("0".repeat(32)), other_project] {
        let mut forged = hook_event(&w, stop());
        forged.token = token;
        assert!(project_cmds(w.at(Duration::ZERO, Input::Hook(forged))).is_empty());
    }
    assert_eq!(w.kinds().iter().filter(|k| *k == "hook_ignored").count(), 3);
}

/// A hook's working directory counts only when it is the project's
/// workspace or inside it once `.` and `..` are resolved: `/ws/../other`
/// starts with `/ws` but is not in it, and a relative one is nowhere.
#[test]
fn a_hook_from_outside_the_workspace_is_ignored_however_its_path_is_spelled() {
    let mut w = World::new();
    w.with_project();
    w.event(
        None,
        ProjectEventKind::Attached {
            pane: crate::control::PaneId(1),
        },
    );
    let ws = w.shared.read(|s| s.projects["demo"].workspace.clone());
    let stop = |w: &World, cwd: String| {
        let mut h = hook_event(
            w,
            HookKind::Stop {
                stop_hook_active: false,
                last_assistant_message: Some("invented".into()),
            },
        );
        h.cwd = Some(cwd.into());
        Input::Hook(h)
    };
    for cwd in [
        format!("{ws}/../other"),
        format!("{ws}/./sub/../../other"),
        format!("{ws}/.."),
        "demo".to_string(),
        "./sub".to_string(),
    ] {
        let hook = stop(&w, cwd.clone());
        let cmds = project_cmds(w.at(Duration::ZERO, hook));
        assert!(cmds.is_empty(), "{cwd}: {cmds:?}");
    }
    assert_eq!(w.kinds().iter().filter(|k| *k == "hook_ignored").count(), 5);
    for cwd in [
        ws.clone(),
        format!("{ws}/src"),
        format!("{ws}/src/../lib/."),
    ] {
        let hook = stop(&w, cwd.clone());
        let cmds = project_cmds(w.at(Duration::ZERO, hook));
        assert_eq!(cmds.len(), 1, "{cwd}: {cmds:?}");
    }
}

/// A hook is matched to an agent pane by tmux's own pane id only: another
/// spelling of it, or no pane id at all, speaks for no one.
#[test]
fn a_hook_naming_no_agent_pane_is_ignored() {
    let mut w = World::new();
    w.with_project();
    w.event(
        None,
        ProjectEventKind::Attached {
            pane: crate::control::PaneId(1),
        },
    );
    for pane in ["%01", "1", "%1 ", "%2", "demo"] {
        let mut h = hook_event(
            &w,
            HookKind::Stop {
                stop_hook_active: false,
                last_assistant_message: Some("invented".into()),
            },
        );
        h.tmux_pane = Some(pane.into());
        assert!(
            project_cmds(w.at(Duration::ZERO, Input::Hook(h))).is_empty(),
            "{pane:?}"
        );
    }
    assert_eq!(w.kinds().iter().filter(|k| *k == "hook_ignored").count(), 5);
}

/// An adopted pane's agent was started by someone else, without a token:
/// a hook naming its pane speaks for no one.
#[test]
fn an_adopted_panes_hooks_are_ignored() {
    let mut w = World::new();
    w.adopted("demo");
    w.event(
        None,
        ProjectEventKind::Attached {
            pane: crate::control::PaneId(1),
        },
    );
    let stop = HookKind::Stop {
        stop_hook_active: false,
        last_assistant_message: Some("invented".into()),
    };
    let mut forged = hook_event(&w, stop);
    forged.token = None;
    assert!(project_cmds(w.at(Duration::ZERO, Input::Hook(forged))).is_empty());
    assert!(
        w.kinds().contains(&"hook_ignored".to_string()),
        "{:?}",
        w.kinds()
    );
}

#[test]
fn a_dialog_the_hook_contradicts_is_logged_and_told_to_its_chat() {
    let mut w = World::new();
    let job = w.with_project();
    w.event(Some(&job), ProjectEventKind::Approval(approval()));
    let detail = "the agent asks to run `rm -rf /`, which the dialog on screen does not show";
    let kind = ProjectEventKind::DialogMismatch {
        approval_id: "ap1".parse().unwrap(),
        detail: detail.into(),
    };
    w.event(Some(&job), kind);
    assert!(w.kinds().contains(&"dialog_mismatch".to_string()));
    let texts = w.texts();
    assert!(
        texts.contains("Check this prompt") && texts.contains("rm -rf /"),
        "{texts}"
    );
}

#[test]
fn a_dialog_whose_body_was_drawn_late_updates_its_card() {
    let mut w = World::new();
    let job = w.with_project();
    let late = Approval {
        body: "Edit file\nnotes.txt\n…".into(),
        ..approval()
    };
    w.event(Some(&job), ProjectEventKind::Approval(late));
    let whole = Approval {
        body: "Edit file\nnotes.txt\n1 -hello\n1 +goodbye".into(),
        ..approval()
    };
    w.event(Some(&job), ProjectEventKind::Approval(whole));
    let saved = w
        .shared
        .read(|s| s.approvals.get("ap1").map(|a| a.body.clone()));
    assert_eq!(
        saved.as_deref(),
        Some("Edit file\nnotes.txt\n1 -hello\n1 +goodbye")
    );
    let patched = (w.outbox().into_iter())
        .any(|e| matches!(e.op, OutboxOp::Patch { .. }) && e.text().contains("1 +goodbye"));
    assert!(patched, "{}", w.texts());
    assert!(!w.kinds().contains(&"approval_found_again".to_string()));
}

/// The agent's "Did you mean" is a button on the refusal card; clicking it
/// runs the suggestion (with the refused command's arguments) in the
/// project, for a known sender only, and only a `/gsd` command.
#[test]
fn a_refusal_suggestion_is_a_button_that_runs_it() {
    let mut w = World::new();
    let _ = w.with_project();
    let job = submitted(&w.say("ou_alice", "/gsd:plan-phase 2")).remove(0);
    w.event(Some(&job), ProjectEventKind::Started);
    let refused = ProjectEventKind::Completed {
        screen: String::new(),
        output: String::new(),
        seconds: 1,
        errors: 0,
        ending: TurnEnding::Rejected(
            "● Unknown command: /gsd:plan-phase. Did you mean /gsd-plan-phase?".into(),
        ),
        usage: Default::default(),
        kept: None,
    };
    w.event(Some(&job), refused);
    let texts = w.texts();
    assert!(texts.contains("Run /gsd-plan-phase 2"), "{texts}");
    let value = |command: &str| json!({"action": "command", "project": "demo", "command": command});
    let ran = submitted(&w.click("ou_alice", value("/gsd-plan-phase 2")));
    assert_eq!(ran.len(), 1);
    assert_eq!(ran[0].text, "/gsd-plan-phase 2");
    assert_eq!(ran[0].project.as_str(), "demo");
    assert!(submitted(&w.click("ou_eve", value("/gsd-plan-phase 2"))).is_empty());
    assert!(submitted(&w.click("ou_alice", value("rm -rf /"))).is_empty());
    let gone = json!({"action": "command", "project": "nope", "command": "/gsd-ship"});
    assert!(submitted(&w.click("ou_alice", gone)).is_empty());

    // With arguments the reported row is the one after the refusal: the
    // suggestion is found in the turn's output.
    let job = submitted(&w.say("ou_alice", "/gsd:execute-phase 3")).remove(0);
    w.event(Some(&job), ProjectEventKind::Started);
    let refused = ProjectEventKind::Completed {
        screen: String::new(),
        output: "● Unknown command: /gsd:execute-phase. Did you mean /gsd-execute-phase?\n\
                 ● Args from unknown skill: 3"
            .into(),
        seconds: 1,
        errors: 0,
        ending: TurnEnding::Rejected("● Args from unknown skill: 3".into()),
        usage: Default::default(),
        kept: None,
    };
    w.event(Some(&job), refused);
    assert!(
        w.texts().contains("Run /gsd-execute-phase 3"),
        "{}",
        w.texts()
    );
}

/// `/gsd:new-project NAME ARGS` creates the project, then GSD's own
/// new-project runs in it with ARGS; without a name it is GSD's own.
#[test]
fn new_project_runs_gsds_new_project_with_its_arguments() {
    let mut w = World::new();
    let first = submitted(&w.say("ou_alice", "/gsd:new-project shop --auto @prd.md"));
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].project.as_str(), "shop");
    assert_eq!(first[0].text, "/gsd:new-project --auto @prd.md");
    let again = submitted(&w.say("ou_alice", "/gsd-new-project --auto"));
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].text, "/gsd-new-project --auto");
    let help = w.say("ou_alice", "/gsd:help");
    assert!(submitted(&help).is_empty());
    assert!(
        w.texts().contains("`/gsd:help gsd` shows GSD's own help"),
        "{}",
        w.texts()
    );
    let gsd_help = submitted(&w.say("ou_alice", "/gsd:help gsd"));
    assert_eq!(gsd_help[0].text, "/gsd:help");
}

/// Clicks are admitted like messages: someone the bot does not serve
/// cannot switch the chat's project from the projects menu.
#[test]
fn a_click_from_someone_not_allowed_changes_nothing() {
    let mut w = World::new();
    w.with_project();
    w.shared.update(|s| {
        s.projects.insert(
            crate::store::ids::project("other"),
            ProjectRecord::default(),
        )
    });
    let pick = |w: &mut World, who: &str| {
        w.next += 1;
        let c = CardClick {
            event_id: format!("click{}", w.next),
            operator: who.into(),
            value: CardAction::SelectProject.to_value(),
            option: Some("other".into()),
            message_id: "om_card".into(),
            target: chat(),
            respond: None,
        };
        w.at(Duration::ZERO, Input::Click(c))
    };
    let current = |w: &World| w.shared.read(|s| s.chats.get("oc_1").cloned());
    let refused = pick(&mut w, "ou_mallory");
    assert_eq!(current(&w).as_ref().map(ProjectName::as_str), Some("demo"));
    assert!(
        matches!(toast(&refused), Some((ToastLevel::Error, _))),
        "{refused:?}"
    );
    // Someone it serves may.
    pick(&mut w, "ou_bob");
    assert_eq!(current(&w).as_ref().map(ProjectName::as_str), Some("other"));
}

/// A pane adopted from a terminal is an approver's own: other allowed
/// senders cannot select it, see its screen, type into it, cancel in it,
/// nor list every host's panes.
#[test]
fn an_adopted_pane_is_for_approvers_only() {
    let mut w = World::new();
    w.adopted("mine");
    let denied = |effects: &[Effect]| {
        effects
            .iter()
            .any(|e| matches!(e, Effect::Project { .. } | Effect::ListSessions { .. }))
    };
    let current = |w: &World| w.shared.read(|s| s.chats.get("oc_1").cloned());
    assert!(!denied(&w.say("ou_bob", "/gsd:use mine")));
    assert_eq!(current(&w), None);
    assert!(!denied(&w.say("ou_bob", "/gsd:sessions")));
    // The approver selects it; then bob's text, screen and cancel are refused.
    w.say("ou_alice", "/gsd:use mine");
    assert_eq!(current(&w).as_ref().map(ProjectName::as_str), Some("mine"));
    for text in ["echo $SECRET", "/gsd:screen", "/gsd:cancel"] {
        let effects = w.say("ou_bob", text);
        assert!(!denied(&effects), "{text}: {effects:?}");
    }
    assert!(w.shared.read(|s| s.jobs.is_empty()));
    // The approver reaches it.
    assert!(denied(&w.say("ou_alice", "/gsd:screen")));
    assert!(denied(&w.say("ou_alice", "/gsd:sessions")));
    assert!(denied(&w.say("ou_alice", "ls")));
}

/// The core reads no file: `/gsd:file` in a project on this machine is a
/// fetch for the shell (no host), and what comes back is queued as sent.
#[test]
fn a_local_file_is_fetched_by_the_shell_and_queued_when_it_comes() {
    use crate::bridge::panes::workspace_file::FetchedFile;
    let mut w = World::new();
    w.with_project();
    let effects = w.say("ou_alice", "/gsd:file notes.md");
    let fetch = effects.into_iter().find_map(|e| match e {
        Effect::FetchFile {
            project,
            host: None,
            asked,
            sender,
            reply,
            ..
        } => Some((project, asked, sender, reply)),
        _ => None,
    });
    let Some((project, asked, sender, reply)) = fetch else {
        panic!("no fetch on this machine: {}", w.texts());
    };
    assert_eq!((project.as_str(), asked.as_str()), ("demo", "notes.md"));
    let files = |w: &World| {
        (w.outbox().into_iter())
            .filter_map(|e| match e.op {
                OutboxOp::File {
                    file_name, path, ..
                } => Some((e.uuid, file_name, path)),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    assert!(files(&w).is_empty(), "queued before it was read");
    let file = FetchedFile {
        uuid: "u-file".into(),
        name: "notes.md".into(),
        copy: "/state/outbox-files/u-file.file".into(),
        size: 5,
    };
    w.core.file_fetched(&project, &sender, &reply, Ok(file));
    assert_eq!(
        files(&w),
        [(
            "u-file".to_string(),
            "notes.md".to_string(),
            "/state/outbox-files/u-file.file".to_string()
        )]
    );
}

/// An adopted pane's record has no workspace: `/gsd:file` there read the
/// ssh login's home (or the daemon's directory). Never served, whoever
/// asks, on this machine or a host.
#[test]
fn no_file_is_served_from_an_adopted_pane() {
    let mut w = World::new();
    w.adopted("mine");
    w.shared.update(|s| {
        if let Some(p) = s.projects.get_mut("mine") {
            p.host = Some("box".into());
        }
    });
    w.adopted("here");
    for project in ["mine", "here"] {
        w.say("ou_alice", &format!("/gsd:use {project}"));
        for who in ["ou_bob", "ou_alice"] {
            let effects = w.say(who, "/gsd:file .ssh/id_ed25519");
            assert!(
                !effects
                    .iter()
                    .any(|e| matches!(e, Effect::FetchFile { .. })),
                "{project} {who}: {effects:?}"
            );
        }
    }
    let refusals = w
        .texts()
        .matches("adopted from a terminal, with no workspace")
        .count();
    assert_eq!(refusals, 4, "{}", w.texts());
    assert!(
        !w.outbox()
            .iter()
            .any(|e| matches!(e.op, OutboxOp::File { .. })),
        "nothing sent"
    );
}

/// `/gsd:new-project web@desk` when `web` runs elsewhere is refused with
/// where it runs, not quietly sent to the existing one.
#[test]
fn a_new_project_on_another_host_than_its_namesake_is_refused() {
    let mut w =
        World::with_config("[hosts.desk]\ncommand = [\"tmux\"]\nworkspace_root = \"/tmp\"\n");
    w.with_project();
    let effects = w.say("ou_alice", "/gsd:new-project demo@desk");
    assert!(submitted(&effects).is_empty(), "{effects:?}");
    let said: Vec<String> = w.outbox().iter().map(|e| e.text().clone()).collect();
    let said = said.join("\n");
    assert!(
        said.contains("Project exists elsewhere") && said.contains("**local**"),
        "{said}"
    );
    assert_eq!(w.shared.read(|s| s.projects["demo"].host.clone()), None);
}

/// A question with a text field, its card delivered as chat message `om_q`.
fn question_shown(w: &mut World) -> Job {
    let job = w.with_project();
    let mut question = Approval {
        id: "ap_q".parse().unwrap(),
        kind: ApprovalKind::Question,
        question: "Which database should we use?".into(),
        body: String::new(),
        options: ApprovalOption::numbered(&["Postgres", "SQLite", "Type something."]),
        ..approval()
    };
    // The detector marks Claude Code's text field (its profile's `own_words`).
    question.options[2].own_words = true;
    w.event(Some(&job), ProjectEventKind::Approval(question));
    w.shared.update(|s| {
        let card = s.approvals.get("ap_q").map(|a| a.card.clone());
        if let Some(card) = card {
            s.cards.insert(card.to_string(), "om_q".into());
        }
    });
    job
}

fn typed(effects: &[Effect]) -> Vec<String> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Project {
                cmd: ProjectCmd::Type { text, .. } | ProjectCmd::Submit(Job { text, .. }),
                ..
            } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_second_reply_to_a_question_is_refused_while_and_after_it_is_answered() {
    let mut w = World::new();
    question_shown(&mut w);
    let first = w.reply("ou_alice", "redis", "om_q");
    assert_eq!(typed(&first), ["redis"]);
    // While the first is being typed: nothing more goes in.
    let second = w.reply("ou_alice", "and also redis", "om_q");
    assert!(typed(&second).is_empty(), "{second:?}");
    assert!(
        w.texts().contains("being answered already"),
        "{}",
        w.texts()
    );
    let replied = ProjectEventKind::Replied {
        approval_id: "ap_q".parse().unwrap(),
        by: "ou_alice".into(),
        text: "redis".into(),
        reply: Reply {
            target: chat(),
            reply_to: None,
        },
        result: Ok(()),
    };
    w.event(None, replied);
    // Once answered: a late reply is refused, not typed as a new prompt.
    let late = w.reply("ou_alice", "3", "om_q");
    assert!(typed(&late).is_empty(), "{late:?}");
    assert!(
        w.texts().contains("answered or closed already"),
        "{}",
        w.texts()
    );
    // A reply to any other card is a message to the agent, as before.
    let other = w.reply("ou_alice", "and also redis", "om_result");
    assert_eq!(typed(&other), ["and also redis"]);
}

/// The [`Effect::Adopt`]s among `effects`.
fn adopts(effects: &[Effect]) -> Vec<(AdoptTarget, ProjectName, String, Reply)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Adopt {
                target,
                name,
                by,
                reply,
            } => Some((target.clone(), name.clone(), by.clone(), reply.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn one_name_is_taken_by_one_adopt_while_its_pane_is_looked_for() {
    let mut w = World::new();
    let first = adopts(&w.say("ou_alice", "/gsd:adopt work:1.0 as api"));
    assert_eq!(first.len(), 1);
    // While the first adopt's pane is looked for, the name is taken.
    assert!(adopts(&w.say("ou_alice", "/gsd:adopt play:0.0 as api")).is_empty());
    assert!(
        w.texts().contains("being adopted as **api**"),
        "{}",
        w.texts()
    );
    let made = w.say("ou_alice", "/gsd:new-project api");
    assert!(
        made.iter().all(|e| !matches!(e, Effect::Project { .. })),
        "{made:?}"
    );
    let (target, name, by, reply) = first.into_iter().next().unwrap();
    let location = PaneLocation {
        session: crate::store::ids::session("work"),
        window: "@1".parse().unwrap(),
        pane: "%4".parse().unwrap(),
        width: 80,
        height: 24,
        identity: PaneIdentity {
            server_pid: 41,
            session_id: "$2".parse().unwrap(),
            window_id: "@1".parse().unwrap(),
            pane_pid: 99,
        },
    };
    let expected = location.adopted();
    assert!(
        w.core
            .adopt_located(&target, &name, &by, &reply, Ok(location))
    );
    let record = w
        .shared
        .read(|s| s.projects.get("api").and_then(|p| p.adopted.clone()));
    assert_eq!(record, Some(expected));
}

#[test]
fn approval_pictures_are_asked_for_only_when_configured() {
    for (toml, asked) in [("", false), ("[screen]\napproval_picture = true\n", true)] {
        let mut w = World::with_config(toml);
        let job = w.with_project();
        let effects = w.event(Some(&job), ProjectEventKind::Approval(approval()));
        let screens = project_cmds(effects)
            .into_iter()
            .filter(|c| matches!(c, ProjectCmd::Screen { reply } if reply.target == chat()))
            .count();
        assert_eq!(screens, usize::from(asked), "{toml:?}");
    }
}

#[test]
fn a_screen_for_a_chat_is_a_picture_card_unless_turned_off() {
    let grid = {
        let mut p = vt100::Parser::new(
            std::num::NonZeroU16::new(3).unwrap(),
            std::num::NonZeroU16::new(20).unwrap(),
            0,
        );
        p.process(b"$ ls");
        crate::render::Grid::from_screen(p.screen())
    };
    for (toml, pictured) in [("", true), ("[screen]\npicture = false\n", false)] {
        let mut w = World::with_config(toml);
        w.with_project();
        let before = w.outbox().len();
        let screen = ProjectEventKind::Screen {
            reply: Reply {
                target: chat(),
                reply_to: Some("om_9".into()),
            },
            screen: Ok("$ ls".into()),
            grid: Some(grid.clone()),
        };
        for effect in w.event(None, screen) {
            if let Effect::DrawScreen(picture) = effect {
                // The shell's part, inline outside a runtime.
                picture.queue(w._dir.path().to_path_buf());
            }
        }
        let entry = w.outbox().pop().unwrap();
        assert_eq!(w.outbox().len(), before + 1);
        let image = match &entry.op {
            OutboxOp::Send { image, .. } => image.clone(),
            op => panic!("{op:?}"),
        };
        assert_eq!(image.is_some(), pictured, "{toml:?}");
        let first = entry.message.as_ref().and_then(|m| m.blocks.first());
        let picture = matches!(first, Some(crate::message::Block::Picture { .. }));
        assert_eq!(picture, pictured, "{:?}", entry.message);
        // The screen's text is on the card either way (under a picture,
        // in a closed panel).
        let card = entry.card().to_string();
        assert!(card.contains("$ ls"), "{card}");
    }
}

/// A result's footer has the figures its turn carried (read by the
/// project's actor from the transcript its Stop hook named), and none
/// when the turn carried none.
#[test]
fn a_results_footer_has_its_turns_figures_and_none_are_made_up() {
    let mut w = World::new();
    let job = w.with_project();
    w.event(Some(&job), ProjectEventKind::Started);
    let done = |secs, tokens: Option<u64>| ProjectEventKind::Completed {
        screen: String::new(),
        output: "● done".into(),
        seconds: secs,
        errors: 0,
        ending: TurnEnding::Finished,
        usage: crate::hooks::usage::TurnUsage {
            tokens,
            context_tokens: tokens,
        },
        kept: None,
    };
    w.event(Some(&job), done(2, Some(1105)));
    let texts = w.texts();
    assert!(
        texts.contains("⏱ 2 s · 1,105 tokens · context 1,105 tokens"),
        "{texts}"
    );
    // The next command has no figures: its footer is the duration alone.
    let next = submitted(&w.say("ou_alice", "again")).remove(0);
    w.event(Some(&next), ProjectEventKind::Started);
    w.event(Some(&next), done(3, None));
    let last = w
        .outbox()
        .into_iter()
        .rev()
        .find(|e| e.text().contains("⏱ 3 s"))
        .unwrap();
    assert!(!last.text().contains("tokens"), "{}", last.text());
}

#[test]
fn notification_hooks_put_a_waiting_project_in_the_inbox_until_it_moves_on() {
    let mut w = World::new();
    let job = w.with_project();
    w.event(
        None,
        ProjectEventKind::Attached {
            pane: crate::control::PaneId(1),
        },
    );
    let note = |w: &World, kind: &str, message: &str| {
        hook(
            w,
            HookKind::Notification {
                notification_type: Some(kind.into()),
                message: message.into(),
            },
        )
    };
    let inbox = |w: &mut World| {
        w.say("ou_alice", "/gsd:inbox");
        w.outbox().pop().unwrap().text()
    };
    assert!(inbox(&mut w).contains("Nothing waits"));
    // Claude Code's own idle notification (as recorded from the real agent).
    w.at(
        Duration::ZERO,
        note(&w, "idle_prompt", "Claude is waiting for your input"),
    );
    let text = inbox(&mut w);
    assert!(text.contains("Inbox: 1 waiting"), "{text}");
    assert!(text.contains("1. demo** · waiting for input"), "{text}");
    assert!(text.contains("Claude is waiting for your input"), "{text}");
    // A command typed: it waits no more.
    w.event(Some(&job), ProjectEventKind::Started);
    assert!(inbox(&mut w).contains("Nothing waits"));
    // A dialog notified, whose card the screen reading made: listed once,
    // as the prompt with its buttons.
    w.at(
        Duration::ZERO,
        note(&w, "permission_prompt", "Claude needs your permission"),
    );
    assert!(inbox(&mut w).contains("waiting for permission"));
    w.event(Some(&job), ProjectEventKind::Approval(approval()));
    let text = inbox(&mut w);
    assert!(text.contains("Inbox: 1 waiting"), "{text}");
    assert!(!text.contains("waiting for permission"), "{text}");
    // Another kind of notification is not a wait.
    w.at(Duration::ZERO, note(&w, "auth_success", "Signed in"));
    assert!(!inbox(&mut w).contains("Signed in"));
}

/// `/gsd:inbox` across projects, hosts and chats: oldest first, each
/// where it waits; an approver sees every chat's, others their chat's.
#[test]
fn the_inbox_lists_every_chats_prompts_oldest_first_for_approvers_only() {
    let mut w = World::new();
    let other = ChatTarget::Chat {
        id: crate::store::ids::chat("oc_2"),
    };
    let waiting = [
        ("ap_demo", "demo", chat(), 3_000, "Run the demo?"),
        ("ap_api", "api", other.clone(), 1_000, "Deploy the api?"),
        ("ap_blog", "blog", other, 2_000, "Publish the blog?"),
    ];
    w.shared.update(|s| {
        let desk = ProjectRecord {
            host: Some("desk".into()),
            ..ProjectRecord::default()
        };
        s.projects.insert(crate::store::ids::project("api"), desk);
        for (id, project, target, created_ms, question) in waiting {
            let approval = Approval {
                id: id.parse().unwrap(),
                question: question.into(),
                ..approval()
            };
            let pending = PendingApproval {
                approval,
                project: crate::store::ids::project(project),
                target,
                card: format!("card_{id}").parse().unwrap(),
                created_ms,
                shown: true,
                stage: Default::default(),
            };
            s.approvals.insert(id.parse().unwrap(), pending);
        }
    });
    let inbox = |w: &mut World, sender: &str| {
        w.say(sender, "/gsd:inbox");
        w.outbox().pop().unwrap().text()
    };
    let all = inbox(&mut w, "ou_alice");
    assert!(all.contains("Inbox: 3 waiting"), "{all}");
    let at = |q: &str| all.find(q).unwrap_or_else(|| panic!("no {q} in {all}"));
    assert!(at("1. api@desk**") < at("Deploy the api?"), "{all}");
    assert!(at("Deploy the api?") < at("2. blog**"), "{all}");
    assert!(at("Publish the blog?") < at("3. demo**"), "{all}");
    assert!(at("3. demo**") < at("Run the demo?"), "{all}");
    assert!(
        all.contains("**1. api@desk** · permission · waiting "),
        "{all}"
    );
    // Each item's own words are in Chinese too (the question is the agent's).
    let card = w.outbox().pop().unwrap().message.unwrap();
    let zh = card.to_text_in(crate::i18n::Lang::Zh);
    assert!(zh.contains("**1. api@desk** · 权限 · 已等待 "), "{zh}");
    assert!(zh.contains("Deploy the api?"), "{zh}");
    // Bob is no approver: only what waits in this chat.
    let own = inbox(&mut w, "ou_bob");
    assert!(own.contains("Inbox: 1 waiting"), "{own}");
    assert!(own.contains("Run the demo?"), "{own}");
    assert!(!own.contains("Deploy") && !own.contains("blog"), "{own}");
}

/// An error's detail reaches a Chinese reader in Chinese: the core words
/// it through the presenter, not the error's (English) `Display`.
#[test]
fn an_errors_detail_is_worded_in_both_languages() {
    use crate::i18n::Lang;
    let mut w = World::new();
    w.with_project();
    let reply = Reply {
        target: chat(),
        reply_to: None,
    };
    w.event(
        None,
        ProjectEventKind::ModeSet {
            by: "ou_alice".into(),
            reply,
            result: Err(ProjectError::NotIdle),
        },
    );
    w.say("ou_alice", "/gsd:use Web");
    let zh: Vec<String> = (w.outbox().iter())
        .filter_map(|e| e.message.clone())
        .map(|c| c.to_text_in(Lang::Zh))
        .collect();
    let zh = zh.join("\n----\n");
    assert!(zh.contains("== 无法切换模式 =="), "{zh}");
    assert!(zh.contains("智能体正忙或正在提问"), "{zh}");
    assert!(zh.contains("项目名 `Web` 必须以小写字母或数字开头"), "{zh}");
    // English readers read what the error's Display says.
    let en = w.texts();
    assert!(en.contains(&ProjectError::NotIdle.to_string()), "{en}");
}

/// Every card the core sends in the usual scenarios (a project made, a
/// command's progress, an approval, its answer, a result with its footer,
/// the status table, the mode, the inbox, refusals and errors) has all of
/// clawmux's own words in Chinese too: a text without `i18n_content` is
/// only the agent's words, names and code.
#[test]
fn every_card_of_the_usual_scenarios_reads_in_chinese() {
    use crate::agents::claude::PermissionMode;
    use crate::bridge::present::english_check::english_only;
    let mut w = World::new();
    let job = w.with_project();
    let reply = Reply {
        target: chat(),
        reply_to: None,
    };
    w.event(Some(&job), ProjectEventKind::Started);
    let progress = ProjectEventKind::Progress {
        summary: "Reading files".into(),
        percent: Some(40),
        tail: "● Reading src/main.rs".into(),
    };
    w.at(
        Duration::from_secs(5),
        Input::Project(ProjectEvent {
            project: crate::store::ids::project("demo"),
            job: Some(job.clone()),
            kind: progress,
        }),
    );
    w.event(Some(&job), ProjectEventKind::Approval(approval()));
    w.say("ou_alice", "/gsd:inbox");
    let status = ProjectStatus {
        attached: true,
        busy: true,
        running: Some("/gsd:new-project".into()),
        awaiting_approval: Some("ap1".into()),
        mode: Some(PermissionMode::Auto),
        queued: 1,
        ..Default::default()
    };
    w.event(None, ProjectEventKind::Status(status));
    w.say("ou_alice", "/gsd:status");
    w.say("ou_alice", "/gsd:mode");
    w.event(
        None,
        ProjectEventKind::ModeSet {
            by: "ou_alice".into(),
            reply: reply.clone(),
            result: Err(ProjectError::NotIdle),
        },
    );
    w.event(
        None,
        ProjectEventKind::ModeSet {
            by: "ou_alice".into(),
            reply: reply.clone(),
            result: Ok(PermissionMode::Manual),
        },
    );
    w.event(
        None,
        ProjectEventKind::Cancelled {
            by: "ou_alice".into(),
            keys: "Esc".into(),
            reply: reply.clone(),
            result: Err(ProjectError::Pane(PaneError::Tmux(TmuxError::Command {
                command: "send-keys".into(),
                message: "can't find pane: %9".into(),
            }))),
        },
    );
    let value = json!({"action": "approval", "approval_id": "ap1", "project": "demo", "session": "cm-demo", "option": "1"});
    w.click("ou_alice", value);
    w.event(
        None,
        ProjectEventKind::Answered {
            approval_id: "ap1".parse().unwrap(),
            by: "ou_alice".into(),
            label: "Yes".into(),
            reply: reply.clone(),
            result: Ok(()),
        },
    );
    w.event(
        Some(&job),
        ProjectEventKind::Error {
            line: "API Error: 529".into(),
            context: "● API Error: 529 overloaded".into(),
        },
    );
    w.say("ou_alice", "/gsd:use Web");
    w.say("ou_alice", "/gsd:new-project web@nowhere");
    w.say("ou_alice", "/gsd:Status");
    w.say("ou_alice", "/gsd:use");
    let done = ProjectEventKind::Completed {
        screen: String::new(),
        output: "● Project initialised".into(),
        seconds: 75,
        errors: 0,
        ending: TurnEnding::Finished,
        usage: Default::default(),
        kept: None,
    };
    w.event(Some(&job), done);
    let job = submitted(&w.say("ou_alice", "run the tests")).remove(0);
    w.core.undeliverable(
        &crate::store::ids::project("demo"),
        ProjectCmd::Submit(job),
        &ProjectError::Overloaded,
    );
    let literal = [
        "Do you want to proceed?",
        "Bash command",
        "rm -rf build",
        "Remove the build output",
        "can't find pane: %9",
        "Reading files",
        "Reading src/main.rs",
        "run the tests",
        "demo",
        "Yes",
        "No",
        // Names: GSD, the agent's permission modes, a config table.
        "GSD",
        "**auto**",
        "**manual**",
        "| auto |",
        "[hosts]",
        "ou&#95;alice",
        "API Error: 529",
        "Claude Code",
        "API",
        "tmux",
    ];
    let entries = w.outbox();
    assert!(entries.len() > 12, "{}", w.texts());
    let english: Vec<String> = (entries.iter())
        .flat_map(|e| english_only(&e.card(), &literal))
        .collect();
    assert!(english.is_empty(), "English only: {english:#?}");
    // Times are a clock reading (`at 14:12:41`), never an RFC 3339 stamp.
    let texts = w.texts();
    let stamp = |b: &[u8]| {
        b.len() == 11
            && b[..4].iter().all(u8::is_ascii_digit)
            && b[4] == b'-'
            && b[7] == b'-'
            && b[10] == b'T'
    };
    assert!(!texts.as_bytes().windows(11).any(stamp), "{texts}");
    let chose = texts
        .lines()
        .find(|l| l.contains("chose **Yes** at "))
        .unwrap();
    let at = chose.rsplit("at ").next().unwrap();
    assert!(at.len() == 8 && at.as_bytes()[2] == b':', "{chose}");
}

/// Where each outbox entry sent since `before` goes.
fn sent_to(w: &World, before: usize) -> Vec<ChatTarget> {
    (w.outbox().into_iter().skip(before))
        .filter_map(|e| match e.op {
            OutboxOp::Send { target, .. } => Some(target),
            _ => None,
        })
        .collect()
}

/// A project's news nobody asked for (a prompt drawn for a command typed
/// at the desk) still reaches the chat that made it after that chat
/// switched to another project.
#[test]
fn a_projects_unasked_news_reaches_its_chat_after_the_chat_switched() {
    let mut w = World::new();
    w.with_project();
    w.say("ou_alice", "/gsd:new-project other");
    assert_eq!(
        w.shared.read(|s| s.chats.get("oc_1").cloned()),
        Some(crate::store::ids::project("other"))
    );
    let before = w.outbox().len();
    w.event(None, ProjectEventKind::Approval(approval()));
    assert_eq!(sent_to(&w, before), vec![chat()], "{}", w.texts());
    let pending = w
        .shared
        .read(|s| s.approvals.values().cloned().collect::<Vec<_>>());
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].target, chat());
}

/// A prompt in a project no chat ever used (made by `clawmux run`) is
/// never dropped: each approver is told in their own chat, and
/// `/gsd:inbox` lists it.
#[test]
fn a_prompt_no_chat_is_there_for_tells_the_approvers_and_waits_in_the_inbox() {
    let mut w = World::new();
    w.shared.update(|s| {
        s.projects
            .insert(crate::store::ids::project("demo"), ProjectRecord::default());
    });
    let before = w.outbox().len();
    w.event(None, ProjectEventKind::Approval(approval()));
    let alice = ChatTarget::User {
        id: "ou_alice".parse().unwrap(),
    };
    let targets = sent_to(&w, before);
    assert!(targets.contains(&alice), "{targets:?}");
    let told = w
        .outbox()
        .into_iter()
        .skip(before)
        .map(|e| e.text())
        .collect::<Vec<_>>();
    assert!(
        told.iter()
            .any(|t| t.contains("demo asks") && t.contains("Do you want to proceed?")),
        "{told:?}"
    );
    let before = w.outbox().len();
    w.say("ou_alice", "/gsd:inbox");
    let inbox = w
        .outbox()
        .into_iter()
        .skip(before)
        .map(|e| e.text())
        .collect::<String>();
    assert!(
        inbox.contains("rm -rf build") || inbox.contains("Do you want to proceed?"),
        "{inbox}"
    );
    assert!(inbox.contains("demo"), "{inbox}");
}

/// A chat is remembered by the projects it used, the latest first and
/// at most a bound of them.
#[test]
fn a_project_remembers_the_chats_that_used_it_up_to_a_bound() {
    use crate::store::state::MAX_PROJECT_CHATS;
    let mut record = ProjectRecord::default();
    for n in 0..MAX_PROJECT_CHATS + 3 {
        record.used_in(&crate::store::ids::chat(&format!("oc_{n}")));
    }
    record.used_in(&crate::store::ids::chat("oc_5"));
    record.used_in(&ChatId::console());
    assert_eq!(record.chats.len(), MAX_PROJECT_CHATS);
    assert_eq!(record.chats[0].as_str(), "oc_5");
    assert_eq!(
        record.chats[1].as_str(),
        format!("oc_{}", MAX_PROJECT_CHATS + 2)
    );
    assert_eq!(
        record.chats.iter().filter(|c| c.as_str() == "oc_5").count(),
        1
    );
}

/// `clawmux run` as the core takes it.
mod runs {
    use super::*;
    use crate::bridge::runs::{Look, Request, RunRequest, RunStart};
    use crate::store::state::ApprovalId;

    fn run(id: &str, project: &str, request: Request) -> Input {
        Input::Run(RunRequest {
            id: RunId::parse(id).unwrap(),
            project: crate::store::ids::project(project),
            request,
            agent: Some("sim".into()),
            create: true,
        })
    }

    fn answer(key: &str, prompt: Option<&ApprovalId>) -> Request {
        Request::Answer {
            key: key.into(),
            prompt: prompt.cloned(),
        }
    }

    fn typed(effects: &[Effect]) -> bool {
        (effects.iter()).any(|e| {
            matches!(
                e,
                Effect::Project {
                    cmd: ProjectCmd::Answer { .. },
                    ..
                }
            )
        })
    }

    fn refused(effects: &[Effect]) -> String {
        match started(effects) {
            RunStart::Refused(why) => why,
            other => panic!("taken: {other:?}"),
        }
    }

    /// A run stops at `make test`; someone answers that at the desk, and
    /// the agent asks about `make deploy-production`, which no card shows
    /// (the first run is over). The skill's answer names the prompt it
    /// was shown: the deploy is not approved, it is shown instead, and
    /// only an answer naming it (or given once it was shown) types.
    #[test]
    fn a_runs_answer_is_bound_to_the_prompt_it_was_shown() {
        let mut w = World::new();
        let message = Request::Message("/gsd:execute-phase 2".into());
        let job = submitted(&w.at(Duration::ZERO, run("r1", "demo", message))).remove(0);
        let test = Approval {
            id: "ap_test".parse().unwrap(),
            body: "Bash command\n  make test".into(),
            ..approval()
        };
        w.event(Some(&job), ProjectEventKind::Approval(test.clone()));
        // The first run's outcome showed it.
        w.at(Duration::ZERO, Input::PromptShown(test.id.clone()));
        let answered = ProjectEventKind::Answered {
            approval_id: test.id.clone(),
            by: "ou_alice".into(),
            label: "Yes".into(),
            reply: Reply {
                target: ChatTarget::Console,
                reply_to: None,
            },
            result: Ok(()),
        };
        w.event(Some(&job), answered);
        let deploy = Approval {
            id: "ap_deploy".parse().unwrap(),
            body: "Bash command\n  make deploy-production".into(),
            ..approval()
        };
        w.event(Some(&job), ProjectEventKind::Approval(deploy.clone()));
        assert!(w.shared.read(|s| s.approvals.contains_key(&deploy.id)));

        let effects = w.at(
            Duration::ZERO,
            run("r2", "demo", answer("1", Some(&test.id))),
        );
        let why = refused(&effects);
        assert!(!typed(&effects), "{effects:?}");
        assert!(why.contains("prompt ap_test is no longer waiting"), "{why}");
        assert!(why.contains("make deploy-production"), "{why}");
        assert!(why.contains("--prompt ap_deploy --answer 1|2"), "{why}");

        // Named, it is answered; by its label too, as `/press No` would.
        let effects = w.at(
            Duration::ZERO,
            run("r3", "demo", answer("no", Some(&deploy.id))),
        );
        assert!(
            effects.iter().any(|e| matches!(
                e,
                Effect::Project { cmd: ProjectCmd::Answer { key, .. }, .. } if key == "2"
            )),
            "{effects:?}"
        );
    }

    /// A misspelt project is not made (one more billed agent): only the
    /// first project of all, or one asked for with `--new`.
    #[test]
    fn a_run_makes_a_project_only_with_new_or_as_the_first() {
        let mut w = World::new();
        let ask = |id: &str, project: &str, create: bool| {
            Input::Run(RunRequest {
                id: RunId::parse(id).unwrap(),
                project: crate::store::ids::project(project),
                request: Request::Message("/gsd:progress".into()),
                agent: None,
                create,
            })
        };
        let effects = w.at(Duration::ZERO, ask("r1", "shop", false));
        assert!(
            matches!(started(&effects), RunStart::Job { .. }),
            "the first project"
        );
        let effects = w.at(Duration::ZERO, ask("r2", "shpo", false));
        let why = refused(&effects);
        assert!(why.contains("no project shpo; did you mean shop?"), "{why}");
        assert!(why.contains("`--new` makes it"), "{why}");
        assert!(submitted(&effects).is_empty());
        assert!(w.shared.read(|s| !s.projects.contains_key("shpo")));
        let effects = w.at(Duration::ZERO, ask("r3", "blog", false));
        let why = refused(&effects);
        assert!(!why.contains("did you mean"), "nothing near: {why}");
        let effects = w.at(Duration::ZERO, ask("r4", "shpo", true));
        assert!(matches!(started(&effects), RunStart::Job { .. }));
        assert!(w.shared.read(|s| s.projects.contains_key("shpo")));
    }

    /// With no prompt named, only one somebody saw is answered: a prompt
    /// of a run whose caller is gone was seen by no one.
    #[test]
    fn a_runs_answer_naming_no_prompt_answers_only_a_prompt_someone_saw() {
        let mut w = World::new();
        let message = Request::Message("go".into());
        let job = submitted(&w.at(Duration::ZERO, run("r1", "demo", message))).remove(0);
        w.event(Some(&job), ProjectEventKind::Approval(approval()));
        assert!(!w.shared.read(|s| s.approvals.values().any(|a| a.shown)));

        let effects = w.at(Duration::ZERO, run("r2", "demo", answer("1", None)));
        let why = refused(&effects);
        assert!(!typed(&effects), "{effects:?}");
        assert!(why.contains("nobody has been shown the prompt"), "{why}");
        assert!(why.contains("rm -rf build"), "{why}");
        assert!(w.kinds().contains(&"denied".to_string()));

        // The refusal showed it: the same answer now types.
        let effects = w.at(Duration::ZERO, run("r3", "demo", answer("1", None)));
        assert!(typed(&effects), "{effects:?}");
    }

    /// A run's outcome that showed a prompt makes it seen, and the state
    /// keeps that (a run with no `serve` shows it, the next answers it).
    #[test]
    fn a_prompt_a_run_showed_is_saved_as_seen() {
        let mut w = World::new();
        let message = Request::Message("go".into());
        let job = submitted(&w.at(Duration::ZERO, run("r1", "demo", message))).remove(0);
        w.event(Some(&job), ProjectEventKind::Approval(approval()));
        w.at(Duration::ZERO, Input::PromptShown(approval().id));
        assert!(w.shared.read(|s| s.approvals.values().all(|a| a.shown)));
        let effects = w.at(Duration::ZERO, run("r2", "demo", answer("1", None)));
        assert!(typed(&effects), "{effects:?}");
    }

    fn started(effects: &[Effect]) -> RunStart {
        (effects.iter())
            .find_map(|e| match e {
                Effect::Run { start, .. } => Some(start.clone()),
                _ => None,
            })
            .expect("the run was taken")
    }

    fn target(id: &str) -> ChatTarget {
        ChatTarget::Run {
            id: RunId::parse(id).unwrap(),
        }
    }

    /// A run's command is a chat's: its project recorded (with the run's
    /// agent) and its prompt pending for `serve`'s chats, yet no card of
    /// its is ever queued: the run reads its outcome from the events.
    #[test]
    fn a_runs_command_is_a_chats_with_no_card_queued() {
        let mut w = World::new();
        let message = Request::Message("/gsd:plan-phase 2".into());
        let effects = w.at(Duration::ZERO, run("r1", "demo", message));
        let job = submitted(&effects).remove(0);
        assert_eq!(job.target, target("r1"));
        let expected = RunStart::Job {
            job: job.id.clone(),
            answering: None,
        };
        assert_eq!(started(&effects), expected);
        let record = w.shared.read(|s| s.projects.get("demo").cloned()).unwrap();
        assert_eq!(record.agent.as_deref(), Some("sim"));
        assert!(w.shared.read(|s| s.chats.is_empty()), "a run is no chat");

        w.event(Some(&job), ProjectEventKind::Started);
        let progress = ProjectEventKind::Progress {
            summary: "2/3".into(),
            percent: None,
            tail: String::new(),
        };
        w.event(Some(&job), progress);
        w.at(Duration::from_secs(2), Input::Tick);
        w.event(Some(&job), ProjectEventKind::Approval(approval()));
        let pending = w
            .shared
            .read(|s| s.approvals.values().cloned().collect::<Vec<_>>());
        assert_eq!(pending.len(), 1);
        assert_eq!(pending[0].target, target("r1"));
        assert!(w.outbox().is_empty(), "{}", w.texts());

        // A second run answers it, naming it as the first run's outcome
        // did, and follows the command on.
        let effects = w.at(
            Duration::ZERO,
            run("r2", "demo", answer("1", Some(&pending[0].id))),
        );
        let expected = RunStart::Job {
            job: job.id.clone(),
            answering: Some(pending[0].id.clone()),
        };
        assert_eq!(started(&effects), expected);
        assert!(effects.iter().any(|e| matches!(
            e,
            Effect::Project { cmd: ProjectCmd::Answer { key, by, .. }, .. }
                if key == "1" && by == "run"
        )));
        let now = w
            .shared
            .read(|s| s.jobs.iter().find(|j| j.id == job.id).cloned());
        assert_eq!(now.map(|j| j.target), Some(target("r2")));
        let done = ProjectEventKind::Completed {
            screen: String::new(),
            output: "● Created 2 plans".into(),
            seconds: 2,
            errors: 0,
            ending: TurnEnding::Finished,
            usage: Default::default(),
            kept: None,
        };
        w.event(Some(&job), done);
        assert!(w.shared.read(|s| s.jobs.is_empty()), "the command is over");
        assert!(w.outbox().is_empty(), "{}", w.texts());
        assert!(w.kinds().contains(&"command".to_string()));
    }

    /// Bad input is refused with why, and nothing is done.
    #[test]
    fn an_answer_with_nothing_waiting_or_a_key_not_offered_is_refused() {
        let mut w = World::new();
        let effects = w.at(Duration::ZERO, run("r1", "demo", answer("1", None)));
        let RunStart::Refused(why) = started(&effects) else {
            panic!("{effects:?}")
        };
        assert!(why.contains("no approval is waiting"), "{why}");

        let message = Request::Message("go".into());
        let job = submitted(&w.at(Duration::ZERO, run("r2", "demo", message))).remove(0);
        w.event(Some(&job), ProjectEventKind::Approval(approval()));
        let effects = w.at(
            Duration::ZERO,
            run("r3", "demo", answer("7", Some(&"ap1".parse().unwrap()))),
        );
        let RunStart::Refused(why) = started(&effects) else {
            panic!("{effects:?}")
        };
        assert!(
            why.contains("`7` is not one of the options (1, 2)"),
            "{why}"
        );
        assert!(!effects.iter().any(|e| matches!(e, Effect::Project { .. })));
    }

    /// `/gsd:status`, `/gsd:screen` and `/gsd:cancel` are looks: asked of
    /// the project for the run, typed into nothing, and no project made.
    #[test]
    fn a_look_asks_the_project_and_makes_none() {
        let mut w = World::new();
        for (text, look) in [
            ("/gsd:status", Look::Status),
            ("/gsd:screen", Look::Screen),
            ("/gsd:cancel", Look::Cancel),
        ] {
            let effects = w.at(
                Duration::ZERO,
                run("r1", "demo", Request::Message(text.into())),
            );
            let expected = RunStart::Look {
                look,
                waiting: None,
                busy: None,
            };
            assert_eq!(started(&effects), expected);
            let asked = effects.iter().any(|e| match e {
                Effect::Project {
                    cmd: ProjectCmd::Screen { reply } | ProjectCmd::Cancel { reply, .. },
                    ..
                } => reply.target == target("r1"),
                _ => false,
            });
            assert!(asked, "{text}: {effects:?}");
            assert!(submitted(&effects).is_empty(), "{text}");
        }
        assert!(
            w.shared
                .read(|s| s.projects.is_empty() && s.jobs.is_empty())
        );
    }
}
