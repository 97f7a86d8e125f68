//! Claude Code 2.1.337, the release that drew its API errors with a new
//! glyph (`∷ API Error: 500 …` where 2.1.332 drew `● API Error: 500 …`):
//! its recordings (`tests/fixtures/claude-2.1.337/`, made by the live
//! scenarios of `tests/agent/live.rs` with `CLAWMUX_UPDATE_FIXTURES=1`)
//! replayed sans-IO at their recorded times, whole and one byte at a time,
//! and what each must show: the final API error once (its second row and
//! the input box's `❯ Resend your message to try again` neither a second
//! error nor a turn still open), the footer's mode, a permission prompt, a
//! question and a plain turn's end.

use clawmux::detect::{
    ApprovalKind, Detection, DetectionKind, DetectorConfig, Millis, PaneId, Profiles, StreamWatcher,
};

use crate::support::scenarios;

/// The release these recordings are of.
const RELEASE: &str = "2.1.337";

fn recording(name: &str) -> Vec<u8> {
    let path = crate::support::claude::fixtures_dir_of(RELEASE).join(format!("{name}.rec"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// What a replay leaves: the detections, the input box's text and the
/// footer's mode on the last screen, and the footer's first row.
struct Replayed {
    seen: Vec<Detection>,
    input: Option<String>,
    mode: Option<String>,
    footer: Option<String>,
}

/// Replays `name` through a watcher with the `claude` profile, whole
/// `%output` lines or one byte at a time; both must give the same
/// detections.
fn replay(name: &str) -> Replayed {
    replay_typed(name, None)
}

/// [`replay`], the watcher told that `typed` is typed just before the
/// recording first draws it (as the daemon tells it when it types).
fn replay_typed(name: &str, typed: Option<&str>) -> Replayed {
    let whole = replay_with(name, typed, false);
    let bytewise = replay_with(name, typed, true);
    assert_eq!(whole.seen, bytewise.seen, "{name}: byte by byte differs");
    whole
}

fn replay_with(name: &str, mut typed: Option<&str>, bytewise: bool) -> Replayed {
    let bytes = recording(name);
    let profile = Profiles::defaults().unwrap().get("claude").unwrap();
    let mut w = StreamWatcher::new(profile.clone(), DetectorConfig::default(), (120, 40));
    let mut seen = Vec::new();
    let mut last = Millis(0);
    for (at, line) in super::timed_lines(&bytes) {
        let at = Millis(at);
        while let Some(due) = w.next_deadline().filter(|d| *d <= at) {
            w.tick(due, &mut |d| seen.push(d));
        }
        if let Some(command) = typed.filter(|c| contains(&line, c)) {
            w.pane(PaneId(0)).expect("drawn before").typed(command);
            typed = None;
        }
        if bytewise {
            for b in &line {
                w.feed(at, std::slice::from_ref(b), &mut |d| seen.push(d));
            }
        } else {
            w.feed(at, &line, &mut |d| seen.push(d));
        }
        last = at;
    }
    w.finish(last, &mut |d| seen.push(d));
    w.tick(Millis(last.0 + 10_000), &mut |d| seen.push(d));
    let pane = w.pane(PaneId(0)).expect("the recorded pane");
    let footer = pane.footer_rows();
    Replayed {
        seen,
        input: pane.look().input,
        mode: profile.footer_mode(footer.iter().map(String::as_str)),
        footer: footer.first().map(|r| r.trim().to_owned()),
    }
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

fn kinds(seen: &[Detection]) -> Vec<String> {
    (seen.iter())
        .map(|d| {
            let json: serde_json::Value = serde_json::from_str(&d.to_json()).unwrap();
            json["kind"].as_str().unwrap_or("").to_owned()
        })
        .collect()
}

fn errors(seen: &[Detection]) -> Vec<&str> {
    (seen.iter())
        .filter_map(|d| match &d.kind {
            DetectionKind::Error { line } => Some(line.as_str()),
            _ => None,
        })
        .collect()
}

/// An approval's kind, question and (key, label)s.
type Asked = (ApprovalKind, String, Vec<(String, String)>);

/// The approvals, as asked.
fn approvals(seen: &[Detection]) -> Vec<Asked> {
    (seen.iter())
        .filter_map(|d| match &d.kind {
            DetectionKind::Approval {
                approval,
                question,
                options,
                ..
            } => Some((
                *approval,
                question.clone(),
                (options.iter())
                    .map(|o| (o.key.clone(), o.label.clone()))
                    .collect(),
            )),
            _ => None,
        })
        .collect()
}

/// The 500 Claude Code gave up on after its retry: one error, its first
/// row as drawn (`∷`, not 2.1.332's `●`), after the retry's status and
/// before the turn's one end; the row under it and the input box's resend
/// hint are neither.
#[test]
fn the_api_error_500_is_one_error_with_its_new_glyph_then_the_turns_end() {
    let r = replay("api_error_500");
    assert_eq!(
        kinds(&r.seen),
        ["busy", "progress", "error", "completed"],
        "{:#?}",
        r.seen
    );
    assert!(
        matches!(&r.seen[1].kind, DetectionKind::Progress(p) if p.stage.as_deref() == Some("retrying 1/1")),
        "{:?}",
        r.seen[1]
    );
    assert_eq!(
        errors(&r.seen),
        [
            "∷ API Error: 500 Internal server error. This is a server-side issue, usually temporary — try again in a moment."
        ]
    );
    let context = &r.seen[2].context;
    assert!(
        context.contains("If it persists, check your inference gateway (127.0.0.1:"),
        "{context}"
    );
    assert_eq!(r.input.as_deref(), Some("Resend your message to try again"));
    assert_eq!(r.mode.as_deref(), Some("manual"));
    assert_eq!(
        r.footer.as_deref(),
        Some("⏸ manual mode on · ? for shortcuts · ← for agents")
    );
}

/// The other final API errors of 2.1.337 start the same way.
#[test]
fn the_api_errors_400_and_529_start_with_the_new_glyph() {
    for (name, start) in [
        ("api_error_400", "∷ API Error: 400 messages:"),
        ("api_error_529", "∷ API Error: 529 Overloaded."),
    ] {
        let r = replay(name);
        let found = errors(&r.seen);
        assert!(
            matches!(found[..], [line] if line.starts_with(start)),
            "{name}: {found:?}"
        );
        assert_eq!(kinds(&r.seen).last().map(String::as_str), Some("completed"));
    }
}

/// A Bash command's dialog: one permission prompt with its four options
/// (as on 2.1.332), gone once answered, then the turn's end.
#[test]
fn the_permission_prompt_is_one_approval_with_four_options() {
    let r = replay("bash_permission");
    let asked = approvals(&r.seen);
    let [(kind, question, options)] = &asked[..] else {
        panic!("{:#?}", r.seen)
    };
    assert_eq!(*kind, ApprovalKind::Permission);
    assert_eq!(question, "Do you want to proceed?");
    let keys: Vec<&str> = options.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["1", "2", "3", "4"]);
    assert_eq!(options[0].1, "Yes");
    assert!(
        options[2].1.starts_with("Yes, and switch to auto mode"),
        "{options:?}"
    );
    assert_eq!(options[3].1, "No");
    assert_eq!(
        kinds(&r.seen)
            .iter()
            .filter(|k| *k == "approval_gone")
            .count(),
        1
    );
    assert!(errors(&r.seen).is_empty(), "{:#?}", r.seen);
    assert_eq!(kinds(&r.seen).last().map(String::as_str), Some("completed"));
}

/// AskUserQuestion: one question with the scripted options, the own-words
/// option and the one under the inner rule.
#[test]
fn the_question_is_one_approval_with_its_options() {
    let r = replay("ask_question");
    let asked = approvals(&r.seen);
    let [(kind, question, options)] = &asked[..] else {
        panic!("{:#?}", r.seen)
    };
    assert_eq!(*kind, ApprovalKind::Question);
    assert_eq!(question, scenarios::QUESTION);
    let labels: Vec<&str> = options.iter().map(|(_, l)| l.as_str()).collect();
    assert_eq!(
        labels,
        [
            "Postgres",
            "SQLite",
            "DuckDB",
            "Type something.",
            "Chat about this"
        ]
    );
    assert!(errors(&r.seen).is_empty(), "{:#?}", r.seen);
    assert_eq!(kinds(&r.seen).last().map(String::as_str), Some("completed"));
}

/// A plain answer that quotes dialogs and errors ends once, with neither
/// an approval nor an error, after its closing row.
#[test]
fn a_plain_turn_ends_once_after_its_closing_row() {
    let r = replay("quoting_reply");
    let ends: Vec<&Detection> = (r.seen.iter())
        .filter(|d| d.kind == DetectionKind::Completed)
        .collect();
    let [end] = ends[..] else {
        panic!("{:#?}", r.seen)
    };
    assert!(end.context.contains(" · done "), "{}", end.context);
    assert!(approvals(&r.seen).is_empty(), "{:#?}", r.seen);
    assert!(errors(&r.seen).is_empty(), "{:#?}", r.seen);
    assert_eq!(r.input.as_deref(), Some(""));
}

/// A slash command Claude Code does not know: refused in a `∷` row, with
/// no echo of the command; the turn the daemon typed ends on it, as a
/// refusal, not an error.
#[test]
fn an_unknown_command_is_refused_in_one_row_and_ends_the_turn() {
    let r = replay_typed("unknown_command", Some("/gsd:new-project"));
    let refused: Vec<&str> = (r.seen.iter())
        .filter_map(|d| match &d.kind {
            DetectionKind::Rejected { line } => Some(line.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        refused,
        ["∷ Unknown command: /gsd:new-project"],
        "{:#?}",
        r.seen
    );
    assert!(errors(&r.seen).is_empty(), "{:#?}", r.seen);
    assert_eq!(kinds(&r.seen).last().map(String::as_str), Some("completed"));
}
