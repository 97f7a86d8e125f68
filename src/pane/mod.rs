//! Placeholder: filled in by the pane work.
