-- Scheduler: scheduled messages, reminders, push devices.
-- Times in this file are Unix MILLISECONDS (scheduling needs sub-second precision), unlike
-- the seconds of the identity tables.

-- Messages to send later. The body arrives sealed by the client to the server's X25519 key
-- (docs/api.md, envelopes) and is stored exactly as given (base64 fields); the server opens it only
-- in memory, when sending. Plaintext is never written.
CREATE TABLE scheduled_messages (
    id               TEXT PRIMARY KEY,                -- UUID; also the Matrix txnId of the send
    user_id          TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    room_id          TEXT NOT NULL,
    target_platform  TEXT,                            -- whatsapp | telegram | discord | NULL
    encrypted_body   TEXT NOT NULL,                   -- base64 ciphertext (sealed to the server key)
    nonce            TEXT NOT NULL,                   -- base64, 24 bytes
    ephemeral_pubkey TEXT NOT NULL,                   -- base64, 32 bytes
    status           TEXT NOT NULL CHECK (status IN ('pending', 'sent', 'cancelled', 'failed')),
    scheduled_for    INTEGER NOT NULL,
    -- When the scheduler next looks at a pending message: scheduled_for, a retry time, or
    -- the end of the lease of a send in progress.
    next_attempt_at  INTEGER NOT NULL,
    -- Set while a scheduler holds the message (a send is in progress); a crashed holder's
    -- lease simply runs out. The Matrix txnId makes a repeated send a no-op.
    lease_until      INTEGER,
    attempts         INTEGER NOT NULL DEFAULT 0,
    sent_room_id     TEXT,                            -- the room actually sent to (targetPlatform)
    event_id         TEXT,
    failure_reason   TEXT,                            -- last send error; kept when failed
    sent_at          INTEGER,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL
);
CREATE INDEX scheduled_messages_due ON scheduled_messages(next_attempt_at) WHERE status = 'pending';
CREATE INDEX scheduled_messages_user ON scheduled_messages(user_id, status, scheduled_for);

-- Reminders: title and notes sealed under the user's data key,
-- AAD ("reminders", "title" | "notes", id).
CREATE TABLE reminders (
    id           TEXT PRIMARY KEY,                    -- UUID
    user_id      TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    title_enc    BLOB NOT NULL,
    notes_enc    BLOB,
    due_at       INTEGER NOT NULL,
    room_id      TEXT,
    event_id     TEXT,
    completed    INTEGER NOT NULL DEFAULT 0,
    completed_at INTEGER,
    notified_at  INTEGER,                             -- when reminder.due was emitted; NULL until then
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);
CREATE INDEX reminders_due ON reminders(due_at) WHERE completed = 0 AND notified_at IS NULL;
CREATE INDEX reminders_user ON reminders(user_id, due_at);

-- APNs device tokens: sealed under the user's data key, AAD ("devices", "token", id), and
-- found through a keyed blind index of the lowercased token. A token belongs to at most one
-- user (the app install that registered it last).
CREATE TABLE devices (
    id            TEXT PRIMARY KEY,                   -- tokenId (UUID)
    user_id       TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    token_index   BLOB NOT NULL UNIQUE,
    token_enc     BLOB NOT NULL,
    device_name   TEXT,
    device_model  TEXT,
    os_version    TEXT,
    app_version   TEXT,
    environment   TEXT NOT NULL CHECK (environment IN ('production', 'development')),
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    last_used_at  INTEGER                             -- last accepted push
);
CREATE INDEX devices_user ON devices(user_id);
