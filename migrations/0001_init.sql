-- Identity: users, sign-in codes, refresh tokens, encryption keys, personal API tokens.
-- Times are Unix seconds (INTEGER). Columns ending in _enc are sealed with
-- XChaCha20-Poly1305 under the owning user's data key (see src/crypto); *_hash columns hold
-- SHA-256 (tokens) or argon2 (codes) digests, never the secret itself.

CREATE TABLE users (
    id                      TEXT PRIMARY KEY,               -- UUID
    email_index             BLOB NOT NULL UNIQUE,           -- keyed blind index of the normalized e-mail
    email_enc               BLOB NOT NULL,
    dek_wrapped             BLOB NOT NULL,                  -- per-user data key wrapped by the master key
    display_name            TEXT,
    username                TEXT UNIQUE COLLATE NOCASE,
    avatar_url              TEXT,
    is_admin                INTEGER NOT NULL DEFAULT 0,
    onboarding_completed    INTEGER NOT NULL DEFAULT 0,
    subscription_active     INTEGER NOT NULL DEFAULT 1,
    subscription_until      INTEGER,                        -- NULL: no end date
    matrix_user_id          TEXT,
    matrix_device_id        TEXT,
    matrix_access_token_enc BLOB,
    primary_user_id         TEXT REFERENCES users(id) ON DELETE CASCADE, -- NULL for a primary account
    keys_shredded           INTEGER NOT NULL DEFAULT 0,     -- 1 after DELETE /api/keys until new keys
    last_key_deletion_at    INTEGER,
    created_at              INTEGER NOT NULL,
    updated_at              INTEGER NOT NULL
);
CREATE INDEX users_primary ON users(primary_user_id);

CREATE TABLE login_codes (
    id           INTEGER PRIMARY KEY,
    email_index  BLOB NOT NULL,
    purpose      TEXT NOT NULL,                              -- 'sign_in' | 'add_account'
    requested_by TEXT REFERENCES users(id) ON DELETE CASCADE,
    code_hash    TEXT NOT NULL,
    attempts     INTEGER NOT NULL DEFAULT 0,
    expires_at   INTEGER NOT NULL,
    consumed_at  INTEGER,
    created_at   INTEGER NOT NULL
);
CREATE INDEX login_codes_email ON login_codes(email_index, created_at);

CREATE TABLE refresh_tokens (
    token_hash TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    expires_at INTEGER NOT NULL,
    revoked_at INTEGER,
    created_at INTEGER NOT NULL
);
CREATE INDEX refresh_tokens_user ON refresh_tokens(user_id);

CREATE TABLE user_keys (
    user_id                  TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    public_key               TEXT NOT NULL,                  -- base64 X25519 public key (public by nature)
    encrypted_master_key_enc BLOB,                           -- client recovery material, sealed again at rest
    salt                     TEXT,
    key_version              INTEGER NOT NULL,
    created_at               INTEGER NOT NULL,
    updated_at               INTEGER NOT NULL
);

CREATE TABLE api_tokens (
    id                TEXT PRIMARY KEY,
    user_id           TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name              TEXT NOT NULL,
    token_hash        TEXT NOT NULL UNIQUE,
    last_four         TEXT NOT NULL,
    allowlist_version INTEGER NOT NULL,
    created_at        INTEGER NOT NULL,
    last_used_at      INTEGER,
    expires_at        INTEGER,
    revoked_at        INTEGER
);
CREATE INDEX api_tokens_user ON api_tokens(user_id);
