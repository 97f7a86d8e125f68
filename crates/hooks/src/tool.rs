//! What a `PermissionRequest` asks about, read from its `tool_input`: the
//! Bash command, the file an edit or write touches, AskUserQuestion's
//! questions and options, ExitPlanMode's plan. The daemon uses it to
//! confirm a dialog's kind and options, and to show what is approved.
//!
//! Lenient like the rest of the hook decoding: a field of an unexpected
//! type is left out, never an error.

use serde_json::Value;

/// Questions kept from one AskUserQuestion (Claude Code sends 1 to 4).
pub const MAX_QUESTIONS: usize = 8;

/// Options kept per question (Claude Code sends 2 to 4, plus its own
/// "Type something" and "Chat about this" rows on screen only).
pub const MAX_OPTIONS: usize = 16;

/// One option of an AskUserQuestion question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuestionOption {
    pub label: String,
    pub description: Option<String>,
}

/// One AskUserQuestion question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    pub question: String,
    /// The short chip shown above the question (`☐ Database`).
    pub header: Option<String>,
    pub multi_select: bool,
    pub options: Vec<QuestionOption>,
}

/// The request, by tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolRequest {
    /// `Bash`: the command and Claude's description of it.
    Bash {
        command: String,
        description: Option<String>,
    },
    /// `Edit`, `MultiEdit`, `Write`, `NotebookEdit`: the file touched.
    File { tool: String, file_path: String },
    /// `AskUserQuestion`.
    Question { questions: Vec<Question> },
    /// `ExitPlanMode`: the plan (markdown) and the file it was written to.
    Plan {
        plan: String,
        plan_file_path: Option<String>,
    },
    /// Any other tool, by name.
    Other { tool_name: String },
}

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_owned)
}

impl ToolRequest {
    /// Reads a `PermissionRequest`'s `tool_name` and `tool_input`.
    pub fn parse(tool_name: &str, input: &Value) -> ToolRequest {
        let other = || ToolRequest::Other {
            tool_name: tool_name.to_owned(),
        };
        match tool_name {
            "Bash" => match text(input, "command") {
                Some(command) => ToolRequest::Bash {
                    command,
                    description: text(input, "description"),
                },
                None => other(),
            },
            "Edit" | "MultiEdit" | "Write" | "NotebookEdit" => {
                match text(input, "file_path").or_else(|| text(input, "notebook_path")) {
                    Some(file_path) => ToolRequest::File {
                        tool: tool_name.to_owned(),
                        file_path,
                    },
                    None => other(),
                }
            }
            // Gemini CLI's `ask_user` takes the same `questions`.
            "AskUserQuestion" | "ask_user" => {
                let questions: Vec<Question> = input
                    .get("questions")
                    .and_then(Value::as_array)
                    .map(|qs| qs.iter().filter_map(question).take(MAX_QUESTIONS).collect())
                    .unwrap_or_default();
                if questions.is_empty() {
                    other()
                } else {
                    ToolRequest::Question { questions }
                }
            }
            "ExitPlanMode" => match text(input, "plan") {
                Some(plan) => ToolRequest::Plan {
                    plan,
                    plan_file_path: text(input, "planFilePath"),
                },
                None => other(),
            },
            _ => other(),
        }
    }
}

fn question(q: &Value) -> Option<Question> {
    Some(Question {
        question: text(q, "question")?,
        header: text(q, "header"),
        multi_select: q
            .get("multiSelect")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        options: q
            .get("options")
            .and_then(Value::as_array)
            .map(|os| {
                os.iter()
                    .filter_map(|o| {
                        Some(QuestionOption {
                            label: text(o, "label")?,
                            description: text(o, "description"),
                        })
                    })
                    .take(MAX_OPTIONS)
                    .collect()
            })
            .unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_tool_reads_what_it_asks_about() {
        assert_eq!(
            ToolRequest::parse("Bash", &json!({"command": "ls", "description": "List"})),
            ToolRequest::Bash {
                command: "ls".into(),
                description: Some("List".into())
            }
        );
        assert_eq!(
            ToolRequest::parse("Write", &json!({"file_path": "/w/a.rs", "content": "x"})),
            ToolRequest::File {
                tool: "Write".into(),
                file_path: "/w/a.rs".into()
            }
        );
        let q = ToolRequest::parse(
            "AskUserQuestion",
            &json!({"questions": [{"question": "Which?", "header": "Pick", "multiSelect": false,
                "options": [{"label": "A", "description": "first"}, {"label": "B"}, {"nolabel": 1}]}]}),
        );
        assert_eq!(
            q,
            ToolRequest::Question {
                questions: vec![Question {
                    question: "Which?".into(),
                    header: Some("Pick".into()),
                    multi_select: false,
                    options: vec![
                        QuestionOption {
                            label: "A".into(),
                            description: Some("first".into())
                        },
                        QuestionOption {
                            label: "B".into(),
                            description: None
                        },
                    ],
                }]
            }
        );
        assert_eq!(
            ToolRequest::parse(
                "ExitPlanMode",
                &json!({"plan": "# P", "planFilePath": "/p.md"})
            ),
            ToolRequest::Plan {
                plan: "# P".into(),
                plan_file_path: Some("/p.md".into())
            }
        );
    }

    #[test]
    fn unexpected_shapes_fall_back_to_the_tool_name() {
        for (tool, input) in [
            ("Bash", json!({"command": 3})),
            ("Edit", json!(null)),
            ("AskUserQuestion", json!({"questions": "x"})),
            ("ExitPlanMode", json!({})),
            ("WebFetch", json!({"url": "http://x"})),
        ] {
            assert_eq!(
                ToolRequest::parse(tool, &input),
                ToolRequest::Other {
                    tool_name: tool.into()
                },
                "{tool} {input}"
            );
        }
    }
}
