//! Answering a dialog so that the answer takes, sans-IO: when a key may be
//! sent, and whether the agent took it.
//!
//! Claude Code 2.1.332 drops keys that arrive within ~0.2 s of a dialog
//! being drawn (measured: Bash 3 of 5, plan 4 of 8, question 1 of 8; none
//! after 0.2–1 s; 2.1.197 dropped none). So a key goes to a dialog only
//! once it has been on screen for [`ANSWER_SETTLE`], and only while the
//! screen still shows the dialog the chat was shown (its question, body
//! and the option's key). After the key the dialog must go or change (the
//! next dialog, the cursor moved onto the answer) within
//! [`ANSWER_CONFIRM_WAIT`]; a screen still unchanged gets the key once
//! more, and is reported not taken after that. A reported answer is one
//! the screen confirmed.
//!
//! The screen is judged only once it has been still for [`FRAME_QUIET`]:
//! the agents draw a frame in several writes, and half of one can lack the
//! dialog (a key that looks taken, words sent to no field) or show it under
//! text not redrawn yet.
//!
//! Text changing around an unchanged dialog proves nothing either way.
//! Claude Code 2.1.332 draws a dialog before the tool row above it (seen
//! redrawn after the key on a loaded machine), and it animates its logo
//! and blinks the running tool's dot while a dialog waits. But a dialog
//! that looks like the first, drawn under the first one's result, must
//! never get the first one's retry. So such a change holds the retry back
//! ([`text_hash`] compares what the screen says, not its drawings): the
//! answer is confirmed when the dialog goes, or reported not taken.

use std::time::{Duration, Instant};

use crate::detect::{DEFAULT_PROMPT_QUIET, SCROLLED_NOTE, ScreenLook, ShownPrompt, several_keys};

/// How long a dialog must have been on screen before a key is sent to it
/// (Claude Code's [`crate::agents::claude::DIALOG_SETTLE`]).
pub const ANSWER_SETTLE: Duration = crate::agents::claude::DIALOG_SETTLE;

/// How long the agent has to redraw after an answer before the key is sent
/// again (or, the second time, the answer is reported not taken): it
/// redraws within tens of milliseconds; a loaded machine takes longer.
pub const ANSWER_CONFIRM_WAIT: Duration = Duration::from_millis(3000);

/// How long the screen must have been still to be judged whole: as long as
/// the detector waits before it reports a new dialog.
pub const FRAME_QUIET: Duration = DEFAULT_PROMPT_QUIET;

/// Keys sent for one answer at most (the first and one more).
pub const MAX_ANSWER_TRIES: u8 = 2;

/// What to do with an answer now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerStep {
    /// Nothing sent yet, and not yet time to: look again then (or once
    /// the screen changes).
    WaitUntil(Instant),
    /// Send the key (the first time, or once more).
    Send,
    /// Keys were sent; wait for the screen to change until then.
    Confirming(Instant),
    /// The dialog changed after the key: the answer took.
    Taken,
    /// The dialog is still there, unchanged, after every try (or its text
    /// field never took the focus).
    NotTaken,
    /// The screen does not show the dialog the chat was shown: send nothing.
    NotShown,
}

/// One answer on its way into a dialog.
#[derive(Debug, Clone)]
pub struct Answering {
    /// The question the chat was shown.
    pub question: String,
    /// The body the chat was shown (the command, the diff).
    pub body: String,
    pub key: String,
    /// For words: the key of the text field they go into, which must have
    /// the dialog's focus.
    field: Option<String>,
    /// When the dialog was first seen on screen (for words: when the
    /// field's key took).
    shown_at: Instant,
    /// The dialog and the screen's text ([`text_hash`]) as they were when
    /// the key was last sent.
    sent: Option<(u64, u64, Instant)>,
    tries: u8,
}

impl Answering {
    /// An answer `key` to the dialog asking `question` about `body`, which
    /// has been on screen since `shown_at`.
    pub fn new(question: &str, body: &str, key: &str, shown_at: Instant) -> Answering {
        Answering {
            question: question.to_owned(),
            body: body.to_owned(),
            key: key.to_owned(),
            field: None,
            shown_at,
            sent: None,
            tries: 0,
        }
    }

    /// Words (and Enter) typed into the text field that the key `field`
    /// opened at `now`: once the field has the focus, and only once.
    pub fn words(question: &str, body: &str, field: &str, words: &str, now: Instant) -> Answering {
        Answering {
            field: Some(field.to_owned()),
            ..Answering::new(question, body, words, now)
        }
    }

    /// Keys sent so far.
    pub fn tries(&self) -> u8 {
        self.tries
    }

    /// Keys sent at most: [`MAX_ANSWER_TRIES`], or 1 for words (typed
    /// twice they would be another answer).
    pub fn max_tries(&self) -> u8 {
        if self.field.is_some() {
            1
        } else {
            MAX_ANSWER_TRIES
        }
    }

    /// What to do, given the screen now and when it last changed.
    pub fn step(&self, look: &ScreenLook, still_since: Instant, now: Instant) -> AnswerStep {
        let deadline = self.deadline();
        let whole = still_since + FRAME_QUIET;
        if now < whole && now < deadline {
            return self.wait(whole.min(deadline));
        }
        let shown = look.prompt.as_ref().filter(|p| self.shows(p));
        match (self.sent, shown) {
            // The field has not taken the focus (yet).
            (None, None) if self.field.is_some() && now < deadline => self.wait(deadline),
            (None, None) if self.field.is_some() => AnswerStep::NotTaken,
            (None, None) => AnswerStep::NotShown,
            (None, Some(_)) => {
                let ready = self.ready();
                if now < ready {
                    AnswerStep::WaitUntil(ready)
                } else {
                    AnswerStep::Send
                }
            }
            (Some(_), None) => AnswerStep::Taken,
            (Some((dialog, _, _)), Some(p)) if p.fingerprint != dialog => AnswerStep::Taken,
            (Some((_, text, _)), Some(_)) => {
                if now < deadline {
                    AnswerStep::Confirming(deadline)
                } else if self.tries < self.max_tries() && text_hash(&look.rows) == text {
                    AnswerStep::Send
                } else {
                    AnswerStep::NotTaken
                }
            }
        }
    }

    /// `prompt` is the dialog this answer is for, ready for it: the words'
    /// field has the focus; a key's dialog shows what the chat was shown.
    fn shows(&self, prompt: &ShownPrompt) -> bool {
        if prompt.question != self.question {
            return false;
        }
        match &self.field {
            Some(field) => prompt.cursor.as_ref() == Some(field),
            None => prompt.body == self.body && self.offered(&prompt.keys),
        }
    }

    /// When the first key may go.
    fn ready(&self) -> Instant {
        match self.field {
            Some(_) => self.shown_at,
            None => self.shown_at + ANSWER_SETTLE,
        }
    }

    /// The latest the screen is waited for: to confirm the key last sent,
    /// for the field to take the focus, or (a screen never still) to send.
    fn deadline(&self) -> Instant {
        match self.sent {
            Some((_, _, at)) => at + ANSWER_CONFIRM_WAIT,
            None => self.ready() + ANSWER_CONFIRM_WAIT,
        }
    }

    fn wait(&self, until: Instant) -> AnswerStep {
        match self.sent {
            Some(_) => AnswerStep::Confirming(until),
            None => AnswerStep::WaitUntil(until),
        }
    }

    /// `keys` offer this answer: its key, or each of several (`1,3`). A
    /// list that scrolls (see [`SCROLLED_NOTE`]) offers the options off
    /// the pane too, by number: the card took them from the agent's hook.
    fn offered(&self, keys: &[String]) -> bool {
        let scrolled = self.body.contains(SCROLLED_NOTE);
        let number = |k: &str| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit());
        several_keys(&self.key).is_some_and(|want| {
            want.iter()
                .all(|k| keys.iter().any(|o| o == k) || (scrolled && number(k)))
        })
    }

    /// The key was sent at `now` to the screen `look` shows.
    pub fn sent(&mut self, look: &ScreenLook, now: Instant) {
        let fingerprint = look.prompt.as_ref().map_or(0, |p| p.fingerprint);
        self.sent = Some((fingerprint, text_hash(&look.rows), now));
        self.tries += 1;
    }
}

/// A hash of the letters and digits of `rows`, row by row: what the screen
/// says, without the drawings and blinking symbols that change on their own.
fn text_hash(rows: &[String]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let text = rows.iter().flat_map(|row| {
        let words = row.chars().filter(|c| c.is_alphanumeric());
        words.chain(['\n'])
    });
    for c in text {
        hash ^= u64::from(c);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dialog(question: &str, fingerprint: u64) -> ScreenLook {
        ScreenLook {
            prompt: Some(ShownPrompt {
                question: question.into(),
                keys: vec!["1".into(), "2".into(), "3".into()],
                presses: vec![None, None, None],
                fingerprint,
                cursor: Some("1".into()),
                ..ShownPrompt::default()
            }),
            ..ScreenLook::default()
        }
    }

    /// A screen last drawn long enough before `now` to be whole.
    fn still(now: Instant) -> Instant {
        now - FRAME_QUIET
    }

    #[test]
    fn a_key_waits_for_the_dialog_to_settle_then_is_confirmed_by_a_change() {
        let t0 = Instant::now();
        let mut a = Answering::new("Proceed?", "", "1", t0);
        let shown = dialog("Proceed?", 7);
        assert_eq!(
            a.step(&shown, still(t0), t0),
            AnswerStep::WaitUntil(t0 + ANSWER_SETTLE)
        );
        let t1 = t0 + ANSWER_SETTLE;
        assert_eq!(a.step(&shown, still(t1), t1), AnswerStep::Send);
        a.sent(&shown, t1);
        assert_eq!(
            a.step(&shown, still(t1), t1),
            AnswerStep::Confirming(t1 + ANSWER_CONFIRM_WAIT)
        );
        // Gone, or the next dialog (same question, another body), or the
        // cursor moved onto the answer: taken.
        let gone = ScreenLook::default();
        assert_eq!(a.step(&gone, still(t1), t1), AnswerStep::Taken);
        assert_eq!(
            a.step(&dialog("Proceed?", 8), still(t1), t1),
            AnswerStep::Taken
        );
        assert_eq!(
            a.step(&dialog("Next?", 7), still(t1), t1),
            AnswerStep::Taken
        );
    }

    #[test]
    fn an_unchanged_dialog_gets_the_key_once_more_then_is_not_taken() {
        let t0 = Instant::now();
        let mut a = Answering::new("Proceed?", "", "2", t0);
        let shown = dialog("Proceed?", 7);
        let t1 = t0 + ANSWER_SETTLE;
        a.sent(&shown, t1);
        let t2 = t1 + ANSWER_CONFIRM_WAIT;
        assert_eq!(a.step(&shown, still(t2), t2), AnswerStep::Send);
        a.sent(&shown, t2);
        assert_eq!(a.tries(), 2);
        let t3 = t2 + ANSWER_CONFIRM_WAIT;
        assert_eq!(a.step(&shown, still(t3), t3), AnswerStep::NotTaken);
    }

    #[test]
    fn half_a_frame_is_judged_once_the_screen_is_still() {
        let t0 = Instant::now();
        let mut a = Answering::new("Proceed?", "", "1", t0);
        let shown = dialog("Proceed?", 7);
        let t1 = t0 + ANSWER_SETTLE;
        // Drawn just now: the dialog may be half of a frame.
        assert_eq!(
            a.step(&shown, t1, t1),
            AnswerStep::WaitUntil(t1 + FRAME_QUIET)
        );
        a.sent(&shown, t1);
        // A redraw erased the dialog's rows and has not drawn them again.
        let erased = ScreenLook::default();
        let t2 = t1 + Duration::from_millis(10);
        assert_eq!(
            a.step(&erased, t2, t2),
            AnswerStep::Confirming(t2 + FRAME_QUIET)
        );
        assert_eq!(
            a.step(&shown, t2, t2 + FRAME_QUIET),
            AnswerStep::Confirming(t1 + ANSWER_CONFIRM_WAIT)
        );
        // Still erased once the screen stood still: gone, taken.
        assert_eq!(a.step(&erased, t2, t2 + FRAME_QUIET), AnswerStep::Taken);
        // A screen never still is judged at the deadline all the same.
        let t3 = t1 + ANSWER_CONFIRM_WAIT;
        assert_eq!(a.step(&shown, t3, t3), AnswerStep::Send);
    }

    #[test]
    fn an_animated_logo_and_a_blinking_dot_are_no_change() {
        let t0 = Instant::now();
        let mut a = Answering::new("Proceed?", "", "1", t0);
        let mut shown = dialog("Proceed?", 7);
        shown.rows = vec![" ▐▛███▜▌".into(), "● Bash(touch a)".into()];
        let t1 = t0 + ANSWER_SETTLE;
        a.sent(&shown, t1);
        // As 2.1.332 draws them while its dialog waits.
        let mut redrawn = shown.clone();
        redrawn.rows = vec![" ▗▟▛███▛█▄".into(), "  Bash(touch a)".into()];
        assert_eq!(
            a.step(&redrawn, still(t1), t1),
            AnswerStep::Confirming(t1 + ANSWER_CONFIRM_WAIT)
        );
        let t2 = t1 + ANSWER_CONFIRM_WAIT;
        assert_eq!(a.step(&redrawn, still(t2), t2), AnswerStep::Send);
    }

    #[test]
    fn text_redrawn_above_an_unchanged_dialog_neither_confirms_nor_resends() {
        let t0 = Instant::now();
        let mut a = Answering::new("Proceed?", "", "1", t0);
        // 2.1.332 on a loaded machine: the dialog for the second command
        // under the first command's tool row, redrawn after the key.
        let mut first = dialog("Proceed?", 7);
        first.rows = vec!["● Answer 12".into(), "  ⎿  $ touch answer-12.txt".into()];
        let t1 = t0 + ANSWER_SETTLE;
        a.sent(&first, t1);
        let mut redrawn = first.clone();
        redrawn.rows = vec!["● Answer 13".into(), "  ⎿  $ touch answer-13.txt".into()];
        assert_eq!(
            a.step(&redrawn, still(t1), t1),
            AnswerStep::Confirming(t1 + ANSWER_CONFIRM_WAIT)
        );
        // It may be a look-alike dialog under the first one's result: no
        // second key, ever.
        let t2 = t1 + ANSWER_CONFIRM_WAIT;
        assert_eq!(a.step(&redrawn, still(t2), t2), AnswerStep::NotTaken);
        // The key took late: the dialog goes within the wait.
        let t3 = t1 + ANSWER_CONFIRM_WAIT / 2;
        assert_eq!(
            a.step(&ScreenLook::default(), still(t3), t3),
            AnswerStep::Taken
        );
    }

    #[test]
    fn words_go_into_a_focused_field_at_once_and_only_once() {
        let t0 = Instant::now();
        let mut a = Answering::words("Which one?", "", "3", "redis please", t0);
        // The field's key took, but the field has not the focus yet (or
        // the screen is between frames): the words wait for it.
        let unfocused = dialog("Which one?", 3);
        let deadline = t0 + ANSWER_CONFIRM_WAIT;
        assert_eq!(
            a.step(&unfocused, still(t0), t0),
            AnswerStep::WaitUntil(deadline)
        );
        let erased = ScreenLook::default();
        assert_eq!(
            a.step(&erased, still(t0), t0),
            AnswerStep::WaitUntil(deadline)
        );
        let mut open = dialog("Which one?", 4);
        if let Some(p) = open.prompt.as_mut() {
            p.cursor = Some("3".into());
        }
        assert_eq!(a.step(&open, still(t0), t0), AnswerStep::Send);
        a.sent(&open, t0);
        let later = t0 + ANSWER_CONFIRM_WAIT;
        assert_eq!(a.step(&open, still(later), later), AnswerStep::NotTaken);
        assert_eq!(a.step(&erased, still(later), later), AnswerStep::Taken);
        // A field that never takes the focus gets no words.
        let never = Answering::words("Which one?", "", "3", "redis please", t0);
        assert_eq!(
            never.step(&unfocused, still(later), later),
            AnswerStep::NotTaken
        );
    }

    #[test]
    fn nothing_is_sent_to_a_screen_without_the_dialog_the_chat_saw() {
        let t0 = Instant::now();
        let a = Answering::new("Proceed?", "", "1", t0);
        let later = t0 + ANSWER_SETTLE;
        let none = ScreenLook::default();
        assert_eq!(a.step(&none, still(later), later), AnswerStep::NotShown);
        assert_eq!(
            a.step(&dialog("Other?", 1), still(later), later),
            AnswerStep::NotShown
        );
        // Same question, another body: another dialog (another edit).
        let mut other_edit = dialog("Proceed?", 1);
        if let Some(p) = other_edit.prompt.as_mut() {
            p.body = "rm -rf build".into();
        }
        assert_eq!(
            a.step(&other_edit, still(later), later),
            AnswerStep::NotShown
        );
        let without_key = Answering::new("Proceed?", "", "9", t0);
        assert_eq!(
            without_key.step(&dialog("Proceed?", 1), still(later), later),
            AnswerStep::NotShown
        );
    }
}
