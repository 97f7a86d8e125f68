//! The async client against real tmux servers.

use clawmux::control::{Notification, PaneId};
use clawmux::tmux::{ClientEvent, TmuxCommand, TmuxError};

use std::time::Duration;

use super::{DEADLINE, connect, connect_with, contains, next_matching, open_pane, output_until};
use crate::support::tmux::TmuxServer;

/// A pane script: raw tty (no output or input processing), say READY, then
/// wait for one key before going on, so the test controls the timing.
fn raw_pane(after_key: &str) -> String {
    format!("stty raw -echo; printf READY; head -c 1 >/dev/null; {after_key}; exec sleep 3600")
}

#[tokio::test]
async fn every_byte_value_round_trips_through_a_pane() {
    let server = TmuxServer::new();
    let client = connect(&server).await;
    let mut events = client.subscribe();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("all-bytes");
    let all: Vec<u8> = (0..=255).collect();
    std::fs::write(&file, &all).unwrap();
    let script = raw_pane(&format!(
        "printf '<<<'; cat '{}'; printf '>>>'",
        file.display()
    ));
    let pane = open_pane(&client, &script).await;
    output_until(&mut events, pane, b"READY").await;
    client.send_keys(pane, &["x"]).await.unwrap();
    let seen = output_until(&mut events, pane, b">>>").await;
    let start = memchr::memmem::find(&seen, b"<<<").unwrap() + 3;
    let end = memchr::memmem::rfind(&seen, b">>>").unwrap();
    assert_eq!(&seen[start..end], &all[..]);
}

#[tokio::test]
async fn a_utf8_character_split_across_two_output_lines_is_whole() {
    let server = TmuxServer::new();
    let client = connect(&server).await;
    let mut events = client.subscribe();
    // "€" is E2 82 AC: the pane writes E2, waits for a key, writes the rest.
    let script = raw_pane("printf 'A\\342'; head -c 1 >/dev/null; printf '\\202\\254B'");
    let pane = open_pane(&client, &script).await;
    output_until(&mut events, pane, b"READY").await;
    client.send_keys(pane, &["x"]).await.unwrap();
    let first = output_until(&mut events, pane, b"A\xe2").await;
    assert!(first.ends_with(b"A\xe2"), "{first:?}");
    client.send_keys(pane, &["y"]).await.unwrap();
    let second = output_until(&mut events, pane, b"B").await;
    assert_eq!(second, b"\x82\xacB", "the rest arrived in its own %output");
    let mut whole = first;
    whole.extend_from_slice(&second);
    assert!(String::from_utf8_lossy(&whole).ends_with("A€B"));
}

#[tokio::test]
async fn a_window_named_like_output_never_leaks_into_the_pane() {
    let server = TmuxServer::new();
    let client = connect(&server).await;
    let pane: PaneId = String::from_utf8_lossy(
        &client
            .command("display-message -p '#{pane_id}'")
            .await
            .unwrap()[0],
    )
    .parse()
    .unwrap();
    let evil = format!("%output {pane} evil");
    client
        .command(TmuxCommand::new("rename-window").arg(&evil))
        .await
        .unwrap();
    let mut events = client.subscribe();
    let lines = client
        .command("list-windows -F '#{window_name}'")
        .await
        .unwrap();
    assert_eq!(lines, vec![bytes::Bytes::from(evil.clone())]);
    // Every line before the reply was decoded (and published) before it.
    while let Some(event) = events.try_recv() {
        if let ClientEvent::Output { data, .. } = &event {
            assert!(!contains(data, b"evil"), "reply text leaked: {event:?}");
        }
    }
}

#[tokio::test]
async fn a_bad_command_is_an_error_and_the_queue_goes_on() {
    let server = TmuxServer::new();
    let client = connect(&server).await;
    let (bad, good) = tokio::join!(
        client.command("bogus-command"),
        client.command("display-message -p ok")
    );
    match bad {
        Err(TmuxError::Command { message, .. }) => {
            assert!(
                message.contains("unknown command: bogus-command"),
                "{message}"
            )
        }
        other => panic!("expected a command error, got {other:?}"),
    }
    assert_eq!(good.unwrap(), vec![bytes::Bytes::from_static(b"ok")]);
    let refused = client.command("display-message a ; kill-server").await;
    assert!(matches!(refused, Err(TmuxError::InvalidCommand { .. })));
}

#[tokio::test]
async fn hostile_text_arrives_literally() {
    let server = TmuxServer::new();
    let client = connect(&server).await;
    let hostile = "-l C-c Enter ; kill-server $(rm -rf ~) #{pane_id} '\"\\ %0 $HOME ~ é世界\tend";

    // As an argument: stored in a user option, read back unchanged.
    client
        .command(TmuxCommand::new("set-option").args(["-g", "@hostile", hostile]))
        .await
        .unwrap();
    let back = client
        .command("display-message -p '#{@hostile}'")
        .await
        .unwrap();
    assert_eq!(back, vec![bytes::Bytes::from(hostile)]);

    // As chat text: typed into a raw `cat`, which echoes exactly what it got.
    let mut events = client.subscribe();
    let pane = open_pane(&client, "stty raw -echo; printf READY; exec cat").await;
    output_until(&mut events, pane, b"READY").await;
    client.send_text(pane, hostile).await.unwrap();
    let typed = output_until(&mut events, pane, b"end\r").await;
    assert_eq!(String::from_utf8_lossy(&typed), format!("{hostile}\r"));
    assert!(server.run(&["has-session", "-t", "main"]).status.success());
}

#[tokio::test]
async fn a_paused_pane_is_resynced_and_resumed() {
    let server = TmuxServer::new();
    // pause-after switches tmux to %extended-output, which must decode the same.
    let client = connect_with(&server, |c| c.pause_after = Some(Duration::from_secs(5))).await;
    let mut events = client.subscribe();
    let pane = open_pane(&client, &raw_pane("printf after")).await;
    output_until(&mut events, pane, b"READY").await;
    client
        .command(
            TmuxCommand::new("refresh-client")
                .arg("-A")
                .arg(format!("{pane}:pause")),
        )
        .await
        .unwrap();
    next_matching(
        &mut events,
        "pause",
        |e| matches!(e, ClientEvent::Notification(Notification::Pause { pane: p }) if *p == pane),
    )
    .await;
    let resync = next_matching(
        &mut events,
        "resync",
        |e| matches!(e, ClientEvent::Resync { pane: p, .. } if *p == pane),
    )
    .await;
    let ClientEvent::Resync { screen, .. } = resync else {
        unreachable!()
    };
    assert!(contains(&screen, b"READY"), "{screen:?}");
    client.send_keys(pane, &["x"]).await.unwrap();
    output_until(&mut events, pane, b"after").await;
}

/// A pane that prints the plain rows `%pause <itself>` and `%pause
/// <another pane>`: its captured screen is text. Read as notifications,
/// every capture of it made the client resync it (capture again, for ever)
/// and resync the other pane, whose running output then had a gap.
#[tokio::test]
async fn screen_rows_that_read_like_pause_are_never_notifications() {
    let server = TmuxServer::new();
    let client = connect_with(&server, |c| c.pause_after = Some(Duration::from_secs(5))).await;
    let mut events = client.subscribe();
    // Everything, from before the panes start, for the checks below.
    let mut all = client.subscribe();
    let counter =
        "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); printf 'n%d.\\n' $i; sleep 0.02; done";
    let other = open_pane(&client, counter).await;
    let rows = format!(
        "printf '%s\\n' \"%pause $TMUX_PANE\" '%pause {other}' '%continue {other}' END; exec sleep 3600"
    );
    let printer = open_pane(&client, &rows).await;
    output_until(&mut events, printer, b"END").await;
    // Attach, adopt and catch-up each capture the screen.
    for _ in 0..3 {
        let screen = client.capture_screen(printer).await.unwrap();
        assert!(
            contains(&screen, format!("%pause {other}").as_bytes()),
            "{screen:?}"
        );
    }
    // Everything the reader made of the replies is published by now; then
    // the other pane's output up to a number printed after the captures.
    let mut seen = Vec::new();
    while let Some(event) = all.try_recv() {
        seen.push(event);
    }
    let after = tokio::time::timeout(DEADLINE, async {
        let mut numbers_after = 0;
        while let Some(event) = all.recv().await {
            if let ClientEvent::Output { pane, data } = &event
                && *pane == other
            {
                numbers_after += data.iter().filter(|&&b| b == b'.').count();
            }
            seen.push(event);
            if numbers_after >= 10 {
                return;
            }
        }
    })
    .await;
    assert!(after.is_ok(), "the other pane goes on printing");
    let forged: Vec<_> = seen
        .iter()
        .filter(|e| {
            matches!(
                e,
                ClientEvent::Notification(
                    Notification::Pause { .. } | Notification::Continue { .. }
                ) | ClientEvent::Resync { .. }
            )
        })
        .collect();
    assert!(forged.is_empty(), "{forged:?}");
    // The other pane's numbers run on without a gap, from its first.
    let mut output = Vec::new();
    for event in &seen {
        if let ClientEvent::Output { pane, data } = event
            && *pane == other
        {
            output.extend_from_slice(data);
        }
    }
    let text = String::from_utf8_lossy(&output);
    let numbers: Vec<u64> = text
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    assert!(numbers.len() >= 10, "{text:?}");
    assert_eq!(numbers[0], 1, "{text:?}");
    assert!(numbers.windows(2).all(|w| w[1] == w[0] + 1), "{numbers:?}");
}

#[tokio::test]
async fn a_killed_server_ends_the_client_with_a_typed_error() {
    let server = TmuxServer::new();
    let client = connect(&server).await;
    let mut events = client.subscribe();
    let pane = open_pane(&client, "exec yes flood").await;
    output_until(&mut events, pane, b"flood\r\nflood").await;
    let pid = client.command("display-message -p '#{pid}'").await.unwrap();
    let pid = String::from_utf8_lossy(&pid[0]).into_owned();
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    let ended = next_matching(&mut events, "ended", |e| matches!(e, ClientEvent::Ended(_))).await;
    let ClientEvent::Ended(reason) = ended else {
        unreachable!()
    };
    assert!(reason.is_client_end(), "{reason:?}");
    let after = tokio::time::timeout(DEADLINE, client.command("display-message -p x"))
        .await
        .expect("a command after the end fails at once");
    assert_eq!(after, Err(reason.clone()));
    assert_eq!(client.closed().await, reason);
}

#[tokio::test]
async fn a_dead_tmux_process_ends_the_client_and_fails_waiting_commands() {
    let server = TmuxServer::new();
    let client = connect(&server).await;
    // A forged `%exit` in reply text neither ends the client nor becomes its
    // reason. (Inside a block a `%exit` line is taken as the notification,
    // as tmux can interleave real ones, so it leaves the reply text.)
    client
        .command(TmuxCommand::new("rename-window").arg("%exit forged"))
        .await
        .unwrap();
    let listed = client.command("list-windows -F '#{window_name}'").await;
    assert_eq!(listed.unwrap(), Vec::<bytes::Bytes>::new());
    assert_eq!(
        client.command("display-message -p alive").await.unwrap(),
        vec![bytes::Bytes::from("alive")]
    );
    assert_eq!(client.ended(), None);
    let pid = client.process_id().expect("a pid").to_string();
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    let reason = tokio::time::timeout(DEADLINE, client.closed())
        .await
        .expect("the end is noticed");
    assert!(
        matches!(reason, TmuxError::ProcessDied { .. }),
        "{reason:?}"
    );
    // A subscriber that arrives after the end still hears about it, once.
    let mut events = client.subscribe();
    assert_eq!(events.recv().await, Some(ClientEvent::Ended(reason)));
    assert_eq!(events.recv().await, None);
}

#[tokio::test]
async fn attach_to_a_missing_server_fails_clearly() {
    let server = TmuxServer::new();
    let mut config = clawmux::tmux::ClientConfig::attach(None);
    config.socket = Some(clawmux::tmux::Socket::Name(server.socket.clone()));
    config.config_file = Some("/dev/null".into());
    match clawmux::tmux::connect(config).await {
        Err(TmuxError::Startup { message }) => {
            assert!(message.contains("no sessions"), "{message}")
        }
        other => panic!("expected a start-up error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_slow_subscriber_lags_without_holding_up_the_others() {
    let server = TmuxServer::new();
    let client = connect(&server).await;
    let mut slow = client.subscribe();
    let mut fast = client.subscribe();
    let pane = open_pane(&client, "exec yes flood").await;
    // The fast subscriber keeps receiving while the slow one reads nothing.
    let mut outputs = 0;
    while outputs <= clawmux::tmux::EVENT_CAPACITY {
        next_matching(
            &mut fast,
            "output",
            |e| matches!(e, ClientEvent::Output { pane: p, .. } if *p == pane),
        )
        .await;
        outputs += 1;
    }
    match slow.recv().await {
        Some(ClientEvent::Lagged { missed }) => assert!(missed > 0),
        other => panic!("expected Lagged first, got {other:?}"),
    }
    // After the notice the slow subscriber simply goes on.
    assert!(slow.recv().await.is_some());
}

#[tokio::test]
async fn a_prefix_that_dies_at_start_up_reports_its_stderr() {
    // The prefix stands for `ssh host tmux`; this one fails like a bad host.
    let mut config = clawmux::tmux::ClientConfig::attach(None);
    config.program = ["sh", "-c", "echo 'ssh: no such host' >&2; exit 255", "sh"]
        .map(String::from)
        .to_vec();
    match clawmux::tmux::connect(config).await {
        Err(TmuxError::ProcessDied { status, stderr }) => {
            assert!(status.contains("255"), "{status}");
            assert_eq!(stderr, "ssh: no such host");
        }
        other => panic!("expected ProcessDied, got {other:?}"),
    }
}

#[tokio::test]
async fn a_pane_subscriber_gets_its_pane_and_the_events_about_no_pane_only() {
    let server = TmuxServer::new();
    let client = connect(&server).await;
    let mut all = client.subscribe();
    // The two panes start at once: each is waited for on its own copy of
    // the stream, so one pane's READY is not consumed waiting for the other.
    let mut all_b = client.subscribe();
    let a = open_pane(&client, &raw_pane("printf AAA")).await;
    let b = open_pane(&client, &raw_pane("printf BBB")).await;
    let mut only_a = client.subscribe_pane(a);
    let mut general = client.subscribe_general();
    output_until(&mut all, a, b"READY").await;
    output_until(&mut all_b, b, b"READY").await;
    client.send_keys(b, &["x"]).await.unwrap();
    output_until(&mut all_b, b, b"BBB").await;
    client.send_keys(a, &["x"]).await.unwrap();
    output_until(&mut all, a, b"AAA").await;
    server.new_session("other", "exec sleep 3600");
    let sessions_changed =
        |e: &ClientEvent| matches!(e, ClientEvent::Notification(Notification::SessionsChanged));
    next_matching(&mut all, "%sessions-changed", sessions_changed).await;

    // Up to the notification: a's output, nothing of b's.
    let mut from_a = Vec::new();
    loop {
        let event = next_matching(&mut only_a, "any event", |_| true).await;
        if sessions_changed(&event) {
            break;
        }
        assert!(event.pane().is_none_or(|p| p == a), "{event:?}");
        if let ClientEvent::Output { data, .. } = event {
            from_a.extend_from_slice(&data);
        }
    }
    assert!(contains(&from_a, b"AAA"), "{from_a:?}");
    // The general subscriber: no pane's events at all.
    loop {
        let event = next_matching(&mut general, "any event", |_| true).await;
        if sessions_changed(&event) {
            break;
        }
        assert_eq!(event.pane(), None, "{event:?}");
    }
}

#[tokio::test]
async fn a_captured_screen_puts_a_model_s_cursor_where_the_pane_s_is() {
    let server = TmuxServer::new();
    let client = connect(&server).await;
    let mut events = client.subscribe();
    let pane = open_pane(&client, &raw_pane("printf 'first\\r\\nsecond\\033[1;3H'")).await;
    output_until(&mut events, pane, b"READY").await;
    client.send_keys(pane, &["x"]).await.unwrap();
    output_until(&mut events, pane, b"second").await;
    let size = client
        .command(TmuxCommand::new("display-message").args([
            "-p",
            "-t",
            &pane.to_string(),
            "#{pane_width} #{pane_height}",
        ]))
        .await
        .unwrap();
    let size = String::from_utf8_lossy(&size[0]).into_owned();
    let (cols, rows) = size.split_once(' ').unwrap();
    let mut model = clawmux::pane::Pane::new(cols.parse().unwrap(), rows.parse().unwrap());

    let screen = client.capture_screen(pane).await.unwrap();
    model.feed(&screen);
    // What the program writes next lands where it does in the pane.
    model.feed(b"X");
    let rows = model.screen_rows();
    assert_eq!(rows[0], "REXDYfirst");
    assert_eq!(rows[1], "second");
}
