//! Screen analysis: what the visible screen says right now: is the agent
//! busy, is its idle prompt showing, is a dialog waiting, and how did the
//! turn on it end.
//!
//! For an agent profile (one with `spinner` patterns) busy and idle are
//! read from the structure Claude Code draws: the spinner row above the
//! input box, the box itself (`─` rule, `❯ ` row, `─` rule) and the footer
//! under it, which says `esc to interrupt` while the agent works. Idle
//! needs the whole box with its footer and no spinner, so a frame drawn
//! halfway (the footer not there yet) is neither busy nor idle and cannot
//! end a turn. A dialog is the live menu at the bottom with no input box
//! under it (see `dialog`), so an answer that quotes a prompt, or a numbered
//! list, is not one.
//!
//! Long with its tests (real Claude Code screens, each checked); the code
//! itself is well under 600 lines.

use super::dialog::{self, clean, is_input_row, is_rule};
use super::marks::Marks;
use super::panel;
use super::profiles::Profile;
pub(crate) use super::screen_parts::{Prompt, TurnEnd};
use super::{ApprovalKind, ApprovalOption, MenuSelect};

/// What the screen shows.
#[derive(Debug, Default)]
pub(crate) struct ScreenState {
    /// The row holding the busy marker.
    pub(crate) busy: Option<String>,
    pub(crate) idle: bool,
    /// The text in the input box (see the profile's `input`), trimmed.
    pub(crate) input: Option<String>,
    pub(crate) prompt: Option<Prompt>,
    /// The spinner row says the agent retries: `retrying N/M`.
    pub(crate) retry: Option<String>,
    /// Set when idle, for an agent profile.
    pub(crate) turn_end: Option<TurnEnd>,
    /// The permission mode the input box's footer shows.
    pub(crate) mode: Option<String>,
    /// The screen would be idle (a dialog aside) but the turn has not
    /// shown how it closed (see [`TurnEnd::unclosed`]).
    pub(crate) unclosed: bool,
}

/// Analyses `rows` (the visible screen, trailing empty rows dropped).
/// `printed(rule)` says whether a menu-less rule's header was printed in
/// the current turn (an old checkpoint still on screen is not a prompt).
pub(crate) fn analyse(
    profile: &Profile,
    rows: &[String],
    printed: impl Fn(usize) -> bool,
) -> ScreenState {
    // The dialog reader sees the rows as drawn (a box of its own matters).
    let drawn = rows;
    let rows: Vec<String> = rows.iter().map(|r| clean(r)).collect();
    let filled: Vec<&str> = rows
        .iter()
        .map(String::as_str)
        .filter(|r| !r.trim().is_empty())
        .collect();
    let status = &filled[filled.len().saturating_sub(profile.status_rows)..];
    let status_text = status.join("\n");
    let idle_match = profile.idle.is_match(&status_text);
    let panel_box = profile.cells.then(|| panel::input_box(&rows)).flatten();
    // A line-mode agent's input is the row its cursor is on (its rows go
    // down to it): a line it took has the cursor below it, though its text
    // is still the last on screen.
    let input_text = match rows.last() {
        Some(last) if profile.input_at_cursor => last.as_str(),
        _ => &status_text,
    };
    // The box is the bottom-most match: a short screen can still show its
    // first prompt under the rule the agent drew above it.
    let input = (profile.input.as_ref())
        .and_then(|re| re.captures_iter(input_text).last())
        .and_then(|c| c.get(1))
        .map(|m| m.as_str().trim().to_owned())
        .or_else(|| panel_box.as_ref().map(|b| b.text.clone()));
    let structured = !profile.spinner.is_empty();
    let mut mode = None;
    let (busy, idle, spinner) = if structured {
        let input_box = input_box(&profile.marks, &rows);
        mode = (input_box.as_ref())
            .and_then(|b| profile.footer_mode(b.footer.iter().map(String::as_str)));
        let above = input_box.as_ref().map_or(rows.len(), |b| b.top);
        let spinner = spinner_row(profile, &rows[..above]);
        let footer_busy = input_box
            .as_ref()
            .and_then(|b| b.footer.iter().find(|f| profile.busy.is_match(f)).cloned());
        let busy = spinner.clone().or(footer_busy);
        // A footer drawn halfway (no footer yet, or its first row a mode
        // row cut after the mode) is not the idle one. Under a statusline
        // (GSD's) 2.1.332 draws the mode row alone, below it.
        let complete = input_box.as_ref().is_some_and(|b| {
            b.footer
                .first()
                .is_some_and(|f| !profile.footer_modes.cut(f))
        });
        let idle = busy.is_none() && complete && idle_match;
        (busy, idle, spinner)
    } else if profile.busy.is_empty() {
        // No busy marker (a shell): anything but the prompt is work.
        let busy = (!idle_match && !status.is_empty()).then(|| {
            status
                .last()
                .map_or_else(String::new, |r| r.trim().to_owned())
        });
        (busy.clone(), busy.is_none() && idle_match, None)
    } else {
        let busy = profile.busy.is_match(&status_text).then(|| {
            status
                .iter()
                .find(|r| profile.busy.is_match(r))
                .map_or_else(|| status_text.clone(), |r| r.trim().to_owned())
        });
        // A panel-drawn agent is idle only with its input box drawn.
        let boxed = !profile.cells || panel_box.is_some();
        (busy.clone(), busy.is_none() && idle_match && boxed, None)
    };
    let retry = spinner
        .as_deref()
        .zip(profile.retry.as_ref())
        .and_then(|(row, re)| re.captures(row))
        .map(|c| {
            let n = |g: &str| c.name(g).map_or("?", |m| m.as_str()).to_owned();
            format!("retrying {}/{}", n("attempt"), n("of"))
        })
        .or_else(|| stalled(profile, busy.as_deref()))
        .or_else(|| (!idle).then(|| retrying(profile, &rows)).flatten());
    let prompt = approval(profile, &rows, drawn, idle, busy.is_some(), printed);
    let structured_end = (structured && idle).then(|| turn_end(profile, &rows));
    let unclosed = structured_end.as_ref().is_some_and(|e| e.unclosed);
    // A boxed dialog over a drawn input box waits all the same.
    let mut idle = idle && prompt.is_none();
    let turn_end = if profile.cells && idle {
        // A panel-drawn turn that shows no end is still going, however
        // idle its footer looks (OpenCode's first turn draws its busy bar
        // late).
        let end = panel::turn_end(profile, &rows);
        idle = end.is_some();
        end
    } else if structured && idle {
        structured_end
    } else if idle {
        (profile.prompt_row.as_ref()).map(|re| line_turn_end(profile, re, &rows))
    } else {
        None
    };
    ScreenState {
        busy,
        idle,
        input,
        prompt,
        retry,
        turn_end,
        mode,
        unclosed,
    }
}

/// Claude Code's input box: where it starts and the footer rows under it.
struct InputBox {
    /// The rule above the `❯ ` row.
    top: usize,
    footer: Vec<String>,
}

/// The input box at the bottom of `rows`: a rule, the input row (and its
/// wrapped rows), a rule, then the footer. `footer` is empty while the
/// frame is drawn halfway.
fn input_box(marks: &Marks, rows: &[String]) -> Option<InputBox> {
    let prompt = rows
        .iter()
        .enumerate()
        .rposition(|(i, r)| i > 0 && is_input_row(marks, r) && is_rule(&rows[i - 1]))?;
    let bottom = prompt + rows[prompt..].iter().position(|r| is_rule(r))?;
    let footer = rows[bottom + 1..]
        .iter()
        .map(|r| r.trim().to_owned())
        .filter(|r| !r.is_empty())
        .collect();
    Some(InputBox {
        top: prompt - 1,
        footer,
    })
}

/// The rows under the input box at the bottom of `rows` (footer, a
/// statusline), trimmed; none without an input box.
pub(crate) fn footer_rows(marks: &Marks, rows: &[String]) -> Vec<String> {
    input_box(marks, rows).map(|b| b.footer).unwrap_or_default()
}

/// The spinner row among the last `status_rows` non-empty rows of `rows`
/// (the task list can sit under it).
fn spinner_row(profile: &Profile, rows: &[String]) -> Option<String> {
    rows.iter()
        .rev()
        .filter(|r| !r.trim().is_empty())
        .take(profile.status_rows)
        .find(|r| profile.spinner.is_match(r))
        .map(|r| r.trim().to_owned())
}

/// How the turn above the input box ended: its last block (from the last
/// answer, tool or prompt row at column 0) holds the agent's error row, the
/// user's interruption or the agent's refusal.
fn turn_end(profile: &Profile, rows: &[String]) -> TurnEnd {
    let marks = &profile.marks;
    let end = input_box(marks, rows).map_or(rows.len(), |b| b.top);
    let rows = &rows[..end];
    // The turn's summary row (`✻ Worked for 1s`) closes it; it is not output.
    let last = rows
        .iter()
        .rposition(|r| marks.is_block(r) || marks.is_echo_row(r))
        .unwrap_or(0);
    let block: Vec<&str> = rows[last..]
        .iter()
        .map(String::as_str)
        .filter(|r| !r.trim().is_empty() && !profile.spinner.is_match(r))
        .collect();
    let find = |set: &regex::RegexSet| {
        block
            .iter()
            .rev()
            .find(|r| set.is_match(r))
            .map(|r| r.trim().to_owned())
    };
    let error = find(&profile.turn_errors);
    let interrupted = find(&profile.turn_interrupted);
    let rejected = find(&profile.turn_rejected);
    let closed = (profile.turn_closed.as_ref())
        .is_none_or(|closed| block.iter().any(|r| closed.is_match(r)));
    TurnEnd {
        unclosed: !closed && error.is_none() && interrupted.is_none() && rejected.is_none(),
        error,
        interrupted,
        rejected,
        context: block.join("\n"),
    }
}

/// The rows of the last turn of an agent drawn without an input box: the
/// rows between the last two input rows (the prompt echo and the live
/// input row, see the profile's `prompt_row`), empty and spinner rows
/// left out.
fn last_turn<'a>(profile: &Profile, prompt: &regex::Regex, rows: &'a [String]) -> Vec<&'a str> {
    let inputs: Vec<usize> = (rows.iter().enumerate())
        .filter(|(_, r)| prompt.is_match(r))
        .map(|(i, _)| i)
        .collect();
    let (from, to) = match inputs[..] {
        [.., a, b] => (a, b),
        [b] => (0, b),
        [] => (0, rows.len()),
    };
    rows[from..to]
        .iter()
        .map(String::as_str)
        .filter(|r| !r.trim().is_empty() && !profile.spinner.is_match(r))
        .collect()
}

/// The last error row of a turn's `block` that no retry row (the
/// profile's `turn_retried`) follows: the error the agent gave up on.
fn given_up_error(profile: &Profile, block: &[&str]) -> Option<String> {
    let at = block
        .iter()
        .rposition(|r| profile.turn_errors.is_match(r))?;
    let retried = (profile.turn_retried.as_ref())
        .is_some_and(|re| block[at + 1..].iter().any(|r| re.is_match(r.trim())));
    (!retried).then(|| block[at].trim().to_owned())
}

/// The agent's retry of an error, while it works: the last row of the
/// turn so far (spinner rows aside) is its retry row (the profile's
/// `turn_retried`, Aider's `Retrying in 0.5 seconds...`).
fn retrying(profile: &Profile, rows: &[String]) -> Option<String> {
    let (re, prompt) = profile
        .turn_retried
        .as_ref()
        .zip(profile.prompt_row.as_ref())?;
    let from = rows.iter().rposition(|r| prompt.is_match(r)).unwrap_or(0);
    let last = (rows[from..].iter())
        .map(|r| r.trim())
        .rfind(|r| !r.is_empty() && !profile.spinner.is_match(r) && !profile.busy.is_match(r))?;
    re.is_match(last).then(|| last.to_owned())
}

/// Whether the last turn on screen shows the row that closes a finished
/// turn (the profile's `turn_closed`) or an error row: what an in-band
/// `done` or `error` must be borne out by. A profile naming no closing row
/// takes the agent's word.
pub(crate) fn turn_closed(profile: &Profile, rows: &[String]) -> bool {
    let Some(closed) = &profile.turn_closed else {
        return true;
    };
    let rows: Vec<String> = rows.iter().map(|r| clean(r)).collect();
    let block = match &profile.prompt_row {
        Some(prompt) => last_turn(profile, prompt, &rows),
        None => rows.iter().map(String::as_str).collect(),
    };
    (block.iter()).any(|r| closed.is_match(r) || profile.turn_errors.is_match(r))
}

/// How the last turn of an agent drawn without an input box ended (see
/// [`last_turn`]).
fn line_turn_end(profile: &Profile, prompt: &regex::Regex, rows: &[String]) -> TurnEnd {
    let block = last_turn(profile, prompt, rows);
    let find = |set: &regex::RegexSet| {
        block
            .iter()
            .rev()
            .find(|r| set.is_match(r))
            .map(|r| r.trim().to_owned())
    };
    let mut interrupted = find(&profile.turn_interrupted);
    // Codex's interruption row looks like its error rows (`■ …`). An error
    // the agent went on to retry (a retry row after it) is not the turn's.
    let error = given_up_error(profile, &block).filter(|e| interrupted.as_ref() != Some(e));
    // A turn that printed neither its closing row nor an error was cut
    // short (Aider prints nothing when interrupted): its last row says
    // where.
    if let Some(done) = &profile.turn_completed
        && interrupted.is_none()
        && error.is_none()
        && block.len() > 1
        && !block.iter().any(|r| done.is_match(r))
    {
        interrupted = (block.iter().rev())
            .find(|r| !is_rule(r))
            .map(|r| r.trim().to_owned());
    }
    TurnEnd {
        error,
        interrupted,
        rejected: find(&profile.turn_rejected),
        unclosed: false,
        context: block.join("\n"),
    }
}

fn approval(
    profile: &Profile,
    rows: &[String],
    drawn: &[String],
    idle: bool,
    busy: bool,
    printed: impl Fn(usize) -> bool,
) -> Option<Prompt> {
    // A GSD checkpoint: a header printed this turn, no menu, agent waiting.
    let first = rows.len().saturating_sub(profile.approval_rows);
    let region = &rows[first..];
    for (index, rule) in profile.approvals.iter().enumerate() {
        if rule.menu {
            continue;
        }
        // GSD's checkpoints: found on the whole screen, answered with what
        // they name, once the turn printing them is over (idle).
        if rule.kind == ApprovalKind::Checkpoint {
            // The turn's own: below the last prompt echo (`❯ sqlite`, the
            // answer typed), not a checkpoint answered further up.
            let marks = &profile.marks;
            let turn = (rows.iter().enumerate())
                .rposition(|(i, r)| i > 0 && marks.is_echo_row(r) && !is_rule(&rows[i - 1]))
                .map_or(0, |i| i + 1);
            match super::checkpoint::find(profile, &rows[turn..]) {
                Some(found) if idle && printed(index) => return Some(found),
                _ => continue,
            }
        }
        let Some(header_at) = region.iter().rposition(|r| rule.header.is_match(r)) else {
            continue;
        };
        // A question still waiting on its own row (Aider's `… [Yes]: `,
        // the cursor after it) is live though its line is not finished.
        let live = region[header_at + 1..].iter().all(|r| r.trim().is_empty());
        // A line-mode agent draws its question where it reads the answer:
        // on the cursor's row (the last of `rows`, see `input_at_cursor`).
        // The same words anywhere else, a finished line included, are text
        // in its answer (one quoting the question), not a dialog.
        let asking = if profile.input_at_cursor {
            header_at + 1 == region.len()
        } else {
            printed(index) || live
        };
        if busy || !asking {
            continue;
        }
        let question = region[header_at].trim().to_owned();
        // What it asks about: below it, or (a line-mode agent asking on
        // its cursor row) the rows it printed right above it: Aider's
        // command, or the file it would add.
        let body = if profile.input_at_cursor {
            asked_about(profile, &region[..header_at])
        } else {
            region[header_at + 1..].join("\n")
        };
        let options = typed_options(&question).unwrap_or_else(|| rule.options.clone());
        return Some(Prompt {
            kind: rule.kind,
            question,
            body: dialog::bound(body.trim()),
            options,
            context: region[header_at..].join("\n").trim_end().to_owned(),
            loading: false,
            select: MenuSelect::Typed,
        });
    }
    let menu_rules = profile.approvals.iter().filter(|r| r.menu);
    // No menu rule: the profile reads no dialogs.
    menu_rules.clone().next()?;
    let d = if profile.cells {
        panel::find(drawn)?
    } else {
        dialog::find(&profile.marks, drawn, |r| {
            profile.spinner.is_match(r) || (profile.spinner.is_empty() && profile.busy.is_match(r))
        })?
    };
    // Over an idle input box a menu is text in an answer, unless it is the
    // dialog's own: in a box of its own (older releases), under the prompt
    // echo that takes the input row's place (Codex), or with its selection
    // footer (`Enter to select · Tab/Arrow keys to navigate · Esc to
    // cancel`), whatever is still drawn above it (an input box and its
    // footer left over the question do not make it an answer's text).
    let footed = d.footer.lines().any(|r| profile.marks.is_menu_footer(r));
    if idle && !d.boxed && !footed && !only_echo_above(profile, rows) {
        return None;
    }
    let (question, body) = own_question(profile, &d.context).unwrap_or((d.question, d.body));
    let rule = menu_rules.clone().find(|r| {
        [d.title.as_str(), question.as_str(), d.footer.as_str()]
            .iter()
            .any(|t| t.lines().any(|l| r.header.is_match(l)))
    });
    let kind = rule.map_or(ApprovalKind::Dialog, |r| r.kind);
    let question = match rule {
        Some(r) if kind == ApprovalKind::Question => {
            without_header(&r.header, &d.context, question)
        }
        _ => question,
    };
    let mut options = d.options;
    if let Some(re) = &profile.option_key {
        for o in &mut options {
            o.press = (re.captures(&o.label))
                .and_then(|c| c.name("key"))
                .map(|k| match k.as_str() {
                    "esc" | "Esc" => "Escape".to_owned(),
                    other => other.to_owned(),
                });
        }
    }
    Some(Prompt {
        kind,
        question,
        body,
        options,
        context: d.context,
        loading: d.loading,
        select: d.select,
    })
}

/// Rows a line-mode agent prints right above its question, as many as
/// a few shell commands take; more are the answer above them.
const MAX_ASKED_ROWS: usize = 4;

/// The rows right above a line-mode agent's question (`above`, nearest
/// last) that say what it asks about, up to an empty row, a rule, the
/// turn's closing row or its prompt row.
fn asked_about(profile: &Profile, above: &[String]) -> String {
    let ends = |r: &str| {
        r.trim().is_empty()
            || is_rule(r)
            || profile
                .turn_completed
                .as_ref()
                .is_some_and(|re| re.is_match(r))
            || profile.prompt_row.as_ref().is_some_and(|re| re.is_match(r))
    };
    let mut rows: Vec<&str> = (above.iter().rev())
        .map(String::as_str)
        .take_while(|r| !ends(r))
        .take(MAX_ASKED_ROWS)
        .map(str::trim)
        .collect();
    rows.reverse();
    rows.join("\n")
}

/// The options a typed question names itself, each by its letter in
/// brackets: `(Y)es/(N)o/(D)on't ask again [Yes]:` is Yes, No and Don't
/// ask again, answered with their first word (`yes`, `no`, `don't`; Aider
/// takes any beginning of one). `None` unless it names two or more.
fn typed_options(question: &str) -> Option<Vec<ApprovalOption>> {
    let q = question.trim_end();
    let q = q.rfind(" [").map_or(q, |at| &q[..at]);
    let first = q.rfind(" (")? + 1;
    let mut options = Vec::new();
    for part in q[first..].split('/') {
        let rest = part.strip_prefix('(')?;
        let mut chars = rest.chars();
        let letter = chars.next().filter(char::is_ascii_alphabetic)?;
        let rest = chars.as_str().strip_prefix(')')?;
        let label = format!("{letter}{rest}").trim().to_owned();
        let key = label.split_whitespace().next()?.to_lowercase();
        options.push(ApprovalOption {
            key,
            label,
            description: None,
            press: None,
            own_words: false,
        });
    }
    (options.len() >= 2).then_some(options)
}

/// The status of a turn whose busy row counts `stalled_seconds` or more
/// without an answer (the profile's `stalled`): the agent may be retrying
/// an API error without end, and only an interrupt ends that.
fn stalled(profile: &Profile, busy: Option<&str>) -> Option<String> {
    let (re, limit) = profile.stalled.as_ref()?;
    let found = re.captures(busy?)?;
    let count = |group: &str| -> Option<u64> { found.name(group)?.as_str().parse().ok() };
    if let Some(attempt) = count("attempt") {
        let limit = profile.stalled_attempts;
        return (attempt >= limit)
            .then(|| format!("stuck: the call failed {limit} times or more (retrying)"));
    }
    let seconds = count("seconds")?;
    (seconds >= *limit).then(|| format!("stuck: no answer for {limit}s or more (retrying?)"))
}

/// Whether the rows the profile takes for its input row (`prompt_row`)
/// are all above the menu at the bottom of `rows`: a prompt echo (Codex's
/// `› pick a database` over its question picker, which takes the input
/// row's place), so the idle match is that echo and the menu is live. A
/// menu with the input row under it is text in an answer.
fn only_echo_above(profile: &Profile, rows: &[String]) -> bool {
    let Some(re) = &profile.prompt_row else {
        return false;
    };
    let Some(last) = rows
        .iter()
        .rposition(|r| dialog::is_option_row(&profile.marks, r))
    else {
        return false;
    };
    rows[..last].iter().any(|r| re.is_match(r)) && !rows[last..].iter().any(|r| re.is_match(r))
}

/// A question whose header row (Codex's `Question 1/1 (1 unanswered)`)
/// was read into its paragraph, without it: what is asked.
fn without_header(header: &regex::Regex, context: &str, question: String) -> String {
    let row = context
        .lines()
        .map(str::trim)
        .find(|l| header.is_match(l) && question.starts_with(l) && question.len() > l.len());
    match row {
        Some(row) => question[row.len()..].trim().to_owned(),
        None => question,
    }
}

/// The question row the profile names (`question`) in a dialog's rows,
/// and the rows between it and the menu as the body: Codex asks `Would you
/// like to run the following command?` above the command, so the
/// paragraph over the menu is what is asked about, not the question.
fn own_question(profile: &Profile, context: &str) -> Option<(String, String)> {
    let re = profile.question.as_ref()?;
    let rows: Vec<&str> = context.lines().collect();
    let at = rows.iter().rposition(|r| re.is_match(r.trim()))?;
    let menu = rows[at..]
        .iter()
        .position(|r| dialog::is_option_row(&profile.marks, r))
        .map_or(rows.len(), |i| at + i);
    let body: Vec<&str> = rows[at + 1..menu]
        .iter()
        .map(|r| r.trim())
        .filter(|r| !r.is_empty())
        .collect();
    Some((rows[at].trim().to_owned(), dialog::bound(&body.join("\n"))))
}

#[cfg(test)]
mod tests {
    use super::super::Profiles;
    use super::*;

    /// A screen captured from the real Claude Code 2.1.197 (tests/detect/screens).
    macro_rules! real {
        ($name:literal) => {
            include_str!(concat!("../../../tests/detect/screens/", $name, ".txt"))
        };
    }

    fn screen(text: &str) -> Vec<String> {
        text.lines().map(str::to_owned).collect()
    }

    fn state(profile: &str, text: &str) -> ScreenState {
        let p = Profiles::defaults().unwrap().get(profile).unwrap();
        analyse(&p, &screen(text), |_| true)
    }

    fn prompt(text: &str) -> Prompt {
        state("claude", text).prompt.expect("a dialog")
    }

    fn options(p: &Prompt) -> Vec<(&str, &str, Option<&str>)> {
        p.options
            .iter()
            .map(|o| (o.key.as_str(), o.label.as_str(), o.description.as_deref()))
            .collect()
    }

    /// Codex 0.171.0's question picker (its `request_user_input` tool),
    /// captured from the real CLI through `serve`.
    #[test]
    fn codex_question_picker_is_a_question_with_its_options() {
        let text = include_str!("../../../tests/fixtures/codex-0.171.0/question-picker.screen");
        let p = state("codex", text).prompt.expect("a dialog");
        assert_eq!(p.kind, ApprovalKind::Question, "{p:?}");
        assert_eq!(p.question, "Which database should the shop use?");
        let labels: Vec<(&str, &str)> = (p.options.iter())
            .map(|o| (o.key.as_str(), o.label.as_str()))
            .collect();
        assert_eq!(
            labels,
            [
                ("1", "SQLite"),
                ("2", "Postgres"),
                ("3", "None of the above")
            ],
            "{p:?}"
        );
    }

    // An older screen: no rule above the dialog, ⏺ answers.
    const PERMISSION: &str = "\
⏺ Bash(rm -rf build)

 Bash command
   rm -rf build

 Do you want to proceed?
 ❯ 1. Yes
   2. Yes, and don't ask again for rm commands in /tmp/proj
   3. No, and tell Claude what to do differently (esc)

 Esc to cancel · Tab to amend";

    const IDLE: &str = "\
⏺ Done.

✻ Churned for 3s

────────────────────────────────────────
❯ 
────────────────────────────────────────
  ? for shortcuts";

    #[test]
    fn permission_prompt_of_an_older_screen() {
        let s = state("claude", PERMISSION);
        let p = s.prompt.unwrap();
        assert_eq!(p.kind, ApprovalKind::Permission);
        assert_eq!(p.question, "Do you want to proceed?");
        assert_eq!(
            options(&p),
            [
                ("1", "Yes", None),
                (
                    "2",
                    "Yes, and don't ask again for rm commands in /tmp/proj",
                    None
                ),
                (
                    "3",
                    "No, and tell Claude what to do differently (esc)",
                    None
                )
            ]
        );
        assert_eq!(p.body, "Bash command\n  rm -rf build");
        assert!(!s.idle);
        assert!(s.busy.is_none());
    }

    #[test]
    fn real_bash_permission() {
        let p = prompt(real!("permission-bash"));
        assert_eq!(p.kind, ApprovalKind::Permission);
        assert_eq!(p.question, "Do you want to proceed?");
        assert_eq!(
            p.body,
            "Bash command\n\n  rm -rf build && touch done.txt\n  Remove the build directory"
        );
        assert_eq!(
            options(&p),
            [
                ("1", "Yes", None),
                (
                    "2",
                    "Yes, and don't ask again for rm -rf build and touch done.txt commands in /tmp/detect-cc/proj",
                    None
                ),
                ("3", "No", None)
            ]
        );
        assert!(
            p.context
                .ends_with("Esc to cancel · Tab to amend · ctrl+e to explain")
        );
    }

    #[test]
    fn real_wrapped_command_and_option_on_a_narrow_pane() {
        let p = prompt(real!("permission-wrapped-60-cols"));
        assert_eq!(p.kind, ApprovalKind::Permission);
        assert_eq!(p.question, "Do you want to proceed?");
        assert_eq!(
            options(&p),
            [
                ("1", "Yes", None),
                (
                    "2",
                    "Yes, and don't ask again for similar commands in /tmp/detect-cc/proj",
                    None
                ),
                ("3", "No", None),
            ]
        );
        assert!(
            p.body
                .contains("cp command with flags requires manual approval"),
            "{}",
            p.body
        );
        assert!(
            p.body
                .contains("  /tmp/detect-cc/proj/some/rather/deep/directory/tree &&"),
            "{}",
            p.body
        );
    }

    #[test]
    fn boxed_permission_prompt() {
        let boxed = "\
⏺ Bash(rm -rf build)

╭──────────────────────────────────────────────╮
│ Bash command                                 │
│                                              │
│   rm -rf build                               │
│   Remove the build directory                 │
│                                              │
│ Do you want to proceed?                      │
│ ❯ 1. Yes                                     │
│   2. No, and tell Claude what to do (esc)    │
╰──────────────────────────────────────────────╯
   Esc to cancel";
        let p = prompt(boxed);
        assert_eq!(p.kind, ApprovalKind::Permission);
        assert_eq!(p.question, "Do you want to proceed?");
        assert_eq!(
            p.body,
            "Bash command\n\n  rm -rf build\n  Remove the build directory"
        );
        assert_eq!(
            options(&p),
            [
                ("1", "Yes", None),
                ("2", "No, and tell Claude what to do (esc)", None)
            ]
        );
    }

    /// Menus drawn in the frames other releases use: boxed, with no rule
    /// above, with a selection footer. Each is a dialog with its options,
    /// never an idle screen (a turn's end).
    #[test]
    fn legacy_and_unruled_menus_are_dialogs() {
        let boxed_question = "\
⏺ I need one decision.

╭──────────────────────────────────────────────╮
│ Which database should we use?                │
│                                              │
│ ❯ 1. Postgres                                │
│   2. SQLite                                  │
│   3. Type something.                         │
╰──────────────────────────────────────────────╯
   Enter to select · Tab/Arrow keys to navigate · Esc to cancel";
        let unruled_question = "\
● I need one decision.

 Which database should we use?

 ❯ 1. Postgres
     Relational server
   2. SQLite
     Embedded file

 Enter to select · ↑/↓ to navigate · Esc to cancel";
        let unruled_plan = "\
● Here is the plan: parse, then test.

 Would you like to proceed?

 ❯ 1. Yes, and auto-accept edits
   2. Yes, manually approve edits
   3. No, keep planning";
        let selection_footer = "\
● Pick the targets.

 Which platforms?
 ❯ 1. [ ] Linux
   2. [ ] macOS
   3. Submit

 Space to select · Enter to confirm · Esc to cancel";
        let boxed_above_the_box = "\
⏺ Bash(rm -rf build)

╭──────────────────────────────────────────────╮
│ Do you want to proceed?                      │
│ ❯ 1. Yes                                     │
│   2. No, and tell Claude what to do (esc)    │
╰──────────────────────────────────────────────╯
────────────────────────────────────────
❯ 
────────────────────────────────────────
  ? for shortcuts";
        let native = "\
 Select model
 Switch between Claude models. Applies to this session.

 ❯ 1. Default (recommended)  Opus for complex tasks
   2. Sonnet                 Everyday tasks
   3. Haiku                  Quick answers

 Enter to confirm · Esc to exit";
        for (screen, kind, question, keys) in [
            (
                boxed_question,
                ApprovalKind::Question,
                "Which database should we use?",
                3,
            ),
            (
                unruled_question,
                ApprovalKind::Question,
                "Which database should we use?",
                2,
            ),
            (
                unruled_plan,
                ApprovalKind::Plan,
                "Would you like to proceed?",
                3,
            ),
            (
                boxed_above_the_box,
                ApprovalKind::Permission,
                "Do you want to proceed?",
                2,
            ),
            (
                selection_footer,
                ApprovalKind::Dialog,
                "Which platforms?",
                3,
            ),
            (
                native,
                ApprovalKind::Dialog,
                "Switch between Claude models. Applies to this session.",
                3,
            ),
        ] {
            let s = state("claude", screen);
            assert!(!s.idle, "{screen}");
            let p = s.prompt.unwrap_or_else(|| panic!("no dialog in\n{screen}"));
            assert_eq!((p.kind, p.question.as_str()), (kind, question), "{screen}");
            assert_eq!(p.options.len(), keys, "{screen}");
        }
    }

    /// A frame cut after the footer's mode (2.1.332 draws the rest in a
    /// write of its own) is neither idle nor busy: no turn ends on it.
    #[test]
    fn a_footer_cut_after_its_mode_is_not_idle() {
        let whole = "\
● Line 119 of the long answer.

────────────────────────────────────────
❯ 
────────────────────────────────────────
  ⏸ manual mode on · ? for shortcuts · ← for agents";
        let s = state("claude", whole);
        assert!(s.idle && s.busy.is_none());
        assert_eq!(s.mode.as_deref(), Some("manual"));
        let cut = whole.replace(" · ? for shortcuts · ← for agents", "");
        let s = state("claude", &cut);
        assert!(!s.idle, "{cut}");
        let statusline = whole.replace(
            "  ⏸ manual mode on · ? for shortcuts · ← for agents",
            "  Opus 5.5 │ planning · Catalogue (1/3) │ shop ░░░░░░░░░░ 0%\n  ⏸ manual mode on",
        );
        let s = state("claude", &statusline);
        assert!(s.idle, "{statusline}");
        let busy = whole.replace("? for shortcuts · ← for agents", "esc to interrupt");
        let s = state("claude", &busy);
        assert!(!s.idle && s.busy.is_some(), "{busy}");
    }

    #[test]
    fn lower_case_retry_rows_are_a_status() {
        let retrying = "\
❯ say hello

✻ API error · retrying in 1s · attempt 1/2

────────────────────────────────────────
❯ 
────────────────────────────────────────
  ⏸ manual mode on · esc to interrupt";
        let s = state("claude", retrying);
        assert!(s.busy.is_some());
        assert_eq!(s.retry.as_deref(), Some("retrying 1/2"));
    }

    #[test]
    fn real_edit_and_create() {
        let p = prompt(real!("edit"));
        assert_eq!(p.kind, ApprovalKind::Edit);
        assert_eq!(p.question, "Do you want to make this edit to main.rs?");
        assert_eq!(
            p.body,
            "Edit file\nmain.rs\n1  fn main() {\n2 -    println!(\"hello\");\n2 +    println!(\"hello, world\");\n3  }"
        );
        assert_eq!(
            options(&p)[1],
            (
                "2",
                "Yes, allow all edits during this session (shift+tab)",
                None
            )
        );
        let p = prompt(real!("create"));
        assert_eq!(p.kind, ApprovalKind::Create);
        assert_eq!(p.question, "Do you want to create notes.md?");
        assert!(p.body.starts_with("Create file\nnotes.md\n"), "{}", p.body);
        assert!(p.body.contains("# Notes"), "{}", p.body);
        assert_eq!(p.options.len(), 3);
    }

    #[test]
    fn real_question_with_descriptions_and_the_option_below_the_rule() {
        let p = prompt(real!("question"));
        assert_eq!(p.kind, ApprovalKind::Question);
        assert_eq!(p.question, "Which scope should phase 2 cover?");
        assert_eq!(
            options(&p),
            [
                ("1", "Minimal", Some("Only the parser, no CLI changes")),
                ("2", "Full", Some("Parser, CLI and docs")),
                ("3", "Staged", Some("Parser now, the rest next week")),
                ("4", "Type something.", None),
                ("5", "Chat about this", None),
            ]
        );
        assert!(p.body.starts_with("☐ Scope"), "{}", p.body);
        assert!(
            p.body.contains("2. Full: Parser, CLI and docs"),
            "{}",
            p.body
        );
    }

    /// The glyphs the readers go by are the profile's data: Claude Code's
    /// text field is its `own_words`, and a profile that names other marks
    /// reads the same screen by those.
    #[test]
    fn the_marks_a_screen_is_read_by_are_the_profiles() {
        let words = |p: &Prompt| -> Vec<bool> { p.options.iter().map(|o| o.own_words).collect() };
        let p = prompt(real!("question"));
        assert_eq!(words(&p), [false, false, false, true, false]);
        let layer = "[profiles.mine]\nextends = 'claude'\n\
            [profiles.mine.marks]\nblocks = ['●', '⏺']\ninput = ['❯']\necho = '❯'\n\
            own_words = 'Chat about'\nmenu_cursors = ['❯', '▶']\n";
        let profiles = Profiles::from_toml_layers(Some(("test", layer))).unwrap();
        let mine = profiles.get("mine").unwrap();
        let p = analyse(&mine, &screen(real!("question")), |_| true)
            .prompt
            .expect("a dialog");
        assert_eq!(words(&p), [false, false, false, false, true]);
        // A menu cursor is one only for a profile that names it.
        let other_cursor = real!("question").replace("❯ 1.", "▶ 1.");
        let p = analyse(&mine, &screen(&other_cursor), |_| true)
            .prompt
            .expect("a dialog under its own cursor");
        assert_eq!(p.cursor_key(&mine.marks).as_deref(), Some("1"));
        let claude = Profiles::defaults().unwrap().get("claude").unwrap();
        assert_eq!(
            analyse(&claude, &screen(&other_cursor), |_| true).prompt,
            None
        );
        // An echo is the profile's echo mark and the command.
        assert!(claude.is_echo("❯ /gsd:progress", "/gsd:progress"));
        let codex = Profiles::defaults().unwrap().get("codex").unwrap();
        assert!(!codex.is_echo("❯ /gsd:progress", "/gsd:progress"));
    }

    #[test]
    fn real_question_with_two_tabs_and_a_multi_select() {
        let p = prompt(real!("question-two-tabs"));
        assert_eq!(p.kind, ApprovalKind::Question);
        assert_eq!(
            p.question,
            "Which database should we use for the new reporting service?"
        );
        assert_eq!(
            options(&p),
            [
                (
                    "1",
                    "Postgres",
                    Some("Relational server, strong consistency")
                ),
                ("2", "SQLite", Some("Embedded file, zero setup")),
                ("3", "Type something.", None),
                ("4", "Chat about this", None),
            ]
        );
        // The multi-select tab indents descriptions less than the labels.
        let p = prompt(real!("question-multi-select"));
        assert_eq!(p.kind, ApprovalKind::Question);
        assert_eq!(p.question, "Which features do you want?");
        assert_eq!(
            options(&p),
            [
                ("1", "[✔] Auth", Some("Login and sessions")),
                ("2", "[ ] Export", Some("CSV and JSON export")),
                ("3", "Type something", None),
                ("4", "Chat about this", None),
            ]
        );
    }

    /// A question under an input box and its footer still drawn above it
    /// (the real 2.1.197 question of `question-two-tabs`, the idle box of
    /// the same release left above its rule): the numbered menu under the
    /// selection cursor, with its navigation footer, is the dialog, and
    /// the screen is not idle (no turn ends on it).
    #[test]
    fn a_question_under_a_drawn_input_box_is_a_dialog() {
        let s = state("claude", real!("question-under-input-box"));
        assert!(!s.idle, "an idle screen would end the turn");
        let p = s.prompt.expect("the question");
        assert_eq!(p.kind, ApprovalKind::Question);
        assert_eq!(
            p.question,
            "Which database should we use for the new reporting service?"
        );
        let keys: Vec<&str> = p.options.iter().map(|o| o.key.as_str()).collect();
        assert_eq!(keys, ["1", "2", "3", "4"]);
        // Without its selection footer a menu under the box is text.
        let footless = real!("question-under-input-box").replace(
            "Enter to select · Tab/Arrow keys to navigate · Esc to cancel",
            "",
        );
        assert!(state("claude", &footless).prompt.is_none());
    }

    /// A numbered menu under a selection cursor with its navigation
    /// footer, drawn without the dialog's rule and title (the question is
    /// the agent's last words above it), is a dialog all the same.
    #[test]
    fn an_unboxed_menu_with_its_selection_footer_is_a_dialog() {
        let s = state(
            "gsd",
            "● Which phase next?\n\n❯ 1. Plan phase 2\n  2. Execute phase 1\n  3. Stop here\n\nEnter to select · ↑/↓ to navigate · Esc to cancel",
        );
        assert!(!s.idle);
        let p = s.prompt.expect("a dialog");
        assert_eq!(p.question, "Which phase next?");
        assert_eq!(
            options(&p),
            [
                ("1", "Plan phase 2", None),
                ("2", "Execute phase 1", None),
                ("3", "Stop here", None)
            ]
        );
        // Without the footer, a list under an answer is not asked.
        let s = state(
            "gsd",
            "● Which phase next?\n\n❯ 1. Plan phase 2\n  2. Execute phase 1\n",
        );
        assert!(s.prompt.is_none());
    }

    #[test]
    fn real_plan_dialog_question_shares_its_line() {
        let p = prompt(real!("plan"));
        assert_eq!(p.kind, ApprovalKind::Plan);
        assert_eq!(
            p.question,
            "Claude has written up a plan and is ready to execute. Would you like to proceed?"
        );
        assert_eq!(
            p.body,
            "Ready to code?\n\nHere is Claude's plan:\nPlan\n\n1. Write the parser\n2. Add tests\n3. Update the docs"
        );
        assert_eq!(
            options(&p),
            [
                ("1", "Yes, and use auto mode", None),
                ("2", "Yes, manually approve edits", None),
                (
                    "3",
                    "Tell Claude what to change",
                    Some("shift+tab to approve with this feedback")
                ),
            ]
        );
        // The dialog without a plan file.
        let p = prompt(real!("exit-plan"));
        assert_eq!(p.kind, ApprovalKind::Plan);
        assert_eq!(p.question, "Claude wants to exit plan mode");
        assert_eq!(p.body, "Exit plan mode?");
    }

    /// The bypass-permissions consent asks nothing: its statement over the
    /// menu (not the link under it) stands for the question, on both
    /// releases (2.1.197 numbers its options, 2.1.332 does not).
    #[test]
    fn the_bypass_consent_is_a_dialog_with_its_statement() {
        for screen in [
            real!("bypass-consent-2.1.197"),
            real!("bypass-consent-2.1.332"),
        ] {
            let p = prompt(screen);
            let labels: Vec<&str> = p.options.iter().map(|o| o.label.as_str()).collect();
            assert_eq!(labels, ["No, exit", "Yes, I accept"]);
            assert!(
                p.question.starts_with("By proceeding, you accept"),
                "{}",
                p.question
            );
        }
    }

    #[test]
    fn an_unknown_dialog_is_still_a_dialog() {
        let d = "\
● Fetch(https://example.com)

────────────────────────────────────────
 Fetch

 Claude wants to fetch content from example.com

 Shall this go ahead today?
 ❯ 1. Sure
   2. Never

 Esc to cancel";
        let p = prompt(d);
        assert_eq!(p.kind, ApprovalKind::Dialog);
        assert_eq!(p.question, "Shall this go ahead today?");
        assert_eq!(
            p.body,
            "Fetch\n\nClaude wants to fetch content from example.com"
        );
        assert_eq!(p.options.len(), 2);
    }

    #[test]
    fn quoted_prompt_in_an_answer_is_not_an_approval() {
        let s = state("claude", real!("quote-idle"));
        assert!(s.prompt.is_none());
        assert!(s.idle);
        let answer = format!(
            "⏺ The tool asks: Do you want to proceed?\n  Then pick:\n  1. Yes\n  2. No\n\n{IDLE}"
        );
        assert!(state("claude", &answer).prompt.is_none());
        // Even with a cursor-like marker, the input box means no live prompt.
        let answer = format!(" Do you want to proceed?\n ❯ 1. Yes\n   2. No\n{IDLE}");
        assert!(state("claude", &answer).prompt.is_none());
        // A menu printed while the agent still works (spinner below it).
        let working =
            " Do you want to proceed?\n ❯ 1. Yes\n   2. No\n✶ Working… (3s · ↑ 12 tokens)";
        assert!(state("claude", working).prompt.is_none());
        // Header without a menu.
        assert!(
            state("claude", " Do you want to proceed?\n\n esc")
                .prompt
                .is_none()
        );
    }

    #[test]
    fn idle_and_busy() {
        let s = state("claude", IDLE);
        assert!(s.idle);
        assert!(s.busy.is_none());
        let busy = IDLE.replace(
            "✻ Churned for 3s",
            "✶ Transfiguring… (9m 34s · esc to interrupt)",
        );
        let s = state("claude", &busy);
        assert!(!s.idle);
        assert_eq!(
            s.busy.as_deref(),
            Some("✶ Transfiguring… (9m 34s · esc to interrupt)")
        );
        assert!(state("shell", "out\nbash-5.2#").idle);
        assert!(!state("shell", "bash-5.2# sleep 3").idle);
    }

    #[test]
    fn real_busy_from_spinner_or_footer() {
        for name in [real!("busy-spinner"), real!("busy-spinner-first")] {
            let s = state("claude", name);
            assert!(!s.idle);
            assert_eq!(
                s.busy.as_deref(),
                Some("✻ Crunching…")
                    .filter(|_| name.contains("✻ Crunching…"))
                    .or(s.busy.as_deref())
            );
            assert!(
                s.busy.as_deref().unwrap().ends_with("Crunching…"),
                "{:?}",
                s.busy
            );
            assert!(s.prompt.is_none());
        }
        // The spinner row alone (footer not drawn yet) is busy.
        let rows = screen(real!("busy-spinner"));
        let footer = rows
            .iter()
            .rposition(|r| r.contains("esc to interrupt"))
            .unwrap();
        let half: Vec<String> = rows[..footer].to_vec();
        let s = analyse(
            &Profiles::defaults().unwrap().get("claude").unwrap(),
            &half,
            |_| true,
        );
        assert!(s.busy.is_some() && !s.idle);
        // The footer alone (spinner row not drawn yet) is busy.
        let no_spinner: Vec<String> = rows
            .iter()
            .filter(|r| !r.contains("Crunching"))
            .cloned()
            .collect();
        let s = analyse(
            &Profiles::defaults().unwrap().get("claude").unwrap(),
            &no_spinner,
            |_| true,
        );
        assert_eq!(s.busy.as_deref(), Some("esc to interrupt · ← for agents"));
        // Neither drawn yet: not busy, and not idle either.
        let neither: Vec<String> = half
            .iter()
            .filter(|r| !r.contains("Crunching"))
            .cloned()
            .collect();
        let s = analyse(
            &Profiles::defaults().unwrap().get("claude").unwrap(),
            &neither,
            |_| true,
        );
        assert!(s.busy.is_none() && !s.idle);
        // Plan mode's footer says it too.
        let s = state("claude", real!("plan-mode-busy"));
        assert!(!s.idle && s.busy.is_some());
        // After the turn: `✻ Worked for 0s` is not busy.
        let s = state("claude", real!("quote-idle"));
        assert!(s.idle && s.busy.is_none());
    }

    #[test]
    fn real_retry_is_a_status_and_real_errors_end_the_turn() {
        let s = state("claude", real!("retry-500"));
        assert!(s.busy.is_some() && !s.idle);
        assert_eq!(s.retry.as_deref(), Some("retrying 1/1"));
        assert!(s.turn_end.is_none());
        let end = |name: &str| state("claude", name).turn_end.expect("idle");
        let e = end(real!("error-500"));
        assert!(
            e.error
                .unwrap()
                .starts_with("● API Error: 500 Internal server error.")
        );
        assert!(e.interrupted.is_none() && e.rejected.is_none());
        let e = end(real!("error-529"));
        assert!(e.error.unwrap().starts_with("● API Error: 529 Overloaded."));
        let e = end(real!("error-401"));
        assert_eq!(
            e.error.as_deref(),
            Some("⎿  Invalid API key · Fix external API key")
        );
        let e = end(real!("interrupted-after-no"));
        assert_eq!(e.error, None);
        assert_eq!(
            e.interrupted.as_deref(),
            Some("⎿  Interrupted · What should Claude do instead?")
        );
        let e = end(real!("unknown-command"));
        assert_eq!(
            e.rejected.as_deref(),
            Some("● Unknown command: /gsd:new-project")
        );
        assert_eq!(e.error, None);
    }

    #[test]
    fn quoted_errors_in_the_answer_are_not_the_agents() {
        let e = state("claude", real!("quote-idle")).turn_end.expect("idle");
        assert_eq!(
            e,
            TurnEnd {
                context: e.context.clone(),
                ..TurnEnd::default()
            }
        );
        let answer = format!(
            "● Here is the log:\n  API Error: 529 Overloaded\n  Error: cannot open file\n  Fatal errors: none.\n  + fn map_error(e: Error)\n  ⎿ quoted\n\n✻ Worked for 1s\n\n{IDLE}"
        );
        let e = state("claude", &answer).turn_end.expect("idle");
        assert_eq!(e.error, None, "{e:?}");
        // An error of an earlier turn is not this turn's.
        let later =
            format!("● API Error: 500 Internal server error.\n\n❯ again\n\n● Fine now.\n\n{IDLE}");
        assert_eq!(state("claude", &later).turn_end.unwrap().error, None);
    }

    #[test]
    fn the_input_box_text() {
        assert_eq!(state("claude", IDLE).input.as_deref(), Some(""));
        let typed = IDLE.replace("❯ ", "❯ /gsd:plan-phase 2  ");
        assert_eq!(
            state("claude", &typed).input.as_deref(),
            Some("/gsd:plan-phase 2")
        );
        // A submitted command in the history is not in the box.
        let history = IDLE.replace("⏺ Done.", "❯ /gsd:plan-phase 2");
        assert_eq!(state("claude", &history).input.as_deref(), Some(""));
        assert_eq!(state("shell", "bash-5.2# ls").input, None);
        // A short screen whose first prompt still sits under the welcome's
        // rule, within the rows read for the box (the sim agent drew this
        // in a test: its command was told "not submitted").
        let short = "\
✻ Welcome to sim-agent (clawmux's simulated Claude Code)

────────────────────────────────────────
❯ /gsd:new-project
● Streaming answer to /gsd:new-project, line one
  line two of the answer to /gsd:new-project
✽ Writing… (1s · ↑ 180 tokens)
  line three of the answer to /gsd:new-project
  The end of: /gsd:new-project

❯

────────────────────────────────────────
❯
────────────────────────────────────────
  ? for shortcuts";
        assert_eq!(state("claude", short).input.as_deref(), Some(""));
        // The real box has a no-break space after `❯`.
        assert_eq!(
            state("claude", real!("quote-idle")).input.as_deref(),
            Some("")
        );
    }

    #[test]
    fn ask_user_question_of_an_older_screen() {
        let q = "\
← ☐ Scope  ✔ Submit →

Which scope should phase 2 cover?

❯ 1. Minimal
  2. Full
  3. Type something.

Enter to select · Tab/Arrow keys to navigate · Esc to cancel";
        let p = state("claude", q).prompt.unwrap();
        assert_eq!(p.kind, ApprovalKind::Question);
        assert_eq!(p.question, "Which scope should phase 2 cover?");
        assert_eq!(p.options.len(), 3);
    }

    #[test]
    fn the_body_is_bounded() {
        let long: String = (0..200).map(|i| format!("   line {i}\n")).collect();
        let d = format!(
            "────────────────────\n Bash command\n{long}\n Do you want to proceed?\n ❯ 1. Yes\n   2. No\n\n Esc to cancel"
        );
        let p = prompt(&d);
        assert!(p.body.lines().count() <= dialog::MAX_BODY_ROWS + 1);
        assert!(p.body.ends_with(dialog::BODY_CUT));
        let wide = format!(
            "────────────────────\n Bash command\n   {}\n Do you want to proceed?\n ❯ 1. Yes\n   2. No",
            "é".repeat(5000)
        );
        let p = prompt(&wide);
        assert!(p.body.len() <= dialog::MAX_BODY_BYTES, "{}", p.body.len());
        assert!(p.body.ends_with(dialog::BODY_CUT), "{:?}", p.body);
    }

    #[test]
    fn checkpoint_needs_gsd_and_not_busy() {
        let c = format!(
            "CHECKPOINT: Verification Required\n→ YOUR ACTION: open the app\nType \"approved\" or describe issues\n\n{IDLE}"
        );
        let p = state("gsd", &c).prompt.unwrap();
        assert_eq!(p.kind, ApprovalKind::Checkpoint);
        assert_eq!(p.options[0].key, "approved");
        assert!(state("claude", &c).prompt.is_none());
        let busy = c.replace("✻ Churned for 3s", "✶ Working… (esc to interrupt)");
        assert!(state("gsd", &busy).prompt.is_none());
    }

    // Codex CLI 0.171's approval, as drawn in a 120-column pane.
    const CODEX_APPROVAL: &str = "\
  >_ OpenAI Codex (v0.171.0)
     /tmp/ws/shop


› make a marker file


• Running touch made-by-codex.txt


  Would you like to run the following command?

  Environment: local

  Reason: Create a marker file

  $ touch made-by-codex.txt

› 1. Yes, proceed (y)
  2. Yes, and don't ask again for commands that start with `touch made-by-codex.txt` (p)
  3. No, and tell Codex what to do differently (esc)

  Press enter to confirm or esc to cancel
";

    #[test]
    fn codex_approval_asks_its_own_question_and_names_its_keys() {
        let s = state("codex", CODEX_APPROVAL);
        assert!(!s.idle);
        let p = s.prompt.expect("a dialog");
        assert_eq!(p.kind, ApprovalKind::Permission);
        assert_eq!(p.question, "Would you like to run the following command?");
        assert_eq!(
            p.body,
            "Environment: local\nReason: Create a marker file\n$ touch made-by-codex.txt"
        );
        let keys: Vec<(&str, Option<&str>)> = (p.options.iter())
            .map(|o| (o.key.as_str(), o.press.as_deref()))
            .collect();
        assert_eq!(
            keys,
            [("1", Some("y")), ("2", Some("p")), ("3", Some("Escape"))]
        );
        // Claude Code's profile reads no keys of its own.
        let claude = state("claude", CODEX_APPROVAL);
        assert!(
            claude
                .prompt
                .is_none_or(|p| p.options.iter().all(|o| o.press.is_none()))
        );
    }

    #[test]
    fn codex_turn_end_reads_the_last_turn_only() {
        let done = "\
› make one
■ We’re currently experiencing high demand, which may cause temporary errors.
› make two
• Done two.
  Worked for 1s • 00:29
› Ask Codex to do anything
  GPT-6-Sol default fast · /tmp/ws/shop
";
        let s = state("codex", done);
        assert!(s.idle && s.prompt.is_none());
        let end = s.turn_end.expect("the turn's end");
        assert_eq!(
            end.error, None,
            "the earlier turn's error is not this one's"
        );
        let failed = done.replace(
            "• Done two.\n  Worked for 1s • 00:29",
            "■ exceeded retry limit",
        );
        let end = state("codex", &failed).turn_end.expect("the turn's end");
        assert_eq!(end.error.as_deref(), Some("■ exceeded retry limit"));
        let stopped = done.replace(
            "• Done two.",
            "■ Conversation interrupted - use /feedback if something went wrong",
        );
        let end = state("codex", &stopped).turn_end.expect("the turn's end");
        assert_eq!(end.error, None);
        assert!(end.interrupted.is_some());
    }

    /// Gemini CLI 0.61 screens (100 columns), as captured, rules shortened.
    fn gemini_box(input: &str) -> String {
        let (top, bottom) = ("▄".repeat(40), "▀".repeat(40));
        format!(
            "{:>60}\n{}\n Shift+Tab to accept edits\n{top}\n >   {input}\n{bottom}\n \
             workspace (/directory)    sandbox    /model\n /tmp/ws    no sandbox    Auto",
            "? for shortcuts",
            "─".repeat(40),
        )
    }

    fn gemini_echo(prompt: &str) -> String {
        format!("{}\n > {prompt}\n{}", "▄".repeat(40), "▀".repeat(40))
    }

    #[test]
    fn gemini_dialog_has_its_own_cursor_and_digits() {
        let rule = "─".repeat(38);
        let screen = format!(
            "{}\n╭{rule}╮\n│ ? Shell  touch g.txt{:18}│\n│ ╭{}╮ │\n│ │ touch g.txt{:24}│ │\n\
             │ ╰{}╯ │\n│ Allow execution of [Shell]?{:10}│\n│{:38}│\n\
             │ ● 1. Allow once{:22}│\n│   2. Allow for this session{:10}│\n\
             │   3. No, suggest changes (esc){:7}│\n╰{rule}╯",
            gemini_echo("make a file"),
            "",
            "─".repeat(34),
            "",
            "─".repeat(34),
            "",
            "",
            "",
            "",
            ""
        );
        let s = state("gemini", &screen);
        let p = s.prompt.expect("the approval");
        assert_eq!(p.kind, ApprovalKind::Permission);
        assert_eq!(p.question, "Allow execution of [Shell]?");
        assert!(p.body.contains("touch g.txt"), "{}", p.body);
        assert_eq!(
            options(&p),
            [
                ("1", "Allow once", None),
                ("2", "Allow for this session", None),
                ("3", "No, suggest changes (esc)", None)
            ]
        );
        assert!(p.options.iter().all(|o| o.press.is_none()));
        assert!(!s.idle);
        // Claude Code's `●` answers are not menus to its profile.
        assert!(state("claude", &screen).prompt.is_none());
    }

    /// Claude Code 2.1.332's review of a question with three tabs, as
    /// recorded (`multi_tab_question.rec`), with a hint of its own over
    /// it: it asks `Review your answers`, not `→ Fly`, the last answer it
    /// lists, nor its hint. Its profile's marks say so: a profile without
    /// them reads the same screen otherwise.
    #[test]
    fn the_review_of_a_multi_tab_question_asks_its_heading() {
        let screen = format!(
            "❯ set up the shop\n{}\n←  ☒ Database  ☒ Payments  ☒ Hosting  ✔ Submit  →\n\n\
             Tip: answers can be changed before they are sent\n\n\
             Review your answers\n\n ● Which database should the shop use?\n   → Postgres\n \
             ● Where should the shop be hosted?\n   → Fly\n\n❯ 1. Submit answers\n  2. Cancel\n",
            "─".repeat(100)
        );
        let p = prompt(&screen);
        assert_eq!(p.question, "Review your answers");
        assert!(p.body.contains("→ Postgres"), "{}", p.body);
        assert!(!p.body.contains("Tip:"), "{}", p.body);
        assert_eq!(
            options(&p),
            [("1", "Submit answers", None), ("2", "Cancel", None)]
        );
        let with = |marks: &str| {
            let layer = format!(
                "[profiles.mine]\nextends = 'claude'\n[profiles.mine.marks]\n\
                 blocks = ['●']\ninput = ['❯']\nmenu_cursors = ['❯']\n{marks}"
            );
            let profiles = Profiles::from_toml_layers(Some(("test", &layer))).unwrap();
            let mine = profiles.get("mine").unwrap();
            let p = analyse(&mine, &self::screen(&screen), |_| true).prompt;
            p.expect("a dialog").question
        };
        assert_eq!(with(""), "→ Fly");
        assert_eq!(
            with("review_answer = ['→']\ntab_bar = ['←']\n"),
            "Tip: answers can be changed before they are sent"
        );
        let all = "review_answer = ['→']\ntab_bar = ['←']\ndialog_hints = ['Tip: ']\n";
        assert_eq!(with(all), "Review your answers");
    }

    /// Gemini CLI 0.61.0's question box in a 13-row pane, as captured:
    /// one option at a time between its scroll marks.
    #[test]
    fn gemini_question_scrolled_to_one_option_is_carded_with_its_text() {
        let row = |text: &str| format!("│ {text:<96} │");
        let screen = [
            format!("╭{}╮", "─".repeat(98)),
            row("Answer Questions"),
            row(""),
            row("Which database should the shop use?"),
            row(""),
            row("▲"),
            row("● 1.  SQLite"),
            row("      One file"),
            row("▼"),
            row(""),
            row("Enter to select · ↑/↓ to navigate · Esc to cancel"),
            format!("╰{}╯", "─".repeat(98)),
            String::new(),
        ]
        .join("\n");
        let p = state("gemini", &screen).prompt.expect("the question");
        assert_eq!(p.kind, ApprovalKind::Question);
        assert_eq!(p.question, "Which database should the shop use?");
        assert_eq!(options(&p), [("1", "SQLite", Some("One file"))]);
        assert!(p.body.ends_with(dialog::SCROLLED_NOTE), "{}", p.body);
        // Without a scroll mark one numbered row is a list, not a menu.
        let unscrolled = screen.replace(['▲', '▼'], " ");
        assert!(state("gemini", &unscrolled).prompt.is_none());
    }

    /// Gemini CLI 0.61.0 retrying a 500 for over a minute (a real screen):
    /// its timer reads `1m 1s` (and `1m` on the minute), and it still works.
    #[test]
    fn gemini_timer_past_a_minute_is_still_busy() {
        let screen = real!("gemini-retry-1m");
        let s = state("gemini", screen);
        let row = "⠏ Thinking... (esc to cancel, 1m 1s)";
        assert!(
            s.busy.as_deref().is_some_and(|b| b.starts_with(row)),
            "{:?}",
            s.busy
        );
        assert!(!s.idle);
        let on_the_minute = screen.replace("1m 1s)  ", "1m)");
        assert!(state("gemini", &on_the_minute).busy.is_some());
    }

    #[test]
    fn gemini_busy_idle_and_turn_end() {
        let busy = format!(
            "{}\n ⠹ Thinking... (esc to cancel, 3s)   ? for shortcuts\n{}\n Shift+Tab to accept edits\n{}\n >   Type your message or @path/to/file\n{}\n workspace\n /tmp/ws",
            gemini_echo("hello"),
            "─".repeat(40),
            "▄".repeat(40),
            "▀".repeat(40)
        );
        let s = state("gemini", &busy);
        assert_eq!(
            s.busy.as_deref(),
            Some("⠹ Thinking... (esc to cancel, 3s)   ? for shortcuts")
        );
        assert!(!s.idle);
        assert_eq!(s.retry, None);
        let stuck = busy.replace("3s)", "31s)");
        assert_eq!(
            state("gemini", &stuck).retry.as_deref(),
            Some("stuck: no answer for 30s or more (retrying?)")
        );
        let done = format!(
            "{}\n✦ The shop sells pears.\n{}",
            gemini_echo("hello"),
            gemini_box("Type your message or @path/to/file")
        );
        let s = state("gemini", &done);
        assert!(s.idle && s.busy.is_none());
        assert_eq!(
            s.input.as_deref(),
            Some("Type your message or @path/to/file")
        );
        let end = s.turn_end.expect("the turn's end");
        assert_eq!((end.error, end.interrupted), (None, None));
        let failed = done.replace(
            "✦ The shop sells pears.",
            "✕ [API Error: {\"error\":{\"code\":400}}]",
        );
        let end = state("gemini", &failed).turn_end.expect("the turn's end");
        assert_eq!(
            end.error.as_deref(),
            Some("✕ [API Error: {\"error\":{\"code\":400}}]")
        );
        let cancelled = done.replace("✦ The shop sells pears.", "ℹ Request cancelled.");
        let end = state("gemini", &cancelled)
            .turn_end
            .expect("the turn's end");
        assert_eq!(end.interrupted.as_deref(), Some("ℹ Request cancelled."));
    }

    /// Aider 0.86 screens (line mode), as captured.
    const AIDER_TOP: &str = "Aider v0.86.2\nModel: openai/fake-model with diff edit format\n\
        ────────────────────────────────────────";

    #[test]
    fn aider_questions_wait_on_the_cursor_row() {
        let asking = format!(
            "{AIDER_TOP}\ndiff> make a marker\nRun this:\ntouch m.txt\n\
             Tokens: 2.5k sent, 15 received.\ntouch m.txt\n\
             Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]:"
        );
        let s = state("aider", &asking);
        let p = s.prompt.expect("the question");
        assert_eq!(p.kind, ApprovalKind::Permission);
        let keys: Vec<&str> = p.options.iter().map(|o| o.key.as_str()).collect();
        assert_eq!(keys, ["yes", "no", "don't"]);
        assert!(!s.idle);
        // Answered, it is output, not a question.
        let answered = format!("{asking} y\nRunning touch m.txt");
        assert!(state("aider", &answered).prompt.is_none());
        // The card names the command: the row above the question.
        assert_eq!(p.body, "touch m.txt");
        // Every option the question names, answered by its first word.
        let add = format!(
            "{AIDER_TOP}\ndiff> look at it\nTokens: 2.5k sent, 15 received.\nsrc/app.py\n\
             Add file to the chat? (Y)es/(N)o/(A)ll/(S)kip all/(D)on't ask again [Yes]:"
        );
        let p = state("aider", &add).prompt.expect("the question");
        assert_eq!(p.body, "src/app.py");
        let options: Vec<(&str, &str)> = (p.options.iter())
            .map(|o| (o.key.as_str(), o.label.as_str()))
            .collect();
        assert_eq!(
            options,
            [
                ("yes", "Yes"),
                ("no", "No"),
                ("all", "All"),
                ("skip", "Skip all"),
                ("don't", "Don't ask again")
            ]
        );
        let create =
            format!("{AIDER_TOP}\ndiff> notes\nnotes.txt\nCreate new file? (Y)es/(N)o [Yes]:");
        assert_eq!(
            state("aider", &create).prompt.map(|p| p.kind),
            Some(ApprovalKind::Create)
        );
    }

    #[test]
    fn aider_question_quoted_in_an_answer_is_not_asked() {
        let aider = Profiles::defaults().unwrap().get("aider").unwrap();
        let quoted = "Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]:";
        // Its answer streams a line quoting the question: a finished line,
        // the cursor (rows go down to it) on the row below.
        let mut rows = screen(&format!(
            "{AIDER_TOP}\ndiff> what does aider ask?\nIt asks:\n{quoted}"
        ));
        rows.push(String::new());
        assert!(analyse(&aider, &rows, |_| true).prompt.is_none());
        // Above the cursor row, followed by more of the answer.
        let rows = screen(&format!("{AIDER_TOP}\ndiff> what?\n{quoted}\nand then"));
        assert!(analyse(&aider, &rows, |_| true).prompt.is_none());
    }

    #[test]
    fn aider_turn_ends_at_its_bare_prompt() {
        let rule = "────────────────────────────────────────";
        let busy = format!("{AIDER_TOP}\ndiff> hello\n ░█        Waiting for openai/fake-model");
        let s = state("aider", &busy);
        assert!(s.busy.is_some() && !s.idle);
        let typed = format!("{AIDER_TOP}\ndiff> hello");
        let s = state("aider", &typed);
        assert!(!s.idle);
        assert_eq!(s.input.as_deref(), Some("hello"));
        // Taken: the cursor moved to the row below (the rows go down to
        // it), before anything else was drawn. No input waits there.
        let aider = Profiles::defaults().unwrap().get("aider").unwrap();
        let mut taken = screen(&typed);
        taken.push(String::new());
        let s = analyse(&aider, &taken, |_| true);
        assert!(!s.idle && s.busy.is_none());
        assert_eq!(s.input, None);
        let done = format!(
            "{AIDER_TOP}\ndiff> hello\nHi there.\nTokens: 2.3k sent, 4 received.\n{rule}\ndiff>"
        );
        let s = state("aider", &done);
        assert!(s.idle);
        let end = s.turn_end.expect("the turn's end");
        assert_eq!((end.error, end.interrupted), (None, None));
        // Ctrl-C: no token count.
        let cut = format!("{AIDER_TOP}\ndiff> hello\nfact 1 fact 2 fa\n{rule}\ndiff>");
        let end = state("aider", &cut).turn_end.expect("the turn's end");
        assert_eq!(end.interrupted.as_deref(), Some("fact 1 fact 2 fa"));
        let failed = format!(
            "{AIDER_TOP}\ndiff> hello\n ░litellm.BadRequestError: OpenAIException - bad\n{rule}\ndiff>"
        );
        let end = state("aider", &failed).turn_end.expect("the turn's end");
        assert_eq!(
            end.error.as_deref(),
            Some("░litellm.BadRequestError: OpenAIException - bad")
        );
        assert_eq!(end.interrupted, None);
    }

    /// A 429 Aider retries (`Retrying in … seconds...` after it) is its
    /// status while it works, and no error of a turn that then answers;
    /// the error it gives up on (no retry row after it) is the turn's.
    #[test]
    fn aider_retried_error_is_retrying_not_the_turn_error() {
        let rule = "────────────────────────────────────────";
        let error = "litellm.RateLimitError: RateLimitError: OpenAIException - slow";
        let why = "The API provider has rate limited you. Try again later.";
        let retrying = format!(
            "{AIDER_TOP}\ndiff> hello\n{error}\n{why}\nRetrying in 0.2 seconds...\n              ░█        Waiting for openai/fake-model"
        );
        let s = state("aider", &retrying);
        assert!(s.busy.is_some() && !s.idle);
        assert_eq!(s.retry.as_deref(), Some("Retrying in 0.2 seconds..."));
        let answered = format!(
            "{AIDER_TOP}\ndiff> hello\n{error}\n{why}\nRetrying in 0.2 seconds...\n\
             Hello after the wait.\nTokens: 2.7k sent, 5 received.\n{rule}\ndiff>"
        );
        let end = state("aider", &answered).turn_end.expect("the turn's end");
        assert_eq!((end.error, end.interrupted), (None, None));
        let gave_up = format!(
            "{AIDER_TOP}\ndiff> hello\n{error}\n{why}\nRetrying in 32.0 seconds...\n\
             ░{error}\n{why}\n{rule}\ndiff>"
        );
        let end = state("aider", &gave_up).turn_end.expect("the turn's end");
        assert_eq!(end.error, Some(format!("░{error}")));
    }
}
