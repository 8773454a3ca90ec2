//! Outbound mail protocols for the user's own mailboxes (issue #10): IMAP and SMTP.

pub mod imap;
pub mod smtp;
