//! The one replay driver of the real agents' recordings whose dialogs were
//! answered (Aider's `turns_with_dialogs`, Gemini CLI's
//! `question_then_shell`): the recording is fed sans-IO at its recorded
//! times, whole or one byte at a time, to a watcher with the agent's
//! profile, driven as the daemon drives the pane:
//!
//! - each command is told to the detector as the recording shows it typed;
//! - each dialog the replay answers gets its answer through `Answering`
//!   (sent once the dialog settled), judged once the screen stood still
//!   for `FRAME_QUIET`, and the detector is told once the screen shows it
//!   taken (`forget_prompt`).
//!
//! What differs per agent is data ([`Replay`]): its profile, the commands,
//! the answer, which dialogs are answered, and how the recording shows the
//! answer going in ([`SentWhen`]).

use std::time::{Duration, Instant};

use clawmux::bridge::panes::answering::{AnswerStep, Answering, FRAME_QUIET};
use clawmux::detect::{
    ApprovalKind, Detection, DetectionKind, DetectorConfig, Millis, PaneId, Profiles, StreamWatcher,
};

/// How the recording shows that an answer went in.
#[derive(Clone, Copy)]
pub(super) enum SentWhen {
    /// The first output echoing the answer's text (Aider echoes `yes`); the
    /// detector is told the dialog was answered then, as the daemon does
    /// when it types.
    Echoed,
    /// The first output, once the dialog settled (`Answering` says send),
    /// that changes the prompt (Gemini moves its cursor onto the option
    /// typed, no echo).
    PromptChanged,
}

/// One recording and how the daemon drove it.
pub(super) struct Replay<'a> {
    pub recording: &'a [u8],
    /// The detection profile (`aider`, `gemini`).
    pub profile: &'a str,
    /// The commands typed, in order.
    pub typed: &'a [&'a str],
    /// The answer typed into every dialog answered.
    pub answer: &'a str,
    /// The dialogs answered: every approval of this kind, or every
    /// approval when `None`.
    pub answers: Option<ApprovalKind>,
    pub sent: SentWhen,
}

/// What a replay saw: its detections, how many commands it saw typed and
/// how many answers it saw taken.
pub(super) struct Replayed {
    pub seen: Vec<Detection>,
    pub typed: usize,
    pub answered: usize,
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

impl Replay<'_> {
    /// The recording's control-mode lines with their times (ms).
    pub(super) fn lines(&self) -> Vec<(u64, Vec<u8>)> {
        super::timed_lines(self.recording)
    }

    /// The time the recording first shows `needle`.
    pub(super) fn shown_at(&self, needle: &str) -> u64 {
        (self.lines().iter())
            .find(|(_, l)| contains(l, needle))
            .map(|(at, _)| *at)
            .unwrap_or_else(|| panic!("{needle:?} not in the recording"))
    }

    /// Replays the recording whole (each `%output` as it came) or one byte
    /// at a time.
    pub(super) fn run(&self, bytewise: bool) -> Replayed {
        let profile = Profiles::defaults().unwrap().get(self.profile).unwrap();
        let mut w = StreamWatcher::new(profile, DetectorConfig::default(), (120, 40));
        let pane: PaneId = "%0".parse().unwrap();
        let start = Instant::now();
        let instant = |ms: u64| start + Duration::from_millis(ms);
        let mut seen: Vec<Detection> = Vec::new();
        let mut answer: Option<Answering> = None;
        let mut answered = 0;
        let mut typed = 0;
        let lines = self.lines();
        for (at, bytes) in &lines {
            let at = *at;
            // An answer that went in is judged once the screen stood still,
            // as the daemon judges it, before the detector judges that
            // screen; once it shows the answer taken, the detector is told.
            if let Some(a) = answer.as_ref().filter(|a| a.tries() > 0)
                && let Some(last) = w.pane(pane).map(|p| p.last_output().0)
                && let whole = last + FRAME_QUIET.as_millis() as u64
                && whole <= at
            {
                while let Some(due) = w.next_deadline().filter(|d| d.0 < whole) {
                    w.tick(due, &mut |d| seen.push(d));
                }
                if let Some(p) = w.pane(pane)
                    && a.step(&p.look(), instant(last), instant(whole)) == AnswerStep::Taken
                {
                    p.detector_mut()
                        .forget_prompt(Millis(whole), Some(self.answer));
                    answer = None;
                    answered += 1;
                }
            }
            while let Some(due) = w.next_deadline().filter(|d| d.0 <= at) {
                w.tick(due, &mut |d| seen.push(d));
            }
            if answer.is_none() {
                answer =
                    (seen.iter())
                        .filter_map(|d| match &d.kind {
                            DetectionKind::Approval {
                                approval,
                                question,
                                body,
                                ..
                            } if self.answers.is_none_or(|k| k == *approval) => Some(
                                Answering::new(question, body, self.answer, instant(d.at_ms.0)),
                            ),
                            _ => None,
                        })
                        .nth(answered);
            }
            // The command is told to the detector as the daemon types it.
            if let Some(command) = self.typed.get(typed)
                && contains(bytes, command)
                && let Some(p) = w.pane(pane)
            {
                p.typed(command);
                typed += 1;
            }
            let before = w.pane(pane).map(|p| (p.look(), instant(p.last_output().0)));
            if bytewise {
                for b in bytes {
                    w.feed(Millis(at), std::slice::from_ref(b), &mut |d| seen.push(d));
                }
            } else {
                w.feed(Millis(at), bytes, &mut |d| seen.push(d));
            }
            // The answer went in just before the output that shows it (the
            // recording typed it once the dialog had settled, as the
            // daemon does).
            if let (Some(a), Some((before, still)), Some(p)) =
                (answer.as_mut(), before, w.pane(pane))
                && a.tries() == 0
            {
                match self.sent {
                    SentWhen::Echoed if contains(bytes, self.answer) => {
                        p.detector_mut().answered(&a.question);
                        a.sent(&before, instant(at));
                    }
                    SentWhen::PromptChanged
                        if a.step(&before, still, instant(at)) == AnswerStep::Send
                            && p.look().prompt != before.prompt =>
                    {
                        a.sent(&before, instant(at));
                    }
                    _ => {}
                }
            }
        }
        let end = lines.last().map_or(0, |(at, _)| *at);
        w.finish(Millis(end), &mut |d| seen.push(d));
        w.tick(Millis(end + 10_000), &mut |d| seen.push(d));
        Replayed {
            seen,
            typed,
            answered,
        }
    }
}

/// Each detection with its time, for a failing assertion's message.
pub(super) fn described(seen: &[Detection]) -> Vec<String> {
    (seen.iter())
        .map(|d| format!("{} {}", d.at_ms.0, d.to_json()))
        .collect()
}

/// How many approvals of `kind` were reported.
pub(super) fn approvals(seen: &[Detection], kind: ApprovalKind) -> usize {
    (seen.iter())
        .filter(|d| super::is_approval(d, kind))
        .count()
}
