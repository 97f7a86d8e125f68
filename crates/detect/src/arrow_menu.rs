//! Dialogs answered with arrow keys: a list whose options carry no number
//! (Claude Code 2.1.332's folder trust: `❯ No, exit` / `  Yes, I trust this
//! folder` over `Enter to confirm · Esc to cancel`) and a slider (its
//! `/effort`: a `──▲──` track over `low  medium  high`, `←/→ to adjust`).
//!
//! Neither has a digit that selects, so their options are numbered here in
//! screen order, and [`MenuSelect`] turns the number chosen in chat into the
//! presses that move the cursor there and confirm, counted from where the
//! cursor is drawn. The answer path checks the dialog's fingerprint (the
//! cursor's place included) before it presses them, so the count is right.

use super::ApprovalOption;
use super::dialog_rows::MenuSelect;
use super::dialog_rows::{self as dialog, Dialog};
use super::marks::Marks;

/// Most rows under the menu: the selection hint, maybe a blank or two.
const MAX_FOOTER_ROWS: usize = 3;

/// Most rows of one question paragraph.
const MAX_QUESTION_ROWS: usize = 4;

/// Fewest options a menu has.
const MIN_OPTIONS: usize = 2;

/// The cleaned bottom rows a dialog is read from.
fn bottom(rows: &[String]) -> Vec<String> {
    let first = rows.len().saturating_sub(dialog::MAX_DIALOG_ROWS);
    rows[first..].iter().map(|r| dialog::clean(r)).collect()
}

fn indent(row: &str) -> usize {
    row.chars().take_while(|c| *c == ' ').count()
}

/// The non-blank rows under `last`, if they are only a short selection
/// hint that names Enter (what makes a column of rows a live menu rather
/// than a prompt echo or the input box, which a rule closes).
fn hint_under(rows: &[String], last: usize) -> Option<String> {
    let below: Vec<&str> = rows[last + 1..]
        .iter()
        .map(|r| r.trim())
        .filter(|r| !r.is_empty())
        .collect();
    let hint = below.len() <= MAX_FOOTER_ROWS
        && below.iter().all(|r| !dialog::is_rule(r))
        && below.iter().any(|r| r.contains("Enter"));
    hint.then(|| below.join("\n"))
}

/// The dialog's top: the row after the last rule (a `─` rule, or the `▔`
/// edge 2.1.332 draws over a full-width panel), block or turn summary of
/// the agent's above `from`.
fn top(marks: &Marks, rows: &[String], from: usize) -> usize {
    let edge = |r: &str| {
        let t = r.trim();
        dialog::is_rule(t) || (!t.is_empty() && t.chars().all(|c| c == '▔'))
    };
    (0..from)
        .rev()
        .find(|&i| edge(&rows[i]) || marks.is_block(&rows[i]) || marks.starts_summary(&rows[i]))
        .map_or(0, |i| i + 1)
}

/// Paragraphs (runs of non-blank rows, each joined) between `top` and `end`.
fn paragraphs(rows: &[String], top: usize, end: usize) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut run: Vec<&str> = Vec::new();
    let mut start = top;
    for (i, row) in rows.iter().enumerate().take(end).skip(top) {
        if row.trim().is_empty() {
            if !run.is_empty() {
                out.push((start, run.join(" ")));
                run.clear();
            }
        } else {
            if run.is_empty() {
                start = i;
            }
            if run.len() < MAX_QUESTION_ROWS {
                run.push(row.trim());
            }
        }
    }
    if !run.is_empty() {
        out.push((start, run.join(" ")));
    }
    out
}

/// An un-numbered list with a cursor (the profile's menu cursor, Claude
/// Code's `❯`), at the bottom over a hint.
pub(crate) fn read_list(marks: &Marks, rows: &[String]) -> Option<Dialog> {
    let rows = bottom(rows);
    let (cursor, after) = (rows.iter().enumerate().rev())
        .find_map(|(i, r)| Some((i, marks.after_cursor(r).filter(|l| !l.trim().is_empty())?)))?;
    let label = |r: &str| marks.after_cursor(r).unwrap_or(r).trim().to_owned();
    // The column its label starts at: where its siblings' labels start.
    let on = &rows[cursor];
    let label_col = on[..on.len() - after.len()].chars().count();
    // The input box's prompt sits at column 0; a list is indented.
    if indent(&rows[cursor]) == 0 {
        return None;
    }
    let sibling = |r: &String| indent(r) == label_col && !r.trim().is_empty();
    let mut first = cursor;
    while first > 0 && sibling(&rows[first - 1]) {
        first -= 1;
    }
    let mut last = cursor;
    while last + 1 < rows.len() && sibling(&rows[last + 1]) {
        last += 1;
    }
    if last - first + 1 < MIN_OPTIONS {
        return None;
    }
    let footer = hint_under(&rows, last)?;
    let top = top(marks, &rows, first);
    let paragraphs = paragraphs(&rows, top, first);
    // The question is the paragraph that asks; else the one over the list
    // that is more than a link (the bypass-permissions consent ends with
    // its documentation's address).
    let (q_at, question) = paragraphs
        .iter()
        .rev()
        .find(|(_, p)| p.contains('?'))
        .or(paragraphs.iter().rev().find(|(_, p)| !dialog::is_link(p)))
        .cloned()?;
    let options = (first..=last)
        .map(|i| ApprovalOption {
            key: (i - first + 1).to_string(),
            label: label(&rows[i]),
            description: None,
            press: None,
            own_words: false,
        })
        .collect();
    let title = paragraphs
        .first()
        .map(|(_, p)| p.clone())
        .unwrap_or_default();
    let body: Vec<&str> = rows[top..q_at].iter().map(|r| r.trim()).collect();
    Some(Dialog {
        question,
        body: dialog::bound(body.join("\n").trim()),
        options,
        footer,
        context: rows[top..].join("\n").trim().to_owned(),
        title,
        loading: false,
        boxed: false,
        select: MenuSelect::Vertical {
            cursor: cursor - first,
        },
    })
}

/// A slider: a `─` track with a `▲` marker, the positions' names under it,
/// and a `←/→` hint.
pub(crate) fn read_slider(marks: &Marks, rows: &[String]) -> Option<Dialog> {
    let rows = bottom(rows);
    let hint = rows.iter().rposition(|r| r.contains("←/→"))?;
    let track = (0..hint).rev().find(|&i| {
        let t = rows[i].trim();
        t.contains('▲') && t.starts_with(['─', '▲'])
    })?;
    let names_at = track + 1;
    if names_at >= hint {
        return None;
    }
    let chars: Vec<char> = rows[track].chars().collect();
    let from = chars.iter().position(|c| matches!(c, '─' | '▲'))?;
    let to = from
        + chars[from..]
            .iter()
            .take_while(|c| matches!(c, '─' | '▲'))
            .count();
    let marker = chars.iter().position(|c| *c == '▲')?;
    // Names are set apart by two or more spaces; only those over the track.
    let names: Vec<(usize, String)> = words(&rows[names_at])
        .into_iter()
        .filter(|(col, _)| (from..to).contains(col))
        .collect();
    if names.len() < MIN_OPTIONS {
        return None;
    }
    let centre = |(col, name): &(usize, String)| col + name.chars().count() / 2;
    let cursor = (0..names.len()).min_by_key(|&i| centre(&names[i]).abs_diff(marker))?;
    let footer_indent = indent(&rows[hint]);
    let top = top(marks, &rows, track);
    let title_at =
        (top..track).find(|&i| !rows[i].trim().is_empty() && indent(&rows[i]) <= footer_indent)?;
    let question = rows[title_at].trim().to_owned();
    let options = names
        .iter()
        .enumerate()
        .map(|(i, (_, name))| ApprovalOption {
            key: (i + 1).to_string(),
            label: name.clone(),
            description: None,
            press: None,
            own_words: false,
        })
        .collect();
    Some(Dialog {
        title: question.clone(),
        question,
        body: String::new(),
        options,
        footer: rows[hint].trim().to_owned(),
        context: rows[title_at..].join("\n").trim().to_owned(),
        loading: false,
        boxed: false,
        select: MenuSelect::Horizontal { cursor },
    })
}

/// The words of `row` set apart by two or more spaces, with their columns.
fn words(row: &str) -> Vec<(usize, String)> {
    let chars: Vec<char> = row.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == ' ' {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && !(chars[i] == ' ' && chars.get(i + 1).is_none_or(|c| *c == ' ')) {
            i += 1;
        }
        out.push((start, chars[start..i].iter().collect::<String>()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::marks::claude;

    fn rows(screen: &str) -> Vec<String> {
        screen.lines().map(str::to_owned).collect()
    }

    macro_rules! real {
        ($name:literal) => {
            include_str!(concat!("../../../tests/detect/screens/", $name, ".txt"))
        };
    }

    fn labels(d: &Dialog) -> Vec<&str> {
        d.options.iter().map(|o| o.label.as_str()).collect()
    }

    #[test]
    fn folder_trust_of_2_1_332_is_a_list_with_its_question() {
        let d = read_list(&claude(), &rows(real!("trust-2.1.332"))).expect("a list");
        assert_eq!(labels(&d), ["No, exit", "Yes, I trust this folder"]);
        assert!(
            d.question
                .starts_with("Quick safety check: Is this a project you created"),
            "{}",
            d.question
        );
        assert!(d.body.contains("Accessing workspace:"), "{}", d.body);
        assert_eq!(d.select, MenuSelect::Vertical { cursor: 0 });
        assert_eq!(d.footer, "Enter to confirm · Esc to cancel");
        // The cursor moved: the same options, counted from its new place.
        let moved = real!("trust-2.1.332")
            .replace("❯ No, exit", "  No, exit")
            .replace("   Yes, I trust this folder", " ❯ Yes, I trust this folder");
        let d = read_list(&claude(), &rows(&moved)).expect("a list");
        assert_eq!(labels(&d), ["No, exit", "Yes, I trust this folder"]);
        assert_eq!(d.select, MenuSelect::Vertical { cursor: 1 });
    }

    #[test]
    fn bypass_consent_of_2_1_332_is_a_list_with_its_statement() {
        let d = read_list(&claude(), &rows(real!("bypass-consent-2.1.332"))).expect("a list");
        assert_eq!(labels(&d), ["No, exit", "Yes, I accept"]);
        assert_eq!(
            d.question,
            "By proceeding, you accept all responsibility for actions taken while running in Bypass Permissions mode."
        );
        assert!(
            d.body
                .starts_with("WARNING: Claude Code running in Bypass Permissions mode"),
            "{}",
            d.body
        );
        assert!(d.body.contains("sandboxed container/VM"), "{}", d.body);
        assert_eq!(d.select, MenuSelect::Vertical { cursor: 0 });
    }

    /// Built from the release's own strings in the consent's frame: the
    /// offer is behind a flag Claude Code's servers set, never drawn offline.
    #[test]
    fn resume_from_summary_offer_is_a_list() {
        let d = read_list(&claude(), &rows(real!("resume-summary-2.1.332"))).expect("a list");
        assert_eq!(
            labels(&d),
            [
                "Resume from summary (instant, recommended)",
                "Resume full session as-is",
                "Don't ask again"
            ]
        );
        assert!(
            d.question.starts_with("Resuming the full session"),
            "{}",
            d.question
        );
        assert_eq!(d.body, "This session is 3h 5m old and 120k tokens.");
    }

    #[test]
    fn effort_of_2_1_332_is_a_slider_at_its_marker() {
        let d = read_slider(&claude(), &rows(real!("effort-2.1.332"))).expect("a slider");
        assert_eq!(labels(&d), ["low", "medium", "high", "xhigh", "max"]);
        assert_eq!(d.question, "Effort");
        assert_eq!(d.select, MenuSelect::Horizontal { cursor: 1 });
    }

    #[test]
    fn the_input_box_a_prompt_echo_and_a_plain_list_are_not_menus() {
        let input = "────────────\n❯ fix it\n  and more\n────────────\n  ? for shortcuts\n";
        assert_eq!(read_list(&claude(), &rows(input)), None);
        let echo = "❯ ask\n  ❯ one\n    two\n● Done.\n\n✻ Worked for 1s\n";
        assert_eq!(read_list(&claude(), &rows(echo)), None);
        // No hint under it: output, not a live menu.
        let output = "● Choices:\n  ❯ one\n    two\n\n";
        assert_eq!(read_list(&claude(), &rows(output)), None);
        assert_eq!(read_slider(&claude(), &rows(output)), None);
    }

    #[test]
    fn presses_move_from_the_cursor_then_confirm() {
        let v = MenuSelect::Vertical { cursor: 1 };
        assert_eq!(v.presses("1"), Some(vec!["Up", "Enter"]));
        assert_eq!(v.presses("2"), Some(vec!["Enter"]));
        assert_eq!(v.presses("4"), Some(vec!["Down", "Down", "Enter"]));
        let h = MenuSelect::Horizontal { cursor: 0 };
        assert_eq!(h.presses("3"), Some(vec!["Right", "Right", "Enter"]));
        assert_eq!(v.presses("0"), None);
        assert_eq!(v.presses("yes"), None);
        assert_eq!(MenuSelect::Typed.presses("1"), None);
    }

    #[test]
    fn ticks_change_only_what_differs_then_go_on() {
        let none = MenuSelect::Ticks { ticked: 0 };
        assert_eq!(none.presses("1,3"), Some(vec!["1", "3", "Right"]));
        assert_eq!(none.presses("3, 1,3"), Some(vec!["1", "3", "Right"]));
        assert_eq!(none.presses("2"), Some(vec!["2", "Right"]));
        // Option 1 ticked at the desk: ticking 3 alone unticks it.
        let one = MenuSelect::Ticks { ticked: 0b1 };
        assert_eq!(one.presses("3"), Some(vec!["1", "3", "Right"]));
        assert_eq!(one.presses("1,3"), Some(vec!["3", "Right"]));
        for bad in ["", "1,", "0", "10", "a,b", "1,,2"] {
            assert_eq!(none.presses(bad), None, "{bad:?}");
        }
    }
}
