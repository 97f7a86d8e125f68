//! A pane's turn as a state machine: between turns, a new agent starting,
//! or a turn under way with what is known of it (the command typed and
//! whether the agent took it, the work it said, an end it said that the
//! screen has not shown yet). Work said between turns, a start-up waiting
//! for a turn's closing row, or a command taken before it was typed cannot
//! be written down.

use clawmux_pane::signal::AgentState;

use super::Millis;

/// Where a pane's turn stands.
#[derive(Debug)]
pub(crate) enum Turn {
    /// No turn: the agent waits for a command. `said_working`: it said it
    /// works all the same (a command typed at the desk whose busy row is
    /// not drawn yet): the turn the screen shows next has its work said.
    Between { said_working: bool },
    /// A new agent starting: its idle screen ends this "turn" once it said
    /// the states its profile says it says while it starts.
    StartUp(StartUp),
    /// A turn under way.
    Running(Run),
}

impl Turn {
    /// A turn (or a start-up) is under way.
    pub(crate) fn is_on(&self) -> bool {
        !matches!(self, Turn::Between { .. })
    }

    /// The turn under way, if a real one (not a start-up).
    pub(crate) fn run(&self) -> Option<&Run> {
        match self {
            Turn::Running(run) => Some(run),
            _ => None,
        }
    }

    pub(crate) fn run_mut(&mut self) -> Option<&mut Run> {
        match self {
            Turn::Running(run) => Some(run),
            _ => None,
        }
    }
}

/// A new agent starting: how far through its start-up states it is.
#[derive(Debug, Default)]
pub(crate) struct StartUp {
    /// How many of the profile's `start_states` it said, in order.
    said: usize,
}

impl StartUp {
    /// Takes a state the agent said while starting (`expected`: the
    /// profile's `start_states`); others in between are skipped.
    pub(crate) fn said(&mut self, state: AgentState, expected: &[AgentState]) {
        if expected.get(self.said) == Some(&state) {
            self.said += 1;
        }
    }

    /// What it said lapsed (the screen did not bear it out): the screen
    /// alone decides when it is ready.
    pub(crate) fn lapsed(&mut self) {
        self.said = usize::MAX;
    }

    /// It said all of its start-up states.
    pub(crate) fn ready(&self, expected: &[AgentState]) -> bool {
        self.said >= expected.len()
    }
}

/// A turn under way.
#[derive(Debug, Default)]
pub(crate) struct Run {
    /// The command typed through clawmux to begin it (none for a turn seen
    /// on screen, typed at the desk, or followed again after a restart).
    pub(crate) typed: Option<Typed>,
    /// The agent said `working` (or `blocked`) since the turn began: an
    /// agent that speaks OSC 7501 has not taken a command before it says
    /// so (Codex echoes it at once), so its turn cannot have ended earlier.
    pub(crate) worked: bool,
    /// The agent said `done` or `error` while its profile wants the turn's
    /// closing row on screen first (`turn_closed`), and the screen has not
    /// shown it yet: the turn is still taken as worked on.
    pub(crate) end_unconfirmed: bool,
}

impl Run {
    /// When the agent took the command typed through clawmux (none before
    /// it did, and none for a turn not typed through clawmux).
    pub(crate) fn taken_at(&self) -> Option<Millis> {
        self.typed.as_ref().and_then(|t| t.taken_at)
    }
}

/// A command typed through clawmux.
#[derive(Debug)]
pub(crate) struct Typed {
    pub(crate) command: String,
    /// When the screen first showed the agent took it.
    pub(crate) taken_at: Option<Millis>,
    /// The transcript above the input box when it was typed
    /// (`Detector::typed_on`).
    pub(crate) transcript_before: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_up_is_ready_once_its_states_were_said_in_order() {
        let expected = [AgentState::Working, AgentState::Idle];
        let mut start = StartUp::default();
        // Codex was seen to say `idle` first, then `working`, `idle`.
        start.said(AgentState::Idle, &expected);
        assert!(!start.ready(&expected));
        start.said(AgentState::Working, &expected);
        assert!(!start.ready(&expected));
        start.said(AgentState::Idle, &expected);
        assert!(start.ready(&expected));
        assert!(StartUp::default().ready(&[]));
    }
}
