//! What the screen readers give: an approval prompt read off the screen,
//! and how the turn on screen ended. Below `screen`, which puts a screen's
//! reading together, and the readers of its parts (`panel`, `checkpoint`).

use super::dialog;
use super::marks::Marks;
use super::{ApprovalKind, ApprovalOption, MenuSelect};

/// An approval prompt as read from the screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Prompt {
    pub(crate) kind: ApprovalKind,
    pub(crate) question: String,
    pub(crate) body: String,
    pub(crate) options: Vec<ApprovalOption>,
    pub(crate) context: String,
    /// Part of the body is still being drawn (see `Detector`).
    pub(crate) loading: bool,
    /// How an option is chosen with keys.
    pub(crate) select: MenuSelect,
}

impl Prompt {
    /// The key of the option the menu's cursor is on, where it shows one.
    pub(crate) fn cursor_key(&self, marks: &Marks) -> Option<String> {
        match self.select {
            MenuSelect::Vertical { cursor } | MenuSelect::Horizontal { cursor } => {
                self.options.get(cursor).map(|o| o.key.clone())
            }
            MenuSelect::Typed => dialog::cursor_key(marks, &self.context),
            MenuSelect::Ticks { .. } => None,
        }
    }
}

/// How the turn on screen ended, read from its last block.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct TurnEnd {
    /// The agent's own error row.
    pub(crate) error: Option<String>,
    /// The user stopped the turn (the row saying so).
    pub(crate) interrupted: Option<String>,
    /// The agent refused the command (the row saying so).
    pub(crate) rejected: Option<String>,
    /// The profile names the row that closes a finished turn
    /// (`turn_closed`) and the turn shows neither it nor any row above:
    /// what looks idle may be a pause in the answer (Claude Code 2.1.197
    /// hides its spinner while a text block streams, drawing it a line at a
    /// time).
    pub(crate) unclosed: bool,
    /// The turn's last rows, as context.
    pub(crate) context: String,
}
