//! What only the screen's colours say, written into its text rows: for an
//! agent whose profile sets `cells = true` (OpenCode) the detector reads
//! these rows instead of the plain ones.
//!
//! - A row of buttons whose selection is shown only by its background
//!   (OpenCode's `Allow once   Allow always   Reject`): the selected
//!   button's padding cells become `[` and `]` (`[Allow once]`), so the
//!   text says which one Enter would press. A button is a label of a
//!   group (labels set apart by two to [`MAX_BUTTON_GAP`] blanks) drawn on
//!   another background than the row's own, while every other label of
//!   the group is on the row's.
//! - Left bars (`┃`) drawn in another colour than the bottom-most bar
//!   (the input box's, or the dialog's) become `╏`: OpenCode draws the
//!   person's messages with the input box's bar, and tool output and
//!   errors with bars of other colours.
//!
//! Columns are kept (one character per cell, a wide character once), so
//! the rows line up with the plain ones.

use vt100::{Color, Screen};

/// Most blank cells between two buttons of one row: OpenCode sets them
/// three apart, and sets its key hints many more cells away.
pub(crate) const MAX_BUTTON_GAP: usize = 4;

/// The left bar of a panel row.
const BAR: char = '┃';
/// The bottom edge of OpenCode's input box, drawn in the bar's colour.
const EDGE: char = '╹';
/// A bar drawn in another colour than the input box's.
pub(crate) const OTHER_BAR: char = '╏';

/// One cell as read: its character (a blank for an empty cell), colours.
#[derive(Clone, Copy)]
struct Cell {
    ch: char,
    fg: Color,
    bg: Color,
}

/// The visible rows of `screen` with the marks above, trailing blanks
/// trimmed and trailing empty rows dropped (as `Pane::screen_rows`).
pub(crate) fn marked_rows(screen: &Screen) -> Vec<String> {
    let (rows, cols) = screen.size();
    let grid: Vec<Vec<Cell>> = (0..rows.get())
        .map(|r| row_cells(screen, r, cols.get()))
        .collect();
    let bar_colour = input_bar_colour(&grid);
    let mut out: Vec<String> = grid
        .iter()
        .map(|cells| {
            let mut chars: Vec<char> = cells.iter().map(|c| c.ch).collect();
            mark_selected_button(cells, &mut chars);
            mark_bar(cells, &mut chars, bar_colour);
            let row: String = chars.into_iter().collect();
            row.trim_end().to_owned()
        })
        .collect();
    while out.last().is_some_and(|r| r.is_empty()) {
        out.pop();
    }
    out
}

fn row_cells(screen: &Screen, row: u16, cols: u16) -> Vec<Cell> {
    let mut out = Vec::with_capacity(usize::from(cols));
    for col in 0..cols {
        let Some(cell) = screen.cell(row, col) else {
            break;
        };
        if cell.is_wide_continuation() {
            continue;
        }
        let ch = cell.contents().chars().next().unwrap_or(' ');
        out.push(Cell {
            ch: if ch == '\u{a0}' { ' ' } else { ch },
            fg: cell.fgcolor(),
            bg: cell.bgcolor(),
        });
    }
    out
}

/// The colour of the bottom-most bar: the input box's edge or bar.
fn input_bar_colour(grid: &[Vec<Cell>]) -> Option<Color> {
    grid.iter().rev().find_map(|cells| {
        let first = cells.iter().find(|c| c.ch != ' ')?;
        matches!(first.ch, BAR | EDGE).then_some(first.fg)
    })
}

/// A bar row (`┃` first) in another colour than `input`: `╏`.
fn mark_bar(cells: &[Cell], chars: &mut [char], input: Option<Color>) {
    let Some(at) = cells.iter().position(|c| c.ch != ' ') else {
        return;
    };
    if cells[at].ch == BAR && Some(cells[at].fg) != input {
        chars[at] = OTHER_BAR;
    }
}

/// A label: a run of cells with no two blanks in a row, holding a letter
/// or digit (a bar or a rule is not a label).
struct Label {
    from: usize,
    to: usize,
    bg: Color,
}

fn labels(cells: &[Cell]) -> Vec<Label> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < cells.len() {
        if cells[i].ch == ' ' {
            i += 1;
            continue;
        }
        let from = i;
        while i < cells.len()
            && !(cells[i].ch == ' ' && cells.get(i + 1).is_none_or(|c| c.ch == ' '))
        {
            i += 1;
        }
        if cells[from..i].iter().any(|c| c.ch.is_alphanumeric()) {
            out.push(Label {
                from,
                to: i,
                bg: cells[from].bg,
            });
        }
    }
    out
}

/// The background most of the row's cells have.
fn row_background(cells: &[Cell]) -> Option<Color> {
    let mut counts: Vec<(Color, usize)> = Vec::new();
    for c in cells {
        match counts.iter_mut().find(|(bg, _)| *bg == c.bg) {
            Some((_, n)) => *n += 1,
            None => counts.push((c.bg, 1)),
        }
    }
    counts.into_iter().max_by_key(|(_, n)| *n).map(|(bg, _)| bg)
}

/// Writes `[` `]` into the padding of the one selected button of `cells`.
fn mark_selected_button(cells: &[Cell], chars: &mut [char]) {
    let Some(row_bg) = row_background(cells) else {
        return;
    };
    let labels = labels(cells);
    let mut group: Vec<&Label> = Vec::new();
    let mut groups: Vec<Vec<&Label>> = Vec::new();
    for label in &labels {
        if let Some(last) = group.last()
            && label.from - last.to > MAX_BUTTON_GAP
        {
            groups.push(std::mem::take(&mut group));
        }
        group.push(label);
    }
    groups.push(group);
    for group in groups.iter().filter(|g| g.len() >= 2) {
        let odd: Vec<&&Label> = group.iter().filter(|l| l.bg != row_bg).collect();
        let [selected] = odd[..] else { continue };
        // The button's own padding: one cell each side in its colour.
        let (before, after) = (selected.from.checked_sub(1), selected.to);
        let padded = |i: Option<usize>| {
            i.and_then(|i| cells.get(i))
                .is_some_and(|c| c.ch == ' ' && c.bg == selected.bg)
        };
        if let Some(before) = before
            && padded(Some(before))
            && padded(Some(after))
        {
            chars[before] = '[';
            chars[after] = ']';
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn screen(bytes: &[u8]) -> Vec<String> {
        let mut pane = clawmux_pane::Pane::new(100, 6);
        pane.feed(bytes);
        marked_rows(pane.cells())
    }

    const PANEL: &str = "\x1b[48;2;30;30;30m";
    const ORANGE: &str = "\x1b[48;2;245;167;66m";

    /// OpenCode 1.18.33's permission buttons, as drawn (colours kept).
    fn buttons(selected: usize) -> String {
        let names = ["Allow once", "Allow always", "Reject"];
        let mut row = format!("  \x1b[38;2;245;167;66m┃\x1b[39m{PANEL}  ");
        for (i, n) in names.iter().enumerate() {
            if i == selected {
                row.push_str(&format!("{ORANGE} {n} {PANEL} "));
            } else {
                row.push_str(&format!(" {n}  "));
            }
        }
        row.push_str(&format!(
            "{:30}ctrl+f fullscreen  ⇆ select  enter confirm  \x1b[0m",
            ""
        ));
        row
    }

    #[test]
    fn the_selected_button_is_bracketed() {
        for (i, want) in [
            "[Allow once]  Allow always   Reject",
            " Allow once  [Allow always]  Reject",
            " Allow once   Allow always  [Reject]",
        ]
        .iter()
        .enumerate()
        {
            let rows = screen(buttons(i).as_bytes());
            assert!(rows[0].contains(want), "{i}: {:?}", rows[0]);
            assert!(
                rows[0].contains("ctrl+f fullscreen  ⇆ select"),
                "{}",
                rows[0]
            );
        }
    }

    #[test]
    fn two_buttons_and_plain_rows() {
        let two = format!(
            "  ┃{PANEL}  {ORANGE} Confirm {PANEL}  Cancel {:60}\x1b[0m",
            ""
        );
        assert!(screen(two.as_bytes())[0].contains("[Confirm]  Cancel"));
        // No background differs: nothing is marked.
        let plain = format!("  ┃{PANEL}   Confirm    Cancel {:60}\x1b[0m", "");
        assert!(!screen(plain.as_bytes())[0].contains('['));
        // A lone highlighted label is not a row of buttons.
        let lone = format!("  ┃{PANEL}  {ORANGE} 1. SQLite {PANEL}{:60}\x1b[0m", "");
        assert!(!screen(lone.as_bytes())[0].contains('['));
    }

    #[test]
    fn bars_of_another_colour_than_the_input_box_are_told_apart() {
        let blue = "\x1b[38;2;92;156;245m";
        let red = "\x1b[38;2;224;108;117m";
        let text = format!(
            "  {blue}┃\x1b[0m  hello\r\n  {red}┃\x1b[0m  it failed\r\n\r\n  {blue}┃\x1b[0m  \r\n  {blue}╹▀▀▀▀\x1b[0m"
        );
        let rows = screen(text.as_bytes());
        assert_eq!(rows[0], "  ┃  hello");
        assert_eq!(rows[1], "  ╏  it failed");
        assert_eq!(rows[3], "  ┃");
    }
}
