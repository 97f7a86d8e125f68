//! Sans-IO reader of one OpenSpec delta spec (`specs/<cap>/spec.md` inside a
//! change): the `## ADDED|MODIFIED|REMOVED|RENAMED Requirements` sections,
//! their `### Requirement:` blocks, REMOVED names, RENAMED pairs, and what the
//! reader skipped (orphaned requirements, stray `###` headers, unpaired
//! renames). A line-for-line port of OpenSpec 1.13's `requirement-blocks.ts`
//! and `requirement-text.ts`, so that `lint` sees the same structure as
//! `openspec validate`. Also reads a main spec's `## Requirements` section,
//! which the MODIFIED scenario-loss check compares against.

use std::sync::LazyLock;

use regex::Regex;

use super::text::{code_fence_mask, is_js_space, js_regex, js_trim, js_trim_end, normalize_lines};

/// `### Requirement: <name>`, keyword case-insensitive (ASCII only, as in
/// JavaScript without the `u` flag).
static REQUIREMENT_HEADER: LazyLock<Regex> =
    LazyLock::new(|| js_regex(r"^###{WS}*(?i-u:requirement):{WS}*({DOT}+){WS}*$"));
/// `## <title>`: a top-level section.
static SECTION: LazyLock<Regex> = LazyLock::new(|| js_regex(r"^##{WS}+({DOT}+)$"));
/// Any `### <text>` header (to report the ones that are not requirements).
static H3: LazyLock<Regex> = LazyLock::new(|| js_regex(r"^###{WS}+({DOT}+?){WS}*$"));
/// A REMOVED bullet carrying a requirement header.
static REMOVED_BULLET: LazyLock<Regex> =
    LazyLock::new(|| js_regex(r"^{WS}*[-*+]{WS}*`?###{WS}*Requirement:{WS}*({DOT}+?)`?{WS}*$"));
static RENAME_FROM: LazyLock<Regex> = LazyLock::new(|| {
    js_regex(r"^{WS}*[-*+]?{WS}*FROM:{WS}*`?###{WS}*Requirement:{WS}*({DOT}+?)`?{WS}*$")
});
static RENAME_TO: LazyLock<Regex> = LazyLock::new(|| {
    js_regex(r"^{WS}*[-*+]?{WS}*TO:{WS}*`?###{WS}*Requirement:{WS}*({DOT}+?)`?{WS}*$")
});
/// An ATX closing run (`Foo ###` renders as `Foo`); only after a space or tab.
static ATX_CLOSE: LazyLock<Regex> = LazyLock::new(|| js_regex(r"[ \t]+#+[ \t]*$"));
static SCENARIO_HEADER: LazyLock<Regex> = LazyLock::new(|| js_regex(r"^####{WS}+"));
static SCENARIO_BODY_END: LazyLock<Regex> = LazyLock::new(|| js_regex(r"^#{1,4}{WS}"));
static HEADER_LINE: LazyLock<Regex> = LazyLock::new(|| js_regex(r"^#{1,6}{WS}"));
static METADATA_LINE: LazyLock<Regex> = LazyLock::new(|| js_regex(r"^\*\*[^*]+\*\*:"));
static SCENARIO_PREFIX: LazyLock<Regex> = LazyLock::new(|| js_regex(r"^(?i-u:scenario):{WS}*"));
static REQUIREMENTS_SECTION: LazyLock<Regex> =
    LazyLock::new(|| js_regex(r"^##{WS}+(?i-u:requirements){WS}*$"));

/// The four delta operations, in the order archive reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Added,
    Modified,
    Removed,
    Renamed,
}

impl Operation {
    pub const ALL: [Operation; 4] = [Self::Added, Self::Modified, Self::Removed, Self::Renamed];

    /// The canonical section title, e.g. `ADDED Requirements`.
    pub fn title(self) -> &'static str {
        match self {
            Self::Added => "ADDED Requirements",
            Self::Modified => "MODIFIED Requirements",
            Self::Removed => "REMOVED Requirements",
            Self::Renamed => "RENAMED Requirements",
        }
    }
}

/// One `### Requirement:` block: the header line through the line before the
/// next requirement header or `## ` section, trailing whitespace trimmed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequirementBlock {
    pub name: String,
    pub raw: String,
    /// 1-based line of the header in the file.
    pub line: usize,
}

/// A name listed under REMOVED, with its 1-based line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    pub name: String,
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenamePair {
    pub from: String,
    pub to: String,
    /// 1-based line of the `FROM:` entry.
    pub line: usize,
}

/// Which half of a rename stood alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RenameSide {
    From,
    To,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnpairedRename {
    pub side: RenameSide,
    pub name: String,
    pub line: usize,
}

/// A requirement written outside every delta section (ignored by archive).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrphanedRequirement {
    pub name: String,
    /// The `## ` section it sits under; `None` above the first one.
    pub section: Option<String>,
    pub line: usize,
}

/// A `### ` header inside ADDED/MODIFIED that is not a requirement header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedHeader {
    pub header: String,
    /// The section title as the author spelled it.
    pub section: String,
    pub line: usize,
}

/// Everything the delta reader found in one file.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DeltaPlan {
    pub added: Vec<RequirementBlock>,
    pub modified: Vec<RequirementBlock>,
    pub removed: Vec<Named>,
    pub renamed: Vec<RenamePair>,
    pub unpaired_renames: Vec<UnpairedRename>,
    pub orphaned: Vec<OrphanedRequirement>,
    pub skipped_headers: Vec<SkippedHeader>,
    /// 1-based line of each section's first header, in [`Operation::ALL`]
    /// order; `None` when the section is absent.
    pub section_lines: [Option<usize>; 4],
}

impl DeltaPlan {
    /// Number of delta entries (what "no deltas" counts).
    pub fn entry_count(&self) -> usize {
        self.added.len() + self.modified.len() + self.removed.len() + self.renamed.len()
    }

    pub fn has_section(&self, op: Operation) -> bool {
        self.section_lines[op as usize].is_some()
    }

    /// Line of the first delta section header, if any.
    pub fn first_section_line(&self) -> Option<usize> {
        self.section_lines.iter().flatten().min().copied()
    }
}

/// The lines of one `## ` section body, with the fence mask and the 1-based
/// line number of its first line.
struct Body<'a> {
    lines: &'a [&'a str],
    mask: &'a [bool],
    start_line: usize,
}

/// Parses a delta spec. Never fails: whatever does not parse is reported
/// through the plan's skipped/orphaned/unpaired lists.
pub fn parse_delta_spec(content: &str) -> DeltaPlan {
    let normalized = normalize_lines(content);
    let lines: Vec<&str> = normalized.split('\n').collect();
    let mask = code_fence_mask(&lines);
    let sections = split_sections(&lines, &mask);
    let mut plan = DeltaPlan {
        orphaned: find_orphans(&lines, &mask),
        ..DeltaPlan::default()
    };
    for op in Operation::ALL {
        let target = op.title().to_lowercase();
        let matching: Vec<&(String, Body)> = sections
            .iter()
            .filter(|(title, _)| title.to_lowercase() == target)
            .collect();
        let Some((first_title, first_body)) = matching.first() else {
            continue;
        };
        plan.section_lines[op as usize] = Some(first_body.start_line - 1);
        for (_, body) in &matching {
            match op {
                Operation::Added | Operation::Modified => {
                    let blocks =
                        requirement_blocks(body, Some((first_title, &mut plan.skipped_headers)));
                    if op == Operation::Added {
                        plan.added.extend(blocks);
                    } else {
                        plan.modified.extend(blocks);
                    }
                }
                Operation::Removed => plan.removed.extend(removed_names(body)),
                Operation::Renamed => plan
                    .renamed
                    .extend(rename_pairs(body, &mut plan.unpaired_renames)),
            }
        }
    }
    plan.unpaired_renames.sort_by_key(|u| u.line);
    plan.skipped_headers.sort_by_key(|s| s.line);
    plan
}

/// `normalizeRequirementName`: drop an ATX closing run, then trim.
pub fn normalize_requirement_name(name: &str) -> String {
    js_trim(&ATX_CLOSE.replace(name, "")).to_string()
}

/// Case- and whitespace-insensitive fold, used only to catch near-miss
/// spellings (requirement matching itself is exact).
pub fn fold_requirement_name(name: &str) -> String {
    let lower = normalize_requirement_name(name).to_lowercase();
    let mut out = String::with_capacity(lower.len());
    let mut in_space = false;
    for c in lower.chars() {
        if is_js_space(c) {
            if !in_space {
                out.push(' ');
            }
            in_space = true;
        } else {
            out.push(c);
            in_space = false;
        }
    }
    out
}

fn is_top_level(line: &str) -> bool {
    line.strip_prefix("##")
        .and_then(|rest| rest.chars().next())
        .is_some_and(is_js_space)
}

fn requirement_name(line: &str) -> Option<String> {
    REQUIREMENT_HEADER
        .captures(line)
        .map(|c| normalize_requirement_name(&c[1]))
}

fn split_sections<'a>(lines: &'a [&'a str], mask: &'a [bool]) -> Vec<(String, Body<'a>)> {
    let starts: Vec<(usize, String)> = (0..lines.len())
        .filter(|&i| !mask[i])
        .filter_map(|i| {
            SECTION
                .captures(lines[i])
                .map(|c| (i, js_trim(&c[1]).to_string()))
        })
        .collect();
    starts
        .iter()
        .enumerate()
        .map(|(k, (index, title))| {
            let end = starts.get(k + 1).map_or(lines.len(), |(next, _)| *next);
            let body = Body {
                lines: &lines[index + 1..end],
                mask: &mask[index + 1..end],
                start_line: index + 2,
            };
            (title.clone(), body)
        })
        .collect()
}

fn find_orphans(lines: &[&str], mask: &[bool]) -> Vec<OrphanedRequirement> {
    let delta_titles: Vec<String> = Operation::ALL
        .iter()
        .map(|op| op.title().to_lowercase())
        .collect();
    let mut section: Option<String> = None;
    let mut orphans = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if mask[i] {
            continue;
        }
        if let Some(c) = SECTION.captures(line) {
            section = Some(js_trim(&c[1]).to_string());
            continue;
        }
        if section
            .as_ref()
            .is_some_and(|s| delta_titles.contains(&s.to_lowercase()))
        {
            continue;
        }
        if let Some(name) = requirement_name(line) {
            orphans.push(OrphanedRequirement {
                name,
                section: section.clone(),
                line: i + 1,
            });
        }
    }
    orphans
}

/// Requirement blocks in one section body; non-requirement `### ` headers are
/// recorded in `skipped` when given.
fn requirement_blocks(
    body: &Body,
    mut skipped: Option<(&String, &mut Vec<SkippedHeader>)>,
) -> Vec<RequirementBlock> {
    let Body {
        lines,
        mask,
        start_line,
    } = *body;
    let is_req = |i: usize| !mask[i] && REQUIREMENT_HEADER.is_match(lines[i]);
    let mut record = |i: usize| {
        if let Some((section, sink)) = skipped.as_mut()
            && !mask[i]
            && !REQUIREMENT_HEADER.is_match(lines[i])
            && let Some(c) = H3.captures(lines[i])
        {
            sink.push(SkippedHeader {
                header: js_trim(&c[1]).to_string(),
                section: (*section).clone(),
                line: start_line + i,
            });
        }
    };
    let mut blocks = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        while i < lines.len() && !is_req(i) {
            record(i);
            i += 1;
        }
        if i >= lines.len() {
            break;
        }
        let header = i;
        let Some(name) = requirement_name(lines[i]) else {
            i += 1;
            continue;
        };
        i += 1;
        let is_section = |i: usize| !mask[i] && is_top_level(lines[i]);
        while i < lines.len() && !is_req(i) && !is_section(i) {
            record(i);
            i += 1;
        }
        let raw = js_trim_end(&lines[header..i].join("\n")).to_string();
        blocks.push(RequirementBlock {
            name,
            raw,
            line: start_line + header,
        });
    }
    blocks
}

fn removed_names(body: &Body) -> Vec<Named> {
    let mut names = Vec::new();
    for (i, line) in body.lines.iter().enumerate() {
        if body.mask[i] {
            continue;
        }
        let name = requirement_name(line).or_else(|| {
            REMOVED_BULLET
                .captures(line)
                .map(|c| normalize_requirement_name(&c[1]))
        });
        if let Some(name) = name {
            names.push(Named {
                name,
                line: body.start_line + i,
            });
        }
    }
    names
}

fn rename_pairs(body: &Body, unpaired: &mut Vec<UnpairedRename>) -> Vec<RenamePair> {
    let mut pairs = Vec::new();
    let mut pending: Option<Named> = None;
    for (i, line) in body.lines.iter().enumerate() {
        if body.mask[i] {
            continue;
        }
        let line_no = body.start_line + i;
        if let Some(c) = RENAME_FROM.captures(line) {
            if let Some(p) = pending.take() {
                unpaired.push(UnpairedRename {
                    side: RenameSide::From,
                    name: p.name,
                    line: p.line,
                });
            }
            pending = Some(Named {
                name: normalize_requirement_name(&c[1]),
                line: line_no,
            });
        } else if let Some(c) = RENAME_TO.captures(line) {
            let to = normalize_requirement_name(&c[1]);
            match pending.take() {
                Some(from) => pairs.push(RenamePair {
                    from: from.name,
                    to,
                    line: from.line,
                }),
                None => unpaired.push(UnpairedRename {
                    side: RenameSide::To,
                    name: to,
                    line: line_no,
                }),
            }
        }
    }
    if let Some(p) = pending {
        unpaired.push(UnpairedRename {
            side: RenameSide::From,
            name: p.name,
            line: p.line,
        });
    }
    pairs
}

/// `extractRequirementBody`: the requirement text between the header and the
/// first header below it, blank and fenced lines skipped, each line trimmed.
/// `**Key**:` metadata lines count only when nothing else is there. Empty
/// when the requirement has no text.
pub fn requirement_body(block_raw: &str) -> String {
    let body: Vec<&str> = block_raw.split('\n').skip(1).collect();
    let mask = code_fence_mask(&body);
    let mut captured = Vec::new();
    let mut metadata = Vec::new();
    for (i, line) in body.iter().enumerate() {
        if mask[i] {
            continue;
        }
        if HEADER_LINE.is_match(line) {
            break;
        }
        let trimmed = js_trim(line);
        if trimmed.is_empty() {
            continue;
        }
        if METADATA_LINE.is_match(trimmed) {
            metadata.push(trimmed);
        } else {
            captured.push(trimmed);
        }
    }
    if captured.is_empty() {
        metadata.join("\n")
    } else {
        captured.join("\n")
    }
}

/// Bodies of the `#### ` scenarios in a requirement block (each runs to the
/// next unfenced header of level 1 to 4).
fn scenario_bodies(block_raw: &str) -> Vec<String> {
    let body: Vec<&str> = block_raw.split('\n').skip(1).collect();
    let mask = code_fence_mask(&body);
    let mut out = Vec::new();
    for i in 0..body.len() {
        if mask[i] || !SCENARIO_HEADER.is_match(body[i]) {
            continue;
        }
        let mut end = i + 1;
        while end < body.len() && (mask[end] || !SCENARIO_BODY_END.is_match(body[end])) {
            end += 1;
        }
        out.push(body[i + 1..end].join("\n"));
    }
    out
}

/// Scenarios that count: a `#### ` header with a non-blank body.
pub fn count_scenarios(block_raw: &str) -> usize {
    scenario_bodies(block_raw)
        .iter()
        .filter(|b| !js_trim(b).is_empty())
        .count()
}

/// `#### ` headers with nothing under them (they do not count).
pub fn count_empty_scenarios(block_raw: &str) -> usize {
    scenario_bodies(block_raw)
        .iter()
        .filter(|b| js_trim(b).is_empty())
        .count()
}

/// Scenario names of a block as the author reads them, in order, for the
/// MODIFIED scenario-loss comparison (empty-bodied headers included).
pub fn scenario_names(block_raw: &str) -> Vec<String> {
    let normalized = normalize_lines(block_raw);
    let lines: Vec<&str> = normalized.split('\n').collect();
    let mask = code_fence_mask(&lines);
    (0..lines.len())
        .filter(|&i| !mask[i] && SCENARIO_HEADER.is_match(lines[i]))
        .map(|i| {
            let name = SCENARIO_HEADER.replace(lines[i], "");
            let name = ATX_CLOSE.replace(&name, "");
            js_trim(&SCENARIO_PREFIX.replace(&name, "")).to_string()
        })
        .collect()
}

/// Requirement blocks of a main spec's `## Requirements` section.
pub fn main_spec_requirements(content: &str) -> Vec<RequirementBlock> {
    let normalized = normalize_lines(content);
    let lines: Vec<&str> = normalized.split('\n').collect();
    let mask = code_fence_mask(&lines);
    let Some(header) =
        (0..lines.len()).find(|&i| !mask[i] && REQUIREMENTS_SECTION.is_match(lines[i]))
    else {
        return Vec::new();
    };
    let end = (header + 1..lines.len())
        .find(|&i| !mask[i] && is_top_level(lines[i]))
        .unwrap_or(lines.len());
    let body = Body {
        lines: &lines[header + 1..end],
        mask: &mask[header + 1..end],
        start_line: header + 2,
    };
    requirement_blocks(&body, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_sections_blocks_and_renames() {
        let spec = "## ADDED Requirements\n### Requirement: A ##\nThe system SHALL a.\n\n#### Scenario: one\n- x\n\n## removed requirements\n- `### Requirement: B`\n## RENAMED Requirements\n- FROM: `### Requirement: C`\n- TO: `### Requirement: D`\n- TO: `### Requirement: E`\n";
        let plan = parse_delta_spec(spec);
        assert_eq!(plan.added.len(), 1);
        assert_eq!(plan.added[0].name, "A");
        assert_eq!(plan.added[0].line, 2);
        assert_eq!(count_scenarios(&plan.added[0].raw), 1);
        assert_eq!(requirement_body(&plan.added[0].raw), "The system SHALL a.");
        assert_eq!(
            plan.removed,
            vec![Named {
                name: "B".into(),
                line: 9
            }]
        );
        assert_eq!(plan.renamed.len(), 1);
        assert_eq!(plan.unpaired_renames[0].side, RenameSide::To);
        assert_eq!(plan.section_lines, [Some(1), None, Some(8), Some(10)]);
    }

    #[test]
    fn fenced_structure_and_three_hash_scenarios_do_not_count() {
        let spec = "## ADDED Requirements\n### Requirement: A\nMUST.\n```\n#### Scenario: fenced\nx\n```\n### Scenario: three\n- x\n";
        let plan = parse_delta_spec(spec);
        assert_eq!(count_scenarios(&plan.added[0].raw), 0);
        assert_eq!(plan.skipped_headers[0].header, "Scenario: three");
    }

    #[test]
    fn keyword_is_ascii_case_insensitive_only() {
        assert!(requirement_name("### REQUIREMENT: x").is_some());
        assert!(SCENARIO_PREFIX.is_match("SCENARIO: x"));
        assert!(!SCENARIO_PREFIX.is_match("\u{17F}cenario: x"));
    }

    proptest::proptest! {
        /// The reader never panics and its line numbers stay inside the file,
        /// whatever the bytes (markdown-ish alphabet to reach deep paths).
        #[test]
        fn never_panics_and_lines_are_in_range(
            text in r"(## |### |#### |Requirement: |Scenario: |ADDED Requirements|REMOVED Requirements|RENAMED Requirements|MODIFIED Requirements|- FROM: `### Requirement: a`|- TO: `### Requirement: b`|```|~~~|SHALL|\r|\n|\u{2028}|\u{A0}|\u{FEFF}|[a-z #`*+-]){0,80}"
        ) {
            let plan = parse_delta_spec(&text);
            let lines = normalize_lines(&text).split('\n').count();
            let in_range = |l: usize| (1..=lines).contains(&l);
            for b in plan.added.iter().chain(&plan.modified) {
                proptest::prop_assert!(in_range(b.line));
                let _ = (requirement_body(&b.raw), count_scenarios(&b.raw), scenario_names(&b.raw));
            }
            proptest::prop_assert!(plan.removed.iter().all(|r| in_range(r.line)));
            proptest::prop_assert!(plan.orphaned.iter().all(|o| in_range(o.line)));
            proptest::prop_assert!(plan.section_lines.iter().flatten().all(|l| in_range(*l)));
            let _ = main_spec_requirements(&text);
        }
    }

    #[test]
    fn orphans_are_found_outside_delta_sections() {
        let plan = parse_delta_spec("### Requirement: Top\n## Notes\n### Requirement: N\n");
        assert_eq!(plan.orphaned.len(), 2);
        assert_eq!(plan.orphaned[1].section.as_deref(), Some("Notes"));
    }
}
