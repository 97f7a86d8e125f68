//! Placeholder: filled in by the feishu work.
