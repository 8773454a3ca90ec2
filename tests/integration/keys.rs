//! Placeholder: filled in by the keys work.
