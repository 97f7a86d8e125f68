//! Placeholder: filled in by the tmux work.
