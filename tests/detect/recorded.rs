//! Recordings of the real Claude Code 2.1.197 (made with `clawmux record`
//! against the project's fake API, in `recordings/`) replayed at their
//! recorded timing through a [`StreamWatcher`]: the detections a live
//! watcher would have made.

use clawmux::detect::{
    ApprovalKind, Detection, DetectionKind, DetectorConfig, Millis, Profiles, StreamWatcher,
};

/// Replays `rec` whole lines at a time and one byte at a time: both must
/// give the same detections.
fn replay(rec: &str) -> Vec<Detection> {
    let whole = replay_with(rec, false);
    assert_eq!(whole, replay_with(rec, true), "byte by byte differs");
    whole
}

/// Replays a `clawmux-recording v1` file: each line `+<ms> <control line>`
/// fed at its time (`bytewise`: one byte per feed), what falls due in
/// between fired on time.
fn replay_with(rec: &str, bytewise: bool) -> Vec<Detection> {
    let mut lines = rec.lines();
    let header = lines.next().unwrap();
    assert!(header.starts_with("# clawmux-recording v1"), "{header}");
    let meta: serde_json::Value = header
        .split_once(' ')
        .and_then(|(_, rest)| rest.find('{').map(|at| &rest[at..]))
        .and_then(|j| serde_json::from_str(j).ok())
        .unwrap_or_default();
    let cols = meta["cols"].as_u64().unwrap_or(80) as u16;
    let rows = meta["rows"].as_u64().unwrap_or(24) as u16;
    let profile = Profiles::defaults().unwrap().get("claude").unwrap();
    let mut w = StreamWatcher::new(profile, DetectorConfig::default(), (cols, rows));
    let mut seen = Vec::new();
    let mut last = Millis(0);
    for line in lines {
        let (at, control) = line.split_once(' ').unwrap();
        let at = Millis(at.trim_start_matches('+').parse().unwrap());
        while let Some(due) = w.next_deadline().filter(|d| *d <= at) {
            w.tick(due, &mut |d| seen.push(d));
        }
        let bytes = format!("{control}\n");
        if bytewise {
            for b in bytes.as_bytes() {
                w.feed(at, std::slice::from_ref(b), &mut |d| seen.push(d));
            }
        } else {
            w.feed(at, bytes.as_bytes(), &mut |d| seen.push(d));
        }
        last = at;
    }
    w.finish(last, &mut |d| seen.push(d));
    w.tick(Millis(last.0 + 10_000), &mut |d| seen.push(d));
    seen
}

macro_rules! rec {
    ($name:literal) => {
        replay(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/detect/recordings/",
            $name,
            ".rec"
        )))
    };
}

fn kinds(seen: &[Detection]) -> Vec<String> {
    seen.iter()
        .map(|d| {
            let json: serde_json::Value = serde_json::from_str(&d.to_json()).unwrap();
            json["kind"].as_str().unwrap().to_owned()
        })
        .collect()
}

/// An approval's kind, question, body and (key, label, description)s.
type Asked = (
    ApprovalKind,
    String,
    String,
    Vec<(String, String, Option<String>)>,
);

fn approval(seen: &[Detection]) -> Asked {
    seen.iter()
        .find_map(|d| match &d.kind {
            DetectionKind::Approval {
                approval,
                question,
                body,
                options,
            } => Some((
                *approval,
                question.clone(),
                body.clone(),
                options
                    .iter()
                    .map(|o| (o.key.clone(), o.label.clone(), o.description.clone()))
                    .collect(),
            )),
            _ => None,
        })
        .expect("an approval")
}

fn line_of(seen: &[Detection], kind: &str) -> String {
    seen.iter()
        .find_map(|d| match (&d.kind, kind) {
            (DetectionKind::Error { line }, "error")
            | (DetectionKind::Interrupted { line }, "interrupted")
            | (DetectionKind::Rejected { line }, "rejected") => Some(line.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no {kind}"))
}

#[test]
fn api_errors_end_the_turn_once_and_retries_are_a_status() {
    let seen = rec!("api_error_400");
    assert_eq!(kinds(&seen), ["busy", "error", "completed"]);
    assert_eq!(
        line_of(&seen, "error"),
        "● API Error: 400 messages: text content blocks must be non-empty"
    );
    for (seen, start) in [
        (
            rec!("api_error_500"),
            "● API Error: 500 Internal server error.",
        ),
        (rec!("api_error_529"), "● API Error: 529 Overloaded."),
        (
            rec!("api_error_401"),
            "⎿  Invalid API key · Fix external API key",
        ),
    ] {
        assert_eq!(kinds(&seen), ["busy", "progress", "error", "completed"]);
        assert!(
            matches!(&seen[1].kind, DetectionKind::Progress(p) if p.stage.as_deref() == Some("retrying 1/1")),
            "{:?}",
            seen[1]
        );
        assert!(line_of(&seen, "error").starts_with(start), "{seen:#?}");
    }
}

#[test]
fn replies_that_quote_errors_and_prompts_are_plain_completions() {
    for seen in [
        rec!("quoting_reply"),
        rec!("long_answer"),
        rec!("task_list"),
    ] {
        assert_eq!(kinds(&seen), ["busy", "completed"], "{seen:#?}");
    }
}

#[test]
fn permission_then_yes_and_permission_then_no() {
    let seen = rec!("bash_permission");
    assert_eq!(
        kinds(&seen),
        ["busy", "approval", "busy", "approval_gone", "completed"]
    );
    let (kind, question, body, options) = approval(&seen);
    assert_eq!(kind, ApprovalKind::Permission);
    assert_eq!(question, "Do you want to proceed?");
    assert_eq!(
        body,
        "Bash command\n\n  touch made-by-bash.txt\n  Create a marker file"
    );
    let labels: Vec<&str> = options.iter().map(|o| o.1.as_str()).collect();
    assert_eq!(
        labels,
        [
            "Yes",
            "Yes, and always allow access to project/ from this project",
            "No"
        ]
    );
    let seen = rec!("bash_denied");
    assert_eq!(
        kinds(&seen),
        [
            "busy",
            "approval",
            "approval_gone",
            "interrupted",
            "completed"
        ]
    );
    assert_eq!(
        line_of(&seen, "interrupted"),
        "⎿  Interrupted · What should Claude do instead?"
    );
}

#[test]
fn edit_create_question_and_plan_dialogs_are_one_approval_each() {
    for (seen, want, question) in [
        (
            rec!("edit_file"),
            ApprovalKind::Edit,
            "Do you want to make this edit to notes.txt?",
        ),
        (
            rec!("create_file"),
            ApprovalKind::Create,
            "Do you want to create hello.py?",
        ),
        (
            rec!("ask_question"),
            ApprovalKind::Question,
            "Which database should we use?",
        ),
        (
            rec!("plan_mode"),
            ApprovalKind::Plan,
            "Claude has written up a plan and is ready to execute. Would you like to proceed?",
        ),
    ] {
        assert_eq!(
            kinds(&seen),
            ["busy", "approval", "busy", "approval_gone", "completed"],
            "{question}"
        );
        let (kind, q, _, _) = approval(&seen);
        assert_eq!((kind, q.as_str()), (want, question));
    }
    let (_, _, body, _) = approval(&rec!("create_file"));
    assert!(body.starts_with("Create file\nhello.py\n"), "{body}");
    assert!(body.contains("print('hello')"), "{body}");
    let (_, _, body, _) = approval(&rec!("plan_mode"));
    assert!(
        body.contains("1. Write the tokenizer\n2. Write the parser\n3. Add tests"),
        "{body}"
    );
    let (_, _, _, options) = approval(&rec!("ask_question"));
    assert_eq!(
        options[0],
        (
            "1".to_owned(),
            "Postgres".to_owned(),
            Some("Relational server, strong consistency".to_owned())
        )
    );
    let last = options.last().unwrap();
    assert_eq!(last.1, "Chat about this");
}
