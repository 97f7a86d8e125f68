//! Claude Code's transcript rows as its screen draws them (measured on
//! 2.1.197 and 2.1.332): a tool's call, its work and its summary, the
//! refusal of a command, the spinner and turn-summary rows, the input
//! box's footer. The bridge's line transcript reads a turn's answer with
//! them.

/// What Claude Code appends to a tool row it can expand.
pub const EXPAND_HINT: &str = "(ctrl+o to expand)";

/// `● Reading 1 file… (ctrl+o to expand)`: a tool row still at work (its
/// verb ends in `…`), replaced by its summary once done.
pub fn is_at_work(header: &str) -> bool {
    let t = header.trim_start_matches(['●', '⏺']).trim();
    let t = t.strip_suffix(EXPAND_HINT).unwrap_or(t).trim_end();
    t.ends_with('…')
}

/// `● Creating a marker file`, `● Reading notes.txt`: 2.1.332's row for a
/// tool at work (a verb in -ing, no call in parentheses), redrawn in place
/// as its summary (`  Ran 1 shell command`). Only replaced by a summary,
/// never dropped on its own: an answer may start with such a word.
pub fn is_working(header: &str) -> bool {
    let t = header.trim_start_matches(['●', '⏺']).trim();
    let first = t.split_whitespace().next().unwrap_or("");
    first.len() > 4
        && first.ends_with("ing")
        && first.starts_with(|c: char| c.is_ascii_uppercase())
        && !t.contains('(')
}

/// `● Update(notes.txt)`, `● Bash(touch x)`: a tool's call row.
pub fn is_tool_call(header: &str) -> bool {
    let t = header.trim_start_matches(['●', '⏺']).trim();
    let name = t.split('(').next().unwrap_or("");
    t.ends_with(')')
        && !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.starts_with(|c: char| c.is_ascii_uppercase())
}

/// `Ran 1 shell command`, `Read 2 files`: a tool's summary, a verb in the
/// past and a count.
pub fn is_tool_summary(t: &str) -> bool {
    let mut words = t.split_whitespace();
    let (Some(verb), Some(count)) = (words.next(), words.next()) else {
        return false;
    };
    let past = verb.ends_with("ed") || matches!(verb, "Ran" | "Read" | "Wrote" | "Found" | "Made");
    past && verb.starts_with(|c: char| c.is_ascii_uppercase())
        && count.chars().all(|c| c.is_ascii_digit())
}

/// `● Unknown command: /gsd:new-project`: the agent refused the command.
pub fn is_refusal(line: &str) -> bool {
    let t = line.trim_start_matches(['●', '⏺']).trim_start();
    t.starts_with("Unknown command: ") || t.starts_with("Unknown slash command: ")
}

/// Claude Code's spinner row while it works (`✢ Verb… (1s · ↑ 174
/// tokens)`, `✻ API error · Retrying in 1s · attempt 1/2`) and its turn
/// summary (`✻ Worked for 1s`).
pub fn is_spinner(t: &str) -> bool {
    let mut chars = t.chars();
    let glyph = chars.next();
    let rest = chars.as_str();
    matches!(glyph, Some('✻' | '✢' | '✽' | '✶' | '✳' | '·' | '*'))
        && rest.starts_with(' ')
        && (rest.contains('…') || rest.contains(" · Retrying in ") || is_summary(rest.trim()))
}

/// `Worked for 1s`, `Churned for 2m 3s`: a verb, `for`, a duration.
pub fn is_summary(rest: &str) -> bool {
    let mut words = rest.split_whitespace();
    let (Some(_verb), Some("for")) = (words.next(), words.next()) else {
        return false;
    };
    let duration: Vec<&str> = words.collect();
    !duration.is_empty()
        && duration.iter().all(|w| {
            w.trim_end_matches(['s', 'm', 'h'])
                .chars()
                .all(|c| c.is_ascii_digit())
        })
}

/// The input box's footer rows.
pub fn is_footer(t: &str) -> bool {
    t.starts_with("? for shortcuts")
        || t.contains("esc to interrupt")
        || t.contains("ctrl+c to interrupt")
        || t.contains("(shift+tab to cycle)")
        || t.contains("← for agents")
        || t.starts_with("⏵⏵")
        || t.starts_with("⏸")
        // Notices Claude Code shows under the footer.
        || t.starts_with("tmux focus-events off")
        || t.starts_with("Context left until auto-compact")
}
