//! Outbound protocols only (no HTTP status semantics).

pub mod mail;
