//! Domain services: the logic behind the HTTP handlers, free of poem types.

pub use context::Context;

pub mod accounts;
pub mod admin;
pub mod ai;
pub mod allowlist;
pub mod attestation;
pub mod auth;
pub mod bridges;
pub mod chats;
pub mod contacts;
pub mod context;
pub mod conversations;
pub mod devices;
pub mod e2ee;
pub mod e2ee_trust;
pub mod email;
pub mod health;
pub mod history;
mod history_start;
pub mod importance;
pub mod keys;
pub mod linked;
pub mod matrix_sessions;
pub mod media;
pub mod messages;
pub mod metrics;
pub mod pages;
pub mod params;
pub mod reminders;
pub mod rooms;
pub mod scheduled;
pub mod search;
pub mod session;
pub mod tokens;
pub mod upstream;
pub mod users;
