//! The words of the bridge: card texts (help, command output as markdown)
//! and the prompt templates it types into agents. The chat wording in both
//! languages is the [`catalogue`] ([`Msg`]).

pub mod catalogue;

pub use catalogue::Msg;

use crate::feishu::markdown::escape_code_block;
use crate::i18n::Text;
use crate::prompts;

/// Terminal output as markdown that renders literally: a code block.
pub fn output_markdown(output: &str) -> Text {
    let output = output.trim();
    if output.is_empty() {
        Msg::NoOutput.text()
    } else {
        format!("```\n{}\n```", escape_code_block(output)).into()
    }
}

/// The context-recovery prompt typed into a recreated session, on one
/// line (Enter would submit it early) and within what may be typed.
pub fn recovery_prompt(project: &str, workspace: &str, last: &str, tail: &str) -> String {
    let vars = [
        ("project", project),
        ("workspace", workspace),
        ("last_command", last),
        ("last_output_tail", tail),
        ("reason", "the tmux session was lost"),
    ];
    let text = flatten(&render_prompt("context_recovery", &vars));
    let limit = crate::bridge::access::names::MAX_TYPED_CHARS;
    match text.char_indices().nth(limit) {
        Some((cut, _)) => text[..cut].to_string(),
        None => text,
    }
}

pub fn error_guidance(project: &str, command: &str, line: &str, context: &str) -> String {
    let vars = [
        ("project", project),
        ("command", command),
        ("error_line", line),
        ("error_context", context),
    ];
    render_prompt("error_recovery", &vars)
}

/// A built-in prompt template rendered (they are embedded, so present).
pub fn render_prompt(name: &str, vars: &[(&str, &str)]) -> String {
    match prompts::Template::builtin(name) {
        Ok(t) => t.render(vars).text,
        Err(e) => {
            tracing::error!("{e}");
            String::new()
        }
    }
}

/// One line for typing into the agent (Enter would submit early).
pub fn flatten(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

pub const HELP: &str = "\
**GSD commands** go to the current project's agent, e.g. `/gsd:plan-phase 2` or `/gsd-progress`.

**clawmux commands**
- `/gsd:new-project <name>[@host]`: create a project (workspace + session) and use it, on a configured host if given
- `/gsd:use <name>`: send messages to that project
- `/gsd:projects`: list projects and pick one
- `/gsd:status`: what each project is doing
- `/gsd:cancel`: press Esc in the agent, approvers only (a running command's progress card has an Interrupt button for approvers)
- `/gsd:inbox`: every approval, question and checkpoint waiting for an answer, oldest first, with its buttons (`/gsd:inbox gsd` is GSD's own inbox)
- `/gsd:file <path>`: send a file from the project's workspace (inside it only, at most 30 MB)
- `/gsd:remind <minutes>|<N>s|off`: show a prompt here again, once, when it waited that long (off by default)
- `/gsd:keys <key>…`: send Esc, Enter, Tab, Up, Down, Left, Right or Ctrl-C to the agent's pane (approvers only)
- `/gsd:mode [manual|auto|plan|acceptEdits|bypassPermissions]`: the agent's permission mode, or switch it (approvers only; `manual` sends every approval here)
- `/gsd:answer <key>`: answer the pending approval (or press its button)
- `/gsd:sessions`: the tmux sessions and panes on every host
- `/gsd:screen`: the current project's screen as it is now
- `/gsd:adopt SESSION[:WINDOW.PANE][@host] [as <name>]`: watch a pane you already run (approvers only)
- `/gsd:release <name>`: stop watching an adopted pane, leaving it as it was
- `/gsd:help`: this help

Plain text is typed into the agent as a prompt. Reply to a question's card to answer it in your own words.";

#[cfg(test)]
mod tests {
    use super::HELP;

    const README: &str = include_str!("../../README.md");

    /// The README lists clawmux's chat commands as `/gsd:help` does, word
    /// for word: one source, the help text, copied and checked here.
    #[test]
    fn readme_lists_the_chat_commands_as_the_help_does() {
        let list = HELP
            .split_once("**clawmux commands**\n")
            .and_then(|(_, rest)| rest.split_once("\n\n"))
            .map(|(list, _)| list)
            .expect("the help's command list");
        assert!(list.lines().count() > 10, "{list}");
        assert!(
            README.contains(list),
            "README.md's chat command list differs from /gsd:help's; paste this into it:\n{list}"
        );
    }
}
