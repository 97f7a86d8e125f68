//! Streaming detection on pane output: busy, completed, approval (and its
//! disappearance), error, interruption, refusal and progress, driven by
//! pattern profiles and, for agents, by the structure of their screen
//! (`dialog`, `screen`).
//!
//! Sans-IO and clock-free: callers pass the time as [`Millis`].
//!
//! - [`Profiles`] loads the built-in `shell`, `claude` and `gsd` profiles
//!   (`profiles.toml`, embedded) and optionally a user TOML file that
//!   overrides or extends them; a bad pattern is a [`ProfileError`] naming
//!   the profile, field and pattern.
//! - [`Detector`] watches one pane: [`Detector::feed`] with the lines a
//!   chunk of output finished, [`Detector::tick`] when
//!   [`Detector::next_deadline`] is reached (or after every feed).
//! - [`PaneWatcher`] combines a [`clawmux_pane::Pane`] and a [`Detector`]:
//!   raw pane bytes at a time in, detections out.
//! - [`StreamWatcher`] does it for every pane of a control-mode stream.
//!
//! ```
//! use clawmux_detect::{DetectorConfig, Millis, PaneWatcher, Profiles};
//! let profile = Profiles::defaults().unwrap().get("shell").unwrap();
//! let mut w = PaneWatcher::new("%0".parse().unwrap(), profile, DetectorConfig::default(), 80, 24);
//! let mut seen = Vec::new();
//! w.feed(Millis(0), b"make: *** Error 2\r\n", &mut |d| seen.push(d));
//! assert_eq!(seen[0].to_json(), r#"{"pane":"%0","at_ms":0,"kind":"error","line":"make: *** Error 2","context":"make: *** Error 2"}"#);
//! ```

#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

mod answer_rows;
mod arrow_menu;
mod cells;
mod checkpoint;
mod detector;
mod dialog;
mod dialog_rows;
mod footer_mode;
mod lines;
mod marks;
mod panel;
mod profiles;
mod redrawn;
mod screen;
mod screen_parts;
mod stall;
mod stream;
mod turn;

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use answer_rows::AnswerRows;
pub use detector::{
    DEFAULT_CONTEXT_LINES, DEFAULT_DEBOUNCE, DEFAULT_PROMPT_QUIET, DEFAULT_SETTLE, Detector,
    DetectorConfig, MAX_LOADING_WAIT, SILENT_COMMAND_QUIET, START_QUIET, STATE_LAPSE,
    UNCLOSED_QUIET, screen_hash,
};
pub use dialog::{
    BODY_CUT, MAX_BODY_BYTES, MAX_BODY_ROWS, MAX_DIALOG_ROWS, Missing, SCROLLED_NOTE,
};
pub use dialog_rows::{MenuSelect, several_keys};
pub use lines::{LineHit, ProgressFields};
pub use panel::{answer as panel_answer, streaming_answer as panel_streaming_answer};
pub use profiles::{
    AnswerSource, DEFAULT_PROFILES, MAX_PROFILES_BYTES, Profile, ProfileError, Profiles,
};
pub use stall::DEFAULT_STALL_QUIET;
pub use stream::{DEFAULT_PANE_SIZE, MAX_PANES_PER_STREAM, StreamCounts, StreamWatcher};

pub use clawmux_control::PaneId;
use clawmux_pane::Pane;

/// Milliseconds on the caller's clock (any fixed origin).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Millis(pub u64);

impl std::ops::Add<Duration> for Millis {
    type Output = Millis;
    fn add(self, d: Duration) -> Millis {
        Millis(
            self.0
                .saturating_add(u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        )
    }
}

/// Which kind of question the agent is asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalKind {
    /// A tool permission prompt (`Do you want to proceed?`).
    Permission,
    /// A file edit (`Do you want to make this edit to <file>?`).
    Edit,
    /// A new file (`Do you want to create <file>?`).
    Create,
    /// An AskUserQuestion menu.
    Question,
    /// ExitPlanMode (`Would you like to proceed?`).
    Plan,
    /// A GSD checkpoint (`CHECKPOINT: Verification Required`).
    Checkpoint,
    /// A live menu no rule names: still a question for the person.
    Dialog,
}

impl std::fmt::Display for ApprovalKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ApprovalKind::Permission => "permission",
            ApprovalKind::Edit => "edit",
            ApprovalKind::Create => "create",
            ApprovalKind::Question => "question",
            ApprovalKind::Plan => "plan",
            ApprovalKind::Checkpoint => "checkpoint",
            ApprovalKind::Dialog => "dialog",
        })
    }
}

/// The box of a multi-select list's option left unticked (`[ ] Auth`).
pub(crate) const UNTICKED_BOX: &str = "[ ]";
/// The boxes of a ticked option (`[✔] Auth`; `[x]` in other agents' lists).
pub(crate) const TICKED_BOXES: [&str; 3] = ["[✔]", "[x]", "[X]"];

/// One answer to an approval: type `key` into the pane to choose it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalOption {
    pub key: String,
    pub label: String,
    /// The text the dialog shows under the option, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The tmux key that answers it when that is not `key` typed (Codex's
    /// `(y)`, `(esc)`: `y`, `Escape`); see the profile's `option_key`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub press: Option<String>,
    /// The option takes the person's own words (Claude Code's `Type
    /// something.`, as its profile's `own_words` names it): its key only
    /// focuses a text field, where typed text and Enter give the answer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub own_words: bool,
}

impl ApprovalOption {
    /// Options keyed `1`, `2`, … with these labels.
    pub fn numbered(labels: &[&str]) -> Vec<ApprovalOption> {
        (labels.iter().enumerate())
            .map(|(i, l)| ApprovalOption {
                key: (i + 1).to_string(),
                label: l.to_string(),
                description: None,
                press: None,
                own_words: false,
            })
            .collect()
    }

    /// An option of a multi-select list (`[ ] Auth`, `[✔] Auth`): whether
    /// it is ticked; `None` for an option without a box.
    pub fn ticked(&self) -> Option<bool> {
        let label = self.label.trim_start();
        if label.starts_with(UNTICKED_BOX) {
            Some(false)
        } else {
            Some(TICKED_BOXES.iter().any(|b| label.starts_with(b))).filter(|t| *t)
        }
    }

    /// The label without its tick box.
    pub fn name(&self) -> &str {
        let label = self.label.trim_start();
        match self.ticked() {
            Some(_) => label.split_once(']').map_or(label, |(_, n)| n.trim_start()),
            None => label,
        }
    }
}

/// What was detected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DetectionKind {
    /// The agent started working (a busy marker appeared).
    Busy,
    /// The turn is over: idle prompt, no busy marker, quiet for the debounce.
    Completed,
    /// The agent waits for an answer.
    Approval {
        approval: ApprovalKind,
        question: String,
        /// What is asked about (the command, the file and diff, the plan,
        /// the options' descriptions), at most [`MAX_BODY_ROWS`] rows and
        /// [`MAX_BODY_BYTES`] bytes, cut with [`BODY_CUT`].
        body: String,
        options: Vec<ApprovalOption>,
    },
    /// The approval prompt left the screen (answered in the terminal).
    ApprovalGone {
        approval: ApprovalKind,
        question: String,
    },
    /// A line that reports an error (for an agent profile: the agent's
    /// own error row at the end of a turn).
    Error { line: String },
    /// The user stopped the turn (answered No, pressed Esc): reported just
    /// before the turn's completion; their answer, not an error.
    Interrupted { line: String },
    /// The agent refused the command itself (`Unknown command: …`):
    /// reported just before the turn's completion.
    Rejected { line: String },
    /// A line that reports progress.
    Progress(ProgressFields),
    /// The agent works, and for `secs` seconds its screen showed nothing
    /// new but its busy row (a spinner, a timer): it may be retrying an
    /// error without end. A status, not an error.
    Stalled { secs: u64 },
    /// The screen changed again after [`DetectionKind::Stalled`], or the
    /// work ended: `secs` seconds had passed without a change.
    Resumed { secs: u64 },
}

/// One detection on one pane.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Detection {
    pub pane: PaneId,
    /// When it was detected, on the caller's clock.
    pub at_ms: Millis,
    #[serde(flatten)]
    pub kind: DetectionKind,
    /// The text around it: the matched line and those before it, the
    /// prompt's rows, or the last lines of a completed turn.
    pub context: String,
}

impl Detection {
    /// The detection as one JSON object (the `clawmux detect` line format).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| unreachable!("plain data serializes: {e}"))
    }
}

/// A pane and its detector: raw pane bytes in, detections out.
pub struct PaneWatcher {
    pane: Pane,
    detector: Detector,
}

impl PaneWatcher {
    /// Watches pane `id` of `cols` x `rows` cells with `profile`.
    pub fn new(
        id: PaneId,
        profile: Arc<Profile>,
        config: DetectorConfig,
        cols: u16,
        rows: u16,
    ) -> Self {
        PaneWatcher {
            pane: Pane::new(cols, rows),
            detector: Detector::new(id, profile, config),
        }
    }

    /// Feeds decoded pane bytes that arrived at `now`. What fell due
    /// before them (a completion, a settled screen) fires first.
    pub fn feed(&mut self, now: Millis, bytes: &[u8], sink: &mut impl FnMut(Detection)) {
        self.tick(now, sink);
        self.feed_after_tick(now, bytes, sink);
    }

    /// [`PaneWatcher::feed`] for a caller that ticked first itself (to act
    /// on what fell due before the bytes): the lines the bytes finish.
    pub fn feed_after_tick(
        &mut self,
        now: Millis,
        bytes: &[u8],
        sink: &mut impl FnMut(Detection),
    ) -> Vec<String> {
        let lines = self.pane.feed(bytes);
        for signal in self.pane.take_signals() {
            self.detector.signal(now, &signal);
        }
        self.detector.feed(now, &lines, sink);
        self.tick(now, sink);
        lines
    }

    /// Fires what is due at `now` (call at [`PaneWatcher::next_deadline`]).
    pub fn tick(&mut self, now: Millis, sink: &mut impl FnMut(Detection)) {
        let (pane, read) = (&self.pane, RowsRead::of(self.detector.profile()));
        self.detector.tick(now, || rows_of(pane, read), sink);
    }

    /// The screen rows the detector reads: with what the colours say
    /// marked in them for a profile that reads them (see `cells`).
    fn rows(&self) -> Vec<String> {
        rows_of(&self.pane, RowsRead::of(self.detector.profile()))
    }

    /// When [`PaneWatcher::tick`] next has work.
    pub fn next_deadline(&self) -> Option<Millis> {
        self.detector.next_deadline()
    }

    /// The pane (text since a mark, screen snapshot).
    pub fn pane(&self) -> &Pane {
        &self.pane
    }

    /// The pane, e.g. to resize it.
    pub fn pane_mut(&mut self) -> &mut Pane {
        &mut self.pane
    }

    /// The agent reads its input on the cursor's row, a line at a time
    /// (see `Profile::input_at_cursor`).
    pub fn line_mode(&self) -> bool {
        self.detector.profile().input_at_cursor
    }

    /// When the pane last printed: a frame is drawn in several writes, so
    /// a screen is whole only once it has been still a moment.
    pub fn last_output(&self) -> Millis {
        self.detector.last_output()
    }

    /// The permission mode the agent's footer last showed.
    pub fn mode(&self) -> Option<&str> {
        self.detector.mode()
    }

    /// The detector, e.g. to call [`Detector::begin_turn`].
    pub fn detector_mut(&mut self) -> &mut Detector {
        &mut self.detector
    }

    /// A command is being typed: its turn begins, judged against the
    /// screen as it is now (see [`Detector::typed_on`]).
    pub fn typed(&mut self, command: &str) {
        let rows = self.rows();
        self.detector.typed_on(command, &rows);
    }

    /// Why the screen shows no dialog: the first part of one it lacks
    /// (for drift reports); `None` when it shows one.
    pub fn dialog_missing(&self) -> Option<Missing> {
        let profile = self.detector.profile();
        let rows = self.rows();
        if profile.cells {
            return panel::find(&rows).is_none().then_some(Missing::Cursor);
        }
        dialog::read(&profile.marks, &rows, |r| profile.spinner.is_match(r)).err()
    }

    /// The rows under the agent's input box now (its footer, a
    /// statusline); none when no input box is drawn.
    pub fn footer_rows(&self) -> Vec<String> {
        screen::footer_rows(&self.detector.profile().marks, &self.pane.screen_rows())
    }

    /// What the screen shows now, judged at once rather than after the
    /// settle time (deciding whether typed text reached the agent).
    pub fn look(&self) -> ScreenLook {
        let rows = self.rows();
        // A menu-less prompt (a checkpoint) on screen counts however old
        // it is: typing into what may be a question is never safe.
        let state = screen::analyse(self.detector.profile(), &rows, |_| true);
        let prompt = state.prompt.map(|p| ShownPrompt {
            fingerprint: prompt_fingerprint(&p.context),
            cursor: p.cursor_key(&self.detector.profile().marks),
            question: p.question,
            body: p.body,
            presses: p.options.iter().map(|o| o.press.clone()).collect(),
            keys: p.options.into_iter().map(|o| o.key).collect(),
            select: p.select,
        });
        ScreenLook {
            busy: state.busy.is_some(),
            prompt,
            input: state.input,
            rows,
        }
    }
}

/// How a profile reads a pane's rows.
#[derive(Clone, Copy)]
enum RowsRead {
    /// Marked from its cells (see `cells`).
    Cells,
    /// Down to the cursor's row, for a profile whose input is the
    /// cursor's row (`input_at_cursor`).
    ToCursor,
    Text,
}

impl RowsRead {
    fn of(profile: &Profile) -> RowsRead {
        if profile.cells {
            RowsRead::Cells
        } else if profile.input_at_cursor {
            RowsRead::ToCursor
        } else {
            RowsRead::Text
        }
    }
}

/// `pane`'s rows, read as `read` says.
fn rows_of(pane: &Pane, read: RowsRead) -> Vec<String> {
    match read {
        RowsRead::Cells => cells::marked_rows(pane.cells()),
        RowsRead::ToCursor => {
            let mut rows = pane.screen_rows_to_cursor();
            // A hidden cursor is on no input row: a line-mode agent hides
            // it while its answer streams (Aider's live markdown), so a
            // question quoted at the end of the text so far is not one.
            if pane.cells().hide_cursor() {
                rows.push(String::new());
            }
            rows
        }
        RowsRead::Text => pane.screen_rows(),
    }
}

/// What a pane's screen shows, as far as typing into it is concerned.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScreenLook {
    /// The agent is working (busy marker).
    pub busy: bool,
    /// The approval prompt or dialog waiting for an answer, if any.
    pub prompt: Option<ShownPrompt>,
    /// The text in the agent's input box, trimmed; `None` when the profile
    /// reads no input box (a shell).
    pub input: Option<String>,
    /// The visible rows.
    pub rows: Vec<String>,
}

impl ScreenLook {
    /// An approval prompt or dialog waits for an answer.
    pub fn dialog(&self) -> bool {
        self.prompt.is_some()
    }

    /// The agent works or asks: a key would go to something other than
    /// its input box.
    pub fn is_not_waiting(&self) -> bool {
        self.busy || self.dialog()
    }
}

/// The prompt a screen shows, as far as answering it is concerned.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShownPrompt {
    pub question: String,
    /// What it asks about (the command, the diff), as the card shows it.
    pub body: String,
    /// The options' keys, in order.
    pub keys: Vec<String>,
    /// The tmux key pressed for each option instead of its key, in order
    /// (see [`ApprovalOption::press`]).
    pub presses: Vec<Option<String>>,
    /// The dialog's rows as drawn, cursor included (see
    /// [`prompt_fingerprint`]): the same dialog, untouched, has the same one.
    pub fingerprint: u64,
    /// How its options are chosen with keys (the cursor's place counted).
    pub select: MenuSelect,
    /// The key of the option the menu's cursor is on, where it shows one
    /// (a text field's key once the field has the focus).
    pub cursor: Option<String>,
}

impl ShownPrompt {
    /// The tmux key that answers option `key`, when it is not `key` typed.
    pub fn press_for(&self, key: &str) -> Option<&str> {
        let at = self.keys.iter().position(|k| k == key)?;
        self.presses.get(at)?.as_deref()
    }
}

/// A dialog's look on screen: a hash of its rows as drawn (question, body,
/// options and where the cursor is).
pub fn prompt_fingerprint(rows: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    rows.hash(&mut h);
    h.finish()
}
