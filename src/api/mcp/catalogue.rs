//! The catalogue of MCP tools: names, descriptions, the routes they wrap and their
//! arguments (data only; [`super::tools`] turns each into a tool and a request).

use poem::http::Method;

use super::spec::{ToolSpec, BOOL, INT, STR, STRS};

/// Every tool, in the order they are listed.
pub(super) fn build() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "list_rooms",
            description: "List the user's conversations (GET /api/rooms): readable names, \
                newest first, pinned first; page with nextCursor.",
            method: Method::GET,
            path: "/api/rooms",
            args: &[
                ("limit", INT, "1 to 100, default 50"),
                ("sortBy", STR, "recent or unread"),
                ("archived", STR, "false (default), true or all"),
                ("cursor", STR, "nextCursor of the previous page"),
            ],
            required: &[],
        },
        ToolSpec {
            name: "read_room_history",
            description: "Read a conversation's messages, newest first (GET /api/messages \
                with roomId); page with nextCursor.",
            method: Method::GET,
            path: "/api/messages",
            args: &[
                ("roomId", STR, "Matrix room id"),
                ("limit", INT, "1 to 100, default 50"),
                ("cursor", STR, "nextCursor of the previous page"),
            ],
            required: &["roomId"],
        },
        ToolSpec {
            name: "search",
            description: "Search messages across every room (GET /api/search): words, \
                prefixes from 3 characters, \"quoted phrases\". Needs the token's explicit \
                search opt-in.",
            method: Method::GET,
            path: "/api/search",
            args: &[
                ("q", STR, "words and \"quoted phrases\""),
                ("roomId", STR, "only this room"),
                ("platform", STR, "whatsapp, telegram, discord or matrix"),
                ("sender", STR, "only this sender's Matrix ID"),
                ("after", STR, "milliseconds or RFC 3339, exclusive"),
                ("before", STR, "milliseconds or RFC 3339, exclusive"),
                ("cursor", STR, "nextCursor of the previous page"),
                ("limit", INT, "1 to 100, default 20"),
            ],
            required: &["q"],
        },
        ToolSpec {
            name: "send_text",
            description: "Send approved text to a conversation (POST \
                /api/rooms/{roomId}/messages). Read the room first: a room whose recipientId \
                is null must be verified in the native app.",
            method: Method::POST,
            path: "/api/rooms/{roomId}/messages",
            args: &[
                ("roomId", STR, "Matrix room id"),
                ("content", STR, "the text, 1 to 65536 characters"),
                ("txnId", STR, "idempotency key; a repeat sends nothing"),
                (
                    "replyTo",
                    STR,
                    "event id of a message of the room this replies to",
                ),
            ],
            required: &["roomId", "content", "txnId"],
        },
        ToolSpec {
            name: "list_contacts",
            description: "List or search the people the user can write to (GET \
                /api/contacts): bridge contacts, Matrix users; each with its existing roomId \
                when there is a conversation already.",
            method: Method::GET,
            path: "/api/contacts",
            args: &[
                (
                    "platform",
                    STR,
                    "whatsapp, telegram, discord or matrix; absent: all",
                ),
                (
                    "q",
                    STR,
                    "search words (name, username, phone number, Matrix ID)",
                ),
                ("limit", INT, "1 to 100, default 50"),
            ],
            required: &[],
        },
        ToolSpec {
            name: "start_chat",
            description: "Start a conversation with someone (POST /api/chats): returns \
                roomId and whether it was created now; an existing conversation is returned \
                as it is. Counts against a budget of new chats per hour.",
            method: Method::POST,
            path: "/api/chats",
            args: &[
                ("platform", STR, "whatsapp, telegram, discord or matrix"),
                (
                    "identifier",
                    STR,
                    "phone number (+E.164), username, contact id, or Matrix user ID",
                ),
            ],
            required: &["platform", "identifier"],
        },
        ToolSpec {
            name: "create_group",
            description: "Create a group with several people (POST /api/chats with \
                participants): a WhatsApp, Telegram or Discord group through its bridge, or \
                an end-to-end encrypted Matrix room; returns roomId. Counts against the \
                budget of new chats per hour.",
            method: Method::POST,
            path: "/api/chats",
            args: &[
                ("platform", STR, "whatsapp, telegram, discord or matrix"),
                (
                    "participants",
                    STRS,
                    "1 to 100 people besides the user: phone numbers, usernames, contact ids \
                     or Matrix user IDs",
                ),
                ("name", STR, "the group's name, at most 255 characters"),
            ],
            required: &["platform", "participants"],
        },
        ToolSpec {
            name: "rename_chat",
            description: "Rename a group (PUT /api/rooms/{roomId}/name): its Matrix name, \
                which the bridge carries to the network; blank removes the name.",
            method: Method::PUT,
            path: "/api/rooms/{roomId}/name",
            args: &[
                ("roomId", STR, "Matrix room id"),
                ("name", STR, "the new name, at most 255 characters"),
            ],
            required: &["roomId", "name"],
        },
        ToolSpec {
            name: "invite",
            description: "Invite someone to a group (POST /api/rooms/{roomId}/members) by \
                Matrix user ID (for a bridged group: the person's matrixId from \
                list_contacts).",
            method: Method::POST,
            path: "/api/rooms/{roomId}/members",
            args: &[
                ("roomId", STR, "Matrix room id"),
                ("userId", STR, "Matrix user ID of the person"),
            ],
            required: &["roomId", "userId"],
        },
        ToolSpec {
            name: "remove_member",
            description: "Remove a member from a group (DELETE \
                /api/rooms/{roomId}/members/{userId}), with an optional reason shown to the \
                room.",
            method: Method::DELETE,
            path: "/api/rooms/{roomId}/members/{userId}",
            args: &[
                ("roomId", STR, "Matrix room id"),
                ("userId", STR, "Matrix user ID of the member"),
                ("reason", STR, "why, at most 512 characters"),
            ],
            required: &["roomId", "userId"],
        },
        ToolSpec {
            name: "get_attachment",
            description: "Get the attachment of a message (GET \
                /api/rooms/{roomId}/media/{eventId}): image content for images, an \
                embedded resource otherwise (at most 8 MiB here).",
            method: Method::GET,
            path: "/api/rooms/{roomId}/media/{eventId}",
            args: &[
                ("roomId", STR, "Matrix room id"),
                (
                    "eventId",
                    STR,
                    "event id of the message (its media is not null)",
                ),
                ("thumbnail", BOOL, "true for the thumbnail"),
            ],
            required: &["roomId", "eventId"],
        },
        ToolSpec {
            name: "send_file",
            description: "Send a file to a conversation (POST /api/rooms/{roomId}/media): \
                base64 data of at most 700 KiB; sent as an image, video, voice note or file \
                by its type.",
            method: Method::POST,
            path: "/api/rooms/{roomId}/media",
            args: &[
                ("roomId", STR, "Matrix room id"),
                ("data", STR, "the file, standard base64"),
                ("name", STR, "file name"),
                (
                    "mimetype",
                    STR,
                    "its type; images and audio must be what they claim",
                ),
                ("caption", STR, "text shown with it"),
                ("txnId", STR, "idempotency key; a repeat sends nothing"),
                (
                    "replyTo",
                    STR,
                    "event id of a message of the room this replies to",
                ),
                (
                    "durationMs",
                    INT,
                    "length of a voice note or video in milliseconds (info.duration)",
                ),
            ],
            required: &["roomId", "data", "name", "txnId"],
        },
        ToolSpec {
            name: "react",
            description: "React to a message with an emoji or short text (POST \
                /api/rooms/{roomId}/messages/{eventId}/reactions); once per key.",
            method: Method::POST,
            path: "/api/rooms/{roomId}/messages/{eventId}/reactions",
            args: &[
                ("roomId", STR, "Matrix room id"),
                ("eventId", STR, "event id of the message"),
                ("key", STR, "the reaction, 1 to 64 bytes"),
            ],
            required: &["roomId", "eventId", "key"],
        },
        ToolSpec {
            name: "edit_message",
            description: "Replace the text of one of the user's own text messages (PUT \
                /api/rooms/{roomId}/messages/{eventId}).",
            method: Method::PUT,
            path: "/api/rooms/{roomId}/messages/{eventId}",
            args: &[
                ("roomId", STR, "Matrix room id"),
                ("eventId", STR, "event id of the user's own message"),
                ("content", STR, "the new text, 1 to 65536 characters"),
                ("txnId", STR, "idempotency key; a repeat edits once"),
            ],
            required: &["roomId", "eventId", "content"],
        },
        ToolSpec {
            name: "delete_message",
            description: "Delete one of the user's own messages for everyone (DELETE \
                /api/rooms/{roomId}/messages/{eventId}).",
            method: Method::DELETE,
            path: "/api/rooms/{roomId}/messages/{eventId}",
            args: &[
                ("roomId", STR, "Matrix room id"),
                ("eventId", STR, "event id of the user's own message"),
            ],
            required: &["roomId", "eventId"],
        },
        ToolSpec {
            name: "mark_unread",
            description: "Mark a conversation unread (POST /api/rooms/{roomId}/unread), also \
                in the user's other Matrix apps; reading it clears the mark.",
            method: Method::POST,
            path: "/api/rooms/{roomId}/unread",
            args: &[("roomId", STR, "Matrix room id")],
            required: &["roomId"],
        },
        ToolSpec {
            name: "get_receipts",
            description: "Who has read a conversation up to which message (GET \
                /api/rooms/{roomId}/receipts): the other members' latest public read \
                receipts {userId, eventId, ts}.",
            method: Method::GET,
            path: "/api/rooms/{roomId}/receipts",
            args: &[("roomId", STR, "Matrix room id")],
            required: &["roomId"],
        },
        ToolSpec {
            name: "list_reminders",
            description: "List reminders, earliest due first (GET /api/reminders).",
            method: Method::GET,
            path: "/api/reminders",
            args: &[
                ("completed", STR, "true or false"),
                ("limit", INT, "1 to 100, default 50"),
                ("offset", INT, "at least 0"),
            ],
            required: &[],
        },
        ToolSpec {
            name: "create_reminder",
            description: "Create a reminder (POST /api/reminders).",
            method: Method::POST,
            path: "/api/reminders",
            args: &[
                ("title", STR, "what to be reminded of"),
                ("notes", STR, "details"),
                ("dueAt", STR, "RFC 3339 date-time"),
                ("roomId", STR, "related room"),
                ("eventId", STR, "related message event"),
            ],
            required: &["title", "dueAt"],
        },
        ToolSpec {
            name: "update_reminder",
            description: "Change a reminder (PUT /api/reminders/{id}); only the given fields \
                change.",
            method: Method::PUT,
            path: "/api/reminders/{id}",
            args: &[
                ("id", STR, "reminder id"),
                ("title", STR, "what to be reminded of"),
                ("notes", STR, "details"),
                ("dueAt", STR, "RFC 3339 date-time"),
                ("completed", BOOL, "done"),
            ],
            required: &["id"],
        },
        ToolSpec {
            name: "list_email_threads",
            description: "List e-mail threads (GET /api/email/threads).",
            method: Method::GET,
            path: "/api/email/threads",
            args: &[
                ("label", STR, "a label id, e.g. INBOX"),
                ("q", STR, "search words"),
                ("cursor", STR, "nextCursor of the previous page"),
                ("limit", INT, "1 to 100"),
            ],
            required: &[],
        },
        ToolSpec {
            name: "read_email_thread",
            description: "Read one e-mail thread (GET /api/email/threads/{id}).",
            method: Method::GET,
            path: "/api/email/threads/{id}",
            args: &[("id", STR, "thread id")],
            required: &["id"],
        },
        ToolSpec {
            name: "read_email_message",
            description: "Read one e-mail message (GET /api/email/messages/{id}).",
            method: Method::GET,
            path: "/api/email/messages/{id}",
            args: &[("id", STR, "message id")],
            required: &["id"],
        },
        ToolSpec {
            name: "compose_email",
            description: "Send, reply to or forward an e-mail (POST /api/email/compose).",
            method: Method::POST,
            path: "/api/email/compose",
            args: &[
                ("accountId", STR, "sending account; default the first"),
                ("to", STRS, "\"addr\" or \"Name <addr>\""),
                ("cc", STRS, "\"addr\" or \"Name <addr>\""),
                ("bcc", STRS, "\"addr\" or \"Name <addr>\""),
                ("subject", STR, "subject"),
                ("text", STR, "plain-text body"),
                ("replyTo", STR, "message id this replies to"),
                ("forward", STR, "message id this forwards"),
                ("signatureId", STR, "signature to append"),
            ],
            required: &["to", "subject", "text"],
        },
    ]
}
