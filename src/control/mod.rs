//! Placeholder: filled in by the control work.
