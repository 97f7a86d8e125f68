//! The sim-agent script format: handlers that map an input line to steps.
//!
//! ```text
//! # A comment. Blank lines are ignored.
//! on /gsd:progress /gsd-progress   # input whose first word is one of these
//!   spin 400 Working…              # spinner with `esc to interrupt`, 400 ms
//!   say Progress: ████░░ 60%       # print a line
//! on ~fail                         # input containing "fail"
//!   say API Error: 500 Internal server error
//! on *                             # anything else
//!   say You said: $input
//! ```
//!
//! The first matching handler runs. In step text `$input` is the whole input
//! line, `$1` its first argument (the word after the command) and `$*` all
//! of its arguments.
//!
//! Steps:
//! - `say TEXT`: print a line (spaces after the first one are kept).
//! - `spin MS TEXT`: a spinner row `✶ TEXT (Ns · ↑ N tokens)` above the
//!   input box, whose footer says `esc to interrupt`, redrawn in place for
//!   MS ms, then erased.
//! - `sleep MS`: wait.
//! - `banner TEXT`: print `━━━ GSD ► TEXT` between blank lines.
//! - `permission COMMAND`: a Claude Code permission prompt for
//!   `Bash(COMMAND)` with a three-option menu; waits for one key (a digit
//!   chooses, Enter takes the highlighted option, Esc the last), erases the
//!   prompt and prints the outcome (`No` ends the turn, `Interrupted`).
//! - `question TEXT | OPTION | OPTION…`: an AskUserQuestion menu, answered
//!   the same way; `LABEL: DESCRIPTION` draws the description under its
//!   label, and `Chat about this` follows an inner rule. An option named
//!   `Type something.` is a text field: its key moves the cursor to it,
//!   and the words typed up to Enter are the answer.
//! - `plan STEP | STEP…`: the ExitPlanMode dialog with the plan's steps;
//!   `3` (Tell Claude what to change) ends the turn.
//! - `checkpoint TITLE | ACTION`: a GSD checkpoint block (`CHECKPOINT:
//!   TITLE`, `→ YOUR ACTION: ACTION`, `Type "approved" or describe issues`),
//!   then the idle prompt; the next input line is the answer, printed back,
//!   and the handler goes on.
//! - `flood N`: print N numbered lines as fast as possible.
//! - `retry N`: the spinner row says the API failed and is retried,
//!   `✻ API error · Retrying in 1s · attempt K/N` for K = 1..=N.
//! - `progress FROM TO STEP TEXT`: print `TEXT ███░░ NN%` lines from FROM to
//!   TO percent.

use std::time::Duration;

/// Most steps a script may hold: a guard against a runaway file.
const MAX_STEPS: usize = 10_000;

/// A script could not be parsed.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    #[error("script line {line}: {message}")]
    Syntax { line: usize, message: String },
    #[error("script has more than {MAX_STEPS} steps")]
    TooLong,
}

/// Which inputs a handler takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trigger {
    /// The input's first word is one of these.
    Commands(Vec<String>),
    /// The input contains this text.
    Contains(String),
    /// Any input.
    Any,
}

/// One step of a handler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Say(String),
    Spin(Duration, String),
    Sleep(Duration),
    Banner(String),
    Permission(String),
    Question(String, Vec<String>),
    /// ExitPlanMode: the plan's steps.
    Plan(Vec<String>),
    Checkpoint(String, String),
    Flood(usize),
    /// API retries shown in the spinner row: attempts 1..=N.
    Retry(u8),
    Progress {
        from: u8,
        to: u8,
        step: u8,
        text: String,
    },
}

/// A trigger and its steps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handler {
    pub trigger: Trigger,
    pub steps: Vec<Step>,
}

/// A parsed script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Script {
    pub handlers: Vec<Handler>,
}

/// The built-in script `clawmux sim-agent` runs without `--script`.
pub const DEFAULT_SCRIPT: &str = include_str!("default.sim");

impl Script {
    /// Parses a script.
    pub fn parse(text: &str) -> Result<Script, ScriptError> {
        let mut handlers: Vec<Handler> = Vec::new();
        let mut steps = 0;
        for (n, raw) in text.lines().enumerate() {
            let line = n + 1;
            let err = |message: &str| ScriptError::Syntax {
                line,
                message: message.to_owned(),
            };
            let trimmed = raw.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let (word, raw_rest) = trimmed.split_once(' ').unwrap_or((trimmed, ""));
            let rest = raw_rest.trim();
            if word == "on" {
                let trigger = match rest {
                    "" => return Err(err("`on` needs a trigger: commands, ~text or *")),
                    "*" => Trigger::Any,
                    r if r.starts_with('~') => Trigger::Contains(r[1..].to_owned()),
                    r => Trigger::Commands(r.split_whitespace().map(str::to_owned).collect()),
                };
                handlers.push(Handler {
                    trigger,
                    steps: Vec::new(),
                });
                continue;
            }
            let Some(handler) = handlers.last_mut() else {
                return Err(err("a step before any `on` line"));
            };
            steps += 1;
            if steps > MAX_STEPS {
                return Err(ScriptError::TooLong);
            }
            let ms = |s: &str| {
                s.parse::<u64>()
                    .map(Duration::from_millis)
                    .map_err(|_| err(&format!("{s:?} is not a number of milliseconds")))
            };
            let parts = |s: &str| {
                s.split('|')
                    .map(|p| p.trim().to_owned())
                    .collect::<Vec<_>>()
            };
            let step = match word {
                // `say` keeps its indentation: output is often indented.
                "say" => Step::Say(raw_rest.to_owned()),
                "banner" => Step::Banner(rest.to_owned()),
                "permission" => Step::Permission(rest.to_owned()),
                "sleep" => Step::Sleep(ms(rest)?),
                "spin" => {
                    let (t, text) = rest.split_once(' ').unwrap_or((rest, "Working…"));
                    Step::Spin(ms(t)?, text.trim().to_owned())
                }
                "retry" => Step::Retry(
                    rest.parse()
                        .ok()
                        .filter(|n| *n > 0)
                        .ok_or_else(|| err(&format!("{rest:?} is not a retry count (1-255)")))?,
                ),
                "flood" => Step::Flood(
                    rest.parse()
                        .map_err(|_| err(&format!("{rest:?} is not a line count")))?,
                ),
                "question" => {
                    let mut p = parts(rest);
                    if p.len() < 3 {
                        return Err(err("`question TEXT | OPTION | OPTION…` needs two options"));
                    }
                    let q = p.remove(0);
                    Step::Question(q, p)
                }
                "plan" => {
                    let p = parts(rest);
                    if p.iter().all(String::is_empty) {
                        return Err(err("`plan STEP | STEP…` needs a step"));
                    }
                    Step::Plan(p)
                }
                "checkpoint" => match parts(rest).as_slice() {
                    [title, action] => Step::Checkpoint(title.clone(), action.clone()),
                    _ => return Err(err("`checkpoint TITLE | ACTION`")),
                },
                "progress" => {
                    let mut it = rest.splitn(4, ' ');
                    let mut pct = || {
                        it.next()
                            .and_then(|v| v.parse::<u8>().ok())
                            .filter(|v| *v <= 100)
                            .ok_or_else(|| err("`progress FROM TO STEP TEXT` with percents"))
                    };
                    let (from, to, step) = (pct()?, pct()?, pct()?);
                    if step == 0 {
                        return Err(err("progress STEP must be positive"));
                    }
                    Step::Progress {
                        from,
                        to,
                        step,
                        text: it.next().unwrap_or("Progress:").to_owned(),
                    }
                }
                other => return Err(err(&format!("unknown step {other:?}"))),
            };
            handler.steps.push(step);
        }
        Ok(Script { handlers })
    }

    /// The handler for `input`, if any.
    pub fn handler_for(&self, input: &str) -> Option<&Handler> {
        let first = input.split_whitespace().next().unwrap_or("");
        self.handlers.iter().find(|h| match &h.trigger {
            Trigger::Commands(c) => c.iter().any(|c| c == first),
            Trigger::Contains(t) => input.contains(t.as_str()),
            Trigger::Any => true,
        })
    }
}

/// Replaces `$input`, `$1` and `$*` in `text`.
pub fn substitute(text: &str, input: &str) -> String {
    let mut words = input.split_whitespace();
    words.next();
    let args: Vec<&str> = words.collect();
    text.replace("$input", input)
        .replace("$1", args.first().copied().unwrap_or(""))
        .replace("$*", &args.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_script_parses_and_routes() {
        let s = Script::parse(DEFAULT_SCRIPT).unwrap();
        let first = |input: &str| s.handler_for(input).map(|h| h.trigger.clone());
        assert_eq!(first("/gsd:progress"), first("/gsd-progress"));
        assert!(matches!(
            first("/gsd:plan-phase 2"),
            Some(Trigger::Commands(_))
        ));
        assert_eq!(
            first("please fail now"),
            Some(Trigger::Contains("fail".into()))
        );
        assert_eq!(first("hello"), Some(Trigger::Any));
    }

    #[test]
    fn errors_name_the_line() {
        let e = Script::parse("on *\n  say hi\n  spin x\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "script line 3: \"x\" is not a number of milliseconds"
        );
        assert!(Script::parse("say hi").is_err());
        assert!(Script::parse("on *\n frob").is_err());
        assert!(Script::parse("on *\n question only one | a").is_err());
    }

    #[test]
    fn substitution() {
        assert_eq!(
            substitute("phase $1 of [$*] ($input)", "/gsd:x 2 b"),
            "phase 2 of [2 b] (/gsd:x 2 b)"
        );
    }
}
