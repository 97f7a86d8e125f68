//! Newtypes for the identifiers the bridge hands around, so that a job's id
//! cannot be passed where an approval's is wanted. Each is a plain string
//! on the wire and on disk, and reads as a `&str`. Each is made only by
//! clawmux (`random`) or by parsing (a card's button, the state file, the
//! event log alike): a [`ProjectName`] that breaks its rule is a
//! [`NameError`], an id that is not one clawmux could have made an
//! [`IdError`], never a value. [`ChatTarget`], where a card goes, is made
//! of them (here, below both the state and the streamed card's record).

use serde::{Deserialize, Serialize};

/// What a name made by its `parse` is besides: parsed from text (and
/// JSON), written back as it, looked up and compared as its text.
macro_rules! name_traits {
    ($name:ident, $error:ident) => {
        impl std::str::FromStr for $name {
            type Err = $error;
            fn from_str(s: &str) -> Result<Self, $error> {
                $name::parse(s)
            }
        }

        impl TryFrom<String> for $name {
            type Error = $error;
            fn try_from(s: String) -> Result<Self, $error> {
                $name::parse(&s)
            }
        }

        impl From<$name> for String {
            fn from(name: $name) -> String {
                name.0
            }
        }

        /// Lookups by `&str` in maps keyed by names (a valid name hashes
        /// as its text).
        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                &self.0 == other
            }
        }
    };
}

macro_rules! string_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            /// A new, unique one (a UUID).
            pub fn random() -> Self {
                $name(uuid::Uuid::new_v4().to_string())
            }

            /// `s` if it is an id clawmux could have made.
            pub fn parse(s: &str) -> Result<Self, IdError> {
                check_id(stringify!($name), s).map(|()| $name(s.to_owned()))
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl std::ops::Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        name_traits!($name, IdError);
    };
}

/// Longest id: a UUID is 36 characters; shorter ones appear in tests.
pub const MAX_ID_LEN: usize = 64;

/// Why a text is not an id clawmux made (a forged or broken button value,
/// a damaged state row).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{kind} {shown:?} is not an id clawmux makes (1 to {MAX_ID_LEN} letters, digits, `-` or `_`)"
)]
pub struct IdError {
    kind: &'static str,
    /// The text, cut to [`MAX_ID_LEN`] characters.
    shown: String,
}

fn check_id(kind: &'static str, s: &str) -> Result<(), IdError> {
    let fits = (1..=MAX_ID_LEN).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if fits {
        return Ok(());
    }
    Err(IdError {
        kind,
        shown: s.chars().take(MAX_ID_LEN).collect(),
    })
}

string_id!(
    /// A chat command's id (a UUID), from the message to its result.
    JobId
);
string_id!(
    /// A `clawmux run`'s id (a UUID), while the daemon folds its outcome.
    RunId
);
string_id!(
    /// A prompt's id (a UUID), as its card's buttons name it.
    ApprovalId
);
string_id!(
    /// The handle of a card clawmux sent: stable across retries and
    /// restarts; the chat's own message id is looked up by it.
    CardHandle
);

/// Longest project name (matches `^[a-z0-9][a-z0-9._-]{0,63}$`).
pub const MAX_PROJECT_NAME: usize = 64;

/// Why a text is not a project name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("project name is empty; use lowercase letters, digits, `.`, `_` or `-`, e.g. `my-app`")]
    Empty,
    #[error("project name `{0}` is too long (at most {MAX_PROJECT_NAME} characters)")]
    TooLong(String),
    #[error(
        "project name `{name}` must start with a lowercase letter or digit and contain only a-z, 0-9, `.`, `_`, `-` (found {found:?})"
    )]
    BadChar { name: String, found: char },
}

/// A project's name: `^[a-z0-9][a-z0-9._-]{0,63}$`, made only by
/// [`ProjectName::parse`] (or `str::parse`, or reading one from JSON).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ProjectName(String);

impl ProjectName {
    /// `name` if it is a project name.
    pub fn parse(name: &str) -> Result<Self, NameError> {
        if name.is_empty() {
            return Err(NameError::Empty);
        }
        if name.len() > MAX_PROJECT_NAME {
            return Err(NameError::TooLong(name.chars().take(80).collect()));
        }
        // A separator is allowed anywhere but first.
        let bad = name.chars().enumerate().find(|&(i, c)| {
            !(c.is_ascii_lowercase()
                || c.is_ascii_digit()
                || (i > 0 && matches!(c, '.' | '_' | '-')))
        });
        match bad {
            Some((_, found)) => Err(NameError::BadChar {
                name: name.into(),
                found,
            }),
            None => Ok(ProjectName(name.to_owned())),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

name_traits!(ProjectName, NameError);

/// Longest tmux session name clawmux names or adopts.
pub const MAX_SESSION_NAME: usize = 128;

/// Why a text is not a session name clawmux uses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{0}` is not a session name clawmux uses: letters, digits, `-`, `_` and `,` (1 to {MAX_SESSION_NAME})"
)]
pub struct SessionNameError(String);

/// A tmux session's name as clawmux keeps it (a project's `cm-…`, the
/// watch session, an adopted session): ASCII letters, digits, `-`, `_` and
/// `,` (a project's `.`, which tmux would turn into `_`), made only by
/// parsing. None of tmux's target syntax (`:`, `.`, `{…}`, `~`, `=`) fits.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SessionName(String);

/// What a project's session name starts with.
const PROJECT_SESSION_PREFIX: &str = "cm-";

impl SessionName {
    /// The session of project `project`: `cm-` and its name, `.` spelled
    /// `,` (never in a project name): tmux turns `.` into `_`, so `a.b`
    /// and `a_b` would share one session. Every project name's characters
    /// fit a session name.
    pub fn of_project(project: &ProjectName) -> SessionName {
        SessionName(format!(
            "{PROJECT_SESSION_PREFIX}{}",
            project.as_str().replace('.', ",")
        ))
    }

    /// The project this is the session of, if it is one's (the inverse of
    /// [`SessionName::of_project`]).
    pub fn project(&self) -> Option<ProjectName> {
        let name = self.0.strip_prefix(PROJECT_SESSION_PREFIX)?;
        ProjectName::parse(&name.replace(',', ".")).ok()
    }

    /// clawmux's own hidden session on a tmux server, where it links the
    /// windows it watches: never a project's (those are `cm-…`).
    pub fn watch() -> SessionName {
        SessionName("clawmux-watch".to_owned())
    }

    /// `name` if it is a session name clawmux uses.
    pub fn parse(name: &str) -> Result<Self, SessionNameError> {
        let fits = (1..=MAX_SESSION_NAME).contains(&name.len())
            && (name.bytes()).all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b','));
        match fits {
            true => Ok(SessionName(name.to_owned())),
            false => Err(SessionNameError(
                name.chars().take(MAX_SESSION_NAME).collect(),
            )),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

name_traits!(SessionName, SessionNameError);

/// Why a text is not a pane named by its session.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a pane named by its session (`SESSION:%N`)")]
pub struct SessionPaneError(String);

/// A pane named by its session and its id (`main:%1`), as the event log
/// names an adopted pane; made from the two typed halves, or by parsing
/// tmux's own spelling of both.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SessionPane {
    pub session: SessionName,
    pub pane: clawmux_control::PaneId,
}

impl SessionPane {
    /// `text` if it is `SESSION:%N` (`%N` as tmux writes it: `%01` is not
    /// `%1`).
    pub fn parse(text: &str) -> Result<Self, SessionPaneError> {
        let bad = || SessionPaneError(text.chars().take(MAX_SESSION_NAME + 12).collect());
        let (session, pane) = text.rsplit_once(':').ok_or_else(bad)?;
        let pane: clawmux_control::PaneId = pane.parse().map_err(|_| bad())?;
        if text.len() != session.len() + 1 + pane.to_string().len() {
            return Err(bad());
        }
        let session = SessionName::parse(session).map_err(|_| bad())?;
        Ok(SessionPane { session, pane })
    }
}

impl std::fmt::Display for SessionPane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.session, self.pane)
    }
}

impl std::str::FromStr for SessionPane {
    type Err = SessionPaneError;
    fn from_str(s: &str) -> Result<Self, SessionPaneError> {
        SessionPane::parse(s)
    }
}

impl TryFrom<String> for SessionPane {
    type Error = SessionPaneError;
    fn try_from(s: String) -> Result<Self, SessionPaneError> {
        SessionPane::parse(&s)
    }
}

impl From<SessionPane> for String {
    fn from(p: SessionPane) -> String {
        p.to_string()
    }
}

/// Longest chat id kept (Feishu's are `oc_` and 32 hex digits).
pub const MAX_CHAT_ID: usize = 128;

/// Why a text is not a chat id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a chat id: letters, digits, `_` and `-` (1 to {MAX_CHAT_ID})")]
pub struct ChatIdError(String);

/// A chat's id (Feishu's `oc_…`), made only by parsing: where a chat event
/// comes in, or the state read back.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ChatId(String);

impl ChatId {
    /// The local console's chat, as the state keeps it (`console`).
    pub fn console() -> ChatId {
        ChatId("console".to_owned())
    }

    /// What a `clawmux run` stands for where a chat is asked for: it has
    /// none, and is never one of [`super::state::State::chats`].
    pub fn run() -> ChatId {
        ChatId("run".to_owned())
    }

    /// What a person's own chat with the bot stands for where a chat is
    /// asked for (its reminders, its rate): their id, which has a chat
    /// id's characters.
    pub fn of_user(user: &UserId) -> ChatId {
        ChatId(user.0.clone())
    }

    /// `id` if it is a chat id.
    pub fn parse(id: &str) -> Result<Self, ChatIdError> {
        let fits = (1..=MAX_CHAT_ID).contains(&id.len())
            && (id.bytes()).all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'));
        match fits {
            true => Ok(ChatId(id.to_owned())),
            false => Err(ChatIdError(id.chars().take(MAX_CHAT_ID).collect())),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

name_traits!(ChatId, ChatIdError);

/// Why a text is not a user id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a user id: letters, digits, `_` and `-` (1 to {MAX_CHAT_ID})")]
pub struct UserIdError(String);

/// A person's id (Feishu's `ou_…` open_id), made only by parsing: an
/// approver named in the config. Cards go to them in their own chat with
/// the bot.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct UserId(String);

impl UserId {
    /// `id` if it is a user id (the same characters as a chat id).
    pub fn parse(id: &str) -> Result<Self, UserIdError> {
        match ChatId::parse(id) {
            Ok(_) => Ok(UserId(id.to_owned())),
            Err(_) => Err(UserIdError(id.chars().take(MAX_CHAT_ID).collect())),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

name_traits!(UserId, UserIdError);

/// A chat id for test code: `id` parsed, panicking if it is not one.
#[cfg(any(test, feature = "test-support"))]
pub fn chat(id: &str) -> ChatId {
    ChatId::parse(id).unwrap_or_else(|e| panic!("test chat id: {e}"))
}

/// A session name for test code: `name` parsed, panicking if it is not one.
#[cfg(any(test, feature = "test-support"))]
pub fn session(name: &str) -> SessionName {
    SessionName::parse(name).unwrap_or_else(|e| panic!("test session name: {e}"))
}

/// A name for test code: `name` parsed, panicking if it is not one.
#[cfg(any(test, feature = "test-support"))]
pub fn project(name: &str) -> ProjectName {
    ProjectName::parse(name).unwrap_or_else(|e| panic!("test project name: {e}"))
}

/// Where a card goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ChatTarget {
    /// A chat (`chat_id`), group or p2p.
    Chat { id: ChatId },
    /// The local console.
    Console,
    /// A `clawmux run` waiting for its outcome: it reads the project's
    /// events, not cards, so none is ever queued for it (see
    /// `State::queue`).
    Run { id: RunId },
    /// A person, in their own chat with the bot (an approver told of a
    /// prompt no chat is there for).
    User { id: UserId },
}

impl ChatTarget {
    /// Is this a `clawmux run` (no chat: no card goes to it)?
    pub fn is_run(&self) -> bool {
        matches!(self, ChatTarget::Run { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only clawmux or parsing makes an id: from text or JSON (a forged
    /// button value, a damaged state row) anything else is refused.
    #[test]
    fn only_parsing_makes_an_id() {
        let made = JobId::random();
        assert_eq!(made.as_str().parse::<JobId>(), Ok(made.clone()));
        let json = serde_json::to_value(&made).unwrap();
        assert_eq!(serde_json::from_value::<JobId>(json).ok(), Some(made));
        let long = "a".repeat(MAX_ID_LEN + 1);
        for bad in ["", "a b", "j1;kill", "\u{202e}x", long.as_str()] {
            let err = bad.parse::<ApprovalId>().unwrap_err();
            assert!(err.to_string().contains("ApprovalId"), "{err}");
            assert!(serde_json::from_value::<CardHandle>(serde_json::json!(bad)).is_err());
        }
        assert_eq!(
            "a1".parse::<ApprovalId>().map(|a| a.to_string()),
            Ok("a1".into())
        );
    }

    #[test]
    fn a_projects_session_names_its_project_and_no_other_does() {
        for name in ["shop", "my.app", "a-b_c"] {
            let project = ProjectName::parse(name).unwrap();
            let session = SessionName::of_project(&project);
            assert_eq!(session.project(), Some(project), "{session}");
        }
        for other in ["clawmux-watch", "work_2", "cm-", "cm-Shop", "xcm-shop"] {
            assert_eq!(
                SessionName::parse(other).unwrap().project(),
                None,
                "{other}"
            );
        }
    }

    /// A session name is what clawmux names or adopts, from text or from
    /// JSON alike: never tmux's target syntax.
    #[test]
    fn session_names_are_made_only_by_parsing() {
        for good in ["cm-shop", "cm-my,app", "clawmux-watch", "work_2"] {
            assert_eq!(SessionName::parse(good).unwrap(), good);
            let json = serde_json::to_string(good).unwrap();
            assert_eq!(serde_json::from_str::<SessionName>(&json).unwrap(), good);
        }
        let long = "s".repeat(MAX_SESSION_NAME + 1);
        for bad in [
            "",
            "a:1",
            "a.b",
            "{marked}",
            "~",
            "=x",
            "a b",
            long.as_str(),
        ] {
            let err = SessionName::parse(bad).unwrap_err();
            assert!(err.to_string().contains("session name"), "{err}");
            let json = serde_json::to_string(bad).unwrap();
            assert!(
                serde_json::from_str::<SessionName>(&json).is_err(),
                "{bad:?}"
            );
        }
    }

    /// A chat id comes from a chat event or the state file: Feishu's
    /// `oc_…`, or the console's; nothing that could be a path or a key.
    #[test]
    fn chat_ids_are_made_only_by_parsing() {
        for good in ["oc_5ad573a6411d72b8305fda3a9c15c70e", "console", "chat-1"] {
            assert_eq!(ChatId::parse(good).unwrap().as_str(), good);
            let json = serde_json::to_string(good).unwrap();
            assert_eq!(serde_json::from_str::<ChatId>(&json).unwrap(), good);
        }
        assert_eq!(ChatId::console(), "console");
        let long = "c".repeat(MAX_CHAT_ID + 1);
        for bad in ["", "oc_1/../x", "oc 1", "oc_1\n", "oc:1", long.as_str()] {
            let err = ChatId::parse(bad).unwrap_err();
            assert!(err.to_string().contains("not a chat id"), "{err}");
            let json = serde_json::to_string(bad).unwrap();
            assert!(serde_json::from_str::<ChatId>(&json).is_err(), "{bad:?}");
        }
    }

    /// Only parsing makes a name, from text or from JSON (a forged card
    /// value, an edited state file).
    #[test]
    fn project_names_are_made_only_by_parsing() {
        assert_eq!(ProjectName::parse("shop").unwrap(), "shop");
        assert_eq!(
            "my-app.2".parse::<ProjectName>().unwrap().as_str(),
            "my-app.2"
        );
        for bad in ["", "Shop", "-x", "a b", "../etc", "a;b", &"x".repeat(65)] {
            assert!(ProjectName::parse(bad).is_err(), "{bad:?}");
            let json = serde_json::to_string(bad).unwrap();
            let err = serde_json::from_str::<ProjectName>(&json).unwrap_err();
            assert!(err.to_string().contains("project name"), "{err}");
        }
        assert_eq!(
            ProjectName::parse("Shop"),
            Err(NameError::BadChar {
                name: "Shop".into(),
                found: 'S'
            })
        );
        let name = ProjectName::parse("web").unwrap();
        assert_eq!(serde_json::to_string(&name).unwrap(), "\"web\"");
        assert_eq!(
            serde_json::from_str::<ProjectName>("\"web\"").unwrap(),
            name
        );
    }

    #[test]
    fn ids_are_plain_strings_on_disk_and_read_as_str() {
        let id = "j-1".parse::<JobId>().unwrap();
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"j-1\"");
        assert_eq!(serde_json::from_str::<JobId>("\"j-1\"").unwrap(), id);
        assert!(id == "j-1" && id.starts_with("j-"));
        let mut map = std::collections::HashMap::new();
        map.insert("a".parse::<ApprovalId>().unwrap(), 1);
        assert_eq!(map.get("a"), Some(&1));
    }

    /// A pane by its session is tmux's spelling of both, and reads back
    /// as written.
    #[test]
    fn a_session_pane_is_made_only_by_parsing() {
        let p = SessionPane::parse("main:%1").unwrap();
        assert_eq!(
            (p.session.as_str(), p.pane),
            ("main", clawmux_control::PaneId(1))
        );
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(json, "\"main:%1\"");
        assert_eq!(serde_json::from_str::<SessionPane>(&json).unwrap(), p);
        for bad in [
            "main", "main:", ":%1", "main:%01", "main:1", "ma in:%1", "a:b:%1", "main:%1 ",
        ] {
            assert!(SessionPane::parse(bad).is_err(), "{bad:?}");
            assert!(
                serde_json::from_value::<SessionPane>(bad.into()).is_err(),
                "{bad:?}"
            );
        }
    }
}
