//! The cards of a `clawmux run` outcome: the same cards the daemon sends
//! for the same events, plus how to answer an approval from a shell.

use super::{ApprovalView, approval_card, error_card, result_cards};
use crate::bridge::run_once::{Outcome, Status};
use crate::bridge::texts::{error_guidance, output_markdown};
use crate::feishu::card::{Card, Element};

/// What a run's outcome shows: its result, its approval question, or its
/// error (with the output that came before it).
pub fn outcome_cards(o: &Outcome) -> Vec<Card> {
    let title = format!("{}: {}", o.project, o.command);
    match o.status {
        Status::Completed => result_cards(
            &format!("{title} ({}s)", o.seconds),
            &output_markdown(&o.output),
            o.screen.as_deref(),
        ),
        Status::Approval => {
            let Some(a) = &o.approval else {
                return Vec::new();
            };
            let keys: Vec<&str> = a.options.iter().map(|o| o.key.as_str()).collect();
            let how = format!(
                "Answer with: clawmux run --project {} --answer {}",
                o.project,
                keys.join("|")
            );
            vec![approval_card(ApprovalView::seen(&o.project, a)).push(Element::note(how))]
        }
        Status::Error => {
            let errors: Vec<&str> = o
                .detections
                .iter()
                .filter_map(|d| d.get("line").and_then(|l| l.as_str()))
                .collect();
            let guidance = error_guidance(
                &o.project,
                &o.command,
                errors.first().copied().unwrap_or(""),
                &o.output,
            );
            let mut cards = vec![error_card(
                &format!("Error: {title}"),
                &errors.join("\n"),
                &guidance,
                Vec::new(),
            )];
            cards.extend(result_cards(
                &format!("{title} ({}s)", o.seconds),
                &output_markdown(&o.output),
                o.screen.as_deref(),
            ));
            cards
        }
        Status::Timeout => {
            let t = format!("Timed out after {}s: {title}", o.seconds);
            vec![error_card(
                &t,
                &o.output,
                "The command is still running in its pane.",
                Vec::new(),
            )]
        }
        Status::Failed => {
            let error = o.error.as_deref().unwrap_or("unknown failure");
            vec![error_card(
                &format!("Failed: {title}"),
                error,
                "",
                Vec::new(),
            )]
        }
    }
}
