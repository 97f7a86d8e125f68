//! The committed recordings of the real Claude Code: clean, timed, and
//! replayed through `clawmux detect` at their recorded timing.

use std::path::PathBuf;

use clawmux::control::recording::RecordingReader;
use serde_json::Value;

use clawmux::agents::claude::{OLDEST_SUPPORTED, TESTED_VERSIONS};

use crate::support::claude::{clawmux_stdin, fixtures_dir_of};

use crate::support::expect::{self, replay};

/// Every scenario with its recording, and a phrase its screen must show
/// (words only: Claude Code moves the cursor instead of writing spaces).
pub const SCENARIOS: [(&str, &str); 13] = [
    ("bash_permission", "proceed?"),
    ("bash_denied", "Interrupted"),
    ("edit_file", "notes.txt"),
    ("create_file", "hello.py"),
    ("ask_question", "database"),
    ("plan_mode", "tokenizer"),
    ("api_error_500", "500"),
    ("api_error_529", "529"),
    ("api_error_401", "Invalid"),
    ("api_error_400", "400"),
    ("long_answer", "long answer"),
    ("task_list", "parser"),
    ("quoting_reply", "quoted"),
];

fn fixture(release: &str, name: &str) -> PathBuf {
    fixtures_dir_of(release).join(format!("{name}.rec"))
}

/// The recording of `name` on the oldest supported release (the one the
/// recorded hook payloads come from).
fn read(name: &str) -> Vec<u8> {
    read_of(OLDEST_SUPPORTED, name)
}

fn read_of(release: &str, name: &str) -> Vec<u8> {
    let path = fixture(release, name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn every_recording_is_timed_clean_and_shows_its_scenario() {
    for (release, (name, phrase)) in TESTED_VERSIONS
        .into_iter()
        .flat_map(|r| SCENARIOS.map(|s| (r, s)))
    {
        let name = &format!("{release}/{name}");
        let bytes = read_of(release, name.rsplit('/').next().unwrap_or(name));
        let mut reader = RecordingReader::new(&bytes[..]).expect("header");
        let header = reader.header().cloned().expect("a timed recording");
        assert_eq!(header.size(), Some((120, 40)), "{name}");
        assert!(
            header
                .tmux
                .as_deref()
                .is_some_and(|v| v.starts_with("tmux ")),
            "{name}"
        );
        // Strip the times: what is left is the plain stream tmux wrote.
        let mut plain = Vec::new();
        let mut last = 0;
        while let Some(chunk) = reader.next_chunk().expect("well-formed") {
            if let Some(at) = chunk.at_ms {
                assert!(at >= last, "{name}: times go back");
                last = at;
            }
            plain.extend_from_slice(chunk.bytes);
        }
        assert!(
            last > 1000,
            "{name}: a real run takes seconds, got {last} ms"
        );
        let (code, timed_out, err) = clawmux_stdin(&["decode", "--pane", "%0"], &bytes);
        assert_eq!(code, 0, "{name}: {err}");
        let (code, plain_out, err) = clawmux_stdin(&["decode", "--pane", "%0"], &plain);
        assert_eq!(code, 0, "{name}: {err}");
        assert_eq!(timed_out, plain_out, "{name}: timed and plain decode alike");
        assert!(timed_out.contains(phrase), "{name}: {phrase:?} not drawn");
    }
}

/// A bad recording is a clear usage error (exit 2) naming the line.
#[test]
fn a_broken_recording_is_refused_with_its_line() {
    let mut bytes = read("bash_permission");
    bytes.extend_from_slice(b"%output %0 no-time\n");
    let (code, _, err) = clawmux_stdin(&["detect", "--profile", "claude"], &bytes);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("expected `+<milliseconds> `"), "{err}");
    let (code, _, err) = clawmux_stdin(&["decode"], &bytes);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("recording line"), "{err}");
}

/// The replay's clock is the recording's: the dialog is reported after the
/// line that drew it arrived, not at a made-up time.
#[test]
fn replay_follows_the_recorded_times() {
    let bytes = read("bash_permission");
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let drawn_at: u64 = text
        .lines()
        .find(|l| l.contains("proceed?"))
        .and_then(|l| l.strip_prefix('+'))
        .and_then(|l| l.split(' ').next())
        .and_then(|ms| ms.parse().ok())
        .expect("the dialog's line");
    let ds = replay(&bytes);
    let approval = ds
        .iter()
        .find(|d| d["kind"] == "approval")
        .expect("an approval");
    let at = approval["at_ms"].as_u64().expect("at_ms");
    // Reported once still for the quiet window, long before the next
    // recorded event (the answer came ~250 ms later).
    assert!(
        at >= drawn_at && at < drawn_at + 250,
        "drawn {drawn_at}, reported {at}"
    );
    // Same input, same output.
    assert_eq!(replay(&bytes), ds);
}

/// Every tested release's recording of `name` replays to its expected
/// detections.
fn check_replay(name: &str) {
    for release in TESTED_VERSIONS {
        let ds = replay(&read_of(release, name));
        if let Err(e) = expect::check_for(release, name, &ds) {
            panic!("{name} on {release} replayed: {e}");
        }
    }
}

macro_rules! replay_test {
    ($name:ident) => {
        #[test]
        fn $name() {
            check_replay(stringify!($name));
        }
    };
    ($name:ident, $why:literal) => {
        #[test]
        #[ignore = $why]
        fn $name() {
            check_replay(stringify!($name));
        }
    };
}

replay_test!(bash_permission);
replay_test!(long_answer);
replay_test!(task_list);
replay_test!(api_error_400);
replay_test!(api_error_401);
replay_test!(api_error_529);
replay_test!(bash_denied);
replay_test!(edit_file);
replay_test!(create_file);
replay_test!(ask_question);
replay_test!(plan_mode);
replay_test!(api_error_500);
replay_test!(quoting_reply);

/// A turn drawn whole in one frame: Claude Code answered the 400 at once,
/// so no busy row came between the typed command and the error (recorded
/// once in 11 runs on a loaded machine). Nothing told the watcher a
/// command was typed: its submission is read off the input box emptying
/// into the transcript.
#[test]
fn a_turn_drawn_in_one_frame_still_ends_with_its_error() {
    let ds = replay(&read("api_error_400_in_one_frame"));
    assert!(ds.iter().all(|d| d["kind"] != "busy"), "{ds:#?}");
    if let Err(e) = expect::check_for(OLDEST_SUPPORTED, "api_error_400", &ds) {
        panic!("replayed: {e}");
    }
}

/// GSD's new-project on Claude Code 2.1.197 against the streaming fake
/// model: the spinner goes while the answer streams, and the answer is drawn
/// a line at a time, so the screen looked idle for ~400 ms between two
/// lines. That pause once ended the turn (the next command was typed and
/// Claude Code queued it: `Press up to edit queued messages`); no turn ends
/// before the turn's closing row (`✻ Worked for 13s`) is drawn.
#[test]
fn a_pause_while_the_answer_streams_does_not_end_the_turn() {
    let bytes = read("gsd_streaming");
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let closed_at: u64 = text
        .lines()
        .find(|l| l.contains("Worked for"))
        .and_then(|l| l.strip_prefix('+'))
        .and_then(|l| l.split(' ').next())
        .and_then(|ms| ms.parse().ok())
        .expect("the closing row's line");
    let (code, out, err) = clawmux_stdin(&["detect", "--profile", "gsd"], &bytes);
    assert_eq!(code, 0, "{err}");
    let ds: Vec<Value> = out
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let ends: Vec<u64> = (ds.iter())
        .filter(|d| d["kind"] == "completed")
        .filter_map(|d| d["at_ms"].as_u64())
        .collect();
    assert!(!ends.is_empty(), "{out}");
    assert!(
        ends.iter().all(|at| *at > closed_at),
        "a turn ended at {ends:?}, before its closing row at {closed_at} ms"
    );
}

/// Each recorded dialog with the `PermissionRequest` payload the same
/// scenario sent (`tests/integ/payloads/claude-2.1.197/`).
const DIALOG_HOOKS: [(&str, &str); 5] = [
    ("bash_permission", "permission_request_bash"),
    ("edit_file", "permission_request_edit"),
    ("create_file", "permission_request_write_new"),
    ("ask_question", "permission_request_ask_user_question"),
    ("plan_mode", "permission_request_exit_plan_mode"),
];

/// The first dialog `clawmux detect` reads off a recording.
fn first_dialog(name: &str) -> clawmux::detect::Detection {
    let detections = replay(&read(name));
    let d = (detections.iter())
        .find(|d| d["kind"] == "approval")
        .unwrap_or_else(|| panic!("{name}: no dialog detected"));
    fn parse<T: serde::de::DeserializeOwned>(d: &Value, key: &str) -> T {
        serde_json::from_value(d[key].clone()).expect(key)
    }
    clawmux::detect::Detection {
        pane: clawmux::control::PaneId(0),
        at_ms: clawmux::detect::Millis(0),
        kind: clawmux::detect::DetectionKind::Approval {
            approval: parse(d, "approval"),
            question: parse(d, "question"),
            body: parse(d, "body"),
            options: parse(d, "options"),
        },
        context: String::new(),
    }
}

/// The tool request of a recorded `PermissionRequest` payload, decoded as
/// the daemon decodes it.
fn recorded_request(payload: &str) -> clawmux::hooks::ToolRequest {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
        "tests/integ/payloads/claude-2.1.197/{payload}.json"
    ));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let envelope = clawmux::hooks::Envelope::new(&bytes, Some("%0"), std::time::SystemTime::now())
        .expect("a recorded payload is valid");
    let event = clawmux::hooks::decode_line(envelope.as_bytes()).expect("decodes");
    event.event.tool_request().expect("a PermissionRequest")
}

/// The mismatches a runner reports for `dialog` with `request` known.
fn mismatches(
    request: clawmux::hooks::ToolRequest,
    dialog: clawmux::detect::Detection,
) -> Vec<String> {
    use clawmux::bridge::project::ProjectEventKind;
    use clawmux::bridge::project::runner::{JobRunner, Step};
    let mut runner = JobRunner::default();
    let mut steps = runner.hook_permission(request);
    steps.extend(runner.on_detection(dialog, &clawmux::store::ids::session("cm-demo")));
    (steps.into_iter())
        .filter_map(|s| match s {
            Step::Emit(_, ProjectEventKind::DialogMismatch { detail, .. }) => Some(detail),
            _ => None,
        })
        .collect()
}

#[test]
fn permission_hooks_confirm_the_dialogs_read_off_the_real_agent() {
    for (recording, payload) in DIALOG_HOOKS {
        let found = mismatches(recorded_request(payload), first_dialog(recording));
        assert!(found.is_empty(), "{recording} vs {payload}: {found:?}");
    }
    // The check can fail: each dialog against another scenario's hook.
    for (i, (recording, _)) in DIALOG_HOOKS.iter().enumerate() {
        let (_, other) = DIALOG_HOOKS[(i + 3) % DIALOG_HOOKS.len()];
        let found = mismatches(recorded_request(other), first_dialog(recording));
        assert!(!found.is_empty(), "{recording} vs {other}: not told apart");
    }
}
