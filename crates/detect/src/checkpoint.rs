//! GSD's checkpoints read from the screen: where one starts, what it asks,
//! and the answers it names.
//!
//! GSD 1.42.3 prints two forms (the model is told to; see the package's
//! `references/ui-brand.md` and `workflows/execute-phase.md`):
//! - a box: `╔═…═╗`, `║  CHECKPOINT: Verification Required|Decision
//!   Required|Action Required  ║`, `╚═…═╝`, then what to check or decide,
//!   then between `─` rules a `→` line with the answer: `→ Type "approved"
//!   or describe issues`, `→ Type "done" when complete`, `→ YOUR ACTION:
//!   Select supabase, clerk, or nextauth`, `→ Select: option-a / option-b`;
//! - the execute-phase orchestrator's heading `## Checkpoint: human-verify
//!   …` (also `decision`, `human-action`), which Claude Code may show
//!   without the `##`.
//!
//! A decision's body can be 20+ rows, so the header is searched on the
//! whole visible screen (bounded by [`MAX_CHECKPOINT_ROWS`]), not only the
//! last rows. The answers are the words the checkpoint names: quoted ones
//! in the `→` line, the names after `Select`, else the kind's usual answer
//! (or the numbered `Options:` of a decision); every checkpoint also takes
//! free text (a reply to its card), which GSD reads as issues or a choice.
//! A box counts only once its `→` line is drawn whole: while the model still
//! writes it, a screen can look idle between two chunks, and a card made
//! then would miss the later options.
//! The body stops at Claude Code's turn-end row or its input box (a `─`
//! rule and a `❯` row), so neither the box the answer is typed into nor a
//! passing notice under the turn is part of it.

use super::dialog;
use super::marks::Marks;
use super::profiles::Profile;
use super::screen_parts::Prompt;
use super::{ApprovalKind, ApprovalOption, MenuSelect};

/// Rows searched upwards from the bottom for a checkpoint header: more
/// than any terminal's visible screen, so the bound only guards against
/// absurd sizes.
pub(crate) const MAX_CHECKPOINT_ROWS: usize = 500;

/// Most answers offered: a decision names 2–4; a `→` line naming more is
/// prose, not a choice.
pub(crate) const MAX_ANSWERS: usize = 8;

/// Longest answer word offered as a button, in characters: GSD's are
/// single words or slugs (`approved`, `nextauth`, `option-a`).
pub(crate) const MAX_ANSWER_CHARS: usize = 40;

/// What kind of checkpoint, by its box title or heading type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    /// `Verification Required`, `human-verify`: "approved" or issues.
    Verify,
    /// `Decision Required`, `decision`: one of the named options.
    Decision,
    /// `Action Required`, `human-action`: "done" when complete.
    Action,
}

/// The checkpoint header on `row`, if it is one.
pub(crate) fn header(marks: &Marks, row: &str) -> Option<Form> {
    let t = row.trim().trim_matches('║').trim();
    if let Some(kind) = t.strip_prefix("CHECKPOINT: ") {
        return match kind.trim() {
            "Verification Required" => Some(Form::Verify),
            "Decision Required" => Some(Form::Decision),
            "Action Required" => Some(Form::Action),
            _ => None,
        };
    }
    let t = marks.strip_block(t).unwrap_or(t);
    let t = t.trim_start_matches('#').trim_start();
    let kind = t.strip_prefix("Checkpoint: ")?;
    let word = kind
        .split(|c: char| c.is_whitespace() || c == ':' || c == ',')
        .next()?;
    match word {
        "human-verify" | "checkpoint:human-verify" => Some(Form::Verify),
        "decision" | "checkpoint:decision" => Some(Form::Decision),
        "human-action" | "checkpoint:human-action" => Some(Form::Action),
        _ => None,
    }
}

/// The newest checkpoint on the screen `rows` (top to bottom), as a prompt.
pub(crate) fn find(profile: &Profile, rows: &[String]) -> Option<Prompt> {
    let marks = &profile.marks;
    let first = rows.len().saturating_sub(MAX_CHECKPOINT_ROWS);
    let rows = &rows[first..];
    let (at, form) =
        (rows.iter().enumerate().rev()).find_map(|(i, r)| Some((i, header(marks, r)?)))?;
    let end = input_box_start(marks, rows, at).unwrap_or(rows.len());
    // What GSD wrote ends with the turn: Claude Code's turn-end row and
    // the notices it shows under it for a few seconds (`tmux focus-events
    // off · …`) are not the checkpoint, and a notice going away must not
    // make it another one.
    let end = (at + 1..end)
        .find(|&i| profile.closes_turn(&rows[i]))
        .unwrap_or(end);
    let after = &rows[at + 1..end];
    // A box is answerable once its `→` line is drawn whole (a row follows
    // it, GSD's closing rule): before that the model is still writing it,
    // and its options are not all there.
    let boxed = rows[at].contains("CHECKPOINT:");
    let arrow_done = (after.iter())
        .position(|r| r.trim_start().starts_with('→'))
        .is_some_and(|i| i + 1 < after.len());
    if boxed && !arrow_done {
        return None;
    }
    let options = answers(form, after);
    let body_rows: Vec<&str> = (after.iter())
        .map(String::as_str)
        .filter(|r| !is_box_border(r))
        .collect();
    let question = rows[at].trim().trim_matches('║').trim().to_owned();
    Some(Prompt {
        kind: ApprovalKind::Checkpoint,
        question,
        body: dialog::bound(body_rows.join("\n").trim()),
        options,
        context: rows[at..end].join("\n").trim_end().to_owned(),
        loading: false,
        select: MenuSelect::Typed,
    })
}

/// Where the agent's input box starts below `from`: a `─` rule right
/// above its input row (GSD's own rules frame a `→` line instead).
fn input_box_start(marks: &Marks, rows: &[String], from: usize) -> Option<usize> {
    (from + 1..rows.len()).find(|&i| {
        is_rule(&rows[i])
            && rows
                .get(i + 1)
                .is_some_and(|r| marks.is_input(r.trim_start()))
    })
}

fn is_rule(row: &str) -> bool {
    let t = row.trim();
    t.chars().count() >= 3 && t.chars().all(|c| c == '─')
}

fn is_box_border(row: &str) -> bool {
    let t = row.trim();
    (t.starts_with('╔') || t.starts_with('╚')) && t.chars().all(|c| "╔╗╚╝═".contains(c))
}

/// The answers the checkpoint names, each typed as written.
fn answers(form: Form, rows: &[String]) -> Vec<ApprovalOption> {
    let arrow = rows
        .iter()
        .rev()
        .find_map(|r| r.trim().strip_prefix('→').map(str::trim));
    let mut words = arrow.map(named_in_arrow_line).unwrap_or_default();
    if words.is_empty() && form == Form::Decision {
        words = numbered_options(rows);
    }
    if words.is_empty() {
        words = match form {
            Form::Verify => vec!["approved".to_owned()],
            Form::Action => vec!["done".to_owned()],
            Form::Decision => Vec::new(),
        };
    }
    let descriptions = numbered_descriptions(rows);
    words
        .into_iter()
        .take(MAX_ANSWERS)
        .map(|w| ApprovalOption {
            description: (descriptions.iter())
                .find(|(name, _)| *name == w)
                .map(|(_, d)| d.clone()),
            key: w.clone(),
            label: w,
            press: None,
            own_words: false,
        })
        .collect()
}

/// `Type "approved" or describe issues` -> `approved`; `YOUR ACTION:
/// Select supabase, clerk, or nextauth` -> the three names.
fn named_in_arrow_line(line: &str) -> Vec<String> {
    let line = line.strip_prefix("YOUR ACTION:").map_or(line, str::trim);
    let quoted: Vec<String> = line
        .split(['"', '“', '”'])
        .skip(1)
        .step_by(2)
        .filter_map(answer_word)
        .collect();
    if !quoted.is_empty() {
        return quoted;
    }
    let Some(choices) = line
        .strip_prefix("Select:")
        .or_else(|| line.strip_prefix("Select"))
        .or_else(|| line.strip_prefix("Choose:"))
        .or_else(|| line.strip_prefix("Choose"))
    else {
        return Vec::new();
    };
    // Every part must be one answer word; a part that is prose makes the
    // whole line prose (no buttons rather than wrong ones).
    let words: Option<Vec<String>> = choices
        .split([',', '/', '|'])
        .flat_map(|part| part.split(" or "))
        .map(|w| {
            w.trim()
                .trim_start_matches("or ")
                .trim_end_matches(['.', ')'])
        })
        .filter(|w| !w.is_empty())
        .map(answer_word)
        .collect();
    words.filter(|w| w.len() <= MAX_ANSWERS).unwrap_or_default()
}

/// A word that can be a button: short, one word, no control characters.
fn answer_word(w: &str) -> Option<String> {
    let w = w.trim().trim_matches('`').trim();
    let ok = !w.is_empty()
        && w.chars().count() <= MAX_ANSWER_CHARS
        && !w.contains(char::is_whitespace)
        && !w.chars().any(char::is_control);
    ok.then(|| w.to_owned())
}

/// `  1. supabase - Built-in with our DB` rows: the names.
fn numbered_options(rows: &[String]) -> Vec<String> {
    numbered_descriptions(rows)
        .into_iter()
        .map(|(n, _)| n)
        .collect()
}

/// `(name, description)` of each `N. name - description` row.
fn numbered_descriptions(rows: &[String]) -> Vec<(String, String)> {
    rows.iter()
        .filter_map(|r| {
            let t = r.trim();
            let (n, rest) = t.split_once(". ")?;
            n.parse::<u8>().ok()?;
            let (name, desc) = rest.split_once(" - ").unwrap_or((rest, ""));
            Some((answer_word(name)?, desc.trim().to_owned()))
        })
        .take(MAX_ANSWERS)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::marks::claude;

    fn gsd() -> std::sync::Arc<Profile> {
        let profiles = crate::Profiles::defaults().unwrap();
        profiles.get("gsd").unwrap()
    }

    fn rows(text: &str) -> Vec<String> {
        text.lines().map(str::to_owned).collect()
    }

    fn keys(p: &Prompt) -> Vec<&str> {
        p.options.iter().map(|o| o.key.as_str()).collect()
    }

    /// Claude Code's input box with GSD's statusline under it.
    const INPUT_BOX: &str = "────────────────────────────────────────\n\
                             ❯ \n\
                             ────────────────────────────────────────\n\
                             \x20 Opus │ shop │ Phase 2 ██░░ 40%";

    #[test]
    fn a_verification_box_takes_approved() {
        let screen = format!(
            "● Wave 1 done.\n\n\
             ╔══════════════════════════════════════════════════════════════╗\n\
             ║  CHECKPOINT: Verification Required                           ║\n\
             ╚══════════════════════════════════════════════════════════════╝\n\n\
             Progress: 2/3 tasks complete\n\
             Built: the login page\n\
             How to verify: open http://127.0.0.1:3000/login\n\n\
             ──────────────────────────────────────────────────────────────\n\
             → Type \"approved\" or describe issues\n\
             ──────────────────────────────────────────────────────────────\n\n{INPUT_BOX}"
        );
        let p = find(&gsd(), &rows(&screen)).unwrap();
        assert_eq!(p.kind, ApprovalKind::Checkpoint);
        assert_eq!(p.question, "CHECKPOINT: Verification Required");
        assert_eq!(keys(&p), ["approved"]);
        assert!(p.body.contains("How to verify"), "{}", p.body);
        assert!(
            !p.body.contains('❯'),
            "the input box is not the body: {}",
            p.body
        );
        assert!(
            !p.body.contains("Phase 2 ██"),
            "nor the statusline: {}",
            p.body
        );
        assert!(!p.body.contains('╔'), "{}", p.body);
    }

    #[test]
    fn a_long_decision_box_far_above_the_bottom_names_its_options() {
        let screen = format!(
            "╔═══════════════════════════════════════════════════════╗\n\
             ║  CHECKPOINT: Decision Required                        ║\n\
             ╚═══════════════════════════════════════════════════════╝\n\n\
             Progress: 2/6 tasks complete\nTask: Select authentication provider\n\n\
             Decision: Which auth provider should we use?\n\n\
             Options:\n\
             \x20 1. supabase - Built-in with our DB, free tier\n\
             \x20    Pros: Row-level security integration\n\
             \x20    Cons: Less customizable UI\n\n\
             \x20 2. clerk - Best DX, paid after 10k users\n\
             \x20    Pros: Beautiful pre-built UI\n\
             \x20    Cons: Vendor lock-in\n\n\
             \x20 3. nextauth - Self-hosted, maximum control\n\
             \x20    Pros: Free\n\
             \x20    Cons: More setup work\n\n\
             ────────────────────────────────────────────────────────\n\
             → YOUR ACTION: Select supabase, clerk, or nextauth\n\
             ────────────────────────────────────────────────────────\n\n{INPUT_BOX}"
        );
        let r = rows(&screen);
        assert!(r.len() > 25, "the header is more than 20 rows up");
        let p = find(&gsd(), &r).unwrap();
        assert_eq!(keys(&p), ["supabase", "clerk", "nextauth"]);
        assert_eq!(
            p.options[1].description.as_deref(),
            Some("Best DX, paid after 10k users")
        );
        assert!(p.body.contains("Which auth provider"), "{}", p.body);
    }

    #[test]
    fn select_with_slashes_and_the_action_box() {
        let p = find(
            &gsd(),
            &rows("║  CHECKPOINT: Decision Required  ║\n→ Select: option-a / option-b\n─────"),
        )
        .unwrap();
        assert_eq!(keys(&p), ["option-a", "option-b"]);
        // The `→` row is the last: it may still be being written.
        let last =
            "║  CHECKPOINT: Action Required  ║\nRun: vercel login\n→ Type \"done\" when complete";
        assert!(find(&gsd(), &rows(last)).is_none());
        let p = find(&gsd(), &rows(&format!("{last}\n────"))).unwrap();
        assert_eq!(keys(&p), ["done"]);
        // Before its `→` line is drawn: not yet a prompt.
        assert!(
            find(
                &gsd(),
                &rows("║  CHECKPOINT: Action Required  ║\nRun: vercel login")
            )
            .is_none()
        );
        // A `→` line naming nothing: the kind's usual answer, or the
        // decision's numbered options.
        let p = find(
            &gsd(),
            &rows("║  CHECKPOINT: Action Required  ║\n→ Over to you\n────"),
        )
        .unwrap();
        assert_eq!(keys(&p), ["done"]);
        let p = find(&gsd(), &rows(
            "║  CHECKPOINT: Decision Required  ║\nOptions:\n  1. redis - fast\n  2. sqlite - simple\n→ Your call\n────",
        ))
        .unwrap();
        assert_eq!(keys(&p), ["redis", "sqlite"]);
    }

    #[test]
    fn the_orchestrators_heading() {
        for heading in [
            "## Checkpoint: human-verify — Dashboard layout",
            "● Checkpoint: human-verify",
            "  Checkpoint: human-verify (plan 03-03)",
        ] {
            let screen = format!(
                "{heading}\n\n**Plan:** 03-03 Dashboard Layout\nProgress: 2/3 tasks complete\n\n\
                 Awaiting: type \"approved\" or describe issues\n{INPUT_BOX}"
            );
            let p = find(&gsd(), &rows(&screen)).unwrap_or_else(|| panic!("{heading}"));
            assert_eq!(keys(&p), ["approved"], "{heading}");
        }
        assert_eq!(
            header(&claude(), "## Checkpoint: decision"),
            Some(Form::Decision)
        );
        assert_eq!(
            header(&claude(), "## Checkpoint: human-action"),
            Some(Form::Action)
        );
    }

    #[test]
    fn a_notice_under_the_turn_is_not_part_of_the_checkpoint() {
        let screen = |notice: &str| {
            rows(&format!(
                "  ║  CHECKPOINT: Decision Required  ║\n  Decision: Which store?\n  Options:\n  1. redis - fast\n  2. sqlite - one file\n  ────────\n  → Select: redis / sqlite\n  ────────\n✻ Cooked for 1s · done 4:04 PM\n{notice}\n─────────\n❯ \n─────────"
            ))
        };
        let with = find(
            &gsd(),
            &screen("        tmux focus-events off · add 'set -g focus-events on'"),
        );
        let without = find(&gsd(), &screen(""));
        let (with, without) = (with.expect("with the notice"), without.expect("without"));
        assert!(!with.body.contains("focus-events"), "{}", with.body);
        assert!(!with.body.contains("Cooked"), "{}", with.body);
        assert_eq!(keys(&without), ["redis", "sqlite"]);
        assert_eq!((with.body, with.context), (without.body, without.context));
    }

    #[test]
    fn what_is_not_a_checkpoint() {
        for text in [
            "",
            "a checkpoint: human-verify is planned",
            "CHECKPOINT: Coffee Required",
            "## Checkpoint: later",
            "│ CHECKPOINT types │ verify │",
        ] {
            assert!(find(&gsd(), &rows(text)).is_none(), "{text:?}");
        }
    }

    #[test]
    fn the_newest_checkpoint_wins_and_prose_is_no_option() {
        let screen = "║ CHECKPOINT: Action Required ║\n→ Type \"done\" when complete\n\
                      ● ok\n║ CHECKPOINT: Decision Required ║\n\
                      → Select whichever of the approaches you think fits this codebase best, or tell me, or suggest one, or skip, or wait, or ask me, or go\n───";
        let p = find(&gsd(), &rows(screen)).unwrap();
        assert_eq!(p.question, "CHECKPOINT: Decision Required");
        assert!(p.options.is_empty(), "{:?}", p.options);
    }

    /// Through the screen analysis with the `gsd` profile: a header 30 rows
    /// above the bottom is the prompt, with the box's own answers.
    #[test]
    fn the_gsd_profile_finds_a_header_far_above_the_bottom() {
        let profile = super::super::Profiles::defaults()
            .unwrap()
            .get("gsd")
            .unwrap();
        let filler: String = (0..30).map(|i| format!("  step {i} checked\n")).collect();
        let screen = format!(
            "║  CHECKPOINT: Action Required  ║\n{filler}\
             → Type \"done\" when complete\n─────\n{INPUT_BOX}"
        );
        let state = super::super::screen::analyse(&profile, &rows(&screen), |_| true);
        let p = state.prompt.expect("the checkpoint");
        assert_eq!(p.kind, ApprovalKind::Checkpoint);
        assert_eq!(keys(&p), ["done"]);
        // Not printed this turn: not a prompt.
        let state = super::super::screen::analyse(&profile, &rows(&screen), |_| false);
        assert!(state.prompt.is_none());
        // Still being written (the spinner above the box): not yet.
        let busy = screen.replace(
            INPUT_BOX,
            &format!("✶ Cogitating… (1s · ↓ 20 tokens)\n{INPUT_BOX}"),
        );
        let state = super::super::screen::analyse(&profile, &rows(&busy), |_| true);
        assert!(state.busy.is_some() && state.prompt.is_none(), "{state:?}");
    }

    #[test]
    fn rows_of_any_content_never_panic() {
        let odd = [
            "║",
            "→",
            "→ \"",
            "→ Select",
            "1. ",
            "99999. x - y",
            "\u{0}",
            "## Checkpoint: ",
        ];
        for a in odd {
            for b in odd {
                let _ = find(
                    &gsd(),
                    &rows(&format!("║ CHECKPOINT: Decision Required ║\n{a}\n{b}\n─")),
                );
            }
        }
    }
}
