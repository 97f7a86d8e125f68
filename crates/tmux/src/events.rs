//! What a [`Client`](super::Client) tells its subscribers, and the
//! subscription itself.
//!
//! Overflow policy: each subscriber has its own bounded queue of
//! [`EVENT_CAPACITY`] events. The reader never waits for a subscriber (tmux
//! would stall the panes): a subscriber that falls behind loses its oldest
//! events and gets [`ClientEvent::Lagged`] with the number lost; it should
//! then resynchronise the panes it cares about with `capture-pane`
//! ([`Client::capture_screen`](super::Client::capture_screen)).

use std::borrow::Cow;

use bytes::Bytes;
use serde::{Serialize, Serializer};
use tokio::sync::{broadcast, watch};

use super::error::TmuxError;
use clawmux_control::{Notification, PaneId, ParseError};

/// Events a subscriber can be behind by before it loses the oldest. At
/// tmux's 8 KiB per `%output` line this is up to 8 MiB of pane output in
/// flight: a busy subscriber rides out a burst, a stuck one cannot grow
/// memory without bound (and a lagging one resyncs from the screen). The
/// queue's slots are allocated up front, per queue (every event, and one
/// per pane subscribed to), so this also bounds the daemon's resident size.
pub const EVENT_CAPACITY: usize = 1024;

/// One event from the tmux control client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientEvent {
    /// Bytes a pane's program wrote (from `%output` or `%extended-output`).
    Output { pane: PaneId, data: Bytes },
    /// Any other notification (`%pause` and `%exit` included, for the record).
    Notification(Notification),
    /// The pane's screen as text (`capture-pane -p`, rows joined by `\r\n`),
    /// in stream order: after tmux's `%pause` (output written while paused
    /// is lost) and while the flood guard watches the pane (see `Flood`).
    /// Replace the pane's state with it.
    Resync { pane: PaneId, screen: Bytes },
    /// The flood guard (see [`super::FloodLimits`]) switched `pane` to
    /// snapshots of its screen (`flooding`), published as `Resync`, or back
    /// to streaming. Output in between was not streamed.
    Flood { pane: PaneId, flooding: bool },
    /// A non-`%` line outside a reply (e.g. a configuration error).
    Stray(Bytes),
    /// A line tmux sent that did not parse; the stream went on.
    Invalid { line: Bytes, error: ParseError },
    /// This subscriber fell behind and lost `missed` events: resynchronise.
    Lagged { missed: u64 },
    /// The client ended; no event follows.
    Ended(TmuxError),
}

impl ClientEvent {
    /// The pane this event is about, if it is about one pane.
    pub fn pane(&self) -> Option<PaneId> {
        match self {
            ClientEvent::Output { pane, .. }
            | ClientEvent::Resync { pane, .. }
            | ClientEvent::Flood { pane, .. }
            | ClientEvent::Notification(
                Notification::Pause { pane }
                | Notification::Continue { pane }
                | Notification::PaneModeChanged { pane },
            ) => Some(*pane),
            _ => None,
        }
    }
}

/// JSON: `{"kind":"output","pane":"%3","text":…}` for output, notifications
/// as themselves, then `resync`, `flood`, `stray`, `invalid`, `lagged`, `ended`.
impl Serialize for ClientEvent {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(tag = "kind", rename_all = "kebab-case")]
        enum Json<'a> {
            Output { pane: PaneId, text: Cow<'a, str> },
            Resync { pane: PaneId, text: Cow<'a, str> },
            Flood { pane: PaneId, flooding: bool },
            Stray { text: Cow<'a, str> },
            Invalid { line: Cow<'a, str>, error: String },
            Lagged { missed: u64 },
            Ended { error: String },
        }
        let json = match self {
            ClientEvent::Notification(n) => return n.serialize(s),
            ClientEvent::Output { pane, data } => Json::Output {
                pane: *pane,
                text: String::from_utf8_lossy(data),
            },
            ClientEvent::Resync { pane, screen } => Json::Resync {
                pane: *pane,
                text: String::from_utf8_lossy(screen),
            },
            ClientEvent::Flood { pane, flooding } => Json::Flood {
                pane: *pane,
                flooding: *flooding,
            },
            ClientEvent::Stray(line) => Json::Stray {
                text: String::from_utf8_lossy(line),
            },
            ClientEvent::Invalid { line, error } => Json::Invalid {
                line: String::from_utf8_lossy(line),
                error: error.to_string(),
            },
            ClientEvent::Lagged { missed } => Json::Lagged { missed: *missed },
            ClientEvent::Ended(error) => Json::Ended {
                error: error.to_string(),
            },
        };
        json.serialize(s)
    }
}

/// A subscriber's end of the event stream. One that falls more than
/// [`EVENT_CAPACITY`] events behind loses the oldest and is told so with
/// [`ClientEvent::Lagged`].
#[derive(Debug)]
pub struct Subscription {
    events: Option<broadcast::Receiver<ClientEvent>>,
    end: watch::Receiver<Option<TmuxError>>,
    ended: bool,
}

impl Subscription {
    pub(crate) fn new(
        events: Option<broadcast::Receiver<ClientEvent>>,
        end: watch::Receiver<Option<TmuxError>>,
    ) -> Self {
        Subscription {
            events,
            end,
            ended: false,
        }
    }

    /// The next event; `None` after [`ClientEvent::Ended`] was delivered.
    pub async fn recv(&mut self) -> Option<ClientEvent> {
        if let Some(events) = &mut self.events {
            match events.recv().await {
                Ok(event) => return Some(self.note(event)),
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    return Some(ClientEvent::Lagged { missed });
                }
                Err(broadcast::error::RecvError::Closed) => self.events = None,
            }
        }
        self.final_event()
    }

    /// The next event if one is queued now (never waits).
    pub fn try_recv(&mut self) -> Option<ClientEvent> {
        if let Some(events) = &mut self.events {
            match events.try_recv() {
                Ok(event) => return Some(self.note(event)),
                Err(broadcast::error::TryRecvError::Lagged(missed)) => {
                    return Some(ClientEvent::Lagged { missed });
                }
                Err(broadcast::error::TryRecvError::Empty) => return None,
                Err(broadcast::error::TryRecvError::Closed) => self.events = None,
            }
        }
        self.final_event()
    }

    fn note(&mut self, event: ClientEvent) -> ClientEvent {
        if matches!(event, ClientEvent::Ended(_)) {
            self.ended = true;
        }
        event
    }

    /// `Ended` once for a subscriber that missed it (subscribed too late).
    fn final_event(&mut self) -> Option<ClientEvent> {
        if self.ended {
            return None;
        }
        let end = self.end.borrow().clone()?;
        self.ended = true;
        Some(ClientEvent::Ended(end))
    }
}
