//! The status card of a command whose agent stalled: it works, and its
//! screen showed nothing new but its busy row (a spinner, a timer) for a
//! while (`detect::DetectionKind::Stalled`). A status, not an error: the
//! agent may be retrying an error without end, or thinking for long. It
//! offers the Interrupt of the command's progress card, and is updated
//! once output resumes or the command ends.

use crate::i18n::Text;
use crate::message::{Block, Message, Tone};
use crate::store::state::{JobId, ProjectName};

use super::super::texts::Msg;
use super::{short_title, with_interrupt};

/// The stall of command `job` of `project` (titled `title`): no output
/// for `secs` seconds, with its Interrupt button.
pub fn stalled_card(title: &str, secs: u64, project: &ProjectName, job: &JobId) -> Message {
    let secs = secs.to_string();
    let title = Msg::NoOutputTitle.with(&[("title", short_title(title))]);
    let card = Message::new(title, Tone::Info)
        .push(Block::text(Msg::NoOutputFor.with(&[("seconds", &secs)])))
        .push(Block::text(Msg::NoOutputGuidance.text()));
    with_interrupt(card, project, job)
}

/// The same card once the stall is over: output resumed after `secs`
/// seconds without, or (`None`) the command ended. No button: nothing is
/// left to interrupt on its account.
pub fn stall_over_card(title: &str, secs: Option<u64>) -> Message {
    let title = Msg::NoOutputTitle.with(&[("title", short_title(title))]);
    let said: Text = match secs {
        Some(secs) => Msg::OutputResumed.with(&[("seconds", &secs.to_string())]),
        None => Msg::StallEnded.text(),
    };
    Message::new(title, Tone::Closed).push(Block::text(said))
}
