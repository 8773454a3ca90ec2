//! Tests of the personal-token allowlist (`super`).

use super::*;

#[test]
fn group_routes_need_version_6_or_an_opt_in() {
    const { assert!(ALLOWLIST_VERSION >= 6) };
    let routes = [
        ("GET", "/api/rooms/{roomId}/members"),
        ("PUT", "/api/rooms/{roomId}/name"),
        ("PUT", "/api/rooms/{roomId}/topic"),
        ("POST", "/api/rooms/{roomId}/avatar"),
        ("POST", "/api/rooms/{roomId}/members"),
        ("DELETE", "/api/rooms/{roomId}/members/{userId}"),
        ("POST", "/api/rooms/{roomId}/leave"),
    ];
    for (method, path) in routes {
        // Created at version 5, never opted in: refused, also with an explicit opt-in
        // made at 5 (search's); created at 6, or opted in since: allowed.
        assert!(
            !personal_token_allows(method, path, 5, 0),
            "{method} {path}"
        );
        assert!(
            !personal_token_allows(method, path, 5, 5),
            "{method} {path}"
        );
        assert!(personal_token_allows(method, path, 6, 0), "{method} {path}");
        assert!(personal_token_allows(
            method,
            path,
            ALLOWLIST_VERSION,
            ALLOWLIST_VERSION
        ));
    }
    // The group form of the version-4 route: decided by its handler.
    assert!(personal_token_allows("POST", "/api/chats", 5, 0));
    assert!(!token_may_create_groups(5));
    assert!(token_may_create_groups(6));
    assert!(token_may_create_groups(ALLOWLIST_VERSION));
    // The native app's own override name stays native only.
    assert!(allowlist_entry("PUT", "/api/rooms/{roomId}").is_none());
}

#[test]
fn the_notification_level_needs_version_5_and_subscriptions_are_never_listed() {
    let level = ("PUT", "/api/rooms/{roomId}/notifications");
    assert!(!personal_token_allows(level.0, level.1, 4, 0));
    assert!(personal_token_allows(level.0, level.1, 5, 0));
    for (method, path) in [
        ("GET", "/api/push/vapid"),
        ("POST", "/api/push/subscriptions"),
        ("GET", "/api/push/subscriptions"),
        ("DELETE", "/api/push/subscriptions/{id}"),
        ("PUT", "/api/push/settings"),
    ] {
        assert!(allowlist_entry(method, path).is_none(), "{method} {path}");
    }
}

#[test]
fn contacts_and_new_chats_need_version_4_or_an_opt_in() {
    for (method, path) in [("GET", "/api/contacts"), ("POST", "/api/chats")] {
        // Created under version 3, never opted in: refused.
        assert!(
            !personal_token_allows(method, path, 3, 0),
            "{method} {path}"
        );
        // The same token after `{"optIn": true}` (moved to the current version).
        assert!(personal_token_allows(
            method,
            path,
            ALLOWLIST_VERSION,
            ALLOWLIST_VERSION
        ));
        // Created under version 4: allowed without an opt-in (not an explicit entry).
        assert!(personal_token_allows(method, path, 4, 0), "{method} {path}");
    }
    // Older entries stay open to the version-3 token.
    assert!(personal_token_allows("GET", "/api/rooms", 3, 0));
    assert!(!personal_token_allows("DELETE", "/api/chats", 4, 4));
}

#[test]
fn rich_message_routes_need_an_opt_in_from_tokens_older_than_version_4() {
    let rich = [
        ("GET", "/api/rooms/{roomId}/media/{eventId}"),
        ("POST", "/api/rooms/{roomId}/media"),
        ("POST", "/api/rooms/{roomId}/messages/{eventId}/reactions"),
        (
            "DELETE",
            "/api/rooms/{roomId}/messages/{eventId}/reactions/{key}",
        ),
        ("PUT", "/api/rooms/{roomId}/messages/{eventId}"),
        ("DELETE", "/api/rooms/{roomId}/messages/{eventId}"),
    ];
    const { assert!(ALLOWLIST_VERSION >= 4) };
    for (method, path) in rich {
        // Created at version 3, never opted in: refused; after the opt-in (which
        // raises the token's version to the current one): allowed.
        assert!(
            !personal_token_allows(method, path, 3, 0),
            "{method} {path}"
        );
        assert!(personal_token_allows(method, path, ALLOWLIST_VERSION, 0));
        // An explicit opt-in at 3 (search) does not reach version-4 routes either.
        assert!(!personal_token_allows(method, path, 3, 3));
    }
    // What version 3 tokens had stays theirs.
    assert!(personal_token_allows(
        "POST",
        "/api/rooms/{roomId}/messages",
        3,
        0
    ));
}

#[test]
fn member_avatars_need_version_5_or_an_opt_in() {
    let (method, path) = ("GET", "/api/rooms/{roomId}/members/{userId}/avatar");
    const { assert!(ALLOWLIST_VERSION >= 5) };
    assert!(!personal_token_allows(method, path, 4, 0));
    assert!(!personal_token_allows(method, path, 4, 3));
    assert!(personal_token_allows(method, path, 5, 0));
    // Its message pages stay open to older tokens: the names ride on them.
    assert!(personal_token_allows("GET", "/api/messages", 4, 0));
}

#[test]
fn conversation_routes_need_an_opt_in_from_tokens_older_than_version_5() {
    const { assert!(ALLOWLIST_VERSION >= 5) };
    for (method, path) in [
        ("PUT", "/api/rooms/{roomId}/typing"),
        ("GET", "/api/rooms/{roomId}/receipts"),
        ("POST", "/api/rooms/{roomId}/unread"),
    ] {
        assert!(
            !personal_token_allows(method, path, 4, 0),
            "{method} {path}"
        );
        assert!(personal_token_allows(method, path, 5, 0), "{method} {path}");
    }
    // Drafts and the privacy settings are never open to personal tokens.
    for (method, path) in [
        ("GET", "/api/rooms/{roomId}/draft"),
        ("PUT", "/api/rooms/{roomId}/draft"),
        ("DELETE", "/api/rooms/{roomId}/draft"),
        ("GET", "/api/settings/presence"),
        ("PUT", "/api/settings/presence"),
    ] {
        assert!(
            !personal_token_allows(method, path, 5, 5),
            "{method} {path}"
        );
    }
}

#[test]
fn link_previews_need_version_6_or_an_opt_in_and_their_setting_is_native_only() {
    const { assert!(ALLOWLIST_VERSION >= 6) };
    for (method, path) in [("GET", "/api/preview"), ("GET", "/api/preview/image")] {
        assert!(
            !personal_token_allows(method, path, 5, 0),
            "{method} {path}"
        );
        assert!(
            !personal_token_allows(method, path, 5, 5),
            "{method} {path}"
        );
        assert!(personal_token_allows(method, path, 6, 0), "{method} {path}");
    }
    for method in ["GET", "PUT"] {
        assert!(allowlist_entry(method, "/api/settings/previews").is_none());
    }
}

#[test]
fn email_attachments_undo_and_addresses_need_version_5_or_an_opt_in() {
    const { assert!(ALLOWLIST_VERSION >= 5) };
    for (method, path) in [
        ("POST", "/api/email/attachments"),
        ("GET", "/api/email/outbox/{id}"),
        ("DELETE", "/api/email/outbox/{id}"),
        ("GET", "/api/email/addresses"),
    ] {
        assert!(
            !personal_token_allows(method, path, 4, 0),
            "{method} {path}"
        );
        assert!(personal_token_allows(method, path, 5, 0), "{method} {path}");
    }
    // Drafts are for native sessions only.
    assert!(!personal_token_allows("GET", "/api/email/drafts", 5, 5));
    assert!(!personal_token_allows(
        "POST",
        "/api/email/drafts/{id}/send",
        5,
        5
    ));
}
