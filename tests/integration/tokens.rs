//! Placeholder: filled in by the tokens work.
