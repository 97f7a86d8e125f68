//! Pattern profiles: the TOML schema, the built-in defaults
//! (`profiles.toml`, embedded), user overrides, `extends` resolution and
//! compilation into regexes. A bad file or `extends` is reported at load
//! time; a bad pattern when its profile is first compiled (or by
//! [`Profiles::check`]), with the profile and field it came from.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use regex::{Regex, RegexSet};
use serde::Deserialize;

use super::ApprovalKind;
use super::answer_rows::{AnswerRows, AnswerRowsSpec};
use super::footer_mode::{FooterModes, FooterModesSpec};
use super::lines::{LineHit, LineMatcher, PatternError, regex, regex_set};
use super::marks::Marks;
use clawmux_pane::signal::AgentState;

/// The built-in profiles, also the reference for the file format.
pub const DEFAULT_PROFILES: &str = include_str!("profiles.toml");

/// Largest profiles file read: a hand-written file is a few KiB; anything
/// bigger (or endless, `/dev/zero`) is refused before it fills memory.
pub const MAX_PROFILES_BYTES: u64 = 1024 * 1024;

/// How deep `extends` chains may go: a guard against cycles.
const MAX_EXTENDS_DEPTH: usize = 16;

/// A profile could not be loaded or compiled.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("cannot read profiles file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("profiles file {path} is larger than {MAX_PROFILES_BYTES} bytes: not a profiles file")]
    TooLarge { path: PathBuf },
    #[error("profiles file {origin} is not valid: {source}")]
    Toml {
        origin: String,
        source: Box<toml::de::Error>,
    },
    #[error(transparent)]
    Pattern(#[from] PatternError),
    #[error("profile {profile:?} extends unknown profile {parent:?}")]
    UnknownParent { profile: String, parent: String },
    #[error("profile {profile:?}: `extends` chain is longer than {MAX_EXTENDS_DEPTH} (a cycle?)")]
    ExtendsTooDeep { profile: String },
    #[error("unknown profile {name:?} (known: {known})")]
    UnknownProfile { name: String, known: String },
}

/// One approval rule as written in TOML.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleSpec {
    kind: ApprovalKind,
    header: String,
    #[serde(default = "yes")]
    menu: bool,
    #[serde(default)]
    options: Vec<super::ApprovalOption>,
}

fn yes() -> bool {
    true
}

/// Where a turn's answer is read (a profile's `answer`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerSource {
    /// The turn's finished lines (Claude Code's `●` blocks, a shell's
    /// output); a turn-end hook's text fills what the screen lost.
    #[default]
    Lines,
    /// The settled screen at the turn's end: the line log of an agent that
    /// redraws its answer as it streams holds every frame of it (measured
    /// against a model streaming 1–8 characters 20–60 ms apart: Codex's
    /// held every frame and the answer again whole, Aider's its spinner
    /// frames and the answer twice, Gemini CLI's every spinner frame).
    SettledScreen,
    /// The settled screen, the agent's turn-end hook giving the answer's
    /// text (Codex's `notify`/`Stop`, Gemini CLI's `AfterAgent`): the hook
    /// never ends the turn, the screen does.
    Hook,
    /// The settled screen, the reply Aider wrote to its chat history file
    /// giving the answer's text.
    AiderHistory,
    /// The turn's finished lines, the answer's text from the session
    /// transcript the agent's turn-end hook names (Claude Code's JSONL
    /// `transcript_path`), else the hook's own text.
    Transcript,
}

impl AnswerSource {
    /// Whether the result is read off the settled screen.
    pub fn settled(self) -> bool {
        !matches!(self, AnswerSource::Lines | AnswerSource::Transcript)
    }
}

/// One profile as written in TOML: every field optional so that a user
/// file can override just one of them.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileSpec {
    extends: Option<String>,
    status_rows: Option<usize>,
    approval_rows: Option<usize>,
    busy: Option<Vec<String>>,
    idle: Option<Vec<String>>,
    input: Option<String>,
    error_keywords: Option<Vec<String>>,
    errors: Option<Vec<String>>,
    error_guards: Option<Vec<String>>,
    progress: Option<Vec<String>>,
    spinner: Option<Vec<String>>,
    chrome: Option<Vec<String>>,
    retry: Option<String>,
    turn_errors: Option<Vec<String>>,
    turn_interrupted: Option<Vec<String>>,
    turn_rejected: Option<Vec<String>>,
    prompt_row: Option<String>,
    state_sequence: Option<bool>,
    state_app: Option<String>,
    start_states: Option<Vec<AgentState>>,
    turn_closed: Option<String>,
    question: Option<String>,
    option_key: Option<String>,
    title_states: Option<Vec<TitleStateSpec>>,
    notification_states: Option<Vec<NotificationStateSpec>>,
    stalled: Option<String>,
    stalled_seconds: Option<u64>,
    turn_completed: Option<String>,
    turn_retried: Option<String>,
    stalled_attempts: Option<u64>,
    cells: Option<bool>,
    input_at_cursor: Option<bool>,
    answer: Option<AnswerSource>,
    start_seconds: Option<u64>,
    approvals: Option<Vec<RuleSpec>>,
    footer_modes: Option<FooterModesSpec>,
    marks: Option<Marks>,
    answer_rows: Option<AnswerRowsSpec>,
}

/// A window title that says the agent's state, as written in TOML.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct TitleStateSpec {
    title: String,
    state: AgentState,
}

/// A desktop notification that says the agent's state, as written in
/// TOML: `notification` is searched in its title and body, joined by a
/// newline.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct NotificationStateSpec {
    notification: String,
    state: AgentState,
}

impl ProfileSpec {
    /// `self` over `base`: given fields win, approvals merge by kind.
    fn over(&self, base: &ProfileSpec) -> ProfileSpec {
        let approvals = match (&base.approvals, &self.approvals) {
            (Some(b), Some(o)) => {
                let mut merged: Vec<RuleSpec> = b
                    .iter()
                    .filter(|r| !o.iter().any(|x| x.kind == r.kind))
                    .cloned()
                    .collect();
                merged.extend(o.iter().cloned());
                Some(merged)
            }
            (b, o) => o.clone().or_else(|| b.clone()),
        };
        ProfileSpec {
            extends: None,
            status_rows: self.status_rows.or(base.status_rows),
            approval_rows: self.approval_rows.or(base.approval_rows),
            busy: self.busy.clone().or_else(|| base.busy.clone()),
            idle: self.idle.clone().or_else(|| base.idle.clone()),
            input: self.input.clone().or_else(|| base.input.clone()),
            error_keywords: self
                .error_keywords
                .clone()
                .or_else(|| base.error_keywords.clone()),
            errors: self.errors.clone().or_else(|| base.errors.clone()),
            error_guards: self
                .error_guards
                .clone()
                .or_else(|| base.error_guards.clone()),
            progress: self.progress.clone().or_else(|| base.progress.clone()),
            spinner: self.spinner.clone().or_else(|| base.spinner.clone()),
            chrome: self.chrome.clone().or_else(|| base.chrome.clone()),
            retry: self.retry.clone().or_else(|| base.retry.clone()),
            turn_errors: self
                .turn_errors
                .clone()
                .or_else(|| base.turn_errors.clone()),
            turn_interrupted: self
                .turn_interrupted
                .clone()
                .or_else(|| base.turn_interrupted.clone()),
            turn_rejected: self
                .turn_rejected
                .clone()
                .or_else(|| base.turn_rejected.clone()),
            prompt_row: self.prompt_row.clone().or_else(|| base.prompt_row.clone()),
            state_sequence: self.state_sequence.or(base.state_sequence),
            state_app: self.state_app.clone().or_else(|| base.state_app.clone()),
            start_states: (self.start_states.clone()).or_else(|| base.start_states.clone()),
            turn_closed: (self.turn_closed.clone()).or_else(|| base.turn_closed.clone()),
            question: self.question.clone().or_else(|| base.question.clone()),
            option_key: self.option_key.clone().or_else(|| base.option_key.clone()),
            title_states: (self.title_states.clone()).or_else(|| base.title_states.clone()),
            notification_states: (self.notification_states.clone())
                .or_else(|| base.notification_states.clone()),
            stalled: self.stalled.clone().or_else(|| base.stalled.clone()),
            stalled_seconds: self.stalled_seconds.or(base.stalled_seconds),
            turn_completed: (self.turn_completed.clone()).or_else(|| base.turn_completed.clone()),
            turn_retried: (self.turn_retried.clone()).or_else(|| base.turn_retried.clone()),
            stalled_attempts: self.stalled_attempts.or(base.stalled_attempts),
            cells: self.cells.or(base.cells),
            input_at_cursor: self.input_at_cursor.or(base.input_at_cursor),
            answer: self.answer.or(base.answer),
            footer_modes: (self.footer_modes.clone()).or_else(|| base.footer_modes.clone()),
            marks: self.marks.clone().or_else(|| base.marks.clone()),
            answer_rows: (self.answer_rows.clone()).or_else(|| base.answer_rows.clone()),
            start_seconds: self.start_seconds.or(base.start_seconds),
            approvals,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfilesFile {
    #[serde(default)]
    profiles: BTreeMap<String, ProfileSpec>,
}

/// A compiled approval rule.
#[derive(Debug)]
pub(crate) struct ApprovalRule {
    pub(crate) kind: ApprovalKind,
    pub(crate) header: Regex,
    pub(crate) menu: bool,
    pub(crate) options: Vec<super::ApprovalOption>,
}

/// A compiled profile, shared by every detector that uses it.
#[derive(Debug)]
pub struct Profile {
    pub(crate) name: String,
    /// Rows at the bottom of the screen where busy/idle markers are looked for.
    pub(crate) status_rows: usize,
    /// Rows at the bottom of the screen where approval prompts are looked for.
    pub(crate) approval_rows: usize,
    pub(crate) busy: RegexSet,
    pub(crate) idle: RegexSet,
    /// The input box's text (group 1), where the profile has one.
    pub(crate) input: Option<Regex>,
    pub(crate) lines: LineMatcher,
    pub(crate) approvals: Vec<ApprovalRule>,
    /// The agent's spinner row while it works (not its after-turn summary).
    /// A profile with spinner patterns reads busy and idle from the screen's
    /// structure (spinner row, input box, footer) and dialogs from it too.
    pub(crate) spinner: RegexSet,
    /// Rows the agent draws around its answer, never part of it (its
    /// status line, spinner frames, an empty input row, turn summaries,
    /// hook notices), matched on the row trimmed.
    pub(crate) chrome: RegexSet,
    /// A spinner row saying the agent retries (groups `attempt`, `of`).
    pub(crate) retry: Option<Regex>,
    /// Rows of the turn's own output that mean the turn failed.
    pub(crate) turn_errors: RegexSet,
    /// Rows that mean the user stopped the turn (answered No, pressed Esc).
    pub(crate) turn_interrupted: RegexSet,
    /// Rows that mean the agent refused the command itself.
    pub(crate) turn_rejected: RegexSet,
    /// The input row of an agent drawn without Claude Code's input box
    /// (Codex's `› `): the last match is the input, the rows from the
    /// match before it are the last turn (searched with `turn_*`).
    pub(crate) prompt_row: Option<Regex>,
    /// The agent reports its state with OSC 7501 (Codex): no turn of it
    /// ends before it said it worked on it.
    pub(crate) state_sequence: bool,
    /// The `app=` of the OSC 7501 states the agent writes itself
    /// (`codex`): a state sequence naming another app, or met in a pane
    /// whose profile names none (a shell), is text some program printed,
    /// not the agent's word, and is ignored.
    pub(crate) state_app: Option<String>,
    /// The states the agent says, in this order, while it starts (Codex:
    /// `idle`): a new agent is ready for a command once it said them and
    /// its idle screen and its states stayed quiet for `START_QUIET`, so
    /// nothing it says while it starts is taken for the first command's
    /// work or end. None: its screen alone says it is ready.
    pub(crate) start_states: Vec<AgentState>,
    /// A row that closes every turn the agent finished (Codex's `Worked
    /// for 5s`): an in-band `done` is believed only once the last turn
    /// shows it or one of `turn_errors`; until then the state it replaced
    /// stands (see `Detector`).
    pub(crate) turn_closed: Option<Regex>,
    /// A dialog's question row, where the paragraph above the menu is not
    /// it (Codex puts the command there).
    pub(crate) question: Option<Regex>,
    /// The key an option's label names (group `key`: `(y)`, `(esc)`),
    /// pressed instead of its number.
    pub(crate) option_key: Option<Regex>,
    /// Window titles (OSC 0/2) that say the agent's state, taken as its
    /// own state sequence (Gemini: `✦  Working…`, `◇  Ready`).
    pub(crate) title_states: Vec<(Regex, AgentState)>,
    /// Desktop notifications (OSC 777, OSC 9) that say the agent's state,
    /// searched in `title\nbody` and taken as its state sequence like a
    /// title (Gemini: `Gemini CLI needs your attention`, `Gemini CLI
    /// session complete`).
    pub(crate) notification_states: Vec<(Regex, AgentState)>,
    /// The busy row's own count of seconds without an answer (group
    /// `seconds`), and how many make the turn "stuck": an agent that
    /// retries an API error for ever shows nothing else.
    pub(crate) stalled: Option<(Regex, u64)>,
    /// The busy row's count of attempts at a failing call (group
    /// `attempt` of `stalled`), and how many make the turn "stuck"
    /// (OpenCode shows `[retrying in 8s attempt #3]`, no seconds waited).
    pub(crate) stalled_attempts: u64,
    /// The screen is read with its colours (see `cells`) and drawn in
    /// panels with a left bar (see `panel`): OpenCode.
    pub(crate) cells: bool,
    /// The agent's input is the row its cursor is on (a line-mode program
    /// such as Aider): a line it took has the cursor below it, though its
    /// text is still the last on screen.
    pub(crate) input_at_cursor: bool,
    /// Where a turn's answer is read.
    pub answer: AnswerSource,
    /// Longest wait for the agent's first idle screen before a command
    /// is typed anyway, when the caller's default is too short (OpenCode
    /// starts in 15 to 35 s on a loaded machine, 80 s with a plugin; keys
    /// typed before its screen is drawn are lost).
    pub(crate) start_wait: Option<std::time::Duration>,
    /// The row every finished turn of an agent drawn without an input box
    /// prints (Aider's `Tokens: … sent, … received.`): a turn without it
    /// and without an error row was interrupted.
    pub(crate) turn_completed: Option<Regex>,
    /// The row an agent prints after an error it will try again (Aider's
    /// `Retrying in 0.2 seconds...`): an error row followed by it is the
    /// agent's retrying status, not the turn's error; only the error it
    /// gives up on is.
    pub(crate) turn_retried: Option<Regex>,
    /// The modes its agent's footer shows (none for most agents).
    pub(crate) footer_modes: FooterModes,
    /// The glyphs its rows start with (none for most agents).
    pub(crate) marks: Marks,
    /// How it draws its answer's blocks (none for most agents).
    pub(crate) answer_rows: AnswerRows,
}

impl Profile {
    /// The profile's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether `row` is the profile's row closing a finished turn (Claude
    /// Code's `✻ Cooked for 1s · done 4:04 PM`, its `turn_closed`).
    pub(crate) fn closes_turn(&self, row: &str) -> bool {
        (self.turn_closed.as_ref()).is_some_and(|closed| closed.is_match(row.trim_start()))
    }

    /// How it draws its answer's blocks (see [`AnswerRows`]).
    pub fn answer_rows(&self) -> &AnswerRows {
        &self.answer_rows
    }

    /// Whether `row` is one the agent draws around its answer, never part
    /// of it: its `chrome`, its spinner, or the row closing its turn.
    pub fn is_chrome(&self, row: &str) -> bool {
        let row = row.trim();
        self.chrome.is_match(row)
            || self.spinner.is_match(row)
            || self.turn_closed.as_ref().is_some_and(|re| re.is_match(row))
    }

    /// Whether its screens are read with their colours and drawn in panels
    /// with a left bar (`cells`: OpenCode).
    pub fn reads_cells(&self) -> bool {
        self.cells
    }

    /// How long its agent takes to start before keys reach it
    /// (`start_seconds`), if the profile says.
    pub fn start_wait(&self) -> Option<std::time::Duration> {
        self.start_wait
    }

    /// Whether its agent's footer shows a mode (`footer_modes`).
    pub fn reads_footer_mode(&self) -> bool {
        !self.footer_modes.is_empty()
    }

    /// The mode the footer `rows` show, by the name the profile gives it.
    pub fn footer_mode<'a>(&self, rows: impl IntoIterator<Item = &'a str>) -> Option<String> {
        self.footer_modes.of_footer(rows)
    }

    /// Runs every line pattern over `batch` (lines joined by `\n`) in one
    /// pass and calls `hit(line_index, what)` for each matching line.
    pub fn scan_lines(&self, batch: &str, hit: impl FnMut(usize, LineHit)) {
        self.lines.scan(batch, hit);
    }

    /// Every line pattern (errors with the keyword pattern, guards,
    /// progress, menu-less approval headers), as compiled.
    pub fn line_patterns(&self) -> Vec<&str> {
        self.lines.patterns().collect()
    }
}

/// Rows searched for busy/idle markers when a profile does not say.
const DEFAULT_STATUS_ROWS: usize = 12;
/// Seconds without an answer after which a `stalled` busy row is "stuck"
/// when a profile does not say: a model that streams nothing for a
/// minute is rarely just thinking.
const DEFAULT_STALLED_SECONDS: u64 = 60;
/// Attempts at a failing call after which a `stalled` busy row is
/// "stuck" when a profile does not say: the third try failing is rarely
/// a passing hiccup.
const DEFAULT_STALLED_ATTEMPTS: u64 = 3;
/// Rows searched for approval prompts when a profile does not say.
const DEFAULT_APPROVAL_ROWS: usize = 20;

/// The loaded profiles by name, each compiled on first use.
///
/// Why lazily: compiling one profile's patterns takes 5 to 8 ms (Unicode
/// classes under `(?i)`), all seven about 40 ms, and a `clawmux run` uses
/// one. Clones share the compiled profiles.
#[derive(Debug, Clone)]
pub struct Profiles {
    by_name: Arc<BTreeMap<String, LazyProfile>>,
}

/// A profile's resolved spec and, once compiled, the profile.
#[derive(Debug)]
struct LazyProfile {
    spec: ProfileSpec,
    compiled: OnceLock<Arc<Profile>>,
}

impl Profiles {
    /// The built-in profiles (`shell`, `claude`, `gsd`).
    pub fn defaults() -> Result<Self, ProfileError> {
        Self::load(None)
    }

    /// The built-in profiles, overridden and extended by the TOML file at
    /// `user` when given.
    pub fn load(user: Option<&Path>) -> Result<Self, ProfileError> {
        let user = match user {
            Some(path) => Some((path.display().to_string(), read_capped(path)?)),
            None => None,
        };
        Self::from_toml_layers(user.as_ref().map(|(o, s)| (o.as_str(), s.as_str())))
    }

    /// [`Profiles::load`], then [`Profiles::check`]: for a process that
    /// runs long, or one whose job is to try a profiles file.
    pub fn load_checked(user: Option<&Path>) -> Result<Self, ProfileError> {
        let profiles = Self::load(user)?;
        profiles.check()?;
        Ok(profiles)
    }

    /// The defaults with an optional user layer given as TOML text
    /// (`origin` names it in errors).
    pub fn from_toml_layers(user: Option<(&str, &str)>) -> Result<Self, ProfileError> {
        let mut specs = parse("built-in profiles.toml", DEFAULT_PROFILES)?;
        if let Some((origin, text)) = user {
            for (name, spec) in parse(origin, text)? {
                let merged = match specs.get(&name) {
                    Some(base) => {
                        let mut m = spec.over(base);
                        m.extends = spec.extends.clone().or_else(|| base.extends.clone());
                        m
                    }
                    None => spec,
                };
                specs.insert(name, merged);
            }
        }
        let mut by_name = BTreeMap::new();
        for name in specs.keys() {
            let spec = resolve(name, &specs)?;
            let compiled = OnceLock::new();
            by_name.insert(name.clone(), LazyProfile { spec, compiled });
        }
        Ok(Profiles {
            by_name: Arc::new(by_name),
        })
    }

    /// The profile called `name`, compiled now if it was not yet (a bad
    /// pattern is an error here, every time it is asked for).
    pub fn get(&self, name: &str) -> Result<Arc<Profile>, ProfileError> {
        let lazy = self
            .by_name
            .get(name)
            .ok_or_else(|| ProfileError::UnknownProfile {
                name: name.to_owned(),
                known: self.names().collect::<Vec<_>>().join(", "),
            })?;
        if let Some(profile) = lazy.compiled.get() {
            return Ok(profile.clone());
        }
        let profile = Arc::new(compile(name, &lazy.spec)?);
        Ok(lazy.compiled.get_or_init(|| profile).clone())
    }

    /// Compiles every profile, so that a bad pattern is found now rather
    /// than when a project first uses its profile.
    pub fn check(&self) -> Result<(), ProfileError> {
        self.names().try_for_each(|name| self.get(name).map(drop))
    }

    /// Every profile name, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.by_name.keys().map(String::as_str)
    }
}

/// The file at `path` as text, refused past [`MAX_PROFILES_BYTES`].
fn read_capped(path: &Path) -> Result<String, ProfileError> {
    use std::io::Read;
    let read = |source| ProfileError::Read {
        path: path.to_owned(),
        source,
    };
    let file = std::fs::File::open(path).map_err(read)?;
    let mut bytes = Vec::new();
    file.take(MAX_PROFILES_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(read)?;
    if bytes.len() as u64 > MAX_PROFILES_BYTES {
        return Err(ProfileError::TooLarge {
            path: path.to_owned(),
        });
    }
    String::from_utf8(bytes).map_err(|e| {
        read(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not UTF-8: {e}"),
        ))
    })
}

fn parse(origin: &str, text: &str) -> Result<BTreeMap<String, ProfileSpec>, ProfileError> {
    toml::from_str::<ProfilesFile>(text)
        .map(|f| f.profiles)
        .map_err(|source| ProfileError::Toml {
            origin: origin.to_owned(),
            source: Box::new(source),
        })
}

/// Follows `extends` to a flat spec.
fn resolve(name: &str, specs: &BTreeMap<String, ProfileSpec>) -> Result<ProfileSpec, ProfileError> {
    let mut chain = Vec::new();
    let mut current = name;
    loop {
        let spec = &specs[current];
        chain.push(spec);
        let Some(parent) = &spec.extends else { break };
        if chain.len() > MAX_EXTENDS_DEPTH {
            return Err(ProfileError::ExtendsTooDeep {
                profile: name.to_owned(),
            });
        }
        if !specs.contains_key(parent) {
            return Err(ProfileError::UnknownParent {
                profile: current.to_owned(),
                parent: parent.clone(),
            });
        }
        current = parent;
    }
    Ok(chain
        .iter()
        .rev()
        .fold(ProfileSpec::default(), |acc, spec| spec.over(&acc)))
}

fn compile(name: &str, spec: &ProfileSpec) -> Result<Profile, ProfileError> {
    let list = |l: &Option<Vec<String>>| l.clone().unwrap_or_default();
    let approvals: Vec<ApprovalRule> = spec
        .approvals
        .iter()
        .flatten()
        .map(|r| {
            Ok(ApprovalRule {
                kind: r.kind,
                header: regex(name, &format!("approvals.{}.header", r.kind), &r.header)?,
                menu: r.menu,
                options: r.options.clone(),
            })
        })
        .collect::<Result<_, ProfileError>>()?;
    let headers: Vec<(usize, String)> = approvals
        .iter()
        .enumerate()
        .filter(|(_, r)| !r.menu)
        .map(|(i, r)| (i, r.header.as_str().to_owned()))
        .collect();
    let lines = LineMatcher::new(
        name,
        &list(&spec.errors),
        &list(&spec.error_keywords),
        &list(&spec.error_guards),
        &list(&spec.progress),
        &headers,
    )?;
    Ok(Profile {
        name: name.to_owned(),
        status_rows: spec.status_rows.unwrap_or(DEFAULT_STATUS_ROWS).max(1),
        approval_rows: spec.approval_rows.unwrap_or(DEFAULT_APPROVAL_ROWS).max(1),
        busy: regex_set(name, "busy", &list(&spec.busy))?,
        idle: regex_set(name, "idle", &list(&spec.idle))?,
        input: (spec.input.as_ref())
            .map(|p| regex(name, "input", p))
            .transpose()?,
        lines,
        approvals,
        spinner: regex_set(name, "spinner", &list(&spec.spinner))?,
        chrome: regex_set(name, "chrome", &list(&spec.chrome))?,
        retry: (spec.retry.as_ref())
            .map(|p| regex(name, "retry", p))
            .transpose()?,
        turn_errors: regex_set(name, "turn_errors", &list(&spec.turn_errors))?,
        turn_interrupted: regex_set(name, "turn_interrupted", &list(&spec.turn_interrupted))?,
        turn_rejected: regex_set(name, "turn_rejected", &list(&spec.turn_rejected))?,
        state_sequence: spec.state_sequence.unwrap_or(false),
        state_app: spec.state_app.clone().filter(|a| !a.is_empty()),
        start_states: spec.start_states.clone().unwrap_or_default(),
        turn_closed: (spec.turn_closed.as_ref())
            .map(|p| regex(name, "turn_closed", p))
            .transpose()?,
        prompt_row: (spec.prompt_row.as_ref())
            .map(|p| regex(name, "prompt_row", p))
            .transpose()?,
        question: (spec.question.as_ref())
            .map(|p| regex(name, "question", p))
            .transpose()?,
        option_key: (spec.option_key.as_ref())
            .map(|p| regex(name, "option_key", p))
            .transpose()?,
        title_states: (spec.title_states.iter().flatten())
            .map(|t| Ok((regex(name, "title_states.title", &t.title)?, t.state)))
            .collect::<Result<_, PatternError>>()?,
        notification_states: (spec.notification_states.iter().flatten())
            .map(|n| {
                let re = regex(name, "notification_states.notification", &n.notification)?;
                Ok((re, n.state))
            })
            .collect::<Result<_, PatternError>>()?,
        stalled: (spec.stalled.as_ref())
            .map(|p| regex(name, "stalled", p))
            .transpose()?
            .map(|re| (re, spec.stalled_seconds.unwrap_or(DEFAULT_STALLED_SECONDS))),
        turn_completed: (spec.turn_completed.as_ref())
            .map(|p| regex(name, "turn_completed", p))
            .transpose()?,
        turn_retried: (spec.turn_retried.as_ref())
            .map(|p| regex(name, "turn_retried", p))
            .transpose()?,
        stalled_attempts: spec.stalled_attempts.unwrap_or(DEFAULT_STALLED_ATTEMPTS),
        cells: spec.cells.unwrap_or(false),
        input_at_cursor: spec.input_at_cursor.unwrap_or(false),
        answer: spec.answer.unwrap_or_default(),
        footer_modes: (spec.footer_modes.as_ref())
            .map(FooterModes::new)
            .unwrap_or_default(),
        answer_rows: (spec.answer_rows.clone().unwrap_or_default()).compile(name)?,
        marks: spec.marks.clone().unwrap_or_default(),
        start_wait: spec.start_seconds.map(std::time::Duration::from_secs),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ProgressFields;

    /// Each agent's chrome is its profile's alone: the rows it draws
    /// around an answer, and not its answer's words, nor another agent's.
    #[test]
    fn the_rows_around_an_answer_are_the_agents_own_chrome() {
        let p = Profiles::defaults().unwrap();
        let cases: [(&str, &[&str], &[&str]); 3] = [
            (
                "codex",
                &[
                    "GPT-6-Sol default fast · /ws/shop · title",
                    "gpt-5 high · /ws",
                    "•",
                    "›",
                    "› Ask Codex to do anything",
                    "• Working (0s • esc to interrupt)",
                    "Worked for 5s • 18:22",
                    "─ Worked for 1s ──────────",
                    "Waiting for startup · esc cancel",
                    "└ Tip: Use /keymap to remap keys",
                    "⚠ 2 warnings · f2 to view",
                    "← for agents · ? for shortcuts        ⚠ 2 warnings · f2 to view",
                    "◦ Working (0s • esc to interrupt)",
                ],
                &[
                    "• Made the marker file.",
                    "It runs at high speed · /ws is the root",
                    "Worked hard on it.",
                    "⚠ careful",
                ],
            ),
            (
                "aider",
                &[
                    "░█  Waiting for openai/model",
                    "█░ █ Waiting for openai/model",
                    "Tokens: 2.3k sent, 6 received.",
                    "diff>",
                    "ask>",
                ],
                &["Waiting for the build", "Tokens: none", "a > b", "Ask>"],
            ),
            (
                "gemini",
                &[
                    "⠋ Thinking... (esc to cancel, 0s)",
                    "│ >   Type your message or @path/to/file │",
                    "Shift+Tab to accept edits",
                    "ℹ Executing Hook: clawmux hook",
                    "⠹ Executing Hooks: clawmux hook, …",
                    "Executing Hook: clawmux hook",
                    "? for shortcuts",
                    "? for shortcutsk: /ws/target/debug/clawmux hook",
                ],
                &[
                    "│ a │ b │",
                    "✦ Thinking about it (esc to cancel)",
                    "Executing the plan",
                ],
            ),
        ];
        let claude = p.get("claude").unwrap();
        for (name, chrome, words) in cases {
            let profile = p.get(name).unwrap();
            for row in chrome {
                assert!(profile.is_chrome(row), "{name}: {row:?} is chrome");
                // Claude Code's own footer says these too.
                let claudes = ["esc to interrupt", "← for agents"]
                    .iter()
                    .any(|w| row.contains(w))
                    || row.starts_with("? for shortcuts");
                assert_eq!(claude.is_chrome(row), claudes, "claude: {row:?}");
            }
            for row in words {
                assert!(!profile.is_chrome(row), "{name}: {row:?} is an answer");
            }
        }
    }

    #[test]
    fn defaults_compile_and_inherit() {
        let p = Profiles::defaults().unwrap();
        assert_eq!(
            p.names().collect::<Vec<_>>(),
            [
                "aider", "claude", "codex", "gemini", "gsd", "opencode", "shell"
            ]
        );
        let gsd = p.get("gsd").unwrap();
        let kinds: Vec<_> = gsd.approvals.iter().map(|r| r.kind).collect();
        assert_eq!(
            kinds,
            [
                ApprovalKind::Edit,
                ApprovalKind::Create,
                ApprovalKind::Plan,
                ApprovalKind::Question,
                ApprovalKind::Permission,
                ApprovalKind::Checkpoint
            ]
        );
        assert_eq!(gsd.status_rows, 12);
        assert!(gsd.busy.is_match("✶ Working… (esc to interrupt)"));
        assert!(p.get("shell").unwrap().busy.is_empty());
    }

    /// A bad pattern is the error of its profile (each time it is asked
    /// for) and of `check`; the other profiles still load.
    #[test]
    fn bad_pattern_names_profile_and_field() {
        let p = Profiles::from_toml_layers(Some((
            "user.toml",
            "[profiles.claude]\nbusy = ['ok', '(unclosed']\n",
        )))
        .unwrap();
        for err in [
            p.get("claude").unwrap_err(),
            p.get("claude").unwrap_err(),
            p.check().unwrap_err(),
        ] {
            let msg = err.to_string();
            assert!(msg.contains("\"claude\""), "{msg}");
            assert!(msg.contains("busy"), "{msg}");
            assert!(msg.contains("(unclosed"), "{msg}");
        }
        assert!(p.get("shell").is_ok());
        assert!(Profiles::defaults().unwrap().check().is_ok());
    }

    /// Clones share what was compiled: a profile is compiled once.
    #[test]
    fn clones_share_compiled_profiles() {
        let p = Profiles::defaults().unwrap();
        let q = p.clone();
        assert!(Arc::ptr_eq(
            &p.get("shell").unwrap(),
            &q.get("shell").unwrap()
        ));
    }

    /// Where the answer is read is the profile's, so a user's profile that
    /// extends an agent's reads it the same way (a list of built-in names
    /// would not know `my-codex`), and can say otherwise.
    #[test]
    fn the_answer_source_is_inherited_and_can_be_overridden() {
        let p = Profiles::from_toml_layers(Some((
            "user.toml",
            "[profiles.my-codex]\nextends = 'codex'\n[profiles.plain]\nextends = 'aider'\nanswer = 'settled_screen'\n",
        )))
        .unwrap();
        assert_eq!(p.get("my-codex").unwrap().answer, AnswerSource::Hook);
        assert_eq!(p.get("aider").unwrap().answer, AnswerSource::AiderHistory);
        assert_eq!(p.get("plain").unwrap().answer, AnswerSource::SettledScreen);
        assert_eq!(p.get("gsd").unwrap().answer, AnswerSource::Transcript);
        assert_eq!(p.get("claude").unwrap().answer, AnswerSource::Transcript);
        assert!(!AnswerSource::Lines.settled() && AnswerSource::Hook.settled());
        assert!(!AnswerSource::Transcript.settled());
        assert!(
            Profiles::from_toml_layers(Some(("user.toml", "[profiles.x]\nanswer = 'guess'\n")))
                .is_err()
        );
    }

    #[test]
    fn user_layer_overrides_and_adds() {
        let p = Profiles::from_toml_layers(Some((
            "user.toml",
            "[profiles.claude]\nbusy = ['thinking']\n[profiles.mine]\nextends = 'gsd'\nstatus_rows = 3\n",
        )))
        .unwrap();
        assert!(p.get("claude").unwrap().busy.is_match("thinking"));
        assert!(!p.get("claude").unwrap().busy.is_match("esc to interrupt"));
        let mine = p.get("mine").unwrap();
        assert_eq!(mine.status_rows, 3);
        assert_eq!(mine.approvals.len(), 6);
        assert!(matches!(
            p.get("nope"),
            Err(ProfileError::UnknownProfile { .. })
        ));
    }

    #[test]
    fn unknown_field_and_parent_and_cycle_are_errors() {
        let bad = |t: &str| Profiles::from_toml_layers(Some(("u.toml", t))).unwrap_err();
        assert!(matches!(
            bad("[profiles.x]\nbusyy = []\n"),
            ProfileError::Toml { .. }
        ));
        assert!(matches!(
            bad("[profiles.x]\nextends = 'y'\n"),
            ProfileError::UnknownParent { .. }
        ));
        assert!(matches!(
            bad("[profiles.x]\nextends = 'y'\n[profiles.y]\nextends = 'x'\n"),
            ProfileError::ExtendsTooDeep { .. }
        ));
    }

    #[test]
    fn a_bad_pattern_names_its_profile_and_field() {
        let bad = |t: &str| {
            let profiles = Profiles::from_toml_layers(Some(("u.toml", t))).unwrap();
            profiles.get("x").unwrap_err()
        };
        // Compiled by the line matcher, and by the profile itself.
        for (toml, field) in [
            ("[profiles.x]\nerrors = ['(oops']\n", "errors"),
            ("[profiles.x]\nbusy = ['(oops']\n", "busy"),
        ] {
            let e = bad(toml);
            assert!(matches!(e, ProfileError::Pattern(_)), "{e:?}");
            assert!(
                e.to_string()
                    .starts_with(&format!("profile \"x\", {field}: bad pattern \"(oops\"")),
                "{e}"
            );
        }
    }

    // The default profiles' line patterns, through the line matcher.

    fn hits(profile: &str, text: &str) -> Vec<(usize, LineHit)> {
        let p = Profiles::defaults().unwrap().get(profile).unwrap();
        let mut out = Vec::new();
        p.lines.scan(text, |i, h| out.push((i, h)));
        out
    }

    #[test]
    fn errors_with_guards() {
        let text = [
            "Error: cannot open file",                 // 0 error
            "Compiled with 0 errors",                  // 1 guarded
            "see docs/error-handling.md for more",     // 2 guarded
            "errors: 0, warnings: 2",                  // 3 guarded
            "API Error: 500 Internal server error",    // 4 error
            "terrorism is not a keyword match",        // 5 no word boundary
            "Please run /login · API key invalid",     // 6 no shell keyword
            "test result: FAILED. 1 passed; 1 failed", // 7 error
            "all good",                                // 8
            "Traceback (most recent call last):",      // 9 error
        ]
        .join("\n");
        let errors = |profile| -> Vec<usize> {
            hits(profile, &text)
                .into_iter()
                .filter(|(_, h)| *h == LineHit::Error)
                .map(|(i, _)| i)
                .collect()
        };
        assert_eq!(errors("shell"), [0, 4, 7, 9]);
        // An agent's errors are its own rows at the end of a turn (see
        // `screen`): words in its output are never errors.
        assert_eq!(errors("claude"), Vec::<usize>::new());
        assert_eq!(errors("gsd"), Vec::<usize>::new());
    }

    #[test]
    fn progress_forms() {
        // What GSD 1.42.3 prints (and the sim agent imitates), then what it
        // does not count: phase-table rows, plain percentages, prose.
        let text = "● Phase 1: research complete [1/3]\n\
                    \x20 Milestone: v1.0 · Phase 2 of 4\n\
                    ━━━ GSD ► EXECUTING WAVE 1\n\
                    \x20 Progress: ████████░░ 80%\n\
                    ● Tasks: 2/4 complete\n\
                    \x20 Plans: 3/5 complete\n\
                    \x20 [████░░] 3/5 plans (60%)\n\
                    Progress: 2/6 tasks complete\n\
                    \x20GSD ► PLANNING PHASE 2\n\
                    Progress: [██████░░░░] 60%\n\
                    | 1 | Core | 2/2 | Complete | 100% |\n\
                    │ 2     │ Cart     │ 1/4   │ In progress │ 25%  │\n\
                    │ Phase 3 of 4 │ [0/2] │\n\
                    building 42%\n\
                    no numbers here\n\
                    Progress: 250%";
        let got = hits("gsd", text);
        let p = |percent, done, total, phase, stage: Option<&str>| {
            LineHit::Progress(ProgressFields {
                percent,
                done,
                total,
                phase,
                stage: stage.map(str::to_owned),
            })
        };
        assert_eq!(
            got,
            vec![
                (0, p(None, Some(1), Some(3), None, None)),
                (1, p(None, None, None, Some(2), None)),
                (2, p(None, None, None, None, Some("EXECUTING WAVE 1"))),
                (3, p(Some(80), None, None, None, None)),
                (4, p(None, Some(2), Some(4), None, None)),
                (5, p(None, Some(3), Some(5), None, None)),
                (6, p(Some(60), Some(3), Some(5), None, None)),
                (7, p(None, Some(2), Some(6), None, None)),
                (8, p(None, None, None, Some(2), Some("PLANNING PHASE 2"))),
                (9, p(Some(60), None, None, None, None)),
            ]
        );
        // The shell profile has no GSD banner pattern.
        assert!(hits("shell", "━━━ GSD ► EXECUTING WAVE 1").is_empty());
        // Fed one line at a time, the same hits.
        let one_by_one: Vec<usize> = (text.lines().enumerate())
            .filter(|(_, l)| !hits("gsd", l).is_empty())
            .map(|(i, _)| i)
            .collect();
        assert_eq!(one_by_one, (0..=9).collect::<Vec<_>>());
    }

    /// gsd-sdk's bar where GSD's runs show it: after `Progress:` in a
    /// workflow's report (markdown bold drawn or not), and as the output of
    /// the `gsd-sdk query progress.bar` a workflow runs (Claude Code
    /// 2.1.197 draws a tool's output after `⎿`, quoted as the sdk prints
    /// it). A phase table's row holding a bar is still no progress.
    #[test]
    fn the_gsd_sdk_bar_in_a_report_and_as_a_tools_output() {
        let bar = "[████████████░░░░░░░░] 3/5 plans (60%)";
        let want = LineHit::Progress(ProgressFields {
            percent: Some(60),
            done: Some(3),
            total: Some(5),
            ..ProgressFields::default()
        });
        for line in [
            format!("● Progress: {bar}"),
            format!("  Progress: {bar}"),
            format!("**Progress:** {bar}"),
            format!("  ⎿  \"{bar}\""),
            format!("  ⎿  {bar}"),
        ] {
            assert_eq!(hits("gsd", &line), vec![(0, want.clone())], "{line}");
        }
        assert!(hits("gsd", &format!("| 1 | Core | {bar} |")).is_empty());
        assert!(hits("gsd", &format!("│ Phase 1 │ {bar} │")).is_empty());
    }

    #[test]
    fn default_patterns_all_have_triggers() {
        for name in [
            "shell", "claude", "gsd", "codex", "gemini", "aider", "opencode",
        ] {
            let p = Profiles::defaults().unwrap().get(name).unwrap();
            assert!(
                !p.lines.scans_every_line(),
                "{name} has a pattern without literals"
            );
        }
    }
}
