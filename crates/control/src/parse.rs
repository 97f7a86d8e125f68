//! One whole control-mode line to a typed [`Notification`] (nom; private).
//!
//! Each parser is named after its tmux token and documents its grammar. The
//! line's name picks the parser; a name tmux adds later is
//! [`Notification::Unknown`], data rather than an error.
//!
//! Long with its tests (one case per notification and malformed line); the code
//! itself is well under 600 lines.

use bytes::Bytes;
use nom::bytes::complete::{tag, take_till, take_until};
use nom::character::complete::{char, digit1};
use nom::combinator::{all_consuming, map, map_opt, opt, rest};
use nom::sequence::preceded;
use nom::{IResult, Parser};
use serde::{Serialize, Serializer};

use super::ids::{PaneId, SessionId, WindowId};
use super::unescape::unescape;

/// The three fields of `%begin`/`%end`/`%error`: `<epoch-secs> <number> <flags>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Guard {
    /// Seconds since the epoch when tmux started the command.
    pub time: u64,
    /// tmux's server-wide command counter (cannot be predicted).
    pub number: u64,
    /// 1 when the command came from this client's stdin, 0 otherwise.
    pub flags: u32,
}

/// One control-mode line. Text fields are decoded as lossy UTF-8 (tmux
/// writes UTF-8 when started with `LANG=C.UTF-8`); pane data stays bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Notification {
    /// `%begin`: a reply block opens.
    Begin(Guard),
    /// `%end`: a reply block closes, the command succeeded.
    End(Guard),
    /// `%error`: a reply block closes, the command failed.
    Error(Guard),
    /// `%output %<pane> <data>`: what the pane's program wrote, unescaped.
    Output {
        pane: PaneId,
        #[serde(rename = "text", serialize_with = "lossy")]
        data: Bytes,
    },
    /// `%extended-output %<pane> <age-ms> … : <data>` (with `pause-after`).
    ExtendedOutput {
        pane: PaneId,
        age_ms: u64,
        #[serde(rename = "text", serialize_with = "lossy")]
        data: Bytes,
    },
    /// `%pause %<pane>`: tmux dropped the pane's backlog and stopped sending it.
    Pause { pane: PaneId },
    /// `%continue %<pane>`: output for the pane resumes.
    Continue { pane: PaneId },
    /// `%exit [reason]`: the control client is leaving (e.g. `too far behind`).
    Exit { reason: Option<String> },
    /// `%layout-change @<win> <layout> [<visible-layout> [<flags>]]`.
    LayoutChange {
        window: WindowId,
        layout: String,
        visible_layout: Option<String>,
        flags: Option<String>,
    },
    /// `%window-add @<win>`.
    WindowAdd { window: WindowId },
    /// `%window-close @<win>`.
    WindowClose { window: WindowId },
    /// `%unlinked-window-add @<win>`.
    UnlinkedWindowAdd { window: WindowId },
    /// `%unlinked-window-close @<win>`.
    UnlinkedWindowClose { window: WindowId },
    /// `%window-renamed @<win> <name>`.
    WindowRenamed { window: WindowId, name: String },
    /// `%unlinked-window-renamed @<win> <name>`.
    UnlinkedWindowRenamed { window: WindowId, name: String },
    /// `%session-changed $<sid> <name>`: this client's session.
    SessionChanged { id: SessionId, name: String },
    /// `%session-renamed $<sid> <name>`.
    SessionRenamed { id: SessionId, name: String },
    /// `%sessions-changed`: a session was created or destroyed.
    SessionsChanged,
    /// `%session-window-changed $<sid> @<win>`: a session's current window.
    SessionWindowChanged {
        session: SessionId,
        window: WindowId,
    },
    /// `%window-pane-changed @<win> %<pane>`: a window's active pane.
    WindowPaneChanged { window: WindowId, pane: PaneId },
    /// `%pane-mode-changed %<pane>`.
    PaneModeChanged { pane: PaneId },
    /// `%client-session-changed <client> $<sid> <name>`: another client.
    ClientSessionChanged {
        client: String,
        session: SessionId,
        name: String,
    },
    /// `%client-detached <client>`.
    ClientDetached { client: String },
    /// `%subscription-changed <name> $<sid> @<win>|- <idx>|- %<pane>|- … : <value>`.
    SubscriptionChanged {
        name: String,
        session: SessionId,
        window: Option<WindowId>,
        index: Option<u32>,
        pane: Option<PaneId>,
        value: String,
    },
    /// `%paste-buffer-changed <name>`.
    PasteBufferChanged { name: String },
    /// `%paste-buffer-deleted <name>`.
    PasteBufferDeleted { name: String },
    /// `%config-error <message>`.
    ConfigError { message: String },
    /// `%message <message>`.
    Message { message: String },
    /// A `%name` this version does not know: kept as data.
    Unknown {
        name: String,
        #[serde(serialize_with = "lossy")]
        rest: Bytes,
    },
}

/// A line that could not be parsed. The stream goes on after it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("not a notification: the line does not start with '%'")]
    NotANotification,
    #[error("bad arguments for %{name}: expected `{grammar}`")]
    BadArguments { name: String, grammar: &'static str },
    #[error("%{name} outside a reply block: no matching %begin")]
    UnexpectedBlockEnd { name: &'static str },
    #[error("the stream ended inside a reply block: no matching %end")]
    UnclosedBlock,
    #[error("line of {len} bytes is longer than the {max}-byte limit: dropped")]
    TooLong { len: usize, max: usize },
}

fn lossy<S: Serializer>(bytes: &Bytes, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&String::from_utf8_lossy(bytes))
}

/// Parses one line (without its terminator).
pub fn parse_line(line: &[u8]) -> Result<Notification, ParseError> {
    parse_line_counting(line).map(|(n, _)| n)
}

/// [`parse_line`], also returning how many malformed `%output` escapes the
/// line had (kept literally in the data).
pub(crate) fn parse_line_counting(line: &[u8]) -> Result<(Notification, usize), ParseError> {
    let body = line
        .strip_prefix(b"%")
        .ok_or(ParseError::NotANotification)?;
    let (name, args) = match memchr::memchr(b' ', body) {
        Some(space) => (&body[..space], &body[space + 1..]),
        None => (body, &body[body.len()..]),
    };
    // Pane output is most of the stream: handle it before the table.
    if name == b"output" {
        return args_of(name, args, "%output %<pane> <data>", output);
    }
    if name == b"extended-output" {
        return args_of(
            name,
            args,
            "%extended-output %<pane> <age-ms> ... : <data>",
            extended_output,
        );
    }
    let (grammar, parser): (&'static str, LineParser) = match name {
        b"begin" => ("%begin <time> <number> <flags>", |i| {
            map(guard, Notification::Begin).parse(i)
        }),
        b"end" => ("%end <time> <number> <flags>", |i| {
            map(guard, Notification::End).parse(i)
        }),
        b"error" => ("%error <time> <number> <flags>", |i| {
            map(guard, Notification::Error).parse(i)
        }),
        b"pause" => ("%pause %<pane>", |i| {
            map(pane_id, |pane| Notification::Pause { pane }).parse(i)
        }),
        b"continue" => ("%continue %<pane>", |i| {
            map(pane_id, |pane| Notification::Continue { pane }).parse(i)
        }),
        b"exit" => ("%exit [reason]", exit),
        b"layout-change" => (
            "%layout-change @<win> <layout> [<visible-layout> [<flags>]]",
            layout_change,
        ),
        b"window-add" => ("%window-add @<win>", |i| {
            map(window_id, |window| Notification::WindowAdd { window }).parse(i)
        }),
        b"window-close" => ("%window-close @<win>", |i| {
            map(window_id, |window| Notification::WindowClose { window }).parse(i)
        }),
        b"unlinked-window-add" => ("%unlinked-window-add @<win>", |i| {
            map(window_id, |window| Notification::UnlinkedWindowAdd {
                window,
            })
            .parse(i)
        }),
        b"unlinked-window-close" => ("%unlinked-window-close @<win>", |i| {
            map(window_id, |window| Notification::UnlinkedWindowClose {
                window,
            })
            .parse(i)
        }),
        b"window-renamed" => ("%window-renamed @<win> <name>", |i| {
            map(window_and_name, |(window, name)| {
                Notification::WindowRenamed { window, name }
            })
            .parse(i)
        }),
        b"unlinked-window-renamed" => ("%unlinked-window-renamed @<win> <name>", |i| {
            map(window_and_name, |(window, name)| {
                Notification::UnlinkedWindowRenamed { window, name }
            })
            .parse(i)
        }),
        b"session-changed" => ("%session-changed $<sid> <name>", |i| {
            map(session_and_name, |(id, name)| {
                Notification::SessionChanged { id, name }
            })
            .parse(i)
        }),
        b"session-renamed" => ("%session-renamed $<sid> <name>", |i| {
            map(session_and_name, |(id, name)| {
                Notification::SessionRenamed { id, name }
            })
            .parse(i)
        }),
        b"sessions-changed" => ("%sessions-changed", |i| {
            Ok((i, Notification::SessionsChanged))
        }),
        b"session-window-changed" => ("%session-window-changed $<sid> @<win>", |i| {
            map(
                (session_id, preceded(char(' '), window_id)),
                |(session, window)| Notification::SessionWindowChanged { session, window },
            )
            .parse(i)
        }),
        b"window-pane-changed" => ("%window-pane-changed @<win> %<pane>", |i| {
            map(
                (window_id, preceded(char(' '), pane_id)),
                |(window, pane)| Notification::WindowPaneChanged { window, pane },
            )
            .parse(i)
        }),
        b"pane-mode-changed" => ("%pane-mode-changed %<pane>", |i| {
            map(pane_id, |pane| Notification::PaneModeChanged { pane }).parse(i)
        }),
        b"client-session-changed" => (
            "%client-session-changed <client> $<sid> <name>",
            client_session_changed,
        ),
        b"client-detached" => ("%client-detached <client>", |i| {
            map(text, |client| Notification::ClientDetached { client }).parse(i)
        }),
        b"subscription-changed" => (
            "%subscription-changed <name> $<sid> @<win>|- <idx>|- %<pane>|- ... : <value>",
            subscription_changed,
        ),
        b"paste-buffer-changed" => ("%paste-buffer-changed <name>", |i| {
            map(text, |name| Notification::PasteBufferChanged { name }).parse(i)
        }),
        b"paste-buffer-deleted" => ("%paste-buffer-deleted <name>", |i| {
            map(text, |name| Notification::PasteBufferDeleted { name }).parse(i)
        }),
        b"config-error" => ("%config-error <message>", |i| {
            map(text, |message| Notification::ConfigError { message }).parse(i)
        }),
        b"message" => ("%message <message>", |i| {
            map(text, |message| Notification::Message { message }).parse(i)
        }),
        _ => {
            let unknown = Notification::Unknown {
                name: String::from_utf8_lossy(name).into_owned(),
                rest: Bytes::copy_from_slice(args),
            };
            return Ok((unknown, 0));
        }
    };
    args_of(name, args, grammar, |i| parser(i).map(|(i, n)| (i, (n, 0))))
}

type LineParser = fn(&[u8]) -> IResult<&[u8], Notification>;

/// Runs `parser` over all of `args`, naming the grammar when it fails.
fn args_of<'a, T>(
    name: &[u8],
    args: &'a [u8],
    grammar: &'static str,
    parser: impl Parser<&'a [u8], Output = T, Error = nom::error::Error<&'a [u8]>>,
) -> Result<T, ParseError> {
    all_consuming(parser)
        .parse(args)
        .map(|(_, value)| value)
        .map_err(|_| ParseError::BadArguments {
            name: String::from_utf8_lossy(name).into_owned(),
            grammar,
        })
}

/// `<digits>` as a number of type `T` (overflow is an error).
fn number<T: std::str::FromStr>(i: &[u8]) -> IResult<&[u8], T> {
    map_opt(digit1, |d: &[u8]| std::str::from_utf8(d).ok()?.parse().ok()).parse(i)
}

/// `%<digits>`
fn pane_id(i: &[u8]) -> IResult<&[u8], PaneId> {
    map(preceded(char('%'), number), PaneId).parse(i)
}

/// `@<digits>`
fn window_id(i: &[u8]) -> IResult<&[u8], WindowId> {
    map(preceded(char('@'), number), WindowId).parse(i)
}

/// `$<digits>`
fn session_id(i: &[u8]) -> IResult<&[u8], SessionId> {
    map(preceded(char('$'), number), SessionId).parse(i)
}

/// The rest of the line as text (may hold spaces; never trimmed).
fn text(i: &[u8]) -> IResult<&[u8], String> {
    map(rest, |t: &[u8]| String::from_utf8_lossy(t).into_owned()).parse(i)
}

/// One space-free word.
fn word(i: &[u8]) -> IResult<&[u8], String> {
    map(take_till(|b| b == b' '), |t: &[u8]| {
        String::from_utf8_lossy(t).into_owned()
    })
    .parse(i)
}

/// `<value>` or `-` for none.
fn or_dash<'a, T>(
    value: impl Parser<&'a [u8], Output = T, Error = nom::error::Error<&'a [u8]>>,
) -> impl Parser<&'a [u8], Output = Option<T>, Error = nom::error::Error<&'a [u8]>> {
    nom::branch::alt((map(char('-'), |_| None), map(value, Some)))
}

/// `<time> <number> <flags>`
fn guard(i: &[u8]) -> IResult<&[u8], Guard> {
    map(
        (
            number,
            preceded(char(' '), number),
            preceded(char(' '), number),
        ),
        |(time, number, flags)| Guard {
            time,
            number,
            flags,
        },
    )
    .parse(i)
}

/// The escaped data after the pane (and age): unescaped, malformed escapes counted.
fn escaped_data(i: &[u8]) -> IResult<&[u8], (Bytes, usize)> {
    map(rest, unescape).parse(i)
}

/// `%<pane> <data>` (tmux always writes the space; a bare pane is empty data)
fn output(i: &[u8]) -> IResult<&[u8], (Notification, usize)> {
    map(
        (pane_id, opt(preceded(char(' '), escaped_data))),
        |(pane, data)| {
            let (data, bad) = data.unwrap_or_default();
            (Notification::Output { pane, data }, bad)
        },
    )
    .parse(i)
}

/// `%<pane> <age-ms> [reserved…] : <data>`
fn extended_output(i: &[u8]) -> IResult<&[u8], (Notification, usize)> {
    map(
        (
            pane_id,
            preceded(char(' '), number),
            take_until(&b" : "[..]),
            preceded(tag(&b" : "[..]), escaped_data),
        ),
        |(pane, age_ms, _reserved, (data, bad))| {
            (Notification::ExtendedOutput { pane, age_ms, data }, bad)
        },
    )
    .parse(i)
}

/// `[reason]`
fn exit(i: &[u8]) -> IResult<&[u8], Notification> {
    map(text, |reason| Notification::Exit {
        reason: (!reason.is_empty()).then_some(reason),
    })
    .parse(i)
}

/// `@<win> <layout> [<visible-layout> [<flags>]]`
fn layout_change(i: &[u8]) -> IResult<&[u8], Notification> {
    map(
        (
            window_id,
            preceded(char(' '), word),
            opt(preceded(char(' '), word)),
            opt(preceded(char(' '), text)),
        ),
        |(window, layout, visible_layout, flags)| Notification::LayoutChange {
            window,
            layout,
            visible_layout,
            flags,
        },
    )
    .parse(i)
}

/// `@<win> <name>`
fn window_and_name(i: &[u8]) -> IResult<&[u8], (WindowId, String)> {
    (window_id, preceded(char(' '), text)).parse(i)
}

/// `$<sid> <name>`
fn session_and_name(i: &[u8]) -> IResult<&[u8], (SessionId, String)> {
    (session_id, preceded(char(' '), text)).parse(i)
}

/// `<client> $<sid> <name>`
fn client_session_changed(i: &[u8]) -> IResult<&[u8], Notification> {
    map(
        (word, preceded(char(' '), session_and_name)),
        |(client, (session, name))| Notification::ClientSessionChanged {
            client,
            session,
            name,
        },
    )
    .parse(i)
}

/// `<name> $<sid> @<win>|- <idx>|- %<pane>|- [reserved…] : <value>`
fn subscription_changed(i: &[u8]) -> IResult<&[u8], Notification> {
    map(
        (
            word,
            preceded(char(' '), session_id),
            preceded(char(' '), or_dash(window_id)),
            preceded(char(' '), or_dash(number)),
            preceded(char(' '), or_dash(pane_id)),
            take_until(&b" : "[..]),
            preceded(tag(&b" : "[..]), text),
        ),
        |(name, session, window, index, pane, _reserved, value)| {
            Notification::SubscriptionChanged {
                name,
                session,
                window,
                index,
                pane,
                value,
            }
        },
    )
    .parse(i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(line: &[u8]) -> Notification {
        parse_line(line).unwrap_or_else(|e| panic!("{:?}: {e}", String::from_utf8_lossy(line)))
    }

    #[test]
    fn parses_output_keeping_trailing_space_and_raw_bytes() {
        assert_eq!(
            ok(b"%output %0 \\033[?2004hbash-5.2# "),
            Notification::Output {
                pane: PaneId(0),
                data: Bytes::from_static(b"\x1b[?2004hbash-5.2# ")
            }
        );
        assert_eq!(
            ok(b"%output %12 \xe4\xb8\xad\xff"),
            Notification::Output {
                pane: PaneId(12),
                data: Bytes::from_static(b"\xe4\xb8\xad\xff")
            }
        );
    }

    #[test]
    fn parses_extended_output_with_reserved_fields() {
        for line in [
            &b"%extended-output %3 250 : a\\015"[..],
            b"%extended-output %3 250 x y : a\\015",
        ] {
            assert_eq!(
                ok(line),
                Notification::ExtendedOutput {
                    pane: PaneId(3),
                    age_ms: 250,
                    data: Bytes::from_static(b"a\r")
                }
            );
        }
    }

    #[test]
    fn parses_every_reference_notification() {
        use Notification as N;
        let cases: Vec<(&[u8], Notification)> = vec![
            (
                b"%begin 1795964420 260 0",
                N::Begin(Guard {
                    time: 1795964420,
                    number: 260,
                    flags: 0,
                }),
            ),
            (
                b"%end 1 2 1",
                N::End(Guard {
                    time: 1,
                    number: 2,
                    flags: 1,
                }),
            ),
            (
                b"%error 1 2 1",
                N::Error(Guard {
                    time: 1,
                    number: 2,
                    flags: 1,
                }),
            ),
            (b"%pause %4", N::Pause { pane: PaneId(4) }),
            (b"%continue %4", N::Continue { pane: PaneId(4) }),
            (b"%exit", N::Exit { reason: None }),
            (
                b"%exit too far behind",
                N::Exit {
                    reason: Some("too far behind".into()),
                },
            ),
            (
                b"%layout-change @0 aafd,120x40,0,0,0 aafd,120x40,0,0,0 *",
                N::LayoutChange {
                    window: WindowId(0),
                    layout: "aafd,120x40,0,0,0".into(),
                    visible_layout: Some("aafd,120x40,0,0,0".into()),
                    flags: Some("*".into()),
                },
            ),
            (
                b"%layout-change @1 x",
                N::LayoutChange {
                    window: WindowId(1),
                    layout: "x".into(),
                    visible_layout: None,
                    flags: None,
                },
            ),
            (
                b"%window-add @1",
                N::WindowAdd {
                    window: WindowId(1),
                },
            ),
            (
                b"%window-close @1",
                N::WindowClose {
                    window: WindowId(1),
                },
            ),
            (
                b"%unlinked-window-add @2",
                N::UnlinkedWindowAdd {
                    window: WindowId(2),
                },
            ),
            (
                b"%unlinked-window-close @2",
                N::UnlinkedWindowClose {
                    window: WindowId(2),
                },
            ),
            (
                b"%window-renamed @1 my name ",
                N::WindowRenamed {
                    window: WindowId(1),
                    name: "my name ".into(),
                },
            ),
            (
                b"%unlinked-window-renamed @1 n",
                N::UnlinkedWindowRenamed {
                    window: WindowId(1),
                    name: "n".into(),
                },
            ),
            (
                b"%session-changed $0 ceoprobe",
                N::SessionChanged {
                    id: SessionId(0),
                    name: "ceoprobe".into(),
                },
            ),
            (
                b"%session-renamed $0 new",
                N::SessionRenamed {
                    id: SessionId(0),
                    name: "new".into(),
                },
            ),
            (b"%sessions-changed", N::SessionsChanged),
            (
                b"%session-window-changed $0 @1",
                N::SessionWindowChanged {
                    session: SessionId(0),
                    window: WindowId(1),
                },
            ),
            (
                b"%window-pane-changed @0 %1",
                N::WindowPaneChanged {
                    window: WindowId(0),
                    pane: PaneId(1),
                },
            ),
            (
                b"%pane-mode-changed %1",
                N::PaneModeChanged { pane: PaneId(1) },
            ),
            (
                b"%client-session-changed /dev/pts/3 $1 other",
                N::ClientSessionChanged {
                    client: "/dev/pts/3".into(),
                    session: SessionId(1),
                    name: "other".into(),
                },
            ),
            (
                b"%client-detached client-123",
                N::ClientDetached {
                    client: "client-123".into(),
                },
            ),
            (
                b"%subscription-changed title $0 @1 0 %2 : my : title",
                N::SubscriptionChanged {
                    name: "title".into(),
                    session: SessionId(0),
                    window: Some(WindowId(1)),
                    index: Some(0),
                    pane: Some(PaneId(2)),
                    value: "my : title".into(),
                },
            ),
            (
                b"%subscription-changed s $0 - - - : v",
                N::SubscriptionChanged {
                    name: "s".into(),
                    session: SessionId(0),
                    window: None,
                    index: None,
                    pane: None,
                    value: "v".into(),
                },
            ),
            (
                b"%paste-buffer-changed buffer0",
                N::PasteBufferChanged {
                    name: "buffer0".into(),
                },
            ),
            (
                b"%paste-buffer-deleted buffer0",
                N::PasteBufferDeleted {
                    name: "buffer0".into(),
                },
            ),
            (
                b"%config-error /etc/tmux.conf:1: bad",
                N::ConfigError {
                    message: "/etc/tmux.conf:1: bad".into(),
                },
            ),
            (
                b"%message hi there",
                N::Message {
                    message: "hi there".into(),
                },
            ),
            (
                b"%future-thing a b",
                N::Unknown {
                    name: "future-thing".into(),
                    rest: Bytes::from_static(b"a b"),
                },
            ),
        ];
        for (line, want) in cases {
            assert_eq!(ok(line), want, "{}", String::from_utf8_lossy(line));
        }
    }

    #[test]
    fn bad_arguments_name_the_grammar() {
        for line in [
            &b"%output 0 x"[..],
            b"%output",
            b"%begin 1 2",
            b"%begin 1 2 3 4",
            b"%pause %x",
            b"%window-add @99999999999",
            b"%extended-output %1 5 no-colon",
            b"%sessions-changed extra",
        ] {
            match parse_line(line) {
                Err(ParseError::BadArguments { grammar, .. }) => assert!(grammar.starts_with('%')),
                other => panic!("{}: {other:?}", String::from_utf8_lossy(line)),
            }
        }
        assert_eq!(parse_line(b"hello"), Err(ParseError::NotANotification));
    }

    #[test]
    fn serializes_output_as_lossy_text() {
        let n = ok(b"%output %3 hi\\015\xff");
        assert_eq!(
            serde_json::to_string(&n).unwrap(),
            r#"{"kind":"output","pane":"%3","text":"hi\r�"}"#
        );
    }
}
