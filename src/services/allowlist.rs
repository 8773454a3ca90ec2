//! The personal-token allowlist: the one table of the operations personal API tokens may
//! call. The gate enforces it (`api::gate`), and the handlers of these operations take the
//! `TokenAuth` scheme while every other authenticated one takes `NativeAuth`. Anything not
//! listed is denied to personal tokens: a route added later is unavailable to them until
//! it is listed, and tokens created before it was listed must opt in
//! (`PATCH /api/developer/tokens/{id}` with `{"optIn": true}`).

/// Current version of the allowlist. Bump it when adding entries, and give the new
/// entries `since: <new version>`: tokens created earlier must opt in to reach them.
///
/// Version 3 added `GET /api/search` as an *explicit* entry: it reads across every room at
/// once, so each token needs its own opt-in for it, also a token created after version 3
/// (creation grants the ordinary entries of the current version only).
///
/// Version 4 added contacts and new chats (`GET /api/contacts`, `POST /api/chats`) and rich
/// messages: attachments both ways, reactions, edits and deletion for everyone
/// of the token owner's own messages.
///
/// Version 5 added the notification level of a chat (`PUT
/// /api/rooms/{roomId}/notifications`), the finer form of mute/unmute that tokens already
/// have, and the room members' avatars (`GET /api/rooms/{roomId}/members/{userId}/avatar`,
/// the target of the messages' `senderAvatarUrl`). Push subscriptions stay native only (a
/// browser subscribes itself).
///
/// Version 5 also added a conversation that feels alive: typing notices
/// (`PUT /api/rooms/{roomId}/typing`), others' read receipts
/// (`GET /api/rooms/{roomId}/receipts`) and marking a room unread
/// (`POST /api/rooms/{roomId}/unread`). Drafts and the privacy settings stay native only.
///
/// Version 5 also added what e-mail with attachments and undo needs: uploading an
/// attachment (`POST /api/email/attachments`), reading and cancelling a held message
/// (`GET`/`DELETE /api/email/outbox/{id}`) and address completion (`GET
/// /api/email/addresses`). Mail drafts stay native-only, like room drafts.
///
/// Version 6 adds groups and media in the app (creating a group, renaming it, its topic and
/// avatar, inviting, removing and leaving) and link previews; the entries name themselves
/// with `since: 6`. Creating a group is the group form (`participants`) of `POST
/// /api/chats`, a version-4 route: its handler refuses that form to tokens below
/// [`GROUPS_SINCE`] with 403 `forbidden_for_api_token`.
pub const ALLOWLIST_VERSION: u32 = 6;

/// One operation personal tokens may call.
#[derive(Debug, Clone, Copy)]
pub struct AllowedRoute {
    pub method: &'static str,
    pub path: &'static str,
    /// Allowlist version that added the entry.
    pub since: u32,
    /// Only for tokens explicitly opted in at `since` or later, whatever their creation.
    pub explicit: bool,
}

const fn allow(method: &'static str, path: &'static str) -> AllowedRoute {
    allow_since(method, path, 1)
}

const fn allow_since(method: &'static str, path: &'static str, since: u32) -> AllowedRoute {
    AllowedRoute {
        method,
        path,
        since,
        explicit: false,
    }
}

/// An entry that needs each token's own opt-in (see [`ALLOWLIST_VERSION`]).
const fn explicit(method: &'static str, path: &'static str, since: u32) -> AllowedRoute {
    AllowedRoute {
        method,
        path,
        since,
        explicit: true,
    }
}

/// The operations personal tokens may call (docs/api.md), including the
/// inverse actions of allowed ones (unarchive, unmute, unpin, unfavorite).
pub const PERSONAL_TOKEN_ALLOWLIST: &[AllowedRoute] = &[
    // Rooms: list, get, mark read, mute, archive, favorite, pin (and their inverses).
    allow("GET", "/api/rooms"),
    allow("GET", "/api/rooms/{roomId}"),
    allow("POST", "/api/rooms/{roomId}/read"),
    allow("POST", "/api/rooms/{roomId}/archive"),
    allow("POST", "/api/rooms/{roomId}/unarchive"),
    allow("POST", "/api/rooms/{roomId}/mute"),
    allow("POST", "/api/rooms/{roomId}/unmute"),
    allow("POST", "/api/rooms/{roomId}/favorite"),
    allow("POST", "/api/rooms/{roomId}/unfavorite"),
    allow("POST", "/api/rooms/{roomId}/pin"),
    allow("POST", "/api/rooms/{roomId}/unpin"),
    // Messages: readable history and approved text sending.
    allow("GET", "/api/messages"),
    allow("POST", "/api/rooms/{roomId}/messages"),
    // Real-time sync.
    allow("GET", "/api/sync"),
    // E-mail.
    allow("GET", "/api/email/threads"),
    allow("PUT", "/api/email/threads/{id}"),
    allow("GET", "/api/email/messages/{id}"),
    allow("POST", "/api/email/compose"),
    allow("GET", "/api/email/labels"),
    allow("POST", "/api/email/labels"),
    allow("GET", "/api/email/signatures"),
    allow("POST", "/api/email/signatures"),
    // E-mail routes added with the e-mail backend (version 2): one thread, attachments,
    // editing and deleting signatures. The mailbox account routes are never listed.
    allow_since("GET", "/api/email/threads/{id}", 2),
    allow_since("GET", "/api/email/messages/{id}/attachments/{index}", 2),
    allow_since("PUT", "/api/email/signatures/{id}", 2),
    allow_since("DELETE", "/api/email/signatures/{id}", 2),
    // Reminders.
    allow("GET", "/api/reminders"),
    allow("POST", "/api/reminders"),
    allow("PUT", "/api/reminders/{id}"),
    allow("DELETE", "/api/reminders/{id}"),
    // Read-only bridges.
    allow("GET", "/api/bridges"),
    allow("GET", "/api/bridges/configured"),
    allow("GET", "/api/bridges/dashboard"),
    allow("GET", "/api/bridges/chat-counts"),
    // Rich messages (version 4): attachments, reactions, edits and deletion for everyone.
    allow_since("GET", "/api/rooms/{roomId}/media/{eventId}", 4),
    allow_since("POST", "/api/rooms/{roomId}/media", 4),
    allow_since("GET", "/api/rooms/{roomId}/members/{userId}/avatar", 5),
    allow_since(
        "POST",
        "/api/rooms/{roomId}/messages/{eventId}/reactions",
        4,
    ),
    allow_since(
        "DELETE",
        "/api/rooms/{roomId}/messages/{eventId}/reactions/{key}",
        4,
    ),
    allow_since("PUT", "/api/rooms/{roomId}/messages/{eventId}", 4),
    allow_since("DELETE", "/api/rooms/{roomId}/messages/{eventId}", 4),
    // Search across every room and mailbox (version 3): explicit opt-in of each token.
    explicit("GET", "/api/search", 3),
    // Contacts and new chats (version 4): tokens created earlier opt in.
    allow_since("GET", "/api/contacts", 4),
    allow_since("POST", "/api/chats", 4),
    // Notification level and snooze of a chat (version 5).
    allow_since("PUT", "/api/rooms/{roomId}/notifications", 5),
    // A conversation that feels alive (version 5): tokens created earlier opt in.
    allow_since("PUT", "/api/rooms/{roomId}/typing", 5),
    allow_since("GET", "/api/rooms/{roomId}/receipts", 5),
    allow_since("POST", "/api/rooms/{roomId}/unread", 5),
    // E-mail attachments, undo send and address completion (version 5): tokens created
    // earlier opt in.
    allow_since("POST", "/api/email/attachments", 5),
    allow_since("GET", "/api/email/outbox/{id}", 5),
    allow_since("DELETE", "/api/email/outbox/{id}", 5),
    allow_since("GET", "/api/email/addresses", 5),
    // Link previews (version 6): tokens created earlier opt in. The setting that turns
    // them off stays native-only.
    allow_since("GET", "/api/preview", 6),
    allow_since("GET", "/api/preview/image", 6),
    // Groups (version 6): their members, name, topic, picture, inviting, removing and
    // leaving. Creating one is the group form of `POST /api/chats` (a version-4 route), so
    // its handler refuses that form to tokens before version 6 (`GROUPS_SINCE`).
    allow_since("GET", "/api/rooms/{roomId}/members", 6),
    allow_since("PUT", "/api/rooms/{roomId}/name", 6),
    allow_since("PUT", "/api/rooms/{roomId}/topic", 6),
    allow_since("POST", "/api/rooms/{roomId}/avatar", 6),
    allow_since("POST", "/api/rooms/{roomId}/members", 6),
    allow_since("DELETE", "/api/rooms/{roomId}/members/{userId}", 6),
    allow_since("POST", "/api/rooms/{roomId}/leave", 6),
];

/// The allowlist version that opened groups to personal tokens: creating one (the group
/// form of `POST /api/chats`, whose route is older) and managing one.
pub const GROUPS_SINCE: u32 = 6;

/// Whether a personal token of `allowlist_version` may create groups. The opt-in
/// (`{"optIn": true}`) raises a token's version to the current one, so it is covered.
pub fn token_may_create_groups(allowlist_version: u32) -> bool {
    allowlist_version >= GROUPS_SINCE
}

/// Whether a personal token with allowlist version `token_version`, explicitly opted in at
/// `opted_in_version` (0: never), may call `template`.
pub fn personal_token_allows(
    method: &str,
    template: &str,
    token_version: u32,
    opted_in_version: u32,
) -> bool {
    allowlist_entry(method, template).is_some_and(|r| r.admits(token_version, opted_in_version))
}

/// The allowlist entry of an operation, if it has one.
pub fn allowlist_entry(method: &str, template: &str) -> Option<AllowedRoute> {
    PERSONAL_TOKEN_ALLOWLIST
        .iter()
        .find(|r| r.method == method && r.path == template)
        .copied()
}

impl AllowedRoute {
    /// Whether a token with allowlist version `token_version`, explicitly opted in at
    /// `opted_in_version` (0: never), may call this operation.
    pub fn admits(&self, token_version: u32, opted_in_version: u32) -> bool {
        self.since <= token_version && (!self.explicit || self.since <= opted_in_version)
    }
}

#[cfg(test)]
#[path = "allowlist_tests.rs"]
mod tests;
