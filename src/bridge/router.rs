//! Chat text -> what to do: a clawmux built-in, or text typed into the
//! agent. Both spellings are accepted: `/gsd:<name>` and `/gsd-<name>`.
//!
//! There is no list of GSD's commands: every `/gsd` name that is not one of
//! clawmux's controls goes to the agent (the project's installed GSD knows
//! its own commands, and the agent refuses what it lacks, with its own
//! suggestion). Two of clawmux's controls share a name with GSD's, and
//! neither hides GSD's:
//! - `/gsd:help` is clawmux's help; `/gsd:help gsd` types GSD's `help`
//!   (any other argument goes to GSD's help as written).
//! - `/gsd:new-project NAME [ARGS]` creates project NAME and then runs GSD's
//!   `new-project [ARGS]` in it; without a name (no argument, or a first
//!   argument that is a flag `--auto` or a file `@prd.md`) it is GSD's
//!   `new-project` in the current project.

use crate::agents::claude::PermissionMode;
use crate::bridge::panes::keys::KeysError;

/// Commands clawmux answers itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Builtin {
    Help,
    Use(String),
    /// Create a project, then run GSD's `new-project` with `gsd_args` in it;
    /// `agent` is the agent it runs (`--agent codex`), when named.
    NewProject {
        name: String,
        gsd_args: String,
        agent: Option<String>,
    },
    Projects,
    Status,
    Cancel,
    /// Answer the pending approval with an option key (for text channels).
    Answer(String),
    /// Watch a pane the user runs: `SESSION[:WINDOW.PANE][@HOST]`, and the
    /// project name to give it.
    Adopt {
        target: String,
        name: Option<String>,
    },
    /// Stop watching an adopted pane.
    Release(String),
    /// List the sessions on every server.
    Sessions,
    /// The current project's pane as it shows now.
    Screen,
    /// Show the current project's permission mode, or switch it.
    Mode(Option<PermissionMode>),
    /// Send named keys to the current project's pane (approvers).
    Keys(Vec<crate::bridge::panes::keys::NamedKey>),
    /// Every prompt waiting for an answer, oldest first.
    Inbox,
    /// Send a file from the current project's workspace.
    File(String),
    /// This chat's reminders: after how many seconds, or off (None).
    Remind(Option<u64>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    Builtin(Builtin),
    /// Typed into the current project's agent pane exactly as written.
    Agent(String),
    /// A `/gsd` word that cannot be a command name (`/gsd:Plan!`);
    /// `suggestion` is the nearest of clawmux's controls, if close.
    Unknown {
        command: String,
        suggestion: Option<String>,
    },
    /// A built-in used wrongly (missing argument …).
    Usage(Usage),
}

/// How a built-in was used wrongly; `Display` is the log's words, the
/// chat's are the presenter's (`present::words`), in both languages.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Usage {
    #[error("unknown agent `{given}`: `/gsd:new-project <name> --agent <{agents}>`")]
    UnknownAgent { given: String, agents: String },
    #[error(
        "`/gsd:{command}` takes one argument, `{arg}`; nothing was done because of the extra words `{extra}`: `{usage}`"
    )]
    ExtraWords {
        command: String,
        arg: String,
        extra: String,
        usage: &'static str,
    },
    #[error("say which project: `{0}`")]
    NoProject(&'static str),
    #[error("say which option: `{0}`")]
    NoOption(&'static str),
    #[error("say which file: `/gsd:file <path>`")]
    NoFile,
    #[error(
        "say after how long: `/gsd:remind <minutes>` (or `30s`, `5m`), or `/gsd:remind off`, at most a day"
    )]
    RemindWhen,
    #[error(transparent)]
    Keys(#[from] KeysError),
    #[error("`{given}` is not a permission mode: {modes}")]
    NotAMode { given: String, modes: String },
    #[error("say which mode: `/gsd:mode <{0}>`")]
    NoMode(String),
    #[error("say which pane: `/gsd:adopt SESSION[:WINDOW.PANE][@HOST] [as NAME]`")]
    NoPane,
}

/// clawmux's own commands.
pub const BUILTINS: &[&str] = &[
    "help",
    "use",
    "new-project",
    "projects",
    "status",
    "cancel",
    "answer",
    "adopt",
    "release",
    "sessions",
    "screen",
    "mode",
];

/// `/gsd:new-project NAME [--agent AGENT] [ARGS]`: `--agent` (anywhere in
/// the arguments, `--agent=x` too) chooses the project's agent by name and
/// is not passed on to GSD.
fn new_project(name: &str, rest: &str) -> Result<Builtin, Route> {
    let mut words: Vec<&str> = rest.split(' ').collect();
    let mut agent = None;
    let mut i = 0;
    while i < words.len() {
        let named = if words[i] == "--agent" {
            let next = words.get(i + 1).copied().filter(|w| !w.is_empty());
            words.drain(i..(i + 2).min(words.len()));
            Some(next)
        } else if let Some(v) = words[i].strip_prefix("--agent=") {
            let v = (!v.is_empty()).then_some(v);
            words.remove(i);
            Some(v)
        } else {
            i += 1;
            None
        };
        match named {
            None => {}
            Some(Some(v)) if crate::agents::by_name(v).is_some() || v == crate::agents::SIM => {
                agent = Some(v.to_ascii_lowercase());
            }
            Some(v) => {
                return Err(Route::Usage(Usage::UnknownAgent {
                    given: v.unwrap_or("").to_string(),
                    agents: crate::agents::names().replace(", ", "|"),
                }));
            }
        }
    }
    Ok(Builtin::NewProject {
        name: name.to_string(),
        gsd_args: words.join(" ").trim().to_string(),
        agent,
    })
}

/// The permission modes, as `/gsd:mode` takes them.
fn mode_names() -> String {
    PermissionMode::ALL.map(PermissionMode::name).join("|")
}

/// GSD's own help, as typed for the agent (then spelled for its install).
pub const GSD_HELP: &str = "/gsd:help";

/// The argument of `/gsd:help` that asks for GSD's help instead of clawmux's.
pub const GSD_HELP_ARG: &str = "gsd";

/// Longest reminder time taken, in seconds (a day).
const MAX_REMIND_SECS: u64 = 24 * 3600;

/// `/gsd:remind N|Nm|Ns|off`: minutes (or seconds with `s`), or off.
fn parse_remind(args: &str) -> Result<Option<u64>, Usage> {
    let a = args.trim().to_ascii_lowercase();
    if a == "off" {
        return Ok(None);
    }
    let (digits, unit) = match a.strip_suffix('s') {
        Some(d) => (d, 1),
        None => (a.strip_suffix('m').unwrap_or(&a), 60),
    };
    match digits.parse::<u64>() {
        Ok(n) if n > 0 && n.saturating_mul(unit) <= MAX_REMIND_SECS => Ok(Some(n * unit)),
        _ => Err(Usage::RemindWhen),
    }
}

pub fn route(text: &str) -> Route {
    let text = text.trim();
    let Some(name) = crate::gsd::spelling::gsd_name(text) else {
        return Route::Agent(text.to_string());
    };
    let args = text
        .split_once(char::is_whitespace)
        .map(|(_, a)| a.trim())
        .unwrap_or("");
    let one_arg = |missing: fn(&'static str) -> Usage, usage: &'static str| {
        match args.split_whitespace().collect::<Vec<_>>()[..] {
            [arg] => Ok(arg.to_string()),
            // Extra words are named: a pasted line with its description
            // (`/gsd:answer 1   answers it`) must not read as a missing key.
            [arg, ref extra @ ..] => Err(Route::Usage(Usage::ExtraWords {
                command: name.to_string(),
                arg: arg.to_string(),
                extra: extra.join(" "),
                usage,
            })),
            [] => Err(Route::Usage(missing(usage))),
        }
    };
    let builtin = match name {
        "help" if args.is_empty() => Ok(Builtin::Help),
        "help" if args == GSD_HELP_ARG => return Route::Agent(GSD_HELP.to_string()),
        "projects" => Ok(Builtin::Projects),
        "status" => Ok(Builtin::Status),
        "cancel" => Ok(Builtin::Cancel),
        // GSD has an `inbox` too: bare, it is clawmux's; `/gsd:inbox gsd`
        // (and any other arguments) reach GSD's.
        "inbox" if args.is_empty() => Ok(Builtin::Inbox),
        "file" if args.is_empty() => Err(Route::Usage(Usage::NoFile)),
        "file" => Ok(Builtin::File(args.to_string())),
        "inbox" if args == GSD_HELP_ARG => {
            return Route::Agent(text.trim_end_matches(GSD_HELP_ARG).trim_end().to_string());
        }
        "remind" => parse_remind(args)
            .map(Builtin::Remind)
            .map_err(Route::Usage),
        "keys" => crate::bridge::panes::keys::parse_keys(args)
            .map(Builtin::Keys)
            .map_err(|e| Route::Usage(e.into())),
        "use" => one_arg(Usage::NoProject, "/gsd:use <project>").map(Builtin::Use),
        "new-project" => match args.split_once(char::is_whitespace) {
            _ if args.is_empty() || args.starts_with(['-', '@']) => {
                return Route::Agent(text.to_string());
            }
            Some((name, rest)) => new_project(name, rest),
            None => new_project(args, ""),
        },
        "answer" => one_arg(Usage::NoOption, "/gsd:answer <key>").map(Builtin::Answer),
        "sessions" => Ok(Builtin::Sessions),
        "screen" => Ok(Builtin::Screen),
        "mode" => match args.split_whitespace().collect::<Vec<_>>()[..] {
            [] => Ok(Builtin::Mode(None)),
            [name] => PermissionMode::parse(name)
                .map(|m| Builtin::Mode(Some(m)))
                .ok_or_else(|| {
                    Route::Usage(Usage::NotAMode {
                        given: name.to_string(),
                        modes: mode_names(),
                    })
                }),
            _ => Err(Route::Usage(Usage::NoMode(mode_names()))),
        },
        "release" => one_arg(Usage::NoProject, "/gsd:release <name>").map(Builtin::Release),
        "adopt" => match args.split_whitespace().collect::<Vec<_>>()[..] {
            [target] => Ok(Builtin::Adopt {
                target: target.into(),
                name: None,
            }),
            [target, "as", name] => Ok(Builtin::Adopt {
                target: target.into(),
                name: Some(name.into()),
            }),
            _ => Err(Route::Usage(Usage::NoPane)),
        },
        _ if crate::gsd::spelling::is_command_name(name) => {
            return Route::Agent(text.to_string());
        }
        _ => {
            let command = text.split_whitespace().next().unwrap_or(text).to_string();
            return Route::Unknown {
                command,
                suggestion: nearest(name),
            };
        }
    };
    builtin.map(Route::Builtin).unwrap_or_else(|usage| usage)
}

/// The control closest to `name`, if it is close enough to be a typo.
/// Only for names that cannot be GSD's: a well-formed name goes to the
/// agent, since `stats` (GSD's) is one letter from `status` (clawmux's).
fn nearest(name: &str) -> Option<String> {
    let name = name.to_ascii_lowercase();
    let (best, dist) = BUILTINS
        .iter()
        .map(|known| (*known, strsim::levenshtein(&name, known)))
        .min_by_key(|&(_, d)| d)?;
    (dist <= name.len().max(3) / 2).then(|| format!("/gsd:{best}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_spellings_reach_the_agent_verbatim() {
        assert_eq!(
            route("/gsd:plan-phase 2"),
            Route::Agent("/gsd:plan-phase 2".into())
        );
        assert_eq!(
            route("  /gsd-plan-phase 2 "),
            Route::Agent("/gsd-plan-phase 2".into())
        );
        assert_eq!(
            route("fix the bug; C-c"),
            Route::Agent("fix the bug; C-c".into())
        );
    }

    #[test]
    fn builtins_and_their_arguments() {
        assert_eq!(route("/gsd:help"), Route::Builtin(Builtin::Help));
        assert_eq!(route("/gsd-status"), Route::Builtin(Builtin::Status));
        assert_eq!(
            route("/gsd:use demo"),
            Route::Builtin(Builtin::Use("demo".into()))
        );
        assert_eq!(
            route("/gsd:new-project app"),
            Route::Builtin(Builtin::NewProject {
                name: "app".into(),
                gsd_args: String::new(),
                agent: None
            })
        );
        assert_eq!(
            route("/gsd-new-project app@desk --auto  @prd.md"),
            Route::Builtin(Builtin::NewProject {
                name: "app@desk".into(),
                gsd_args: "--auto  @prd.md".into(),
                agent: None
            })
        );
        assert_eq!(
            route("/gsd:new-project web --agent Gemini --auto"),
            Route::Builtin(Builtin::NewProject {
                name: "web".into(),
                gsd_args: "--auto".into(),
                agent: Some("gemini".into())
            })
        );
        assert_eq!(
            route("/gsd:new-project web --agent=codex"),
            Route::Builtin(Builtin::NewProject {
                name: "web".into(),
                gsd_args: String::new(),
                agent: Some("codex".into())
            })
        );
        for bad in [
            "/gsd:new-project web --agent",
            "/gsd:new-project web --agent vim",
        ] {
            assert!(
                matches!(route(bad), Route::Usage(ref u) if u.to_string().contains("--agent <claude|codex|gemini|opencode|aider|sim>")),
                "{bad}: {:?}",
                route(bad)
            );
        }
        assert_eq!(
            route("/gsd:answer 2"),
            Route::Builtin(Builtin::Answer("2".into()))
        );
        assert!(matches!(
            route("/gsd:answer 1                answers it (on Feishu: press the button)"),
            Route::Usage(u) if u.to_string().contains("takes one argument, `1`") && u.to_string().contains("extra words `answers it (on")
        ));
        assert!(
            matches!(route("/gsd:answer"), Route::Usage(u) if u.to_string().contains("say which option"))
        );
        assert!(
            matches!(route("/gsd:use"), Route::Usage(u) if u.to_string().contains("/gsd:use <project>"))
        );
        assert!(matches!(route("/gsd:use a b"), Route::Usage(_)));
        assert_eq!(
            route("/gsd:adopt work:1.0@desk as api"),
            Route::Builtin(Builtin::Adopt {
                target: "work:1.0@desk".into(),
                name: Some("api".into())
            })
        );
        assert_eq!(
            route("/gsd:adopt work"),
            Route::Builtin(Builtin::Adopt {
                target: "work".into(),
                name: None
            })
        );
        assert!(matches!(route("/gsd:adopt work api"), Route::Usage(_)));
        assert!(matches!(route("/gsd:adopt"), Route::Usage(_)));
        assert_eq!(
            route("/gsd:release api"),
            Route::Builtin(Builtin::Release("api".into()))
        );
        assert_eq!(route("/gsd:sessions"), Route::Builtin(Builtin::Sessions));
        assert_eq!(route("/gsd:mode"), Route::Builtin(Builtin::Mode(None)));
        use crate::bridge::panes::keys::NamedKey;
        assert_eq!(
            route("/gsd:keys esc Enter"),
            Route::Builtin(Builtin::Keys(vec![NamedKey::Esc, NamedKey::Enter]))
        );
        assert!(
            matches!(route("/gsd:keys"), Route::Usage(u) if u.to_string().contains("say which keys"))
        );
        assert_eq!(route("/gsd:inbox"), Route::Builtin(Builtin::Inbox));
        assert_eq!(
            route("/gsd:remind 5"),
            Route::Builtin(Builtin::Remind(Some(300)))
        );
        assert_eq!(
            route("/gsd:remind 30s"),
            Route::Builtin(Builtin::Remind(Some(30)))
        );
        assert_eq!(
            route("/gsd:remind off"),
            Route::Builtin(Builtin::Remind(None))
        );
        assert!(matches!(route("/gsd:remind 0"), Route::Usage(_)));
        assert!(matches!(route("/gsd:remind 2000m"), Route::Usage(_)));
        assert!(
            matches!(route("/gsd:keys ls"), Route::Usage(u) if u.to_string().contains("`ls` is not a key"))
        );
        assert_eq!(
            route("/gsd:mode acceptedits"),
            Route::Builtin(Builtin::Mode(Some(PermissionMode::AcceptEdits)))
        );
        assert!(
            matches!(route("/gsd:mode yolo"), Route::Usage(u) if u.to_string().contains("manual|auto|plan"))
        );
    }

    #[test]
    fn every_gsd_1_42_3_command_reaches_the_agent() {
        for name in crate::gsd::COMMANDS_1_42_3 {
            for prefix in ["/gsd:", "/gsd-"] {
                let text = format!("{prefix}{name}");
                let routed = route(&text);
                let reachable = match name {
                    // clawmux's help and new-project share GSD's names:
                    // GSD's stay reachable through their documented forms.
                    "help" => route(&format!("{text} gsd")) == Route::Agent(GSD_HELP.into()),
                    "inbox" => route(&format!("{text} gsd")) == Route::Agent(text.clone()),
                    "new-project" => routed == Route::Agent(text.clone()),
                    _ => routed == Route::Agent(text.clone()),
                };
                assert!(reachable, "{text} routes to {routed:?}");
            }
        }
        // Names GSD has dropped or not yet added go to the agent too: it
        // answers what its install has.
        assert_eq!(route("/gsd:next"), Route::Agent("/gsd:next".into()));
        assert_eq!(
            route("/gsd-plan-phse 2"),
            Route::Agent("/gsd-plan-phse 2".into())
        );
        assert_eq!(route("/gsd:stats"), Route::Agent("/gsd:stats".into()));
    }

    #[test]
    fn gsds_own_help_and_new_project() {
        assert_eq!(route("/gsd:help gsd"), Route::Agent("/gsd:help".into()));
        assert_eq!(route("/gsd-help gsd"), Route::Agent("/gsd:help".into()));
        assert_eq!(
            route("/gsd-help --brief"),
            Route::Agent("/gsd-help --brief".into())
        );
        assert_eq!(
            route("/gsd:new-project"),
            Route::Agent("/gsd:new-project".into())
        );
        assert_eq!(
            route("/gsd:new-project --auto @prd.md"),
            Route::Agent("/gsd:new-project --auto @prd.md".into())
        );
    }

    #[test]
    fn malformed_names_suggest_a_control() {
        assert_eq!(
            route("/gsd:Status"),
            Route::Unknown {
                command: "/gsd:Status".into(),
                suggestion: Some("/gsd:status".into())
            }
        );
        assert_eq!(
            route("/gsd-projcts!"),
            Route::Unknown {
                command: "/gsd-projcts!".into(),
                suggestion: Some("/gsd:projects".into())
            }
        );
        assert_eq!(
            route("/gsd:ZZZZZZZZZZ"),
            Route::Unknown {
                command: "/gsd:ZZZZZZZZZZ".into(),
                suggestion: None
            }
        );
    }
}
