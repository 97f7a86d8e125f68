//! What detection must report for each recorded scenario, checked on the
//! JSON lines of `clawmux detect` (replay) and `clawmux watch --json`
//! (live) alike.

use serde_json::Value;

use crate::support::scenarios;

/// Detections from JSON lines: the objects with an `at_ms` (watch also
/// prints the tmux events).
pub fn detections(lines: impl IntoIterator<Item = Value>) -> Vec<Value> {
    lines
        .into_iter()
        .filter(|v| v.get("at_ms").is_some())
        .collect()
}

fn kind(d: &Value) -> &str {
    d["kind"].as_str().unwrap_or("")
}

fn of_kind<'a>(ds: &'a [Value], k: &str) -> Vec<&'a Value> {
    ds.iter().filter(|d| kind(d) == k).collect()
}

/// What one detection says, without its time and context: live and replay
/// must agree on these.
pub fn signature(d: &Value) -> String {
    let mut s = kind(d).to_owned();
    for key in ["approval", "question", "line"] {
        if let Some(v) = d.get(key).and_then(Value::as_str) {
            s.push_str(&format!(" {key}={v:?}"));
        }
    }
    if let Some(options) = d.get("options").and_then(Value::as_array) {
        let labels: Vec<String> = options
            .iter()
            .map(|o| {
                format!(
                    "{}.{}",
                    o["key"].as_str().unwrap_or(""),
                    o["label"].as_str().unwrap_or("")
                )
            })
            .collect();
        s.push_str(&format!(" options={labels:?}"));
    }
    s
}

/// The signatures that do not depend on timing: busy and progress come and
/// go with how the frames were cut.
pub fn signatures(ds: &[Value]) -> Vec<String> {
    let shown: Vec<&Value> = (ds.iter())
        .filter(|d| !matches!(kind(d), "busy" | "progress"))
        .collect();
    // A dialog reported again once its body was drawn is one dialog,
    // however the pane's output fell into chunks (live or replayed).
    let again = |i: usize| i > 0 && kind(shown[i]) == "approval" && redrawn(shown[i - 1], shown[i]);
    (0..shown.len())
        .filter(|&i| !again(i))
        .map(|i| signature(shown[i]))
        .collect()
}

/// Whether approval `b` is approval `a` reported again with its body drawn
/// since (a diff still loading when the dialog was first read).
fn redrawn(a: &Value, b: &Value) -> bool {
    ["approval", "question", "options"]
        .iter()
        .all(|k| a[k] == b[k])
        && a["body"] != b["body"]
}

fn all(ds: &[Value]) -> String {
    ds.iter().map(signature).collect::<Vec<_>>().join("\n")
}

/// Exactly one approval of `approval` kind asking `question` (a substring),
/// answered (gone) before the turn's one completion, and no error.
fn one_dialog(ds: &[Value], approval: &str, question: &str) -> Result<Value, String> {
    let approvals = of_kind(ds, "approval");
    // A dialog whose body (a diff) was still loading when the wait for it
    // ran out is reported again once its body is drawn: one dialog.
    let again = approvals.windows(2).all(|w| redrawn(w[0], w[1]));
    let (Some(dialog), true) = (approvals.last(), again) else {
        return Err(format!("expected one approval, got:\n{}", all(ds)));
    };
    if approvals.len() > 2 {
        return Err(format!(
            "one dialog reported {} times:\n{}",
            approvals.len(),
            all(ds)
        ));
    }
    if dialog["approval"] != approval {
        return Err(format!(
            "expected a {approval} dialog, got {}",
            signature(dialog)
        ));
    }
    let q = dialog["question"].as_str().unwrap_or("");
    if !q.contains(question) {
        return Err(format!("question {q:?} does not contain {question:?}"));
    }
    let gone = ds.iter().position(|d| kind(d) == "approval_gone");
    let completed: Vec<usize> = ds
        .iter()
        .enumerate()
        .filter(|(_, d)| kind(d) == "completed")
        .map(|(i, _)| i)
        .collect();
    match (gone, completed.as_slice()) {
        (Some(g), [c]) if g < *c => {}
        _ => {
            return Err(format!(
                "expected the dialog answered, then one completion:\n{}",
                all(ds)
            ));
        }
    }
    no_errors(ds)?;
    Ok((*dialog).clone())
}

fn no_errors(ds: &[Value]) -> Result<(), String> {
    let errors = of_kind(ds, "error");
    if !errors.is_empty() {
        return Err(format!("false errors:\n{}", all(ds)));
    }
    Ok(())
}

fn one_completion(ds: &[Value]) -> Result<(), String> {
    let n = of_kind(ds, "completed").len();
    if n != 1 {
        return Err(format!("expected one completion, got {n}:\n{}", all(ds)));
    }
    Ok(())
}

fn labels(dialog: &Value) -> Vec<(String, String)> {
    dialog["options"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|o| {
                    (
                        o["key"].as_str().unwrap_or("").to_owned(),
                        o["label"].as_str().unwrap_or("").to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn has_option(dialog: &Value, key: &str, label: &str) -> Result<(), String> {
    let found = labels(dialog);
    if !found.iter().any(|(k, l)| k == key && l == label) {
        return Err(format!("no option {key}. {label:?} in {found:?}"));
    }
    Ok(())
}

/// One error, after the last busy, whose line contains `needle`, and one
/// completion after it.
fn one_final_error(ds: &[Value], needle: &str) -> Result<(), String> {
    let errors = of_kind(ds, "error");
    let [error] = errors.as_slice() else {
        return Err(format!("expected one error, got:\n{}", all(ds)));
    };
    let line = error["line"].as_str().unwrap_or("");
    if !line.contains(needle) {
        return Err(format!("error line {line:?} does not contain {needle:?}"));
    }
    if !of_kind(ds, "approval").is_empty() {
        return Err(format!("false prompt:\n{}", all(ds)));
    }
    one_completion(ds)
}

/// The expected outcome of scenario `name` on the installed release.
pub fn check(name: &str, ds: &[Value]) -> Result<(), String> {
    check_for(crate::support::claude::release(), name, ds)
}

/// The expected outcome of scenario `name` on `release`.
pub fn check_for(release: &str, name: &str, ds: &[Value]) -> Result<(), String> {
    match name {
        "bash_permission" => {
            let d = one_dialog(ds, "permission", "Do you want to proceed?")?;
            has_option(&d, "1", "Yes")?;
            // `3. No` before 2.1.332; since, `3. Yes, and switch to auto mode`.
            has_option(&d, crate::support::claude::bash_no_key_of(release), "No")
        }
        "bash_denied" => {
            // The user's "No" is their answer, not an error.
            one_dialog(ds, "permission", "Do you want to proceed?")?;
            if of_kind(ds, "interrupted").len() != 1 {
                return Err(format!("expected one interrupted:\n{}", all(ds)));
            }
            Ok(())
        }
        "edit_file" => {
            let d = one_dialog(ds, "edit", "Do you want to make this edit to notes.txt?")?;
            has_option(&d, "1", "Yes")
        }
        "create_file" => {
            let d = one_dialog(ds, "create", "Do you want to create hello.py?")?;
            has_option(&d, "1", "Yes")
        }
        "ask_question" => {
            let d = one_dialog(ds, "question", scenarios::QUESTION)?;
            has_option(&d, "1", "Postgres")?;
            has_option(&d, "2", "SQLite")?;
            has_option(&d, "3", "DuckDB")?;
            // The option below the inner rule.
            has_option(&d, "5", "Chat about this")
        }
        "plan_mode" => {
            let d = one_dialog(ds, "plan", "Would you like to proceed?")?;
            has_option(&d, "2", "Yes, manually approve edits")
        }
        "api_error_500" => one_final_error(ds, "API Error: 500"),
        "api_error_529" => one_final_error(ds, "529"),
        "api_error_401" => one_final_error(ds, "Invalid API key"),
        "api_error_400" => one_final_error(ds, "API Error: 400"),
        "long_answer" | "task_list" | "quoting_reply" => {
            if !of_kind(ds, "approval").is_empty() {
                return Err(format!("false prompt:\n{}", all(ds)));
            }
            no_errors(ds)?;
            one_completion(ds)
        }
        other => Err(format!("no expectation for scenario {other}")),
    }
}

/// `clawmux detect --profile claude` on a recording, as JSON values.
pub fn replay(recording: &[u8]) -> Vec<Value> {
    let (code, out, err) =
        crate::support::claude::clawmux_stdin(&["detect", "--profile", "claude"], recording);
    assert_eq!(code, 0, "clawmux detect failed: {err}");
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}
