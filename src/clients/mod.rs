//! Outbound protocol clients: what Switchboard says to other servers. They know their
//! protocol and its errors, not HTTP status codes of our own API (services map those).

/// The OpenAI-compatible AI service (message scoring).
pub mod ai;
/// SMTP delivery of sign-in codes.
pub mod mail;
/// The Matrix client-server API of the homeserver, acting as a user.
pub mod matrix;
/// The mautrix bridges' provisioning APIs (bridgev2), and who counts as a bridge.
pub mod provisioning;
/// Apple Push Notification service.
pub mod push;
/// Path segments of outgoing calls: dot segments refused in one place.
pub mod segment;
/// Web Push (RFC 8030, 8291, 8292) to the push services of browsers.
pub mod webpush;
