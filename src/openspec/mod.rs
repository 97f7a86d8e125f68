//! OpenSpec authoring mirrored to Chorus: detection of the OpenSpec mode, a
//! reimplementation of `openspec validate` for change folders (the delta-spec
//! lint), the Chorus MCP client, and the mirror and archive flows.
//!
//! - [`text`]: JavaScript-compatible text primitives and the code-fence mask.
//! - [`delta`]: sans-IO delta-spec reader.
//! - [`tasks`]: `tasks.md` checkboxes and numbering.
//! - [`metadata`]: `.openspec.yaml` (`skip_specs`, schema).
//! - [`lint`]: change validation with OpenSpec's verdicts and messages.

pub mod change;
pub mod cli;
pub mod delta;
pub mod lint;
pub mod metadata;
pub mod tasks;
pub(crate) mod text;
