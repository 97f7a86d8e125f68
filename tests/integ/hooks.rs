//! `clawmux hook` → socket → `HookListener`, with recorded payloads, a real
//! tmux pane, a daemon that is down, and clients that misbehave.

use std::os::fd::AsRawFd;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use clawmux::hooks::{
    self, Envelope, HookError, HookEvent, HookKind, HookListener, HookSignal, MAX_LINE_BYTES,
};
use serde_json::json;
use tokio::io::AsyncWriteExt;

use super::{BIN, repo_file, stderr, stdout};
use crate::support::tmux::TmuxServer;

/// Deadline for an event to arrive (a bound on a hung test, not a measure).
const DEADLINE: Duration = Duration::from_secs(10);

fn payload(name: &str) -> Vec<u8> {
    let path = repo_file(&format!("tests/integ/payloads/{name}.json"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Runs `clawmux hook` with `stdin`, as Claude Code would.
async fn run_hook(home: &Path, stdin: &[u8], pane: Option<&str>) -> Output {
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.arg("hook")
        .env("CLAWMUX_HOME", home)
        .env_remove("CLAWMUX_LOG")
        .env_remove("TMUX_PANE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(pane) = pane {
        cmd.env("TMUX_PANE", pane);
    }
    let mut child = cmd.spawn().expect("spawn clawmux hook");
    let mut input = child.stdin.take().expect("piped stdin");
    input.write_all(stdin).await.expect("write stdin");
    drop(input);
    child
        .wait_with_output()
        .await
        .expect("wait for clawmux hook")
}

/// Claude Code's contract: exit 0, nothing on stdout; and we promised quiet.
fn assert_silent_success(out: &Output) {
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(out));
    assert_eq!(stdout(out), "", "clawmux hook must never write to stdout");
    assert_eq!(stderr(out), "");
}

async fn next_event(listener: &mut HookListener) -> HookEvent {
    tokio::time::timeout(DEADLINE, listener.next())
        .await
        .expect("a hook event within the deadline")
        .expect("the listener is running")
}

#[tokio::test]
async fn each_recorded_payload_reaches_the_daemon_typed_and_with_its_pane() {
    let home = tempfile::tempdir().unwrap();
    let mut listener = HookListener::bind(home.path()).unwrap();
    let cases: [(&str, HookKind, Option<HookSignal>); 9] = [
        (
            "stop",
            HookKind::Stop {
                stop_hook_active: false,
                last_assistant_message: None,
            },
            Some(HookSignal::TurnEnded),
        ),
        (
            "stop_hook_active",
            HookKind::Stop {
                stop_hook_active: true,
                last_assistant_message: None,
            },
            Some(HookSignal::TurnEnded),
        ),
        (
            "notification_permission_prompt",
            HookKind::Notification {
                notification_type: Some("permission_prompt".into()),
                message: "Claude needs your permission to use Bash".into(),
            },
            Some(HookSignal::ApprovalPending),
        ),
        (
            "notification_idle_prompt",
            HookKind::Notification {
                notification_type: Some("idle_prompt".into()),
                message: "Claude is waiting for your input".into(),
            },
            Some(HookSignal::WaitingForInput),
        ),
        (
            "permission_request_bash",
            HookKind::PermissionRequest {
                tool_name: "Bash".into(),
                tool_input: json!({"command": "npm test -- --runInBand", "description": "Run the test suite"}),
            },
            Some(HookSignal::ApprovalPending),
        ),
        (
            "permission_request_write",
            HookKind::PermissionRequest {
                tool_name: "Write".into(),
                tool_input: json!({
                    "file_path": "/home/dev/work/shop/src/cart/total.ts",
                    "content": "// Totals in cents, never floats.\nexport function total(items: { price: number; qty: number }[]): number {\n  return items.reduce((sum, i) => sum + i.price * i.qty, 0);\n}\n\nexport const CURRENCY = \"€\";\n",
                }),
            },
            Some(HookSignal::ApprovalPending),
        ),
        (
            "session_start_startup",
            HookKind::SessionStart {
                source: "startup".into(),
            },
            Some(HookSignal::SessionStarted),
        ),
        (
            "session_start_compact",
            HookKind::SessionStart {
                source: "compact".into(),
            },
            Some(HookSignal::SessionStarted),
        ),
        ("pre_tool_use", HookKind::Other("PreToolUse".into()), None),
    ];
    for (i, (name, kind, signal)) in cases.into_iter().enumerate() {
        let pane = format!("%{i}");
        let before = std::time::SystemTime::now();
        assert_silent_success(&run_hook(home.path(), &payload(name), Some(&pane)).await);
        let event = next_event(&mut listener).await;
        assert_eq!(event.event, kind, "{name}");
        assert_eq!(event.signal(), signal, "{name}");
        assert_eq!(event.tmux_pane.as_deref(), Some(pane.as_str()), "{name}");
        assert_eq!(
            event.session_id.as_deref(),
            Some("8f1c6a2e-4b7d-4e0a-9c35-2d1f7b9e6a41")
        );
        assert_eq!(event.cwd.as_deref(), Some(Path::new("/home/dev/work/shop")));
        assert!(event.transcript_path.is_some(), "{name}");
        // Millisecond resolution on the wire.
        assert!(
            event.received_at + Duration::from_millis(1) >= before,
            "{name}"
        );
    }
}

/// Payloads captured from the real Claude Code 2.1.197 (tests/agent/hooks.rs
/// saves them), through `clawmux hook` and the listener, fully typed.
#[tokio::test]
async fn claude_2_1_197_payloads_decode_with_what_they_ask_and_report() {
    use clawmux::hooks::{Question, QuestionOption, ToolRequest};
    let home = tempfile::tempdir().unwrap();
    let mut listener = HookListener::bind(home.path()).unwrap();
    let decoded = |name: &'static str| {
        let bytes = payload(&format!("claude-2.1.197/{name}"));
        let home = home.path().to_path_buf();
        async move {
            assert_silent_success(&run_hook(&home, &bytes, Some("%4")).await);
        }
    };
    let mut next = async |name: &'static str| {
        decoded(name).await;
        let event = next_event(&mut listener).await;
        assert_eq!(event.tmux_pane.as_deref(), Some("%4"), "{name}");
        assert!(event.session_id.is_some(), "{name}");
        event
    };

    let stop = next("stop").await;
    assert_eq!(
        stop.event,
        HookKind::Stop {
            stop_hook_active: false,
            last_assistant_message: Some("Created the marker file.".into()),
        }
    );
    assert_eq!(stop.signal(), Some(HookSignal::TurnEnded));

    for (name, error, says) in [
        (
            "stop_failure_500",
            "server_error",
            "API Error: 500 Internal server error.",
        ),
        (
            "stop_failure_401",
            "authentication_failed",
            "Invalid API key",
        ),
        (
            "stop_failure_400",
            "unknown",
            "API Error: 400 messages: text content blocks must be non-empty",
        ),
    ] {
        let event = next(name).await;
        let HookKind::StopFailure {
            error: got,
            last_assistant_message,
        } = &event.event
        else {
            panic!("{name}: {:?}", event.event);
        };
        assert_eq!(got.as_deref(), Some(error), "{name}");
        assert!(
            last_assistant_message
                .as_deref()
                .is_some_and(|m| m.starts_with(says)),
            "{name}: {last_assistant_message:?}"
        );
        // A failed turn is over too: the hook ends it.
        assert_eq!(event.signal(), Some(HookSignal::TurnEnded), "{name}");
    }

    let bash = next("permission_request_bash").await;
    assert_eq!(bash.signal(), Some(HookSignal::ApprovalPending));
    assert_eq!(
        bash.event.tool_request(),
        Some(ToolRequest::Bash {
            command: "touch made-by-bash.txt".into(),
            description: Some("Create a marker file".into()),
        })
    );

    let question = next("permission_request_ask_user_question").await;
    let option = |label: &str, description: &str| QuestionOption {
        label: label.into(),
        description: Some(description.into()),
    };
    assert_eq!(
        question.event.tool_request(),
        Some(ToolRequest::Question {
            questions: vec![Question {
                question: "Which database should we use?".into(),
                header: Some("Database".into()),
                multi_select: false,
                options: vec![
                    option("Postgres", "Relational server, strong consistency"),
                    option("SQLite", "Embedded file, zero setup"),
                    option("DuckDB", "Columnar, for analytics"),
                ],
            }],
        })
    );

    let plan = next("permission_request_exit_plan_mode").await;
    let Some(ToolRequest::Plan {
        plan,
        plan_file_path,
    }) = plan.event.tool_request()
    else {
        panic!("not a plan: {:?}", plan.event);
    };
    assert_eq!(
        plan,
        "# Parser plan\n\n1. Write the tokenizer\n2. Write the parser\n3. Add tests"
    );
    assert!(plan_file_path.is_some_and(|p| p.contains("/.claude/plans/") && p.ends_with(".md")));

    for (name, tool, file) in [
        ("permission_request_edit", "Edit", "/notes.txt"),
        ("permission_request_write_new", "Write", "/hello.py"),
    ] {
        let event = next(name).await;
        match event.event.tool_request() {
            Some(ToolRequest::File { tool: t, file_path }) => {
                assert_eq!(t, tool, "{name}");
                assert!(file_path.ends_with(file), "{name}: {file_path}");
            }
            other => panic!("{name}: {other:?}"),
        }
    }

    let note = next("notification_permission_prompt").await;
    assert_eq!(
        note.event,
        HookKind::Notification {
            notification_type: Some("permission_prompt".into()),
            message: "Claude needs your permission".into(),
        }
    );
    assert_eq!(note.signal(), Some(HookSignal::ApprovalPending));

    for (name, make) in [("task_created", true), ("task_completed", false)] {
        let event = next(name).await;
        assert_eq!(event.signal(), Some(HookSignal::TaskProgress), "{name}");
        let (id, subject) = match event.event {
            HookKind::TaskCreated {
                task_id,
                task_subject,
            } if make => (task_id, task_subject),
            HookKind::TaskCompleted {
                task_id,
                task_subject,
            } if !make => (task_id, task_subject),
            other => panic!("{name}: {other:?}"),
        };
        assert_eq!(id.as_deref(), Some("1"), "{name}");
        assert_eq!(subject.as_deref(), Some("Write the parser"), "{name}");
    }

    let start = next("session_start").await;
    assert_eq!(
        start.event,
        HookKind::SessionStart {
            source: "startup".into()
        }
    );
}

#[tokio::test]
async fn a_hook_run_inside_a_tmux_pane_reports_that_pane() {
    let home = tempfile::tempdir().unwrap();
    let mut listener = HookListener::bind(home.path()).unwrap();
    let tmux = TmuxServer::new();
    let stop = repo_file("tests/integ/payloads/stop.json");
    let command = format!("'{BIN}' hook < '{}'", stop.display());
    let pane = tmux.ok(&[
        "new-session",
        "-d",
        "-P",
        "-F",
        "#{pane_id}",
        "-e",
        &format!("CLAWMUX_HOME={}", home.path().display()),
        "-s",
        "hook",
        &command,
    ]);
    let event = next_event(&mut listener).await;
    assert_eq!(
        event.event,
        HookKind::Stop {
            stop_hook_active: false,
            last_assistant_message: None,
        }
    );
    assert_eq!(event.tmux_pane.as_deref(), Some(pane.trim()));
}

#[tokio::test]
async fn with_the_daemon_down_the_hook_succeeds_silently() {
    let home = tempfile::tempdir().unwrap();
    // No socket at all.
    assert_silent_success(&run_hook(home.path(), &payload("stop"), Some("%1")).await);
    // A socket file left by a daemon that is gone.
    let stale = std::os::unix::net::UnixListener::bind(home.path().join("hooks.sock")).unwrap();
    drop(stale);
    assert_silent_success(&run_hook(home.path(), &payload("stop"), Some("%1")).await);
    // A state directory whose socket path cannot exist.
    let deep = home.path().join("d".repeat(120));
    assert_silent_success(&run_hook(&deep, &payload("stop"), None).await);
}

#[tokio::test]
async fn input_that_is_not_a_hook_is_dropped_silently_and_the_next_hook_arrives() {
    let home = tempfile::tempdir().unwrap();
    let mut listener = HookListener::bind(home.path()).unwrap();
    let too_big = vec![b' '; hooks::MAX_PAYLOAD_BYTES + 1];
    for junk in [
        &b""[..],
        b"not json",
        b"[\"Stop\"]",
        br#"{"session_id": "s"}"#,
        br#"{"hook_event_name": "Stop""#,
        &too_big,
    ] {
        assert_silent_success(&run_hook(home.path(), junk, Some("%1")).await);
    }
    assert_silent_success(
        &run_hook(home.path(), &payload("session_start_startup"), Some("%9")).await,
    );
    let event = next_event(&mut listener).await;
    assert_eq!(
        event.event,
        HookKind::SessionStart {
            source: "startup".into()
        }
    );
    assert_eq!(event.tmux_pane.as_deref(), Some("%9"));
}

#[tokio::test]
async fn the_listener_survives_malformed_oversized_and_stalled_clients() {
    let home = tempfile::tempdir().unwrap();
    let mut listener = HookListener::bind(home.path()).unwrap();
    let path = listener.path().to_path_buf();
    let good = |pane: &str| {
        Envelope::new(&payload("stop"), Some(pane), std::time::SystemTime::now())
            .unwrap()
            .as_bytes()
            .to_vec()
    };

    // A client that connects and never sends must not hold up the others.
    let _stalled = tokio::net::UnixStream::connect(&path).await.unwrap();

    // Garbage lines around a good one on the same connection.
    let mut mixed = b"garbage\n{\"payload\":1}\n".to_vec();
    mixed.extend(good("%1"));
    mixed.extend(b"\xff\xfe\n");
    let mut client = tokio::net::UnixStream::connect(&path).await.unwrap();
    client.write_all(&mixed).await.unwrap();
    drop(client);
    assert_eq!(
        next_event(&mut listener).await.tmux_pane.as_deref(),
        Some("%1")
    );

    // A line over the limit is dropped whole, even if it ends in a good one.
    let mut huge = vec![b'x'; MAX_LINE_BYTES];
    huge.push(b'\n');
    huge.extend(good("%2"));
    let mut client = tokio::net::UnixStream::connect(&path).await.unwrap();
    // The listener stops reading at the limit and hangs up: a broken pipe
    // here is the expected outcome, not a failure.
    let _ = client.write_all(&huge).await;
    drop(client);

    let mut client = tokio::net::UnixStream::connect(&path).await.unwrap();
    client.write_all(&good("%3")).await.unwrap();
    drop(client);
    assert_eq!(
        next_event(&mut listener).await.tmux_pane.as_deref(),
        Some("%3")
    );
}

#[tokio::test]
async fn bind_owns_the_socket_replaces_only_stale_ones_and_cleans_up() {
    let home = tempfile::tempdir().unwrap();
    let state = home.path().join("state");
    let sock = state.join("hooks.sock");
    {
        let listener = HookListener::bind(&state).unwrap();
        assert_eq!(listener.path(), sock);
        let mode = std::fs::metadata(&sock).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let dir_mode = std::fs::metadata(&state).unwrap().permissions().mode();
        assert_eq!(dir_mode & 0o777, 0o700);
        // A second daemon must not steal the socket of a live one.
        assert!(matches!(
            HookListener::bind(&state),
            Err(HookError::InUse(_))
        ));
    }
    assert!(!sock.exists(), "the socket file is removed on drop");

    // A leftover socket is replaced and works.
    drop(std::os::unix::net::UnixListener::bind(&sock).unwrap());
    let mut listener = HookListener::bind(&state).unwrap();
    assert_silent_success(&run_hook(&state, &payload("stop"), None).await);
    assert_eq!(next_event(&mut listener).await.tmux_pane, None);
    drop(listener);

    // Someone else's file is never removed.
    std::fs::write(&sock, "not a socket").unwrap();
    assert!(matches!(
        HookListener::bind(&state),
        Err(HookError::NotASocket(_))
    ));
    assert_eq!(std::fs::read_to_string(&sock).unwrap(), "not a socket");
}

#[tokio::test]
async fn a_state_dir_too_long_for_a_socket_is_a_clear_error() {
    let home = tempfile::tempdir().unwrap();
    let deep = home.path().join("d".repeat(100));
    let err = HookListener::bind(&deep).err().expect("bind must fail");
    assert!(matches!(err, HookError::SocketPathTooLong { .. }), "{err}");
    assert!(err.to_string().contains("CLAWMUX_HOME"), "{err}");
    assert!(
        !deep.exists(),
        "nothing is created for a path that cannot work"
    );
    let envelope = Envelope::new(&payload("stop"), None, std::time::SystemTime::now()).unwrap();
    assert!(matches!(
        hooks::forward(&deep, &envelope),
        Err(HookError::SocketPathTooLong { .. })
    ));
}

#[test]
fn forward_gives_up_instead_of_waiting_on_a_daemon_that_does_not_accept() {
    let home = tempfile::tempdir().unwrap();
    let listener = std::os::unix::net::UnixListener::bind(home.path().join("hooks.sock")).unwrap();
    // Shrink the backlog to one pending connection and never accept: the
    // state of a daemon that is stuck.
    // SAFETY: listen(2) on a socket we own.
    assert_eq!(unsafe { libc::listen(listener.as_raw_fd(), 0) }, 0);
    let envelope = Envelope::new(&payload("stop"), None, std::time::SystemTime::now()).unwrap();
    let results: Vec<_> = (0..4)
        .map(|_| hooks::forward(home.path(), &envelope))
        .collect();
    assert!(results[0].is_ok(), "{:?}", results[0]);
    let timed_out = results.iter().any(|r| {
        matches!(r, Err(HookError::Io { action: "connect to", source, .. })
            if source.kind() == std::io::ErrorKind::WouldBlock)
    });
    assert!(timed_out, "{results:?}");
}
