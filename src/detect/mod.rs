//! Placeholder: filled in by the detect work.
