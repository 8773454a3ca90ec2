//! Integration tests: the real binary against a real Synapse. One test binary so the
//! homeserver is started once per run.

mod common;

mod accounts;
mod admin;
mod attestation;
mod auth;
mod cli;
mod foundation;
mod keys;
mod storage;
mod tokens;
