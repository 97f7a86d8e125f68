//! The pure half of a project actor: which command runs and which wait,
//! what a detection or a hook means for them, and what is reported. No I/O
//! and no clock of its own: the actor feeds it what the pane showed and the
//! time, and carries out the [`Step`]s it returns, so unit tests drive it
//! directly (`tests.rs` beside it). The queue and the running command
//! change together here; the prompt on screen has its life in `prompt.rs`.

use std::collections::{HashSet, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::confirm::{disagreement, fill_from_hook};
use super::messages::{ProjectEventKind, ProjectStatus, TurnEnding};
use super::prompt::Prompt;
use crate::agents::record;
use crate::bridge::panes::transcript::{GAP_LINE, Transcript};
use crate::detect::{
    AnswerSource, Detection, DetectionKind, Millis, PaneWatcher, Profile, ProgressFields,
};
use crate::hooks::ToolRequest;
use crate::hooks::usage::TurnUsage;
use crate::store::state::{Approval, ApprovalId, Job, SessionName};
use crate::store::stream::{MAX_STREAM_TEXT_BYTES, bounded_tail};

/// Commands waiting per project at most: more is a runaway script.
pub const MAX_QUEUED: usize = 32;
/// Distinct error lines reported per command at most, so a log full of
/// errors does not become a storm of cards.
const MAX_ERRORS_PER_JOB: usize = 3;
/// Recent output shown on a progress card.
const PROGRESS_TAIL_LINES: usize = 8;
/// Finished lines remembered to tell a redraw from new output: a few
/// screens' worth.
const RECENT_LINES: usize = 256;
/// Progress summaries remembered per command, to report each once: GSD
/// prints a few stages and counts per command; past this the oldest is
/// forgotten (and would be reported again if drawn again).
const MAX_PROGRESS_TOLD: usize = 64;
/// Task ids remembered per command (the agent's task list): a list longer
/// than this is a runaway, its progress is still counted.
const MAX_TASKS: usize = 256;
/// How often a streamed answer read off the screen is read again: as often
/// as the streamed card can change (Feishu's pace for one card), not for
/// every batch of output (each read rebuilds the whole screen).
const SCREEN_ANSWER_STEP: Duration = Duration::from_millis(350);

/// The command being run.
pub struct Running {
    pub job: Job,
    output: Transcript,
    pub started: Instant,
    pub deadline: Instant,
    errors: Vec<String>,
    ending: TurnEnding,
    /// Detection recognised something on screen during the command.
    recognised: bool,
    /// Internal turn (the recovery prompt): no cards, then `job` is retried.
    pub recovery: bool,
    /// The turn's final text from the agent's `Stop` hook.
    hook_answer: Option<String>,
    /// The error the agent said the turn failed on (its `StopFailure`
    /// hook, or its transcript's API-error entry), as reported: the
    /// screen's row for the same error is not reported again.
    hook_error: Option<String>,
    /// The turn's figures, as its transcript gave them (see
    /// [`JobRunner::turn_usage`]).
    usage: TurnUsage,
    tasks: Tasks,
    /// A hash of the answer text last reported (see [`JobRunner::answer_news`]).
    answer_told: Option<u64>,
    /// When the answer was last read off the screen.
    answer_read_at: Option<Millis>,
    /// Output came since the answer was last read off the screen: it is
    /// read again once the step is over (see [`JobRunner::answer_read_due`]).
    answer_unread: bool,
    /// Typed before a restart and followed since: what it printed meanwhile
    /// is on the screen only.
    followed: bool,
    /// The progress summaries reported for this command: a line redrawn
    /// (GSD's statusline has Claude Code redraw its screen over and over,
    /// finishing the same lines again, several in turn) is reported once,
    /// not on every redraw (measured: 59 progress events with the
    /// statusline against 9 without). Bounded by [`MAX_PROGRESS_TOLD`].
    progress_told: VecDeque<String>,
    /// The last stage this command's output named (GSD's `PLANNING PHASE
    /// 2` banner): later counts are reported within it, so a card that
    /// moves once a second still says which stage a count belongs to.
    stage: Option<String>,
    /// Its agent was reported stalled and has not resumed yet.
    stalled: bool,
}

/// A command waiting for its turn; `recovery` types the context-recovery
/// prompt first (its session was recreated).
pub struct Waiting {
    pub job: Job,
    pub recovery: bool,
}

/// What became of a submitted command.
pub enum Admit {
    /// Nothing runs: start it now.
    Start(Job),
    /// Waiting behind `position` others (1 = next).
    Queued { job: Job, position: usize },
    /// The queue is full: refused.
    Full(Job),
}

/// What the actor is to do after a detection or a hook.
// Steps live for one call, a few at a time: boxing would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, PartialEq)]
pub enum Step {
    /// Report this to the bridge.
    Emit(Option<Job>, ProjectEventKind),
    /// The turn ended: complete the running command.
    Complete,
    /// The turn ended and was finished at once, before the output that
    /// followed it (see [`take_output`]).
    Finished(Finished),
}

/// How a running command ended.
#[derive(Debug, PartialEq)]
pub enum Finished {
    /// The recovery prompt was answered: now type the command itself.
    Recovery(Job),
    /// Report this.
    Report(Job, ProjectEventKind),
}

/// A task-list hook's news.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskNews {
    Created { id: String, subject: String },
    Completed { id: String, subject: String },
}

/// The agent's own word that its turn failed: Claude Code's `StopFailure`
/// hook, or the API-error entry its transcript ends the turn with. Exact
/// where the screen is read: a release that draws its error rows with a
/// glyph the profile does not know still ends the turn as an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentFailure {
    /// The agent's category: `server_error`, `authentication_failed`,
    /// `rate_limit`, `unknown`, or another a newer release says.
    pub category: Option<String>,
    /// What the agent said of it (`API Error: 500 Internal server
    /// error. …`): its `last_assistant_message`, or the entry's text.
    pub message: Option<String>,
}

impl AgentFailure {
    /// The error as one line: the agent's words, else its category.
    fn line(&self) -> String {
        match (self.message.as_deref().map(str::trim), &self.category) {
            (Some(m), _) if !m.is_empty() => m.to_string(),
            (_, Some(category)) => format!("StopFailure: {category}"),
            (_, None) => "StopFailure".to_string(),
        }
    }
}

/// The agent's task list during one command, from its task hooks.
#[derive(Default)]
struct Tasks {
    created: HashSet<String>,
    completed: HashSet<String>,
}

#[derive(Default)]
pub struct JobRunner {
    running: Option<Running>,
    queue: VecDeque<Waiting>,
    /// A new agent is starting: nothing is typed until it shows its idle
    /// prompt, or until this deadline.
    starting: Option<Instant>,
    /// The prompt on screen: none, unreported, shown, or answered.
    prompt: Prompt,
    /// What the agent's permission hook said the coming dialog asks, until
    /// that dialog shows.
    expected: Option<ToolRequest>,
    /// The last lines the pane finished (see [`Transcript::after`]).
    recent: VecDeque<String>,
    last_progress: Option<String>,
    busy: bool,
    /// The agent's profile: how it echoes a command, draws its answer and
    /// records it (see [`JobRunner::reads_as`]).
    profile: Option<Arc<Profile>>,
}

impl JobRunner {
    /// The running command, if any (the recovery turn too).
    pub fn running(&self) -> Option<&Running> {
        self.running.as_ref()
    }

    /// The running command the chat hears about (not a recovery turn).
    fn reported_job(&self) -> Option<Job> {
        (self.running.as_ref())
            .filter(|r| !r.recovery)
            .map(|r| r.job.clone())
    }

    pub fn take_running(&mut self) -> Option<Running> {
        self.running.take()
    }

    /// Puts back a command taken with [`JobRunner::take_running`] (its
    /// client was replaced under it).
    pub fn keep_running(&mut self, mut running: Running) {
        running.output.gap();
        self.running = Some(running);
    }

    pub fn approval(&self) -> Option<&Approval> {
        self.prompt.shown()
    }

    /// Nothing runs, no prompt waits, the agent is not busy: an Esc now
    /// would wait in its input and spoil the next command.
    pub fn idle(&self) -> bool {
        self.running.is_none() && !self.prompt.asking() && !self.busy
    }

    pub fn starting_until(&self) -> Option<Instant> {
        self.starting
    }

    /// A new agent starts; commands wait until `until` or its prompt.
    pub fn agent_starting(&mut self, until: Instant) {
        self.starting = Some(until);
    }

    /// The new agent is ready (or waited for long enough).
    pub fn agent_started(&mut self) {
        self.starting = None;
    }

    /// May a command be typed now? Not while one runs, while a new agent
    /// starts, or while a prompt waits for its answer (keys typed into it
    /// would choose an option nobody chose).
    pub fn ready(&self) -> bool {
        self.running.is_none() && self.starting.is_none() && self.prompt == Prompt::Clear
    }

    pub fn submit(&mut self, job: Job) -> Admit {
        if self.ready() {
            return Admit::Start(job);
        }
        if self.queue.len() >= MAX_QUEUED {
            return Admit::Full(job);
        }
        self.queue.push_back(Waiting {
            job: job.clone(),
            recovery: false,
        });
        // The first command waiting for a starting agent is as good as
        // running: the others wait behind it.
        let first_starts = self.running.is_none() && self.starting.is_some();
        let position = self.queue.len() - usize::from(first_starts);
        Admit::Queued { job, position }
    }

    /// Puts a command first in line (its agent is still starting).
    pub fn wait_first(&mut self, job: Job, recovery: bool) {
        self.queue.push_front(Waiting { job, recovery });
    }

    /// Puts a command first in line behind a dialog the chat has not been
    /// shown; see [`JobRunner::release`].
    pub fn hold(&mut self, job: Job, recovery: bool) {
        self.prompt.hold();
        self.wait_first(job, recovery);
    }

    /// Whether commands wait for a dialog to be reported.
    pub fn held(&self) -> bool {
        self.prompt.held()
    }

    /// The dialog that held the commands was reported or went away.
    pub fn release(&mut self) {
        self.prompt.release();
    }

    /// The command first in line, if one waits.
    pub fn first_waiting(&self) -> Option<&Job> {
        self.queue.front().map(|w| &w.job)
    }

    /// The next waiting command, when one may start.
    pub fn next_waiting(&mut self) -> Option<Waiting> {
        if self.ready() {
            self.queue.pop_front()
        } else {
            None
        }
    }

    /// Makes `job` the running command at `now` (`now_ms` on the wall
    /// clock). Returns its deadline on the wall clock when it had none
    /// recorded yet: the caller records it, so a restart keeps it.
    pub fn begin(&mut self, job: Job, recovery: bool, now: Instant, now_ms: u64) -> Option<u64> {
        let timeout = Duration::from_secs(job.timeout_secs);
        // A deadline recorded before a restart still holds, and the time
        // the command ran before it counts.
        let (started, deadline, new_deadline) = match job.stage.deadline_ms() {
            Some(at) => {
                let left = Duration::from_millis(at.saturating_sub(now_ms));
                let ran = timeout.saturating_sub(left);
                (now.checked_sub(ran).unwrap_or(now), now + left, None)
            }
            None => {
                let at = now_ms.saturating_add(timeout.as_millis() as u64);
                (now, now + timeout, Some(at))
            }
        };
        let output = Transcript::after(&self.recent).typed(&job.text);
        let output = match &self.profile {
            Some(profile) => output.echoes_as(profile),
            None => output,
        };
        self.running = Some(Running {
            job,
            output,
            started,
            deadline,
            errors: Vec::new(),
            ending: TurnEnding::Finished,
            recognised: false,
            recovery,
            hook_answer: None,
            hook_error: None,
            tasks: Tasks::default(),
            answer_told: None,
            usage: TurnUsage::default(),
            answer_unread: false,
            answer_read_at: None,
            followed: false,
            progress_told: VecDeque::new(),
            stage: None,
            stalled: false,
        });
        new_deadline
    }

    /// The running command was typed before a restart (see
    /// [`Running::followed`]).
    pub fn followed(&mut self) {
        if let Some(running) = &mut self.running {
            running.followed = true;
        }
    }

    /// The rows under the agent's input box now: furniture in the running
    /// command's output.
    pub fn footer(&mut self, rows: &[String]) {
        if let Some(running) = &mut self.running {
            running.output.footer(rows);
        }
    }

    /// Lines the pane finished: the running command's output.
    pub fn lines(&mut self, lines: &[String]) {
        if let Some(running) = &mut self.running {
            running.output.push(lines);
        }
        self.recent.extend(lines.iter().cloned());
        let excess = self.recent.len().saturating_sub(RECENT_LINES);
        self.recent.drain(..excess);
    }

    /// The running command's answer so far, when it changed since it was
    /// last reported: the same text its result will hold, its end kept
    /// within [`MAX_STREAM_TEXT_BYTES`] (a streamed card shows it), less
    /// a last row with no text yet (see [`drawn_rows`]). An agent whose
    /// result is read off the screen (its profile's `answer`,
    /// or it reads cells) has it read the same way off the
    /// `screen` now (`now`), as the terminal settles it: its line log
    /// holds every frame of a row redrawn as it streams. The screen is
    /// read at most once per [`SCREEN_ANSWER_STEP`], and once more when
    /// output came within it ([`JobRunner::answer_read_due`]). `screen`
    /// gives no rows while a dialog is drawn; none is read while one is
    /// known (it has its own card).
    pub fn answer_news(
        &mut self,
        now: Millis,
        screen: impl FnOnce() -> Option<Vec<String>>,
    ) -> Option<Step> {
        let job = self.reported_job()?;
        let (settled, panel) = (self.settled_result(), self.panel_result());
        let asking = self.prompt.asking();
        let running = self.running.as_mut()?;
        let text = if settled || panel {
            if asking {
                return None;
            }
            if (running.answer_read_at).is_some_and(|at| now < at + SCREEN_ANSWER_STEP) {
                running.answer_unread = true;
                return None;
            }
            running.answer_read_at = Some(now);
            running.answer_unread = false;
            let rows = screen()?;
            let output = &running.output;
            let shown = (settled.then(|| output.settled_text(&rows)).flatten()).or_else(|| {
                panel.then(|| crate::detect::panel_streaming_answer(&rows, &job.text))?
            })?;
            // Whole rows: a row that grows replaces the card's text, never
            // continues it (a console prints only what extends it).
            format!("{}\n", shown.trim_end())
        } else {
            (running.output.has_answer()).then(|| running.output.text())?
        };
        let text = bounded_tail(drawn_rows(&text), MAX_STREAM_TEXT_BYTES);
        let mut h = std::collections::hash_map::DefaultHasher::new();
        text.hash(&mut h);
        let hash = h.finish();
        if running.answer_told == Some(hash) || text.trim().is_empty() {
            return None;
        }
        running.answer_told = Some(hash);
        Some(Step::Emit(Some(job), ProjectEventKind::Answer { text }))
    }

    /// When the answer is due to be read off the screen again: output
    /// came within the last read's step, and its last rows would otherwise
    /// wait for the result.
    pub fn answer_read_due(&self) -> Option<Millis> {
        let running = self.running.as_ref().filter(|r| r.answer_unread)?;
        Some(running.answer_read_at? + SCREEN_ANSWER_STEP)
    }

    /// The running command's output goes on without some of its lines.
    pub fn gap(&mut self) {
        if let Some(running) = &mut self.running {
            running.output.gap();
        }
    }

    /// The screen's rows stand for the lines a gap skipped (see
    /// [`Transcript::fill_gap`]).
    pub fn fill_gap(&mut self, rows: &[String]) {
        if let Some(running) = &mut self.running {
            running.output.fill_gap(rows);
        }
    }

    /// The last `n` lines the pane finished, for the recovery prompt.
    pub fn recent_tail(&self, n: usize) -> String {
        let skip = self.recent.len().saturating_sub(n);
        let tail: Vec<&str> = self.recent.iter().skip(skip).map(String::as_str).collect();
        tail.join(" / ")
    }

    /// Whether the answer for `approval_id` would go to another prompt than
    /// the one on screen. After a restart the actor may not have seen the
    /// prompt itself (the bridge checked its persisted copy), so only a
    /// different live prompt conflicts.
    pub fn other_prompt(&self, approval_id: &str, question: &str) -> bool {
        (self.prompt.shown()).is_some_and(|a| a.id != approval_id && a.question != question)
    }

    /// The prompt was answered, or a command typed over it.
    pub fn prompt_closed(&mut self) {
        self.prompt.close();
    }

    /// An answer was typed into the prompt on screen; until
    /// [`JobRunner::answer_done`] nothing else is typed, and the prompt
    /// leaving the screen is the answer taking, not an answer in the
    /// terminal.
    pub fn answer_sent(&mut self) {
        self.prompt.answer_sent();
    }

    /// The screen showed whether the answer took. A taken answer closes
    /// the prompt it was typed into (not one drawn since).
    pub fn answer_done(&mut self, taken: bool) {
        self.prompt.answer_done(taken);
    }

    /// The session is gone, and its prompt and spinner with it.
    pub fn session_gone(&mut self) {
        self.prompt = Prompt::Clear;
        self.busy = false;
    }

    /// What a detection in the agent's pane (in tmux session `session`) means.
    pub fn on_detection(&mut self, d: Detection, session: &SessionName) -> Vec<Step> {
        let job = self.reported_job();
        if let Some(running) = &mut self.running {
            running.recognised = true;
        }
        match d.kind {
            DetectionKind::Busy => self.busy = true,
            DetectionKind::Completed => {
                self.busy = false;
                // A new agent showed its prompt: it is ready for input.
                self.starting = None;
                if self.running.is_some() && self.prompt.shown().is_none() {
                    return vec![Step::Complete];
                }
            }
            DetectionKind::Progress(fields) => {
                // A line the pane showed before the command (the last
                // command's banner, redrawn with the screen) is not this
                // command's progress. The detection's context ends with it.
                let line = d.context.rsplit('\n').next().unwrap_or_default();
                if (self.running.as_ref()).is_some_and(|r| r.output.is_earlier(line)) {
                    return Vec::new();
                }
                let mut fields = fields;
                if let Some(running) = &mut self.running {
                    match &fields.stage {
                        Some(stage) => running.stage = Some(stage.clone()),
                        None => fields.stage = running.stage.clone(),
                    }
                }
                let summary = describe(&fields);
                self.last_progress = Some(summary.clone());
                if job.is_some() {
                    return self
                        .progress(job, summary, fields.percent)
                        .into_iter()
                        .collect();
                }
            }
            DetectionKind::Approval {
                approval,
                question,
                body,
                options,
            } => {
                // The prompt reported already, seen again (a new client), or
                // with its body drawn since: reported again under its id.
                if let Some(known) = self.prompt.shown_mut().filter(|a| a.question == question) {
                    if body.is_empty() || known.body == body {
                        return Vec::new();
                    }
                    known.body = body;
                    return vec![Step::Emit(job, ProjectEventKind::Approval(known.clone()))];
                }
                let mut seen = Approval {
                    id: ApprovalId::random(),
                    session: session.clone(),
                    pane: d.pane,
                    kind: approval,
                    question,
                    body,
                    options,
                };
                let mut steps = Vec::new();
                if let Some(request) = self.expected.take() {
                    fill_from_hook(&mut seen, &request);
                    steps.extend(self.confirm(&seen, &request, job.clone()));
                }
                self.prompt.show(seen.clone());
                steps.insert(0, Step::Emit(job, ProjectEventKind::Approval(seen)));
                return steps;
            }
            DetectionKind::ApprovalGone { .. } => {
                // Our answer taking: no card says it went in the terminal.
                let took = self.prompt.answer_took();
                if let Some(gone) = self.prompt.close().filter(|_| !took) {
                    let approval_id = gone.id;
                    let kind = ProjectEventKind::ApprovalGone { approval_id };
                    return vec![Step::Emit(job, kind)];
                }
            }
            // How a turn ended besides an error: the completion follows.
            DetectionKind::Interrupted { line } => {
                if let Some(running) = &mut self.running {
                    running.ending = TurnEnding::Interrupted(line);
                }
            }
            DetectionKind::Rejected { line } => {
                if let Some(running) = &mut self.running {
                    running.ending = TurnEnding::Rejected(line);
                }
            }
            // A stall is the running command's status, reported once, and
            // its end only after it was.
            DetectionKind::Stalled { secs } => {
                let Some(running) = self.running.as_mut().filter(|r| !r.recovery && !r.stalled)
                else {
                    return Vec::new();
                };
                running.stalled = true;
                return vec![Step::Emit(job, ProjectEventKind::Stalled { secs })];
            }
            DetectionKind::Resumed { secs } => {
                let Some(running) = self.running.as_mut().filter(|r| r.stalled) else {
                    return Vec::new();
                };
                running.stalled = false;
                return vec![Step::Emit(job, ProjectEventKind::Resumed { secs })];
            }
            DetectionKind::Error { line } => {
                let Some(running) = self.running.as_mut().filter(|r| !r.recovery) else {
                    return Vec::new();
                };
                // The error the agent's hook reported already, drawn.
                let told = (running.hook_error.as_deref()).is_some_and(|h| same_error(h, &line));
                if told
                    || running.errors.len() >= MAX_ERRORS_PER_JOB
                    || running.errors.contains(&line)
                {
                    return Vec::new();
                }
                running.errors.push(line.clone());
                let context = d.context;
                return vec![Step::Emit(job, ProjectEventKind::Error { line, context })];
            }
        }
        Vec::new()
    }

    /// The progress event for `summary`, unless the running command
    /// reported it already (the same stage or value drawn again).
    fn progress(&mut self, job: Option<Job>, summary: String, percent: Option<u8>) -> Option<Step> {
        if let Some(running) = &mut self.running {
            if running.progress_told.contains(&summary) {
                return None;
            }
            if running.progress_told.len() == MAX_PROGRESS_TOLD {
                running.progress_told.pop_front();
            }
            running.progress_told.push_back(summary.clone());
        }
        let tail = (self.running.as_ref())
            .map(|r| r.output.tail(PROGRESS_TAIL_LINES))
            .unwrap_or_default();
        let kind = ProjectEventKind::Progress {
            summary,
            percent,
            tail,
        };
        Some(Step::Emit(job, kind))
    }

    /// The running turn's figures (tokens, context), read from the
    /// transcript its `Stop` hook named, for its result's footer.
    pub fn turn_usage(&mut self, usage: TurnUsage) {
        if let Some(running) = &mut self.running
            && usage != TurnUsage::default()
        {
            running.usage = usage;
        }
    }

    /// The agent's `Stop` (or `StopFailure`) hook: the turn is over, with
    /// `answer` as its final text. True when that ends the running command
    /// (not while a prompt waits: its answer starts more of the turn).
    /// A panel agent's (OpenCode's plugin `session.idle`) only records the
    /// answer: its turn ends when the screen draws the end (the closing
    /// row, an error box), since the event can come before the error it
    /// ends on (`session.idle` before `session.error`) or before the last
    /// frame; the screen is judged at once instead.
    pub fn hook_stop(&mut self, answer: Option<String>) -> bool {
        if self.record_answer() {
            // Only the answer: the screen ends the turn (see
            // `record_answer`). A later event without text (Codex's
            // `Stop` hook after its `notify`) keeps the one said.
            if let Some(running) = &mut self.running
                && let Some(answer) = answer.as_deref().and_then(record::answer_of)
            {
                running.hook_answer = Some(answer);
            }
            return false;
        }
        if self.prompt.shown().is_some() {
            return false;
        }
        let Some(running) = &mut self.running else {
            return false;
        };
        running.hook_answer = answer.filter(|a| !a.trim().is_empty());
        !self.panel_result()
    }

    /// The agent's word that the turn failed ([`AgentFailure`]): the
    /// running command ends as an error, whatever the screen draws. The
    /// error is reported once: not when the screen's row for it was
    /// reported already, and the screen's row drawn after it is not
    /// reported again. True when that ends the running command now (as
    /// [`JobRunner::hook_stop`] says); otherwise the screen's end of the
    /// turn ends it, as a failure.
    pub fn hook_failed(&mut self, failure: AgentFailure) -> (Vec<Step>, bool) {
        let job = self.reported_job();
        let ends = !self.record_answer() && !self.panel_result() && self.prompt.shown().is_none();
        let Some(running) = &mut self.running else {
            return (Vec::new(), false);
        };
        running.ending = TurnEnding::Failed;
        let line = failure.line();
        let told = match &failure.message {
            Some(_) => (running.errors.iter()).any(|e| same_error(e, &line)),
            // No words to compare: an error the screen reported is it.
            None => !running.errors.is_empty(),
        };
        running.hook_error = Some(line.clone());
        if told || running.recovery || running.errors.len() >= MAX_ERRORS_PER_JOB {
            return (Vec::new(), ends);
        }
        running.errors.push(line.clone());
        let context = match &failure.category {
            Some(category) => format!("{line}\n({category})"),
            None => line.clone(),
        };
        (
            vec![Step::Emit(job, ProjectEventKind::Error { line, context })],
            ends,
        )
    }

    /// The agent's permission hook: what the dialog it is about to show
    /// asks. Checked against the dialog read off the screen, whichever
    /// comes first.
    pub fn hook_permission(&mut self, request: ToolRequest) -> Vec<Step> {
        let job = self.reported_job();
        let Some(seen) = self.prompt.shown() else {
            self.expected = Some(request);
            return Vec::new();
        };
        // Reported already: what the hook adds is reported again under
        // the prompt's id.
        let mut filled = seen.clone();
        fill_from_hook(&mut filled, &request);
        let mut steps = Vec::new();
        if &filled != seen {
            self.prompt.show(filled.clone());
            steps.push(Step::Emit(
                job.clone(),
                ProjectEventKind::Approval(filled.clone()),
            ));
        }
        steps.extend(self.confirm(&filled, &request, job));
        steps
    }

    /// A task hook: the agent's task list as the running command's
    /// progress.
    pub fn hook_task(&mut self, news: TaskNews) -> Vec<Step> {
        let job = self.reported_job();
        let Some(running) = self.running.as_mut().filter(|r| !r.recovery) else {
            return Vec::new();
        };
        let tasks = &mut running.tasks;
        let subject = match news {
            TaskNews::Created { id, subject } => {
                if tasks.created.len() < MAX_TASKS {
                    tasks.created.insert(id);
                }
                format!("new task: {subject}")
            }
            TaskNews::Completed { id, subject } => {
                if tasks.completed.len() < MAX_TASKS {
                    // A task created before the command still counts.
                    if tasks.created.len() < MAX_TASKS {
                        tasks.created.insert(id.clone());
                    }
                    tasks.completed.insert(id);
                }
                format!("done: {subject}")
            }
        };
        let (done, total) = (tasks.completed.len(), tasks.created.len().max(1));
        let percent = Some((done * 100 / total).min(100) as u8);
        let summary = format!("tasks {done}/{total} · {subject}");
        self.last_progress = Some(summary.clone());
        self.progress(job, summary, percent).into_iter().collect()
    }

    /// A dialog on screen checked against the permission hook's request:
    /// a kind or options that disagree mean the screen is read wrong (the
    /// agent's screen changed), which the chat must hear before it answers.
    fn confirm(&self, seen: &Approval, request: &ToolRequest, job: Option<Job>) -> Vec<Step> {
        match disagreement(seen, request) {
            Some(detail) => {
                let approval_id = seen.id.clone();
                let kind = ProjectEventKind::DialogMismatch {
                    approval_id,
                    detail,
                };
                vec![Step::Emit(job, kind)]
            }
            None => Vec::new(),
        }
    }

    /// Commands are read as the agent `profile` echoes them: its echo
    /// (`❯ text`) ends the lines the pane showed before, and the rows it
    /// draws around an answer (its `chrome`) are left out of it. Without
    /// one no echo and no chrome is known.
    pub fn reads_as(&mut self, profile: Arc<Profile>) {
        self.profile = Some(profile);
    }

    /// The result of a turn is read off the settled screen at its end (the
    /// rows under the command's echo), the line log only when the echo is
    /// off the screen: for agents whose line log holds every frame of a
    /// streamed answer (Codex redraws the answer's row at every delta and
    /// inserts the finished cell again). The profile's `answer` says so.
    fn settled_result(&self) -> bool {
        (self.profile.as_ref()).is_some_and(|p| p.answer.settled())
    }

    /// The agent's turn-end hook (Codex's `Stop` hook and `notify`, Gemini
    /// CLI's `AfterAgent`) gives the answer, markdown kept, and never ends
    /// a turn: it can come before the screen says how the turn ended
    /// (Gemini's `AfterAgent` fires `[no response text]` ~55 ms after the
    /// prompt, before an API error's row is drawn), so the screen's own
    /// end (its closing row, error row, settled prompt) ends the turn and
    /// the record replaces the answer drawn on it ([`record::reconcile`]).
    /// The profile's `answer = "hook"` says so.
    fn record_answer(&self) -> bool {
        (self.profile.as_ref()).is_some_and(|p| p.answer == AnswerSource::Hook)
    }

    /// The result of a turn is read off the settled screen's panels at its
    /// end (OpenCode: the rows under the person's message box, see
    /// [`crate::detect::panel_answer`]), or the agent's own record when its
    /// plugin sent one; the line log only when the echo is off the screen.
    /// Its line log holds the busy bar's every frame and the answer's.
    /// The profile reads cells (OpenCode's).
    fn panel_result(&self) -> bool {
        (self.profile.as_ref()).is_some_and(|p| p.reads_cells())
    }

    /// Ends the running command: its output (`screen_rows` fill what a
    /// flood skipped), or the recovery prompt's end.
    pub fn finish(&mut self, screen_rows: Option<&[String]>) -> Option<Finished> {
        let mut running = self.running.take()?;
        self.busy = false;
        self.expected = None;
        if running.recovery {
            return Some(Finished::Recovery(running.job));
        }
        if let Some(rows) = screen_rows
            && !(running.followed && running.output.fill_from_echo(rows, &running.job.text))
        {
            running.output.fill_gap(rows);
        }
        running.output.end();
        let settled = screen_rows
            .filter(|_| self.settled_result())
            .and_then(|rows| running.output.settled_text(rows));
        let panel = screen_rows
            .filter(|_| self.panel_result())
            .and_then(|rows| crate::detect::panel_answer(rows, &running.job.text));
        let mut output = settled.or(panel).unwrap_or_else(|| running.output.text());
        // A panel agent's own record of a turn that finished is its answer
        // as it said it (markdown and all); an error or a stop is the
        // screen's to tell.
        let recorded = self.panel_result()
            && running.ending == TurnEnding::Finished
            && running.errors.is_empty();
        if self.record_answer() {
            if let Some(answer) = running.hook_answer.take() {
                output = record::reconcile(Some(&output), &answer);
            }
        } else if let Some(answer) = running.hook_answer.as_ref().filter(|_| recorded) {
            // The tool calls drawn before the answer stay, as shown.
            output = record::reconcile(Some(&output), answer);
        } else if let Some(answer) = running.hook_answer.filter(|_| !self.panel_result()) {
            if output.trim().is_empty() || output.contains(GAP_LINE) {
                // The screen lost some of the answer (a flood, a reconnect)
                // or never showed one: the hook's final text is the answer.
                output = answer;
            } else if let Some(recorded) = record::replace_drawn(&output, &answer) {
                // The record (Claude Code's transcript, else its `Stop`
                // hook's text) is the answer as the model wrote it,
                // markdown kept; the rows the screen drew before it (tool
                // calls and their outcome) stay as the agent showed them,
                // the answer's rows (whole, or the first of a stream the
                // hook overtook) give way to it.
                output = recorded;
            } else if !shows_end_of(&output, &answer) {
                // The hook overtook the last frame (measured with Claude
                // Code 2.1.197: `Stop` can come before the final text is
                // drawn) before any of the answer was drawn: the answer
                // ends with the hook's text.
                output = format!(
                    "{}\n● {}",
                    without_bare_bullet(&output),
                    indent_rest(&answer)
                );
            }
        }
        let mut ending = running.ending;
        if ending == TurnEnding::Finished && only_errors(&output, &running.errors) {
            ending = TurnEnding::Failed;
        }
        let screen = screen_rows.map(|rows| rows.join("\n").trim_end().to_string());
        let kind = ProjectEventKind::Completed {
            output,
            screen: screen.unwrap_or_default(),
            seconds: running.started.elapsed().as_secs(),
            errors: running.errors.len(),
            ending,
            usage: running.usage,
            kept: None,
        };
        Some(Finished::Report(running.job, kind))
    }

    /// The running command ran out of time; `screen` is what the pane shows.
    pub fn time_out(&mut self, screen: String) -> Option<(Job, ProjectEventKind)> {
        let running = self.running.take()?;
        let kind = ProjectEventKind::TimedOut {
            screen,
            seconds: running.started.elapsed().as_secs(),
            unrecognised: !running.recognised,
        };
        Some((running.job, kind))
    }

    /// What the project is doing, for `/gsd:status`.
    pub fn status(&self, attached: bool) -> ProjectStatus {
        ProjectStatus {
            attached,
            starting: self.starting.is_some(),
            running: self.running.as_ref().map(|r| r.job.text.clone()),
            busy: self.busy,
            awaiting_approval: self.prompt.shown().map(|a| a.question.clone()),
            last_progress: self.last_progress.clone(),
            queued: self.queue.len(),
            mode: None,
        }
    }
}

/// Output of the agent pane (in tmux session `session`) that arrived at `now`, in
/// the order that keeps each turn's output its own: what fell due before it
/// (a turn's end, finished at once on the screen as it was), then the lines
/// it finishes (to the running command), then what they show.
pub fn take_output(
    runner: &mut JobRunner,
    watcher: &mut PaneWatcher,
    now: Millis,
    data: &[u8],
    session: &SessionName,
) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut due = Vec::new();
    watcher.tick(now, &mut |d| due.push(d));
    for d in due {
        for step in runner.on_detection(d, session) {
            match step {
                Step::Complete => {
                    let rows = watcher.pane().screen_rows();
                    steps.extend(runner.finish(Some(&rows)).map(Step::Finished));
                }
                step => steps.push(step),
            }
        }
    }
    let mut seen = Vec::new();
    let lines = watcher.feed_after_tick(now, data, &mut |d| seen.push(d));
    // The rows under the input box are read only when lines finish for a
    // running command (a statusline row reaches the output as a finished
    // line), not on every byte from tmux.
    if !lines.is_empty() && runner.running().is_some() {
        runner.footer(&watcher.footer_rows());
    }
    runner.lines(&lines);
    if !lines.is_empty() {
        steps.extend(read_answer(runner, watcher, now));
    }
    for d in seen {
        steps.extend(runner.on_detection(d, session));
    }
    steps
}

/// The running command's answer off `watcher`'s screen, when it changed
/// (see [`JobRunner::answer_news`]).
pub fn read_answer(runner: &mut JobRunner, watcher: &PaneWatcher, now: Millis) -> Option<Step> {
    // A dialog drawn is on its own card, not in the answer (it may not be
    // recognised yet: a dialog is confirmed once still).
    let screen = || (watcher.look().prompt.is_none()).then(|| watcher.pane().screen_rows());
    runner.answer_news(now, screen)
}

/// `text` without a last row that is only the agent's bullet: Claude Code
/// (2.1.332 and 2.1.197, against a model streaming 1-8 characters at a
/// time) draws a bare `●` before the answer's first word, a frame of the
/// row and no text of the answer. A row that grows (`  3.`, then `  3.
/// Crate 3 holds 9 pears.`) is the answer so far: the card's text is
/// replaced by the longer one, never added to.
/// The text otherwise stays as it is, its line ends too (the console
/// prints what a new text adds to the last).
fn drawn_rows(text: &str) -> &str {
    let trimmed = text.trim_end();
    let start = trimmed.rfind('\n').map_or(0, |i| i + 1);
    if trimmed[start..]
        .trim()
        .chars()
        .all(|c| matches!(c, '●' | '⏺'))
    {
        &text[..start]
    } else {
        text
    }
}

/// Alphanumeric characters of the end of the hook's text looked for on
/// screen: enough to be that text, few enough to survive how the screen
/// renders markdown and wraps rows.
const ANSWER_END_CHARS: usize = 48;

/// Whether `output` (read off the screen) shows the end of `answer` (the
/// hook's markdown). Compared on letters and digits only: the screen draws
/// `**bold**` as bold, and wraps long rows.
fn shows_end_of(output: &str, answer: &str) -> bool {
    let alnum = record::alnum;
    let answer = alnum(answer);
    let skip = answer.chars().count().saturating_sub(ANSWER_END_CHARS);
    let end: String = answer.chars().skip(skip).collect();
    alnum(output).contains(&end)
}

/// `output` without trailing blank rows and a last row that is only a
/// bullet: the first frame of the block whose text the hook overtook
/// (`●` drawn, its words not yet), which the hook's answer replaces.
fn without_bare_bullet(output: &str) -> &str {
    let output = output.trim_end();
    match output.rsplit_once('\n') {
        Some((above, last)) if matches!(last.trim(), "●" | "⏺") => above.trim_end(),
        None if matches!(output.trim(), "●" | "⏺") => "",
        _ => output,
    }
}

/// Whether the turn's `output` is nothing but the `errors` reported during
/// it (each error row, drawn as the agent draws it): the error cards said
/// it all. False when no error was reported, or the agent said more (an
/// answer after a retried error).
/// Most distinct explanation rows [`only_errors`] remembers (an error's
/// explanation is a row or two; a turn's output is bounded anyway).
const MAX_EXPLANATION_ROWS: usize = 16;

fn only_errors(output: &str, errors: &[String]) -> bool {
    // Aider's scanner (`░█`) may stand before an error row, or a frame of
    // it (`█░ Waiting for …`) glued to the row's start: the error's own
    // text is matched, wherever in the row.
    let core = |t: &str| -> String {
        t.trim()
            .trim_start_matches(['•', '●', '⏺', '■', '✕', '>', '░', '█', ' '])
            .trim()
            .to_owned()
    };
    let errors: Vec<String> = errors.iter().map(|e| core(e)).collect();
    // Rows under an error row, up to a retry notice, are its explanation
    // (litellm's `The API provider has rate limited you. …`); the notice
    // itself (`Retrying in 2.0 seconds...`) closes it, so an answer drawn
    // after a retry is never taken for part of the error.
    // An explanation row seen under an error is one wherever it stands: the
    // error row above it may be lost (drawn over by a frame of a spinner,
    // which the transcript leaves out).
    let mut in_error = false;
    let mut explained: Vec<String> = Vec::new();
    !errors.is_empty()
        && output.lines().map(core).all(|row| {
            if row.is_empty() {
                return true;
            }
            if (errors.iter()).any(|e| e.contains(&row) || row.contains(e.as_str())) {
                in_error = true;
                return true;
            }
            if is_retry_notice(&row) {
                in_error = false;
                return true;
            }
            if in_error && explained.len() < MAX_EXPLANATION_ROWS {
                explained.push(row);
                return true;
            }
            in_error || explained.contains(&row)
        })
}

/// Whether two reports of an error are the same error: the agent's
/// words for it (its hook's message) and a row the screen drew of it
/// (`● API Error: 500 …`, maybe cut at the pane's edge), compared on
/// letters and digits, one holding the other.
fn same_error(a: &str, b: &str) -> bool {
    let (a, b) = (record::alnum(a), record::alnum(b));
    !a.is_empty() && !b.is_empty() && (a.contains(&b) || b.contains(&a))
}

/// `Retrying in 0.5 seconds...`: an agent's note that it will send the
/// failed request again (Aider, through litellm, doubling the wait).
fn is_retry_notice(row: &str) -> bool {
    row.strip_prefix("Retrying in ")
        .and_then(|r| r.strip_suffix(" seconds..."))
        .is_some_and(|n| n.parse::<f64>().is_ok())
}

/// Lines after the first indented as the agent indents a block's rows.
fn indent_rest(text: &str) -> String {
    text.trim_end().replace('\n', "\n  ")
}

/// `42% · 3/10 · phase 2 · EXECUTING WAVE 1`: the fields a line had.
fn describe(p: &ProgressFields) -> String {
    let mut parts = Vec::new();
    if let Some(stage) = &p.stage {
        parts.push(stage.clone());
    }
    if let Some(phase) = p.phase {
        parts.push(format!("phase {phase}"));
    }
    if let (Some(done), Some(total)) = (p.done, p.total) {
        parts.push(format!("{done}/{total}"));
    }
    if let Some(percent) = p.percent {
        parts.push(format!("{percent}%"));
    }
    parts.join(" · ")
}
