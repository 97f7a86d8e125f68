//! The scenarios, each a script for the fake API and the keys a person
//! would press, run against the real Claude Code. Each returns the finished
//! run (recording stopped) and the screens seen at its key moments.

use std::path::Path;
use std::time::Duration;

use clawmux::agentcheck::{PLAN_FILE_PLACEHOLDER, Turn};
use serde_json::json;

use crate::support::claude::{ClaudeRun, RunOptions, retries_400};

/// A finished scenario: the run (for the fake API's requests and the live
/// watch output), the recording, and the screens at its key moments.
pub struct Done {
    pub run: ClaudeRun,
    pub recording: Vec<u8>,
    pub screens: Vec<String>,
}

fn done(mut run: ClaudeRun, name: &str, screens: Vec<String>) -> Done {
    // A live watcher reports the turn's end once the screen was still for
    // the debounce: wait for it (a detector that never reports it fails
    // the checks later, with what it did report).
    run.wait_for_watch_completion();
    let recording = run.finish();
    run.maybe_save_fixture(name);
    Done {
        run,
        recording,
        screens,
    }
}

pub const BASH_ANSWER: &str = "Created the marker file.";

/// The model asks to run a Bash command (a marker file), then answers.
pub fn bash_script() -> Vec<Turn> {
    vec![
        Turn::tool(
            "Bash",
            json!({"command": "touch made-by-bash.txt", "description": "Create a marker file"}),
        ),
        Turn::text(BASH_ANSWER),
    ]
}

/// Bash permission prompt, answered "1. Yes".
pub fn bash_permission(claude: &Path, base: &RunOptions) -> Done {
    let run = ClaudeRun::start(claude, bash_script(), base.clone());
    run.prompt("make a marker file");
    let prompt = run.wait_for("Do you want to proceed?");
    run.wait_for_watch_approval();
    run.keys(&["1"]);
    let end = run.wait_idle_with(BASH_ANSWER);
    done(run, "bash_permission", vec![prompt, end])
}

/// Bash permission prompt, answered "3. No": Claude Code prints
/// `Interrupted · What should Claude do instead?` and ends the turn.
pub fn bash_denied(claude: &Path, base: &RunOptions) -> Done {
    let run = ClaudeRun::start(
        claude,
        vec![Turn::tool(
            "Bash",
            json!({"command": "rm -rf build", "description": "Remove the build directory"}),
        )],
        base.clone(),
    );
    run.prompt("clean the build");
    let prompt = run.wait_for("Do you want to proceed?");
    run.wait_for_watch_approval();
    let no = run.option_key("No");
    run.keys(&[&no]);
    let end = run.wait_idle_with("What should Claude do instead?");
    done(run, "bash_denied", vec![prompt, end])
}

pub const EDIT_ANSWER: &str = "Changed the greeting.";

/// Edit prompt (`Do you want to make this edit to notes.txt?`), answered 1.
pub fn edit_file(claude: &Path, base: &RunOptions) -> Done {
    let mut setup = ClaudeRunSetup::new(claude, base);
    let notes = setup.project_file("notes.txt", "hello world\nsecond line\n");
    let run = setup.start(vec![
        Turn::tool("Read", json!({"file_path": notes})),
        Turn::tool(
            "Edit",
            json!({"file_path": notes, "old_string": "hello world", "new_string": "goodbye world"}),
        ),
        Turn::text(EDIT_ANSWER),
    ]);
    run.prompt("change the greeting in notes.txt");
    let prompt = run.wait_for("Do you want to make this edit to");
    run.wait_for_watch_approval();
    run.keys(&["1"]);
    let end = run.wait_idle_with(EDIT_ANSWER);
    done(run, "edit_file", vec![prompt, end])
}

pub const CREATE_ANSWER: &str = "Wrote the new file.";

/// Create-file prompt (`Do you want to create hello.py?`), answered 1.
pub fn create_file(claude: &Path, base: &RunOptions) -> Done {
    let setup = ClaudeRunSetup::new(claude, base);
    let path = setup.env_path("hello.py");
    let run = setup.start(vec![
        Turn::tool(
            "Write",
            json!({"file_path": path, "content": "print('hello')\nprint('world')\n"}),
        ),
        Turn::text(CREATE_ANSWER),
    ]);
    run.prompt("write hello.py");
    let prompt = run.wait_for("Do you want to create");
    run.wait_for_watch_approval();
    run.keys(&["1"]);
    let end = run.wait_idle_with(CREATE_ANSWER);
    done(run, "create_file", vec![prompt, end])
}

pub const QUESTION: &str = "Which database should we use?";
pub const QUESTION_ANSWER: &str = "Going with SQLite.";

/// The model asks which database (AskUserQuestion, options with
/// descriptions), then answers.
pub fn question_script() -> Vec<Turn> {
    vec![
        Turn::tool(
            "AskUserQuestion",
            json!({"questions": [{
                "question": QUESTION,
                "header": "Database",
                "multiSelect": false,
                "options": [
                    {"label": "Postgres", "description": "Relational server, strong consistency"},
                    {"label": "SQLite", "description": "Embedded file, zero setup"},
                    {"label": "DuckDB", "description": "Columnar, for analytics"}
                ]
            }]}),
        ),
        Turn::text(QUESTION_ANSWER),
    ]
}

/// AskUserQuestion with option descriptions; answered with "2".
pub fn ask_question(claude: &Path, base: &RunOptions) -> Done {
    let run = ClaudeRun::start(claude, question_script(), base.clone());
    run.prompt("pick a database");
    let prompt = run.wait_for("Chat about this");
    run.wait_for_watch_approval();
    run.keys(&["2"]);
    let end = run.wait_idle_with(QUESTION_ANSWER);
    done(run, "ask_question", vec![prompt, end])
}

pub const PLAN: &str = "# Parser plan\n\n1. Write the tokenizer\n2. Write the parser\n3. Add tests";
pub const PLAN_ANSWER: &str = "Plan approved; starting with the tokenizer.";

/// Plan mode: ExitPlanMode shows the plan-approval dialog; answered 2.
pub fn plan_mode(claude: &Path, base: &RunOptions) -> Done {
    let run = ClaudeRun::start(
        claude,
        vec![
            Turn::tool(
                "Write",
                json!({"file_path": PLAN_FILE_PLACEHOLDER, "content": PLAN}),
            ),
            Turn::tool("ExitPlanMode", json!({})),
            Turn::text(PLAN_ANSWER),
        ],
        RunOptions {
            args: vec!["--permission-mode", "plan"],
            ..base.clone()
        },
    );
    run.prompt("plan the parser");
    let prompt = run.wait_for("Would you like to proceed?");
    run.wait_for_watch_approval();
    run.keys(&["2"]);
    let end = run.wait_idle_with(PLAN_ANSWER);
    done(run, "plan_mode", vec![prompt, end])
}

/// An API error answered to every try, with `CLAUDE_CODE_MAX_RETRIES=1`
/// for the retried statuses. `shows` is the final error text.
/// Requests 2.1.332 makes for one turn answered HTTP 400 each time.
pub const RETRIED_400_REQUESTS: u32 = 6;

pub fn api_error(
    claude: &Path,
    base: &RunOptions,
    status: u16,
    message: &str,
    shows: &str,
) -> Done {
    let retried = matches!(status, 500 | 529 | 401);
    // 2.1.332 retries a 400 too: 6 requests in all (measured, without
    // CLAUDE_CODE_MAX_RETRIES; about 3 s).
    let times = match (retried, status == 400 && retries_400()) {
        (_, true) => RETRIED_400_REQUESTS,
        (true, false) => 2,
        (false, false) => 1,
    };
    let run = ClaudeRun::start(
        claude,
        vec![Turn::error(status, message, times)],
        RunOptions {
            max_retries: retried.then_some(1),
            ..base.clone()
        },
    );
    run.prompt("say hello");
    let end = run.wait_idle_with(shows);
    done(run, &format!("api_error_{status}"), vec![end])
}

/// The last line of the long answer.
pub const LONG_LAST: &str = "Line 120 of the long answer ends here.";

/// A 120-line answer: more than a screen.
pub fn long_answer(claude: &Path, base: &RunOptions) -> Done {
    let mut text = String::new();
    for i in 1..120 {
        text.push_str(&format!("Line {i} of the long answer.\n"));
    }
    text.push_str(LONG_LAST);
    let run = ClaudeRun::start(claude, vec![Turn::Text(text)], base.clone());
    run.prompt("write a long answer");
    let end = run.wait_idle_with(LONG_LAST);
    done(run, "long_answer", vec![end])
}

pub const TASKS_ANSWER: &str = "Both tasks are done.";

/// The task list: two TaskCreate calls, then updates, with the spinner
/// showing the active form and the list under it.
pub fn task_list(claude: &Path, base: &RunOptions) -> Done {
    let run = ClaudeRun::start(
        claude,
        vec![
            Turn::Tools {
                text: None,
                tools: vec![
                    clawmux::agentcheck::ToolUse::new(
                        "TaskCreate",
                        json!({"subject": "Write the parser", "description": "Parse the input", "activeForm": "Writing the parser"}),
                    ),
                    clawmux::agentcheck::ToolUse::new(
                        "TaskCreate",
                        json!({"subject": "Test the parser", "description": "Cover the edge cases", "activeForm": "Testing the parser"}),
                    ),
                ],
            },
            Turn::tool(
                "TaskUpdate",
                json!({"taskId": "1", "status": "in_progress"}),
            ),
            Turn::tool("TaskUpdate", json!({"taskId": "1", "status": "completed"})),
            Turn::tool(
                "TaskUpdate",
                json!({"taskId": "2", "status": "in_progress"}),
            ),
            Turn::tool("TaskUpdate", json!({"taskId": "2", "status": "completed"})),
            Turn::text(TASKS_ANSWER),
        ],
        RunOptions {
            pace: Some(Duration::from_millis(60)),
            ..base.clone()
        },
    );
    run.prompt("write and test the parser");
    let end = run.wait_idle_with(TASKS_ANSWER);
    done(run, "task_list", vec![end])
}

/// A reply that merely quotes a permission prompt, a question menu and
/// error lines: no prompt and no error is real.
pub const QUOTING_REPLY: &str = "Here is what the dialogs look like:\n\n\
Do you want to proceed?\n\
❯ 1. Yes\n\
  2. No\n\n\
Would you like to proceed?\n\
Error: connection refused (quoted from the log)\n\
API Error: 529 Overloaded (that was yesterday)\n\
Fatal errors: none.\n\
+ fn map_error(e: Error) -> String\n\
Interrupted · What should Claude do instead?\n\n\
All of the above is quoted text.";

pub const QUOTING_LAST: &str = "All of the above is quoted text.";

pub fn quoting_reply(claude: &Path, base: &RunOptions) -> Done {
    let run = ClaudeRun::start(claude, vec![Turn::text(QUOTING_REPLY)], base.clone());
    run.prompt("show me the dialogs");
    let end = run.wait_idle_with(QUOTING_LAST);
    done(run, "quoting_reply", vec![end])
}

/// A run whose project needs files before Claude Code starts.
struct ClaudeRunSetup<'a> {
    claude: &'a Path,
    base: RunOptions,
    files: Vec<(String, String)>,
}

impl<'a> ClaudeRunSetup<'a> {
    fn new(claude: &'a Path, base: &RunOptions) -> Self {
        ClaudeRunSetup {
            claude,
            base: base.clone(),
            files: Vec::new(),
        }
    }

    /// A placeholder path, replaced by the project path at start.
    fn env_path(&self, name: &str) -> String {
        format!("@PROJECT@/{name}")
    }

    fn project_file(&mut self, name: &str, content: &str) -> String {
        self.files.push((name.to_owned(), content.to_owned()));
        self.env_path(name)
    }

    fn start(self, script: Vec<Turn>) -> ClaudeRun {
        ClaudeRun::start_with(self.claude, self.base.clone(), |project| {
            for (name, content) in &self.files {
                std::fs::write(project.join(name), content).expect("project file");
            }
            let root = project.display().to_string();
            script
                .into_iter()
                .map(|t| substitute(t, "@PROJECT@", &root))
                .collect()
        })
    }
}

/// Replaces `from` in every string of a turn's tool inputs.
fn substitute(turn: Turn, from: &str, to: &str) -> Turn {
    fn walk(v: serde_json::Value, from: &str, to: &str) -> serde_json::Value {
        match v {
            serde_json::Value::String(s) => serde_json::Value::String(s.replace(from, to)),
            serde_json::Value::Array(a) => a.into_iter().map(|x| walk(x, from, to)).collect(),
            serde_json::Value::Object(o) => o
                .into_iter()
                .map(|(k, x)| (k, walk(x, from, to)))
                .collect::<serde_json::Map<_, _>>()
                .into(),
            other => other,
        }
    }
    match turn {
        Turn::Tools { text, tools } => Turn::Tools {
            text,
            tools: tools
                .into_iter()
                .map(|mut t| {
                    t.input = walk(t.input, from, to);
                    t
                })
                .collect(),
        },
        other => other,
    }
}
