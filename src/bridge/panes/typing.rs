//! Typing a command exactly once, sans-IO: the decisions a project makes
//! from what the agent's screen shows, apart from the keys themselves.
//!
//! - Before the first key, the intent is recorded with a fingerprint of the
//!   screen ([`screen_hash`]). After a crash, [`resume`] reads the screen
//!   and says whether the command must be typed, only submitted (its text
//!   sits in the input box), or followed (the agent took it). It never
//!   types into a pane showing a dialog: a digit in the text would choose
//!   an option nobody chose.
//! - After typing, [`receipt`] says whether the agent took the input: the
//!   input box no longer shows it. While it still does, Enter is pressed
//!   once more (not for a line-mode agent: [`max_enters`]), and the chat
//!   is told it was not submitted only once the text has sat there for
//!   [`NOT_SUBMITTED_AFTER`].

use std::time::Duration;

pub use crate::detect::{ScreenLook, screen_hash};

/// How long the agent has to take typed input before Enter is pressed
/// again: Claude Code reads a line within milliseconds; a loaded machine
/// was seen to take a second.
pub const RECEIPT_WAIT: Duration = Duration::from_secs(3);

/// Enter presses for one command at most (the first and one more).
pub const MAX_ENTERS: u8 = 2;

/// The Enter presses a command gets: a line-mode agent (its input on the
/// cursor's row) reads its terminal in order, so an Enter it has not read
/// yet is not lost, and a second would submit an empty line later, or
/// answer the `[Yes]` of its next question.
pub fn max_enters(line_mode: bool) -> u8 {
    if line_mode { 1 } else { MAX_ENTERS }
}

/// How long after the first Enter typed input may still sit in the input
/// box before the chat hears it was not submitted. An agent on a loaded
/// machine can take the line and redraw seconds later; told "not
/// submitted", the user would send it again and it would run twice.
pub const NOT_SUBMITTED_AFTER: Duration = Duration::from_secs(20);

/// What to do with a command whose typing a crash may have cut short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resume {
    /// Nothing of it reached the agent: type it.
    Type,
    /// Its text sits in the input box: press Enter only.
    Submit,
    /// The agent took it (or a dialog waits): type nothing, follow it.
    Follow,
}

/// Whether the screen shows a dialog that takes keys where a command would
/// go: options to choose and no input box under them. (A checkpoint's
/// question sits in the transcript above the input box; a command typed
/// there is its answer.)
pub fn dialog_waits(look: &ScreenLook) -> bool {
    look.prompt
        .as_ref()
        .is_some_and(|p| !p.keys.is_empty() && look.input.is_none())
}

/// Does the input box show `text` (or, wrapped onto more rows, its start)?
pub fn in_input_box(look: &ScreenLook, text: &str) -> bool {
    look.input
        .as_deref()
        .is_some_and(|shown| !shown.is_empty() && text.trim_start().starts_with(shown))
}

/// Decides how to resume a command whose intent to type was recorded when
/// the screen's fingerprint was `before`.
pub fn resume(look: &ScreenLook, text: &str, before: u64) -> Resume {
    if look.dialog() || look.busy {
        return Resume::Follow;
    }
    if in_input_box(look, text) {
        return Resume::Submit;
    }
    if screen_hash(&look.rows) == before {
        return Resume::Type;
    }
    // The screen changed since the intent. With an input box, an empty box
    // and the command in the transcript say the agent took it; without
    // one (a shell), any trace of the text on screen does.
    let text = text.trim();
    let traced = look.rows.iter().any(|row| {
        let row = row.trim();
        row.strip_prefix('❯')
            .or_else(|| row.strip_prefix('>'))
            .map(str::trim)
            .is_some_and(|shown| !shown.is_empty() && text.starts_with(shown))
            || (look.input.is_none() && row.contains(text))
    });
    if traced { Resume::Follow } else { Resume::Type }
}

/// The verdict on typed input after [`RECEIPT_WAIT`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Receipt {
    /// The agent took it (or the screen cannot tell: no input box).
    Taken,
    /// Still in the input box: press Enter once more.
    PressEnter,
    /// Still in the input box after every Enter: tell the chat.
    NotSubmitted,
    /// Still there, but a dialog came up meanwhile (never press a key into
    /// it; the dialog is reported as usual), or every Enter was pressed and
    /// the agent may yet redraw: look again later.
    Wait,
}

/// Has the agent taken `text`, after `enters` presses of Enter (of at
/// most `max`), the first `waited` ago?
pub fn receipt(
    look: &ScreenLook,
    text: &str,
    (enters, max): (u8, u8),
    waited: Duration,
) -> Receipt {
    if !in_input_box(look, text) {
        Receipt::Taken
    } else if look.dialog() {
        Receipt::Wait
    } else if enters < max {
        Receipt::PressEnter
    } else if waited < NOT_SUBMITTED_AFTER {
        Receipt::Wait
    } else {
        Receipt::NotSubmitted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CMD: &str = "/gsd:plan-phase 2";

    fn look(rows: &[&str], input: Option<&str>) -> ScreenLook {
        ScreenLook {
            rows: rows.iter().map(|r| r.to_string()).collect(),
            input: input.map(str::to_owned),
            ..Default::default()
        }
    }

    fn idle(history: &[&str], input: &str) -> ScreenLook {
        let mut rows: Vec<String> = history.iter().map(|r| r.to_string()).collect();
        rows.extend(["─".repeat(40), format!("❯ {input}"), "─".repeat(40)]);
        ScreenLook {
            rows,
            input: Some(input.to_owned()),
            ..Default::default()
        }
    }

    #[test]
    fn an_unchanged_screen_means_nothing_was_typed() {
        let before = idle(&["● Ready."], "");
        let at = screen_hash(&before.rows);
        assert_eq!(resume(&before, CMD, at), Resume::Type);
        // The same command run before: its trace is old, the screen is as
        // it was when the intent was recorded, so it is typed.
        let again = idle(&[&format!("❯ {CMD}"), "● Planned."], "");
        assert_eq!(resume(&again, CMD, screen_hash(&again.rows)), Resume::Type);
    }

    #[test]
    fn text_in_the_box_is_submitted_not_typed_again() {
        let before = screen_hash(&idle(&["● Ready."], "").rows);
        let typed = idle(&["● Ready."], CMD);
        assert_eq!(resume(&typed, CMD, before), Resume::Submit);
        // Wrapped: the box shows the start of a long command.
        let long = format!("{CMD} {}", "x".repeat(200));
        let wrapped = idle(&["● Ready."], &long[..60]);
        assert_eq!(resume(&wrapped, &long, before), Resume::Submit);
    }

    #[test]
    fn a_taken_command_is_followed() {
        let before = screen_hash(&idle(&["● Ready."], "").rows);
        let done = idle(&["● Ready.", &format!("❯ {CMD}"), "● Planned."], "");
        assert_eq!(resume(&done, CMD, before), Resume::Follow);
        let mut busy = idle(&["● Ready.", &format!("❯ {CMD}")], "");
        busy.busy = true;
        assert_eq!(resume(&busy, CMD, before), Resume::Follow);
    }

    #[test]
    fn a_menu_in_place_of_the_input_box_waits_a_checkpoint_above_it_does_not() {
        let menu = crate::detect::ShownPrompt {
            keys: vec!["1".into(), "2".into()],
            ..Default::default()
        };
        let dialog = ScreenLook {
            prompt: Some(menu.clone()),
            ..look(&[" Do you want to proceed?", " ❯ 1. Yes", "   2. No"], None)
        };
        assert!(dialog_waits(&dialog));
        let checkpoint = ScreenLook {
            prompt: Some(menu),
            ..idle(&["## Checkpoint: human-verify", "Type approved"], "")
        };
        assert!(!dialog_waits(&checkpoint));
        assert!(!dialog_waits(&idle(&["● Ready."], "")));
    }

    #[test]
    fn never_types_into_a_dialog() {
        let before = screen_hash(&idle(&["● Ready."], "").rows);
        let dialog = ScreenLook {
            prompt: Some(crate::detect::ShownPrompt::default()),
            ..look(&[" Do you want to proceed?", " ❯ 1. Yes", "   2. No"], None)
        };
        assert_eq!(resume(&dialog, CMD, before), Resume::Follow);
        // Even when the screen is the one the intent saw.
        assert_eq!(
            resume(&dialog, CMD, screen_hash(&dialog.rows)),
            Resume::Follow
        );
        assert_eq!(
            receipt(&dialog, CMD, (1, MAX_ENTERS), Duration::ZERO),
            Receipt::Taken
        );
        let mut stuck = idle(&[], CMD);
        stuck.prompt = Some(crate::detect::ShownPrompt::default());
        assert_eq!(
            receipt(&stuck, CMD, (1, MAX_ENTERS), Duration::ZERO),
            Receipt::Wait
        );
    }

    #[test]
    fn a_changed_screen_with_no_trace_is_typed() {
        let before = screen_hash(&idle(&["● Ready."], "").rows);
        let other = idle(&["● Ready.", "  ⎿ Tip: try /help"], "");
        assert_eq!(resume(&other, CMD, before), Resume::Type);
    }

    #[test]
    fn a_shell_is_followed_when_the_text_shows() {
        let before = screen_hash(&look(&["$ "], None).rows);
        let shown = look(&[&format!("$ {CMD}"), "planned", "$ "], None);
        assert_eq!(resume(&shown, CMD, before), Resume::Follow);
        let other = look(&["$ ls", "a b", "$ "], None);
        assert_eq!(resume(&other, CMD, before), Resume::Type);
        assert_eq!(
            receipt(&shown, CMD, (1, MAX_ENTERS), Duration::ZERO),
            Receipt::Taken
        );
    }

    #[test]
    fn enter_is_pressed_once_more_then_the_chat_is_told() {
        let stuck = idle(&[], CMD);
        let soon = RECEIPT_WAIT;
        let max = MAX_ENTERS;
        assert_eq!(receipt(&stuck, CMD, (1, max), soon), Receipt::PressEnter);
        // Every Enter pressed: the agent may still redraw late.
        assert_eq!(receipt(&stuck, CMD, (2, max), soon * 2), Receipt::Wait);
        let late = NOT_SUBMITTED_AFTER;
        assert_eq!(receipt(&stuck, CMD, (2, max), late), Receipt::NotSubmitted);
        assert_eq!(receipt(&idle(&[], ""), CMD, (1, max), soon), Receipt::Taken);
    }

    #[test]
    fn a_line_mode_agent_gets_one_enter() {
        let stuck = idle(&[], CMD);
        let one = (1, max_enters(true));
        assert_eq!(receipt(&stuck, CMD, one, RECEIPT_WAIT), Receipt::Wait);
        let late = NOT_SUBMITTED_AFTER;
        assert_eq!(receipt(&stuck, CMD, one, late), Receipt::NotSubmitted);
    }

    #[test]
    fn fingerprints_ignore_trailing_blanks_only() {
        let a = screen_hash(&["a  ".to_string(), "b".to_string()]);
        assert_eq!(a, screen_hash(&["a".to_string(), "b".to_string()]));
        assert_ne!(a, screen_hash(&["ab".to_string()]));
        assert_ne!(a, screen_hash(&["b".to_string(), "a".to_string()]));
    }
}
