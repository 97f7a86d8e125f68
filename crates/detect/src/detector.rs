//! The per-pane detector state machine, sans-IO: finished lines and screen
//! snapshots in, [`Detection`]s out, time injected as [`Millis`].
//!
//! Line detections (error, progress) fire as soon as their line is
//! finished. Screen detections (busy, approval, completion) are evaluated
//! once the output has been quiet for `settle` (a frame drawn in several
//! writes is judged whole, so a half-drawn menu is never reported), a new
//! approval prompt once it has been still for `prompt_quiet` (a frame split
//! by a loaded machine can show a quoted menu at the bottom for a moment;
//! a checkpoint, which ends a turn, for `debounce` like any turn end), one
//! gone once it has been missing that long (half a frame can lack a dialog
//! being redrawn),
//! and a turn is completed when the idle prompt has stayed on screen, with
//! no busy marker, for `debounce` after the last output.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use super::lines::{LineHit, ProgressFields};
use super::marks::Marks;
use super::profiles::Profile;
use super::redrawn::Redrawn;
use super::screen::{self, Prompt, TurnEnd};
use super::stall::{DEFAULT_STALL_QUIET, Look, Stall};
use super::turn::{Run, StartUp, Turn, Typed};
use super::{ApprovalKind, Detection, DetectionKind, Millis, PaneId};
use clawmux_pane::signal::{AgentState, Signal};

/// Detector timing and context knobs.
#[derive(Debug, Clone)]
pub struct DetectorConfig {
    /// Quiet time with the idle prompt showing before a turn is completed.
    pub debounce: Duration,
    /// Quiet time before the screen is judged (busy, approvals, idle).
    pub settle: Duration,
    /// Quiet time before a new approval prompt is reported: a prompt waits
    /// for its answer, so it is still; text that only looks like one for a
    /// moment (half a frame) is not.
    pub prompt_quiet: Duration,
    /// Finished lines kept as context for errors and progress (a
    /// completion's context is the last twice-as-many screen rows).
    pub context_lines: usize,
    /// How long a busy screen may show nothing new but its busy row
    /// before it is reported stalled (see `stall`); zero: never.
    pub stall_quiet: Duration,
}

/// Default completion debounce: Claude Code redraws its spinner every
/// ~100 ms, so 300 ms of an idle prompt with no output is a finished turn.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(300);
/// Default settle time: one frame arrives within this even when tmux
/// splits it into several `%output` lines.
pub const DEFAULT_SETTLE: Duration = Duration::from_millis(2);
/// Default prompt quiet time: a frame split across reads on a loaded
/// machine was seen to finish 12 ms later; an approval card 50 ms later is
/// still far quicker than a person.
pub const DEFAULT_PROMPT_QUIET: Duration = Duration::from_millis(50);
/// Longest a new dialog whose body is still a placeholder (`…` where the
/// diff goes) waits for the body before it is reported anyway: Claude Code
/// computes the diff after drawing the dialog; a card should show it, but a
/// slow diff must not hold the card back for long.
pub const MAX_LOADING_WAIT: Duration = Duration::from_millis(250);
/// How long an agent state said in-band (OSC 7501, a title, a
/// notification) outlives a screen that does not bear it out (`working`
/// with no busy row and no output, `blocked` with no dialog drawn, `done`
/// with no closing row) before it lapses and the screen alone decides.
/// Anything that prints into the pane can write those sequences; a false
/// one must not hold a project for good. Long enough for an agent that
/// says `working` while its model thinks without drawing anything (Codex
/// shows no busy row once its answer streams).
pub const STATE_LAPSE: Duration = Duration::from_secs(60);
/// How long a turn that looks idle but shows neither the row that closes a
/// finished turn nor an error, interruption or refusal row (see
/// [`screen::TurnEnd::unclosed`]) must stay quiet before it is taken as
/// ended: Claude Code 2.1.197 hides its spinner while an answer streams
/// and draws the answer a line at a time, so a line that streams for a
/// second or two leaves an idle-looking screen; a turn that truly ended
/// without its closing row (a local command) is reported this much later.
pub const UNCLOSED_QUIET: Duration = Duration::from_secs(4);

/// How long a new agent's screen and in-band states stay quiet before its
/// start-up is over: Codex 0.171.0 says `idle` once it draws its prompt,
/// and at times `working`, `idle` again within 50 ms (taken for the first
/// command's own work and end when that was typed in between).
pub const START_QUIET: Duration = Duration::from_secs(1);

/// How long the screen of an agent that says its state in-band must stay
/// idle after it took a command without ever saying it works before that
/// command is over: Codex's own commands (`/plan`, `/model`) draw a row
/// and no model turn, with no state at all. A real turn says `working` as
/// it is submitted, far sooner than this even on a loaded machine.
pub const SILENT_COMMAND_QUIET: Duration = Duration::from_secs(10);
/// Default number of context lines.
pub const DEFAULT_CONTEXT_LINES: usize = 5;

impl Default for DetectorConfig {
    fn default() -> Self {
        DetectorConfig {
            debounce: DEFAULT_DEBOUNCE,
            settle: DEFAULT_SETTLE,
            prompt_quiet: DEFAULT_PROMPT_QUIET,
            context_lines: DEFAULT_CONTEXT_LINES,
            stall_quiet: DEFAULT_STALL_QUIET,
        }
    }
}

/// Watches one pane's text and screen.
pub struct Detector {
    pane: PaneId,
    profile: Arc<Profile>,
    config: DetectorConfig,
    /// The last `context_lines` finished lines.
    recent: VecDeque<String>,
    /// Reused buffer: the current batch of lines joined by `\n`.
    batch: String,
    last_output: Millis,
    /// When the screen is due to be judged.
    settle_at: Option<Millis>,
    /// When the turn completes unless more output comes.
    complete_at: Option<Millis>,
    busy: bool,
    /// Watched through snapshots of its screen (see [`Detector::set_flooding`]).
    flooding: bool,
    /// Where the turn stands: begun (busy seen, [`Detector::begin_turn`],
    /// [`Detector::typed`]) and not completed yet, or a new agent starting
    /// ([`Detector::begin_start_up`]).
    turn: Turn,
    prompt: Option<Prompt>,
    /// A question answered before this detector reported its prompt (see
    /// [`Detector::answered`]).
    answered: Option<String>,
    /// The dialog last answered and the option chosen, while judged
    /// screens still show it with its cursor moved onto that option (see
    /// [`Detector::forget_prompt`]).
    answered_dialog: Option<(Prompt, String)>,
    /// The last non-empty screen rows when the screen was last judged: the
    /// context of a completion.
    screen_tail: String,
    /// Per approval rule: its header was printed since its prompt was last
    /// answered (see `screen::analyse`).
    printed: Vec<bool>,
    /// The retry status last reported this turn (`retrying 1/2`).
    retry: Option<String>,
    /// How the turn on the last judged idle screen ended (agent profiles).
    turn_end: Option<TurnEnd>,
    /// When a new dialog with a placeholder body was first seen.
    loading_since: Option<Millis>,
    /// Since when the prompt known has been missing from the screen.
    gone_since: Option<Millis>,
    /// The mode the agent's footer last showed, by its profile's name.
    mode: Option<String>,
    /// What the agent last said it does (OSC 7501), which wins over its
    /// screen: Codex shows no busy row once the model's output streams.
    agent_state: Option<AgentState>,
    /// When `agent_state` was last said.
    state_at: Millis,
    /// The text in the input box at the last judged screen, with the
    /// transcript above it then: a command typed at the desk (not through
    /// [`Detector::typed`]) shows its submission by leaving the box for the
    /// transcript.
    desk_input: Option<(String, u64)>,
    /// Progress reported and the screen last judged: a redraw's lines are
    /// not reported again.
    redrawn: Redrawn,
    /// Whether the busy screen has shown nothing new for too long.
    stall: Stall,
}

impl Detector {
    /// A detector for `pane` using `profile`.
    pub fn new(pane: PaneId, profile: Arc<Profile>, config: DetectorConfig) -> Self {
        let rules = profile.approvals.len();
        Detector {
            pane,
            profile,
            recent: VecDeque::new(),
            batch: String::new(),
            last_output: Millis(0),
            settle_at: None,
            complete_at: None,
            busy: false,
            flooding: false,
            turn: Turn::Between {
                said_working: false,
            },
            prompt: None,
            answered: None,
            answered_dialog: None,
            screen_tail: String::new(),
            printed: vec![false; rules],
            retry: None,
            turn_end: None,
            loading_since: None,
            gone_since: None,
            mode: None,
            agent_state: None,
            state_at: Millis(0),
            desk_input: None,
            redrawn: Redrawn::default(),
            stall: Stall::new(config.stall_quiet),
            config,
        }
    }

    /// The permission mode the agent's footer last showed (agent profiles).
    pub fn mode(&self) -> Option<&str> {
        self.mode.as_deref()
    }

    /// The profile this detector uses.
    pub(crate) fn profile(&self) -> &Profile {
        &self.profile
    }

    /// Says a turn has begun (a command was just sent), so its completion is
    /// reported even if the agent never shows a busy marker. The command
    /// typed just before ([`Detector::typed`]) stays this turn's.
    pub fn begin_turn(&mut self) {
        match &mut self.turn {
            Turn::Running(run) => {
                run.worked = false;
                run.end_unconfirmed = false;
            }
            turn => *turn = Turn::Running(Run::default()),
        }
    }

    /// Says a new agent is starting: its idle screen completes this "turn"
    /// once the agent said its profile's `start_states` (Codex: `idle`) and
    /// stayed quiet for [`START_QUIET`]. What it says then is never a
    /// turn's work or end.
    pub fn begin_start_up(&mut self) {
        self.turn = Turn::StartUp(StartUp::default());
    }

    /// A command was typed: a turn begins, and it cannot complete while the
    /// input box still shows the command. A loaded machine can leave typed
    /// text in the box (echoed by the terminal) for longer than the debounce
    /// before the agent takes it; the box then looks idle.
    pub fn typed(&mut self, command: &str) {
        self.type_command(command, None);
    }

    /// [`Detector::typed`] with the screen as it was just before the keys
    /// (`rows`): any change of the transcript above the input box then
    /// shows the agent took the command, even one it answers without a
    /// busy spell or an echo (Claude Code's `Unknown command`).
    pub fn typed_on(&mut self, command: &str, rows: &[String]) {
        let before = transcript_hash(&self.profile, rows);
        self.type_command(command, Some(before));
    }

    fn type_command(&mut self, command: &str, transcript_before: Option<u64>) {
        self.turn = Turn::Running(Run {
            typed: Some(Typed {
                command: command.to_owned(),
                taken_at: None,
                transcript_before,
            }),
            ..Run::default()
        });
    }

    /// The prompt asking `question` was answered (typed from chat). When
    /// this detector has not reported that prompt (it started after the
    /// prompt appeared: a restart, a new client), the next judged screen
    /// may still show it until the agent redraws; it is then taken as the
    /// prompt already reported, not a new one. A judged screen without it
    /// forgets the question, so the same question asked again is reported.
    pub fn answered(&mut self, question: &str) {
        if self.prompt.as_ref().is_none_or(|p| p.question != question) {
            self.answered = Some(question.to_string());
        }
    }

    /// The prompt on screen was answered with option `chosen` (the agent
    /// took the keys): a prompt judged next is a new one, even one that
    /// looks the same (the same command asked about twice), except the
    /// answered dialog itself still drawn with its cursor moved onto
    /// `chosen`. Gemini CLI moves its cursor onto the option whose digit
    /// was typed and closes the dialog ~0.4 s later: that frame is the
    /// answer on its way out. A dialog drawn anew starts with its cursor
    /// where the answered one started, and is reported.
    pub fn forget_prompt(&mut self, now: Millis, chosen: Option<&str>) {
        self.answered_dialog = (self.prompt.take()).zip(chosen.map(str::to_owned));
        self.loading_since = None;
        self.judge_soon(now);
    }

    /// The pane floods and is watched through snapshots of its screen
    /// (`tmux::FloodLimits`) from `now`, or is streamed again. The time
    /// between snapshots is not silence, so no turn completes while it
    /// floods; when it streams again the screen is judged and the debounce
    /// starts over, as after new output.
    pub fn set_flooding(&mut self, now: Millis, flooding: bool) {
        self.flooding = flooding;
        self.complete_at = None;
        if !flooding {
            self.last_output = now;
            self.judge_soon(now);
        }
    }

    /// When output last arrived (or the screen was last taken as new).
    pub fn last_output(&self) -> Millis {
        self.last_output
    }

    /// Judges the screen at the next tick even if nothing new arrives
    /// (e.g. a turn adopted after a restart may have ended meanwhile).
    pub fn judge_soon(&mut self, now: Millis) {
        self.settle_at = Some(now + self.config.settle);
    }

    /// New output arrived at `now`; `lines` are the lines it finished (from
    /// [`clawmux_pane::Pane::feed`]). Emits line detections at once and
    /// schedules the screen to be judged after the settle time.
    pub fn feed(&mut self, now: Millis, lines: &[String], sink: &mut impl FnMut(Detection)) {
        self.last_output = now;
        self.settle_at = Some(now + self.config.settle);
        self.complete_at = None;
        if lines.is_empty() {
            return;
        }
        self.batch.clear();
        for (i, line) in lines.iter().enumerate() {
            if i > 0 {
                self.batch.push('\n');
            }
            self.batch.push_str(line);
        }
        let mut hits = Vec::new();
        self.profile
            .lines
            .scan(&self.batch, |i, h| hits.push((i, h)));
        let mut hits = hits.into_iter().peekable();
        for (i, line) in lines.iter().enumerate() {
            while let Some((_, hit)) = hits.next_if(|(at, _)| *at == i) {
                let kind = match hit {
                    LineHit::Error => DetectionKind::Error { line: line.clone() },
                    // A redraw finished it again: reported already.
                    LineHit::Progress(_) if self.redrawn.is_redrawn(line) => continue,
                    LineHit::Progress(fields) => {
                        self.redrawn.told(line);
                        DetectionKind::Progress(fields)
                    }
                    LineHit::Header(rule) => {
                        self.printed[rule] = true;
                        continue;
                    }
                };
                let context = self.context_with(line);
                sink(self.detection(now, kind, context));
            }
            self.remember(line);
        }
    }

    /// The next time [`Detector::tick`] has work, if any.
    pub fn next_deadline(&self) -> Option<Millis> {
        [self.settle_at, self.complete_at, self.stall.due()]
            .into_iter()
            .flatten()
            .min()
    }

    /// Does what is due at `now`: judges the screen (`screen` gives its
    /// rows, as [`clawmux_pane::Pane::screen_rows`]) and reports a completed
    /// turn.
    pub fn tick(
        &mut self,
        now: Millis,
        screen: impl FnOnce() -> Vec<String>,
        sink: &mut impl FnMut(Detection),
    ) {
        // Detections are stamped with when they became true (the deadline),
        // which is `now` when the caller ticks on time.
        // A judgment can put off a new prompt's to a time already past:
        // judge again, on the same screen.
        let mut screen = Some(screen);
        let mut rows: Option<Vec<String>> = None;
        // A stall falls due without output: the screen is judged then.
        if let Some(due) = self.stall.due().filter(|at| *at <= now) {
            self.settle_at = Some(self.settle_at.map_or(due, |at| at.min(due)));
        }
        while let Some(at) = self.settle_at.filter(|at| *at <= now) {
            self.settle_at = None;
            if rows.is_none() {
                rows = screen.take().map(|screen| screen());
            }
            self.judge_screen(at, rows.as_deref().unwrap_or_default(), sink);
        }
        if let Some(at) = self.complete_at.filter(|at| *at <= now) {
            self.complete_at = None;
            self.turn = Turn::Between {
                said_working: false,
            };
            self.retry = None;
            // How it ended comes first: the agent's error, the user's
            // interruption or the agent's refusal, then the completion.
            if let Some(end) = self.turn_end.take() {
                let ends = [
                    end.error.map(|line| DetectionKind::Error { line }),
                    end.interrupted
                        .map(|line| DetectionKind::Interrupted { line }),
                    end.rejected.map(|line| DetectionKind::Rejected { line }),
                ];
                for kind in ends.into_iter().flatten() {
                    sink(self.detection(at, kind, end.context.clone()));
                }
            }
            let context = self.screen_tail.clone();
            sink(self.detection(at, DetectionKind::Completed, context));
        }
    }

    /// Takes a second signal from the pane's output (see
    /// [`clawmux_pane::signal`]): an agent's own state is judged with the
    /// screen at once.
    pub fn signal(&mut self, now: Millis, signal: &Signal) {
        // A profile may read the agent's state off its window title or its
        // notifications (Gemini CLI has no state sequence).
        let (state, titled) = match signal {
            // Only the agent's own sequence counts: the app its profile
            // names. A shell (an adopted pane) names none, so a file
            // holding `state=working` that is `cat` there is just text.
            Signal::State { state, app, .. } => {
                if self.profile.state_app.as_deref() != Some(app.as_str()) {
                    tracing::debug!(pane = %self.pane, app, "state sequence of another app ignored");
                    return;
                }
                (Some(*state), false)
            }
            Signal::Title(title) => {
                let mut states = self.profile.title_states.iter();
                let state = states.find(|(re, _)| re.is_match(title));
                (state.map(|(_, s)| *s), true)
            }
            Signal::Notification { title, body } => {
                let text = format!("{title}\n{body}");
                let mut states = self.profile.notification_states.iter();
                let state = states.find(|(re, _)| re.is_match(&text));
                (state.map(|(_, s)| *s), true)
            }
        };
        let Some(state) = state else { return };
        tracing::debug!(pane = %self.pane, ?state, signal = signal_name(signal), "agent state");
        let before = self.agent_state.replace(state);
        self.state_at = now;
        self.settle_at = Some(now + self.config.settle);
        self.complete_at = None;
        match &mut self.turn {
            // What it says while it starts is the start-up's, never a
            // turn's work or end.
            Turn::StartUp(start) => start.said(state, &self.profile.start_states),
            Turn::Running(run) => {
                // Codex says `working` then `idle` while it starts: only
                // work after it was ready once is a turn's (a start-up not
                // followed through: an adopted pane), and a turn's end
                // (`done`, `error`) or dialog is one whatever came before.
                // A title says `working` only for a turn (none while it
                // starts); a notification never says it.
                let ready_before = before.is_some() || titled;
                run.worked |= ready_before && matches!(state, AgentState::Working)
                    || matches!(
                        state,
                        AgentState::Blocked | AgentState::Done | AgentState::Error
                    );
                // A turn's end said in-band waits for the screen to show it
                // where the profile names the row that closes a turn;
                // `idle` after `working` ends the turn just the same.
                run.end_unconfirmed = self.profile.turn_closed.is_some()
                    && match state {
                        AgentState::Done | AgentState::Error => true,
                        AgentState::Idle => {
                            run.end_unconfirmed
                                || (run.worked
                                    && matches!(
                                        before,
                                        Some(AgentState::Working | AgentState::Blocked)
                                    ))
                        }
                        AgentState::Working | AgentState::Blocked => false,
                    };
            }
            Turn::Between { said_working } => {
                *said_working |= before.is_some() && matches!(state, AgentState::Working);
            }
        }
    }

    fn judge_screen(&mut self, now: Millis, rows: &[String], sink: &mut impl FnMut(Detection)) {
        let printed = &self.printed;
        let mut state = screen::analyse(&self.profile, rows, |rule| printed[rule]);
        match self.said_state(now, &state, rows) {
            Some(AgentState::Working) => {
                state.idle = false;
                state.turn_end = None;
                state.busy = state.busy.or_else(|| Some("state=working".to_owned()));
            }
            Some(AgentState::Blocked) => {
                state.idle = false;
                state.turn_end = None;
            }
            _ => {}
        }
        if let Some(mode) = state.mode.take() {
            self.mode = Some(mode);
        }
        // A command submitted at the desk whose whole turn was drawn in one
        // frame (an API error answered at once, no busy row between): the
        // box emptied, and the transcript changed and echoes what it held.
        let transcript = transcript_hash(&self.profile, rows);
        if let Some((text, before)) = self.desk_input.take()
            && !self.turn.is_on()
            && state.input.as_deref().is_none_or(str::is_empty)
            && before != transcript
            && echoed(&self.profile, rows, &text)
        {
            self.begin_turn();
        }
        self.desk_input = (state.input.clone())
            .filter(|text| !text.is_empty())
            .map(|text| (text, transcript));
        match &state.busy {
            Some(line) => {
                if !self.busy {
                    sink(self.detection(now, DetectionKind::Busy, line.clone()));
                }
                self.busy = true;
                // A turn seen on screen, its work as far as the agent said.
                if let Turn::Between { said_working } = self.turn {
                    self.turn = Turn::Running(Run {
                        worked: said_working,
                        ..Run::default()
                    });
                }
            }
            None => self.busy = false,
        }
        self.judge_stall(now, rows, &state, sink);
        self.redrawn.screen(rows);
        // A retry is the agent's status while it works, reported once.
        if let Some(retry) = &state.retry
            && self.retry.as_ref() != Some(retry)
        {
            self.retry = Some(retry.clone());
            let fields = ProgressFields {
                stage: Some(retry.clone()),
                ..ProgressFields::default()
            };
            let context = state.busy.clone().unwrap_or_default();
            sink(self.detection(now, DetectionKind::Progress(fields), context));
        }
        // The prompt answered before it was reported, still on screen: known.
        if let Some(question) = self.answered.take()
            && self.prompt.is_none()
            && state
                .prompt
                .as_ref()
                .is_some_and(|p| p.question == question)
        {
            self.prompt = state.prompt.clone();
        }
        // The dialog just answered, drawn with its cursor moved onto the
        // answer since it was reported (see `forget_prompt`): gone as far
        // as dialogs go. Forgotten once a screen still for `prompt_quiet`
        // shows something else: a frame drawn halfway (the answer's
        // redraw cut between two reads) is no sign it went.
        if let Some((old, chosen)) = self.answered_dialog.take() {
            let showing_answer = state.prompt.as_ref().is_some_and(|shown| {
                let marks = &self.profile.marks;
                let at = shown.cursor_key(marks);
                same(marks, shown, &old)
                    && at.as_deref() == Some(&chosen)
                    && at != old.cursor_key(marks)
            });
            if showing_answer {
                state.prompt = None;
            }
            if showing_answer || now < self.last_output + self.config.prompt_quiet {
                self.answered_dialog = Some((old, chosen));
            }
        }
        let changed = match (&state.prompt, &self.prompt) {
            (Some(a), Some(b)) => !same(&self.profile.marks, a, b),
            (a, b) => a.is_some() != b.is_some(),
        };
        // A prompt is gone once it has been missing for `prompt_quiet`,
        // output or not: half a frame can lack the dialog its agent is
        // redrawing (Gemini CLI moving its cursor onto an answer), but an
        // agent streaming its next answer must not hold the card open.
        if changed && state.prompt.is_none() {
            let until = *self.gone_since.get_or_insert(now) + self.config.prompt_quiet;
            if now < until {
                self.settle_at = Some(until);
                self.complete_at = None;
                return;
            }
        }
        self.gone_since = None;
        // A new prompt is judged again once it has been still long enough.
        // A checkpoint is the end of a turn that asks something: it waits
        // as long as any turn end (a loaded machine was seen to draw a
        // frame without the spinner row while the agent still wrote).
        let quiet = match &state.prompt {
            Some(p) if p.kind == ApprovalKind::Checkpoint => self.quiet_before_end(state.unclosed),
            _ => self.config.prompt_quiet,
        };
        let still_at = self.last_output + quiet;
        if changed && state.prompt.is_some() && now < still_at {
            self.settle_at = Some(still_at);
            self.complete_at = None;
            return;
        }
        // A new dialog still drawing its body waits a little for it.
        if changed && state.prompt.as_ref().is_some_and(|p| p.loading) {
            let until = *self.loading_since.get_or_insert(now) + MAX_LOADING_WAIT;
            if now < until {
                self.settle_at = Some(until);
                self.complete_at = None;
                return;
            }
        }
        self.loading_since = None;
        if changed {
            if let Some(old) = self.prompt.take() {
                if let Some(rule) = self
                    .profile
                    .approvals
                    .iter()
                    .position(|r| r.kind == old.kind)
                {
                    self.printed[rule] = false;
                }
                let kind = DetectionKind::ApprovalGone {
                    approval: old.kind,
                    question: old.question,
                };
                sink(self.detection(now, kind, old.context));
            }
            if let Some(new) = &state.prompt {
                sink(self.detection(now, approval_of(new), new.context.clone()));
            }
        }
        // The same dialog, its body drawn since it was reported (its first
        // frame showed `…` where the diff goes, and the wait for the rest
        // ran out): reported again, whole.
        if !changed
            && let (Some(new), Some(old)) = (&state.prompt, &self.prompt)
            && old.loading
            && !new.loading
            && new.body != old.body
        {
            sink(self.detection(now, approval_of(new), new.context.clone()));
        }
        // The same dialog stays known as first seen, its cursor where it
        // started (see `forget_prompt`), unless its body was drawn since.
        if changed || self.prompt.as_ref().is_some_and(|p| p.loading) {
            self.prompt = state.prompt;
        }
        self.turn_end = state.turn_end;
        self.screen_tail = tail(rows, self.config.context_lines * 2);
        // The box shows the typed command, or (wrapped) its beginning.
        let typed = self.turn.run().and_then(|run| run.typed.as_ref());
        let in_box = typed
            .zip(state.input.as_deref())
            .is_some_and(|(typed, shown)| {
                !shown.is_empty() && typed.command.trim_start().starts_with(shown)
            });
        // With an input box, a typed command's turn is this turn only once
        // the agent took it: it went busy, asked, or echoed the command in
        // its transcript. Until then the screen (its box emptied, the last
        // turn's answer below) is the previous turn's, however idle it looks:
        // a loaded machine was seen to take longer than the debounce.
        if let Some(typed) = typed.filter(|typed| typed.taken_at.is_none()) {
            // A transcript that changed took the command even without a busy
            // spell or an echo (`Unknown command`). Above an input box only
            // once it ends the turn (the agent's refusal, error or
            // interruption row): Claude Code 2.1.332 animates its logo for
            // a while after it starts. A line-mode agent (Aider) draws
            // nothing but the turn.
            let ends_turn = self.profile.prompt_row.is_some()
                || (self.turn_end.as_ref()).is_some_and(|e| {
                    e.rejected.is_some() || e.error.is_some() || e.interrupted.is_some()
                });
            let transcript_changed = !in_box
                && ends_turn
                && (typed.transcript_before)
                    .is_some_and(|before| before != transcript_hash(&self.profile, rows));
            let taken = state.busy.is_some()
                || self.prompt.is_some()
                || transcript_changed
                || echoed(&self.profile, rows, &typed.command);
            if let Some(typed) = (self.turn.run_mut())
                .and_then(|run| run.typed.as_mut())
                .filter(|_| taken)
            {
                typed.taken_at = Some(now);
            }
        }
        let typed = self.turn.run().and_then(|run| run.typed.as_ref());
        let untaken = in_box
            || (state.input.is_some() && typed.is_some_and(|typed| typed.taken_at.is_none()));
        // Has the agent said it is done with what this "turn" is? A turn's
        // work said (or the screen's busy row), a start-up's states.
        let worked = match &self.turn {
            Turn::Between { .. } => false,
            Turn::StartUp(start) => start.ready(&self.profile.start_states),
            Turn::Running(run) => run.worked,
        };
        // A command taken that the agent never said it works on (its own
        // command, no model turn) is over once the screen stayed idle for
        // `SILENT_COMMAND_QUIET`: the screen alone decides, never wedged.
        let silent_until = (self.profile.state_sequence && !worked && state.idle)
            .then(|| self.turn.run().and_then(Run::taken_at))
            .flatten()
            .map(|at| at.max(self.last_output) + SILENT_COMMAND_QUIET);
        let silent_over = silent_until.is_some_and(|until| now >= until);
        if let Some(until) = silent_until.filter(|_| !silent_over) {
            self.settle_at = Some(self.settle_at.map_or(until, |at| at.min(until)));
        }
        let said_done = !self.profile.state_sequence || worked || silent_over;
        self.complete_at = (self.turn.is_on()
            && state.idle
            && said_done
            && !untaken
            && self.prompt.is_none()
            && !self.flooding)
            .then(|| {
                let quiet = match self.turn {
                    Turn::StartUp(_) => self.last_output.max(self.state_at) + START_QUIET,
                    _ => self.last_output + self.quiet_before_end(state.unclosed),
                };
                // Stamped when the silent command was found over.
                match silent_until.filter(|_| !worked) {
                    Some(until) => quiet.max(until),
                    None => quiet,
                }
            });
    }

    /// Whether the busy screen `rows` (judged as `state`) showed nothing
    /// new but its busy rows for the stall time, or changed again after a
    /// stall (see `stall`). Only a profile that names its busy rows can
    /// tell them from the rest: a shell's silent command is not a stall.
    fn judge_stall(
        &mut self,
        now: Millis,
        rows: &[String],
        state: &screen::ScreenState,
        sink: &mut impl FnMut(Detection),
    ) {
        let profile = &self.profile;
        if profile.busy.is_empty() && profile.spinner.is_empty() {
            return;
        }
        let busy_row = |r: &str| profile.busy.is_match(r) || profile.spinner.is_match(r);
        // Snapshots of a flooding pane are not its silence.
        let busy = state.busy.is_some() && !self.flooding;
        if let Some(kind) = self.stall.judge(now, Look::of(rows, busy_row, busy)) {
            let context = state.busy.clone().unwrap_or_default();
            sink(self.detection(now, kind, context));
        }
    }

    /// How long an idle screen must stay quiet before its turn is over
    /// (`unclosed`: see [`screen::ScreenState::unclosed`]).
    fn quiet_before_end(&self, unclosed: bool) -> Duration {
        if unclosed {
            self.config.debounce.max(UNCLOSED_QUIET)
        } else {
            self.config.debounce
        }
    }

    /// The state the agent said in-band, as far as the screen bears it
    /// out: a `done`/`error` its profile wants confirmed reads as
    /// `working` until the turn's closing row or an error row is drawn; a
    /// `working` or `blocked` (or that unconfirmed end) the screen does not
    /// show lapses after [`STATE_LAPSE`] without output, and the screen
    /// alone decides from then on. Never wedged by a sequence anyone
    /// printed.
    fn said_state(
        &mut self,
        now: Millis,
        screen: &screen::ScreenState,
        rows: &[String],
    ) -> Option<AgentState> {
        if let Some(run) = self.turn.run_mut()
            && run.end_unconfirmed
            && screen::turn_closed(&self.profile, rows)
        {
            run.end_unconfirmed = false;
        }
        let end_unconfirmed = self.turn.run().is_some_and(|run| run.end_unconfirmed);
        let said = match self.agent_state {
            Some(AgentState::Done | AgentState::Error | AgentState::Idle) if end_unconfirmed => {
                Some(AgentState::Working)
            }
            other => other,
        };
        let borne_out = match said {
            Some(AgentState::Working) => !end_unconfirmed && screen.busy.is_some(),
            Some(AgentState::Blocked) => screen.prompt.is_some(),
            _ => true,
        };
        if borne_out {
            return said;
        }
        let lapse_at = self.last_output.max(self.state_at) + STATE_LAPSE;
        if now < lapse_at {
            // Judged again then, output or not.
            self.settle_at = Some(self.settle_at.map_or(lapse_at, |at| at.min(lapse_at)));
            return said;
        }
        tracing::info!(pane = %self.pane, state = ?said, "agent state lapsed: the screen does not show it");
        self.agent_state = None;
        // The screen alone decides this turn's end now, taken as new: the
        // debounce starts over from here.
        match &mut self.turn {
            Turn::Running(run) => {
                run.end_unconfirmed = false;
                run.worked = true;
            }
            Turn::StartUp(start) => start.lapsed(),
            // The next turn the screen shows ends on the screen too.
            Turn::Between { said_working } => *said_working = true,
        }
        self.last_output = now;
        None
    }

    fn detection(&self, at: Millis, kind: DetectionKind, context: String) -> Detection {
        Detection {
            pane: self.pane,
            at_ms: at,
            kind,
            context,
        }
    }

    /// The recent lines followed by `line`.
    fn context_with(&self, line: &str) -> String {
        let mut out = String::new();
        for l in &self.recent {
            out.push_str(l);
            out.push('\n');
        }
        out.push_str(line);
        out
    }

    fn remember(&mut self, line: &str) {
        if self.config.context_lines == 0 {
            return;
        }
        if self.recent.len() == self.config.context_lines {
            self.recent.pop_front();
        }
        self.recent.push_back(line.to_owned());
    }
}

/// The name of `signal`'s kind in the log (the agents' table names it the
/// same way).
fn signal_name(signal: &Signal) -> &'static str {
    match signal {
        Signal::Title(_) => "title",
        Signal::State { .. } => "osc-7501",
        Signal::Notification { .. } => "osc-777",
    }
}

/// The same prompt with other rows around it is still the same prompt;
/// one with another body (a second edit of the same file, asked the same
/// way) is another, unless the first (`b`) was still drawing its body. A
/// multi-select list with other options ticked is the same question
/// being answered (a digit ticks, the tab's chip shows it answered).
fn same(marks: &Marks, a: &Prompt, b: &Prompt) -> bool {
    (a.kind, &a.question) == (b.kind, &b.question)
        && a.asked_options() == b.asked_options()
        && (a.asked_body(marks) == b.asked_body(marks) || b.loading)
}

/// The detection that reports the dialog `p`.
fn approval_of(p: &super::screen::Prompt) -> DetectionKind {
    DetectionKind::Approval {
        approval: p.kind,
        question: p.question.clone(),
        body: p.body.clone(),
        options: p.options.clone(),
    }
}

/// The last `n` non-empty rows of `rows`, joined.
fn tail(rows: &[String], n: usize) -> String {
    let filled: Vec<&str> = rows
        .iter()
        .map(String::as_str)
        .filter(|r| !r.trim().is_empty())
        .collect();
    filled[filled.len().saturating_sub(n)..].join("\n")
}

/// The row of the agent's input box: its input row right under a `─` rule.
fn input_box_row(profile: &Profile, rows: &[String]) -> Option<usize> {
    (1..rows.len()).rev().find(|&i| {
        profile.marks.is_input(rows[i].trim_start()) && rows[i - 1].trim_start().starts_with("───")
    })
}

/// Whether the transcript on screen echoes `typed` as a submitted prompt:
/// a `❯` row other than the input box whose text begins the command (or,
/// wrapped, is begun by it).
fn echoed(profile: &Profile, rows: &[String], typed: &str) -> bool {
    // A line-mode agent's input is its cursor row, the last (Aider's
    // `diff> text`); its echo is a row above it that shows its prompt and
    // the command.
    let input = match profile.input_at_cursor {
        true => rows.len().checked_sub(1),
        false => input_box_row(profile, rows),
    };
    (rows.iter().enumerate()).any(|(i, row)| {
        Some(i) != input && (profile.is_echo(row, typed) || is_line_echo(profile, row, typed))
    })
}

/// Whether `row` is a line-mode agent's prompt holding `typed` (see the
/// profile's `input`): the echo of that command once it was taken.
fn is_line_echo(profile: &Profile, row: &str, typed: &str) -> bool {
    let first_line = typed.trim().lines().next().unwrap_or_default();
    let shown = (profile.input.as_ref())
        .filter(|_| profile.input_at_cursor)
        .and_then(|re| re.captures(row.trim_end()))
        .and_then(|c| c.get(1))
        .map(|m| m.as_str().trim());
    shown.is_some_and(|shown| {
        !shown.is_empty() && (first_line.starts_with(shown) || shown.starts_with(first_line))
    })
}

impl Profile {
    /// Whether `row` shows the agent's echo mark and then text that begins
    /// `typed`'s first line (or, wrapped, is begun by it): the agent's echo
    /// of that submitted command, or the input box holding it.
    pub fn is_echo(&self, row: &str, typed: &str) -> bool {
        let first_line = typed.trim().lines().next().unwrap_or_default();
        self.marks.echoed(row).is_some_and(|shown| {
            !shown.is_empty() && (first_line.starts_with(shown) || shown.starts_with(first_line))
        })
    }
}

/// A hash of the rows above the input box and its rule (the transcript):
/// the box and footer below change as keys are typed. A panel-drawn
/// agent's input box is its own (see `panel`).
fn transcript_hash(profile: &Profile, rows: &[String]) -> u64 {
    let end = if profile.cells {
        super::panel::input_box(rows).map_or(rows.len(), |b| b.top)
    } else {
        input_box_row(profile, rows).map_or(rows.len(), |at| at - 1)
    };
    screen_hash(&rows[..end])
}

/// A hash of `rows` (FNV-1a, trailing blanks of a row ignored): the same
/// rows give the same value in any run of the same build, so it may be
/// persisted across a restart.
pub fn screen_hash(rows: &[String]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for row in rows {
        for b in row.trim_end().bytes().chain([b'\n']) {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    hash
}
