//! Control-mode core against real tmux: the async client (replies, pane
//! bytes, quoting, flow control, death of tmux) and the `decode` and `watch`
//! commands.

mod client;
mod decode_cli;
mod flood;
mod record_cli;
mod watch_cli;

use std::time::Duration;

use clawmux::control::PaneId;
use clawmux::tmux::{self, Client, ClientConfig, ClientEvent, NewSession, Socket, Subscription};

use crate::support::tmux::TmuxServer;

/// Upper bound for anything a test waits for; generous for a loaded CI box.
const DEADLINE: Duration = Duration::from_secs(20);

/// A control client that creates a session on `server` (no user config).
async fn connect(server: &TmuxServer) -> Client {
    connect_with(server, |_| {}).await
}

/// [`connect`], with the configuration adjusted by `configure` first.
async fn connect_with(server: &TmuxServer, configure: impl FnOnce(&mut ClientConfig)) -> Client {
    let mut config = ClientConfig::new_session(NewSession {
        name: Some("main".into()),
        cwd: None,
        command: Some("exec sleep 3600".into()),
    });
    config.socket = Some(Socket::Name(server.socket.clone()));
    config.config_file = Some("/dev/null".into());
    config.size = Some((120, 40));
    configure(&mut config);
    tmux::connect(config).await.expect("control client starts")
}

/// Opens a window running `script` (sh) and returns its pane. The caller
/// subscribed first, so none of the pane's output is missed.
async fn open_pane(client: &Client, script: &str) -> PaneId {
    let lines = client
        .command(
            tmux::TmuxCommand::new("new-window")
                .args(["-d", "-P", "-F", "#{pane_id}"])
                .arg(script),
        )
        .await
        .expect("new-window");
    let id = String::from_utf8_lossy(&lines[0]).into_owned();
    id.parse().expect("a pane id")
}

/// Collects `pane`'s output until it contains `needle`; returns all of it.
async fn output_until(events: &mut Subscription, pane: PaneId, needle: &[u8]) -> Vec<u8> {
    let mut seen = Vec::new();
    let found = tokio::time::timeout(DEADLINE, async {
        while let Some(event) = events.recv().await {
            if let ClientEvent::Output { pane: p, data } = event
                && p == pane
            {
                seen.extend_from_slice(&data);
                if contains(&seen, needle) {
                    return true;
                }
            }
        }
        false
    })
    .await;
    let tail = &seen[seen.len().saturating_sub(300)..];
    assert!(
        matches!(found, Ok(true)),
        "no {:?} from {pane}; last output {:?}",
        String::from_utf8_lossy(needle),
        String::from_utf8_lossy(tail)
    );
    seen
}

/// The next event matching `want`, or a panic naming it after [`DEADLINE`].
async fn next_matching(
    events: &mut Subscription,
    what: &str,
    want: impl Fn(&ClientEvent) -> bool,
) -> ClientEvent {
    let found = tokio::time::timeout(DEADLINE, async {
        while let Some(event) = events.recv().await {
            if want(&event) {
                return Some(event);
            }
        }
        None
    })
    .await;
    match found {
        Ok(Some(event)) => event,
        other => panic!("no {what} event: {other:?}"),
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(haystack, needle).is_some()
}
