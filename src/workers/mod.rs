//! Background workers, started by `serve`: each runs until shutdown and reports through
//! the store and the event hub.

/// One IMAP sync task per connected mailbox (issue #10).
pub mod mailbox;
/// Scheduled sends, reminders, importance aging and the purge of expired rows.
pub mod scheduler;
/// Refines message importance with the AI service, off the request path.
pub mod scorer;
/// One long-polling `/sync` loop per user against the homeserver.
pub mod sync;
