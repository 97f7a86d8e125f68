//! `clawmux run`: send one message as the chat would and print the result,
//! in the format of the channel that relays it. A running `serve` takes it
//! (through its `run.sock`); with none, the run owns the state directory
//! for its time and runs the daemon itself (see `bridge::runs`).

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use clawmux::bridge::daemon::one_shot::{self, OneShot};
use clawmux::bridge::daemon::run_socket as socket;
use clawmux::bridge::runs::{Outcome, Request, RunAsk, RunResult, Status};
use clawmux::bridge::texts::Msg;
use clawmux::detect::Profiles;
use clawmux::feishu::card::{Card, with_fallback};
use clawmux::i18n::Lang;
use clawmux::message::Block;
use clawmux::store;
use clawmux::store::dir_lock::{Holder, StateLock};
use clawmux::store::state::{ApprovalId, ProjectName};

use super::UsageError;
use super::out;
use super::serve::{load_config, sim_agent_command};

/// How `run` prints its result, per channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Markdown, for channels that render it.
    Markdown,
    /// No markup, for SMS-like channels.
    Plain,
    /// Feishu card JSON 2.0 (a JSON array of cards).
    Card,
    /// Machine-readable: status, output, detections, approval with options.
    Json,
}

#[derive(clap::Args)]
pub struct Args {
    /// The project (tmux session) to send the message to.
    #[arg(long)]
    pub project: String,
    /// Output format for the channel that relays the result.
    #[arg(long, value_enum, default_value = "markdown")]
    pub format: Format,
    /// Answer the pending approval of this project with this option key.
    #[arg(long, value_name = "KEY")]
    pub answer: Option<String>,
    /// With --answer: the prompt being answered, as the run that showed it
    /// named it ("Answer with:", or `approval.id` in --format json). When
    /// the project now asks something else, nothing is typed (exit 2, and
    /// the new prompt is shown). Without it only a prompt someone was
    /// shown is answered.
    #[arg(long, value_name = "ID", requires = "answer")]
    pub prompt: Option<String>,
    /// Configuration file [default: ~/.config/clawmux/config.toml
    /// ($XDG_CONFIG_HOME), or $CLAWMUX_HOME/config.toml when CLAWMUX_HOME is
    /// set]. The state directory is $CLAWMUX_HOME [default:
    /// ~/.local/state/clawmux]. With a `serve` running there, the run is
    /// its, under its config.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Agent for a project created by this run: `claude`, `sim`, or a command line.
    #[arg(long)]
    pub agent: Option<String>,
    /// Create the project if there is none of that name (a run makes the
    /// very first project without it; any other name it does not know is
    /// refused with the nearest known one, exit 2).
    #[arg(long)]
    pub new: bool,
    /// The language of what clawmux says (and of the cards' fallback text
    /// with --format card): zh_cn or en_us [default: from LANG].
    #[arg(long, value_name = "LOCALE")]
    pub lang: Option<String>,
    /// The message, e.g. `/gsd:progress`.
    #[arg(last = true)]
    pub text: Vec<String>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    // Parsed here, not by clap, so the error reads as every other of ours.
    let project = ProjectName::parse(&args.project).map_err(|e| UsageError(e.to_string()))?;
    let prompt = (args.prompt.as_deref())
        .map(|id| {
            id.parse::<ApprovalId>()
                .map_err(|e| UsageError(format!("--prompt {id:?}: {e}")))
        })
        .transpose()?;
    let request = match (&args.answer, args.text.is_empty()) {
        (Some(key), true) => Request::Answer {
            key: key.clone(),
            prompt,
        },
        (None, false) => Request::Message(args.text.join(" ")),
        (Some(_), false) => {
            return Err(UsageError("give either --answer KEY or -- TEXT, not both".into()).into());
        }
        (None, true) => {
            return Err(UsageError(
                "nothing to send: add -- \"/gsd:progress\" (or --answer KEY)".into(),
            )
            .into());
        }
    };
    let lang = match args.lang.as_deref() {
        Some(code) => Lang::parse(code).map_err(|e| UsageError(e.to_string()))?,
        None => Lang::from_env(),
    };
    let state_dir = store::state_dir();
    let config = load_config(args.config.as_deref(), &state_dir, args.agent.as_deref())?;
    let profiles = Profiles::load(config.agent.profiles_file.as_deref())
        .map_err(|e| UsageError(e.to_string()))?;
    let ask = RunAsk {
        project,
        request,
        agent: args.agent,
        create: args.new,
        lang,
    };
    let sim_agent = sim_agent_command()?;
    let runtime = tokio::runtime::Runtime::new()?;
    let waiting = Waiting::start(&runtime, ask.project.as_str(), lang);
    let result = runtime.block_on(async {
        let on_progress = |summary: &str| waiting.progress(summary);
        match owner(&state_dir, lang).await? {
            Owner::Serve(stream) => Ok(socket::ask(stream, &ask, on_progress).await?),
            Owner::This(lock) => {
                // Compiled here, not before: a run through `serve` never
                // uses it.
                (profiles.get(&config.agent.profile)).map_err(|e| UsageError(e.to_string()))?;
                let one_shot = OneShot {
                    config: Arc::new(config),
                    profiles,
                    state_dir: state_dir.clone(),
                    sim_agent,
                    lock,
                };
                Ok(one_shot::run(one_shot, ask, on_progress).await?)
            }
        }
    });
    waiting.done(&runtime);
    // Dropping a runtime waits for its blocking tasks without limit.
    runtime.shutdown_timeout(SHUTDOWN_GRACE);
    let result: anyhow::Result<RunResult> = result;
    let outcome = result?.map_err(UsageError)?;
    out!("{}", render(&outcome, args.format, lang));
    Ok(match outcome.status {
        Status::Completed | Status::Approval => ExitCode::SUCCESS,
        Status::Interrupted | Status::Error | Status::Timeout | Status::Failed => ExitCode::FAILURE,
    })
}

/// How long the end of a run waits for the runtime's blocking tasks.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);
/// How long a run waits for the run socket of a `serve` that holds the
/// state directory (a starting serve listens within milliseconds).
const SERVE_SOCKET_WAIT: Duration = Duration::from_secs(5);
/// How often a run waiting for the state directory looks again.
const OWNER_POLL: Duration = Duration::from_millis(100);

/// Who runs the run.
enum Owner {
    /// The `serve` listening on its socket.
    Serve(tokio::net::UnixStream),
    /// This process, owning the state directory meanwhile.
    This(StateLock),
}

/// The `serve` that listens in `state_dir`, else the state directory
/// itself once no one (another run, a `serve` starting) owns it.
async fn owner(state_dir: &Path, lang: Lang) -> anyhow::Result<Owner> {
    let mut told = false;
    let started = Instant::now();
    loop {
        if let Some(stream) = socket::connect(state_dir).await {
            return Ok(Owner::Serve(stream));
        }
        let taken = StateLock::try_take(state_dir)
            .with_context(|| format!("cannot lock the state directory {}", state_dir.display()))?;
        if let Some(lock) = taken {
            return Ok(Owner::This(lock));
        }
        // A serve that holds the directory and does not answer on its
        // socket long after a start takes: waited for, it never ends.
        if let Holder::Serve { pid } = StateLock::holder(state_dir)
            && started.elapsed() >= SERVE_SOCKET_WAIT
        {
            let (pid, dir) = (pid.to_string(), state_dir.display().to_string());
            let socket = socket::socket_path(state_dir).display().to_string();
            let who = Msg::OwnerPid.with(&[("pid", &pid)]);
            let who = who.get(lang);
            let args = [
                ("who", who),
                ("dir", &dir),
                ("socket", &socket),
                ("pid", &pid),
            ];
            anyhow::bail!(Msg::ServeWithoutSocket.with(&args).get(lang).to_string());
        }
        if !told {
            told = true;
            let dir = state_dir.display();
            // A run, or a serve that could not listen for runs.
            eprintln!("clawmux: another clawmux is using the state directory {dir}; waiting");
        }
        tokio::time::sleep(OWNER_POLL).await;
    }
}

/// What `run` shows on stderr while it waits, so a minutes-long phase is
/// not a silent terminal: on a terminal one line redrawn in place (a
/// spinner, the seconds, the latest progress), otherwise one plain line
/// per progress step (a log or a relaying program reads whole lines).
struct Waiting {
    latest: Arc<Mutex<String>>,
    ticker: Option<tokio::task::JoinHandle<()>>,
    terminal: bool,
    /// The terminal's language (`LANG`), for the lines clawmux writes.
    lang: Lang,
    project: String,
    /// Whether the "sent" line was written (off a terminal).
    sent: std::sync::atomic::AtomicBool,
}

/// How often the terminal line is redrawn.
const SPINNER_TICK: Duration = Duration::from_millis(125);
const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

impl Waiting {
    fn start(runtime: &tokio::runtime::Runtime, project: &str, lang: Lang) -> Waiting {
        let latest = Arc::new(Mutex::new(String::new()));
        let terminal = std::io::stderr().is_terminal();
        let ticker = terminal.then(|| {
            let (latest, project) = (latest.clone(), project.to_string());
            runtime.spawn(async move {
                let started = Instant::now();
                let mut tick = tokio::time::interval(SPINNER_TICK);
                for frame in SPINNER.iter().cycle() {
                    tick.tick().await;
                    let latest = latest.lock().map(|l| l.clone()).unwrap_or_default();
                    let secs = started.elapsed().as_secs();
                    let sep = if latest.is_empty() { "" } else { " · " };
                    let secs = secs.to_string();
                    let working = Msg::RunWorking.with(&[("project", &project), ("secs", &secs)]);
                    let working = working.get(lang);
                    eprint!("\r\x1b[2K{frame} {working}{sep}{latest}");
                }
            })
        });
        Waiting {
            latest,
            ticker,
            terminal,
            lang,
            project: project.to_string(),
            sent: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn progress(&self, summary: &str) {
        if let Ok(mut latest) = self.latest.lock() {
            latest.clear();
            latest.push_str(summary);
        }
        // "Sent" once the command's first progress shows it was typed: a
        // refused run (a misspelt project, a prompt that changed) types
        // nothing and says only why.
        if !self.terminal && !self.sent.swap(true, std::sync::atomic::Ordering::Relaxed) {
            let sent = Msg::RunSent.with(&[("project", &self.project)]);
            eprintln!("{}", sent.get(self.lang));
        }
        if !self.terminal {
            let line = Msg::RunProgress.with(&[("summary", summary)]);
            eprintln!("{}", line.get(self.lang));
        }
    }

    /// Stops the spinner and clears its line before the result is printed.
    fn done(self, runtime: &tokio::runtime::Runtime) {
        if let Some(ticker) = self.ticker {
            ticker.abort();
            // Waits out a frame being drawn, so none follows the clearing.
            let _ = runtime.block_on(ticker);
            eprint!("\r\x1b[2K");
        }
    }
}

/// The outcome in `format`, in `lang`. Every format carries the same
/// content: the text ones are renderings of the cards, whose JSON carries
/// both languages with `lang`'s as the fallback text.
pub fn render(outcome: &Outcome, format: Format, lang: Lang) -> String {
    if format == Format::Json {
        return serde_json::to_string_pretty(outcome).unwrap_or_default();
    }
    let mut cards = outcome.cards();
    if format != Format::Card {
        // A closed panel (the screen at the end) can't be opened in a
        // shell or a relayed text: its header alone would be an empty panel.
        for card in &mut cards {
            (card.blocks).retain(|b| !matches!(b, Block::Folded { .. }));
        }
    }
    match format {
        Format::Card => {
            let cards: Vec<serde_json::Value> = (cards.iter())
                .map(|c| {
                    with_fallback(
                        &serde_json::to_value(Card::from(c)).unwrap_or_default(),
                        lang,
                    )
                })
                .collect();
            serde_json::to_string_pretty(&cards).unwrap_or_default()
        }
        Format::Markdown => cards
            .iter()
            .map(|c| c.to_markdown_in(lang))
            .collect::<Vec<_>>()
            .join("\n\n"),
        _ => cards
            .iter()
            .map(|c| plain(&c.to_text_in(lang)))
            .collect::<Vec<_>>()
            .join("\n\n"),
    }
}

/// A card's text without markdown: no code fences, no bold markers (for
/// channels that would show them as characters).
fn plain(text: &str) -> String {
    let lines: Vec<String> = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("```"))
        .map(|l| l.replace("**", ""))
        .collect();
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clawmux::bridge::project::Approval;
    use clawmux::store::log_event::RunDetection;
    use clawmux::store::state::{ApprovalKind, ApprovalOption};

    fn outcome(status: Status) -> Outcome {
        Outcome {
            status,
            project: "shop".parse().unwrap(),
            command: "/gsd:plan-phase 2".into(),
            output: "⏺ Plans verified [3/3]\n  Created 2 plans for phase 2 <b>*x*</b>\n".into(),
            screen: (status == Status::Completed)
                .then(|| "⏺ Plans verified [3/3]\n──────\n❯ \n──────\n  ? for shortcuts".into()),
            seconds: 4,
            detections: vec![RunDetection::Progress {
                percent: None,
                summary: "2/3".into(),
            }],
            approval: (status == Status::Approval).then(|| Approval {
                id: "a1".parse().unwrap(),
                session: clawmux::store::ids::session("cm-shop"),
                pane: clawmux::control::PaneId(0),
                kind: ApprovalKind::Permission,
                question: "Do you want to proceed?".into(),
                body: "Bash command\n  make check".into(),
                options: vec![
                    ApprovalOption {
                        key: "1".into(),
                        label: "Yes".into(),
                        description: None,
                        press: None,
                        own_words: false,
                    },
                    ApprovalOption {
                        key: "3".into(),
                        label: "No".into(),
                        description: None,
                        press: None,
                        own_words: false,
                    },
                ],
            }),
            error: None,
        }
    }

    /// Every format carries the same facts: output lines, or the question,
    /// every option and how to answer.
    #[test]
    fn formats_side_by_side() {
        let done = outcome(Status::Completed);
        for format in [Format::Markdown, Format::Plain, Format::Card, Format::Json] {
            let text = render(&done, format, Lang::En);
            for needle in [
                "Plans verified [3/3]",
                "Created 2 plans for phase 2",
                "shop",
                "/gsd:plan-phase 2",
            ] {
                assert!(
                    text.contains(needle),
                    "{format:?} lacks {needle:?}:\n{text}"
                );
            }
        }
        let plain = render(&done, Format::Plain, Lang::En);
        assert!(
            !plain.contains("```") && !plain.contains("**"),
            "plain has no markup:\n{plain}"
        );
        let cards: serde_json::Value =
            serde_json::from_str(&render(&done, Format::Card, Lang::En)).unwrap();
        assert_eq!(cards[0]["schema"], "2.0");
        // The screen at the end rides along closed on the card, and is only
        // named in the text formats.
        let panel = &cards[0]["body"]["elements"][1];
        assert_eq!(panel["tag"], "collapsible_panel");
        assert_eq!(panel["expanded"], false);
        let shown = panel["elements"][0]["content"].as_str().unwrap();
        assert!(shown.ends_with("? for shortcuts\n```"), "{shown}");
        for format in [Format::Markdown, Format::Plain] {
            let text = render(&done, format, Lang::En);
            assert!(
                !text.contains("▸") && !text.contains("Screen") && !text.contains("for shortcuts"),
                "{format:?}:\n{text}"
            );
        }
        let json: serde_json::Value =
            serde_json::from_str(&render(&done, Format::Json, Lang::En)).unwrap();
        assert_eq!(json["status"], "completed");
        assert!(json["screen"].as_str().unwrap().ends_with("for shortcuts"));
        assert_eq!(json["detections"][0]["kind"], "progress");

        let asking = outcome(Status::Approval);
        for format in [Format::Markdown, Format::Plain, Format::Card, Format::Json] {
            let text = render(&asking, format, Lang::En);
            for needle in ["Do you want to proceed?", "Yes", "No"] {
                assert!(
                    text.contains(needle),
                    "{format:?} lacks {needle:?}:\n{text}"
                );
            }
            if format != Format::Json {
                assert!(
                    text.contains("--answer 1|3"),
                    "{format:?} says how to answer:\n{text}"
                );
            }
        }
        let json: serde_json::Value =
            serde_json::from_str(&render(&asking, Format::Json, Lang::En)).unwrap();
        assert_eq!(json["approval"]["options"][1]["key"], "3");
    }

    /// The `--format json` contract the OpenClaw skill parses, byte for
    /// byte as it was printed before the output got its own serde types:
    /// field order, `null`s and the detections' alphabetical keys included.
    #[test]
    fn json_output_is_byte_compatible() {
        let completed = r#"{
  "status": "completed",
  "project": "shop",
  "command": "/gsd:plan-phase 2",
  "output": "⏺ Plans verified [3/3]\n  Created 2 plans for phase 2 <b>*x*</b>\n",
  "screen": "⏺ Plans verified [3/3]\n──────\n❯ \n──────\n  ? for shortcuts",
  "seconds": 4,
  "detections": [
    {
      "kind": "progress",
      "percent": null,
      "summary": "2/3"
    }
  ],
  "approval": null,
  "error": null
}"#;
        let approval = r#"{
  "status": "approval",
  "project": "shop",
  "command": "/gsd:plan-phase 2",
  "output": "⏺ Plans verified [3/3]\n  Created 2 plans for phase 2 <b>*x*</b>\n",
  "seconds": 4,
  "detections": [
    {
      "kind": "progress",
      "percent": null,
      "summary": "2/3"
    }
  ],
  "approval": {
    "id": "a1",
    "session": "cm-shop",
    "pane": "%0",
    "kind": "permission",
    "question": "Do you want to proceed?",
    "body": "Bash command\n  make check",
    "options": [
      {
        "key": "1",
        "label": "Yes"
      },
      {
        "key": "3",
        "label": "No"
      }
    ]
  },
  "error": null
}"#;
        assert_eq!(
            render(&outcome(Status::Completed), Format::Json, Lang::En),
            completed
        );
        assert_eq!(
            render(&outcome(Status::Approval), Format::Json, Lang::En),
            approval
        );
        // The contract reads back into the same types.
        for text in [completed, approval] {
            let back: Outcome = serde_json::from_str(text).unwrap();
            assert_eq!(render(&back, Format::Json, Lang::En), text);
        }
    }
}
