-- Issue #33: what outgoing mail needs besides the cache: attachments uploaded for a message
-- (spooled on disk, sealed), the outbox of messages held for "undo send", and the ids of
-- drafts (the drafts themselves live in the account's Drafts mailbox on the IMAP server).
-- Sealed columns (`*_enc`) are XChaCha20-Poly1305 under the owner's data key with AAD
-- (table, column, row id). Times are Unix MILLISECONDS.

-- One uploaded file. Its bytes are in `<data_dir>/email-uploads/<id>` as sealed chunks
-- (services::email::uploads); name and type are sealed here. Dropped 24 h after
-- `created_at` unless a held message still needs it, and once its message has been sent.
CREATE TABLE email_uploads (
    id           TEXT PRIMARY KEY,                     -- UUID (the `uploadId`)
    user_id      TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name_enc     BLOB NOT NULL,
    mimetype_enc BLOB NOT NULL,
    size         INTEGER NOT NULL,
    created_at   INTEGER NOT NULL
);
CREATE INDEX email_uploads_user ON email_uploads(user_id, created_at);
CREATE INDEX email_uploads_age ON email_uploads(created_at);

-- A message held for `undoSeconds` ("undo send"): the whole compose request sealed, sent
-- by the scheduler at `send_at`. status: pending → sending → sent | failed; cancelled by
-- DELETE before `sending`.
CREATE TABLE email_outbox (
    id          TEXT PRIMARY KEY,                      -- UUID (the `outboxId`)
    user_id     TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    request_enc BLOB NOT NULL,                         -- JSON: the compose fields
    upload_ids  TEXT NOT NULL DEFAULT '',              -- uploads it needs (space-separated)
    send_at     INTEGER NOT NULL,
    status      TEXT NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'sending', 'sent', 'failed', 'cancelled')),
    error_enc   BLOB,                                  -- why it failed, sealed
    created_at  INTEGER NOT NULL,
    finished_at INTEGER
);
CREATE INDEX email_outbox_due ON email_outbox(status, send_at);
CREATE INDEX email_outbox_user ON email_outbox(user_id);

-- Stable ids of drafts: a draft is replaced on the server at every save (a new UID), so
-- its id names the draft's Message-ID, kept across saves, by keyed hash (HMAC under a
-- sub-key of the owner's data key): no plaintext id here.
CREATE TABLE email_drafts (
    id          TEXT PRIMARY KEY,                      -- UUID (the draft `id`)
    user_id     TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    account_id  TEXT NOT NULL REFERENCES email_accounts(id) ON DELETE CASCADE,
    mid_hash    TEXT NOT NULL,
    updated_at  INTEGER NOT NULL,
    UNIQUE (account_id, mid_hash)
);
CREATE INDEX email_drafts_user ON email_drafts(user_id);
