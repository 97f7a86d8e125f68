//! Placeholder: filled in by the bridge work.
