//! What `serve` tells the person at the console when it starts and when it
//! stops: the projects it found and the prompts still waiting, and at the
//! end what keeps running without it (as its tmux server says) and how to
//! end that. In the terminal's language (`Lang::from_env`); the wording is
//! the catalogue's.

use std::time::Duration;

use clawmux::bridge::config::TmuxConfig;
use clawmux::bridge::panes::agent_pane::PaneSpec;
use clawmux::bridge::texts::Msg;
use clawmux::i18n::Lang;
use clawmux::store::State;
use clawmux::store::db::Migration;
use clawmux::store::ids::SessionName;

/// Longest wait at the stop for the tmux server to list its sessions (a
/// local server answers in milliseconds; a stop should not hang on one
/// that is stuck).
const STOP_ASK_BUDGET: Duration = Duration::from_secs(2);

/// The first words at the console: with no projects, how to make one;
/// otherwise the projects found and the prompts that wait for an answer.
pub fn greeting(state: &State, lang: Lang) -> String {
    if state.projects.is_empty() {
        return Msg::GreetEmpty.template(lang).to_string();
    }
    let names: Vec<&str> = state.projects.keys().map(|p| p.as_str()).collect();
    let names = names.join(", ");
    let mut text = Msg::GreetProjects
        .with(&[("names", &names)])
        .get(lang)
        .to_string();
    text.push_str(&waiting(state, lang));
    text
}

/// The line on stderr about an earlier version's state, if there is
/// something to say (`run` says the same).
pub fn migration(migration: Option<&Migration>, lang: Lang) -> Option<String> {
    clawmux::bridge::daemon::one_shot::migration_note(migration, lang)
}

/// The projects' sessions (`cm-…`) on the `[tmux]` server as it lists them
/// now, whatever the state says: a project the state lost (a salvaged
/// database) still runs there, and one whose session was killed does not.
/// Empty when no server runs; why, when it could not be asked.
pub async fn agent_sessions(tmux: &TmuxConfig) -> Result<Vec<SessionName>, String> {
    let mut spec = PaneSpec::on_server(tmux, SessionName::watch());
    spec.timeout = STOP_ASK_BUDGET;
    let panes = spec.list_panes().await.map_err(|e| e.to_string())?;
    let mut sessions: Vec<SessionName> = (panes.iter())
        .filter_map(|line| line.split_once(':'))
        .filter_map(|(session, _)| SessionName::parse(session).ok())
        .filter(|session| session.project().is_some())
        .collect();
    sessions.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    sessions.dedup();
    Ok(sessions)
}

/// What is left once `serve` stops: the agents' tmux sessions `running`
/// (see [`agent_sessions`]) live on (the next `serve` picks them up), and
/// so do the prompts waiting in them.
pub fn left_running(
    state: &State,
    running: Result<Vec<SessionName>, String>,
    socket: &str,
    lang: Lang,
) -> String {
    let sessions: Vec<String> = match running {
        Ok(sessions) => sessions.iter().map(|s| s.to_string()).collect(),
        Err(error) => {
            let args = [("socket", socket), ("error", error.as_str())];
            let mut text = Msg::LeftRunningUnknown.with(&args).get(lang).to_string();
            text.push_str(&waiting(state, lang));
            return text;
        }
    };
    let mut text = match sessions.first() {
        None => Msg::NothingLeftRunning.template(lang).to_string(),
        Some(first) => {
            let all = sessions.join(", ");
            let args = [("socket", socket), ("sessions", &all), ("first", first)];
            Msg::LeftRunning.with(&args).get(lang).to_string()
        }
    };
    text.push_str(&waiting(state, lang));
    text
}

/// The prompts waiting for an answer, oldest first, one line each.
fn waiting(state: &State, lang: Lang) -> String {
    let mut pending: Vec<_> = state.approvals.values().collect();
    pending.sort_by_key(|a| a.created_ms);
    let mut text = String::new();
    if !pending.is_empty() {
        text.push('\n');
        text.push_str(Msg::WaitingForAnswer.template(lang));
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
        assert!(greeting(&state, Lang::En).contains("/gsd:new-project demo"));
        assert_eq!(
            left_running(&state, Ok(vec![]), "clawmux", Lang::En),
            "No agent was left running."
        );
    }

    #[test]
    fn the_stop_names_the_sessions_that_run_or_says_it_does_not_know() {
        // A project in the state whose session is gone is not named; one
        // the state lost that still runs is.
        let mut state = State::default();
        state
            .projects
            .insert(clawmux::store::ids::project("gone"), Default::default());
        let running = vec![clawmux::store::ids::session("cm-lost")];
        let left = left_running(&state, Ok(running), "clawmux", Lang::En);
        assert!(left.contains("(sessions cm-lost)"), "{left}");
        assert!(!left.contains("cm-gone"), "{left}");
        let left = left_running(&state, Err("no answer".into()), "clawmux", Lang::Zh);
        assert!(left.contains("`tmux -L clawmux ls`"), "{left}");
        assert!(left.contains("no answer"), "{left}");
    }

    #[test]
    fn the_console_notes_read_in_chinese() {
        let mut state = State::default();
        assert!(greeting(&state, Lang::Zh).contains("/gsd:new-project demo"));
        assert!(greeting(&state, Lang::Zh).starts_with("输入"));
        state
            .projects
            .insert(clawmux::store::ids::project("demo"), Default::default());
        let hello = greeting(&state, Lang::Zh);
        assert!(hello.starts_with("找到的项目：demo。"), "{hello}");
        let running = vec![clawmux::store::ids::session("cm-demo")];
        let left = left_running(&state, Ok(running), "clawmux", Lang::Zh);
        assert!(left.contains("`tmux -L clawmux kill-server`"), "{left}");
        assert!(left.starts_with("智能体仍在"), "{left}");
    }
}
