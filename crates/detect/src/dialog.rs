//! Structural dialog reading: the live selectable menu at the bottom of an
//! agent's screen, its question, body and footer, whatever the words are.
//!
//! Claude Code draws a dialog in place of its input box: a `─` rule, a
//! title and what is asked about (a command, a diff, a plan), the question,
//! a numbered menu with a `❯` cursor on one option (descriptions indented
//! under their option, sometimes more options after an inner `─` rule),
//! and a footer. Older versions drew the same inside a `╭│╰` box. Reading
//! the structure rather than phrases means a reworded dialog is still seen
//! (as kind `dialog` when no rule names it), and a menu quoted in an answer
//! is not: the input box is then below it.

use std::sync::LazyLock;

use regex::Regex;

use super::ApprovalOption;
use super::arrow_menu;
pub use super::dialog_rows::{BODY_CUT, MAX_BODY_BYTES, MAX_BODY_ROWS, MAX_DIALOG_ROWS};
pub(crate) use super::dialog_rows::{Dialog, MenuSelect, bound, clean, is_link, is_rule};
use super::marks::Marks;

/// Most non-empty rows allowed under the last option (footer, hints): more
/// means the menu is old output, not the live dialog.
const MAX_FOOTER_ROWS: usize = 3;

/// Fewest options a menu has (a one-line "1. foo" is a list, not a menu).
const MIN_OPTIONS: usize = 2;

/// Most options read from one menu (numbers are one or two digits).
const MAX_OPTIONS: usize = 99;

/// Most rows of one question (a long one wraps on a narrow pane).
const MAX_QUESTION_ROWS: usize = 4;

/// Columns a wrapped label row may stop short of the widest row (the
/// agent pads its rows); a shorter row followed by an indented one is
/// followed by a description, not a wrap.
const WRAP_SLACK: usize = 3;

/// A menu option row: optional cursor mark, number, `.`, label. The mark
/// is any one character here; [`option_row`] keeps the profile's own.
static OPTION_ROW: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(?P<indent>\s*)(?:(?P<cursor>[^\s\d])\s*)?(?P<key>\d{1,2})\.\s+(?P<label>\S.*?)\s*$",
    )
    .unwrap_or_else(|e| unreachable!("constant regex: {e}"))
});

/// The buttons Claude Code draws under a multi-select list's free-text
/// option: `Next` while questions asked together follow, `Submit` on the
/// last.
const LIST_BUTTONS: [&str; 2] = ["Submit", "Next"];

/// What sets a menu's columns apart: labels themselves are single-spaced.
const COLUMN_GAP: &str = "  ";

/// `row`'s parts if it is a menu option row (`❯ 1. Yes`, `  2. No`): a
/// mark before its number must be one of the agent's menu cursors (a
/// markdown list's `- 1. step` is not an option).
fn option_row<'r>(marks: &Marks, row: &'r str) -> Option<regex::Captures<'r>> {
    let c = OPTION_ROW.captures(row)?;
    match c.name("cursor") {
        Some(mark) if !marks.is_menu_cursor(mark.as_str()) => None,
        _ => Some(c),
    }
}

/// Whether `row` is a menu option row (`› 1. Yes`).
pub(crate) fn is_option_row(marks: &Marks, row: &str) -> bool {
    option_row(marks, row).is_some()
}

/// The key of the numbered option the cursor is on in a dialog's rows (its
/// `context`), if one shows it.
pub(crate) fn cursor_key(marks: &Marks, context: &str) -> Option<String> {
    context.lines().find_map(|row| {
        let c = option_row(marks, row)?;
        c.name("cursor")?;
        Some(c["key"].to_owned())
    })
}

/// A box's bottom edge or a dashed rule: drawn, not read.
fn is_edge(row: &str) -> bool {
    let t = row.trim();
    !t.is_empty()
        && (t.chars().all(|c| matches!(c, '╌' | '┄' | '┈'))
            || (t.starts_with('╰') && t.ends_with('╯')))
}

/// The input box's prompt row (the profile's `input` mark at column 0,
/// not a menu option).
pub(crate) fn is_input_row(marks: &Marks, row: &str) -> bool {
    marks.is_input(row) && !is_option_row(marks, row)
}

fn indent(row: &str) -> usize {
    row.chars().take_while(|c| *c == ' ').count()
}

/// The part of a dialog a screen lacks (see [`read`]): what a drift
/// report names when a dialog on screen was not recognised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Missing {
    #[error(
        "no option row with the agent's menu cursor (numbered, or a list or slider over an Enter hint)"
    )]
    Cursor,
    #[error("an input box or a spinner row under the menu (the menu is output, not a dialog)")]
    SomethingUnder,
    #[error("no option `1.` above the cursor")]
    FirstOption,
    #[error("not exactly one cursor among at least two options numbered 1, 2, …")]
    Menu,
    #[error("more than three rows under the menu")]
    Footer,
    #[error("no question above the menu")]
    Question,
}

/// Reads the live dialog at the bottom of `rows` (the visible screen).
/// `busy(row)` says whether a row shows the agent working (a spinner):
/// a menu above one is output, not a dialog.
pub(crate) fn find(marks: &Marks, rows: &[String], busy: impl Fn(&str) -> bool) -> Option<Dialog> {
    read(marks, rows, busy).ok()
}

/// [`find`], saying what is missing when there is no dialog.
pub(crate) fn read(
    marks: &Marks,
    rows: &[String],
    busy: impl Fn(&str) -> bool,
) -> Result<Dialog, Missing> {
    match read_numbered(marks, rows, busy) {
        // Without a numbered cursor row, a menu answered with arrows.
        Err(Missing::Cursor) => arrow_menu::read_list(marks, rows)
            .or_else(|| arrow_menu::read_slider(marks, rows))
            .ok_or(Missing::Cursor),
        read => read,
    }
}

/// A numbered menu with a `❯` cursor (see [`read`]).
fn read_numbered(
    marks: &Marks,
    rows: &[String],
    busy: impl Fn(&str) -> bool,
) -> Result<Dialog, Missing> {
    let first = rows.len().saturating_sub(MAX_DIALOG_ROWS);
    let raw = &rows[first..];
    let rows: Vec<String> = raw.iter().map(|r| clean(r)).collect();
    let width = rows.iter().map(|r| r.chars().count()).max().unwrap_or(0);
    // The cursor row of the bottom-most menu.
    let cursor = rows
        .iter()
        .rposition(|r| option_row(marks, r).is_some_and(|c| c.name("cursor").is_some()))
        .ok_or(Missing::Cursor)?;
    // Nothing under a live dialog but its own rows: no input box, no
    // spinner. A menu in a box of its own (`│ ❯ 1. Yes │`, older releases)
    // is the dialog wherever the input box is: no answer draws one.
    let boxed = raw[cursor].trim_start().starts_with('│');
    if !boxed
        && rows[cursor + 1..]
            .iter()
            .any(|r| is_input_row(marks, r) || busy(r))
    {
        return Err(Missing::SomethingUnder);
    }
    // Up from the cursor to option 1.
    let mut start = None;
    for i in (0..=cursor).rev() {
        let r = &rows[i];
        if let Some(c) = option_row(marks, r) {
            if &c["key"] == "1" {
                start = Some(i);
                break;
            }
        } else if !r.trim().is_empty() && indent(r) == 0 {
            break;
        }
        if cursor - i > MAX_DIALOG_ROWS {
            break;
        }
    }
    let start = start.ok_or(Missing::FirstOption)?;
    let menu = read_menu(marks, &rows, start, width).ok_or(Missing::Menu)?;
    // A list scrolled in a pane too short for it (Gemini CLI's `▲`/`▼`
    // around the options it shows) may show a single option: still the
    // dialog, with more options than the screen holds.
    let scrolled =
        scroll_mark_next(&rows[..start], true) || scroll_mark_next(&rows[menu.last + 1..], false);
    if menu.cursors != 1 || (menu.options.len() < MIN_OPTIONS && !scrolled) {
        return Err(Missing::Menu);
    }
    let below: Vec<&str> = rows[menu.last + 1..]
        .iter()
        .map(|r| r.trim())
        .filter(|r| !r.is_empty() && !is_rule(r) && !is_edge(r) && !is_scroll_mark(r))
        .collect();
    if below.len() > MAX_FOOTER_ROWS {
        return Err(Missing::Footer);
    }
    // The question: the paragraph right above the menu, past a link (the
    // bypass-permissions consent ends with its documentation's address)
    // and a scroll mark (Gemini CLI's options scrolled in a short pane).
    let mut q_end = start;
    while q_end > 0
        && (rows[q_end - 1].trim().is_empty()
            || is_link(&rows[q_end - 1])
            || is_scroll_mark(&rows[q_end - 1]))
    {
        q_end -= 1;
    }
    let mut q_start = q_end;
    // A wrapped question keeps its indent; the body above it is indented
    // differently or set off by a blank row.
    let q_indent = q_end.checked_sub(1).map(|i| indent(&rows[i]));
    while q_start > 0 && q_end - q_start < MAX_QUESTION_ROWS {
        let r = &rows[q_start - 1];
        if r.trim().is_empty()
            || is_rule(r)
            || is_edge(r)
            || marks.is_transcript(r)
            || Some(indent(r)) != q_indent
        {
            break;
        }
        q_start -= 1;
    }
    let mut question = rows[q_start..q_end]
        .iter()
        .map(|r| r.trim())
        .collect::<Vec<_>>()
        .join(" ");
    // A menu drawn without a dialog of its own (no rule, no title) under
    // the agent's last words, with a selection footer: those words ask.
    if question.is_empty() && below.iter().any(|r| marks.is_menu_footer(r)) {
        question = (q_end.checked_sub(1))
            .map(|i| {
                marks
                    .strip_block(&rows[i])
                    .unwrap_or(&rows[i])
                    .trim()
                    .to_owned()
            })
            .unwrap_or_default();
    }
    if question.is_empty() {
        return Err(Missing::Question);
    }
    // The top: the highest rule between the question and the transcript
    // above it (or, without a rule, the row after the transcript).
    let mut rule = None;
    let mut stop = q_start;
    while stop > 0 && q_start - stop < MAX_DIALOG_ROWS {
        let r = &rows[stop - 1];
        if marks.is_transcript(r) {
            break;
        }
        if is_rule(r) {
            rule = Some(stop - 1);
        }
        stop -= 1;
    }
    let (top, body_from) = match rule {
        Some(r) => (r, r + 1),
        None => (stop, stop),
    };
    // The agent's own hint (2.1.332: `Tip: auto mode handles these
    // prompts…`) is not what is asked about.
    let body_rows: Vec<&str> = rows[body_from..q_start]
        .iter()
        .map(String::as_str)
        .filter(|r| !is_rule(r) && !is_edge(r) && !marks.is_dialog_hint(r))
        .collect();
    // Gemini CLI draws a scrolled list's first option alone and the rest
    // a frame later (~0.2 s): one option shown may be a list still drawing.
    // Claude Code's review of a multi-tab question lists each question
    // with its answer (`● Which database…?`, `→ Postgres`) right above its
    // Submit menu: what it asks is its heading (`Review your answers`),
    // not the last answer listed.
    if marks.is_review_answer(&question) {
        let heading =
            (body_rows.iter().map(|r| r.trim())).find(|r| !r.is_empty() && !marks.is_tab_bar(r));
        if let Some(heading) = heading {
            question = heading.to_owned();
        }
    }
    let loading =
        body_rows.iter().any(|r| r.trim() == "…") || (scrolled && menu.options.len() < MIN_OPTIONS);
    let title = body_rows
        .iter()
        .find(|r| !r.trim().is_empty())
        .map(|r| r.trim().to_owned())
        .unwrap_or_default();
    let mut body = dedent(&body_rows);
    let described: Vec<String> = menu
        .options
        .iter()
        .filter_map(|o| {
            o.description
                .as_ref()
                .map(|d| format!("{}. {}: {}", o.key, o.label, d))
        })
        .collect();
    // A list of choices explained one by one (not a lone hint).
    if described.len() >= MIN_OPTIONS {
        if !body.is_empty() {
            body.push_str("\n\n");
        }
        body.push_str(&described.join("\n"));
    }
    if scrolled {
        if !body.is_empty() {
            body.push_str("\n\n");
        }
        body.push_str(SCROLLED_NOTE);
    }
    let context = rows[top..]
        .iter()
        .map(|r| r.trim_end())
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_owned();
    let select = menu.select();
    Ok(Dialog {
        question,
        body: bound(&body),
        options: menu.options,
        footer: below.join("\n"),
        context,
        title,
        loading,
        boxed,
        select,
    })
}

/// A row that is only a scroll mark: Gemini CLI 0.61.0 draws `▲` above
/// and `▼` under the options of a box too tall for the pane (measured at
/// 15 rows: the question, `▲`, two of three options, `▼`).
fn is_scroll_mark(row: &str) -> bool {
    matches!(row.trim(), "▲" | "▼")
}

/// Whether the nearest non-blank row of `rows` next to a menu (the last
/// one when `above`, else the first) is a scroll mark.
fn scroll_mark_next(rows: &[String], above: bool) -> bool {
    let mut near = rows.iter().filter(|r| !r.trim().is_empty());
    let next = if above { near.next_back() } else { near.next() };
    next.is_some_and(|r| is_scroll_mark(r))
}

/// Said in a dialog's body when its list scrolls: the card lists only the
/// options the pane shows, and the agent has more.
pub const SCROLLED_NOTE: &str = "More options than the pane shows: the agent's list scrolls.";

struct Menu {
    options: Vec<ApprovalOption>,
    cursors: usize,
    last: usize,
}

impl Menu {
    /// Digits choose an option; in a multi-select list (tick boxes) they
    /// tick it.
    fn select(&self) -> MenuSelect {
        let mut boxes = self.options.iter().map(|o| o.ticked()).peekable();
        if boxes.peek().is_none_or(|t| t.is_none()) {
            return MenuSelect::Typed;
        }
        let ticked = boxes
            .take(super::dialog_rows::MAX_TICK_OPTIONS)
            .enumerate()
            .filter(|(_, t)| *t == Some(true))
            .fold(0u128, |bits, (i, _)| bits | 1 << i);
        MenuSelect::Ticks { ticked }
    }
}

/// Reads options numbered 1, 2, … from row `start`: description rows
/// (indented under the label, or, right under their option, indented at
/// all: a multi-select list indents them less), a label's wrapped rows,
/// blank rows, and an inner rule before more options.
fn read_menu(marks: &Marks, rows: &[String], start: usize, width: usize) -> Option<Menu> {
    let mut options: Vec<ApprovalOption> = Vec::new();
    let mut cursors = 0;
    let mut last = start;
    let mut label_col = 0;
    let mut prev_len = 0;
    let mut prev_was_label = false;
    let mut after_blank = false;
    let mut i = start;
    while i < rows.len() && options.len() < MAX_OPTIONS {
        let row = &rows[i];
        let blank_before = std::mem::replace(&mut after_blank, row.trim().is_empty());
        if let Some(c) = option_row(marks, row) {
            if c["key"] != (options.len() + 1).to_string() {
                break;
            }
            cursors += usize::from(c.name("cursor").is_some());
            label_col = row[..c.name("label").map_or(0, |m| m.start())]
                .chars()
                .count();
            // A menu laid out in columns (`/model`: `2. Opus    Opus 5.5 ·
            // Best for …`): the label is the first column, the rest (and
            // what wraps under it) its description.
            let (label, description) = match c["label"].split_once(COLUMN_GAP) {
                Some((label, rest)) => (label, Some(rest.trim().to_owned())),
                None => (&c["label"], None),
            };
            prev_was_label = description.is_none();
            let mut option = ApprovalOption {
                key: c["key"].to_owned(),
                label: label.to_owned(),
                description,
                press: None,
                own_words: false,
            };
            // A multi-select's free-text row (`[ ] Type something`) is a
            // text field, not a box to tick.
            if marks.takes_text(option.name()) {
                option.label = option.name().to_owned();
                option.own_words = true;
            }
            options.push(option);
            prev_len = row.chars().count();
            last = i;
        } else if row.trim().is_empty() {
            prev_was_label = false;
        } else if is_rule(row) {
            // An inner rule: more options may follow it.
            let next = rows[i + 1..].iter().find(|r| !r.trim().is_empty());
            let more = next
                .and_then(|r| option_row(marks, r))
                .is_some_and(|c| c["key"] == (options.len() + 1).to_string());
            if !more {
                break;
            }
        } else if label_col > 0 && (indent(row) >= label_col || (!blank_before && indent(row) > 0))
        {
            let Some(o) = options.last_mut() else { break };
            let text = row.trim();
            // A multi-select's free-text row has no description: the row
            // under it is the list's button (`Submit` on the last tab,
            // `Next` on one before it).
            if o.own_words && LIST_BUTTONS.contains(&text) {
                last = i;
                i += 1;
                continue;
            }
            let first_word = text
                .split_whitespace()
                .next()
                .map_or(0, |w| w.chars().count());
            // Word wrap: the previous row could not take this row's first word.
            let wrapped = prev_was_label && prev_len + 1 + first_word + WRAP_SLACK > width;
            if wrapped {
                o.label.push(' ');
                o.label.push_str(text);
            } else {
                let d = o.description.get_or_insert_with(String::new);
                if !d.is_empty() {
                    d.push(' ');
                }
                d.push_str(text);
                prev_was_label = false;
            }
            prev_len = row.chars().count();
            last = i;
        } else {
            break;
        }
        i += 1;
    }
    (!options.is_empty()).then_some(Menu {
        options,
        cursors,
        last,
    })
}

/// `rows` without their common indent and blank edges.
fn dedent(rows: &[&str]) -> String {
    let common = rows
        .iter()
        .filter(|r| !r.trim().is_empty())
        .map(|r| indent(r))
        .min()
        .unwrap_or(0);
    let lines: Vec<&str> = rows
        .iter()
        .map(|r| {
            if r.trim().is_empty() {
                ""
            } else {
                &r[common..]
            }
        })
        .collect();
    lines.join("\n").trim_matches('\n').to_owned()
}
