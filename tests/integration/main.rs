//! Integration tests: the real binary against a real Synapse. One test binary so the
//! homeserver is started once per run.

mod common;

mod accounts;
mod admin;
mod ai;
mod ai_email;
mod ai_limits;
mod ai_routes;
mod attestation;
mod auth;
mod bridges;
mod cli;
mod clients;
mod contacts;
mod data;
mod devices;
mod e2ee;
mod e2ee_sync;
mod email;
mod email_backfill;
mod email_hostile;
mod email_safety;
mod foundation;
mod hardening;
mod invites;
mod journey;
mod keys;
mod linked;
mod mcp;
mod mcp_actions;
mod messages;
mod operations;
mod package;
mod reminders;
mod rich;
mod rooms;
mod scheduled;
mod search;
mod search_email;
mod sessions;
mod storage;
mod streams;
mod sync;
mod tokens;
mod webapp;
