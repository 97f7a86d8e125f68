//! Placeholder: filled in by the hooks work.
