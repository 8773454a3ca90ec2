//! Domain services: the logic behind the HTTP handlers, free of poem types.

pub mod accounts;
pub mod admin;
pub mod attestation;
pub mod auth;
pub mod conversations;
pub mod health;
pub mod keys;
pub mod mail;
pub mod session;
pub mod tokens;
pub mod users;
