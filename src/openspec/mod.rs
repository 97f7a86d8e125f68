//! Placeholder: filled in by the openspec work.
