//! `clawmux openspec lint`: OpenSpec's change validation
//! (`openspec validate <change> [--strict]`, version [`OPENSPEC_VERSION`])
//! reimplemented, reading a change folder and producing the same verdict and
//! the same issue messages. Each issue also carries the file (relative to the
//! project root), a line where one exists, and a fix.
//!
//! Rules, all from OpenSpec's `Validator.validateChangeDeltaSpecs`:
//! - every `specs/**/spec.md` is a delta spec; a `spec.md` at the specs root
//!   and other `.md` files holding delta sections are errors (ignored by
//!   archive);
//! - ADDED/MODIFIED: body text required, at least one `#### ` scenario with a
//!   body, `SHALL`/`MUST` in the body (warning; `--strict` makes warnings fatal);
//! - duplicates inside a section, MODIFIED+REMOVED, MODIFIED+ADDED,
//!   ADDED+REMOVED, MODIFIED naming a RENAMED FROM, RENAMED TO colliding with
//!   ADDED, RENAMED FROM also REMOVED (case-folded);
//! - unpaired RENAMED FROM/TO lines; requirements outside delta sections
//!   (warning); sections with no entries; files with no sections; no delta in
//!   the whole change unless `skip_specs: true`;
//! - MODIFIED blocks that drop a scenario the current `openspec/specs/<cap>`
//!   spec has;
//! - `tasks.md` with list items but no checkbox, and `## N.` numbering
//!   mistakes (warnings).
//!
//! - a folder with no change files of its own that only wraps nested change
//!   folders is reported as such (OpenSpec's nested-change report).
//!
//! Not reproduced: the INFO-only archive dry run (it never changes the
//! verdict).
//!
//! Long on purpose: one function per `openspec validate` rule, kept in
//! OpenSpec's own order so the two can be read side by side.

use std::collections::HashSet;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::delta::{
    DeltaPlan, Operation, RenameSide, RequirementBlock, count_empty_scenarios, count_scenarios,
    fold_requirement_name, main_spec_requirements, parse_delta_spec, requirement_body,
    scenario_names,
};
use super::metadata::{self, METADATA_FILENAME};
use super::tasks;
use super::text::contains_shall_or_must;

/// The OpenSpec release whose validator this module reproduces.
pub const OPENSPEC_VERSION: &str = "1.13.2";

/// The line given for findings about a whole file (its first line), so that
/// every spec-file finding names a place an editor can jump to.
const WHOLE_FILE_LINE: usize = 1;

const GUIDE_NO_DELTAS: &str = "No deltas found. Ensure your change has a specs/ directory with capability folders (e.g. specs/http-server/spec.md) containing .md files that use delta headers (## ADDED/MODIFIED/REMOVED/RENAMED Requirements) and that each requirement includes at least one \"#### Scenario:\" block. If this change intentionally modifies no specs (pure refactor, tooling, docs), set \"skip_specs: true\" in the change's .openspec.yaml instead. Tip: run \"openspec change show <change-id> --json --deltas-only\" to inspect parsed deltas.";
const SKIP_SPECS_CONFLICT: &str = "skip_specs is set in .openspec.yaml but spec files exist under specs/. Remove skip_specs or delete the delta spec files";
const SKIP_SPECS_ACCEPTED: &str = "skip_specs is set in .openspec.yaml: change declares no spec-level behavior changes, zero deltas accepted";
const SKIP_SPECS_INVALID: &str = "skip_specs is set but .openspec.yaml is not valid change metadata, so the marker is not honored. Fix the metadata";

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Level {
    Error,
    Warning,
    Info,
}

impl Level {
    /// `ERROR`, `WARNING` or `INFO`, as OpenSpec prints them.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Error => "ERROR",
            Self::Warning => "WARNING",
            Self::Info => "INFO",
        }
    }
}

/// One finding, in the shape of `openspec validate --json` plus `file` and `fix`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Issue {
    pub level: Level,
    /// OpenSpec's `path` (e.g. `auth/spec.md` under the change's specs/, or `file`).
    pub path: String,
    /// OpenSpec's message, word for word.
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// The file the issue is in, relative to the project root.
    pub file: String,
    /// What to do about it.
    pub fix: String,
}

/// The verdict on one change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub valid: bool,
    pub issues: Vec<Issue>,
}

impl Report {
    /// `openspec validate --json` output for this report.
    pub fn to_json(&self) -> serde_json::Value {
        let count = |l: Level| self.issues.iter().filter(|i| i.level == l).count();
        let passed = usize::from(self.valid);
        serde_json::json!({
            "items": [self],
            "summary": {
                "totals": {"items": 1, "passed": passed, "failed": 1 - passed},
                "byType": {"change": {"items": 1, "passed": passed, "failed": 1 - passed}},
                "issues": {"errors": count(Level::Error), "warnings": count(Level::Warning), "info": count(Level::Info)},
            },
            "version": "1.0",
        })
    }

    /// One line per issue: `file:line: LEVEL message (fix: …)`.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for issue in &self.issues {
            let at = issue.line.map(|l| format!(":{l}")).unwrap_or_default();
            out.push_str(&format!(
                "{}{at}: {}: {}\n  fix: {}\n",
                issue.file,
                issue.level.as_str(),
                issue.message,
                issue.fix
            ));
        }
        let verdict = if self.valid { "is valid" } else { "has issues" };
        out.push_str(&format!("Change '{}' {verdict}\n", self.id));
        out
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LintError {
    #[error("no change folder {0} (create it with `clawmux openspec new <slug>`)")]
    NoChange(PathBuf),
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> LintError + '_ {
    move |source| LintError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Validates `openspec/changes/<slug>` under `root`.
pub fn lint_change(root: &Path, slug: &str, strict: bool) -> Result<Report, LintError> {
    let change_dir = root.join("openspec/changes").join(slug);
    if slug.is_empty()
        || slug.contains(['/', '\\'])
        || slug == "."
        || slug == ".."
        || !change_dir.is_dir()
    {
        return Err(LintError::NoChange(change_dir));
    }
    if let Some(nested) = nested_changes(&change_dir, slug) {
        let list: Vec<String> = nested
            .iter()
            .map(|id| format!("openspec/changes/{id}/"))
            .collect();
        let example = nested[0].replace('/', "-");
        let message = format!(
            "\"{slug}\" is not a change: it is a folder wrapping {}. A change must be a directory directly under openspec/changes/, so those nested directories are invisible to OpenSpec while the folder around them is reported as a change. Nested paths are supported under openspec/specs/ only. Rename each nested change to a flat name (for example \"{example}\").",
            list.join(", ")
        );
        let issue = Issue {
            level: Level::Error,
            path: "file".into(),
            message,
            line: None,
            file: format!("openspec/changes/{slug}"),
            fix: format!(
                "Move each nested change to openspec/changes/<flat-name>/, e.g. openspec/changes/{example}/."
            ),
        };
        return Ok(Report {
            id: slug.to_string(),
            kind: "change",
            valid: false,
            issues: vec![issue],
        });
    }
    let mut linter = Linter {
        issues: Vec::new(),
        change_rel: format!("openspec/changes/{slug}"),
    };
    linter.run(root, &change_dir)?;
    let issues = linter.issues;
    let valid = !issues
        .iter()
        .any(|i| i.level == Level::Error || (strict && i.level == Level::Warning));
    Ok(Report {
        id: slug.to_string(),
        kind: "change",
        valid,
        issues,
    })
}

struct Linter {
    issues: Vec<Issue>,
    /// `openspec/changes/<slug>`.
    change_rel: String,
}

/// A delta spec found under the change's specs/.
struct SpecFile {
    /// Capability id, e.g. `auth` or `area/auth`.
    id: String,
    path: PathBuf,
}

fn read_lossy(path: &Path) -> std::io::Result<String> {
    std::fs::read(path).map(|b| String::from_utf8_lossy(&b).into_owned())
}

impl Linter {
    fn push(
        &mut self,
        level: Level,
        path: &str,
        file: String,
        line: Option<usize>,
        message: String,
        fix: &str,
    ) {
        self.issues.push(Issue {
            level,
            path: path.to_string(),
            message,
            line,
            file,
            fix: fix.to_string(),
        });
    }

    fn spec_issue(
        &mut self,
        level: Level,
        entry: &str,
        line: Option<usize>,
        message: String,
        fix: &str,
    ) {
        let file = format!("{}/specs/{entry}", self.change_rel);
        self.push(level, entry, file, line, message, fix);
    }

    fn run(&mut self, root: &Path, change_dir: &Path) -> Result<(), LintError> {
        let specs_dir = change_dir.join("specs");
        let mut discovered = Vec::new();
        let mut unread = Vec::new();
        walk_specs(&specs_dir, &mut Vec::new(), &mut discovered, &mut unread)?;
        discovered.sort_by(|a, b| a.id.cmp(&b.id));
        unread.sort();
        let root_spec = specs_dir.join("spec.md");
        let has_root_spec = std::fs::metadata(&root_spec).is_ok_and(|m| m.is_file());
        if has_root_spec {
            self.spec_issue(Level::Error, "spec.md", Some(WHOLE_FILE_LINE),
                "Delta spec found at specs/spec.md. Delta specs must live under a capability path (e.g. specs/<capability-path>/spec.md) — a file at the specs/ root is ignored when the change is applied or archived.".into(),
                "Move it to specs/<capability>/spec.md.");
        }
        let mut total_deltas = 0;
        let mut missing_headers = Vec::new();
        let mut empty_sections = Vec::new();
        for spec in &discovered {
            let Ok(content) = read_lossy(&spec.path) else {
                continue;
            };
            let entry = format!("{}/spec.md", spec.id);
            let plan = parse_delta_spec(&content);
            if plan.entry_count() == 0 {
                let sections: Vec<String> = Operation::ALL
                    .iter()
                    .filter(|op| plan.has_section(**op))
                    .map(|op| format!("## {}", op.title()))
                    .collect();
                if sections.is_empty() {
                    missing_headers.push(entry.clone());
                } else {
                    empty_sections.push((entry.clone(), sections, plan.first_section_line()));
                }
            }
            total_deltas += plan.entry_count();
            self.check_spec(root, &spec.id, &entry, &plan)?;
        }
        for (path, expected, line) in &unread {
            self.spec_issue(Level::Error, path, Some(*line),
                format!("Delta spec found at specs/{path}. Delta specs must be a spec.md inside a capability folder — this file is ignored when the change is applied or archived. Move its requirements into specs/{expected}."),
                &format!("Move its requirements into specs/{expected}."));
        }
        for (entry, sections, line) in &empty_sections {
            self.spec_issue(Level::Error, entry, *line,
                format!("Delta sections {} were found, but no requirement entries parsed. Ensure each section includes at least one \"### Requirement:\" block (REMOVED may use bullet list syntax).", section_list(sections)),
                "Add a \"### Requirement: <name>\" block under each section, or delete the empty sections.");
        }
        for entry in &missing_headers {
            self.spec_issue(Level::Error, entry, Some(WHOLE_FILE_LINE),
                "No delta sections found. Add headers such as \"## ADDED Requirements\" or move non-delta notes outside specs/.".into(),
                "Add a \"## ADDED Requirements\" (or MODIFIED/REMOVED/RENAMED) section header.");
        }
        self.check_metadata_and_totals(
            root,
            change_dir,
            &specs_dir,
            total_deltas,
            has_root_spec || !unread.is_empty(),
        )?;
        self.check_tasks(root, change_dir);
        Ok(())
    }

    fn check_metadata_and_totals(
        &mut self,
        root: &Path,
        change_dir: &Path,
        specs_dir: &Path,
        total_deltas: usize,
        misplaced_specs: bool,
    ) -> Result<(), LintError> {
        let marker = metadata::skip_specs(change_dir, root);
        let meta_file = format!("{}/{METADATA_FILENAME}", self.change_rel);
        if let Some(reason) = &marker.invalid {
            self.push(
                Level::Error,
                METADATA_FILENAME,
                meta_file.clone(),
                None,
                format!("{SKIP_SPECS_INVALID} ({reason})"),
                "Make .openspec.yaml valid (schema: spec-driven, skip_specs: true|false).",
            );
        }
        let specs_has_files = marker.declared && has_any_file(specs_dir).unwrap_or(true);
        if marker.declared && specs_has_files {
            self.push(
                Level::Error,
                "file",
                meta_file.clone(),
                None,
                SKIP_SPECS_CONFLICT.into(),
                "Remove skip_specs from .openspec.yaml or delete the files under specs/.",
            );
        }
        if total_deltas == 0 && !misplaced_specs {
            if marker.declared && !specs_has_files {
                self.push(
                    Level::Info,
                    "file",
                    meta_file,
                    None,
                    SKIP_SPECS_ACCEPTED.into(),
                    "Nothing to do.",
                );
            } else if !marker.declared {
                self.push(Level::Error, "file", format!("{}/specs", self.change_rel), None,
                    format!("Change must have at least one delta. {GUIDE_NO_DELTAS}"),
                    "Write specs/<capability>/spec.md with a \"## ADDED Requirements\" section, or set \"skip_specs: true\" in .openspec.yaml.");
            }
        }
        Ok(())
    }

    fn check_tasks(&mut self, root: &Path, change_dir: &Path) {
        let Some(schema) = metadata::change_schema(change_dir, root) else {
            return;
        };
        let tasks_path = change_dir.join("tasks.md");
        let content = match std::fs::read(&tasks_path) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(_) => return,
        };
        let file = format!("{}/tasks.md", self.change_rel);
        let mut found = Vec::new();
        if schema == metadata::BUILT_IN_SCHEMA {
            found.extend(
                tasks::missing_checkbox_issue(&content)
                    .map(|i| (i, "Write each task as \"- [ ] 1.1 Description\".")),
            );
        }
        if metadata::uses_built_in_schema(change_dir, root) {
            found.extend(tasks::numbering_issues(&content).into_iter().map(|i| (i, "Renumber the task so its first number is its `## N.` group, and keep ids unique.")));
        }
        for (issue, fix) in found {
            self.push(
                Level::Warning,
                "tasks.md",
                file.clone(),
                Some(issue.line),
                issue.message,
                fix,
            );
        }
    }

    fn check_spec(
        &mut self,
        root: &Path,
        spec_id: &str,
        entry: &str,
        plan: &DeltaPlan,
    ) -> Result<(), LintError> {
        for stray in &plan.skipped_headers {
            let nameless = {
                let h = stray.header.to_ascii_lowercase();
                h == "requirement" || h == "requirement:"
            };
            let message = if nameless {
                format!(
                    "Header \"### {}\" in {} is missing a requirement name and is ignored by validation. Add a name, e.g. \"### Requirement: <name>\".",
                    stray.header, stray.section
                )
            } else {
                format!(
                    "Header \"### {}\" in {} is not a \"### Requirement:\" header and is ignored by validation. Use \"### Requirement: {}\" if it should be validated as a requirement.",
                    stray.header, stray.section, stray.header
                )
            };
            self.spec_issue(
                Level::Info,
                entry,
                Some(stray.line),
                message,
                "Use \"### Requirement: <name>\", or \"#### Scenario:\" for a scenario.",
            );
        }
        for unpaired in &plan.unpaired_renames {
            let (side, missing) = match unpaired.side {
                RenameSide::From => ("FROM", "TO"),
                RenameSide::To => ("TO", "FROM"),
            };
            self.spec_issue(Level::Error, entry, Some(unpaired.line),
                format!("RENAMED {side}: \"{}\" has no matching {missing}: line. Write each rename as a FROM: line followed immediately by its TO: line.", unpaired.name),
                "Write \"- FROM: `### Requirement: Old`\" then \"- TO: `### Requirement: New`\".");
        }
        for orphan in &plan.orphaned {
            let place = match &orphan.section {
                Some(s) => format!("under \"## {s}\""),
                None => "above the first \"## \" section".to_string(),
            };
            self.spec_issue(Level::Warning, entry, Some(orphan.line),
                format!("Requirement \"{}\" is {place}, which is not a delta section, so it is ignored. Move it under \"## ADDED Requirements\", \"## MODIFIED Requirements\", \"## REMOVED Requirements\", or \"## RENAMED Requirements\".", orphan.name),
                "Move it under a \"## ADDED|MODIFIED|REMOVED|RENAMED Requirements\" section.");
        }
        let added = self.check_blocks(entry, "ADDED", &plan.added);
        let modified = self.check_blocks(entry, "MODIFIED", &plan.modified);
        if !plan.modified.is_empty() {
            self.check_scenario_loss(root, spec_id, entry, plan)?;
        }
        let mut removed: Vec<String> = Vec::new();
        for r in &plan.removed {
            if removed.contains(&r.name) {
                self.spec_issue(
                    Level::Error,
                    entry,
                    Some(r.line),
                    format!("Duplicate requirement in REMOVED: \"{}\"", r.name),
                    "Delete the repeated entry.",
                );
            } else {
                removed.push(r.name.clone());
            }
        }
        let (mut froms, mut tos) = (HashSet::new(), HashSet::new());
        for pair in &plan.renamed {
            if !froms.insert(pair.from.clone()) {
                self.spec_issue(
                    Level::Error,
                    entry,
                    Some(pair.line),
                    format!("Duplicate FROM in RENAMED: \"{}\"", pair.from),
                    "Rename each requirement once.",
                );
            }
            if !tos.insert(pair.to.clone()) {
                self.spec_issue(
                    Level::Error,
                    entry,
                    Some(pair.line),
                    format!("Duplicate TO in RENAMED: \"{}\"", pair.to),
                    "Give each renamed requirement a distinct new name.",
                );
            }
        }
        let line_of = |blocks: &[RequirementBlock], n: &str| {
            blocks.iter().find(|b| b.name == n).map(|b| b.line)
        };
        for n in &modified {
            let line = line_of(&plan.modified, n);
            if removed.contains(n) {
                self.spec_issue(
                    Level::Error,
                    entry,
                    line,
                    format!("Requirement present in both MODIFIED and REMOVED: \"{n}\""),
                    "Keep it in one section: MODIFIED to change it, REMOVED to delete it.",
                );
            }
            if added.contains(n) {
                self.spec_issue(Level::Error, entry, line, format!("Requirement present in both MODIFIED and ADDED: \"{n}\""), "Keep it in one section: ADDED for a new requirement, MODIFIED for an existing one.");
            }
        }
        for n in &added {
            if removed.contains(n) {
                self.spec_issue(
                    Level::Error,
                    entry,
                    line_of(&plan.added, n),
                    format!("Requirement present in both ADDED and REMOVED: \"{n}\""),
                    "Keep it in one section, or use MODIFIED to replace it.",
                );
            }
        }
        for pair in &plan.renamed {
            if modified.contains(&pair.from) {
                self.spec_issue(
                    Level::Error,
                    entry,
                    Some(pair.line),
                    format!(
                        "MODIFIED references old name from RENAMED. Use new header for \"{}\"",
                        pair.to
                    ),
                    &format!(
                        "Write the MODIFIED header as \"### Requirement: {}\".",
                        pair.to
                    ),
                );
            }
            if added.contains(&pair.to) {
                self.spec_issue(
                    Level::Error,
                    entry,
                    Some(pair.line),
                    format!("RENAMED TO collides with ADDED for \"{}\"", pair.to),
                    "Pick a new name that no ADDED requirement uses.",
                );
            }
            let fold = fold_requirement_name(&pair.from);
            if let Some(r) = removed.iter().find(|r| fold_requirement_name(r) == fold) {
                let spelled = if *r == pair.from {
                    String::new()
                } else {
                    format!(" (REMOVED spells it \"{r}\")")
                };
                self.spec_issue(
                    Level::Error,
                    entry,
                    Some(pair.line),
                    format!(
                        "Requirement present in both RENAMED and REMOVED: \"{}\"{spelled}",
                        pair.from
                    ),
                    "Either rename the requirement or remove it, not both.",
                );
            }
        }
        Ok(())
    }

    /// ADDED/MODIFIED block checks; returns the distinct names in order.
    fn check_blocks(&mut self, entry: &str, op: &str, blocks: &[RequirementBlock]) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for block in blocks {
            let line = Some(block.line);
            let name = &block.name;
            if names.contains(name) {
                self.spec_issue(
                    Level::Error,
                    entry,
                    line,
                    format!("Duplicate requirement in {op}: \"{name}\""),
                    "Merge the two blocks into one.",
                );
            } else {
                names.push(name.clone());
            }
            let body = requirement_body(&block.raw);
            let prefix = format!("{op} \"{name}\"");
            if body.is_empty() {
                let message = if contains_shall_or_must(name) {
                    shall_must_message(&prefix, name, false)
                } else {
                    format!("{prefix} is missing requirement text")
                };
                self.spec_issue(
                    Level::Error,
                    entry,
                    line,
                    message,
                    "Write the requirement text (with SHALL or MUST) on the line after the header.",
                );
            } else if !contains_shall_or_must(&body) {
                self.spec_issue(
                    Level::Warning,
                    entry,
                    line,
                    shall_must_message(&prefix, name, true),
                    "State the normative behaviour with SHALL or MUST in the requirement text.",
                );
            }
            if count_scenarios(&block.raw) < 1 {
                let hint = if count_empty_scenarios(&block.raw) > 0 {
                    " (a scenario header with no body under it does not count; add its steps, e.g. \"- **WHEN** ...\" and \"- **THEN** ...\")"
                } else {
                    ""
                };
                self.spec_issue(Level::Error, entry, line, format!("{prefix} must include at least one scenario{hint}"), "Add \"#### Scenario: <name>\" (exactly four #) followed by \"- **WHEN** ...\" and \"- **THEN** ...\" lines.");
            }
        }
        names
    }

    /// MODIFIED blocks that drop a scenario the current main spec still has.
    fn check_scenario_loss(
        &mut self,
        root: &Path,
        spec_id: &str,
        entry: &str,
        plan: &DeltaPlan,
    ) -> Result<(), LintError> {
        let main_file = root.join("openspec/specs").join(spec_id).join("spec.md");
        let content = match read_lossy(&main_file) {
            Ok(c) => c,
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::PermissionDenied | ErrorKind::IsADirectory
                ) =>
            {
                self.spec_issue(Level::Error, entry, None,
                    format!("Could not read {} to check the MODIFIED requirements against it ({e}). Archive reads the same file, so fix the file before archiving.", main_file.display()),
                    "Make the main spec readable.");
                return Ok(());
            }
            Err(_) => return Ok(()),
        };
        let current = main_spec_requirements(&content);
        let renamed_from = |to: &str| {
            plan.renamed
                .iter()
                .rev()
                .find(|p| p.to == to)
                .map(|p| p.from.clone())
        };
        let current_block = |name: &str| {
            let mut visited = HashSet::new();
            let mut key = Some(name.to_string());
            while let Some(k) = key {
                if let Some(b) = current.iter().rev().find(|b| b.name == k) {
                    return Some(b);
                }
                if !visited.insert(k.clone()) {
                    return None;
                }
                key = renamed_from(&k);
            }
            None
        };
        for block in &plan.modified {
            if plan.renamed.iter().any(|p| p.from == block.name) {
                continue;
            }
            let Some(cur) = current_block(&block.name) else {
                continue;
            };
            let (have, want) = (scenario_names(&cur.raw), scenario_names(&block.raw));
            let missing = unmatched(&have, &want);
            if missing.is_empty() {
                continue;
            }
            let added = unmatched(&want, &have);
            let quoted = |v: &[String]| {
                v.iter()
                    .map(|n| format!("\"{n}\""))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let count = |n: usize| format!("{n} {}", if n == 1 { "scenario" } else { "scenarios" });
            let mut balance = format!(
                "The modified block has {}; the current spec has {}.",
                count(want.len()),
                count(have.len())
            );
            if added.is_empty() {
                balance.push_str(" It adds none.");
            } else {
                let listed = quoted(&added[..added.len().min(3)]);
                let names = if added.len() > 3 {
                    format!("{listed} and {} more", added.len() - 3)
                } else {
                    listed
                };
                balance.push_str(&format!(
                    " It adds {} not in the current spec: {names}.",
                    count(added.len())
                ));
            }
            self.spec_issue(Level::Error, entry, Some(block.line),
                format!("MODIFIED \"{}\" omits scenario(s) the current spec still has: {}. {balance} Copy the omitted scenarios into the MODIFIED block (a MODIFIED requirement replaces the whole block, so archive refuses to drop them).", block.name, quoted(&missing)),
                &format!("Copy the missing scenarios from openspec/specs/{spec_id}/spec.md into this block."));
        }
        Ok(())
    }
}

/// Names of `names` left after matching each against one in `against`.
fn unmatched(names: &[String], against: &[String]) -> Vec<String> {
    let mut remaining: Vec<&String> = against.iter().collect();
    names
        .iter()
        .filter(|n| match remaining.iter().position(|r| r == n) {
            Some(at) => {
                remaining.swap_remove(at);
                false
            }
            None => true,
        })
        .cloned()
        .collect()
}

fn shall_must_message(prefix: &str, name: &str, guidance: bool) -> String {
    let base = format!(
        "{prefix} {} contain SHALL or MUST",
        if guidance { "should" } else { "must" }
    );
    let suffix = if guidance {
        " (RFC 2119 best practice for English specs)"
    } else {
        ""
    };
    if contains_shall_or_must(name) {
        format!(
            "{base} in the requirement body, not only in the header. Move the SHALL/MUST statement to the line immediately after the \"### Requirement: ...\" header.{suffix}"
        )
    } else {
        format!("{base}{suffix}")
    }
}

fn section_list(sections: &[String]) -> String {
    match sections {
        [] => String::new(),
        [one] => one.clone(),
        [head @ .., last] => format!("{} and {last}", head.join(", ")),
    }
}

/// Walks specs/: `spec.md` below a capability folder is a delta spec; any
/// other `.md` holding a delta section is reported as unread. Dot entries are
/// skipped and symlinked folders not followed, like OpenSpec.
fn walk_specs(
    dir: &Path,
    segments: &mut Vec<String>,
    found: &mut Vec<SpecFile>,
    unread: &mut Vec<(String, String, usize)>,
) -> Result<(), LintError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
            return Ok(());
        }
        Err(e) => return Err(io_err(dir)(e)),
    };
    for entry in entries {
        let entry = entry.map_err(io_err(dir))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        let kind = entry.file_type().map_err(io_err(&path))?;
        if kind.is_dir() {
            segments.push(name);
            walk_specs(&path, segments, found, unread)?;
            segments.pop();
            continue;
        }
        let is_file = kind.is_file() || (kind.is_symlink() && path.is_file());
        if !is_file {
            continue;
        }
        if name == "spec.md" {
            if !segments.is_empty() {
                found.push(SpecFile {
                    id: segments.join("/"),
                    path,
                });
            }
        } else if name.to_lowercase().ends_with(".md") {
            let content = read_lossy(&path).map_err(io_err(&path))?;
            if let Some(line) = parse_delta_spec(&content).first_section_line() {
                let capability = if segments.is_empty() {
                    name[..name.len() - 3].to_string()
                } else {
                    segments.join("/")
                };
                let mut rel = segments.clone();
                rel.push(name);
                unread.push((rel.join("/"), format!("{capability}/spec.md"), line));
            }
        }
    }
    Ok(())
}

/// Files whose presence makes a folder a change (OpenSpec's markers).
const CHANGE_MARKERS: [&str; 4] = [METADATA_FILENAME, "proposal.md", "tasks.md", "design.md"];
/// How deep OpenSpec looks for changes nested in a wrapper folder.
const MAX_NESTING_DEPTH: usize = 3;

fn looks_like_change(dir: &Path) -> bool {
    CHANGE_MARKERS.iter().any(|m| dir.join(m).is_file())
        || has_any_file(&dir.join("specs")).unwrap_or(false)
}

/// Non-dot subfolders of `dir` (symlinks not followed), sorted.
fn subfolders(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    names.sort();
    names
}

/// The change folders nested inside `dir` when `dir` itself is only a
/// wrapper (no change files, no files of its own); `None` otherwise.
fn nested_changes(dir: &Path, slug: &str) -> Option<Vec<String>> {
    if slug == "archive" || looks_like_change(dir) {
        return None;
    }
    let has_own_file = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| {
            !e.file_name().to_string_lossy().starts_with('.')
                && !e.file_type().is_ok_and(|t| t.is_dir())
        });
    if has_own_file {
        return None;
    }
    fn collect(dir: &Path, prefix: &str, depth: usize, found: &mut Vec<String>) {
        if depth > MAX_NESTING_DEPTH {
            return;
        }
        for child in subfolders(dir) {
            let path = dir.join(&child);
            let id = format!("{prefix}/{child}");
            if looks_like_change(&path) {
                found.push(id);
            } else {
                collect(&path, &id, depth + 1, found);
            }
        }
    }
    let mut found = Vec::new();
    collect(dir, slug, 1, &mut found);
    found.sort();
    (!found.is_empty()).then_some(found)
}

/// Whether any non-dot file (or symlink) exists below `dir`.
fn has_any_file(dir: &Path) -> std::io::Result<bool> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let kind = entry.file_type()?;
        if kind.is_file() || kind.is_symlink() || (kind.is_dir() && has_any_file(&entry.path())?) {
            return Ok(true);
        }
    }
    Ok(false)
}
