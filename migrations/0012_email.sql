-- E-mail (docs/design.md): the user's own mailboxes over IMAP/SMTP, cached here.
-- Sealed columns (`*_enc`) are XChaCha20-Poly1305 under the owner's data key with AAD
-- (table, column, row id). Times are Unix MILLISECONDS.

-- One connected mailbox. `settings_enc` holds the IMAP and SMTP hosts, usernames and
-- passwords as one sealed JSON document; `email_enc` / `display_name_enc` the identity.
CREATE TABLE email_accounts (
    id               TEXT PRIMARY KEY,                 -- UUID
    user_id          TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    email_enc        BLOB NOT NULL,
    display_name_enc BLOB,
    settings_enc     BLOB NOT NULL,
    status           TEXT NOT NULL DEFAULT 'syncing'
                     CHECK (status IN ('ok', 'auth_failed', 'unreachable', 'syncing')),
    error            TEXT,                             -- the last failure in the server's words
    last_sync_at     INTEGER,
    created_at       INTEGER NOT NULL
);
CREATE INDEX email_accounts_user ON email_accounts(user_id, created_at);

-- The account's mailboxes (labels) with the sync bookkeeping of each.
CREATE TABLE email_mailboxes (
    id             TEXT PRIMARY KEY,                   -- UUID
    account_id     TEXT NOT NULL REFERENCES email_accounts(id) ON DELETE CASCADE,
    name           TEXT NOT NULL,                      -- IMAP name (the label's id)
    special_use    TEXT,                               -- inbox | sent | drafts | trash | junk | archive
    uid_validity   INTEGER,
    last_uid       INTEGER NOT NULL DEFAULT 0,         -- highest UID fetched
    highest_modseq INTEGER,                            -- CONDSTORE, when offered
    UNIQUE (account_id, name)
);

-- Threads: Switchboard's own ids, kept as long as one of their messages is cached.
CREATE TABLE email_threads (
    id              TEXT PRIMARY KEY,                  -- UUID
    account_id      TEXT NOT NULL REFERENCES email_accounts(id) ON DELETE CASCADE,
    user_id         TEXT NOT NULL,
    last_message_at INTEGER NOT NULL
);
CREATE INDEX email_threads_page ON email_threads(user_id, last_message_at DESC, id);

-- Keyed hashes (HMAC under a key derived from the user's data key) of the Message-IDs
-- (and normalised subjects) a thread is known by: threading without plaintext ids.
CREATE TABLE email_thread_refs (
    account_id TEXT NOT NULL REFERENCES email_accounts(id) ON DELETE CASCADE,
    ref_hash   TEXT NOT NULL,
    thread_id  TEXT NOT NULL REFERENCES email_threads(id) ON DELETE CASCADE,
    PRIMARY KEY (account_id, ref_hash)
);

-- One message, whatever mailboxes hold it (a message moved to Archive keeps its id).
-- `key_hash`: keyed hash of its Message-ID (or of its first location without one).
CREATE TABLE email_messages (
    id          TEXT PRIMARY KEY,                      -- UUID
    account_id  TEXT NOT NULL REFERENCES email_accounts(id) ON DELETE CASCADE,
    thread_id   TEXT NOT NULL REFERENCES email_threads(id) ON DELETE CASCADE,
    key_hash    TEXT NOT NULL,
    date        INTEGER NOT NULL,
    seen        INTEGER NOT NULL DEFAULT 0,
    flagged     INTEGER NOT NULL DEFAULT 0,
    size        INTEGER NOT NULL DEFAULT 0,
    header_enc  BLOB NOT NULL,                         -- JSON: from, to, cc, subject, ids
    snippet_enc BLOB NOT NULL,
    body_enc    BLOB NOT NULL,                         -- JSON: text, html, attachments
    UNIQUE (account_id, key_hash)
);
CREATE INDEX email_messages_thread ON email_messages(thread_id, date);

-- Where a message is on the server: (mailbox, UID).
CREATE TABLE email_locations (
    mailbox_id TEXT NOT NULL REFERENCES email_mailboxes(id) ON DELETE CASCADE,
    uid        INTEGER NOT NULL,
    message_id TEXT NOT NULL REFERENCES email_messages(id) ON DELETE CASCADE,
    PRIMARY KEY (mailbox_id, uid)
);
CREATE INDEX email_locations_message ON email_locations(message_id);

-- Signatures: Switchboard's own, sealed.
CREATE TABLE email_signatures (
    id         TEXT PRIMARY KEY,                       -- UUID
    user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name_enc   BLOB NOT NULL,
    text_enc   BLOB NOT NULL,
    is_default INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL
);
CREATE INDEX email_signatures_user ON email_signatures(user_id, created_at);
