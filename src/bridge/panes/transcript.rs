//! What a command printed: the pane's finished lines since it was typed,
//! without the agent's screen furniture (input box, rules, spinner frames,
//! shortcut hints). TUIs redraw above the cursor, so this is built from the
//! stream of finished lines rather than from a position in the scrollback.
//! Lines the pane showed before the command are redraws, not output, up to
//! the command's echo (`❯ text`); after it, such a line is output unless a
//! redraw passes the echo again.
//!
//! For an agent the result is its answer: the turn's `●` blocks (answers,
//! tool calls and their `⎿` summaries), without the echoed prompt, spinner
//! rows, tips, the `✻ Worked for 1s` row, the footer or copies of answered
//! dialogs ([`Transcript::text`]); everything else stays available
//! ([`Transcript::raw`]). A command the agent refused (`Unknown command:
//! /gsd:new-project`) is told apart ([`Transcript::rejected`]).

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

use crate::detect::{AnswerRows, Profile};

/// Output kept per command: the result card shows the end of a long run.
pub const MAX_TRANSCRIPT_BYTES: usize = 1024 * 1024;
/// Stands for lines that went by unseen (see [`Transcript::gap`]).
pub const GAP_LINE: &str = "[… output too fast to follow: lines skipped, the screen was watched]";

#[derive(Debug, Default, Clone)]
pub struct Transcript {
    /// Every line kept, furniture aside.
    lines: Bounded,
    /// The agent's answer: its `●` blocks, bounded like `lines`.
    answer: Bounded,
    /// The last line read is inside a `●` block.
    in_block: bool,
    /// The last line read is a tip (its wrapped rows follow, indented).
    in_tip: bool,
    /// A blank row inside a block: a paragraph break, kept if the block's
    /// text goes on after it.
    blank: bool,
    /// The last block's header is a tool still at work (`● Reading 1
    /// file… (ctrl+o to expand)`), which the agent redraws in place as its
    /// summary (`  Read 1 file (ctrl+o to expand)`, the bullet blinking off).
    at_work: Option<String>,
    /// The agent's refusal of the command, if it refused.
    rejected: Option<String>,
    /// Lines the pane showed before the command: a TUI redrawing its
    /// screen finishes them again, but they are not this command's output.
    earlier: HashSet<String>,
    /// The command as typed, in each spelling the agent may echo it in
    /// ([`echo_forms`]): its echo (`❯ text`) in the transcript is where the
    /// earlier lines end (see [`Transcript::typed`]). Empty: none typed.
    typed: Vec<String>,
    /// The agent's profile, which says how it echoes a command.
    profile: Option<Arc<Profile>>,
    /// The command's echo went by: an earlier line seen since is either
    /// a redraw (the echo follows it again) or the agent printing the same
    /// line anew (nothing redrawn after it).
    past_echo: bool,
    /// Earlier lines seen after the echo, until it is known which.
    held: Vec<String>,
    /// Rows seen under the input box during the command (a statusline
    /// such as GSD's `Opus │ shop ░░░ 0%`, whatever it says): a redraw
    /// can leave them among finished lines, but they are furniture.
    footer: HashSet<String>,
}

/// Earlier lines held after the command's echo (see `held`): past this,
/// the oldest are taken for a redraw and dropped.
pub const MAX_HELD_LINES: usize = 256;

/// Footer rows remembered per command (a statusline redraws a few
/// variants: a percentage, a phase).
pub const MAX_FOOTER_ROWS: usize = 256;

impl Transcript {
    /// A transcript that ignores the lines the pane finished just before.
    pub fn after<'a>(earlier: impl IntoIterator<Item = &'a String>) -> Transcript {
        Transcript {
            earlier: earlier.into_iter().cloned().collect(),
            ..Transcript::default()
        }
    }

    /// The command typed, whose echo (`❯ text`) ends the earlier lines: a
    /// line the pane showed before, printed again after the echo and not
    /// redrawn with it, is output after all (an agent may say the same
    /// thing twice in two turns).
    pub fn typed(mut self, text: &str) -> Transcript {
        self.typed = echo_forms(text);
        self
    }

    /// Echoes are read as the agent `profile` draws them (see
    /// [`Profile::is_echo`]); without one no echo is known.
    pub fn echoes_as(mut self, profile: &Arc<Profile>) -> Transcript {
        self.profile = Some(profile.clone());
        self
    }

    /// Whether the pane showed `line` before the command: redrawn, it is
    /// not the command's output.
    pub fn is_earlier(&self, line: &str) -> bool {
        self.earlier.contains(line)
    }

    /// Appends finished lines, skipping furniture; drops the oldest past the bound.
    pub fn push(&mut self, lines: &[String]) {
        for line in lines {
            let echo = self.is_echo_of(line, &self.typed);
            if echo {
                // A redraw passed the echo again: what was held above it
                // was the screen redrawn, not output.
                if self.past_echo {
                    self.held.clear();
                }
                self.past_echo = true;
            } else if self.earlier.contains(line) {
                if self.past_echo && !self.is_furniture(line) {
                    if self.held.len() == MAX_HELD_LINES {
                        self.held.remove(0);
                    }
                    self.held.push(line.clone());
                }
                continue;
            }
            self.release_held();
            self.take(line);
        }
    }

    /// Earlier lines held after the echo, followed by new output: the
    /// agent's own, in their place.
    fn release_held(&mut self) {
        for line in std::mem::take(&mut self.held) {
            self.take(&line);
        }
    }

    fn take(&mut self, line: &str) {
        self.read_answer(line);
        if !self.is_furniture(line) {
            self.lines.push_frame(line.to_owned());
        }
    }

    fn is_furniture(&self, line: &str) -> bool {
        is_furniture(self.profile.as_deref(), line)
    }

    /// How the agent draws its answer's blocks.
    fn rows(&self) -> &AnswerRows {
        rows_of(self.profile.as_deref())
    }

    /// The turn is over: earlier lines still held after the echo were
    /// printed anew (no redraw came to pass the echo again).
    pub fn end(&mut self) {
        self.release_held();
    }

    /// Follows the agent's blocks: a `●` row opens one, rows indented by
    /// two or more continue it, and any other row that is not furniture
    /// (the prompt echo, a dialog's rows) closes it. Furniture (the spinner
    /// and input box, redrawn under the growing output) changes nothing. A
    /// tool's `⎿` result row belongs to the last block even after a dialog.
    fn read_answer(&mut self, line: &str) {
        let line = line.replace('\u{a0}', " ");
        let t = line.trim_start();
        if t.is_empty() {
            self.blank |= self.in_block;
            return;
        }
        if self.is_furniture(&line) {
            return;
        }
        // The profile field alone is borrowed: the others change below.
        let rows = rows_of(self.profile.as_deref());
        if rows.opens_block(&line) {
            self.in_block = true;
            self.in_tip = false;
            self.blank = false;
            let header = line.trim_end().to_owned();
            // The tool's summary drawn with its bullet on: it replaces the
            // work row too.
            if let Some(at_work) = self.at_work.take()
                && rows.folded(&header)
            {
                self.answer.truncate_from_last(rows, &at_work);
            }
            self.at_work =
                (rows.is_at_work(&header) || rows.is_working(&header)).then(|| header.clone());
            if self.rejected.is_none() && rows.is_refusal(&header) {
                self.rejected = Some(header.clone());
            }
            // The block drawn again (the agent redrew it with its result):
            // the new copy replaces the old.
            self.answer.truncate_from_last(rows, &header);
            self.answer.push_frame(header);
            return;
        }
        let result = t.starts_with('⎿');
        if !result
            && line.starts_with("  ")
            && (rows.folded(t) || rows.is_tool_summary(t))
            && let Some(at_work) = self.at_work.take()
        {
            // The tool finished: its summary replaces its work row.
            self.answer.truncate_from_last(rows, &at_work);
            self.answer.push(rows.as_block(t.trim_end()));
            self.in_block = true;
            return;
        }
        let continues = self.in_block || (result && self.answer.has_block(rows));
        if !line.starts_with("  ") || !continues {
            self.in_block = false;
            self.in_tip = false;
            self.blank = false;
            return;
        }
        let after = t.trim_start_matches('⎿').trim_start();
        if result && after.starts_with("Tip:") {
            self.in_tip = true;
            return;
        }
        if self.in_tip && !result {
            return; // a tip's wrapped rows
        }
        self.in_tip = false;
        // A tool's transient status, replaced by its result (2.1.332 draws
        // `Waiting for permission…` under the tool, without `⎿`).
        if matches!(
            after.trim_end(),
            "Waiting…" | "Running…" | "Waiting for permission…"
        ) {
            return;
        }
        self.in_block = true;
        // A tool's result row after a blank is still that tool's.
        if std::mem::take(&mut self.blank) && !result {
            self.answer.push(String::new());
        }
        self.answer.push_frame(line.trim_end().to_owned());
    }

    /// Marks where lines went by unseen: the pane flooded (only its
    /// screen was watched) or output was lost and resynchronised.
    pub fn gap(&mut self) {
        if self.lines.lines.back().map(String::as_str) != Some(GAP_LINE) {
            self.lines.push(GAP_LINE.to_string());
        }
        if self.answer.lines.back().map(String::as_str) != Some(GAP_LINE) {
            self.answer.push(GAP_LINE.to_string());
        }
        self.in_block = false;
    }

    /// When nothing was streamed since the last gap: the screen's rows as
    /// the output that went by (the end of a flood is on its screen).
    pub fn fill_gap(&mut self, rows: &[String]) {
        if self.lines.lines.back().map(String::as_str) == Some(GAP_LINE) {
            self.push(rows);
        }
    }

    /// For a command followed after a restart, whose output went by while
    /// clawmux was down: when nothing of an answer was read since, the
    /// screen's rows below the command's echo (`❯ text`) are its output.
    /// The rows before were seen at attach as earlier lines, so they are
    /// taken here regardless. False when the screen shows no echo.
    pub fn fill_from_echo(&mut self, rows: &[String], typed: &str) -> bool {
        if self.has_answer() {
            return false;
        }
        let forms = echo_forms(typed);
        let echo = rows.iter().rposition(|row| self.is_echo_of(row, &forms));
        let Some(echo) = echo else { return false };
        self.earlier.clear();
        self.push(&rows[echo + 1..]);
        true
    }

    /// The answer as the settled screen shows it at the turn's end: the
    /// rows under the command's last echo (`› text`, `❯ text`, `> text`),
    /// read as a transcript of their own, furniture, the footer rows seen
    /// during the command and a box still being drawn left out (read while
    /// the answer streams, too). This is what the terminal finally
    /// shows, not the log of frames drawn on the way (a streamed row
    /// redrawn, a cell re-inserted whole once the stream ended). None when
    /// the echo is off the screen (a long answer scrolled it away: the
    /// line log is then all there is) or nothing is under it.
    pub fn settled_text(&self, rows: &[String]) -> Option<String> {
        let forms = if self.typed.is_empty() {
            return None;
        } else {
            &self.typed
        };
        let echo = rows.iter().rposition(|row| is_prompt_echo(row, forms))?;
        let below = &rows[echo + 1..];
        // The input box and what is under it (footer, statusline) end the
        // answer: its top edge is the last row drawn only of `▄`, `─`, `━`.
        let top = below.iter().rposition(|row| {
            let t = row.trim();
            !t.is_empty() && t.chars().all(|c| matches!(c, '▄' | '─' | '━'))
        });
        // Gemini CLI, before its answer's first row, can draw its footer
        // (`workspace (/directory)  sandbox  /model`, values under it)
        // with no box edge above: the footer's heading ends it then.
        let top = top.or_else(|| {
            below.iter().position(|row| {
                let t = row.trim();
                t.starts_with("workspace (") && t.ends_with("/model")
            })
        });
        let mut settled = Transcript {
            footer: self.footer.clone(),
            profile: self.profile.clone(),
            ..Transcript::default()
        };
        settled.push(until_open_box(&below[..top.unwrap_or(below.len())]));
        settled.end();
        let text = settled.text();
        (!text.trim().is_empty()).then_some(text)
    }

    /// Whether `row` is the agent's echo of one of `forms` (see
    /// [`Profile::is_echo`]).
    fn is_echo_of(&self, row: &str, forms: &[String]) -> bool {
        (self.profile.as_ref()).is_some_and(|p| forms.iter().any(|typed| p.is_echo(row, typed)))
    }

    /// The rows the screen shows under the input box now (see `footer`).
    pub fn footer(&mut self, rows: &[String]) {
        for row in rows {
            if self.footer.len() >= MAX_FOOTER_ROWS {
                return;
            }
            if !self.footer.contains(row.trim()) {
                self.footer.insert(row.trim().to_owned());
            }
        }
    }

    /// Whether the agent's answer began (a `●` block): before it, the
    /// text is the screen's (the echoed command), not an answer to stream.
    pub fn has_answer(&self) -> bool {
        self.answer.lines.iter().any(|l| l != GAP_LINE)
    }

    /// The result: the agent's answer when it gave one (its `●` blocks),
    /// otherwise every line kept (a shell's output).
    pub fn text(&self) -> String {
        if self.answer.lines.iter().any(|l| l != GAP_LINE) {
            // Read when the turn is over: a tool row still "at work" is one
            // whose redraw as a summary never came through as a finished
            // line. It is not what the agent shows now: left out.
            // 2.1.332's working row (`● Reading notes.txt`) is stale too
            // when a tool result (`⎿`) sits under it: a tool, not words.
            let lines = &self.answer.lines;
            let rows = self.rows();
            // Or when its own row, the bullet blinked off, is under it.
            // Or when the next tool's row (`● Update(notes.txt)`) follows
            // it at once: nothing of its own was said under it.
            let tool_under = |i: usize| {
                (lines.get(i + 1)).is_some_and(|n| {
                    n.trim_start().starts_with('⎿')
                        || lines.get(i).is_some_and(|h| rows.words(n) == rows.words(h))
                        || (rows.opens_block(n) && (rows.is_tool_call(n) || rows.is_working(n)))
                })
            };
            let mut in_stale = false;
            let mut at = 0;
            return self.answer.text_where(|l| {
                if self.footer.contains(l.trim()) {
                    at += 1;
                    return false;
                }
                if rows.opens_block(l) {
                    in_stale = rows.is_at_work(l) || (rows.is_working(l) && tool_under(at));
                } else if !l.starts_with("  ") {
                    in_stale = false;
                }
                at += 1;
                !in_stale
            });
        }
        self.raw()
    }

    /// The agent refused the command itself (`● Unknown command: …`): the
    /// row saying so.
    pub fn rejected(&self) -> Option<&str> {
        self.rejected.as_deref()
    }

    /// Every line kept, furniture aside (the screen's text, for a collapsed
    /// panel or a shell).
    pub fn raw(&self) -> String {
        self.lines.text_where(|l| !self.footer.contains(l.trim()))
    }

    /// The last `n` lines of what the agent said: its answer once it
    /// began one (so not the tips and statusline rows a redraw leaves
    /// among the finished lines), else every line kept; rows seen under
    /// the input box left out either way.
    pub fn tail(&self, n: usize) -> String {
        let said = if self.has_answer() {
            &self.answer
        } else {
            &self.lines
        };
        let kept: Vec<&str> = (said.lines.iter())
            .map(String::as_str)
            .filter(|l| !self.footer.contains(l.trim()))
            .collect();
        kept[kept.len().saturating_sub(n)..].join("\n")
    }
}

/// Lines kept, oldest dropped first past [`MAX_TRANSCRIPT_BYTES`] (the
/// transcript's lines, and the answer's).
#[derive(Debug, Default, Clone)]
struct Bounded {
    lines: VecDeque<String>,
    bytes: usize,
    dropped: usize,
}

impl Bounded {
    fn push(&mut self, line: String) {
        self.bytes += line.len() + 1;
        self.lines.push_back(line);
        while self.bytes > MAX_TRANSCRIPT_BYTES {
            let Some(old) = self.lines.pop_front() else {
                break;
            };
            self.bytes -= old.len() + 1;
            self.dropped += 1;
        }
    }

    /// Pushes `line`, replacing the last line when `line` extends it: the
    /// agent redrew the row it streams its answer into, a few characters
    /// longer (a model streams in pieces; each frame finishes the row
    /// again), so the shorter copy was a frame, not a line of output.
    fn push_frame(&mut self, line: String) {
        if let Some(last) = self.lines.back()
            && is_frame_of(last, &line)
            && let Some(old) = self.lines.pop_back()
        {
            self.bytes -= old.len() + 1;
        }
        self.push(line);
    }

    /// Some block (drawn as `rows` says) was kept.
    fn has_block(&self, rows: &AnswerRows) -> bool {
        self.lines.iter().any(|l| rows.opens_block(l))
    }

    /// Drops the last block if it starts with `header`.
    fn truncate_from_last(&mut self, rows: &AnswerRows, header: &str) {
        let Some(at) = self.lines.iter().rposition(|l| rows.opens_block(l)) else {
            return;
        };
        if self.lines[at] == header {
            for old in self.lines.drain(at..) {
                self.bytes -= old.len() + 1;
            }
        }
    }

    /// The lines `keep` keeps, one a line.
    fn text_where(&self, mut keep: impl FnMut(&str) -> bool) -> String {
        let mut out = String::with_capacity(self.bytes + 64);
        if self.dropped > 0 {
            out.push_str(&format!("[… {} earlier lines not kept]\n", self.dropped));
        }
        for line in self.lines.iter().filter(|l| keep(l)) {
            out.push_str(line);
            out.push('\n');
        }
        out
    }
}

/// Whether `earlier` is a passing frame of the row `line`: a non-empty row
/// that `line` goes on from (the same row redrawn longer as the answer
/// streamed in), or that `line` cuts back at a word (the row drawn to the
/// pane's edge mid-word, then wrapped at a space once the word was whole:
/// `… while unt` then `… while` and `  until.` below). A blank row or a
/// gap mark is never a frame.
fn is_frame_of(earlier: &str, line: &str) -> bool {
    let (earlier, line) = (earlier.trim_end(), line.trim_end());
    let longer = line.len() > earlier.len() && line.starts_with(earlier);
    // A bare bullet (`●`, the first frame of the next block), or any row
    // without a letter or digit, holds no word to cut back to: it rewraps
    // nothing.
    let words = line.chars().any(char::is_alphanumeric);
    let rewrapped = words
        && earlier.len() > line.len()
        && earlier.starts_with(line)
        && earlier[line.len()..].starts_with(' ');
    !earlier.trim().is_empty() && earlier != GAP_LINE && (longer || rewrapped)
}

/// How `profile`'s agent draws its answer's blocks (none without one).
fn rows_of(profile: Option<&Profile>) -> &AnswerRows {
    profile.map_or(AnswerRows::none(), Profile::answer_rows)
}

/// Redrawn chrome: the agent's own (its profile's `chrome`: hints and
/// mode lines, spinner frames, the empty input row), and any agent's
/// rules and box edges.
fn is_furniture(profile: Option<&Profile>, line: &str) -> bool {
    let t = line.trim();
    profile.is_some_and(|p| p.is_chrome(t))
        || t.is_empty()
        || t.chars().all(|c| {
            matches!(
                c,
                '─' | '━' | '│' | '╭' | '╮' | '╰' | '╯' | '▀' | '▄' | ' ' | '\u{a0}'
            )
        })
}

/// `typed` as the agent may echo it: a GSD command in each of its
/// spellings, since it went to the agent in the one its install takes
/// (`/gsd-x` for the chat's `/gsd:x`); other text as it is.
fn echo_forms(typed: &str) -> Vec<String> {
    use crate::gsd::spelling::{Spelling, split_command};
    match split_command(typed) {
        Some((name, args)) => [Spelling::Colon, Spelling::Dash, Spelling::Dollar]
            .iter()
            .map(|s| format!("{}{name}{args}", s.prefix()))
            .collect(),
        None => vec![typed.to_owned()],
    }
}

/// Whether `row` is an agent's echo of one of `forms` behind its prompt
/// glyph: Claude Code's `❯`, Codex's `›`, a line-mode `>` (Aider's
/// `diff> `, `ask> `: a mode word before it).
fn is_prompt_echo(row: &str, forms: &[String]) -> bool {
    let row = row.trim_start();
    let mode = row
        .split_once("> ")
        .filter(|(word, _)| !word.is_empty() && word.chars().all(|c| c.is_ascii_lowercase()))
        .map(|(_, rest)| rest);
    let Some(shown) = mode.or_else(|| row.strip_prefix(['❯', '›', '>'])) else {
        return false;
    };
    let shown = shown.trim();
    !shown.is_empty()
        && forms.iter().any(|typed| {
            let first = typed.trim().lines().next().unwrap_or_default();
            first.starts_with(shown) || shown.starts_with(first)
        })
}

/// `rows` up to a box still being drawn: its top edge (`╭`) with no
/// bottom edge (`╰`) under it yet. Gemini CLI draws a dialog's box row by
/// row, its options last: until they are drawn no dialog is recognised,
/// and its first rows are no answer.
fn until_open_box(rows: &[String]) -> &[String] {
    let edge = |r: &String, c: char| r.trim_start().starts_with(c);
    match rows.iter().rposition(|r| edge(r, '╭')) {
        Some(top) if !rows[top..].iter().any(|r| edge(r, '╰')) => &rows[..top],
        _ => rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(name: &str) -> Arc<Profile> {
        let profiles = crate::detect::Profiles::defaults().unwrap();
        profiles.get(name).unwrap()
    }

    fn claude() -> Arc<Profile> {
        profile("claude")
    }

    /// A tool's summary block, then the next block's first frame (a bare
    /// bullet) streamed longer: the summary stays, the bare bullet is a
    /// frame of the answer row (measured with Claude Code 2.1.332 against
    /// a streaming model: `● Ran 1 shell command` had been dropped).
    #[test]
    fn a_bare_bullet_is_no_rewrap_of_the_block_above() {
        assert!(!is_frame_of("● Ran 1 shell command", "●"));
        assert!(is_frame_of("●", "● Created the marker file."));
        assert!(is_frame_of(
            "● Created the mar",
            "● Created the marker file."
        ));
        assert!(is_frame_of("● it waits while unt", "● it waits while"));
    }

    fn lines(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_line_said_again_after_the_echo_is_output_and_a_redraw_is_not() {
        let before = lines(&["❯ run two commands", "● Both ran.", "", "────────", "❯ "]);
        let box_rows = lines(&["────────", "❯ ", "────────"]);
        // The agent says in this turn what it said in the last.
        let mut t = Transcript::after(&before)
            .typed("run two more")
            .echoes_as(&claude());
        t.push(&lines(&["❯ run two more", "● Checked.", "● Both ran."]));
        t.push(&box_rows);
        assert_eq!(t.text(), "● Checked.\n", "held until the turn is over");
        t.end();
        assert_eq!(t.text(), "● Checked.\n● Both ran.\n");

        // The screen redrawn after the echo (the earlier turn, the echo,
        // this turn): the earlier lines are not this command's.
        let mut t = Transcript::after(&before)
            .typed("run two more")
            .echoes_as(&claude());
        t.push(&lines(&["❯ run two more", "● Checked."]));
        t.push(&lines(&[
            "❯ run two commands",
            "● Both ran.",
            "",
            "❯ run two more",
        ]));
        t.push(&lines(&["● Checked.", "● Done."]));
        t.end();
        assert_eq!(t.text(), "● Checked.\n● Done.\n");

        // Without the command's echo, an earlier line is never output.
        let mut t = Transcript::after(&before)
            .typed("something else")
            .echoes_as(&claude());
        t.push(&lines(&["● Checked.", "● Both ran."]));
        t.end();
        assert_eq!(t.text(), "● Checked.\n");
    }

    #[test]
    fn a_gsd_command_typed_in_its_installs_spelling_is_echoed_all_the_same() {
        let before = lines(&["❯ /gsd-progress", "● Phase 1 of 2.", "", "❯ "]);
        let mut t = Transcript::after(&before)
            .typed("/gsd:progress")
            .echoes_as(&claude());
        t.push(&lines(&["❯ /gsd-progress", "● Phase 1 of 2."]));
        t.end();
        assert_eq!(t.text(), "● Phase 1 of 2.\n", "said again after the echo");
    }

    #[test]
    fn a_followed_command_takes_its_answer_from_under_its_echo() {
        let screen = lines(&[
            "❯ earlier question",
            "● An earlier answer.",
            "",
            "❯ survive a crash",
            "● Streaming answer, line one",
            "  The end of it",
            "",
            "────────",
            "❯ ",
            "────────",
            "  ? for shortcuts",
        ]);
        // Attached after the restart: every row was already seen.
        let mut t = Transcript::after(&screen).echoes_as(&claude());
        t.push(&screen);
        assert!(!t.has_answer());
        assert!(t.fill_from_echo(&screen, "survive a crash"));
        assert_eq!(t.text(), "● Streaming answer, line one\n  The end of it\n");
        // Without its echo on screen, nothing is made up.
        let mut t = Transcript::after(&screen).echoes_as(&claude());
        assert!(!t.fill_from_echo(&screen[4..], "survive a crash"));
        assert_eq!(t.text(), "");
    }

    #[test]
    fn keeps_output_drops_furniture() {
        // Claude Code's furniture (its chrome, and a rule).
        let mut t = Transcript::default().echoes_as(&claude());
        t.push(&lines(&[
            "> /gsd:progress",
            "✶ Working… (1s · esc to interrupt)",
            "⏺ Progress: ████░░ 60%",
            "────────────",
            "❯",
            "  ? for shortcuts",
            "⚠ 2 warnings · f2 to view",
            "",
            "❯ 1. Yes",
        ]));
        assert_eq!(
            t.raw(),
            "> /gsd:progress\n⏺ Progress: ████░░ 60%\n⚠ 2 warnings · f2 to view\n❯ 1. Yes\n"
        );
        assert_eq!(t.text(), "⏺ Progress: ████░░ 60%\n");
        // A progress card's tail is what the agent said, not the dialog.
        assert_eq!(t.tail(1), "⏺ Progress: ████░░ 60%");
        // Codex's warnings count is its chrome; Claude Code's spinner is
        // text to it, and `●` opens none of its blocks.
        let mut codex = Transcript::default().echoes_as(&profile("codex"));
        codex.push(&lines(&[
            "✶ Working… (1s · esc to interrupt)",
            "● not a block",
            "• Ran ls",
            "⚠ 2 warnings · f2 to view",
        ]));
        assert_eq!(
            codex.raw(),
            "✶ Working… (1s · esc to interrupt)\n● not a block\n• Ran ls\n"
        );
        assert_eq!(codex.text(), "• Ran ls\n");
    }

    /// Claude Code's tips and GSD's statusline rows, left among the
    /// finished lines by redraws, are not the agent's recent lines.
    #[test]
    fn the_tail_is_the_answer_not_the_tips_or_the_statusline() {
        let mut t = Transcript::default().echoes_as(&claude());
        t.footer(&lines(&["  Opus 4.8 │ shop ░░░░░░░░░░ 0%"]));
        t.push(&lines(&[
            "● Reading the roadmap",
            "  ⎿  Tip: Use /statusline to set up a custom status line",
            "● Writing 01-01-PLAN.md",
            "  Opus 4.8 │ shop ░░░░░░░░░░ 0%",
            "Tip: Run /install-github-app to tag @claude",
            "",
        ]));
        assert_eq!(t.tail(8), "● Reading the roadmap\n● Writing 01-01-PLAN.md");
    }

    /// The rows of a real Claude Code 2.1.197 screen from the echo of
    /// `prompt` on (the turn's lines, as the pane finishes them).
    fn turn(screen: &str, prompt: &str) -> Vec<String> {
        let rows: Vec<String> = screen.lines().map(str::to_owned).collect();
        let at = rows
            .iter()
            .rposition(|r| r == &format!("❯ {prompt}"))
            .unwrap();
        rows[at..].to_vec()
    }

    #[test]
    fn the_result_of_a_real_turn_is_its_answer() {
        let mut t = Transcript::default().echoes_as(&claude());
        let screen = include_str!("../../../tests/detect/screens/quote-idle.txt");
        t.push(&turn(screen, "quote some errors"));
        assert_eq!(
            t.text(),
            "● Here is what I found:\n\n  Error: cannot open file\n  API Error: 529 Overloaded\n\n  Fatal errors: none.\n\n  - fn map_error(e: Error)\n\n  The tool asks: Do you want to proceed?\n  1. Yes\n  2. No\n"
        );
        assert!(t.raw().contains("❯ quote some errors"), "{}", t.raw());
        assert_eq!(t.rejected(), None);
    }

    #[test]
    fn spinner_tips_and_dialog_copies_are_not_the_answer() {
        let mut t = Transcript::default().echoes_as(&claude());
        let busy = include_str!("../../../tests/detect/screens/busy-spinner.txt");
        let dialog = include_str!("../../../tests/detect/screens/permission-bash.txt");
        let after = include_str!("../../../tests/detect/screens/interrupted-after-no.txt");
        for screen in [busy, dialog, after] {
            t.push(&turn(screen, "clean the build"));
        }
        assert_eq!(
            t.text(),
            "● Bash(rm -rf build && touch done.txt)\n  ⎿  Interrupted · What should Claude do instead?\n"
        );
        let raw = t.raw();
        assert!(raw.contains("Do you want to proceed?"), "{raw}");
        assert!(!raw.contains("Crunching"), "{raw}");
        assert!(!raw.contains("esc to interrupt"), "{raw}");
    }

    #[test]
    fn a_command_the_agent_refused_is_told_apart() {
        let mut t = Transcript::default().echoes_as(&claude());
        let screen = include_str!("../../../tests/detect/screens/unknown-command.txt");
        let rows: Vec<String> = screen.lines().map(str::to_owned).collect();
        let at = rows
            .iter()
            .rposition(|r| r.starts_with("● Unknown"))
            .unwrap();
        t.push(&rows[at..]);
        assert_eq!(t.rejected(), Some("● Unknown command: /gsd:new-project"));
        assert_eq!(t.text(), "● Unknown command: /gsd:new-project\n");
    }

    #[test]
    fn lines_from_before_the_command_are_not_output() {
        let before = lines(&["⏺ Plans verified [3/3]", "  Created 2 plans"]);
        let mut t = Transcript::after(&before).echoes_as(&claude());
        t.push(&lines(&[
            "> say hi",
            "  Created 2 plans",
            "⏺ You said: say hi",
        ]));
        assert_eq!(t.raw(), "> say hi\n⏺ You said: say hi\n");
        assert_eq!(t.text(), "⏺ You said: say hi\n");
    }

    #[test]
    fn a_gap_is_marked_once_between_lines() {
        let mut t = Transcript::default().echoes_as(&claude());
        t.push(&lines(&["before"]));
        t.gap();
        t.gap();
        t.push(&lines(&["after"]));
        t.gap();
        assert_eq!(t.text(), format!("before\n{GAP_LINE}\nafter\n{GAP_LINE}\n"));
    }

    #[test]
    fn only_a_gap_at_the_end_is_filled_from_the_screen() {
        let mut t = Transcript::default().echoes_as(&claude());
        t.push(&lines(&["a"]));
        t.fill_gap(&lines(&["a", "b"]));
        assert_eq!(t.text(), "a\n", "no gap, nothing to fill");
        t.gap();
        t.fill_gap(&lines(&["y", "z"]));
        t.fill_gap(&lines(&["y", "z"]));
        assert_eq!(t.text(), format!("a\n{GAP_LINE}\ny\nz\n"));
    }

    #[test]
    fn a_working_row_right_over_the_next_tool_is_stale() {
        let mut t = Transcript::default().echoes_as(&claude());
        t.push(&lines(&[
            "● Reading notes.txt",
            "● Update(notes.txt)",
            "  ⎿  Added 1 line",
            "● Reading the notes, I changed one line.",
        ]));
        assert_eq!(
            t.text(),
            "● Update(notes.txt)\n  ⎿  Added 1 line\n● Reading the notes, I changed one line.\n"
        );
    }

    #[test]
    fn rows_seen_under_the_input_box_are_not_output() {
        let mut t = Transcript::default().echoes_as(&claude());
        t.footer(&lines(&[
            "Opus 5.5 │ shop",
            "Opus 5.5 │ shop ░░░░░░░░░░ 0%",
        ]));
        t.push(&lines(&[
            "● Ran 1 shell command",
            "  Opus 5.5 │ shop",
            "  Done.",
            "  Opus 5.5 │ shop ░░░░░░░░░░ 0%",
        ]));
        assert_eq!(t.text(), "● Ran 1 shell command\n  Done.\n");
        assert!(!t.raw().contains('│'), "{}", t.raw());
    }

    /// Codex streaming a one-line answer a few characters at a time: each
    /// frame finished the row again, longer; the answer is the last.
    #[test]
    fn a_row_redrawn_longer_as_the_answer_streams_is_one_line() {
        let mut t = Transcript::after(&[])
            .typed("what does the shop sell")
            .echoes_as(&profile("codex"));
        t.push(&lines(&[
            "› what does the shop sell",
            "• Working (0s • esc to interrupt)",
            "• The",
            "• The s",
            "• The shop sells ap",
            "• The shop sells apples.",
            "  They are",
            "  They are red.",
            "",
            "• Second point",
            "Worked for 1s",
        ]));
        t.end();
        assert_eq!(
            t.text(),
            "• The shop sells apples.\n  They are red.\n• Second point\n"
        );
        let mut aider = Transcript::after(&[])
            .typed("hi")
            .echoes_as(&profile("aider"));
        aider.push(&lines(&[
            "> hi",
            "Pla",
            "Plain ans",
            "Plain answer.",
            "Next.",
        ]));
        assert_eq!(aider.text(), "> hi\nPlain answer.\nNext.\n");
        // Drawn to the pane's edge mid-word, then wrapped at the space; a
        // tip under the answer is Codex's chrome.
        let mut t = Transcript::after(&[])
            .typed("q")
            .echoes_as(&profile("codex"));
        t.push(&lines(&[
            "• Door pears noon door every while unt",
            "• Door pears noon door every while",
            "  until. The end.",
            "  └ Tip: Use /keymap to configure keyboard shortcuts.",
        ]));
        assert_eq!(
            t.text(),
            "• Door pears noon door every while\n  until. The end.\n"
        );
    }

    /// Codex's settled screen at a turn's end: the answer once, under the
    /// echo, though the line log drew it as frames and then again whole.
    #[test]
    fn the_settled_screen_under_the_echo_is_the_answer() {
        let mut t = Transcript::after(&[])
            .typed("question 3")
            .echoes_as(&profile("codex"));
        t.push(&lines(&[
            "› question 3",
            "• Answer 1: Plum",
            "• Answer 3: Of of until three apples jars.",
            "• Answer 3: Of of until three apples jars.",
        ]));
        let rows = lines(&[
            "› question 2",
            "",
            "• Answer 2.",
            "",
            "› question 3",
            "",
            "• Answer 3: Of of until three",
            "  apples jars.",
            "",
            "─ Worked for 1s ────────────────",
            "",
            "› Find and fix a bug in @filename",
            "",
            "  GPT-6-Sol default fast · /ws/shop · Scripted session",
        ]);
        assert_eq!(
            t.settled_text(&rows).as_deref(),
            Some("• Answer 3: Of of until three\n  apples jars.\n")
        );
        assert_eq!(t.settled_text(&rows[5..]), None, "no echo on screen");
        // Gemini CLI: the echo's box edge, the answer, the mode hint, then
        // its input box and footer.
        let gemini = Transcript::after(&[])
            .typed("tell me what the shop sells")
            .echoes_as(&profile("gemini"));
        let rows = lines(&[
            " > tell me what the shop sells",
            "▀▀▀▀▀▀▀▀▀▀",
            "✦ The shop sells pears.",
            " Shift+Tab to accept edits",
            "▄▄▄▄▄▄▄▄▄▄",
            " >   Type your message or @path/to/file",
            "▀▀▀▀▀▀▀▀▀▀",
            " workspace (/directory)        sandbox       /model",
            " /tmp/ws/shop                  no sandbox      Auto",
        ]);
        assert_eq!(
            gemini.settled_text(&rows).as_deref(),
            Some("✦ The shop sells pears.\n")
        );
        // Before the answer, its footer drawn with no box edge above it.
        assert_eq!(
            gemini.settled_text(&[rows[0].clone(), rows[7].clone(), rows[8].clone()]),
            None
        );
        // With its hooks installed: the notice of a hook running is chrome.
        let mut hooked = rows.clone();
        hooked.insert(3, " ℹ Executing Hook: clawmux hook".into());
        // And its spinner while a hook runs, cut by the footer drawn over
        // it, its frame blank at times.
        hooked.insert(
            4,
            "⠹ Executing Hooks: clawmux hook, clawmux hook (esc to c? for shortcuts".into(),
        );
        hooked.insert(
            5,
            "Executing Hooks: clawmux hook, clawmux hook    ? for shortcuts".into(),
        );
        assert_eq!(
            gemini.settled_text(&hooked).as_deref(),
            Some("✦ The shop sells pears.\n")
        );
        // Aider, line mode: its echo behind the edit mode, spinner and
        // token count around the answer.
        let aider = Transcript::after(&[])
            .typed("tell me what the shop sells")
            .echoes_as(&profile("aider"));
        let rows = lines(&[
            "diff> tell me what the shop sells",
            "█░         Waiting for openai/fake-model",
            "The shop sells plums.",
            "Tokens: 2.3k sent, 6 received.",
            "─────────────",
            "diff>",
        ]);
        assert_eq!(
            aider.settled_text(&rows).as_deref(),
            Some("The shop sells plums.\n")
        );
        assert_eq!(Transcript::default().settled_text(&rows), None);
    }

    #[test]
    fn bounded() {
        let mut t = Transcript::default().echoes_as(&claude());
        let big = "x".repeat(1000);
        for _ in 0..2000 {
            t.push(std::slice::from_ref(&big));
        }
        assert!(t.lines.bytes <= MAX_TRANSCRIPT_BYTES);
        assert!(t.lines.dropped > 0);
        assert!(t.text().starts_with("[… "));
    }

    /// Claude Code 2.1.332 draws a tool at work as `● Creating a marker
    /// file` and redraws it in place as `  Ran 1 shell command`.
    #[test]
    fn a_working_row_gives_way_to_its_summary() {
        let mut t = Transcript::default().echoes_as(&claude());
        t.push(&lines(&[
            "● Creating a marker file",
            "  Ran 1 shell command",
            "● Created the marker file.",
        ]));
        assert_eq!(
            t.text(),
            "● Ran 1 shell command\n● Created the marker file.\n"
        );
        let mut t = Transcript::default().echoes_as(&claude());
        t.push(&lines(&[
            "● Reading notes.txt",
            "  ⎿  notes.txt",
            "● Changed it.",
        ]));
        assert_eq!(t.text(), "● Changed it.\n");
        let mut t = Transcript::default().echoes_as(&claude());
        t.push(&lines(&[
            "● Reading notes.txt",
            "  Reading notes.txt",
            "● Changed it.",
        ]));
        assert_eq!(t.text(), "● Changed it.\n");
        let mut t = Transcript::default().echoes_as(&claude());
        t.push(&lines(&["● Reading the docs helps.", "  It does."]));
        assert_eq!(t.text(), "● Reading the docs helps.\n  It does.\n");
    }

    /// Claude Code 2.1.197 draws a tool at work (`● Reading 1 file…`, with
    /// the file under it) and redraws that row as its summary when done,
    /// the bullet blinking off or on: the answer keeps the summary only.
    #[test]
    fn a_tool_row_at_work_gives_way_to_its_summary() {
        for summary in [
            "  Read 1 file (ctrl+o to expand)",
            "● Read 1 file (ctrl+o to expand)",
        ] {
            let mut t = Transcript::default().echoes_as(&claude());
            t.push(&lines(&[
                "❯ fix the note",
                "● Reading 1 file… (ctrl+o to expand)",
                "  ⎿  notes.txt",
                "✶ Flowing… (0s · ↓ 5 tokens)",
                summary,
                "● Update(notes.txt)",
                "  ⎿  Added 1 line",
                "● Fixed the note.",
            ]));
            assert_eq!(
                t.text(),
                "● Read 1 file (ctrl+o to expand)\n● Update(notes.txt)\n  ⎿  Added 1 line\n● Fixed the note.\n",
                "summary row {summary:?}"
            );
        }
        // The summary never came through: the stale row is left out.
        let mut t = Transcript::default().echoes_as(&claude());
        t.push(&lines(&[
            "● Reading 1 file… (ctrl+o to expand)",
            "  ⎿  notes.txt",
            "● Update(notes.txt)",
            "  ⎿  Added 1 line",
        ]));
        assert_eq!(t.text(), "● Update(notes.txt)\n  ⎿  Added 1 line\n");

        // A finished row is not at work: nothing replaces it.
        let mut t = Transcript::default().echoes_as(&claude());
        t.push(&lines(&[
            "● Read 1 file (ctrl+o to expand)",
            "  Read 2 files (ctrl+o to expand)",
        ]));
        assert_eq!(
            t.text(),
            "● Read 1 file (ctrl+o to expand)\n  Read 2 files (ctrl+o to expand)\n"
        );
    }

    /// An answer's paragraphs keep their break; blank rows between blocks
    /// (or before a tool's result) do not become part of the answer.
    #[test]
    fn an_answers_paragraphs_keep_their_break() {
        let mut t = Transcript::default().echoes_as(&claude());
        t.push(&lines(&[
            "● Bash(ls)",
            "",
            "  ⎿  src",
            "",
            "● First paragraph,",
            "  wrapped.",
            "",
            "  Second paragraph.",
            "",
            "✻ Worked for 1s",
        ]));
        assert_eq!(
            t.text(),
            "● Bash(ls)\n  ⎿  src\n● First paragraph,\n  wrapped.\n\n  Second paragraph.\n"
        );
    }
}
