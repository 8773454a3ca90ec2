//! Integration tests: the real binary against a real Synapse. One test binary so the
//! homeserver is started once per run.

mod common;

mod auth;
mod cli;
mod foundation;
