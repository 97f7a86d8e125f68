//! OpenSpec + Chorus: the lint agreement table (against the real `openspec`
//! CLI when it is on PATH), and the mirror/archive flows against a local
//! Chorus-protocol server.

mod archive;
mod change;
pub mod chorus_server;
mod lint;
mod lint_cases;
mod mirror;
