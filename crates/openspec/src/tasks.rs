//! `tasks.md` reading, as OpenSpec 1.13 does it: checkbox task lines (the
//! only thing its progress counts), the "no checkbox at all" warning and the
//! `## N.` group numbering warnings `openspec validate` emits. Sans-IO.
//! `archive` uses [`progress`] to decide that the last task is done.

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;

use super::text::{is_js_space, js_regex, js_trim};

/// The list marker and opening bracket of a task line.
static TASK_PREFIX: LazyLock<Regex> =
    LazyLock::new(|| js_regex(r"^{WS}*(?:[-*+]|\d{1,9}[.)]){WS}*\["));
/// A list item with text (checkbox or not).
static LIST_ITEM: LazyLock<Regex> =
    LazyLock::new(|| js_regex(r"^{WS}*(?:[-*+]|\d{1,9}[.)]){WS}+{NOT_WS}"));
/// A fence delimiter as the checkbox scan reads it (up to three spaces).
static FENCE: LazyLock<Regex> = LazyLock::new(|| js_regex(r"^ {0,3}(`{3,}|~{3,})(.*)"));
static FRONT_MATTER: LazyLock<Regex> = LazyLock::new(|| js_regex(r"^-{3}{WS}*$"));
static NUMBERED_GROUP: LazyLock<Regex> =
    LazyLock::new(|| js_regex(r"^ {0,3}##[ \t]+(\d+)\.(?:[ \t]|\r?$)"));
static TASK_ID: LazyLock<Regex> = LazyLock::new(|| js_regex(r"^(\d+(?:\.\d+)+(?:[A-Za-z]+)?)"));

/// Indent (in columns, a tab to the next multiple of four) at which a line
/// becomes an indented code block in CommonMark, so not a list item.
const CODE_BLOCK_COLUMN: usize = 4;

/// One checkbox line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    pub done: bool,
    pub description: String,
    /// 1-based line.
    pub line: usize,
}

/// A task-file finding (always a warning in OpenSpec).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskIssue {
    pub line: usize,
    pub message: String,
}

/// The checkbox task on `line`, if it is one: `- [ ] x`, `* [x] x`, `1. [X] x`,
/// `- [ ](…`; a link like `- [x](url)` is not a task.
pub fn parse_task_line(line: &str) -> Option<(bool, String)> {
    let prefix = TASK_PREFIX.find(line)?;
    let rest = &line[prefix.end()..];
    let after_ws = rest.trim_start_matches(is_js_space);
    // `\s*([^\]\s]?)\s*\](?![([])`
    let mut chars = after_ws.chars();
    let (mark, tail) = match chars.next() {
        Some(c) if c != ']' && !is_js_space(c) => (Some(c), chars.as_str()),
        _ => (None, after_ws),
    };
    let tail = tail.trim_start_matches(is_js_space);
    let first = tail
        .strip_prefix(']')
        .filter(|t| !t.starts_with('(') && !t.starts_with('['));
    let (done, after) = match first {
        Some(after) => (mark.is_some_and(|c| c == 'x' || c == 'X'), after),
        // `\s+\]`
        None => {
            let trimmed = rest.trim_start_matches(is_js_space);
            if trimmed.len() == rest.len() {
                return None;
            }
            (false, trimmed.strip_prefix(']')?)
        }
    };
    let description: String = after
        .trim_start_matches(is_js_space)
        .chars()
        .take_while(|c| !matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}'))
        .collect();
    Some((done, js_trim(&description).to_string()))
}

/// Every checkbox task in a tasks file.
pub fn parse_tasks(content: &str) -> Vec<Task> {
    content
        .split('\n')
        .enumerate()
        .filter_map(|(i, line)| {
            parse_task_line(line).map(|(done, description)| Task {
                done,
                description,
                line: i + 1,
            })
        })
        .collect()
}

/// (done, total) checkbox counts.
pub fn progress(content: &str) -> (usize, usize) {
    let tasks = parse_tasks(content);
    (tasks.iter().filter(|t| t.done).count(), tasks.len())
}

/// The warning OpenSpec gives when the tracked task file has list items but
/// no checkbox at all (progress would count zero tasks).
pub fn missing_checkbox_issue(content: &str) -> Option<TaskIssue> {
    if !parse_tasks(content).is_empty() {
        return None;
    }
    let line = first_list_item_line(content)?;
    Some(TaskIssue {
        line,
        message: "This change counts as 0 tasks: no line in its tracked task files is a checkbox, \
                  so \"openspec list\" and \"openspec status\" report no work and \"openspec archive\" \
                  has nothing to flag as incomplete. Write each task as \"- [ ] 1.1 Description\"."
            .to_string(),
    })
}

fn indent_columns(line: &str) -> usize {
    let mut column = 0;
    for c in line.chars() {
        match c {
            ' ' => column += 1,
            '\t' => column += CODE_BLOCK_COLUMN - column % CODE_BLOCK_COLUMN,
            _ => break,
        }
    }
    column
}

/// 1-based line of the first list item in rendered content (fences, HTML
/// comments, front matter and indented code skipped).
fn first_list_item_line(content: &str) -> Option<usize> {
    let lines: Vec<&str> = content.split('\n').collect();
    let mut open_fence: Option<(char, usize)> = None;
    let mut in_comment = false;
    for (index, line) in lines.iter().enumerate().skip(skip_front_matter(&lines)) {
        if in_comment {
            if line.contains("-->") {
                in_comment = false;
            }
            continue;
        }
        if let Some(c) = FENCE.captures(line) {
            let run = &c[1];
            let marker = run.chars().next().unwrap_or('`');
            match open_fence {
                None => open_fence = Some((marker, run.len())),
                Some((m, len)) if m == marker && run.len() >= len && js_trim(&c[2]).is_empty() => {
                    open_fence = None
                }
                Some(_) => {}
            }
            continue;
        }
        if open_fence.is_some() {
            continue;
        }
        let start = line.trim_start_matches(is_js_space);
        if start.starts_with("<!--") {
            let open_at = line.find("<!--").unwrap_or(0) + 4;
            if !line[open_at..].contains("-->") {
                in_comment = true;
            }
            continue;
        }
        if LIST_ITEM.is_match(line) && indent_columns(line) < CODE_BLOCK_COLUMN {
            return Some(index + 1);
        }
    }
    None
}

fn skip_front_matter(lines: &[&str]) -> usize {
    let first = lines
        .first()
        .map(|l| l.strip_prefix('\u{FEFF}').unwrap_or(l));
    if !first.is_some_and(|l| FRONT_MATTER.is_match(super::text::js_trim_end(l))) {
        return 0;
    }
    (1..lines.len())
        .find(|&i| FRONT_MATTER.is_match(super::text::js_trim_end(lines[i])))
        .map_or(0, |i| i + 1)
}

/// A level-two heading: `##` not followed by `#`, then blanks or the end.
fn is_level_two_heading(line: &str) -> bool {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return false;
    }
    let Some(rest) = line[indent..].strip_prefix("##") else {
        return false;
    };
    if rest.starts_with('#') {
        return false;
    }
    rest.starts_with([' ', '\t']) || matches!(rest.trim_start_matches([' ', '\t']), "" | "\r")
}

/// Ambiguous task numbering inside `## N.` groups of the built-in template:
/// a task whose leading number names another group, and a repeated task id.
pub fn numbering_issues(content: &str) -> Vec<TaskIssue> {
    let lines: Vec<&str> = content.split('\n').collect();
    if !lines.iter().any(|l| NUMBERED_GROUP.is_match(l)) {
        return Vec::new();
    }
    let mut issues = Vec::new();
    let mut first_seen: HashMap<String, usize> = HashMap::new();
    let mut group: Option<String> = None;
    for (index, line) in lines.iter().enumerate() {
        if is_level_two_heading(line) {
            group = NUMBERED_GROUP.captures(line).map(|c| c[1].to_string());
        }
        let Some(current) = &group else { continue };
        let Some((_, description)) = parse_task_line(line) else {
            continue;
        };
        let Some(id) = TASK_ID.captures(&description).and_then(|c| {
            let m = c.get(1)?;
            let next = description[m.end()..].chars().next();
            next.is_none_or(is_js_space).then(|| m.as_str().to_string())
        }) else {
            continue;
        };
        let line_no = index + 1;
        let task_group = id.split('.').next().unwrap_or_default();
        let strip = |s: &str| {
            let t = s.trim_start_matches('0');
            if t.is_empty() {
                "0".to_string()
            } else {
                t.to_string()
            }
        };
        if strip(task_group) != strip(current) {
            issues.push(TaskIssue {
                line: line_no,
                message: format!(
                    "Task \"{id}\" is under group {current}, but its leading number points to group {task_group}. Move it to group {task_group} or renumber it."
                ),
            });
        }
        match first_seen.get(&id) {
            Some(first) => issues.push(TaskIssue {
                line: line_no,
                message: format!(
                    "Task ID \"{id}\" is duplicated; it was first declared on line {first}."
                ),
            }),
            None => {
                first_seen.insert(id, line_no);
            }
        }
    }
    issues
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_lines_follow_openspec() {
        assert_eq!(
            parse_task_line("- [x] 1.1 Do"),
            Some((true, "1.1 Do".into()))
        );
        assert_eq!(parse_task_line("  * [ ] a"), Some((false, "a".into())));
        assert_eq!(parse_task_line("1. [X] b\r"), Some((true, "b".into())));
        assert_eq!(parse_task_line("- [](c"), None);
        assert_eq!(parse_task_line("- [ ](c"), Some((false, "(c".into())));
        assert_eq!(parse_task_line("- [x](url)"), None);
        assert_eq!(parse_task_line("- []"), Some((false, String::new())));
        assert_eq!(parse_task_line("- item"), None);
    }

    #[test]
    fn progress_counts_checkboxes() {
        assert_eq!(progress("## 1. A\n- [x] 1.1 a\n- [ ] 1.2 b\n"), (1, 2));
    }

    #[test]
    fn bare_list_is_reported_once() {
        let issue = missing_checkbox_issue("# T\n```\n- in fence\n```\n    - code\n- real\n");
        assert_eq!(issue.map(|i| i.line), Some(6));
        assert!(missing_checkbox_issue("- [ ] x\n- y").is_none());
    }

    #[test]
    fn numbering_flags_wrong_group_and_duplicates() {
        let issues = numbering_issues("## 1. A\n- [ ] 1.1 a\n- [ ] 2.1 b\n- [ ] 1.1 c\n");
        assert_eq!(issues.len(), 2);
        assert_eq!(issues[0].line, 3);
        assert!(issues[1].message.contains("first declared on line 2"));
    }
}
