-- Web Push (RFC 8030/8291/8292) and notification levels per chat.

-- Server-wide secrets made once and kept sealed under a key derived from the master key
-- (the VAPID P-256 key pair: PKCS#8 DER).
CREATE TABLE server_secrets (
    name        TEXT PRIMARY KEY,
    value_enc   BLOB NOT NULL,
    created_at  INTEGER NOT NULL
) WITHOUT ROWID;

-- A browser's push subscription. The endpoint URL (a capability: whoever knows it can push
-- to the browser) and the keys are sealed under the user's data key; the endpoint is found
-- again through a blind index.
CREATE TABLE push_subscriptions (
    id               TEXT PRIMARY KEY,          -- UUID
    user_id          TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    endpoint_index   BLOB NOT NULL,
    endpoint_enc     BLOB NOT NULL,             -- sealed endpoint URL
    keys_enc         BLOB NOT NULL,             -- sealed JSON {"p256dh", "auth"} (base64url)
    endpoint_origin  TEXT NOT NULL,             -- scheme://host[:port], shown in the list
    created_at       INTEGER NOT NULL,
    last_success_at  INTEGER,
    failures         INTEGER NOT NULL DEFAULT 0,
    UNIQUE (user_id, endpoint_index)
);
CREATE INDEX push_subscriptions_user ON push_subscriptions(user_id, created_at);

-- Per-chat level: 'all' or 'mentions'; 'off' is the existing `muted` flag (muted = 1),
-- so the two can never disagree. `snooze_until`: Unix ms, nothing is pushed before it.
ALTER TABLE rooms ADD COLUMN notify_level TEXT NOT NULL DEFAULT 'all';
ALTER TABLE rooms ADD COLUMN snooze_until INTEGER;

-- PUT /api/push/settings {previews}: whether pushes carry the chat name and text.
ALTER TABLE users ADD COLUMN push_previews INTEGER NOT NULL DEFAULT 1;
