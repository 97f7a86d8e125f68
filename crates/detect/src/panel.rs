//! Screens drawn in panels with a left bar (OpenCode), read from the rows
//! [`super::cells`] marked: the input box, how the last turn ended, and
//! the dialog that replaces the input box.
//!
//! - The input box is the bottom-most run of `┃` rows closed by a `╹▀▀▀`
//!   edge; its last row names the agent and model (`Build · Fake Model`),
//!   the rows above it hold the typed text; key hints and the busy bar
//!   are under the edge.
//! - The person's messages are boxes with the input box's bar (`┃`);
//!   tool output and errors have bars of other colours (`╏`). The last
//!   turn is what follows the last `┃` box above the input box.
//! - A dialog is the bottom-most bar panel with no input box under it:
//!   a title (`△ Permission required`), what it asks about, and either a
//!   row of buttons whose selection the cell reader bracketed
//!   (`[Allow once]  Allow always   Reject`), answered with Left/Right
//!   and Enter, or numbered options over a hint row naming Enter (a
//!   question), answered by their digit.

use super::ApprovalOption;
use super::cells::OTHER_BAR;
use super::dialog::{self, Dialog};
use super::dialog_rows::MenuSelect;
use super::profiles::Profile;
use super::screen_parts::TurnEnd;

/// A bar as the person's messages and the input box draw it.
const BAR: char = '┃';
/// The input box's bottom edge.
const EDGE: char = '╹';
/// Blank cells that end a row of buttons (the key hints after it are
/// set further apart).
const HINT_GAP: &str = "     ";
/// Most rows of a panel read as a dialog (a long command wraps).
const MAX_PANEL_ROWS: usize = dialog::MAX_DIALOG_ROWS;
/// Fewest buttons or options a dialog has.
const MIN_OPTIONS: usize = 2;
/// Most options a question reads (its digits are one character).
const MAX_OPTIONS: usize = 9;

/// The text of a bar row after its bar (`┃` or `╏`), or `None` for a
/// row without one.
fn after_bar(row: &str) -> Option<&str> {
    let t = row.trim_start();
    t.strip_prefix(BAR).or_else(|| t.strip_prefix(OTHER_BAR))
}

fn is_bar(row: &str, bar: char) -> bool {
    row.trim_start().starts_with(bar)
}

/// The input box at the bottom of `rows`.
pub(crate) struct InputBox {
    /// Its first row.
    pub(crate) top: usize,
    /// The typed text (its rows joined), trimmed.
    pub(crate) text: String,
}

/// The input box: the last `╹` edge and the `┃` rows over it.
pub(crate) fn input_box(rows: &[String]) -> Option<InputBox> {
    let edge = rows.iter().rposition(|r| is_bar(r, EDGE))?;
    let mut top = edge;
    while top > 0 && is_bar(&rows[top - 1], BAR) {
        top -= 1;
    }
    let inner: Vec<&str> = rows[top..edge]
        .iter()
        .filter_map(|r| after_bar(r))
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .collect();
    // The last row names the agent and the model.
    let (_, typed) = inner.split_last()?;
    Some(InputBox {
        top,
        text: typed.join(" "),
    })
}

/// Blank cells that part the conversation column from OpenCode's sidebar
/// (drawn right of it on screens over 120 columns: the session's title,
/// `0% used`, `$0.00 spent`, `LSPs are disabled`).
const SIDEBAR_GAP: &str = "    ";

/// The leftmost column OpenCode's sidebar starts at: 42 columns from the
/// right edge of the narrowest screen that shows one (121 columns). The
/// conversation's text ends 4 columns before it.
const SIDEBAR_MIN_COLUMN: usize = 79;

/// A row's conversation column, its indentation kept: its text up to the
/// sidebar (text after a gap, from [`SIDEBAR_MIN_COLUMN`] on), empty for
/// a row of the sidebar alone. The sidebar is chrome: never how a turn
/// ended, never the answer.
fn conversation(row: &str) -> &str {
    let row = row.trim_end();
    let mut blanks = 0;
    for (column, (at, c)) in row.char_indices().enumerate() {
        if c == ' ' {
            blanks += 1;
        } else {
            if column >= SIDEBAR_MIN_COLUMN && blanks >= SIDEBAR_GAP.len() {
                return row[..at].trim_end();
            }
            blanks = 0;
        }
    }
    row
}

/// [`conversation`] trimmed.
fn main_column(row: &str) -> &str {
    conversation(row).trim()
}

/// How the last turn above the input box ended: the rows after the last
/// message box (`┃`). A turn that finished has the profile's
/// `turn_completed` row; one that did not ended on an error (the last
/// box before its end, unless it is a tool's: `$ cmd`, `# Title`) or was
/// stopped: OpenCode closes every turn with its `▣  Build · <model>` row,
/// with the time only when it finished (the profile's `turn_interrupted`
/// names the row without it). `None` while the turn shows no end: its
/// last row is anything else (the answer streaming, a sidebar row drawn
/// before the first turn's busy bar), so the turn is still going, never
/// stopped by what happens to be drawn last.
pub(crate) fn turn_end(profile: &Profile, rows: &[String]) -> Option<TurnEnd> {
    let end = input_box(rows).map_or(rows.len(), |b| b.top);
    let rows = &rows[..end];
    // No message above the input box (OpenCode's start screen, its logo):
    // no turn to read.
    let Some(from) = rows.iter().rposition(|r| is_bar(r, BAR)).map(|i| i + 1) else {
        return Some(TurnEnd::default());
    };
    let block: Vec<&str> = rows[from..]
        .iter()
        .map(|r| main_column(r))
        .filter(|r| !r.is_empty())
        .collect();
    let completed =
        (profile.turn_completed.as_ref()).is_some_and(|re| block.iter().any(|r| re.is_match(r)));
    if completed {
        return Some(TurnEnd {
            context: block.join("\n"),
            ..TurnEnd::default()
        });
    }
    // The closing row without a time: how a stopped or failed turn ends.
    let closing = block
        .last()
        .filter(|r| profile.turn_interrupted.is_match(r))?;
    // The last box of the turn (blank rows part boxes): its first row
    // with text, if only the closing row follows it.
    let all: Vec<&str> = rows[from..].iter().map(|r| r.trim()).collect();
    let last_box = all.iter().rposition(|r| r.starts_with(OTHER_BAR));
    let first_text = last_box.and_then(|end| {
        let start = all[..=end]
            .iter()
            .rposition(|r| !r.starts_with(OTHER_BAR))
            .map_or(0, |i| i + 1);
        let closes = all[end + 1..].iter().filter(|r| !r.is_empty()).count() <= 1;
        // Text at the panel's text column: a toast drawn over the
        // right of the screen (OpenCode shows the error there too, for
        // a while) starts far further right.
        (all[start..=end].iter())
            .find(|r| {
                (after_bar(r).and_then(|t| t.strip_prefix("  ")))
                    .is_some_and(|t| t.starts_with(|c: char| c != ' '))
            })
            .filter(|_| closes)
    });
    let error = first_text
        .filter(|r| profile.turn_errors.is_match(r))
        .map(|r| after_bar(r).unwrap_or(r).trim().to_owned());
    let interrupted = error.is_none().then(|| (*closing).to_owned());
    Some(TurnEnd {
        error,
        interrupted,
        rejected: None,
        unclosed: false,
        context: block.join("\n"),
    })
}

/// Most characters of the typed command compared with its echo: enough
/// to tell commands apart, few enough for the echo's box to wrap it.
const ECHO_CHARS: usize = 60;

/// [`answer`] while the turn still streams, from a frame whose input box
/// is drawn whole: a frame cut before the box's edge (`╹▀▀▀`) shows the
/// box's rows as if they were the answer's, its agent row (`Build · Fake
/// Model`) among them.
pub fn streaming_answer(rows: &[String], typed: &str) -> Option<String> {
    input_box(rows)?;
    answer(rows, typed)
}

/// The answer to the command `typed` as the settled screen shows it: the
/// rows between the person's message box echoing it (`┃  typed`) and the
/// input box, in the conversation's column (the sidebar cut off), without
/// OpenCode's closing rows (`▣  Build · <model> · 7.8s`), tool boxes'
/// bars dropped, indentation relative to the answer's. What the terminal
/// finally shows, not the frames drawn on the way (a streamed line redrawn
/// at every delta, the busy bar). `None` when the echo is off the screen
/// (a long answer scrolled it away) or nothing is under it.
pub fn answer(rows: &[String], typed: &str) -> Option<String> {
    let end = input_box(rows).map_or(rows.len(), |b| b.top);
    let rows = &rows[..end];
    let words = |t: &str| -> String {
        let w: Vec<&str> = t.split_whitespace().collect();
        w.join(" ").chars().take(ECHO_CHARS).collect()
    };
    let typed = words(typed);
    if typed.is_empty() {
        return None;
    }
    // The message boxes (runs of `┃` rows), the last echoing `typed`.
    // Bars in the conversation's column only: a toast over the right of
    // the screen (OpenCode shows an error there too) draws its own, and
    // read as plain text (no colours) a tool's or an error's box has the
    // same bar as the person's.
    let bar = |r: &String| is_bar(conversation(r), BAR);
    let mut echo_end = None;
    let mut i = 0;
    while i < rows.len() {
        if !bar(&rows[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < rows.len() && bar(&rows[i]) {
            i += 1;
        }
        let text: Vec<&str> = rows[start..i]
            .iter()
            .filter_map(|r| after_bar(conversation(r)))
            .collect();
        let shown = words(&text.join(" "));
        if !shown.is_empty() && (shown.starts_with(&typed) || typed.starts_with(&shown)) {
            echo_end = Some(i);
        }
    }
    let below: Vec<&str> = rows[echo_end?..]
        .iter()
        .map(|r| conversation(r))
        // A tool's box: its rows without the bar, at its text's column.
        .map(|r| after_bar(r).map_or(r, str::trim_end))
        .filter(|r| !r.trim_start().starts_with('▣') && !is_pending_tool(r))
        .collect();
    let indent = (below.iter())
        .filter(|r| !r.trim().is_empty())
        .map(|r| r.chars().take_while(|c| *c == ' ').count())
        .min()?;
    let mut out: Vec<&str> = Vec::new();
    for row in below {
        let row = row.get(indent..).unwrap_or("").trim_end();
        // Blank rows part paragraphs and boxes: one is enough.
        if row.is_empty() && out.last().is_none_or(|l| l.is_empty()) {
            continue;
        }
        out.push(row);
    }
    while out.last().is_some_and(|l| l.is_empty()) {
        out.pop();
    }
    Some(out.join("\n"))
}

/// A tool call still being written (OpenCode 1.x: `~ Writing command…`
/// while the model streams the call's input): a frame its tool row
/// replaces, never part of the answer.
fn is_pending_tool(row: &str) -> bool {
    let t = row.trim();
    t.starts_with("~ ") && t.ends_with('…')
}

/// The dialog at the bottom of `rows`, if one waits: the bottom-most bar
/// panel, with no input box under it.
pub(crate) fn find(rows: &[String]) -> Option<Dialog> {
    let last = rows.iter().rposition(|r| after_bar(r).is_some())?;
    if rows[last..].iter().any(|r| is_bar(r, EDGE)) {
        return None;
    }
    let floor = last.saturating_sub(MAX_PANEL_ROWS);
    let mut top = last;
    while top > floor && after_bar(&rows[top - 1]).is_some() {
        top -= 1;
    }
    let inner: Vec<String> = rows[top..=last]
        .iter()
        .map(|r| after_bar(r).unwrap_or_default().trim_end().to_owned())
        .collect();
    buttons(&inner).or_else(|| numbered(&inner))
}

/// The labels of a row of buttons and which is selected (`[Label]`).
fn button_row(row: &str) -> Option<(Vec<String>, usize, String)> {
    let row = row.trim();
    let (buttons, hints) = row.split_once(HINT_GAP).unwrap_or((row, ""));
    let labels: Vec<&str> = buttons
        .split("  ")
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let selected: Vec<usize> = (labels.iter().enumerate())
        .filter(|(_, l)| l.starts_with('[') && l.ends_with(']'))
        .map(|(i, _)| i)
        .collect();
    let [cursor] = selected[..] else { return None };
    if labels.len() < MIN_OPTIONS {
        return None;
    }
    let names = labels
        .iter()
        .map(|l| {
            l.trim_start_matches('[')
                .trim_end_matches(']')
                .trim()
                .to_owned()
        })
        .collect();
    Some((names, cursor, hints.trim().to_owned()))
}

/// A panel ending in a row of buttons: its title, then what it asks about.
fn buttons(inner: &[String]) -> Option<Dialog> {
    let at = inner.iter().rposition(|r| button_row(r).is_some())?;
    let (names, cursor, footer) = button_row(&inner[at])?;
    let mut text = inner[..at]
        .iter()
        .map(|r| r.trim())
        .filter(|r| !r.is_empty());
    let title = text.next()?.to_owned();
    let body: Vec<&str> = text.collect();
    let question = title
        .trim_start_matches(|c: char| !c.is_alphanumeric())
        .to_owned();
    let options = names
        .into_iter()
        .enumerate()
        .map(|(i, label)| ApprovalOption {
            key: (i + 1).to_string(),
            label,
            description: None,
            press: None,
            own_words: false,
        })
        .collect();
    Some(Dialog {
        question,
        body: dialog::bound(&body.join("\n")),
        options,
        footer,
        context: inner[..=at].join("\n").trim().to_owned(),
        title,
        loading: false,
        boxed: true,
        select: MenuSelect::Horizontal { cursor },
    })
}

/// `N. label` at the panel's text column.
fn option_row(row: &str) -> Option<(usize, String)> {
    let t = row.strip_prefix("  ")?;
    if t.starts_with(' ') {
        return None;
    }
    let (n, label) = t.split_once(". ")?;
    let n: usize = n.parse().ok()?;
    Some((n, label.trim().to_owned()))
}

/// A panel of numbered options over a hint row naming Enter: the
/// question above them, each option's description indented under it.
fn numbered(inner: &[String]) -> Option<Dialog> {
    let first = (inner.iter()).position(|r| option_row(r).is_some_and(|(n, _)| n == 1))?;
    let hint = (first..inner.len())
        .rev()
        .find(|&i| inner[i].contains("enter"))?;
    let mut options: Vec<ApprovalOption> = Vec::new();
    for row in &inner[first..hint] {
        if let Some((n, label)) = option_row(row) {
            if n != options.len() + 1 || options.len() >= MAX_OPTIONS {
                return None;
            }
            options.push(ApprovalOption {
                key: n.to_string(),
                label,
                description: None,
                press: None,
                own_words: false,
            });
        } else if let Some(last) = options.last_mut()
            && !row.trim().is_empty()
        {
            let d = last.description.get_or_insert_with(String::new);
            if !d.is_empty() {
                d.push(' ');
            }
            d.push_str(row.trim());
        }
    }
    if options.len() < MIN_OPTIONS {
        return None;
    }
    let question: Vec<&str> = inner[..first]
        .iter()
        .map(|r| r.trim())
        .filter(|r| !r.is_empty())
        .collect();
    let question = question.last()?.to_string();
    Some(Dialog {
        title: question.clone(),
        question,
        body: String::new(),
        options,
        footer: inner[hint].trim().to_owned(),
        context: inner[..=hint].join("\n").trim().to_owned(),
        loading: false,
        boxed: true,
        select: MenuSelect::Typed,
    })
}

#[cfg(test)]
mod tests {
    use super::super::Profiles;
    use super::super::screen::analyse;
    use super::*;
    use crate::ApprovalKind;

    fn rows(text: &str) -> Vec<String> {
        text.lines().map(str::to_owned).collect()
    }

    /// OpenCode 1.18.33's input box (as marked), 120 columns, shortened.
    const INPUT: &str =
        "  ┃\n  ┃\n  ┃\n  ┃  Build · Fake Model Fake\n  ╹▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀";
    const IDLE_FOOTER: &str = "   /tmp/ws                                110  ctrl+p commands";
    const BUSY_FOOTER: &str = "   ■■■■■■⬝⬝  esc interrupt            tab agents  ctrl+p commands";

    fn screen(transcript: &str, footer: &str) -> Vec<String> {
        rows(&format!("{transcript}\n{INPUT}\n{footer}"))
    }

    fn state(rows: &[String]) -> super::super::screen::ScreenState {
        let p = Profiles::defaults().unwrap().get("opencode").unwrap();
        analyse(&p, rows, |_| true)
    }

    const ECHO: &str = "  ┃\n  ┃  hello there\n  ┃\n";

    #[test]
    fn busy_then_a_finished_turn() {
        let busy = state(&screen(ECHO, BUSY_FOOTER));
        assert_eq!(
            busy.busy.as_deref(),
            Some("■■■■■■⬝⬝  esc interrupt            tab agents  ctrl+p commands")
        );
        assert!(!busy.idle);
        let done = format!(
            "{ECHO}\n     Hello from the fake model.\n\n     ▣  Build · Fake Model · 3.7s\n"
        );
        let s = state(&screen(&done, IDLE_FOOTER));
        assert!(s.idle && s.busy.is_none() && s.prompt.is_none());
        assert_eq!(s.input.as_deref(), Some(""));
        let end = s.turn_end.expect("idle");
        assert_eq!((end.error, end.interrupted), (None, None));
        // Typed text in the box.
        let typed = rows(&format!(
            "{done}\n  ┃\n  ┃  make a file\n  ┃\n  ┃  Build · Fake Model Fake\n  ╹▀▀▀▀▀▀\n{IDLE_FOOTER}"
        ));
        assert_eq!(state(&typed).input.as_deref(), Some("make a file"));
    }

    #[test]
    fn stopped_and_failed_turns() {
        let stopped = format!("{ECHO}\n     $ touch denied.txt\n\n     ▣  Build · Fake Model\n");
        let end = state(&screen(&stopped, IDLE_FOOTER))
            .turn_end
            .expect("idle");
        assert_eq!(end.interrupted.as_deref(), Some("▣  Build · Fake Model"));
        assert_eq!(end.error, None);
        let failed = format!(
            "{ECHO}\n  ╏\n  ╏  $ echo hi\n  ╏\n  ╏  (no output)\n  ╏\n\n  ╏\n  ╏  the request was malformed\n  ╏\n\n     ▣  Build · Fake Model\n"
        );
        let end = state(&screen(&failed, IDLE_FOOTER)).turn_end.expect("idle");
        assert_eq!(end.error.as_deref(), Some("the request was malformed"));
        assert_eq!(end.interrupted, None);
        // With its toast still over the right of the screen (as marked).
        let toast = format!(
            "  ┃\n  ┃  hello{:80}┃{:29}┃\n  ┃{:85}┃  the request was malformed  ┃\n{:87}╏{:29}┃\n  ╏\n  ╏  the request was malformed\n  ╏\n\n     ▣  Build · Fake Model\n",
            "", "", "", "", ""
        );
        let end = state(&screen(&toast, IDLE_FOOTER)).turn_end.expect("idle");
        assert_eq!(end.error.as_deref(), Some("the request was malformed"));
        // A tool's box closing a stopped turn is not an error.
        let tool = format!(
            "{ECHO}\n  ╏\n  ╏  $ echo hi\n  ╏\n  ╏  hi\n  ╏\n\n     ▣  Build · Fake Model\n"
        );
        let end = state(&screen(&tool, IDLE_FOOTER)).turn_end.expect("idle");
        assert_eq!(end.error, None);
        assert!(end.interrupted.is_some());
        // An earlier turn's error is not this one's.
        let later = format!("{failed}{ECHO}\n     Fine.\n\n     ▣  Build · Fake Model · 1.0s\n");
        let end = state(&screen(&later, IDLE_FOOTER)).turn_end.expect("idle");
        assert_eq!((end.error, end.interrupted), (None, None));
        // The start screen (the logo over the input box) ended no turn.
        let logo = "   █▀▀█ █▀▀█\n   ▀▀▀▀ █▀▀▀\n";
        let end = state(&screen(logo, IDLE_FOOTER)).turn_end.expect("idle");
        assert_eq!(end, TurnEnd::default());
        // A tool's box with no closing row under it: the turn goes on.
        let working = format!("{ECHO}\n  ╏\n  ╏  $ echo hi\n  ╏\n");
        assert_eq!(state(&screen(&working, IDLE_FOOTER)).turn_end, None);
    }

    /// OpenCode's sidebar (screens over 120 columns) right of the
    /// conversation, 42 columns from the right edge.
    fn with_sidebar(transcript: &str, sidebar: &[&str]) -> String {
        let mut out: Vec<String> = transcript.lines().map(str::to_owned).collect();
        for (i, side) in sidebar.iter().enumerate() {
            if out.len() <= i {
                out.push(String::new());
            }
            out[i] = format!("{:<118}{side}", out[i]);
        }
        out.join("\n")
    }

    const SIDEBAR: [&str; 8] = [
        "Greeting the shop",
        "",
        "Context",
        "0 tokens",
        "0% used",
        "$0.00 spent",
        "LSP",
        "LSPs are disabled",
    ];

    /// The first turn after start-up, measured: the person's message is
    /// drawn, the busy bar not yet, the sidebar's last row is `LSPs are
    /// disabled`. The turn is going on, not stopped by a sidebar row.
    #[test]
    fn a_first_turn_without_its_busy_bar_is_not_over() {
        let s = state(&screen(&with_sidebar(ECHO, &SIDEBAR), IDLE_FOOTER));
        assert!(!s.idle, "{:?}", s.turn_end);
        assert_eq!(s.turn_end, None);
        // Nor without a sidebar, an answer still streaming.
        let streaming = format!("{ECHO}\n     The shop sel\n");
        assert!(!state(&screen(&streaming, IDLE_FOOTER)).idle);
        // With the sidebar, a finished turn and a stopped one still read.
        let done = format!("{ECHO}\n     Pears.\n\n     ▣  Build · Fake Model · 3.7s\n");
        let s = state(&screen(&with_sidebar(&done, &SIDEBAR), IDLE_FOOTER));
        let end = s.turn_end.expect("finished");
        assert_eq!((end.error, end.interrupted), (None, None));
        let stopped = format!("{ECHO}\n     Pea\n\n     ▣  Build · Fake Model\n");
        let s = state(&screen(&with_sidebar(&stopped, &SIDEBAR), IDLE_FOOTER));
        let end = s.turn_end.expect("stopped");
        assert_eq!(end.interrupted.as_deref(), Some("▣  Build · Fake Model"));
    }

    /// The settled screen at a turn's end (OpenCode 1.18.33, as captured
    /// after a streamed answer): the answer under the echo, once, without
    /// the closing row, the input box, the busy bar or the sidebar.
    #[test]
    fn the_answer_is_what_the_settled_screen_shows() {
        let earlier =
            format!("{ECHO}\n     Earlier answer.\n\n     ▣  Build · Fake Model · 1.0s\n");
        let turn = "  ┃\n  ┃  tell me what the shop sells\n  ┃\n\n     The shop sells pears.\n\n     - one item\n       wrapped\n\n\n     ▣  Build · Fake Model · 11.5s\n\n\n";
        let settled = screen(&format!("{earlier}{turn}"), IDLE_FOOTER);
        let want = "The shop sells pears.\n\n- one item\n  wrapped";
        assert_eq!(
            answer(&settled, "tell me what the shop sells").as_deref(),
            Some(want)
        );
        let wide = screen(
            &with_sidebar(&format!("{earlier}{turn}"), &SIDEBAR),
            IDLE_FOOTER,
        );
        assert_eq!(
            answer(&wide, "tell me  what the shop sells").as_deref(),
            Some(want)
        );
        // A tool's box and the answer after it.
        let tool = "  ┃\n  ┃  make a file\n  ┃\n\n  ╏\n  ╏  $ touch made.txt\n  ╏\n\n     ▣  Build · Fake Model\n\n     Made it.\n\n     ▣  Build · Fake Model · 2.0s\n";
        assert_eq!(
            answer(&screen(tool, IDLE_FOOTER), "make a file").as_deref(),
            Some("$ touch made.txt\n\n   Made it.")
        );
        // The same call while the model still writes it (measured on
        // OpenCode 1.18.33 against a streaming model): a frame, no row.
        let pending =
            "  ┃\n  ┃  make a file\n  ┃\n\n     ~ Writing command…\n\n     ▣  Build · Fake Model\n";
        assert_eq!(answer(&screen(pending, IDLE_FOOTER), "make a file"), None);
        // An error turn read as plain text (no colours: every bar `┃`),
        // its toast over the right of the screen.
        let toast = format!(
            "  ┃\n  ┃  hello{:80}┃{:29}┃\n  ┃{:85}┃  the request was malformed  ┃\n{:87}┃{:29}┃\n  ┃\n  ┃  the request was malformed\n  ┃\n\n     ▣  Build · Fake Model\n",
            "", "", "", "", ""
        );
        assert_eq!(
            answer(&screen(&toast, IDLE_FOOTER), "hello").as_deref(),
            Some("the request was malformed")
        );
        // The echo scrolled off: no settled answer (the log is all there is).
        assert_eq!(
            answer(&screen("     pears.\n", IDLE_FOOTER), "tell me"),
            None
        );
        assert_eq!(answer(&settled, "something else"), None);
    }

    /// A frame drawn while the answer streams, cut before the input box's
    /// edge: its rows are no answer (CI saw the streamed card show
    /// `Build · Fake Model Fake`); once the edge is drawn, the text is.
    #[test]
    fn a_streamed_frame_without_the_input_box_edge_has_no_answer() {
        let turn = "  ┃\n  ┃  tell me\n  ┃\n\n     Plums cost two coins.\n\n";
        let box_rows = "  ┃\n  ┃\n  ┃  Build · Fake Model Fake";
        let cut = rows(&format!("{turn}{box_rows}"));
        let settled_reading = answer(&cut, "tell me").unwrap_or_default();
        assert!(
            settled_reading.ends_with("Build · Fake Model Fake"),
            "what the settled reading makes of the cut frame: {settled_reading:?}"
        );
        assert_eq!(streaming_answer(&cut, "tell me"), None);
        let whole = screen(turn, BUSY_FOOTER);
        assert_eq!(
            streaming_answer(&whole, "tell me").as_deref(),
            Some("Plums cost two coins.")
        );
    }

    #[test]
    fn retries_are_stuck_from_the_third_attempt() {
        let retry = |n: u32| {
            let footer = format!(
                "   ⬝⬝⬝⬝⬝⬝⬝⬝ upstream trouble [retrying in 6s attempt #{n}]          esc interrupt"
            );
            state(&screen(ECHO, &footer))
        };
        assert!(retry(2).busy.is_some());
        assert_eq!(retry(2).retry, None);
        assert_eq!(
            retry(3).retry.as_deref(),
            Some("stuck: the call failed 3 times or more (retrying)")
        );
        assert_eq!(retry(9).retry, retry(3).retry);
    }

    const PERMISSION: &str = "  ┃\n  ┃  △ Permission required\n  ┃    # Shell command\n  ┃\n  ┃  $ touch made.txt\n  ┃\n  ┃\n";

    #[test]
    fn the_permission_buttons_with_the_selection() {
        for (cursor, row) in [
            (
                0,
                "  ┃  [Allow once]  Allow always   Reject                                 ctrl+f fullscreen  ⇆ select  enter confirm",
            ),
            (
                2,
                "  ┃   Allow once   Allow always  [Reject]                                ctrl+f fullscreen  ⇆ select  enter confirm",
            ),
        ] {
            let screen = rows(&format!(
                "{ECHO}\n     $ touch made.txt\n\n     ▣  Build · Fake Model\n\n{PERMISSION}{row}\n  ┃\n"
            ));
            let s = state(&screen);
            assert!(!s.idle);
            let p = s.prompt.expect("the dialog");
            assert_eq!(p.kind, ApprovalKind::Permission);
            assert_eq!(p.question, "Permission required");
            assert_eq!(p.body, "# Shell command\n$ touch made.txt");
            let labels: Vec<(&str, &str)> = (p.options.iter())
                .map(|o| (o.key.as_str(), o.label.as_str()))
                .collect();
            assert_eq!(
                labels,
                [("1", "Allow once"), ("2", "Allow always"), ("3", "Reject")]
            );
            assert_eq!(p.select, MenuSelect::Horizontal { cursor });
        }
        // Without a bracketed selection (colours not read): no dialog.
        let plain = rows(&format!(
            "{PERMISSION}  ┃   Allow once   Allow always   Reject          enter confirm\n"
        ));
        assert!(state(&plain).prompt.is_none());
    }

    #[test]
    fn a_question_is_numbered() {
        let q = "  ┃\n  ┃  Which database should the shop use?\n  ┃\n  ┃  1. SQLite\n  ┃     One file\n  ┃  2. Postgres\n  ┃     A server\n  ┃  3. Type your own answer\n  ┃\n  ┃  ↑↓ select  enter submit  esc dismiss\n  ┃\n";
        let p = state(&rows(&format!("{ECHO}\n     → Asked 1 question\n{q}")))
            .prompt
            .expect("the question");
        assert_eq!(p.kind, ApprovalKind::Question);
        assert_eq!(p.question, "Which database should the shop use?");
        let labels: Vec<(&str, &str, Option<&str>)> = (p.options.iter())
            .map(|o| (o.key.as_str(), o.label.as_str(), o.description.as_deref()))
            .collect();
        assert_eq!(
            labels,
            [
                ("1", "SQLite", Some("One file")),
                ("2", "Postgres", Some("A server")),
                ("3", "Type your own answer", None)
            ]
        );
        assert_eq!(p.select, MenuSelect::Typed);
        // The same rows over the input box are output, not a dialog.
        assert!(state(&screen(q, IDLE_FOOTER)).prompt.is_none());
    }
}
