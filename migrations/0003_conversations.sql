-- Conversations: rooms, messages, linked room groups, sync position, sent transactions.
-- Per-user rows: every table is keyed by the owning user, because each user syncs its own
-- Matrix account and the same Matrix room can appear for two users with different state.
-- *_enc columns are sealed under the owner's data key (AAD: table, column, row key).

CREATE TABLE sync_state (
    user_id     TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    since       TEXT,                          -- next_batch of the last ingested /sync
    last_ok_at  INTEGER,
    last_error  TEXT,
    updated_at  INTEGER NOT NULL
);

CREATE TABLE rooms (
    user_id             TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    room_id             TEXT NOT NULL,
    name_enc            BLOB,                  -- m.room.name (or computed from members)
    avatar_enc          BLOB,                  -- m.room.avatar url
    topic_enc           BLOB,                  -- m.room.topic
    client_name         TEXT,                  -- native clients' own encryptedName (base64, opaque)
    client_avatar       TEXT,                  -- native clients' own encryptedAvatar (base64, opaque)
    client_nonce        TEXT,
    is_direct           INTEGER NOT NULL DEFAULT 0,
    recipient_id        TEXT,                  -- Matrix ID of the direct partner, NULL if unknown/group
    platform            TEXT,                  -- whatsapp | telegram | discord | NULL (plain Matrix)
    member_count        INTEGER NOT NULL DEFAULT 0,
    unread_count        INTEGER NOT NULL DEFAULT 0,
    highlight_count     INTEGER NOT NULL DEFAULT 0,
    last_read_event_id  TEXT,
    last_message_ts     INTEGER,               -- ms
    importance          REAL NOT NULL DEFAULT 0,
    archived            INTEGER NOT NULL DEFAULT 0,
    archived_at         INTEGER,
    muted               INTEGER NOT NULL DEFAULT 0,
    favorite            INTEGER NOT NULL DEFAULT 0,
    pinned              INTEGER NOT NULL DEFAULT 0,
    membership          TEXT NOT NULL DEFAULT 'join',  -- join | invite | leave
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL,
    PRIMARY KEY (user_id, room_id)
) WITHOUT ROWID;
CREATE INDEX rooms_recent ON rooms(user_id, archived, pinned DESC, last_message_ts DESC);

CREATE TABLE room_members (
    user_id    TEXT NOT NULL,
    room_id    TEXT NOT NULL,
    member_id  TEXT NOT NULL,
    PRIMARY KEY (user_id, room_id, member_id),
    FOREIGN KEY (user_id, room_id) REFERENCES rooms(user_id, room_id) ON DELETE CASCADE
) WITHOUT ROWID;

CREATE TABLE messages (
    id           TEXT PRIMARY KEY,             -- UUID
    user_id      TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    room_id      TEXT NOT NULL,
    event_id     TEXT NOT NULL,
    sender_id    TEXT NOT NULL,
    ts           INTEGER NOT NULL,             -- origin_server_ts, ms
    msgtype      TEXT NOT NULL,
    content_enc  BLOB NOT NULL,                -- sealed JSON: {"body", "content": <event content>}
    is_mine      INTEGER NOT NULL DEFAULT 0,
    importance   REAL NOT NULL DEFAULT 0,
    category     TEXT NOT NULL DEFAULT 'general',
    is_question  INTEGER NOT NULL DEFAULT 0,
    edited       INTEGER NOT NULL DEFAULT 0,
    redacted     INTEGER NOT NULL DEFAULT 0,
    created_at   INTEGER NOT NULL,
    UNIQUE (user_id, event_id)
);
CREATE INDEX messages_room_ts ON messages(user_id, room_id, ts DESC, event_id);

CREATE TABLE linked_groups (
    id              TEXT PRIMARY KEY,          -- UUID
    user_id         TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name_enc        BLOB,                      -- readable name, sealed at rest
    encrypted_name  TEXT,                      -- native clients' own (base64, opaque)
    nonce           TEXT,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
);
CREATE INDEX linked_groups_user ON linked_groups(user_id);

CREATE TABLE linked_group_rooms (
    group_id  TEXT NOT NULL REFERENCES linked_groups(id) ON DELETE CASCADE,
    user_id   TEXT NOT NULL,
    room_id   TEXT NOT NULL,
    added_at  INTEGER NOT NULL,
    PRIMARY KEY (group_id, room_id),
    UNIQUE (user_id, room_id)                  -- a room is in at most one group (409)
);

CREATE TABLE sent_transactions (
    user_id     TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    txn_id      TEXT NOT NULL,
    room_id     TEXT NOT NULL,
    event_id    TEXT,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (user_id, txn_id)
) WITHOUT ROWID;
