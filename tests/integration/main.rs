//! Integration tests: the real binary against a real Synapse. One test binary so the
//! homeserver is started once per run.

mod common;

mod ai;
mod bridges;
mod contacts;
mod conversation;
mod data;
mod e2ee;
mod email;
mod groups;
mod identity;
mod mcp;
mod media_app;
mod messages;
mod names;
mod push;
mod rich;
mod rooms;
mod scheduled;
mod search;
mod server;
mod sync;
mod tokens;
mod trust;
mod verification;
mod webapp;
