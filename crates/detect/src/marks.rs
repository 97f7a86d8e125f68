//! The marks an agent draws at the start of its rows, as its profile gives
//! them (`[profiles.NAME.marks]`): which glyph starts one of its blocks,
//! its input row, a command's echo, its turn's summary. The dialog,
//! checkpoint and turn readers find the parts of a transcript by them, so
//! detection itself knows no agent's glyphs.

use serde::Deserialize;

/// `marks` as written in a profile (and as used: nothing to compile).
/// An agent without marks (a shell, Aider, OpenCode) has no rows
/// the readers need to tell apart by their first glyph.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Marks {
    /// What starts a block of the agent's own at column 0: an answer or a
    /// tool call (Claude Code's `●`, `⏺`; Gemini CLI's `✦`).
    blocks: Vec<String>,
    /// What starts the row that sums up a finished turn (Claude Code's
    /// `✻ Worked for 1s`).
    summary: Vec<String>,
    /// What starts the input row at column 0 (Claude Code's `❯`, Gemini
    /// CLI's `> `).
    input: Vec<String>,
    /// What a submitted command is echoed after (Claude Code's `❯`).
    echo: Option<String>,
    /// What starts a row nested under a block, after its indent (Claude
    /// Code's `⎿`, a tool's result).
    nested: Vec<String>,
    /// What starts the agent's other transcript rows at column 0 (Gemini
    /// CLI's `▀` under its prompt echo).
    edges: Vec<String>,
    /// How the option that takes the person's own words begins (Claude
    /// Code's `Type something.`).
    own_words: Option<String>,
    /// What a menu's cursor draws before the option it is on (Claude
    /// Code's `❯`, Codex's `›`, Gemini CLI's `●`).
    menu_cursors: Vec<String>,
    /// How a menu's own footer begins (`Enter to select · ↑/↓ to
    /// navigate · Esc to cancel`): a menu over one asks, even without a
    /// dialog around it.
    menu_footer: Vec<String>,
    /// What starts an answer listed in the agent's review of the questions
    /// it asked (Claude Code's `→ Postgres`).
    review_answer: Vec<String>,
    /// What starts the tab bar over questions asked together (Claude
    /// Code's `←  ☐ Database  ☐ Features  ✔ Submit  →`).
    tab_bar: Vec<String>,
    /// What starts a hint of the agent's own in a dialog, never what is
    /// asked about (Claude Code's `Tip: `).
    dialog_hints: Vec<String>,
}

fn starts(row: &str, marks: &[String]) -> bool {
    marks.iter().any(|m| row.starts_with(m.as_str()))
}

impl Marks {
    /// Whether `row` starts one of the agent's blocks.
    pub(crate) fn is_block(&self, row: &str) -> bool {
        starts(row, &self.blocks)
    }

    /// `row` without the block mark (and the space after it) it starts
    /// with, if it starts with one.
    pub(crate) fn strip_block<'a>(&self, row: &'a str) -> Option<&'a str> {
        (self.blocks.iter())
            .find_map(|m| row.strip_prefix(m.as_str()))
            .map(|rest| rest.strip_prefix(' ').unwrap_or(rest))
    }

    /// Whether `row` starts with the turn summary's mark at column 0.
    pub(crate) fn starts_summary(&self, row: &str) -> bool {
        starts(row, &self.summary)
    }

    /// Whether `row` starts with the input row's prompt.
    pub(crate) fn is_input(&self, row: &str) -> bool {
        starts(row, &self.input)
    }

    /// The text after the echo mark `row` starts with (indent allowed),
    /// trimmed: what a submitted command's echo (or the input box) shows.
    pub(crate) fn echoed<'a>(&self, row: &'a str) -> Option<&'a str> {
        let mark = self.echo.as_deref()?;
        row.trim_start().strip_prefix(mark).map(str::trim)
    }

    /// Whether `row` starts with the echo mark at column 0.
    pub(crate) fn is_echo_row(&self, row: &str) -> bool {
        self.echo.as_deref().is_some_and(|m| row.starts_with(m))
    }

    /// Whether `row` is a row of the agent's transcript: a block, its
    /// summary, an echo, an edge, or a row nested under a block.
    pub(crate) fn is_transcript(&self, row: &str) -> bool {
        self.is_block(row)
            || self.starts_summary(row)
            || self.is_echo_row(row)
            || starts(row, &self.edges)
            || starts(row.trim_start(), &self.nested)
    }

    /// Whether `row` (trimmed) is a menu's own footer.
    pub(crate) fn is_menu_footer(&self, row: &str) -> bool {
        starts(row.trim(), &self.menu_footer)
    }

    /// Whether `row` (trimmed) lists an answer in the agent's review of
    /// its questions.
    pub(crate) fn is_review_answer(&self, row: &str) -> bool {
        starts(row.trim(), &self.review_answer)
    }

    /// Whether `row` (trimmed) is the tab bar over questions asked together.
    pub(crate) fn is_tab_bar(&self, row: &str) -> bool {
        starts(row.trim(), &self.tab_bar)
    }

    /// Whether `row` (trimmed) is a hint of the agent's own in a dialog.
    pub(crate) fn is_dialog_hint(&self, row: &str) -> bool {
        starts(row.trim(), &self.dialog_hints)
    }

    /// Whether `mark` is one of the agent's menu cursors.
    pub(crate) fn is_menu_cursor(&self, mark: &str) -> bool {
        self.menu_cursors.iter().any(|c| c == mark)
    }

    /// `row`, its indent trimmed, after the menu cursor it starts with and
    /// the spaces after that; `None` if it starts with none.
    pub(crate) fn after_cursor<'a>(&self, row: &'a str) -> Option<&'a str> {
        let row = row.trim_start();
        (self.menu_cursors.iter())
            .find_map(|c| row.strip_prefix(c.as_str()))
            .filter(|rest| rest.starts_with(' '))
            .map(str::trim_start)
    }

    /// Whether an option labelled `label` takes the person's own words.
    pub(crate) fn takes_text(&self, label: &str) -> bool {
        let label = label.trim_start();
        (self.own_words.as_deref()).is_some_and(|w| label.starts_with(w))
    }
}

/// Claude Code's marks, for the readers' tests.
#[cfg(test)]
pub(crate) fn claude() -> Marks {
    let profiles = crate::Profiles::defaults().unwrap_or_else(|e| panic!("{e}"));
    let claude = profiles.get("claude").unwrap_or_else(|e| panic!("{e}"));
    claude.marks.clone()
}
