//! What `serve` tells the person at the console when it starts and when it
//! stops: the projects it found and the prompts still waiting, and at the
//! end what keeps running without it and how to end that.

use clawmux::bridge::access::names::session_name;
use clawmux::store::State;

/// The first words at the console: with no projects, how to make one;
/// otherwise the projects found and the prompts that wait for an answer.
pub fn greeting(state: &State) -> String {
    if state.projects.is_empty() {
        return "Type /gsd:help, or /gsd:new-project demo to start.".into();
    }
    let names: Vec<&str> = state.projects.keys().map(String::as_str).collect();
    let mut text = format!(
        "Projects found: {}. Type /gsd:status to see what each is doing, /gsd:use <project> to switch, /gsd:help for the rest.",
        names.join(", ")
    );
    text.push_str(&waiting(state));
    text
}

/// What is left once `serve` stops: the agents' tmux sessions live on (the
/// next `serve` picks them up), and so do the prompts waiting in them.
pub fn left_running(state: &State, socket: &str) -> String {
    let sessions: Vec<String> = (state.projects.iter())
        .filter(|(_, p)| p.adopted.is_none() && p.host.is_none())
        .map(|(name, _)| session_name(name))
        .collect();
    let mut text = if sessions.is_empty() {
        String::from("No agent was left running.")
    } else {
        format!(
            "The agents keep running in tmux server `-L {socket}` (sessions {}); the next `clawmux serve` picks them up. Watch one with `tmux -L {socket} attach -t {}`; end them all with `tmux -L {socket} kill-server`.",
            sessions.join(", "),
            sessions[0]
        )
    };
    text.push_str(&waiting(state));
    text
}

/// The prompts waiting for an answer, oldest first, one line each.
fn waiting(state: &State) -> String {
    let mut pending: Vec<_> = state.approvals.values().collect();
    pending.sort_by_key(|a| a.created_ms);
    let mut text = String::new();
    if !pending.is_empty() {
        text.push_str("\nWaiting for an answer (/gsd:inbox shows their buttons):");
    }
    for a in pending {
        text.push_str(&format!("\n  {}: {}", a.project.as_str(), a.question));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_state_says_how_to_start() {
        let state = State::default();
        assert!(greeting(&state).contains("/gsd:new-project demo"));
        assert_eq!(
            left_running(&state, "clawmux"),
            "No agent was left running."
        );
    }
}
