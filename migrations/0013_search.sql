-- Encrypted full-text search (issue #14): a keyed blind index, no plaintext.
--
-- Each indexed item (a chat message; an e-mail once e-mail is stored) is one row of
-- search_docs with the metadata the filters need, which the item's own table already keeps
-- in the clear (room, sender, time). Its words are only in search_terms, and only as
-- HMAC-SHA256 under the user's search key (derived from the user's data key), truncated to
-- 16 bytes: the database holds no indexed word or prefix in plaintext, and destroying the
-- data key (DELETE /api/keys) makes every term unmatchable; the rows are deleted then too.

CREATE TABLE search_docs (
    id       INTEGER PRIMARY KEY,
    user_id  TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    kind     TEXT NOT NULL,            -- 'message' | 'email'
    item_id  TEXT NOT NULL,            -- messages.id (or the e-mail message id)
    scope    TEXT NOT NULL,            -- room id (messages) or thread id (e-mail)
    sender   TEXT,                     -- Matrix ID of the sender (messages); NULL for e-mail
    ts       INTEGER NOT NULL,         -- ms
    UNIQUE (kind, item_id)
);
CREATE INDEX search_docs_user ON search_docs(user_id);

-- Postings: one row per distinct blind term of a document, ordered so one term's
-- documents are read newest first straight from the primary key.
CREATE TABLE search_terms (
    term  BLOB NOT NULL,
    ts    INTEGER NOT NULL,
    doc   INTEGER NOT NULL REFERENCES search_docs(id) ON DELETE CASCADE,
    PRIMARY KEY (term, ts, doc)
) WITHOUT ROWID;
CREATE INDEX search_terms_doc ON search_terms(doc);

-- A deleted message or mail takes its index entry with it, whichever path deletes it
-- (foreign-key cascades included).
CREATE TRIGGER messages_search_cleanup AFTER DELETE ON messages BEGIN
    DELETE FROM search_docs WHERE kind = 'message' AND item_id = old.id;
END;
CREATE TRIGGER email_messages_search_cleanup AFTER DELETE ON email_messages BEGIN
    DELETE FROM search_docs WHERE kind = 'email' AND item_id = old.id;
END;

-- Search reads across every room at once: a personal token reaches it only after its own
-- explicit opt-in (PATCH /api/developer/tokens/{id} {"optIn": true}), whenever it was
-- created. The allowlist version alone cannot say that (new tokens get the current one),
-- so the version of the token's last explicit opt-in is kept too (0: never).
ALTER TABLE api_tokens ADD COLUMN opted_in_version INTEGER NOT NULL DEFAULT 0;

-- AI search (POST /api/ai/search): one embedding per item from the configured
-- OpenAI-compatible /embeddings endpoint, sealed under the user's data key (AAD:
-- "search_vectors", "vector", "<kind>/<item id>"): vectors say a lot about the text.
CREATE TABLE search_vectors (
    user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    kind       TEXT NOT NULL,
    item_id    TEXT NOT NULL,
    model      TEXT NOT NULL,
    vector_enc BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (kind, item_id)
) WITHOUT ROWID;
CREATE INDEX search_vectors_user ON search_vectors(user_id);

CREATE TRIGGER messages_vector_cleanup AFTER DELETE ON messages BEGIN
    DELETE FROM search_vectors WHERE kind = 'message' AND item_id = old.id;
END;
