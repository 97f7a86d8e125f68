//! What `serve` tells the person at the console when it starts and when it
//! stops: the projects it found and the prompts still waiting, and at the
//! end what keeps running without it and how to end that. In the
//! terminal's language (`Lang::from_env`); the wording is the catalogue's.

use clawmux::bridge::names::session_name;
use clawmux::bridge::texts::Msg;
use clawmux::i18n::Lang;
use clawmux::store::State;
use clawmux::store::db::Migration;

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

/// What is left once `serve` stops: the agents' tmux sessions live on (the
/// next `serve` picks them up), and so do the prompts waiting in them.
pub fn left_running(state: &State, socket: &str, lang: Lang) -> String {
    let sessions: Vec<String> = (state.projects.iter())
        .filter(|(_, p)| p.adopted.is_none() && p.host.is_none())
        .map(|(name, _)| session_name(name).to_string())
        .collect();
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
            left_running(&state, "clawmux", Lang::En),
            "No agent was left running."
        );
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
        let left = left_running(&state, "clawmux", Lang::Zh);
        assert!(left.contains("`tmux -L clawmux kill-server`"), "{left}");
        assert!(left.starts_with("智能体仍在"), "{left}");
    }
}
