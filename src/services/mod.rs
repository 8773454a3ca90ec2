//! Domain services: the logic behind the HTTP handlers, free of poem types.

pub mod admin;
pub mod health;
pub mod session;
pub mod users;
