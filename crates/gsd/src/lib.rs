//! GSD ("get shit done") as installed for a project: which spelling its
//! commands take ([`spelling`]) and where the project stands according to
//! its own planning files ([`planning`]), both read on this machine or on
//! the project's host ([`host`]).
//!
//! GSD 1.42.3 installs in one of two layouts, and Claude Code refuses the
//! other spelling (`Unknown command: /gsd:plan-phase. Did you mean
//! /gsd-plan-phase?`), so a command from chat is rewritten into the
//! spelling the project's install accepts before it is typed.

#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

pub mod host;
pub mod planning;
pub mod spelling;

/// The GSD release these modules were measured against.
pub const TESTED_VERSION: &str = "1.42.3";

/// The 67 commands GSD 1.42.3 installs (its skill and command file names).
/// Only for tests and documentation: the router has no closed list, so a
/// newer GSD's commands reach the agent too.
pub const COMMANDS_1_42_3: [&str; 67] = [
    "add-tests",
    "ai-integration-phase",
    "audit-fix",
    "audit-milestone",
    "audit-uat",
    "autonomous",
    "capture",
    "cleanup",
    "code-review",
    "complete-milestone",
    "config",
    "debug",
    "discuss-phase",
    "docs-update",
    "eval-review",
    "execute-phase",
    "explore",
    "extract-learnings",
    "fast",
    "forensics",
    "graphify",
    "health",
    "help",
    "import",
    "inbox",
    "ingest-docs",
    "manager",
    "map-codebase",
    "milestone-summary",
    "mvp-phase",
    "new-milestone",
    "new-project",
    "ns-context",
    "ns-ideate",
    "ns-manage",
    "ns-project",
    "ns-review",
    "ns-workflow",
    "pause-work",
    "phase",
    "plan-phase",
    "plan-review-convergence",
    "pr-branch",
    "profile-user",
    "progress",
    "quick",
    "resume-work",
    "review",
    "review-backlog",
    "secure-phase",
    "settings",
    "ship",
    "sketch",
    "spec-phase",
    "spike",
    "stats",
    "surface",
    "thread",
    "ui-phase",
    "ui-review",
    "ultraplan-phase",
    "undo",
    "update",
    "validate-phase",
    "verify-work",
    "workspace",
    "workstreams",
];
