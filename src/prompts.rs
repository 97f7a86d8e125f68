//! Placeholder: filled in by the prompts work.
