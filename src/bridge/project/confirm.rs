//! A dialog read off the screen checked against what the agent's hook
//! says it asks (Claude Code's `PermissionRequest`, Gemini CLI's
//! `BeforeTool`): the kind, the command or file it names, the options it
//! offers. The screen decides which key answers (the
//! keys are what is on screen); the hook catches a screen read wrong.

use crate::detect::{ApprovalKind, ApprovalOption};
use crate::hooks::{Question, ToolRequest};
use crate::store::state::Approval;

/// Characters of a Bash command compared with a dialog's body: enough to
/// tell commands apart, short enough to survive the dialog's truncation.
const COMMAND_PREFIX_CHARS: usize = 40;

/// What the screen could not show, from the hook: a Bash dialog that
/// lost its body (drawn off screen) shows the command the hook named; a
/// question whose list scrolls (Gemini CLI in a short pane) offers the
/// options the pane has no room for, each keyed by its number in the
/// agent's list (Gemini CLI takes a digit for any option, shown or not).
/// Those come only from the hook's question that is the one on screen
/// (see [`asked_on_screen`]) and whose options are the ones the screen
/// shows, at the same keys ([`same_options`]): a key offered from another
/// question would type that question's answer, not the one on the card.
pub fn fill_from_hook(seen: &mut Approval, request: &ToolRequest) {
    if let ToolRequest::Question { questions } = request
        && seen.body.contains(crate::detect::SCROLLED_NOTE)
        && let Some(asked) = asked_on_screen(seen, questions)
        && same_options(seen, asked)
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
            let shown = asked_on_screen(seen, questions).or(questions.first())?;
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

/// The hook's question that the dialog on screen asks: the same words,
/// trimmed and each run of whitespace one space (a box wraps a long
/// question over rows), never by one holding the other (a short or empty
/// question is in every dialog's). None for a dialog asking nothing.
fn asked_on_screen<'a>(seen: &Approval, questions: &'a [Question]) -> Option<&'a Question> {
    let shown = words(&seen.question);
    if shown.is_empty() {
        return None;
    }
    questions.iter().find(|q| words(&q.question) == shown)
}

/// Whether every option the screen shows under a number is `asked`'s
/// option of that number, by label (the agent's own rows after the list,
/// `Type something.`, aside): then the options the screen has no room for
/// are `asked`'s that it does not show. At least one must be compared.
fn same_options(seen: &Approval, asked: &Question) -> bool {
    let mut compared = 0;
    for option in &seen.options {
        let Ok(n) = option.key.parse::<usize>() else {
            continue;
        };
        match n.checked_sub(1).and_then(|i| asked.options.get(i)) {
            Some(theirs) if words(&theirs.label) == words(&option.label) => compared += 1,
            None if option.own_words => {}
            _ => return false,
        }
    }
    compared > 0
}

/// `text` trimmed, each run of whitespace one space.
fn words(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` without whitespace: a dialog wraps a long command over rows.
fn squeeze(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}
