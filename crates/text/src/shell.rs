//! POSIX shell words: every command line clawmux builds for `sh` (a pane's
//! agent, a remote host's `ssh … sh -c`, the test kit's agent launchers) is
//! quoted here, and every one it reads (`env K=V claude …`) is split here,
//! by the `shlex` crate, with typed errors. A NUL byte cannot be carried by
//! any shell word (C strings end at it), so quoting one is refused rather
//! than truncated; a line with an unterminated quote or a trailing
//! backslash does not split.
//!
//! tmux's own command language (`send-keys '…'` on the control client) is
//! not a shell: its quoting stays in `tmux::command`. Two hand-written
//! ones remain to move here: `hooks::settings`'s quoter and
//! `agents::claude::shell_words`.

use std::borrow::Cow;

use crate::text_escape::{Keep, escape_controls};

/// Characters of an offending word shown in an error.
const SHOWN_CHARS: usize = 80;

/// A word or a line the shell cannot take as it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShellError {
    #[error("cannot pass a word with a NUL byte to the shell: {shown}")]
    Nul { shown: String },
    #[error("not a shell command line (an unterminated quote or a trailing backslash): {shown}")]
    Unbalanced { shown: String },
}

/// `text` for an error message: control characters made visible, cut to
/// [`SHOWN_CHARS`].
fn shown(text: &str) -> String {
    let cut: String = text.chars().take(SHOWN_CHARS).collect();
    let more = if cut.len() < text.len() { "…" } else { "" };
    format!("{}{more}", escape_controls(&cut, Keep::Nothing))
}

/// `word` as one shell word (unchanged when nothing in it is special).
pub fn quote(word: &str) -> Result<Cow<'_, str>, ShellError> {
    shlex::try_quote(word).map_err(|_| ShellError::Nul { shown: shown(word) })
}

/// `word` quoted, a NUL byte kept in it: for a line whose every consumer
/// refuses a NUL itself (tmux's command parser, `exec` of any program), so
/// that the refusal comes from there, with its own error, and nothing is
/// cut. Builders that cannot fail use it (the test kit's command lines,
/// the load bench, a pane's agent command).
pub fn quote_keeping_nul(word: &str) -> Cow<'_, str> {
    // Infallible: NUL is the only word shlex refuses, and it is allowed.
    (shlex::Quoter::new().allow_nul(true).quote(word)).unwrap_or(Cow::Borrowed(word))
}

/// `words` as one command line, each quoted as needed.
pub fn join<'a>(words: impl IntoIterator<Item = &'a str>) -> Result<String, ShellError> {
    let words: Vec<&str> = words.into_iter().collect();
    shlex::try_join(words.iter().copied()).map_err(|_| ShellError::Nul {
        shown: shown(words.iter().find(|w| w.contains('\0')).unwrap_or(&"")),
    })
}

/// A command line's words, quotes removed (no expansion: `$x` stays
/// `$x`, and a `#` starting a word begins a comment, as in `sh`).
pub fn split(line: &str) -> Result<Vec<String>, ShellError> {
    shlex::split(line).ok_or_else(|| ShellError::Unbalanced { shown: shown(line) })
}

/// The value a leading `env` (or several: `env A=1 env B=2 cmd`) gives
/// variable `name` in the command line `command`: `env HOME=/x claude`
/// gives `/x` for `HOME`. `None` when no leading `env` assigns it, or the
/// line does not split.
pub fn env_assignment(command: &str, name: &str) -> Option<String> {
    let words = split(command).ok()?;
    let mut words = words.into_iter();
    if words.next().as_deref() != Some("env") {
        return None;
    }
    let mut found = None;
    for w in words {
        if let Some(value) = w.strip_prefix(name).and_then(|r| r.strip_prefix('=')) {
            found = Some(value.to_string());
        } else if w != "env" && !w.contains('=') && !w.starts_with('-') {
            break;
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// What `sh` makes of `line`'s words: each printed, NUL-separated.
    fn sh_words(line: &str) -> Vec<String> {
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!("printf '%s\\0' {line}"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        let mut words: Vec<String> = text.split('\0').map(str::to_owned).collect();
        words.pop();
        words
    }

    const HOSTILE: &[&str] = &[
        "plain",
        "",
        "it's",
        "say \"hi\"",
        "$(touch /tmp/clawmux-pwned)",
        "`id`",
        "a\nb\r\tc",
        "back\\slash\\",
        "~user/*.rs ; rm -rf / &",
        "!event #comment",
        "\u{1b}]2;title\u{7}",
        "名前 with ünïcode",
    ];

    /// The real `sh` reads every quoted word back as it was: nothing
    /// expands, runs or splits.
    #[test]
    fn sh_reads_quoted_words_back_unchanged() {
        for word in HOSTILE {
            let quoted = quote(word).unwrap();
            assert_eq!(sh_words(&quoted), [*word], "{quoted}");
        }
        let line = join(HOSTILE.iter().copied()).unwrap();
        assert_eq!(sh_words(&line), HOSTILE, "{line}");
        // Our splitter agrees with sh.
        assert_eq!(split(&line).unwrap(), HOSTILE, "{line}");
    }

    #[test]
    fn a_nul_is_refused_with_the_word_shown() {
        let err = quote("a\0b").unwrap_err();
        assert_eq!(
            err,
            ShellError::Nul {
                shown: "a\\x00b".into()
            }
        );
        assert!(err.to_string().contains("NUL byte"), "{err}");
        assert!(matches!(join(["ok", "x\0"]), Err(ShellError::Nul { .. })));
        // Kept, for a consumer that refuses it: a NUL still in the word.
        assert!(quote_keeping_nul("a b\0c").contains('\0'));
        assert_eq!(sh_words(&quote_keeping_nul("$(id) it's")), ["$(id) it's"]);
    }

    #[test]
    fn splits_like_sh_and_refuses_what_sh_would() {
        assert_eq!(
            split(r#"env 'A=b c' B="d e" f\ g  claude"#).unwrap(),
            ["env", "A=b c", "B=d e", "f g", "claude"]
        );
        assert_eq!(split("  ").unwrap(), Vec::<String>::new());
        assert_eq!(split("''").unwrap(), [""]);
        for bad in ["claude 'unterminated", "say \"hi", "trailing\\"] {
            assert!(
                matches!(split(bad), Err(ShellError::Unbalanced { .. })),
                "{bad}"
            );
        }
    }
}
