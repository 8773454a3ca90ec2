//! Background workers.

pub mod mailbox;
