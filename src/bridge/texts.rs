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
    let limit = crate::bridge::names::MAX_TYPED_CHARS;
    match text.char_indices().nth(limit) {
        Some((cut, _)) => text[..cut].to_string(),
        None => text,
    }
}

/// What to try after an agent's error, under its card: the built-in
/// `error_recovery` template in English, [`ERROR_GUIDANCE_ZH`] in Chinese,
/// both filled with the same values (the agent's words, as they are).
pub fn error_guidance(project: &str, command: &str, line: &str, context: &str) -> Text {
    let vars = [
        ("project", project),
        ("command", command),
        ("error_line", line),
        ("error_context", context),
    ];
    Text::both(
        render_prompt("error_recovery", &vars),
        prompts::render(ERROR_GUIDANCE_ZH, &vars).text,
    )
}

/// `prompts/error_recovery.md` in Chinese, line for line; the quoted
/// agent messages (`Please run /login`, `429`) stay as agents print them.
const ERROR_GUIDANCE_ZH: &str = "\
**{{project}}**：`{{command}}` 出错停止了。

> {{error_line}}

~~~text
{{error_context}}
~~~

**接下来可以试试**
- *登录或 API 密钥*（`Please run /login`、`Invalid API key`、`API Error: 401`）：在此项目的 tmux 窗格中重新登录 Claude Code（在那里运行 `/login`），然后再次发送 `{{command}}`。
- *限流或服务中断*（`429`、`529`、`Overloaded`、`is currently unavailable`）：等几分钟，再次发送 `{{command}}`。GSD 会把进度记录在 `.planning/STATE.md` 中，已完成的任务不会重做。
- *上下文已满或会话丢失*：发送 `/gsd:pause-work`，然后发送 `/gsd:resume-work`；GSD 会写下交接说明，在新的上下文中继续。
- *测试或构建失败*：发送 `/gsd:debug` 并说明哪里失败；它会一步步排查并做记录。
- *不确定进展到哪里*：`/gsd:progress` 显示阶段、计划和下一步；`/gsd:health` 检查并修复 `.planning/`。
";

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
- `/gsd:keys <key>…`: send Esc, Enter, Tab, Shift+Tab, Up, Down, Left, Right or Ctrl-C to the agent's pane (approvers only)
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
    use super::{ERROR_GUIDANCE_ZH, HELP, error_guidance};
    use crate::i18n::Lang;

    /// The Chinese guidance takes the same values as the English template
    /// and keeps its shape: the same code spans, bullets and fence.
    #[test]
    fn error_guidance_reads_in_both_languages_with_the_same_values() {
        let t = error_guidance("demo", "/gsd:plan-phase 2", "API Error: 529", "ctx {x}");
        let (en, zh) = (t.get(Lang::En), t.get(Lang::Zh));
        for value in [
            "**demo**",
            "`/gsd:plan-phase 2`",
            "> API Error: 529",
            "ctx {x}",
        ] {
            assert!(
                en.contains(value) && zh.contains(value),
                "{value}:\n{en}\n{zh}"
            );
        }
        assert!(zh.contains("接下来可以试试"), "{zh}");
        let count = |s: &str, pat: &str| s.matches(pat).count();
        let en_source = include_str!("../../prompts/error_recovery.md");
        for mark in ["`", "\n- ", "~~~", "{{"] {
            assert_eq!(
                count(en_source, mark),
                count(ERROR_GUIDANCE_ZH, mark),
                "{mark}"
            );
        }
    }

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
