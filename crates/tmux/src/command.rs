//! Commands for tmux's parser: a builder that quotes every argument so it
//! arrives literally, and the checks that keep one command to one line.
//!
//! tmux reads one command a line from a control client and parses it like a
//! shell: `;` separates commands, `#` starts a comment, `$X` and `~` expand,
//! `%if` is a directive, `\` escapes. Inside single quotes nothing is special
//! but `'` itself, and no line break can appear at all. So an argument is
//! written in single quotes, and the characters single quotes cannot carry
//! (`'`, control characters) in a double-quoted escape next to them (tmux
//! joins adjacent quoted parts into one argument, like `sh`).

use std::fmt::Write as _;

use super::error::TmuxError;
use clawmux_control::PaneId;

/// One command line for tmux, built from quoted arguments or given raw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TmuxCommand {
    line: String,
    /// The first argument that cannot be sent (a NUL byte).
    invalid: Option<String>,
}

impl TmuxCommand {
    /// Starts a command; `name` is a tmux command such as `send-keys`.
    pub fn new(name: &str) -> Self {
        let mut command = TmuxCommand {
            line: String::new(),
            invalid: None,
        };
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_lowercase() || b == b'-') {
            command.invalid = Some(format!("{name:?} is not a tmux command name"));
        }
        command.line.push_str(name);
        command
    }

    /// A raw command line, sent as written (the caller quotes). It must be
    /// one simple command: see [`TmuxCommand::line`] for what is refused.
    pub fn raw(line: impl Into<String>) -> Self {
        TmuxCommand {
            line: line.into(),
            invalid: None,
        }
    }

    /// Adds one argument, quoted so tmux takes it literally.
    pub fn arg(mut self, arg: impl AsRef<str>) -> Self {
        let arg = arg.as_ref();
        if arg.contains('\0') && self.invalid.is_none() {
            self.invalid = Some("an argument holds a NUL byte, which tmux cannot receive".into());
        }
        self.line.push(' ');
        push_quoted(&mut self.line, arg);
        self
    }

    /// Adds several arguments.
    pub fn args<S: AsRef<str>>(self, args: impl IntoIterator<Item = S>) -> Self {
        args.into_iter().fold(self, |c, a| c.arg(a))
    }

    /// Adds `-t %N`.
    pub fn target_pane(self, pane: PaneId) -> Self {
        self.arg("-t").arg(pane.to_string())
    }

    /// The line to write (without the newline), or why it cannot be sent.
    ///
    /// Refused: an empty line (tmux would detach the client), a line break
    /// or NUL (tmux would split or cut the line), and an unquoted `;` (two
    /// commands give two reply blocks and break the FIFO correlation).
    pub fn line(&self) -> Result<&str, TmuxError> {
        let refuse = |why: &str| TmuxError::InvalidCommand {
            command: self.line.chars().take(QUOTED_COMMAND_CHARS).collect(),
            why: why.to_string(),
        };
        if let Some(why) = &self.invalid {
            return Err(refuse(why));
        }
        if self.line.trim().is_empty() {
            return Err(refuse("empty command (an empty line detaches the client)"));
        }
        if self.line.contains(['\n', '\r', '\0']) {
            return Err(refuse("line break or NUL in a command line"));
        }
        if has_unquoted_semicolon(&self.line) {
            return Err(refuse("send one command a line, not `a ; b`"));
        }
        Ok(&self.line)
    }
}

/// Longest prefix of a refused command quoted back in the error, in characters.
const QUOTED_COMMAND_CHARS: usize = 200;

impl From<&str> for TmuxCommand {
    fn from(line: &str) -> Self {
        TmuxCommand::raw(line)
    }
}

impl From<String> for TmuxCommand {
    fn from(line: String) -> Self {
        TmuxCommand::raw(line)
    }
}

impl From<&String> for TmuxCommand {
    fn from(line: &String) -> Self {
        TmuxCommand::raw(line.as_str())
    }
}

/// Quotes `arg` for tmux's command parser (see the module doc).
pub fn quote(arg: &str) -> String {
    let mut out = String::with_capacity(arg.len() + 2);
    push_quoted(&mut out, arg);
    out
}

fn push_quoted(out: &mut String, arg: &str) {
    if arg.is_empty() {
        out.push_str("''");
        return;
    }
    let mut in_single = false;
    for ch in arg.chars() {
        let plain = ch != '\'' && !ch.is_ascii_control();
        if plain != in_single {
            out.push('\'');
            in_single = plain;
        }
        if plain {
            out.push(ch);
        } else {
            // A double-quoted escape: `'` is literal there, control
            // characters as tmux's three-digit octal escapes.
            match ch {
                '\'' => out.push_str("\"'\""),
                _ => {
                    let _ = write!(out, "\"\\{:03o}\"", u32::from(ch));
                }
            }
        }
    }
    if in_single {
        out.push('\'');
    }
}

/// Whether `line` holds a `;` outside quotes that is not escaped.
fn has_unquoted_semicolon(line: &str) -> bool {
    let mut quote = None;
    let mut chars = line.chars();
    while let Some(ch) = chars.next() {
        match (quote, ch) {
            (None, '\\') | (Some('"'), '\\') => {
                chars.next();
            }
            (None, '\'' | '"') => quote = Some(ch),
            (Some(q), c) if c == q => quote = None,
            (None, ';') => return true,
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_hostile_text() {
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote(""), "''");
        assert_eq!(quote("it's"), "'it'\"'\"'s'");
        assert_eq!(quote("a\nb\x1b"), "'a'\"\\012\"'b'\"\\033\"");
        assert_eq!(quote("#{x};$y ~\\"), "'#{x};$y ~\\'");
    }

    #[test]
    fn builds_quoted_commands() {
        let cmd = TmuxCommand::new("send-keys")
            .target_pane(PaneId(3))
            .arg("-l")
            .arg("hi ; there");
        assert_eq!(cmd.line().unwrap(), "send-keys '-t' '%3' '-l' 'hi ; there'");
    }

    #[test]
    fn refuses_what_would_break_the_line_protocol() {
        for bad in [
            TmuxCommand::raw(""),
            TmuxCommand::raw("  "),
            TmuxCommand::raw("list-panes\nkill-server"),
            TmuxCommand::raw("list-panes ; kill-server"),
            TmuxCommand::new("send-keys").arg("a\0b"),
            TmuxCommand::new("bad name"),
        ] {
            assert!(
                matches!(bad.line(), Err(TmuxError::InvalidCommand { .. })),
                "{bad:?}"
            );
        }
        for good in [
            "display -p 'a;b'",
            "display -p \"a;b\"",
            "display -p a\\;b",
            "list-panes -F '#{pane_id}'",
        ] {
            assert_eq!(TmuxCommand::raw(good).line().unwrap(), good);
        }
    }
}
