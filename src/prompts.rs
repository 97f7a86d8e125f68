//! `{{variable}}` prompt templates: the built-in ones from `prompts/`
//! (embedded at build time), overridable file by file from a directory, and
//! their rendering.
//!
//! Rendering is one pass of safe substitution: `{{name}}` (spaces inside the
//! braces allowed) becomes the value of `name`; a placeholder with no value
//! stays as written and is listed in [`Rendered::unresolved`]; `{{{{` renders
//! as a literal `{{`. Values are never scanned again, so pane output that
//! contains `{{x}}` is inserted verbatim.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The built-in templates, by name.
const BUILTIN: [(&str, &str); 3] = [
    (
        "context_recovery",
        include_str!("../prompts/context_recovery.md"),
    ),
    (
        "command_mapping",
        include_str!("../prompts/command_mapping.md"),
    ),
    (
        "error_recovery",
        include_str!("../prompts/error_recovery.md"),
    ),
];

/// Names `load` accepts.
pub const NAMES: [&str; 3] = [BUILTIN[0].0, BUILTIN[1].0, BUILTIN[2].0];

/// Largest override file read; the built-in templates are about 3 KiB.
pub const MAX_TEMPLATE_BYTES: u64 = 256 * 1024;

/// Longest text between `{{` and `}}` that can be a placeholder. Bounds the
/// look-ahead so rendering stays linear on text full of `{{`.
const MAX_PLACEHOLDER_BYTES: usize = 64;

#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    #[error("unknown prompt {0:?}: expected one of {names}", names = NAMES.join(", "))]
    Unknown(String),
    #[error("cannot read prompt directory {path}")]
    Dir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read prompt template {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("prompt template {path} is larger than {MAX_TEMPLATE_BYTES} bytes")]
    TooLarge { path: PathBuf },
    #[error("prompt template {path} is not UTF-8")]
    NotUtf8 { path: PathBuf },
    #[error("prompt template {path} is a directory, not a file")]
    IsDir { path: PathBuf },
}

/// A template's text and where it came from.
#[derive(Debug, Clone)]
pub struct Template {
    name: &'static str,
    source: String,
    origin: Option<PathBuf>,
}

impl Template {
    /// The built-in template `name`.
    pub fn builtin(name: &str) -> Result<Template, PromptError> {
        BUILTIN
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(name, text)| Template {
                name,
                source: text.to_owned(),
                origin: None,
            })
            .ok_or_else(|| PromptError::Unknown(name.to_owned()))
    }

    /// `dir/<name>.md` when `dir` is given and has that file, else the
    /// built-in template. A `dir` that cannot be read is an error, so a
    /// mistyped directory is not silently ignored.
    pub fn load(name: &str, dir: Option<&Path>) -> Result<Template, PromptError> {
        let mut template = Template::builtin(name)?;
        let Some(dir) = dir else {
            return Ok(template);
        };
        fs::read_dir(dir).map_err(|source| PromptError::Dir {
            path: dir.to_path_buf(),
            source,
        })?;
        let path = dir.join(format!("{name}.md"));
        let file = match fs::File::open(&path) {
            // Opening a directory succeeds on Linux and only the read fails:
            // say what is wrong instead of passing on the OS error.
            Ok(file) if file.metadata().is_ok_and(|m| m.is_dir()) => {
                return Err(PromptError::IsDir { path });
            }
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(template),
            Err(source) => return Err(PromptError::Read { path, source }),
        };
        let mut bytes = Vec::new();
        file.take(MAX_TEMPLATE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|source| PromptError::Read {
                path: path.clone(),
                source,
            })?;
        if bytes.len() as u64 > MAX_TEMPLATE_BYTES {
            return Err(PromptError::TooLarge { path });
        }
        template.source =
            String::from_utf8(bytes).map_err(|_| PromptError::NotUtf8 { path: path.clone() })?;
        template.origin = Some(path);
        Ok(template)
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The template text as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The override file it was read from; `None` for the built-in one.
    pub fn origin(&self) -> Option<&Path> {
        self.origin.as_deref()
    }

    /// The variables the template uses, each once, in order of appearance.
    pub fn variables(&self) -> Vec<&str> {
        let mut names = Vec::new();
        scan(&self.source, |piece| {
            if let Piece::Var { name, .. } = piece
                && !names.contains(&name)
            {
                names.push(name);
            }
        });
        names
    }

    pub fn render(&self, vars: &[(&str, &str)]) -> Rendered {
        render(&self.source, vars)
    }
}

/// A rendered template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub text: String,
    /// Placeholders that had no value (left in `text` as written), each once.
    pub unresolved: Vec<String>,
    /// Given variables the template does not use (likely typos).
    pub unused: Vec<String>,
}

/// Renders `source` with `vars`; for a repeated name the last value wins.
pub fn render(source: &str, vars: &[(&str, &str)]) -> Rendered {
    let mut text = String::with_capacity(source.len());
    let mut unresolved: Vec<String> = Vec::new();
    let mut used: Vec<&str> = Vec::new();
    scan(source, |piece| match piece {
        Piece::Text(t) => text.push_str(t),
        Piece::Var { name, raw } => match vars.iter().rev().find(|(k, _)| *k == name) {
            Some((_, value)) => {
                text.push_str(value);
                used.push(name);
            }
            None => {
                text.push_str(raw);
                if !unresolved.iter().any(|u| u == name) {
                    unresolved.push(name.to_owned());
                }
            }
        },
    });
    let mut unused: Vec<String> = Vec::new();
    for (key, _) in vars {
        if !used.contains(key) && !unused.iter().any(|u| u == key) {
            unused.push((*key).to_owned());
        }
    }
    Rendered {
        text,
        unresolved,
        unused,
    }
}

/// Whether `s` can name a variable: ASCII letters, digits and `_`, not
/// starting with a digit.
pub fn is_variable_name(s: &str) -> bool {
    let mut bytes = s.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

enum Piece<'a> {
    Text(&'a str),
    /// `name` is the trimmed variable name, `raw` the placeholder as written.
    Var {
        name: &'a str,
        raw: &'a str,
    },
}

/// Splits `source` into literal text and placeholders, in order.
fn scan<'a>(source: &'a str, mut emit: impl FnMut(Piece<'a>)) {
    let mut rest = source;
    while let Some(at) = rest.find("{{") {
        emit(Piece::Text(&rest[..at]));
        let after = &rest[at + 2..];
        if let Some(tail) = after.strip_prefix("{{") {
            emit(Piece::Text("{{"));
            rest = tail;
            continue;
        }
        match placeholder_len(after) {
            Some((name, len)) => {
                emit(Piece::Var {
                    name,
                    raw: &rest[at..at + 2 + len],
                });
                rest = &after[len..];
            }
            None => {
                emit(Piece::Text("{{"));
                rest = after;
            }
        }
    }
    emit(Piece::Text(rest));
}

/// For text just after `{{`: the variable name and the length up to and
/// including the closing `}}`, if a placeholder starts here.
fn placeholder_len(after: &str) -> Option<(&str, usize)> {
    let window = &after.as_bytes()[..after.len().min(MAX_PLACEHOLDER_BYTES + 2)];
    let close = memchr::memmem::find(window, b"}}")?;
    // `}` is ASCII, so `close` is a char boundary.
    let name = after[..close].trim_matches(' ');
    is_variable_name(name).then_some((name, close + 2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitutes_known_and_keeps_unknown() {
        let r = render(
            "Hi {{name}}, {{ greeting }} {{missing}} {{name}}.",
            &[("name", "Ann"), ("greeting", "hello")],
        );
        assert_eq!(r.text, "Hi Ann, hello {{missing}} Ann.");
        assert_eq!(r.unresolved, ["missing"]);
        assert!(r.unused.is_empty());
    }

    #[test]
    fn four_braces_are_a_literal_pair() {
        assert_eq!(render("{{{{", &[]).text, "{{");
        assert_eq!(
            render("a {{{{name}} b", &[("name", "x")]).text,
            "a {{name}} b"
        );
        let r = render("{{{{name}} {{name}}", &[("name", "x")]);
        assert_eq!(r.text, "{{name}} x");
        assert!(r.unresolved.is_empty());
        assert_eq!(render("{{{{{{{{", &[]).text, "{{{{");
    }

    #[test]
    fn values_are_not_rendered_again() {
        let r = render("{{out}}", &[("out", "{{secret}} {{{{"), ("secret", "leak")]);
        assert_eq!(r.text, "{{secret}} {{{{");
        assert_eq!(r.unused, ["secret"]);
    }

    #[test]
    fn text_that_is_not_a_placeholder_is_left_alone() {
        for s in [
            "{{",
            "}}",
            "{{ }}",
            "{{not a name}}",
            "{{1abc}}",
            "{{{name}}}",
            "{{name",
            "json {\"a\": {\"b\": 1}}",
            "{{é}}",
        ] {
            let r = render(s, &[("name", "x")]);
            assert_eq!(r.text, s, "{s}");
            assert!(r.unresolved.is_empty(), "{s}");
        }
        let long = format!("{{{{{}}}}}", "a".repeat(MAX_PLACEHOLDER_BYTES + 1));
        assert_eq!(render(&long, &[]).text, long);
    }

    #[test]
    fn last_value_wins_and_unused_are_reported() {
        let r = render("{{a}}", &[("a", "1"), ("b", "2"), ("a", "3"), ("b", "4")]);
        assert_eq!(r.text, "3");
        assert_eq!(r.unused, ["b"]);
    }

    #[test]
    fn builtin_templates_use_the_documented_variables() {
        let expect: [(&str, &[&str]); 3] = [
            (
                "context_recovery",
                &[
                    "project",
                    "workspace",
                    "reason",
                    "last_command",
                    "last_output_tail",
                ],
            ),
            ("command_mapping", &["project", "message"]),
            (
                "error_recovery",
                &["project", "command", "error_line", "error_context"],
            ),
        ];
        for (name, vars) in expect {
            let t = Template::builtin(name).unwrap();
            assert_eq!(t.variables(), vars, "{name}");
            let values: Vec<(&str, &str)> = vars.iter().map(|v| (*v, "VALUE")).collect();
            let r = t.render(&values);
            assert!(r.unresolved.is_empty() && r.unused.is_empty(), "{name}");
            assert!(!r.text.contains("{{"), "{name}");
        }
        assert!(matches!(
            Template::builtin("nope"),
            Err(PromptError::Unknown(_))
        ));
    }

    #[test]
    fn context_recovery_can_be_typed_into_claude_code() {
        // Claude Code reads a leading `/` as a slash command, `!` as a shell
        // command and `#` as a memory note.
        let text = Template::builtin("context_recovery")
            .unwrap()
            .render(&[])
            .text;
        assert!(!text.starts_with(['/', '!', '#']), "{text}");
    }
}
