//! Domain values in the chat's words, in both languages: why something
//! was refused ([`ChatWords`], one impl per error type reaching the chat),
//! what a permission mode lets reach the chat ([`mode_reach`]), a
//! project's state and GSD planning line in the status table ([`state`],
//! [`planning`]), durations ([`duration`]).
//!
//! The error types keep their `Display` for logs and the terminal; what
//! the chat reads is worded here, per variant, from the catalogue. Details
//! that come from outside (tmux's own error, a profile's, a key typed)
//! are filled in as they are, never translated.
//!
//! Times: a card that is sent once and never edited shows the clock
//! reading in the host's zone (`store::clock::time_in`: "answered at
//! 14:12:41" stays true as the card ages); only a card built anew each
//! time it is shown (the inbox, a reminder) says how long something waited.

use crate::agents::claude::PermissionMode;
use crate::bridge::names::{HostNameError, NameError, ProjectAtHostError, TextError};
use crate::bridge::names::{MAX_PROJECT_NAME, MAX_TYPED_CHARS};
use crate::bridge::panes::agent_pane::{AdoptedChange, PaneError};
use crate::bridge::panes::hosts::{AdoptTargetError, LocateError, MAX_TARGET_CHARS, UnknownHost};
use crate::bridge::panes::keys::{KeysError, MAX_KEYS_PER_COMMAND};
use crate::bridge::panes::workspace_file::{FileError, MAX_SEND_FILE_BYTES};
use crate::bridge::project::{MAX_QUEUED, ProjectError};
use crate::bridge::router::Usage;
use crate::bridge::texts::Msg;
use crate::i18n::Text;
use crate::tmux::one_shot::MAX_ONE_SHOT_OUTPUT;

/// What the chat reads for a value (an error): the presenter's wording
/// of it, in both languages. `Display` stays the log's English.
pub trait ChatWords {
    fn chat_words(&self) -> Text;
}

/// `e`'s chat words (for call sites that take `impl Into<Text>`).
pub fn said(e: &impl ChatWords) -> Text {
    e.chat_words()
}

/// The chat's words for a refused file (the catalogue's; `Display` is
/// the log's).
impl ChatWords for FileError {
    fn chat_words(&self) -> crate::i18n::Text {
        match self {
            FileError::NotInWorkspace(path) => Msg::ErrNotInWorkspace.with(&[("path", path)]),
            FileError::NotAFile(path) => Msg::ErrNotAFile.with(&[("path", path)]),
            FileError::TooLarge { path, size } => Msg::ErrFileTooLarge.with(&[
                ("path", path),
                ("size", &size.to_string()),
                ("max", &MAX_SEND_FILE_BYTES.to_string()),
            ]),
            // The system's own reason, as it is.
            FileError::Unreadable(path, why) => {
                Msg::ErrUnreadable.with(&[("path", path), ("why", why)])
            }
        }
    }
}

impl ChatWords for KeysError {
    fn chat_words(&self) -> Text {
        let keys = crate::bridge::panes::keys::names();
        match self {
            KeysError::None => Msg::KeysNone.with(&[("keys", &keys)]),
            KeysError::TooMany(n) => Msg::KeysTooMany.with(&[
                ("max", &MAX_KEYS_PER_COMMAND.to_string()),
                ("n", &n.to_string()),
            ]),
            KeysError::Unknown(word) => Msg::KeysUnknown.with(&[("word", word), ("keys", &keys)]),
        }
    }
}

impl ChatWords for Usage {
    fn chat_words(&self) -> Text {
        match self {
            Usage::UnknownAgent { given, agents } => {
                Msg::UsageUnknownAgent.with(&[("given", given), ("agents", agents)])
            }
            Usage::ExtraWords {
                command,
                arg,
                extra,
                usage,
            } => Msg::UsageExtraWords.with(&[
                ("command", command),
                ("arg", arg),
                ("extra", extra),
                ("usage", usage),
            ]),
            Usage::NoProject(usage) => Msg::UsageNoProject.with(&[("usage", usage)]),
            Usage::NoOption(usage) => Msg::UsageNoOption.with(&[("usage", usage)]),
            Usage::NoFile => Msg::UsageNoFile.text(),
            Usage::RemindWhen => Msg::UsageRemindWhen.text(),
            Usage::Keys(e) => e.chat_words(),
            Usage::NotAMode { given, modes } => {
                Msg::UsageNotAMode.with(&[("given", given), ("modes", modes)])
            }
            Usage::NoMode(modes) => Msg::UsageNoMode.with(&[("modes", modes)]),
            Usage::NoPane => Msg::UsageNoPane.text(),
        }
    }
}

impl ChatWords for ProjectError {
    fn chat_words(&self) -> Text {
        match self {
            ProjectError::Stopped => Msg::ErrStopped.text(),
            ProjectError::Overloaded => Msg::ErrOverloaded.text(),
            ProjectError::QueueFull => Msg::ErrQueueFull.with(&[("n", &MAX_QUEUED.to_string())]),
            ProjectError::NotAttached => Msg::ErrNotAttached.text(),
            ProjectError::OtherPrompt => Msg::ErrOtherPrompt.text(),
            ProjectError::NothingToCancel => Msg::ErrNothingRunning.text(),
            ProjectError::Answering => Msg::ErrAnswering.text(),
            ProjectError::ModeNotReached { mode, shown } => {
                Msg::ErrModeNotReached.with(&[("mode", &mode.to_string()), ("shown", shown)])
            }
            ProjectError::NotIdle => Msg::ErrNotIdle.text(),
            ProjectError::NotTaken { tries } => {
                Msg::ErrNotTaken.with(&[("tries", &tries.to_string())])
            }
            ProjectError::Pane(e) => {
                let detail = e.chat_words();
                Msg::ErrPane.with_each(|lang| vec![("detail", detail.get(lang).to_string())])
            }
            ProjectError::Replaced(e) => Msg::ErrReplaced.with(&[("detail", &e.to_string())]),
            ProjectError::LostAgain { reason } => Msg::ErrLostAgain.with(&[("reason", reason)]),
            ProjectError::NotResumed(inner) => {
                let inner = inner.chat_words();
                Msg::ErrNotResumed.with_each(|lang| vec![("error", inner.get(lang).to_string())])
            }
            ProjectError::Profile(fault) => Msg::ErrProfile.with(&[("detail", &fault.to_string())]),
            ProjectError::Name(e) => e.chat_words(),
            ProjectError::NoApprovalWaiting(workspace) => {
                Msg::ErrNoApprovalWaiting.with(&[("workspace", workspace)])
            }
            ProjectError::NotAnOption { key, keys } => {
                Msg::ErrNotAnOption.with(&[("key", key), ("keys", keys)])
            }
        }
    }
}

impl ChatWords for NameError {
    fn chat_words(&self) -> Text {
        let msgs = [
            Msg::ErrProjectNameEmpty,
            Msg::ErrProjectNameTooLong,
            Msg::ErrProjectName,
        ];
        name_words(self, msgs)
    }
}

impl ChatWords for HostNameError {
    fn chat_words(&self) -> Text {
        let msgs = [
            Msg::ErrHostNameEmpty,
            Msg::ErrHostNameTooLong,
            Msg::ErrHostName,
        ];
        name_words(&self.0, msgs)
    }
}

/// A name refused, worded as a project's or a host's name: `[empty, too
/// long, a bad character]`.
fn name_words(e: &NameError, [empty, long, bad]: [Msg; 3]) -> Text {
    let max = MAX_PROJECT_NAME.to_string();
    match e {
        NameError::Empty => empty.text(),
        NameError::TooLong(name) => long.with(&[("name", name), ("max", &max)]),
        NameError::BadChar { name, found } => {
            bad.with(&[("name", name), ("found", &format!("{found:?}"))])
        }
    }
}

impl ChatWords for ProjectAtHostError {
    fn chat_words(&self) -> Text {
        match self {
            ProjectAtHostError::Project(e) => e.chat_words(),
            ProjectAtHostError::Host(e) => e.chat_words(),
        }
    }
}

impl ChatWords for TextError {
    fn chat_words(&self) -> Text {
        match self {
            TextError::Empty => Msg::ErrEmptyMessage.text(),
            TextError::TooLong(n) => Msg::ErrMessageTooLong
                .with(&[("n", &n.to_string()), ("max", &MAX_TYPED_CHARS.to_string())]),
            TextError::Control(c) => Msg::ErrControlChar.with(&[("c", &format!("{c:?}"))]),
        }
    }
}

impl ChatWords for PaneError {
    fn chat_words(&self) -> Text {
        match self {
            PaneError::Tmux(e) => Msg::ErrPaneTmux.with(&[("detail", &e.to_string())]),
            PaneError::Create { session, reason } => {
                Msg::ErrPaneCreate.with(&[("session", session.as_str()), ("reason", reason)])
            }
            PaneError::Workspace { workspace, reason } => {
                Msg::ErrPaneWorkspace.with(&[("workspace", workspace), ("reason", reason)])
            }
            PaneError::NoSession(session) => {
                Msg::ErrPaneNoSession.with(&[("session", session.as_str())])
            }
            PaneError::NoPane(session) => Msg::ErrPaneNoPane.with(&[("session", session.as_str())]),
            PaneError::Unreachable { host, message } => {
                Msg::ErrPaneUnreachable.with(&[("host", host), ("message", message)])
            }
            PaneError::TooMuchOutput { host } => {
                let mib = (MAX_ONE_SHOT_OUTPUT / (1024 * 1024)).to_string();
                Msg::ErrPaneTooMuchOutput.with(&[("host", host), ("mib", &mib)])
            }
            PaneError::NotAdoptable { pane, reason } => {
                Msg::ErrPaneNotAdoptable.with(&[("pane", pane), ("reason", reason)])
            }
            PaneError::NotTheAdopted { pane, reason } => {
                let reason = reason.chat_words();
                Msg::ErrPaneNotTheAdopted.with_each(|lang| {
                    vec![
                        ("pane", pane.clone()),
                        ("reason", reason.get(lang).to_string()),
                    ]
                })
            }
            PaneError::UnknownHost(e) => e.chat_words(),
            PaneError::NotOpen => Msg::ErrPaneNotOpen.text(),
        }
    }
}

impl ChatWords for AdoptedChange {
    fn chat_words(&self) -> Text {
        match self {
            AdoptedChange::OldRecord => Msg::AdoptedOldRecord.text(),
            AdoptedChange::ServerRestarted { then, now } => Msg::AdoptedServerRestarted
                .with(&[("then", &then.to_string()), ("now", &now.to_string())]),
            AdoptedChange::OtherProgram { then, now } => Msg::AdoptedOtherProgram
                .with(&[("then", &then.to_string()), ("now", &now.to_string())]),
            AdoptedChange::Moved { then, now } => Msg::AdoptedMoved.with(&[
                ("then_window", &then.1.to_string()),
                ("then_session", &then.0.to_string()),
                ("now_window", &now.1.to_string()),
                ("now_session", &now.0.to_string()),
            ]),
        }
    }
}

impl ChatWords for UnknownHost {
    fn chat_words(&self) -> Text {
        Msg::ErrUnknownHost.with(&[
            ("host", &format!("{:?}", self.host)),
            ("known", &self.known),
        ])
    }
}

impl ChatWords for AdoptTargetError {
    fn chat_words(&self) -> Text {
        match self {
            AdoptTargetError::Host(e) => e.chat_words(),
            AdoptTargetError::Session(session) => Msg::ErrNotAdoptableSession
                .with(&[("session", session), ("max", &MAX_TARGET_CHARS.to_string())]),
            AdoptTargetError::Pane { session, pane } => {
                Msg::ErrNotWindowPane.with(&[("session", session), ("pane", pane)])
            }
        }
    }
}

impl ChatWords for LocateError {
    fn chat_words(&self) -> Text {
        match self {
            LocateError::UnknownHost(e) => e.chat_words(),
            // tmux's or the host's own words, as they are.
            LocateError::Pane(e) => Msg::ErrPane.with(&[("detail", &e.to_string())]),
            LocateError::NoAnswer => Msg::ErrNoAnswer.text(),
        }
    }
}

/// What the agent does not ask the chat about in `mode`; `None` when every
/// approval reaches the chat.
pub fn mode_unasked(mode: PermissionMode) -> Option<Text> {
    match mode {
        PermissionMode::Manual | PermissionMode::Plan => None,
        PermissionMode::AcceptEdits => Some(Msg::UnaskedEdits.text()),
        PermissionMode::Auto => Some(Msg::UnaskedAuto.text()),
        PermissionMode::BypassPermissions => Some(Msg::UnaskedNothing.text()),
    }
}

/// What reaches the chat in `mode`, in words.
pub fn mode_reach(mode: PermissionMode) -> Text {
    mode_unasked(mode).unwrap_or_else(|| Msg::EveryApprovalReaches.text())
}

/// A project's state, as the status table's cell says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Starting,
    AwaitingApproval,
    Busy,
    Idle,
    NotAttached,
}

pub fn state(s: State) -> Text {
    match s {
        State::Starting => Msg::StateStarting,
        State::AwaitingApproval => Msg::StateAwaitingApproval,
        State::Busy => Msg::StateBusy,
        State::Idle => Msg::StateIdle,
        State::NotAttached => Msg::StateNotAttached,
    }
    .text()
}

/// The GSD planning line clawmux writes (`gsd::planning::Planning::summary`:
/// `phase 2 of 3 (Cart) · plan 2 of 3 · 3/5 plans done · executing`, also
/// what a remote host sends back) in both languages: clawmux's own parts
/// are worded from the catalogue; a phase's name and GSD's status word
/// are GSD's and stay as they are.
pub fn planning(summary: &str) -> Text {
    let parts: Vec<Text> = summary.split(" · ").map(planning_part).collect();
    let line = |lang| {
        let parts: Vec<&str> = parts.iter().map(|p| p.get(lang)).collect();
        parts.join(" · ")
    };
    Text::both(line(crate::i18n::Lang::En), line(crate::i18n::Lang::Zh))
}

fn planning_part(part: &str) -> Text {
    fn number(s: &str) -> bool {
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
    }
    fn of(s: &str) -> Option<(&str, &str)> {
        s.split_once(" of ").filter(|(a, b)| number(a) && number(b))
    }
    if let Some(rest) = part.strip_prefix("phase ") {
        let (nums, name) = match rest.split_once(" (") {
            Some((nums, name)) => (nums, format!(" ({name}")),
            None => (rest, String::new()),
        };
        if let Some((n, m)) = of(nums) {
            return Msg::PlanningPhase.with(&[("n", n), ("m", m), ("name", &name)]);
        }
    }
    if let Some((a, b)) = part.strip_prefix("plan ").and_then(of) {
        return Msg::PlanningPlan.with(&[("a", a), ("b", b)]);
    }
    if let Some((done, total)) = (part.strip_suffix(" plans done"))
        .and_then(|p| p.split_once('/'))
        .filter(|(d, t)| number(d) && number(t))
    {
        return Msg::PlanningDone.with(&[("done", done), ("total", total)]);
    }
    Text::literal(part)
}

/// `12 s`, `1 min 5 s`, `2 h 3 min` (`12 秒`, `1 分 5 秒`, `2 小时 3 分`).
pub fn duration(secs: u64) -> Text {
    let n = |v: u64| v.to_string();
    match secs {
        s if s < 60 => Msg::DurationSeconds.with(&[("s", &n(s))]),
        s if s < 3600 => Msg::DurationMinutes.with(&[("m", &n(s / 60)), ("s", &n(s % 60))]),
        s => Msg::DurationHours.with(&[("h", &n(s / 3600)), ("m", &n((s % 3600) / 60))]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::{SessionId, WindowId};
    use crate::tmux::TmuxError;

    /// A pane error as tmux refusing a command says it.
    fn tmux_refused(message: &str) -> PaneError {
        PaneError::Tmux(TmuxError::Command {
            command: "send-keys".into(),
            message: message.into(),
        })
    }

    /// Every way a pane fails is worded in both languages, its English the
    /// error's own `Display`, its outside details (names, tmux's and ssh's
    /// messages) filled in as they are.
    #[test]
    fn every_pane_error_has_chat_words_in_both_languages() {
        let (s, p, r) = (
            crate::store::ids::session("cm-shop"),
            String::from("%3"),
            String::from("why"),
        );
        let all = [
            tmux_refused("can't find pane: %9"),
            PaneError::Create {
                session: s.clone(),
                reason: r.clone(),
            },
            PaneError::Workspace {
                workspace: "/srv/ws/shop".into(),
                reason: r.clone(),
            },
            PaneError::NoSession(s.clone()),
            PaneError::NoPane(s.clone()),
            PaneError::Unreachable {
                host: "gpu".into(),
                message: "Connection refused".into(),
            },
            PaneError::TooMuchOutput { host: "gpu".into() },
            PaneError::NotAdoptable {
                pane: p.clone(),
                reason: r.clone(),
            },
            PaneError::NotTheAdopted {
                pane: p.clone(),
                reason: AdoptedChange::OldRecord,
            },
            PaneError::NotTheAdopted {
                pane: p.clone(),
                reason: AdoptedChange::ServerRestarted { then: 4, now: 5 },
            },
            PaneError::NotTheAdopted {
                pane: p.clone(),
                reason: AdoptedChange::OtherProgram { then: 4, now: 5 },
            },
            PaneError::NotTheAdopted {
                pane: p.clone(),
                reason: AdoptedChange::Moved {
                    then: (SessionId(1), WindowId(2)),
                    now: (SessionId(3), WindowId(4)),
                },
            },
            PaneError::UnknownHost(UnknownHost {
                host: "gpu".into(),
                known: "(none)".into(),
            }),
            PaneError::NotOpen,
        ];
        for e in &all {
            let t = e.chat_words();
            assert!(has_cjk(t.get(Lang::Zh)), "{e:?}: {t:?}");
            assert_eq!(t.get(Lang::En), e.to_string(), "{e:?}");
            let wrapped = ProjectError::Pane(e.clone()).chat_words();
            assert_eq!(wrapped.get(Lang::En), e.to_string(), "{e:?}");
            assert!(
                wrapped.get(Lang::Zh).ends_with(t.get(Lang::Zh)),
                "{wrapped:?}"
            );
        }
        let t = PaneError::NoSession(s).chat_words();
        assert_eq!(t.get(Lang::Zh), "会话 cm-shop 不存在");
    }
    use crate::bridge::panes::workspace_file::FileError;
    use crate::i18n::Lang;

    fn has_cjk(s: &str) -> bool {
        s.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c))
    }

    #[test]
    fn every_project_error_has_chat_words_in_both_languages() {
        let all = [
            ProjectError::Stopped,
            ProjectError::Overloaded,
            ProjectError::QueueFull,
            ProjectError::NotAttached,
            ProjectError::OtherPrompt,
            ProjectError::NothingToCancel,
            ProjectError::Answering,
            ProjectError::ModeNotReached {
                mode: PermissionMode::Auto,
                shown: "manual, plan".into(),
            },
            ProjectError::NotIdle,
            ProjectError::NotTaken { tries: 2 },
            ProjectError::Pane(tmux_refused("can't find pane: %9")),
            ProjectError::Replaced(crate::tmux::TmuxError::PaneReplaced {
                pane: crate::control::PaneId(3),
                why: "it now runs bash".into(),
            }),
            ProjectError::LostAgain {
                reason: "server exited".into(),
            },
            ProjectError::NotResumed(Box::new(ProjectError::NotAttached)),
            ProjectError::Profile(
                crate::detect::ProfileError::UnknownProfile {
                    name: "nope".into(),
                    known: "claude".into(),
                }
                .into(),
            ),
            ProjectError::Name(NameError::Empty),
            ProjectError::NoApprovalWaiting("/w/demo".into()),
            ProjectError::NotAnOption {
                key: "9".into(),
                keys: "1|2".into(),
            },
        ];
        for e in &all {
            let t = e.chat_words();
            assert!(has_cjk(t.get(Lang::Zh)), "{e:?}: {t:?}");
            // The English chat words are the log's words: one wording.
            assert_eq!(t.get(Lang::En), e.to_string(), "{e:?}");
        }
        // Outside details and values are filled in untranslated.
        let t = ProjectError::Pane(tmux_refused("can't find pane: %9")).chat_words();
        assert!(t.get(Lang::Zh).contains("can't find pane: %9"), "{t:?}");
        let t = ProjectError::QueueFull.chat_words();
        assert!(t.get(Lang::Zh).contains("32"), "{t:?}");
        // A wrapped error is worded in the same language as its wrapper.
        let t = ProjectError::NotResumed(Box::new(ProjectError::NotAttached)).chat_words();
        assert!(t.get(Lang::Zh).ends_with("智能体的窗格未关联"), "{t:?}");
    }

    /// A built-in used wrongly is told in the chat's language (its words
    /// were English only); the English words are the log's.
    #[test]
    fn every_usage_error_has_chat_words_in_both_languages() {
        let all = [
            Usage::UnknownAgent {
                given: "vim".into(),
                agents: "claude|codex".into(),
            },
            Usage::ExtraWords {
                command: "answer".into(),
                arg: "1".into(),
                extra: "answers it".into(),
                usage: "/gsd:answer <key>",
            },
            Usage::NoProject("/gsd:use <project>"),
            Usage::NoOption("/gsd:answer <key>"),
            Usage::NoFile,
            Usage::RemindWhen,
            Usage::Keys(KeysError::None),
            Usage::Keys(KeysError::TooMany(17)),
            Usage::Keys(KeysError::Unknown("rm".into())),
            Usage::NotAMode {
                given: "yolo".into(),
                modes: "manual|auto".into(),
            },
            Usage::NoMode("manual|auto".into()),
            Usage::NoPane,
        ];
        for e in &all {
            let t = e.chat_words();
            assert!(has_cjk(t.get(Lang::Zh)), "{e:?}: {t:?}");
            assert_eq!(t.get(Lang::En), e.to_string(), "{e:?}");
        }
        // What the user typed and the command's spelling are kept as typed.
        let t = crate::bridge::router::route("/gsd:keys ls");
        let crate::bridge::router::Route::Usage(u) = t else {
            panic!("{t:?}");
        };
        assert!(u.chat_words().get(Lang::Zh).contains("`ls`"), "{u:?}");
    }

    #[test]
    fn refused_names_and_texts_are_worded_in_both_languages() {
        let errors: Vec<Box<dyn ChatWords>> = vec![
            Box::new(NameError::Empty),
            Box::new(NameError::TooLong("x".repeat(70))),
            Box::new(NameError::BadChar {
                name: "Web".into(),
                found: 'W',
            }),
            Box::new(HostNameError(NameError::Empty)),
            Box::new(TextError::Empty),
            Box::new(TextError::TooLong(5000)),
            Box::new(TextError::Control('\u{1b}')),
            Box::new(UnknownHost {
                host: "box".into(),
                known: "a, b".into(),
            }),
        ];
        for e in &errors {
            let t = e.chat_words();
            assert!(has_cjk(t.get(Lang::Zh)), "{t:?}");
            assert!(!has_cjk(t.get(Lang::En)), "{t:?}");
        }
        let files = [
            FileError::NotInWorkspace("../x".into()),
            FileError::NotAFile("src".into()),
            FileError::TooLarge {
                path: "big.bin".into(),
                size: 40_000_000,
            },
            FileError::Unreadable("a.txt".into(), "Permission denied".into()),
        ];
        for e in &files {
            let t = e.chat_words();
            assert_eq!(t.get(Lang::En), e.to_string());
            assert!(has_cjk(t.get(Lang::Zh)), "{t:?}");
        }
        let host = HostNameError(NameError::BadChar {
            name: "B".into(),
            found: 'B',
        });
        assert_eq!(host.chat_words().get(Lang::En), host.to_string());
        assert!(host.chat_words().get(Lang::Zh).contains("主机名"));
        let bad = NameError::BadChar {
            name: "Web".into(),
            found: 'W',
        };
        assert_eq!(bad.chat_words().get(Lang::En), bad.to_string());
        assert_eq!(
            TextError::TooLong(5000).chat_words().get(Lang::En),
            TextError::TooLong(5000).to_string()
        );
    }

    /// The planning line clawmux writes is worded in Chinese, keeping
    /// GSD's own words (the phase's name, its status) as they are.
    #[test]
    fn planning_lines_are_worded_and_gsds_words_kept() {
        let read = crate::gsd::planning::Planning::parse(
            "# Project State\n\nPhase: 2 of 3 (Cart)\nPlan: 2 of 3\nStatus: executing\n",
            None,
        );
        let summary = read.summary();
        assert!(
            summary.starts_with("phase 2 of 3 (Cart) · plan 2 of 3"),
            "{summary}"
        );
        let t = planning(&summary);
        assert_eq!(t.get(Lang::En), summary);
        let zh = t.get(Lang::Zh);
        assert!(zh.starts_with("第 2/3 阶段 (Cart) · 第 2/3 个计划"), "{zh}");
        assert!(zh.ends_with("executing"), "{zh}");
        assert_eq!(
            planning("3/5 plans done").get(Lang::Zh),
            "已完成 3/5 个计划"
        );
        // What is not clawmux's grammar stays as it is.
        assert_eq!(
            planning("phase one of two").get(Lang::Zh),
            "phase one of two"
        );
    }

    #[test]
    fn modes_say_what_reaches_the_chat_in_both_languages() {
        assert_eq!(
            mode_reach(PermissionMode::Manual).get(Lang::Zh),
            "每个审批都会发到此会话"
        );
        assert!(mode_unasked(PermissionMode::Plan).is_none());
        let auto = mode_unasked(PermissionMode::Auto).unwrap();
        assert_eq!(
            auto.get(Lang::En),
            "the agent approves its own commands and edits"
        );
        assert!(has_cjk(auto.get(Lang::Zh)));
    }

    #[test]
    fn durations_read_in_each_language() {
        assert_eq!(duration(65).get(Lang::En), "1 min 5 s");
        assert_eq!(duration(65).get(Lang::Zh), "1 分 5 秒");
        assert_eq!(duration(3 * 3600 + 120).get(Lang::Zh), "3 小时 2 分");
        assert_eq!(duration(12).get(Lang::Zh), "12 秒");
    }
}
