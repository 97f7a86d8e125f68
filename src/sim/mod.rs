//! Placeholder: filled in by the sim work.
