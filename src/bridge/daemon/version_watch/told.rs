//! What the version watch says once a release's self-check is over: the
//! self-check's outcome as kept ([`Outcome`]), the card each chat of an
//! affected project gets (both languages, from the catalogue), the event
//! log's record and the operator's line on stderr.

use serde::{Deserialize, Serialize};

use crate::agentcheck::AgentCheckError;
use crate::agentcheck::selftest::{SelfTestReport, Signal};
use crate::agents::claude::{AUTOUPDATER_OFF, NEWEST_TESTED, TESTED_VERSIONS, pin_command};
use crate::bridge::names::session_name;
use crate::bridge::texts::Msg;
use crate::i18n::Lang;
use crate::message::{Block, Message, Tone};
use crate::store::LogEvent;
use crate::store::state::ProjectName;

/// The agent the watch knows releases of (its name in the event log).
pub(super) const AGENT: &str = "claude";

/// What a release's self-check found, as kept between runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(in crate::bridge::daemon) struct Outcome {
    /// The signals still detected, by [`Signal::name`].
    pub detected: Vec<String>,
    /// The signals no longer detected.
    pub missed: Vec<String>,
    /// Why the self-check did not finish, when it did not.
    pub error: Option<String>,
}

impl Outcome {
    pub fn of(result: Result<SelfTestReport, AgentCheckError>) -> Outcome {
        match result {
            Ok(report) => {
                let names = |ok: bool| {
                    (report.signals.iter())
                        .filter(|s| s.ok == ok)
                        .map(|s| s.signal.name().to_owned())
                        .collect()
                };
                Outcome {
                    detected: names(true),
                    missed: names(false),
                    error: None,
                }
            }
            Err(e) => Outcome {
                detected: Vec::new(),
                missed: Vec::new(),
                error: Some(e.to_string()),
            },
        }
    }

    fn all_detected(&self) -> bool {
        self.error.is_none() && self.missed.is_empty()
    }
}

/// The release, the project and how to record its pane, for the words.
pub(super) struct Untested<'a> {
    pub project: &'a ProjectName,
    pub version: &'a str,
    /// The tmux socket `serve`'s panes live on (`-L`).
    pub socket: &'a str,
    pub outcome: &'a Outcome,
}

impl Untested<'_> {
    /// The command that records the project's pane.
    fn record(&self) -> String {
        format!(
            "clawmux record -L {} -t {} -o claude-{}.rec",
            self.socket,
            session_name(self.project),
            self.version
        )
    }

    /// The card for the chats that use the project.
    pub fn card(&self) -> Message {
        let o = self.outcome;
        let tested = TESTED_VERSIONS.join(", ");
        let intro = Msg::AgentUntestedIntro.with(&[
            ("project", self.project.as_str()),
            ("version", self.version),
            ("tested", &tested),
        ]);
        let result = match &o.error {
            Some(error) => Msg::AgentCheckNotRun.with(&[("error", error)]),
            None if o.missed.is_empty() => {
                Msg::AgentCheckPassed.with_each(|lang| vec![("detected", list(&o.detected, lang))])
            }
            None => Msg::AgentCheckMissed.with_each(|lang| {
                vec![
                    ("detected", list(&o.detected, lang)),
                    ("missed", list(&o.missed, lang)),
                ]
            }),
        };
        let off = format!("{}={}", AUTOUPDATER_OFF.0, AUTOUPDATER_OFF.1);
        let pin = Msg::AgentPinAdvice.with(&[("pin", &pin_command(NEWEST_TESTED)), ("off", &off)]);
        let record =
            Msg::AgentRecordAdvice.with(&[("version", self.version), ("record", &self.record())]);
        let tone = if o.all_detected() {
            Tone::Info
        } else {
            Tone::Failed
        };
        Message::new(Msg::AgentUntested.with(&[("version", self.version)]), tone)
            .push(Block::text(intro))
            .push(Block::text(result))
            .push(Block::text(pin))
            .push(Block::text(record))
    }

    /// The event log's record.
    pub fn record_event(&self) -> LogEvent {
        LogEvent::AgentUntested {
            project: self.project.clone(),
            agent: AGENT.to_owned(),
            version: self.version.to_owned(),
            tested: TESTED_VERSIONS.iter().map(|v| v.to_string()).collect(),
            detected: self.outcome.detected.clone(),
            missed: self.outcome.missed.clone(),
            error: self.outcome.error.clone(),
        }
    }

    /// The operator's line on stderr (one line, English as serve's other
    /// lines there).
    pub fn stderr_line(&self) -> String {
        let o = self.outcome;
        let check = match &o.error {
            Some(e) => format!("the self-check did not finish: {e}"),
            None if o.missed.is_empty() => {
                format!("self-check: still detected: {}", o.detected.join(", "))
            }
            None => format!(
                "self-check: still detected: {}; NOT detected: {}",
                none_if_empty(&o.detected),
                o.missed.join(", ")
            ),
        };
        format!(
            "clawmux: project {} runs Claude Code {}, not a tested release ({}); {check}; to pin a tested one: `{}` and start it with {}={}; to help support it: `{}`",
            self.project.as_str(),
            self.version,
            TESTED_VERSIONS.join(", "),
            pin_command(NEWEST_TESTED),
            AUTOUPDATER_OFF.0,
            AUTOUPDATER_OFF.1,
            self.record()
        )
    }
}

fn none_if_empty(names: &[String]) -> String {
    if names.is_empty() {
        "nothing".to_owned()
    } else {
        names.join(", ")
    }
}

/// Signal names in `lang`, joined as that language joins a list.
fn list(names: &[String], lang: Lang) -> String {
    if names.is_empty() {
        return Msg::NothingDetected.template(lang).to_owned();
    }
    let words: Vec<&str> = (names.iter())
        .map(|n| match Signal::ALL.into_iter().find(|s| s.name() == n) {
            Some(s) => signal_words(s).template(lang),
            None => n.as_str(),
        })
        .collect();
    words.join(match lang {
        Lang::En => ", ",
        Lang::Zh => "、",
    })
}

fn signal_words(s: Signal) -> Msg {
    match s {
        Signal::Permission => Msg::SignalPermission,
        Signal::Completion => Msg::SignalCompletion,
        Signal::Question => Msg::SignalQuestion,
        Signal::ApiError => Msg::SignalApiError,
    }
}

/// A text in both languages, for tests.
#[cfg(test)]
fn both(t: &crate::i18n::Text) -> (String, String) {
    (t.get(Lang::En).to_owned(), t.get(Lang::Zh).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn untested(outcome: &Outcome) -> Message {
        let project = crate::store::ids::project("demo");
        Untested {
            project: &project,
            version: "2.1.999",
            socket: "clawmux",
            outcome,
        }
        .card()
    }

    fn texts(card: &Message) -> Vec<(String, String)> {
        (card.blocks.iter())
            .filter_map(|b| match b {
                Block::Text(t) => Some(both(t)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn the_card_says_what_still_works_and_what_to_do_in_both_languages() {
        let outcome = Outcome {
            detected: vec!["permission prompt".into(), "completion".into()],
            missed: vec!["API error".into()],
            error: None,
        };
        let card = untested(&outcome);
        assert_eq!(card.tone, Tone::Failed);
        let t = texts(&card);
        assert!(
            t[1].0
                .contains("Still detected: permission prompts, turn ends."),
            "{t:?}"
        );
        assert!(t[1].0.contains("**Not detected: API errors**"), "{t:?}");
        assert!(t[1].1.contains("仍能识别：权限提示、回合结束"), "{t:?}");
        assert!(t[1].1.contains("无法识别：API 错误"), "{t:?}");
        let pin = format!("`npm install -g @anthropic-ai/claude-code@{NEWEST_TESTED}`");
        assert!(
            t[2].0.contains(&pin) && t[2].0.contains("`DISABLE_AUTOUPDATER=1`"),
            "{t:?}"
        );
        assert!(
            t[2].1.contains(&pin) && t[2].1.contains("DISABLE_AUTOUPDATER=1"),
            "{t:?}"
        );
        let record = "`clawmux record -L clawmux -t cm-demo -o claude-2.1.999.rec`";
        assert!(t[3].0.contains(record) && t[3].1.contains(record), "{t:?}");
    }

    #[test]
    fn a_self_check_that_did_not_finish_says_why() {
        let outcome = Outcome {
            detected: Vec::new(),
            missed: Vec::new(),
            error: Some("claude: no input box".into()),
        };
        let card = untested(&outcome);
        assert_eq!(card.tone, Tone::Failed);
        let t = texts(&card);
        assert!(
            t[1].0
                .starts_with("The self-check could not finish: claude: no input box."),
            "{t:?}"
        );
        assert!(
            t[1].1.starts_with("自检未能完成：claude: no input box。"),
            "{t:?}"
        );
        let passed = Outcome {
            detected: Signal::ALL.map(|s| s.name().to_owned()).to_vec(),
            missed: Vec::new(),
            error: None,
        };
        let card = untested(&passed);
        assert_eq!(card.tone, Tone::Info);
        assert!(texts(&card)[1].0.contains("Nothing has stopped working"));
    }
}
