//! A dialog read off the screen checked against what the agent's hook
//! says it asks (Claude Code's `PermissionRequest`, Gemini CLI's
//! `BeforeTool`): the kind, the command or file it names, the options it
//! offers. The screen decides which key answers (the
//! keys are what is on screen); the hook catches a screen read wrong.

use crate::detect::{ApprovalKind, ApprovalOption};
use crate::hooks::ToolRequest;
use crate::store::state::Approval;

/// Characters of a Bash command compared with a dialog's body: enough to
/// tell commands apart, short enough to survive the dialog's truncation.
const COMMAND_PREFIX_CHARS: usize = 40;

/// What the screen could not show, from the hook: a Bash dialog that
/// lost its body (drawn off screen) shows the command the hook named; a
/// question whose list scrolls (Gemini CLI in a short pane) offers the
/// options the pane has no room for, each keyed by its number in the
/// agent's list (Gemini CLI takes a digit for any option, shown or not).
pub fn fill_from_hook(seen: &mut Approval, request: &ToolRequest) {
    if let ToolRequest::Question { questions } = request
        && seen.body.contains(crate::detect::SCROLLED_NOTE)
        && let Some(asked) = (questions.iter()).find(|q| seen.question.contains(q.question.trim()))
    {
        for (n, option) in asked.options.iter().enumerate() {
            let key = (n + 1).to_string();
            if !seen.options.iter().any(|o| o.key == key) {
                seen.options.push(ApprovalOption {
                    key,
                    label: option.label.clone(),
                    description: option.description.clone(),
                    press: None,
                    own_words: false,
                });
            }
        }
        seen.options
            .sort_by_key(|o| o.key.parse::<usize>().unwrap_or(usize::MAX));
    }
    if !seen.body.trim().is_empty() {
        return;
    }
    if let ToolRequest::Bash {
        command,
        description,
    } = request
    {
        seen.body = match description {
            Some(d) => format!("{command}\n{d}"),
            None => command.clone(),
        };
    }
}

/// Where the dialog read off the screen disagrees with what the agent's
/// hook says it asks, in words for the chat; `None` when they agree (or
/// the tool is one clawmux knows nothing about).
pub fn disagreement(seen: &Approval, request: &ToolRequest) -> Option<String> {
    let kind_ok = |kinds: &[ApprovalKind]| kinds.contains(&seen.kind);
    match request {
        ToolRequest::Bash { command, .. } => {
            if !kind_ok(&[ApprovalKind::Permission]) {
                return Some(format!(
                    "the agent asks to run a command, the screen reads a {} dialog",
                    seen.kind
                ));
            }
            let prefix: String = squeeze(command)
                .chars()
                .take(COMMAND_PREFIX_CHARS)
                .collect();
            let shown = squeeze(&format!("{}\n{}", seen.question, seen.body));
            (!shown.contains(&prefix)).then(|| {
                format!(
                    "the agent asks to run `{command}`, which the dialog on screen does not show"
                )
            })
        }
        ToolRequest::File { file_path, .. } => {
            if !kind_ok(&[
                ApprovalKind::Edit,
                ApprovalKind::Create,
                ApprovalKind::Permission,
            ]) {
                return Some(format!(
                    "the agent asks to change {file_path}, the screen reads a {} dialog",
                    seen.kind
                ));
            }
            let name = file_path.rsplit('/').next().unwrap_or(file_path);
            let shown = format!("{}\n{}", seen.question, seen.body);
            (!shown.contains(name)).then(|| {
                format!("the agent asks to change {file_path}, the dialog names another file")
            })
        }
        ToolRequest::Question { questions } => {
            if !kind_ok(&[ApprovalKind::Question, ApprovalKind::Dialog]) {
                return Some(format!(
                    "the agent asks a question, the screen reads a {} dialog",
                    seen.kind
                ));
            }
            // The dialog shows one question at a time, with the agent's
            // own rows ("Type something", "Chat about this") added.
            let shown = questions
                .iter()
                .find(|q| seen.question.contains(q.question.trim()))
                .or(questions.first())?;
            let missing: Vec<&str> = shown
                .options
                .iter()
                .map(|o| o.label.trim())
                .filter(|label| !seen.options.iter().any(|o| o.label.trim() == *label))
                .collect();
            (!missing.is_empty()).then(|| {
                format!(
                    "the agent offers {} that the buttons do not show",
                    missing
                        .iter()
                        .map(|l| format!("\"{l}\""))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
        }
        ToolRequest::Plan { .. } => {
            (!kind_ok(&[ApprovalKind::Plan, ApprovalKind::Dialog])).then(|| {
                format!(
                    "the agent asks to approve a plan, the screen reads a {} dialog",
                    seen.kind
                )
            })
        }
        ToolRequest::Other { .. } => None,
    }
}

/// `text` without whitespace: a dialog wraps a long command over rows.
fn squeeze(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}
