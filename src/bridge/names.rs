//! Validation of what chat users name and type: project names, and text
//! that will be typed into a pane.

/// Longest message typed into an agent: GSD commands are short; a long paste
/// belongs in a file, and tmux's command line has its own limits.
pub const MAX_TYPED_CHARS: usize = 4000;
pub use crate::store::ids::{MAX_PROJECT_NAME, NameError};
use crate::store::ids::{ProjectName, SessionName};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TextError {
    #[error("the message is empty")]
    Empty,
    #[error(
        "the message is {0} characters long; at most {MAX_TYPED_CHARS} can be typed into the agent"
    )]
    TooLong(usize),
    #[error(
        "the message contains a control character ({0:?}); only printable text is typed into the agent"
    )]
    Control(char),
}

/// Checks a host name: the same rule as a project name (it appears in
/// chat as `project@host` and in cards), reported as a host name.
pub fn validate_host(name: &str) -> Result<(), HostNameError> {
    validate_project(name).map_err(HostNameError)
}

/// A host name broke the project-name rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .0.to_string().replacen("project name", "host name", 1))]
pub struct HostNameError(pub NameError);

/// Why `PROJECT[@HOST]` was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProjectAtHostError {
    #[error(transparent)]
    Project(#[from] NameError),
    #[error(transparent)]
    Host(#[from] HostNameError),
}

/// `web@box` -> (`web`, Some(`box`)); `web` -> (`web`, None). Both parts
/// validated: the project's name as parsed.
pub fn split_project_host(text: &str) -> Result<(ProjectName, Option<&str>), ProjectAtHostError> {
    let (project, host) = match text.split_once('@') {
        Some((p, h)) => (p, Some(h)),
        None => (text, None),
    };
    let project = ProjectName::parse(project)?;
    if let Some(host) = host {
        validate_host(host)?;
    }
    Ok((project, host))
}

/// Checks a project name against `^[a-z0-9][a-z0-9._-]{0,63}$` (the rule
/// of [`crate::store::ids::ProjectName::parse`]).
pub fn validate_project(name: &str) -> Result<(), NameError> {
    crate::store::ids::ProjectName::parse(name).map(|_| ())
}

/// The tmux session of a project. tmux turns `.` into `_` in session names,
/// so `.` is spelled `,` (never valid in a project name): distinct projects
/// keep distinct sessions.
pub fn session_name(project: &ProjectName) -> SessionName {
    SessionName::of_project(project)
}

/// Checks text before it is typed into a pane: printable, bounded.
pub fn validate_typed_text(text: &str) -> Result<(), TextError> {
    if text.trim().is_empty() {
        return Err(TextError::Empty);
    }
    let n = text.chars().count();
    if n > MAX_TYPED_CHARS {
        return Err(TextError::TooLong(n));
    }
    // Line breaks are text (a multi-line message is pasted whole); any
    // other control character would be a key to the terminal.
    match text.chars().find(|c| c.is_control() && *c != '\n') {
        Some(c) => Err(TextError::Control(c)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_names() {
        for ok in ["a", "my-app", "app.v2", "x_1", "0day", &"a".repeat(64)] {
            assert_eq!(validate_project(ok), Ok(()), "{ok}");
        }
        assert_eq!(validate_project(""), Err(NameError::Empty));
        assert!(matches!(
            validate_project(&"a".repeat(65)),
            Err(NameError::TooLong(_))
        ));
        for bad in [
            "-a", ".a", "_a", "A", "a b", "a/b", "a;b", "é", "a$(x)", "a\n",
        ] {
            assert!(
                matches!(validate_project(bad), Err(NameError::BadChar { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn project_at_host() {
        assert_eq!(
            split_project_host("web@box"),
            Ok((crate::store::ids::project("web"), Some("box")))
        );
        assert_eq!(
            split_project_host("web"),
            Ok((crate::store::ids::project("web"), None))
        );
        let e = split_project_host("web@Box").unwrap_err();
        assert!(e.to_string().starts_with("host name `Box`"), "{e}");
        assert!(
            split_project_host("web@")
                .unwrap_err()
                .to_string()
                .contains("empty")
        );
        assert!(split_project_host("web@a@b").is_err());
        assert!(split_project_host("@box").is_err());
        assert!(validate_host("a;b").is_err());
    }

    #[test]
    fn session_names_stay_distinct() {
        let session = |name: &str| session_name(&crate::store::ids::project(name));
        assert_ne!(session("a.b"), session("a_b"));
        assert_eq!(session("a.b"), "cm-a,b");
    }

    #[test]
    fn typed_text() {
        assert_eq!(
            validate_typed_text("/gsd:plan-phase 2 ; C-c $(x) 'q\""),
            Ok(())
        );
        assert_eq!(validate_typed_text("  "), Err(TextError::Empty));
        assert_eq!(
            validate_typed_text("a\u{1b}[2J"),
            Err(TextError::Control('\u{1b}'))
        );
        // Line breaks are text (pasted whole); a carriage return is a key.
        assert_eq!(validate_typed_text("a\nb"), Ok(()));
        assert_eq!(validate_typed_text("a\rb"), Err(TextError::Control('\r')));
        assert!(matches!(
            validate_typed_text(&"x".repeat(MAX_TYPED_CHARS + 1)),
            Err(TextError::TooLong(_))
        ));
    }
}
