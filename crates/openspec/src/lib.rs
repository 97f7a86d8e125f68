//! OpenSpec authoring mirrored to Chorus: detection of the OpenSpec mode, a
//! reimplementation of `openspec validate` for change folders (the delta-spec
//! lint), the Chorus MCP client, and the mirror and archive flows.
//!
//! - `text`: JavaScript-compatible text primitives and the code-fence mask.
//! - [`delta`]: sans-IO delta-spec reader.
//! - [`tasks`]: `tasks.md` checkboxes and numbering.
//! - [`metadata`]: `.openspec.yaml` (`skip_specs`, schema).
//! - [`lint`]: change validation with OpenSpec's verdicts and messages.
//! - [`change`]: slug rule, proposal slug line, mode detection, `new`.
//! - [`cli`]: running the real `openspec` CLI (telemetry off).
//! - [`chorus`]: Chorus MCP JSON-RPC client that halts on every failure signal.
//! - [`mirror`]: byte-exact draft mirroring with recorded ids, and `--check`.
//! - [`archive`]: the last-task trigger, `openspec archive`, spec mirror-back.

#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

pub mod archive;
pub mod change;
pub mod chorus;
pub mod cli;
pub mod delta;
pub mod lint;
pub mod metadata;
pub mod mirror;
pub mod tasks;
pub(crate) mod text;
