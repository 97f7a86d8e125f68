//! Named keys a chat may send to a project's pane (`/gsd:keys`): the few
//! an approver needs to steer an agent by hand (Esc, Enter, Tab,
//! Shift+Tab, arrows, Ctrl-C), each with its tmux key name. Nothing else is typed this way:
//! text goes through the typing path, which guards the input box.

use std::fmt;

/// Keys one `/gsd:keys` sends at most: a few moves through a menu, not a
/// script.
pub const MAX_KEYS_PER_COMMAND: usize = 16;

/// A key `/gsd:keys` can send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamedKey {
    Esc,
    Enter,
    Tab,
    /// Claude Code cycles its permission modes with it, Codex its
    /// collaboration modes.
    ShiftTab,
    Up,
    Down,
    Left,
    Right,
    CtrlC,
}

impl NamedKey {
    /// Every key, as `/gsd:keys` spells it.
    pub const ALL: [NamedKey; 9] = [
        NamedKey::Esc,
        NamedKey::Enter,
        NamedKey::Tab,
        NamedKey::ShiftTab,
        NamedKey::Up,
        NamedKey::Down,
        NamedKey::Left,
        NamedKey::Right,
        NamedKey::CtrlC,
    ];

    /// The key a word names (case-insensitive; `ctrl-c`, `c-c` and `^c`
    /// are Ctrl-C, `escape` is Esc, `return` is Enter, `shift-tab`,
    /// `shift+tab` and `btab` are Shift+Tab).
    pub fn parse(word: &str) -> Option<NamedKey> {
        Some(match word.to_ascii_lowercase().as_str() {
            "esc" | "escape" => NamedKey::Esc,
            "enter" | "return" => NamedKey::Enter,
            "tab" => NamedKey::Tab,
            "shift-tab" | "shift+tab" | "s-tab" | "btab" => NamedKey::ShiftTab,
            "up" => NamedKey::Up,
            "down" => NamedKey::Down,
            "left" => NamedKey::Left,
            "right" => NamedKey::Right,
            "ctrl-c" | "c-c" | "^c" => NamedKey::CtrlC,
            _ => return None,
        })
    }

    /// The key as `tmux send-keys` names it.
    pub fn tmux_name(self) -> &'static str {
        match self {
            NamedKey::Esc => "Escape",
            NamedKey::Enter => "Enter",
            NamedKey::Tab => "Tab",
            NamedKey::ShiftTab => "BTab",
            NamedKey::Up => "Up",
            NamedKey::Down => "Down",
            NamedKey::Left => "Left",
            NamedKey::Right => "Right",
            NamedKey::CtrlC => "C-c",
        }
    }

    /// The key as chat and the event log show it.
    pub fn label(self) -> &'static str {
        match self {
            NamedKey::Esc => "Esc",
            NamedKey::Enter => "Enter",
            NamedKey::Tab => "Tab",
            NamedKey::ShiftTab => "Shift+Tab",
            NamedKey::Up => "Up",
            NamedKey::Down => "Down",
            NamedKey::Left => "Left",
            NamedKey::Right => "Right",
            NamedKey::CtrlC => "Ctrl-C",
        }
    }
}

impl fmt::Display for NamedKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// What is wrong with the keys `/gsd:keys` was given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeysError {
    #[error("say which keys: `/gsd:keys <key>…` with {}", names())]
    None,
    #[error("at most {MAX_KEYS_PER_COMMAND} keys at a time, not {0}")]
    TooMany(usize),
    /// The word, cut to 32 characters.
    #[error("`{0}` is not a key clawmux sends: {keys}", keys = names())]
    Unknown(String),
}

/// The keys `/gsd:keys ARGS` names, or what is wrong with them.
pub fn parse_keys(args: &str) -> Result<Vec<NamedKey>, KeysError> {
    let words: Vec<&str> = args.split_whitespace().collect();
    if words.is_empty() {
        return Err(KeysError::None);
    }
    if words.len() > MAX_KEYS_PER_COMMAND {
        return Err(KeysError::TooMany(words.len()));
    }
    words
        .iter()
        .map(|w| NamedKey::parse(w).ok_or_else(|| KeysError::Unknown(w.chars().take(32).collect())))
        .collect()
}

/// The key names, for usage messages.
pub fn names() -> String {
    let all: Vec<&str> = NamedKey::ALL.iter().map(|k| k.label()).collect();
    all.join(", ")
}

/// Keys as shown in chat and the log: `Esc Down Enter`.
pub fn labels(keys: &[NamedKey]) -> String {
    let all: Vec<&str> = keys.iter().map(|k| k.label()).collect();
    all.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parse_by_name_and_nothing_else() {
        assert_eq!(
            parse_keys("esc Down  ENTER ctrl-c ^C tab Shift+Tab btab"),
            Ok(vec![
                NamedKey::Esc,
                NamedKey::Down,
                NamedKey::Enter,
                NamedKey::CtrlC,
                NamedKey::CtrlC,
                NamedKey::Tab,
                NamedKey::ShiftTab,
                NamedKey::ShiftTab
            ])
        );
        assert_eq!(NamedKey::ShiftTab.tmux_name(), "BTab");
        assert_eq!(parse_keys(""), Err(KeysError::None));
        assert_eq!(parse_keys("esc rm"), Err(KeysError::Unknown("rm".into())));
        let many = vec!["up"; MAX_KEYS_PER_COMMAND + 1].join(" ");
        assert_eq!(parse_keys(&many), Err(KeysError::TooMany(17)));
        assert_eq!(NamedKey::CtrlC.tmux_name(), "C-c");
        assert_eq!(labels(&[NamedKey::Esc, NamedKey::Enter]), "Esc Enter");
    }
}
