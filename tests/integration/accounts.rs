//! Placeholder: filled in by the accounts work.
