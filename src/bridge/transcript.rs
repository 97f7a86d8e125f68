//! What a command printed: the pane's finished lines since it was typed,
//! without the agent's screen furniture (input box, rules, spinner frames,
//! shortcut hints). TUIs redraw above the cursor, so this is built from the
//! stream of finished lines rather than from a position in the scrollback.

use std::collections::{HashSet, VecDeque};

/// Output kept per command: the result card shows the end of a long run.
pub const MAX_TRANSCRIPT_BYTES: usize = 1024 * 1024;
/// Stands for lines that went by unseen (see [`Transcript::gap`]).
pub const GAP_LINE: &str = "[… output too fast to follow: lines skipped, the screen was watched]";

#[derive(Debug, Default, Clone)]
pub struct Transcript {
    lines: VecDeque<String>,
    bytes: usize,
    /// Lines dropped from the front by the size bound.
    pub dropped: usize,
    /// Lines the pane showed before the command: a TUI redrawing its
    /// screen finishes them again, but they are not this command's output.
    earlier: HashSet<String>,
}

impl Transcript {
    /// A transcript that ignores the lines the pane finished just before.
    pub fn after<'a>(earlier: impl IntoIterator<Item = &'a String>) -> Transcript {
        Transcript {
            earlier: earlier.into_iter().cloned().collect(),
            ..Transcript::default()
        }
    }

    /// Appends finished lines, skipping furniture; drops the oldest past the bound.
    pub fn push(&mut self, lines: &[String]) {
        for line in lines {
            if !is_furniture(line) && !self.earlier.contains(line) {
                self.push_line(line.clone());
            }
        }
    }

    fn push_line(&mut self, line: String) {
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

    /// Marks where lines went by unseen: the pane flooded (only its
    /// screen was watched) or output was lost and resynchronised.
    pub fn gap(&mut self) {
        if self.lines.back().map(String::as_str) != Some(GAP_LINE) {
            self.push_line(GAP_LINE.to_string());
        }
    }

    /// When nothing was streamed since the last gap: the screen's rows as
    /// the output that went by (the end of a flood is on its screen).
    pub fn fill_gap(&mut self, rows: &[String]) {
        if self.lines.back().map(String::as_str) == Some(GAP_LINE) {
            self.push(rows);
        }
    }

    pub fn text(&self) -> String {
        let mut out = String::with_capacity(self.bytes + 64);
        if self.dropped > 0 {
            out.push_str(&format!("[… {} earlier lines not kept]\n", self.dropped));
        }
        for line in &self.lines {
            out.push_str(line);
            out.push('\n');
        }
        out
    }

    /// The last `n` lines.
    pub fn tail(&self, n: usize) -> String {
        let skip = self.lines.len().saturating_sub(n);
        self.lines
            .iter()
            .skip(skip)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Claude Code's (and the simulated agent's) redrawn chrome: horizontal
/// rules, the empty input prompt, hints and mode lines, spinner frames.
fn is_furniture(line: &str) -> bool {
    let t = line.trim();
    t.is_empty()
        || t.chars()
            .all(|c| matches!(c, '─' | '━' | '│' | '╭' | '╮' | '╰' | '╯' | ' '))
        || t == "❯"
        || t == ">"
        || t.contains("esc to interrupt")
        || t.contains("ctrl+c to interrupt")
        || t.starts_with("? for shortcuts")
        || t.starts_with("⏵⏵")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn keeps_output_drops_furniture() {
        let mut t = Transcript::default();
        t.push(&lines(&[
            "> /gsd:progress",
            "✶ Working… (1s · esc to interrupt)",
            "⏺ Progress: ████░░ 60%",
            "────────────",
            "❯",
            "  ? for shortcuts",
            "",
            "❯ 1. Yes",
        ]));
        assert_eq!(
            t.text(),
            "> /gsd:progress\n⏺ Progress: ████░░ 60%\n❯ 1. Yes\n"
        );
        assert_eq!(t.tail(1), "❯ 1. Yes");
    }

    #[test]
    fn lines_from_before_the_command_are_not_output() {
        let before = lines(&["⏺ Plans verified [3/3]", "  Created 2 plans"]);
        let mut t = Transcript::after(&before);
        t.push(&lines(&[
            "> say hi",
            "  Created 2 plans",
            "⏺ You said: say hi",
        ]));
        assert_eq!(t.text(), "> say hi\n⏺ You said: say hi\n");
    }

    #[test]
    fn a_gap_is_marked_once_between_lines() {
        let mut t = Transcript::default();
        t.push(&lines(&["before"]));
        t.gap();
        t.gap();
        t.push(&lines(&["after"]));
        t.gap();
        assert_eq!(t.text(), format!("before\n{GAP_LINE}\nafter\n{GAP_LINE}\n"));
    }

    #[test]
    fn only_a_gap_at_the_end_is_filled_from_the_screen() {
        let mut t = Transcript::default();
        t.push(&lines(&["a"]));
        t.fill_gap(&lines(&["a", "b"]));
        assert_eq!(t.text(), "a\n", "no gap, nothing to fill");
        t.gap();
        t.fill_gap(&lines(&["y", "z"]));
        t.fill_gap(&lines(&["y", "z"]));
        assert_eq!(t.text(), format!("a\n{GAP_LINE}\ny\nz\n"));
    }

    #[test]
    fn bounded() {
        let mut t = Transcript::default();
        let big = "x".repeat(1000);
        for _ in 0..2000 {
            t.push(std::slice::from_ref(&big));
        }
        assert!(t.bytes <= MAX_TRANSCRIPT_BYTES);
        assert!(t.dropped > 0);
        assert!(t.text().starts_with("[… "));
    }
}
