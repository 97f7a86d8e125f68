//! Answering a dialog so that the answer takes, sans-IO: when a key may be
//! sent, and whether the agent took it.
//!
//! Claude Code 2.1.332 drops keys that arrive within ~0.2 s of a dialog
//! being drawn (measured: Bash 3 of 5, plan 4 of 8, question 1 of 8; none
//! after 0.2–1 s; 2.1.197 dropped none). So a key goes to a dialog only
//! once it has been on screen for [`ANSWER_SETTLE`], and only while the
//! screen still shows the dialog the chat was shown (its question, body
//! and the option's key). After the key the screen must change (the dialog
//! gone, or the next one, or the text above it) within
//! [`ANSWER_CONFIRM_WAIT`]; a screen still unchanged gets the key once
//! more, and is reported not taken after that. A reported answer is one
//! the screen confirmed; a second dialog that looks like the first, drawn
//! under the first one's result, is never answered by its retry.
//!
//! "Changed" is judged on the screen's text ([`text_hash`]), not on every
//! cell: Claude Code 2.1.332 animates its logo and blinks the running
//! tool's dot while a dialog waits, several times a second, and a key it
//! dropped must not look taken because of that.

use std::time::{Duration, Instant};

use crate::detect::{ScreenLook, several_keys};

/// How long a dialog must have been on screen before a key is sent to it:
/// twice the longest delay after which 2.1.332 was seen to drop a key.
pub const ANSWER_SETTLE: Duration = Duration::from_millis(400);

/// How long the agent has to redraw after an answer before the key is sent
/// again (or, the second time, the answer is reported not taken): it
/// redraws within tens of milliseconds; a loaded machine takes longer.
pub const ANSWER_CONFIRM_WAIT: Duration = Duration::from_millis(3000);

/// Keys sent for one answer at most (the first and one more).
pub const MAX_ANSWER_TRIES: u8 = 2;

/// What to do with an answer now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerStep {
    /// The dialog has not been on screen long enough: wait until then.
    WaitUntil(Instant),
    /// Send the key (the first time, or once more).
    Send,
    /// Keys were sent; wait for the screen to change until then.
    Confirming(Instant),
    /// The dialog changed after the key: the answer took.
    Taken,
    /// The dialog is still there, unchanged, after every try.
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
    /// When the dialog was first seen on screen.
    shown_at: Instant,
    /// The dialog and the screen's text ([`text_hash`]) as they were when
    /// the key was last sent.
    sent: Option<(u64, u64, Instant)>,
    tries: u8,
    /// Keys sent at most: [`MAX_ANSWER_TRIES`], or 1 for typed words
    /// (typed twice they would be a different answer).
    max_tries: u8,
}

impl Answering {
    /// An answer `key` to the dialog asking `question` about `body`, which
    /// has been on screen since `shown_at`.
    pub fn new(question: &str, body: &str, key: &str, shown_at: Instant) -> Answering {
        Answering {
            question: question.to_owned(),
            body: body.to_owned(),
            key: key.to_owned(),
            shown_at,
            sent: None,
            tries: 0,
            max_tries: MAX_ANSWER_TRIES,
        }
    }

    /// Words (and Enter) typed into the dialog's open text field, at once
    /// and once only.
    pub fn words(question: &str, body: &str, words: &str, now: Instant) -> Answering {
        Answering {
            max_tries: 1,
            ..Answering::new(question, body, words, now)
        }
    }

    /// Keys sent so far.
    pub fn tries(&self) -> u8 {
        self.tries
    }

    /// Keys sent at most (1: words, typed with Enter).
    pub fn max_tries(&self) -> u8 {
        self.max_tries
    }

    /// What to do, given the screen now.
    pub fn step(&self, look: &ScreenLook, now: Instant) -> AnswerStep {
        let words = self.max_tries == 1;
        let shown = look.prompt.as_ref().filter(|p| {
            // Words go into the field the key opened: that dialog is ours.
            p.question == self.question && (words || p.body == self.body && self.offered(&p.keys))
        });
        match (self.sent, shown) {
            (None, None) => AnswerStep::NotShown,
            (None, Some(_)) => {
                let ready = self.shown_at + if words { Duration::ZERO } else { ANSWER_SETTLE };
                if now < ready {
                    AnswerStep::WaitUntil(ready)
                } else {
                    AnswerStep::Send
                }
            }
            (Some((dialog, text, _)), Some(p))
                if p.fingerprint != dialog || text_hash(&look.rows) != text =>
            {
                AnswerStep::Taken
            }
            (Some(_), None) => AnswerStep::Taken,
            (Some((_, _, at)), Some(_)) => {
                let until = at + ANSWER_CONFIRM_WAIT;
                if now < until {
                    AnswerStep::Confirming(until)
                } else if self.tries < self.max_tries {
                    AnswerStep::Send
                } else {
                    AnswerStep::NotTaken
                }
            }
        }
    }

    /// `keys` offer this answer: its key, or each of several (`1,3`).
    fn offered(&self, keys: &[String]) -> bool {
        several_keys(&self.key).is_some_and(|want| want.iter().all(|k| keys.iter().any(|o| o == k)))
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
    use crate::detect::ShownPrompt;

    fn dialog(question: &str, fingerprint: u64) -> ScreenLook {
        ScreenLook {
            prompt: Some(ShownPrompt {
                question: question.into(),
                keys: vec!["1".into(), "2".into()],
                presses: vec![None, None],
                fingerprint,
                ..ShownPrompt::default()
            }),
            ..ScreenLook::default()
        }
    }

    #[test]
    fn a_key_waits_for_the_dialog_to_settle_then_is_confirmed_by_a_change() {
        let t0 = Instant::now();
        let mut a = Answering::new("Proceed?", "", "1", t0);
        let shown = dialog("Proceed?", 7);
        assert_eq!(
            a.step(&shown, t0),
            AnswerStep::WaitUntil(t0 + ANSWER_SETTLE)
        );
        let t1 = t0 + ANSWER_SETTLE;
        assert_eq!(a.step(&shown, t1), AnswerStep::Send);
        a.sent(&shown, t1);
        assert_eq!(
            a.step(&shown, t1),
            AnswerStep::Confirming(t1 + ANSWER_CONFIRM_WAIT)
        );
        // Gone, or the next dialog (same question, another body): taken.
        assert_eq!(a.step(&ScreenLook::default(), t1), AnswerStep::Taken);
        assert_eq!(a.step(&dialog("Proceed?", 8), t1), AnswerStep::Taken);
        assert_eq!(a.step(&dialog("Next?", 7), t1), AnswerStep::Taken);
    }

    #[test]
    fn an_unchanged_dialog_gets_the_key_once_more_then_is_not_taken() {
        let t0 = Instant::now();
        let mut a = Answering::new("Proceed?", "", "2", t0);
        let shown = dialog("Proceed?", 7);
        let t1 = t0 + ANSWER_SETTLE;
        a.sent(&shown, t1);
        let t2 = t1 + ANSWER_CONFIRM_WAIT;
        assert_eq!(a.step(&shown, t2), AnswerStep::Send);
        a.sent(&shown, t2);
        assert_eq!(a.tries(), 2);
        let t3 = t2 + ANSWER_CONFIRM_WAIT;
        assert_eq!(a.step(&shown, t3), AnswerStep::NotTaken);
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
            a.step(&redrawn, t1),
            AnswerStep::Confirming(t1 + ANSWER_CONFIRM_WAIT)
        );
        let t2 = t1 + ANSWER_CONFIRM_WAIT;
        assert_eq!(a.step(&redrawn, t2), AnswerStep::Send);
    }

    #[test]
    fn words_go_into_an_open_field_at_once_and_only_once() {
        let t0 = Instant::now();
        let mut a = Answering::words("Which one?", "", "redis please", t0);
        let open = dialog("Which one?", 3);
        assert_eq!(a.step(&open, t0), AnswerStep::Send);
        a.sent(&open, t0);
        let later = t0 + ANSWER_CONFIRM_WAIT;
        assert_eq!(a.step(&open, later), AnswerStep::NotTaken);
        assert_eq!(a.step(&ScreenLook::default(), later), AnswerStep::Taken);
    }

    #[test]
    fn a_look_alike_dialog_under_the_first_ones_result_is_not_retried_into() {
        let t0 = Instant::now();
        let mut a = Answering::new("Proceed?", "", "1", t0);
        let mut first = dialog("Proceed?", 7);
        first.rows = vec!["● Bash(touch a)".into()];
        let t1 = t0 + ANSWER_SETTLE;
        a.sent(&first, t1);
        // The same dialog again, the first command's result now above it.
        let mut second = first.clone();
        second.rows.push("  ⎿  (No content)".into());
        let t2 = t1 + ANSWER_CONFIRM_WAIT;
        assert_eq!(a.step(&second, t2), AnswerStep::Taken);
    }

    #[test]
    fn nothing_is_sent_to_a_screen_without_the_dialog_the_chat_saw() {
        let t0 = Instant::now();
        let a = Answering::new("Proceed?", "", "1", t0);
        let later = t0 + ANSWER_SETTLE;
        assert_eq!(a.step(&ScreenLook::default(), later), AnswerStep::NotShown);
        assert_eq!(a.step(&dialog("Other?", 1), later), AnswerStep::NotShown);
        // Same question, another body: another dialog (another edit).
        let mut other_edit = dialog("Proceed?", 1);
        if let Some(p) = other_edit.prompt.as_mut() {
            p.body = "rm -rf build".into();
        }
        assert_eq!(a.step(&other_edit, later), AnswerStep::NotShown);
        let without_key = Answering::new("Proceed?", "", "9", t0);
        assert_eq!(
            without_key.step(&dialog("Proceed?", 1), later),
            AnswerStep::NotShown
        );
    }
}
