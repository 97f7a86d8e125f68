//! The lint agreement table: each case is a change folder (and, when it
//! needs one, a main spec) with the verdict `openspec validate` 1.13.2 gives
//! it, non-strict and `--strict`. Paths starting with `change/` land in
//! `openspec/changes/<case>/`, `main/` in `openspec/specs/`. Capability
//! folders are prefixed with the case name so cases can share one project.

/// One table row.
pub struct Case {
    pub name: &'static str,
    pub files: &'static [(&'static str, &'static str)],
    /// Verdict without `--strict`.
    pub valid: bool,
    /// Verdict with `--strict`.
    pub strict_valid: bool,
    /// Whether our ERROR/WARNING messages must equal the CLI's word for word
    /// (false only where the message quotes a YAML library's wording).
    pub exact_messages: bool,
}

const fn case(
    name: &'static str,
    files: &'static [(&'static str, &'static str)],
    valid: bool,
    strict_valid: bool,
) -> Case {
    Case {
        name,
        files,
        valid,
        strict_valid,
        exact_messages: true,
    }
}

const GOOD: &str = "## ADDED Requirements\n\n### Requirement: Login\nThe system SHALL let users log in.\n\n#### Scenario: Valid password\n- **WHEN** the password is right\n- **THEN** the user is in\n";
const TASKS: &str = "## 1. Work\n\n- [ ] 1.1 Do it\n- [x] 1.2 Done\n";
const MAIN_AUTH: &str = "# auth\n\n## Purpose\nAuthentication for the service users, written long enough.\n\n## Requirements\n\n### Requirement: Login\nThe system SHALL let users log in.\n\n#### Scenario: Valid password\n- **WHEN** right\n- **THEN** in\n\n#### Scenario: Wrong password\n- **WHEN** wrong\n- **THEN** out\n";

pub const CASES: &[Case] = &[
    case(
        "valid-added",
        &[
            ("change/specs/auth/spec.md", GOOD),
            ("change/tasks.md", TASKS),
        ],
        true,
        true,
    ),
    case("no-specs", &[("change/proposal.md", "# P\n")], false, false),
    case(
        "section-lowercase",
        &[(
            "change/specs/auth/spec.md",
            "## added requirements\n### Requirement: A\nThe system SHALL a.\n#### Scenario: s\n- x\n",
        )],
        true,
        true,
    ),
    case(
        "keyword-uppercase",
        &[(
            "change/specs/auth/spec.md",
            "## ADDED Requirements\n### REQUIREMENT: A\nThe system SHALL a.\n#### Scenario: s\n- x\n",
        )],
        true,
        true,
    ),
    case(
        "three-hash-scenario",
        &[(
            "change/specs/auth/spec.md",
            "## ADDED Requirements\n### Requirement: A\nThe system SHALL a.\n### Scenario: s\n- x\n",
        )],
        false,
        false,
    ),
    case(
        "bullet-scenario",
        &[(
            "change/specs/auth/spec.md",
            "## ADDED Requirements\n### Requirement: A\nThe system SHALL a.\n- Scenario: s\n- x\n",
        )],
        false,
        false,
    ),
    case(
        "fenced-scenario",
        &[(
            "change/specs/auth/spec.md",
            "## ADDED Requirements\n### Requirement: A\nThe system SHALL a.\n```md\n#### Scenario: s\n- x\n```\n",
        )],
        false,
        false,
    ),
    case(
        "fenced-fake-requirement",
        &[(
            "change/specs/auth/spec.md",
            "## ADDED Requirements\n### Requirement: A\nThe system SHALL a.\n#### Scenario: s\n- x\n~~~\n### Requirement: Fake\n~~~\n",
        )],
        true,
        true,
    ),
    case(
        "no-shall",
        &[(
            "change/specs/auth/spec.md",
            "## ADDED Requirements\n### Requirement: A\nThe system lets a.\n#### Scenario: s\n- x\n",
        )],
        true,
        false,
    ),
    case(
        "lowercase-shall",
        &[(
            "change/specs/auth/spec.md",
            "## ADDED Requirements\n### Requirement: A\nThe system shall a.\n#### Scenario: s\n- x\n",
        )],
        true,
        false,
    ),
    case(
        "shall-in-header-only",
        &[(
            "change/specs/auth/spec.md",
            "## ADDED Requirements\n### Requirement: The system SHALL a\nIt does a.\n#### Scenario: s\n- x\n",
        )],
        true,
        false,
    ),
    case(
        "shall-in-header-no-body",
        &[(
            "change/specs/auth/spec.md",
            "## ADDED Requirements\n### Requirement: The system SHALL a\n#### Scenario: s\n- x\n",
        )],
        false,
        false,
    ),
    case(
        "missing-body",
        &[(
            "change/specs/auth/spec.md",
            "## ADDED Requirements\n### Requirement: A\n\n#### Scenario: s\n- x\n",
        )],
        false,
        false,
    ),
    case(
        "empty-scenario",
        &[(
            "change/specs/auth/spec.md",
            "## ADDED Requirements\n### Requirement: A\nThe system SHALL a.\n#### Scenario: s\n\n",
        )],
        false,
        false,
    ),
    case(
        "metadata-only-body",
        &[(
            "change/specs/auth/spec.md",
            "## ADDED Requirements\n### Requirement: A\n**Constraint**: The system MUST a.\n#### Scenario: s\n- x\n",
        )],
        true,
        true,
    ),
    case(
        "shall-only-in-fence",
        &[(
            "change/specs/auth/spec.md",
            "## ADDED Requirements\n### Requirement: A\nIt does a.\n```\nSHALL\n```\n#### Scenario: s\n- x\n",
        )],
        true,
        false,
    ),
    case(
        "duplicate-added",
        &[(
            "change/specs/auth/spec.md",
            "## ADDED Requirements\n### Requirement: A\nThe system SHALL a.\n#### Scenario: s\n- x\n### Requirement: A ##\nThe system SHALL a.\n#### Scenario: s\n- x\n",
        )],
        false,
        false,
    ),
    case(
        "modified-and-removed",
        &[(
            "change/specs/auth/spec.md",
            "## MODIFIED Requirements\n### Requirement: A\nThe system SHALL a.\n#### Scenario: s\n- x\n## REMOVED Requirements\n### Requirement: A\n",
        )],
        false,
        false,
    ),
    case(
        "modified-and-added",
        &[(
            "change/specs/auth/spec.md",
            "## ADDED Requirements\n### Requirement: A\nThe system SHALL a.\n#### Scenario: s\n- x\n## MODIFIED Requirements\n### Requirement: A\nThe system SHALL a.\n#### Scenario: s\n- x\n",
        )],
        false,
        false,
    ),
    case(
        "added-and-removed",
        &[(
            "change/specs/auth/spec.md",
            "## ADDED Requirements\n### Requirement: A\nThe system SHALL a.\n#### Scenario: s\n- x\n## REMOVED Requirements\n- `### Requirement: A`\n",
        )],
        false,
        false,
    ),
    case(
        "renamed-pair",
        &[(
            "change/specs/auth/spec.md",
            "## RENAMED Requirements\n- FROM: `### Requirement: Old`\n- TO: `### Requirement: New`\n",
        )],
        true,
        true,
    ),
    case(
        "renamed-arrow-form",
        &[(
            "change/specs/auth/spec.md",
            "## RENAMED Requirements\n### Requirement: Old -> New\n",
        )],
        false,
        false,
    ),
    case(
        "renamed-unpaired-from",
        &[(
            "change/specs/auth/spec.md",
            "## RENAMED Requirements\n- FROM: `### Requirement: Old`\n## ADDED Requirements\n### Requirement: A\nThe system SHALL a.\n#### Scenario: s\n- x\n",
        )],
        false,
        false,
    ),
    case(
        "renamed-to-collides-added",
        &[(
            "change/specs/auth/spec.md",
            "## RENAMED Requirements\n- FROM: `### Requirement: Old`\n- TO: `### Requirement: A`\n## ADDED Requirements\n### Requirement: A\nThe system SHALL a.\n#### Scenario: s\n- x\n",
        )],
        false,
        false,
    ),
    case(
        "modified-uses-old-name",
        &[(
            "change/specs/auth/spec.md",
            "## RENAMED Requirements\n- FROM: `### Requirement: A`\n- TO: `### Requirement: B`\n## MODIFIED Requirements\n### Requirement: A\nThe system SHALL a.\n#### Scenario: s\n- x\n",
        )],
        false,
        false,
    ),
    case(
        "renamed-and-removed-folded",
        &[(
            "change/specs/auth/spec.md",
            "## RENAMED Requirements\n- FROM: `### Requirement: Old  Name`\n- TO: `### Requirement: New`\n## REMOVED Requirements\n### Requirement: old name\n",
        )],
        false,
        false,
    ),
    case(
        "duplicate-rename-from",
        &[(
            "change/specs/auth/spec.md",
            "## RENAMED Requirements\n- FROM: `### Requirement: A`\n- TO: `### Requirement: B`\n* FROM: `### Requirement: A`\n+ TO: `### Requirement: C`\n",
        )],
        false,
        false,
    ),
    case(
        "removed-header",
        &[(
            "change/specs/auth/spec.md",
            "## REMOVED Requirements\n### Requirement: A\n",
        )],
        true,
        true,
    ),
    case(
        "removed-star-bullet",
        &[(
            "change/specs/auth/spec.md",
            "## REMOVED Requirements\n* `### Requirement: A`\n+ ### Requirement: B\n",
        )],
        true,
        true,
    ),
    case(
        "removed-plain-name",
        &[(
            "change/specs/auth/spec.md",
            "## REMOVED Requirements\n- A\n",
        )],
        false,
        false,
    ),
    case(
        "removed-duplicate",
        &[(
            "change/specs/auth/spec.md",
            "## REMOVED Requirements\n### Requirement: A\n- `### Requirement: A`\n",
        )],
        false,
        false,
    ),
    case(
        "removed-only-fenced",
        &[(
            "change/specs/auth/spec.md",
            "## REMOVED Requirements\n```\n### Requirement: A\n```\n",
        )],
        false,
        false,
    ),
    case(
        "orphan-above-sections",
        &[(
            "change/specs/auth/spec.md",
            "### Requirement: Stray\nThe system SHALL s.\n\n## ADDED Requirements\n### Requirement: A\nThe system SHALL a.\n#### Scenario: s\n- x\n",
        )],
        true,
        false,
    ),
    case(
        "orphan-under-notes",
        &[(
            "change/specs/auth/spec.md",
            "## ADDED Requirements\n### Requirement: A\nThe system SHALL a.\n#### Scenario: s\n- x\n## Notes\n### Requirement: N\nText.\n",
        )],
        true,
        false,
    ),
    case(
        "section-double-space",
        &[(
            "change/specs/auth/spec.md",
            "## ADDED  Requirements\n### Requirement: A\nThe system SHALL a.\n#### Scenario: s\n- x\n",
        )],
        false,
        false,
    ),
    case(
        "empty-added-section",
        &[(
            "change/specs/auth/spec.md",
            "## ADDED Requirements\n\nNothing yet.\n",
        )],
        false,
        false,
    ),
    case(
        "no-section-headers",
        &[("change/specs/auth/spec.md", "# Auth\n\nSome notes.\n")],
        false,
        false,
    ),
    case(
        "empty-file-beside-good",
        &[
            ("change/specs/auth/spec.md", GOOD),
            ("change/specs/other/spec.md", ""),
        ],
        false,
        false,
    ),
    case(
        "root-level-spec",
        &[
            ("change/specs/spec.md", GOOD),
            ("change/specs/auth/spec.md", GOOD),
        ],
        false,
        false,
    ),
    case(
        "unread-delta-file",
        &[
            ("change/specs/auth.md", GOOD),
            ("change/specs/billing/spec.md", GOOD),
        ],
        false,
        false,
    ),
    case(
        "unread-only",
        &[("change/specs/auth/delta.MD", GOOD)],
        false,
        false,
    ),
    case(
        "plain-note-beside",
        &[
            ("change/specs/auth/spec.md", GOOD),
            ("change/specs/notes.md", "# Notes\nnothing\n"),
        ],
        true,
        true,
    ),
    case(
        "nested-capability",
        &[("change/specs/area/auth/spec.md", GOOD)],
        true,
        true,
    ),
    case(
        "dot-folder-ignored",
        &[("change/specs/.draft/spec.md", GOOD)],
        false,
        false,
    ),
    case(
        "skip-specs",
        &[(
            "change/.openspec.yaml",
            "schema: spec-driven\ncreated: 2026-11-29\nskip_specs: true\n",
        )],
        true,
        true,
    ),
    case(
        "skip-specs-with-files",
        &[
            (
                "change/.openspec.yaml",
                "schema: spec-driven\nskip_specs: true\n",
            ),
            ("change/specs/auth/spec.md", GOOD),
        ],
        false,
        false,
    ),
    Case {
        name: "skip-specs-not-boolean",
        files: &[(
            "change/.openspec.yaml",
            "schema: spec-driven\nskip_specs: yes\n",
        )],
        valid: false,
        strict_valid: false,
        exact_messages: false,
    },
    case(
        "skip-specs-false",
        &[(
            "change/.openspec.yaml",
            "schema: spec-driven\nskip_specs: false\n",
        )],
        false,
        false,
    ),
    case(
        "modified-drops-scenario",
        &[
            ("main/auth/spec.md", MAIN_AUTH),
            (
                "change/specs/auth/spec.md",
                "## MODIFIED Requirements\n### Requirement: Login\nThe system SHALL let users log in.\n\n#### Scenario: Valid password\n- **WHEN** right\n- **THEN** in\n\n#### Scenario: Locked\n- x\n",
            ),
        ],
        false,
        false,
    ),
    case(
        "modified-keeps-scenarios",
        &[
            ("main/auth/spec.md", MAIN_AUTH),
            (
                "change/specs/auth/spec.md",
                "## MODIFIED Requirements\n### Requirement: Login\nThe system SHALL let users log in.\n\n#### Scenario: Valid password ####\n- x\n\n#### Wrong password\n- y\n\n#### Scenario: Locked\n- z\n",
            ),
        ],
        true,
        true,
    ),
    case(
        "modified-without-main",
        &[(
            "change/specs/auth/spec.md",
            "## MODIFIED Requirements\n### Requirement: Login\nThe system SHALL x.\n#### Scenario: s\n- x\n",
        )],
        true,
        true,
    ),
    case(
        "rename-then-modify-drops",
        &[
            ("main/auth/spec.md", MAIN_AUTH),
            (
                "change/specs/auth/spec.md",
                "## RENAMED Requirements\n- FROM: `### Requirement: Login`\n- TO: `### Requirement: Sign in`\n## MODIFIED Requirements\n### Requirement: Sign in\nThe system SHALL sign in.\n#### Scenario: Valid password\n- x\n",
            ),
        ],
        false,
        false,
    ),
    case(
        "modified-duplicate-scenario-lost",
        &[
            (
                "main/auth/spec.md",
                "## Requirements\n### Requirement: A\nThe system SHALL a.\n#### Scenario: s\n- x\n#### Scenario: s\n- y\n",
            ),
            (
                "change/specs/auth/spec.md",
                "## MODIFIED Requirements\n### Requirement: A\nThe system SHALL a.\n#### Scenario: s\n- x\n",
            ),
        ],
        false,
        false,
    ),
    case(
        "tasks-bare-list",
        &[
            ("change/specs/auth/spec.md", GOOD),
            ("change/tasks.md", "## 1. Work\n\n- 1.1 Do it\n"),
        ],
        true,
        false,
    ),
    case(
        "tasks-wrong-group",
        &[
            ("change/specs/auth/spec.md", GOOD),
            (
                "change/tasks.md",
                "## 1. Work\n- [ ] 1.1 a\n## 2. More\n- [ ] 1.2 b\n",
            ),
        ],
        true,
        false,
    ),
    case(
        "tasks-duplicate-id",
        &[
            ("change/specs/auth/spec.md", GOOD),
            ("change/tasks.md", "## 1. Work\n- [ ] 1.1 a\n- [x] 1.1 b\n"),
        ],
        true,
        false,
    ),
    case(
        "tasks-list-in-fence",
        &[
            ("change/specs/auth/spec.md", GOOD),
            (
                "change/tasks.md",
                "# Tasks\n```\n- not a task\n```\n    - code\n",
            ),
        ],
        true,
        true,
    ),
    case(
        "crlf",
        &[(
            "change/specs/auth/spec.md",
            "## ADDED Requirements\r\n### Requirement: A\r\nThe system SHALL a.\r\n#### Scenario: s\r\n- x\r\n",
        )],
        true,
        true,
    ),
    case(
        "bom",
        &[(
            "change/specs/auth/spec.md",
            "\u{FEFF}## ADDED Requirements\n### Requirement: A\nThe system SHALL a.\n#### Scenario: s\n- x\n",
        )],
        true,
        true,
    ),
    case(
        "repeated-section",
        &[(
            "change/specs/auth/spec.md",
            "## ADDED Requirements\n### Requirement: A\nThe system SHALL a.\n#### Scenario: s\n- x\n## Added Requirements\n### Requirement: B\nThe system SHALL b.\n#### Scenario: s\n- x\n",
        )],
        true,
        true,
    ),
    case(
        "stray-h3-in-added",
        &[(
            "change/specs/auth/spec.md",
            "## ADDED Requirements\n### Notes\n### Requirement: A\nThe system SHALL a.\n#### Scenario: s\n- x\n",
        )],
        true,
        true,
    ),
    case(
        "no-space-scenario",
        &[(
            "change/specs/auth/spec.md",
            "## ADDED Requirements\n### Requirement: A\nThe system SHALL a.\n####Scenario: s\n- x\n",
        )],
        false,
        false,
    ),
    case(
        "level4-non-scenario",
        &[(
            "change/specs/auth/spec.md",
            "## ADDED Requirements\n### Requirement: A\nThe system SHALL a.\n#### Edge case\n- x\n",
        )],
        true,
        true,
    ),
    case(
        "nbsp-header",
        &[(
            "change/specs/auth/spec.md",
            "## ADDED Requirements\n###\u{A0}Requirement:\u{A0}A\nThe system MUST a.\n####\u{A0}Scenario: s\n- x\n",
        )],
        true,
        true,
    ),
    case(
        "must-apostrophe",
        &[(
            "change/specs/auth/spec.md",
            "## ADDED Requirements\n### Requirement: A\nIt MUST'nt fail.\n#### Scenario: s\n- x\n",
        )],
        true,
        true,
    ),
    case(
        "mustard",
        &[(
            "change/specs/auth/spec.md",
            "## ADDED Requirements\n### Requirement: A\nMUSTARD SHALLOW.\n#### Scenario: s\n- x\n",
        )],
        true,
        false,
    ),
    case(
        "zero-width-name",
        &[(
            "change/specs/auth/spec.md",
            "## ADDED Requirements\n### Requirement: A\u{200B}\nThe system SHALL a.\n#### Scenario: s\n- x\n### Requirement: A\nThe system SHALL a.\n#### Scenario: s\n- x\n",
        )],
        true,
        true,
    ),
    case(
        "line-separator-header",
        &[(
            "change/specs/auth/spec.md",
            "## ADDED Requirements\n### Requirement: A\u{2028}B\nThe system SHALL a.\n#### Scenario: s\n- x\n",
        )],
        false,
        false,
    ),
    case(
        "nested-wrapper",
        &[
            ("change/inner/proposal.md", "# P\n"),
            ("change/inner/specs/auth/spec.md", GOOD),
        ],
        false,
        false,
    ),
    case(
        "wrapper-with-own-file",
        &[
            ("change/notes.txt", "n\n"),
            ("change/inner/proposal.md", "# P\n"),
        ],
        false,
        false,
    ),
];
