//! The life of the prompt on an agent's screen, as the job runner knows
//! it: none; one nobody was shown yet, which holds the commands back; one
//! shown to the chat; or one an answer was typed into, until the screen
//! shows whether it took. One enum, so that a mix that cannot be (commands
//! held behind a prompt already shown, an answer in flight beside another)
//! cannot be written.

use crate::store::state::{Approval, ApprovalId};

#[derive(Debug, Default, Clone, PartialEq)]
pub(super) enum Prompt {
    /// No prompt the runner knows of.
    #[default]
    Clear,
    /// A dialog nobody was shown is on screen: the first waiting command
    /// waits until it is reported (then [`Prompt::Shown`]) or gone.
    Unreported,
    /// Reported to the chat; waits for its answer.
    Shown(Approval),
    /// An answer was typed into the prompt with id `into` (`None`: one
    /// this runner had not seen itself, answered after a restart from its
    /// saved copy); the screen has not yet shown whether it took. `shown`
    /// is the prompt on screen now: a new one may be drawn meanwhile.
    Answering {
        into: Option<ApprovalId>,
        shown: Option<Approval>,
    },
}

impl Prompt {
    /// The prompt shown to the chat and still on screen.
    pub(super) fn shown(&self) -> Option<&Approval> {
        match self {
            Prompt::Shown(a) | Prompt::Answering { shown: Some(a), .. } => Some(a),
            _ => None,
        }
    }

    /// The shown prompt, to redraw its body in place.
    pub(super) fn shown_mut(&mut self) -> Option<&mut Approval> {
        match self {
            Prompt::Shown(a) | Prompt::Answering { shown: Some(a), .. } => Some(a),
            _ => None,
        }
    }

    /// Whether commands wait for a dialog to be reported.
    pub(super) fn held(&self) -> bool {
        matches!(self, Prompt::Unreported)
    }

    /// A prompt waits for its answer, or an answer for the screen.
    pub(super) fn asking(&self) -> bool {
        matches!(self, Prompt::Shown(_) | Prompt::Answering { .. })
    }

    /// A dialog nobody was shown holds the commands back.
    pub(super) fn hold(&mut self) {
        if *self == Prompt::Clear {
            *self = Prompt::Unreported;
        }
    }

    /// The dialog that held the commands went away unreported.
    pub(super) fn release(&mut self) {
        if *self == Prompt::Unreported {
            *self = Prompt::Clear;
        }
    }

    /// `approval` was reported: the prompt on screen now.
    pub(super) fn show(&mut self, approval: Approval) {
        match self {
            Prompt::Answering { shown, .. } => *shown = Some(approval),
            _ => *self = Prompt::Shown(approval),
        }
    }

    /// The shown prompt left the screen (answered, or typed over): it, if
    /// one was shown.
    pub(super) fn close(&mut self) -> Option<Approval> {
        match std::mem::take(self) {
            Prompt::Shown(a) => Some(a),
            Prompt::Answering { into, shown } => {
                *self = Prompt::Answering { into, shown: None };
                shown
            }
            other => {
                *self = other;
                None
            }
        }
    }

    /// The screen shows the prompt an answer was typed into: its leaving
    /// is that answer taking, not one given in the terminal.
    pub(super) fn answer_took(&self) -> bool {
        match self {
            Prompt::Answering { into, shown } => into.as_ref() == shown.as_ref().map(|a| &a.id),
            _ => false,
        }
    }

    /// An answer was typed into the prompt on screen (a second one, into
    /// the same prompt, changes nothing).
    pub(super) fn answer_sent(&mut self) {
        *self = match std::mem::take(self) {
            answering @ Prompt::Answering { .. } => answering,
            Prompt::Shown(a) => Prompt::Answering {
                into: Some(a.id.clone()),
                shown: Some(a),
            },
            Prompt::Clear | Prompt::Unreported => Prompt::Answering {
                into: None,
                shown: None,
            },
        };
    }

    /// The screen showed whether the answer took. A taken answer closes
    /// the prompt it was typed into (not one drawn since).
    pub(super) fn answer_done(&mut self, taken: bool) {
        if let Prompt::Answering { into, shown } = self {
            let still = shown
                .take()
                .filter(|a| !(taken && Some(&a.id) == into.as_ref()));
            *self = still.map_or(Prompt::Clear, Prompt::Shown);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::state::ApprovalKind;

    fn prompt(id: &str, question: &str) -> Approval {
        Approval {
            id: id.parse().unwrap(),
            session: crate::store::ids::session("cm-demo"),
            pane: crate::control::PaneId(1),
            kind: ApprovalKind::Permission,
            question: question.into(),
            body: String::new(),
            options: Vec::new(),
        }
    }

    /// A dialog held behind is released by being reported, never both.
    #[test]
    fn a_held_dialog_is_released_by_its_report_or_by_going() {
        let mut p = Prompt::Clear;
        p.hold();
        assert!(p.held() && !p.asking());
        p.show(prompt("a1", "Run ls?"));
        assert!(!p.held() && p.asking());
        assert_eq!(p.shown().map(|a| a.id.as_str()), Some("a1"));
        // A shown prompt holds nothing back by being "held" again.
        p.hold();
        assert!(!p.held());

        let mut gone = Prompt::Clear;
        gone.hold();
        gone.release();
        assert_eq!(gone, Prompt::Clear);
        // Release does not forget a prompt shown.
        let mut shown = Prompt::Shown(prompt("a1", "Run ls?"));
        shown.release();
        assert!(shown.shown().is_some());
    }

    /// A taken answer closes the prompt it was typed into, not one drawn
    /// while it was judged; a refused one leaves it shown.
    #[test]
    fn an_answer_closes_only_the_prompt_it_was_typed_into() {
        let mut p = Prompt::Shown(prompt("a1", "Run ls?"));
        p.answer_sent();
        assert!(p.answer_took(), "the prompt answered is the one shown");
        p.answer_sent();
        assert_eq!(
            p,
            Prompt::Answering {
                into: Some("a1".parse().unwrap()),
                shown: Some(prompt("a1", "Run ls?")),
            }
        );
        p.answer_done(true);
        assert_eq!(p, Prompt::Clear);

        let mut refused = Prompt::Shown(prompt("a1", "Run ls?"));
        refused.answer_sent();
        refused.answer_done(false);
        assert_eq!(refused, Prompt::Shown(prompt("a1", "Run ls?")));

        let mut next = Prompt::Shown(prompt("a1", "Run ls?"));
        next.answer_sent();
        next.show(prompt("a2", "Edit a.rs?"));
        assert!(!next.answer_took(), "a new prompt's leaving is its own");
        next.answer_done(true);
        assert_eq!(next, Prompt::Shown(prompt("a2", "Edit a.rs?")));
    }

    /// After a restart the answer goes to a prompt this runner never saw:
    /// until the screen judges it, it asks; then nothing is left.
    #[test]
    fn an_answer_to_a_prompt_not_seen_waits_for_the_screen() {
        let mut p = Prompt::Unreported;
        p.answer_sent();
        assert!(p.asking() && !p.held() && p.shown().is_none());
        assert!(p.answer_took());
        assert_eq!(p.close(), None);
        p.answer_done(true);
        assert_eq!(p, Prompt::Clear);
        // Judged with nothing typed: nothing changes.
        let mut clear = Prompt::Shown(prompt("a1", "Run ls?"));
        clear.answer_done(true);
        assert_eq!(clear, Prompt::Shown(prompt("a1", "Run ls?")));
    }

    /// A prompt closed while an answer is judged stays closed: the answer
    /// still waits for the screen.
    #[test]
    fn closing_keeps_the_answer_in_flight() {
        let mut p = Prompt::Shown(prompt("a1", "Run ls?"));
        p.answer_sent();
        assert_eq!(p.close().map(|a| a.id.to_string()), Some("a1".into()));
        assert!(p.asking() && p.shown().is_none());
        let mut shown = Prompt::Shown(prompt("a1", "Run ls?"));
        assert!(shown.close().is_some());
        assert_eq!(shown, Prompt::Clear);
        let mut held = Prompt::Unreported;
        assert_eq!(held.close(), None);
        assert!(held.held());
    }
}
