//! What the screen readers give: an approval prompt read off the screen,
//! and how the turn on screen ended. Below `screen`, which puts a screen's
//! reading together, and the readers of its parts (`panel`, `checkpoint`).

use super::dialog;
use super::marks::Marks;
use super::{ApprovalKind, ApprovalOption, MenuSelect, TICKED_BOXES, UNTICKED_BOX};

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
    /// Its options as asked, their ticks left out (see
    /// [`ApprovalOption::name`]): a multi-select list ticked since is the
    /// same list.
    pub(crate) fn asked_options(&self) -> Vec<(&str, &str, Option<&str>, bool)> {
        (self.options.iter())
            .map(|o| {
                (
                    o.key.as_str(),
                    o.name(),
                    o.description.as_deref(),
                    o.own_words,
                )
            })
            .collect()
    }

    /// Its body as asked: without the tab bar over questions asked together
    /// (its chips show which are answered) and with every tick box drawn
    /// empty.
    pub(crate) fn asked_body(&self, marks: &Marks) -> String {
        let rows = self.body.lines().filter(|r| !marks.is_tab_bar(r));
        let mut body = rows.collect::<Vec<_>>().join("\n");
        for tick in TICKED_BOXES {
            body = body.replace(tick, UNTICKED_BOX);
        }
        body
    }

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
