//! Placeholder: filled in by the admin work.
