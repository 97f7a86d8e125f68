//! The lint agreement table, run through our linter and, when the `openspec`
//! CLI is on PATH, through `openspec validate --changes --json [--strict]`
//! (the same `validateChangeDeltaSpecs` call as `openspec validate <slug>`,
//! one process for the whole table). Also random changes neither has seen.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use clawmux::openspec::lint::{Level, OPENSPEC_VERSION, lint_change};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::lint_cases::{CASES, Case};

/// Writes `files` for change `name` under `root`, with the path rules of
/// the table (capability folders prefixed by the case name).
fn write_case(root: &Path, name: &str, files: &[(&str, &str)]) {
    for (path, content) in files {
        let prefix_cap = |rest: &str| match rest.split_once('/') {
            Some((cap, tail)) if !cap.starts_with('.') => format!("{name}-{cap}/{tail}"),
            _ => rest.to_string(),
        };
        let target = if let Some(rest) = path.strip_prefix("change/specs/") {
            root.join(format!(
                "openspec/changes/{name}/specs/{}",
                prefix_cap(rest)
            ))
        } else if let Some(rest) = path.strip_prefix("change/") {
            root.join(format!("openspec/changes/{name}/{rest}"))
        } else if let Some(rest) = path.strip_prefix("main/") {
            root.join(format!("openspec/specs/{}", prefix_cap(rest)))
        } else {
            panic!("table path {path} must start with change/ or main/");
        };
        std::fs::create_dir_all(target.parent().expect("a parent")).expect("mkdir");
        std::fs::write(&target, content).expect("write case file");
    }
    std::fs::create_dir_all(root.join(format!("openspec/changes/{name}"))).expect("mkdir change");
}

fn project(cases: &[(String, Vec<(&str, String)>)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("openspec/specs")).expect("mkdir");
    for (name, files) in cases {
        let borrowed: Vec<(&str, &str)> = files.iter().map(|(p, c)| (*p, c.as_str())).collect();
        write_case(dir.path(), name, &borrowed);
    }
    dir
}

fn table_project() -> tempfile::TempDir {
    let cases: Vec<(String, Vec<(&str, String)>)> = CASES
        .iter()
        .map(|c| {
            (
                c.name.to_string(),
                c.files.iter().map(|(p, s)| (*p, s.to_string())).collect(),
            )
        })
        .collect();
    project(&cases)
}

/// `(level, path, message)` of the errors and warnings, sorted.
type Findings = Vec<(String, String, String)>;

/// Messages about `.openspec.yaml` quote the CLI's YAML/zod wording, which
/// we do not copy: only their level and path are compared.
fn comparable(level: String, path: String, message: String) -> (String, String, String) {
    let message = if path == ".openspec.yaml" {
        "<metadata problem>".into()
    } else {
        message
    };
    (level, path, message)
}

/// Our verdict and findings for a change.
fn ours(root: &Path, name: &str, strict: bool) -> (bool, Findings) {
    let report = lint_change(root, name, strict).expect("lint runs");
    let mut found: Findings = report
        .issues
        .iter()
        .filter(|i| i.level != Level::Info)
        .map(|i| {
            comparable(
                i.level.as_str().to_string(),
                i.path.clone(),
                i.message.clone(),
            )
        })
        .collect();
    found.sort();
    (report.valid, found)
}

/// The real OpenSpec CLI's version; the test fails when it is not on PATH.
fn openspec_cli() -> String {
    clawmux::openspec::cli::OpenSpecCli::default()
        .version()
        .unwrap_or_else(|| {
            crate::support::missing("The OpenSpec CLI", "npm install -g @fission-ai/openspec")
        })
}

/// The CLI's verdict and findings per change id.
fn theirs(root: &Path, strict: bool) -> BTreeMap<String, (bool, Findings)> {
    let mut cmd = Command::new("openspec");
    cmd.args(["validate", "--changes", "--json", "--no-interactive"])
        .current_dir(root)
        // Never let the CLI phone home from a test.
        .env("OPENSPEC_TELEMETRY", "0")
        .env("DO_NOT_TRACK", "1");
    if strict {
        cmd.arg("--strict");
    }
    let out = cmd.output().expect("run openspec");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "openspec printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let mut map = BTreeMap::new();
    for item in json["items"].as_array().expect("items") {
        let mut found: Findings = item["issues"]
            .as_array()
            .expect("issues")
            .iter()
            .filter(|i| i["level"] != "INFO")
            .map(|i| {
                let s = |k: &str| i[k].as_str().unwrap_or_default().to_string();
                comparable(s("level"), s("path"), s("message"))
            })
            .collect();
        found.sort();
        let id = item["id"].as_str().expect("id").to_string();
        map.insert(id, (item["valid"].as_bool().expect("valid"), found));
    }
    map
}

#[test]
fn table_verdicts_are_the_recorded_ones() {
    let dir = table_project();
    let mut wrong = Vec::new();
    for case in CASES {
        for (strict, expected) in [(false, case.valid), (true, case.strict_valid)] {
            let (valid, found) = ours(dir.path(), case.name, strict);
            if valid != expected {
                wrong.push(format!(
                    "{} strict={strict}: got {valid}, table says {expected}: {found:?}",
                    case.name
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "lint disagrees with the table:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn table_agrees_with_openspec_cli() {
    let version = openspec_cli();
    let dir = table_project();
    let mut wrong = Vec::new();
    for strict in [false, true] {
        let cli = theirs(dir.path(), strict);
        for Case {
            name,
            valid,
            strict_valid,
            exact_messages,
            ..
        } in CASES
        {
            let Some((cli_valid, cli_found)) = cli.get(*name) else {
                wrong.push(format!("{name}: the CLI did not report it"));
                continue;
            };
            let expected = if strict { *strict_valid } else { *valid };
            if *cli_valid != expected {
                wrong.push(format!("{name} strict={strict}: CLI says {cli_valid}, table says {expected}: {cli_found:?}"));
            }
            let (our_valid, our_found) = ours(dir.path(), name, strict);
            if our_valid != *cli_valid || (*exact_messages && our_found != *cli_found) {
                wrong.push(format!("{name} strict={strict}:\n  ours {our_valid} {our_found:?}\n  CLI  {cli_valid} {cli_found:?}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "disagreements with openspec {version} (table recorded with {OPENSPEC_VERSION}):\n{}",
        wrong.join("\n")
    );
}

/// Line pieces random delta specs are built from: every rule's edge.
const SPEC_LINES: &[&str] = &[
    "## ADDED Requirements",
    "## MODIFIED Requirements",
    "## REMOVED Requirements",
    "## RENAMED Requirements",
    "## added requirements",
    "## Notes",
    "## ADDED  Requirements",
    "### Requirement: A",
    "### Requirement: B",
    "### requirement: A ##",
    "### Requirement: a",
    "### Requirement:",
    "### Other",
    "The system SHALL do it.",
    "It does things.",
    "MUST",
    "**ID**: R1",
    "",
    "",
    "#### Scenario: s",
    "#### Scenario: t",
    "### Scenario: s",
    "####Scenario: s",
    "#### Edge",
    "- **WHEN** x",
    "- **THEN** y",
    "```",
    "~~~",
    "- `### Requirement: A`",
    "- B",
    "* ### Requirement: B",
    "- FROM: `### Requirement: A`",
    "- TO: `### Requirement: B`",
    "- TO: `### Requirement: C`",
    "### Requirement: A -> B",
    "\u{A0}",
    "#### Scenario: s ##",
];
const MAIN_LINES: &[&str] = &[
    "## Requirements",
    "### Requirement: A",
    "### Requirement: B",
    "The system SHALL x.",
    "#### Scenario: s",
    "#### Scenario: t",
    "#### Edge",
    "- x",
    "```",
    "## Purpose",
];
const TASK_LINES: &[&str] = &[
    "## 1. Work",
    "## 2. More",
    "- [ ] 1.1 a",
    "- [x] 1.2 b",
    "- [ ] 2.1 c",
    "- [x] 1.1 d",
    "- plain item",
    "1. numbered",
    "    - code",
    "```",
    "<!-- note",
    "-->",
    "",
];

fn pick<'a>(rng: &mut StdRng, items: &[&'a str]) -> &'a str {
    items[rng.random_range(0..items.len())]
}

/// A delta spec built from well-formed blocks with occasional mistakes, so
/// that valid changes and near misses are common (the line soup above is
/// almost always invalid).
fn structured_spec(rng: &mut StdRng) -> String {
    const NAMES: &[&str] = &["Login", "Logout", "Export", "Login ##", "login"];
    const SCENARIOS: &[&str] = &[
        "Valid password",
        "Wrong password",
        "Locked",
        "Scenario: Valid password",
    ];
    let mut out = String::new();
    for _ in 0..rng.random_range(1..=2) {
        let section = pick(
            rng,
            &[
                "ADDED", "MODIFIED", "REMOVED", "RENAMED", "Added", "MODIFIED",
            ],
        );
        out.push_str(&format!("## {section} Requirements\n\n"));
        match section {
            "REMOVED" => {
                for _ in 0..rng.random_range(1..=2) {
                    let form = pick(
                        rng,
                        &["### Requirement: {}", "- `### Requirement: {}`", "- {}"],
                    );
                    out.push_str(&form.replace("{}", pick(rng, NAMES)));
                    out.push('\n');
                }
            }
            "RENAMED" => {
                out.push_str(&format!(
                    "- FROM: `### Requirement: {}`\n",
                    pick(rng, NAMES)
                ));
                if rng.random_ratio(9, 10) {
                    out.push_str(&format!(
                        "- TO: `### Requirement: {}`\n",
                        pick(rng, &["Sign in", "Export", "Sign out"])
                    ));
                }
            }
            _ => {
                for _ in 0..rng.random_range(1..=2) {
                    out.push_str(&format!("### Requirement: {}\n", pick(rng, NAMES)));
                    let body = pick(
                        rng,
                        &[
                            "The system SHALL do it.",
                            "The system SHALL do it.",
                            "The system MUST do it.",
                            "It does it.",
                            "",
                            "**ID**: R1\nThe system SHALL do it.",
                        ],
                    );
                    out.push_str(body);
                    out.push_str("\n\n");
                    let scenarios = if rng.random_ratio(1, 6) {
                        0
                    } else {
                        rng.random_range(1..=2)
                    };
                    for _ in 0..scenarios {
                        let header = pick(
                            rng,
                            &[
                                "#### Scenario: ",
                                "#### Scenario: ",
                                "#### ",
                                "### Scenario: ",
                            ],
                        );
                        out.push_str(&format!("{header}{}\n", pick(rng, SCENARIOS)));
                        if rng.random_ratio(5, 6) {
                            out.push_str("- **WHEN** a\n- **THEN** b\n");
                        }
                        out.push('\n');
                    }
                }
            }
        }
    }
    out
}

/// A main spec whose Login requirement has two scenarios.
const MAIN_STRUCTURED: &str = "## Purpose\nLong enough purpose for the capability under test.\n\n## Requirements\n\n### Requirement: Login\nThe system SHALL log in.\n\n#### Scenario: Valid password\n- x\n\n#### Scenario: Wrong password\n- y\n\n### Requirement: Export\nThe system SHALL export.\n\n#### Scenario: Locked\n- z\n";

/// Whole `.openspec.yaml` files (one piece is drawn).
const METADATA: &[&str] = &[
    "schema: spec-driven\nskip_specs: true",
    "schema: spec-driven\nskip_specs: false",
    "schema: spec-driven\ncreated: 2026-01-01",
    "skip_specs: true",
    "schema: nope\nskip_specs: true",
    "schema: spec-driven\nskip_specs: 1",
];

fn random_text(rng: &mut StdRng, pieces: &[&str], max_lines: usize) -> String {
    let n = rng.random_range(0..=max_lines);
    let sep = if rng.random_ratio(1, 8) { "\r\n" } else { "\n" };
    let mut out = String::new();
    for _ in 0..n {
        out.push_str(pieces[rng.random_range(0..pieces.len())]);
        out.push_str(sep);
    }
    out
}

#[test]
fn unseen_random_changes_agree_with_openspec_cli() {
    let version = openspec_cli();
    /// Changes per run (`CLAWMUX_LINT_CHANGES` overrides): one CLI process
    /// validates them all, so this is cheap.
    const CHANGES: usize = 80;
    let changes = std::env::var("CLAWMUX_LINT_CHANGES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(CHANGES);
    let seed: u64 = std::env::var("CLAWMUX_LINT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut cases = Vec::new();
    for k in 0..changes {
        if k % 2 == 0 {
            let mut files = vec![("change/specs/cap/spec.md", structured_spec(&mut rng))];
            if rng.random_ratio(1, 2) {
                files.push(("main/cap/spec.md", MAIN_STRUCTURED.to_string()));
            }
            if rng.random_ratio(1, 2) {
                files.push((
                    "change/tasks.md",
                    "## 1. Work\n- [ ] 1.1 a\n- [x] 1.2 b\n".to_string(),
                ));
            }
            cases.push((format!("r{k}"), files));
            continue;
        }
        let mut files = vec![(
            "change/specs/cap/spec.md",
            random_text(&mut rng, SPEC_LINES, 24),
        )];
        let optional: [(&str, &[&str], usize); 6] = [
            ("main/cap/spec.md", MAIN_LINES, 16),
            ("change/tasks.md", TASK_LINES, 8),
            ("change/specs/area/cap2/spec.md", SPEC_LINES, 12),
            ("change/specs/spec.md", SPEC_LINES, 6),
            ("change/specs/cap/notes.md", SPEC_LINES, 4),
            ("change/.openspec.yaml", METADATA, 1),
        ];
        for (path, pieces, max) in optional {
            if rng.random_ratio(1, 3) {
                files.push((path, random_text(&mut rng, pieces, max)));
            }
        }
        cases.push((format!("r{k}"), files));
    }
    let dir = project(&cases);
    let mut wrong = Vec::new();
    let mut valid_verdicts = 0;
    for strict in [false, true] {
        let cli = theirs(dir.path(), strict);
        valid_verdicts += cli.values().filter(|(valid, _)| *valid).count();
        for (name, files) in &cases {
            let Some(theirs) = cli.get(name) else {
                wrong.push(format!("{name}: the CLI did not report it"));
                continue;
            };
            let mine = ours(dir.path(), name, strict);
            if mine != *theirs {
                wrong.push(format!(
                    "{name} strict={strict} files={files:?}\n  ours {mine:?}\n  CLI  {theirs:?}"
                ));
            }
        }
    }
    eprintln!("{valid_verdicts} valid verdicts of {}", 2 * cases.len());
    assert!(
        valid_verdicts > 0 && valid_verdicts < 2 * cases.len(),
        "the generator must produce both verdicts (seed {seed})"
    );
    assert!(
        wrong.is_empty(),
        "openspec {version}, seed {seed} (rerun with CLAWMUX_LINT_SEED={seed}):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn cli_lint_exits_1_on_invalid_and_prints_openspec_json() {
    let dir = table_project();
    let run = |slug: &str, extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_clawmux"))
            .args(["openspec", "lint", slug, "--root"])
            .arg(dir.path())
            .args(extra)
            .output()
            .expect("run clawmux")
    };
    let ok = run("valid-added", &["--json", "--strict"]);
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&ok.stdout).expect("json");
    assert_eq!(json["items"][0]["valid"], true);

    let warn = run("no-shall", &["--strict", "--json"]);
    assert_eq!(warn.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&warn.stdout).expect("json");
    let issue = &json["items"][0]["issues"][0];
    assert_eq!(issue["level"], "WARNING");
    assert_eq!(issue["line"], 2);
    assert_eq!(
        issue["file"],
        "openspec/changes/no-shall/specs/no-shall-auth/spec.md"
    );
    assert!(issue["fix"].as_str().is_some_and(|f| f.contains("SHALL")));

    let text = run("three-hash-scenario", &[]);
    assert_eq!(text.status.code(), Some(1));
    let out = String::from_utf8_lossy(&text.stdout);
    assert!(out.contains("specs/three-hash-scenario-auth/spec.md:2: ERROR: ADDED \"A\" must include at least one scenario"), "{out}");

    let missing = run("no-such-change", &[]);
    assert_eq!(missing.status.code(), Some(2));
}
