-- Issue #33: addresses for completion in the compose form, gathered from the headers
-- (From, To, Cc) of the user's own cached mail and from what the user sends. The address
-- and name are sealed under the owner's data key (AAD: email_addresses, column, row id);
-- `addr_hash` is a keyed hash (HMAC under a sub-key of the data key) of the lowercased
-- address, what keeps one row per address. Ranked by `uses` (sending to an address counts
-- more than receiving from it), then `last_used_at`.
CREATE TABLE email_addresses (
    id           TEXT PRIMARY KEY,                     -- UUID
    user_id      TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    addr_hash    TEXT NOT NULL,
    address_enc  BLOB NOT NULL,
    name_enc     BLOB,
    uses         INTEGER NOT NULL DEFAULT 0,
    last_used_at INTEGER NOT NULL,
    UNIQUE (user_id, addr_hash)
);
CREATE INDEX email_addresses_rank ON email_addresses(user_id, uses DESC, last_used_at DESC);
