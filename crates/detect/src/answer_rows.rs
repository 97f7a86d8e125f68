//! How an agent draws the blocks of its answer, as its profile gives them
//! (`[profiles.NAME.answer_rows]`): which rows open a block, and which
//! block headers are a tool at work, a tool's call, words about work, a
//! tool's summary or a refusal of the command. The bridge's line
//! transcript reads an answer by them, so it knows no agent's rows.

use regex::RegexSet;
use serde::Deserialize;

use crate::lines::{PatternError, regex_set};

/// `answer_rows` as written in a profile.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct AnswerRowsSpec {
    /// What opens a block at column 0 (none: the agent's answer is not
    /// read from its lines by blocks).
    blocks: Vec<String>,
    /// The hint a folded tool's header ends with (Claude Code's `(ctrl+o
    /// to expand)`): the tool's summary drawn with it replaces its work row.
    expand_hint: Option<String>,
    /// Matches a tool at work: a header's words with the expand hint
    /// taken off.
    at_work: Vec<String>,
    /// These match a header's words (its marks and the spaces around
    /// them taken off, the expand hint kept).
    working: Vec<String>,
    tool_call: Vec<String>,
    refusal: Vec<String>,
    /// Matches a row's trimmed text: a tool's summary drawn without its
    /// mark (`Read 1 file`), indented under the block.
    tool_summary: Vec<String>,
}

/// [`AnswerRowsSpec`] compiled; the default opens no blocks and knows no
/// rows.
#[derive(Debug, Clone, Default)]
pub struct AnswerRows {
    blocks: Vec<String>,
    expand_hint: Option<String>,
    at_work: RegexSet,
    working: RegexSet,
    tool_call: RegexSet,
    refusal: RegexSet,
    tool_summary: RegexSet,
}

impl AnswerRowsSpec {
    /// Compiled for profile `name`.
    pub(crate) fn compile(&self, name: &str) -> Result<AnswerRows, PatternError> {
        let set = |field: &str, patterns: &[String]| {
            regex_set(name, &format!("answer_rows.{field}"), patterns)
        };
        Ok(AnswerRows {
            blocks: (self.blocks.iter())
                .filter(|m| !m.is_empty())
                .cloned()
                .collect(),
            expand_hint: self.expand_hint.clone().filter(|h| !h.is_empty()),
            at_work: set("at_work", &self.at_work)?,
            working: set("working", &self.working)?,
            tool_call: set("tool_call", &self.tool_call)?,
            refusal: set("refusal", &self.refusal)?,
            tool_summary: set("tool_summary", &self.tool_summary)?,
        })
    }
}

impl AnswerRows {
    /// Whether `row` opens one of the agent's blocks (an answer, a tool).
    /// A mark ending in a space opens one only with words after it.
    pub fn opens_block(&self, row: &str) -> bool {
        self.blocks.iter().any(|m| {
            (row.strip_prefix(m.as_str()))
                .is_some_and(|rest| !m.ends_with(' ') || !rest.trim().is_empty())
        })
    }

    /// The words of block header `row`: its marks and the spaces around
    /// them taken off.
    pub fn words<'a>(&self, row: &'a str) -> &'a str {
        let mut t = row.trim_start();
        while let Some(rest) = (self.blocks.iter())
            .map(|m| m.trim_end())
            .find_map(|m| t.strip_prefix(m))
        {
            t = rest.trim_start();
        }
        t.trim_end()
    }

    /// Whether header `row` ends with the expand hint.
    pub fn folded(&self, row: &str) -> bool {
        (self.expand_hint.as_deref()).is_some_and(|h| row.trim_end().ends_with(h))
    }

    /// `row`'s words without the expand hint.
    fn unfolded<'a>(&self, row: &'a str) -> &'a str {
        let t = self.words(row);
        let t = (self.expand_hint.as_deref()).map_or(t, |h| t.strip_suffix(h).unwrap_or(t));
        t.trim_end()
    }

    /// A tool still at work (`● Reading 1 file… (ctrl+o to expand)`): the
    /// agent redraws it in place as its summary.
    pub fn is_at_work(&self, row: &str) -> bool {
        self.at_work.is_match(self.unfolded(row))
    }

    /// Words about work in progress (`● Reading notes.txt`).
    pub fn is_working(&self, row: &str) -> bool {
        self.working.is_match(self.words(row))
    }

    /// A tool's call (`● Bash(touch x)`).
    pub fn is_tool_call(&self, row: &str) -> bool {
        self.tool_call.is_match(self.words(row))
    }

    /// The agent refusing the command (`● Unknown command: /x`).
    pub fn is_refusal(&self, row: &str) -> bool {
        self.refusal.is_match(self.words(row))
    }

    /// A tool's summary drawn without its mark (`Read 1 file`); `text` is
    /// the row trimmed.
    pub fn is_tool_summary(&self, text: &str) -> bool {
        self.tool_summary.is_match(text)
    }

    /// `words` drawn as a block of its own (a tool's summary that lost
    /// its mark): the first block mark, then the words.
    pub fn as_block(&self, words: &str) -> String {
        match self.blocks.first() {
            Some(mark) => format!("{} {words}", mark.trim_end()),
            None => words.to_owned(),
        }
    }

    /// No blocks and no rows: how a transcript without a profile reads.
    pub fn none() -> &'static AnswerRows {
        static NONE: std::sync::LazyLock<AnswerRows> =
            std::sync::LazyLock::new(AnswerRows::default);
        &NONE
    }
}

#[cfg(test)]
mod tests {
    use crate::Profiles;

    /// Claude Code's rows as 2.1.197 and 2.1.332 draw them, read with its
    /// profile; no other agent's profile reads them so.
    #[test]
    fn claudes_answer_rows_are_read_from_its_profile() {
        let profiles = Profiles::defaults().unwrap();
        let claude = profiles.get("claude").unwrap();
        let rows = claude.answer_rows();
        assert!(
            rows.opens_block("● Done.") && rows.opens_block("⏺ Done.") && rows.opens_block("●")
        );
        assert!(!rows.opens_block("  ● nested") && !rows.opens_block("• Ran ls"));
        assert_eq!(
            rows.words("●  ⏺ Read 1 file (ctrl+o to expand)  "),
            "Read 1 file (ctrl+o to expand)"
        );
        assert!(rows.folded("● Read 1 file (ctrl+o to expand)"));
        assert!(!rows.folded("● Read 1 file"));
        assert_eq!(
            rows.as_block("Ran 1 shell command"),
            "● Ran 1 shell command"
        );

        for at_work in [
            "● Reading 1 file… (ctrl+o to expand)",
            "● Searching for 2 patterns…",
        ] {
            assert!(rows.is_at_work(at_work), "{at_work:?}");
        }
        assert!(!rows.is_at_work("● Read 1 file (ctrl+o to expand)"));
        for working in [
            "● Creating a marker file",
            "● Reading notes.txt",
            "⏺ Thinking",
        ] {
            assert!(rows.is_working(working), "{working:?}");
        }
        for words in [
            "● Doing(x)",
            "● Reading 1 file (ctrl+o to expand)",
            "● Sing",
            "● reading notes",
        ] {
            assert!(!rows.is_working(words), "{words:?}");
        }
        for call in [
            "● Update(notes.txt)",
            "● Bash(touch x)",
            "● mcp_Tool(a) (ctrl+o to expand)",
        ] {
            assert_eq!(rows.is_tool_call(call), !call.contains("mcp_"), "{call:?}");
        }
        assert!(!rows.is_tool_call("● Read 1 file (ctrl+o to expand)"));
        assert!(!rows.is_tool_call("● Fixed (mostly)"));
        for summary in ["Ran 1 shell command", "Read 2 files", "Searched 3 patterns"] {
            assert!(rows.is_tool_summary(summary), "{summary:?}");
        }
        for words in ["Read the notes", "ran 1 command", "Ed 2", "Wrote 2b files"] {
            assert!(!rows.is_tool_summary(words), "{words:?}");
        }
        assert!(rows.is_refusal("● Unknown command: /gsd:new-project"));
        assert!(rows.is_refusal("⏺ Unknown slash command: /x"));
        assert!(!rows.is_refusal("● The command is unknown"));

        for chrome in [
            "✢ Pondering… (1s · ↑ 174 tokens)",
            "✻ API error · Retrying in 1s · attempt 1/2",
            "✻ · Retrying in 1s",
            "✻ API error · retrying in 1s · attempt 1/2",
            "✻ Cooked for 1s · done 6:15 PM",
            "✻ Worked for 1s",
            "✻ Churned for 2m 3s",
            "? for shortcuts",
            "⏵⏵ accept edits on (shift+tab to cycle)",
            "⏸ plan mode on",
            "esc to interrupt",
            "Context left until auto-compact: 9%",
            "❯",
        ] {
            assert!(claude.is_chrome(chrome), "{chrome:?}");
        }
        for words in [
            "✻ Worked for the team",
            "* a list item",
            "❯ typed",
            "for shortcuts",
        ] {
            assert!(!claude.is_chrome(words), "{words:?}");
        }

        // Codex opens its blocks with `• ` and words; others open none.
        let codex = profiles.get("codex").unwrap();
        let codex = codex.answer_rows();
        assert!(codex.opens_block("• Ran touch x") && !codex.opens_block("• "));
        assert!(!codex.opens_block("● Done.") && !codex.is_working("• Reading notes"));
        for other in ["shell", "aider", "gemini", "opencode"] {
            let p = profiles.get(other).unwrap();
            assert!(!p.answer_rows().opens_block("● Done."), "{other}");
        }
    }
}
