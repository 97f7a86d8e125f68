//! The flood guard against real tmux: a pane writing flat out is watched
//! through snapshots of its screen, and streamed again once it calms down.

use std::time::Duration;

use clawmux::control::PaneId;
use clawmux::tmux::{Client, ClientEvent, FloodLimits, Subscription};

use super::{DEADLINE, connect_with, contains, next_matching, open_pane, output_until};
use crate::support::tmux::TmuxServer;

/// Lines the flooding pane prints: about 55 MB.
const FLOOD_LINES: u64 = 5_000_000;
const FLOOD_BYTES: u64 = FLOOD_LINES * "flood line\n".len() as u64;

/// Quick snapshots and probes far away: the pane only streams again when
/// its screen stays the same.
fn limits() -> FloodLimits {
    FloodLimits {
        snapshot_every: Duration::from_millis(50),
        probe_first: Duration::from_secs(60),
        probe_cap: Duration::from_secs(60),
        ..FloodLimits::default()
    }
}

/// A pane that says READY, floods after a key, says DONE, and prints
/// `after` on the next key.
fn flooding_pane() -> String {
    format!(
        "stty raw -echo; printf READY; head -c 1 >/dev/null; \
         yes 'flood line' | head -n {FLOOD_LINES}; printf 'FLOOD-DONE'; \
         head -c 1 >/dev/null; printf after; exec sleep 3600"
    )
}

async fn start(server: &TmuxServer, limits: Option<FloodLimits>) -> (Client, Subscription, PaneId) {
    let client = connect_with(server, |c| c.flood = limits).await;
    let mut events = client.subscribe();
    let pane = open_pane(&client, &flooding_pane()).await;
    output_until(&mut events, pane, b"READY").await;
    (client, events, pane)
}

fn is_flood(event: &ClientEvent, pane: PaneId, flooding: bool) -> bool {
    matches!(event, ClientEvent::Flood { pane: p, flooding: f } if *p == pane && *f == flooding)
}

#[tokio::test]
async fn a_flooding_pane_is_watched_by_snapshots_then_streamed_again() {
    let server = TmuxServer::new();
    let (client, mut events, pane) = start(&server, Some(limits())).await;
    client.send_keys(pane, &["x"]).await.unwrap();

    // Everything up to the end of the flood: streamed bytes, then screens.
    let mut streamed = 0u64;
    let mut snapshots = Vec::new();
    let mut flooding = false;
    let finished = tokio::time::timeout(DEADLINE * 3, async {
        while let Some(event) = events.recv().await {
            match event {
                ClientEvent::Output { pane: p, data } if p == pane => streamed += data.len() as u64,
                ClientEvent::Flood {
                    pane: p,
                    flooding: true,
                } if p == pane => flooding = true,
                ClientEvent::Resync { pane: p, screen } if p == pane => {
                    assert!(flooding, "a snapshot before the switch");
                    let done = contains(&screen, b"FLOOD-DONE");
                    snapshots.push(screen);
                    if done {
                        return true;
                    }
                }
                ClientEvent::Flood {
                    pane: p,
                    flooding: false,
                } if p == pane => {
                    panic!("streamed again while the screen still changed")
                }
                _ => {}
            }
        }
        false
    })
    .await;
    assert_eq!(finished, Ok(true), "the flood's end was seen on a snapshot");
    assert!(
        streamed < FLOOD_BYTES / 2,
        "output kept streaming: {streamed} of {FLOOD_BYTES} bytes"
    );
    assert!(
        snapshots.iter().all(|s| contains(s, b"flood line")),
        "every snapshot shows the flooding screen"
    );

    // The screen stays the same: the pane is streamed again, byte by byte.
    next_matching(&mut events, "streaming again", |e| is_flood(e, pane, false)).await;
    client.send_keys(pane, &["x"]).await.unwrap();
    let after = output_until(&mut events, pane, b"after").await;
    assert_eq!(after, b"after", "streamed from where the snapshot left off");
}

#[tokio::test]
async fn a_flood_that_goes_on_is_probed_and_switched_back() {
    let server = TmuxServer::new();
    let probing = FloodLimits {
        probe_first: Duration::from_millis(300),
        probe_cap: Duration::from_millis(300),
        ..limits()
    };
    let client = connect_with(&server, |c| c.flood = Some(probing)).await;
    let mut events = client.subscribe();
    let pane = open_pane(&client, "exec yes 'no end to it'").await;
    for round in 0..2 {
        let what = format!("switch {round} to snapshots");
        next_matching(&mut events, &what, |e| is_flood(e, pane, true)).await;
        let what = format!("probe {round}");
        next_matching(&mut events, &what, |e| is_flood(e, pane, false)).await;
    }
    next_matching(&mut events, "switch after the probes", |e| {
        is_flood(e, pane, true)
    })
    .await;
    drop(client);
    // tmux before 3.7 dies when a pane with queued output is turned `off`
    // and read later; the guard pauses instead, and the server lives.
    assert!(server.run(&["has-session", "-t", "main"]).status.success());
}

#[tokio::test]
async fn without_the_guard_every_byte_is_streamed() {
    let server = TmuxServer::new();
    let (client, mut events, pane) = start(&server, None).await;
    client.send_keys(pane, &["x"]).await.unwrap();
    let mut streamed = 0u64;
    let mut tail = Vec::new();
    let done = tokio::time::timeout(DEADLINE * 3, async {
        while let Some(event) = events.recv().await {
            match event {
                ClientEvent::Output { pane: p, data } if p == pane => {
                    streamed += data.len() as u64;
                    tail.extend_from_slice(&data);
                    let excess = tail.len().saturating_sub(64);
                    tail.drain(..excess);
                    if contains(&tail, b"FLOOD-DONE") {
                        return true;
                    }
                }
                ClientEvent::Resync { .. } | ClientEvent::Flood { .. } => {
                    panic!("no guard, no snapshots: {event:?}")
                }
                _ => {}
            }
        }
        false
    })
    .await;
    assert_eq!(done, Ok(true));
    // The tty turns each "\n" into "\r\n".
    assert!(streamed >= FLOOD_BYTES, "{streamed} of {FLOOD_BYTES} bytes");
}
