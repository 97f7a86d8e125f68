//! The agents' second signals in a pane's output: window titles (OSC 0
//! and 2), Codex's state sequence (OSC 7501 `state=…:app=…`) and desktop
//! notifications (OSC 777 `notify;title;body`, OSC 9 `text`). The text
//! model hands each OSC it meets to [`parse`]; the pane keeps the last
//! [`MAX_SIGNALS`] for its watcher.

/// Signals kept per pane until read: a title changes with every spinner
/// frame, so older ones are dropped first.
pub const MAX_SIGNALS: usize = 64;

/// Bytes kept of one signal's text (a title, a notification body).
pub const MAX_SIGNAL_BYTES: usize = 256;

/// What an agent says it is doing (OSC 7501 `state=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentState {
    Working,
    Idle,
    Done,
    Error,
    /// Waiting for the user: a permission or a question.
    Blocked,
}

/// One signal from a pane's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signal {
    /// The window title (OSC 0 or 2).
    Title(String),
    /// OSC 7501: the agent's state, the app, and the kind of block
    /// (`permission`, `question`).
    State {
        state: AgentState,
        app: String,
        kind: Option<String>,
    },
    /// A desktop notification (OSC 777 `notify;title;body` or OSC 9).
    Notification { title: String, body: String },
}

/// The signal an OSC's parameters (split on `;` by the parser) carry.
pub(crate) fn parse(params: &[&[u8]]) -> Option<Signal> {
    let (code, rest) = params.split_first()?;
    let text = |b: &[u8]| bounded(&String::from_utf8_lossy(b));
    match *code {
        b"0" | b"2" => Some(Signal::Title(text(&rest.join(&b';')))),
        b"7501" => state(&String::from_utf8_lossy(&rest.join(&b';'))),
        b"777" => match rest {
            [kind, title, body @ ..] if *kind == b"notify" => Some(Signal::Notification {
                title: text(title),
                body: text(&body.join(&b';')),
            }),
            _ => None,
        },
        // OSC 9;4 is a progress bar, not a notification.
        b"9" if rest.first().is_some_and(|f| *f != b"4") => Some(Signal::Notification {
            title: String::new(),
            body: text(&rest.join(&b';')),
        }),
        _ => None,
    }
}

/// `state=blocked:app=codex:kind=permission`.
fn state(text: &str) -> Option<Signal> {
    let mut state = None;
    let mut app = String::new();
    let mut kind = None;
    for field in text.split(':') {
        match field.split_once('=') {
            Some(("state", v)) => {
                state = Some(match v {
                    "working" => AgentState::Working,
                    "idle" => AgentState::Idle,
                    "done" => AgentState::Done,
                    "error" => AgentState::Error,
                    "blocked" => AgentState::Blocked,
                    _ => return None,
                })
            }
            Some(("app", v)) => app = bounded(v),
            Some(("kind", v)) => kind = Some(bounded(v)),
            _ => {}
        }
    }
    Some(Signal::State {
        state: state?,
        app,
        kind,
    })
}

/// `text` cut to [`MAX_SIGNAL_BYTES`] on a character boundary, control
/// characters removed.
fn bounded(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars().filter(|c| !c.is_control()) {
        if out.len() + c.len_utf8() > MAX_SIGNAL_BYTES {
            break;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_states_and_notifications_are_read() {
        assert_eq!(
            parse(&[b"0", "⠙ make three | ws".as_bytes()]),
            Some(Signal::Title("⠙ make three | ws".into()))
        );
        assert_eq!(
            parse(&[b"7501", b"state=blocked:app=codex:kind=permission"]),
            Some(Signal::State {
                state: AgentState::Blocked,
                app: "codex".into(),
                kind: Some("permission".into())
            })
        );
        assert_eq!(
            parse(&[b"777", b"notify", b"Gemini CLI", b"Approval required"]),
            Some(Signal::Notification {
                title: "Gemini CLI".into(),
                body: "Approval required".into()
            })
        );
        assert_eq!(parse(&[b"7501", b"state=sleeping:app=x"]), None);
        assert_eq!(parse(&[b"9", b"4", b"1", b"50"]), None);
        assert_eq!(parse(&[b"8", b"", b"http://x"]), None);
        assert_eq!(parse(&[]), None);
        let long = "x".repeat(1000);
        let Some(Signal::Title(t)) = parse(&[b"2", long.as_bytes()]) else {
            panic!("no title")
        };
        assert_eq!(t.len(), MAX_SIGNAL_BYTES);
    }
}
