//! Progress lines a redraw finishes again. Claude Code clears its screen
//! and draws it anew at times (its frame grew taller than the pane when a
//! turn starts under GSD's statusline, the window was resized): every row
//! on it is a finished line once more, and GSD's stage banner or progress
//! bar on it would be reported a second time. A progress line reported
//! before that was already on the screen last judged is that redraw, not
//! new output.
//!
//! The same words printed anew while their first copy is still on screen
//! are taken for the redraw too: the same stage or count again says
//! nothing new.

use std::collections::VecDeque;

/// Progress lines remembered as reported: a few GSD runs' stages and
/// counts. Past it the oldest is forgotten, and would be reported again
/// if a redraw finished it.
const MAX_TOLD: usize = 64;

/// What was reported, and the screen last judged.
#[derive(Debug, Default)]
pub(crate) struct Redrawn {
    told: VecDeque<String>,
    /// The screen last judged, its rows trimmed and joined with `\n`.
    screen: String,
}

impl Redrawn {
    /// Whether `line`, a progress line just finished, is a redraw of one
    /// reported before.
    pub(crate) fn is_redrawn(&self, line: &str) -> bool {
        let line = line.trim();
        self.told.iter().any(|t| t == line) && self.screen.lines().any(|r| r == line)
    }

    /// `line` was reported.
    pub(crate) fn told(&mut self, line: &str) {
        let line = line.trim();
        if self.told.iter().any(|t| t == line) {
            return;
        }
        if self.told.len() == MAX_TOLD {
            self.told.pop_front();
        }
        self.told.push_back(line.to_owned());
    }

    /// The screen was judged: `rows` are what it shows.
    pub(crate) fn screen(&mut self, rows: &[String]) {
        self.screen.clear();
        for row in rows.iter().map(|r| r.trim()).filter(|r| !r.is_empty()) {
            self.screen.push_str(row);
            self.screen.push('\n');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(text: &str) -> Vec<String> {
        text.lines().map(str::to_owned).collect()
    }

    #[test]
    fn a_reported_line_still_on_screen_is_a_redraw() {
        let mut r = Redrawn::default();
        let banner = " GSD ► EXECUTING WAVE 1";
        assert!(!r.is_redrawn(banner));
        r.told(banner);
        r.screen(&rows("━━━\n GSD ► EXECUTING WAVE 1\n━━━"));
        assert!(r.is_redrawn(banner));
        assert!(r.is_redrawn("   GSD ► EXECUTING WAVE 1  "), "trimmed");
    }

    #[test]
    fn a_line_never_reported_or_gone_from_the_screen_is_new() {
        let mut r = Redrawn::default();
        r.screen(&rows(" GSD ► EXECUTING WAVE 1"));
        // On screen before it was finished (the cursor still on its row).
        assert!(!r.is_redrawn(" GSD ► EXECUTING WAVE 1"));
        r.told(" GSD ► EXECUTING WAVE 1");
        r.screen(&rows("● Done."));
        // Printed again once the first copy scrolled away: new output.
        assert!(!r.is_redrawn(" GSD ► EXECUTING WAVE 1"));
    }

    #[test]
    fn only_the_latest_lines_are_remembered() {
        let mut r = Redrawn::default();
        let lines: Vec<String> = (0..=MAX_TOLD)
            .map(|n| format!("Tasks: {n}/99 complete"))
            .collect();
        for l in &lines {
            r.told(l);
        }
        r.screen(&lines);
        assert!(!r.is_redrawn(&lines[0]), "forgotten");
        assert!(r.is_redrawn(&lines[MAX_TOLD]));
    }
}
