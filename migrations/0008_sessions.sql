-- Sessions: each sign-in (a refresh-token row) gets its own Matrix device for the app, so
-- logging out, removing the account or deleting the keys can log exactly that device out
-- on the homeserver while Switchboard's own sync device (users.matrix_device_id) stays.

-- The id access tokens name in their `sid` claim (not a secret).
ALTER TABLE refresh_tokens ADD COLUMN session_id TEXT;
UPDATE refresh_tokens SET session_id = lower(hex(randomblob(16))) WHERE session_id IS NULL;
CREATE UNIQUE INDEX refresh_tokens_session ON refresh_tokens(session_id);
-- The app's Matrix device of this session and its access token, sealed under the user's
-- data key (AAD: refresh_tokens / matrix_access_token / session_id). NULL once logged out.
ALTER TABLE refresh_tokens ADD COLUMN matrix_device_id TEXT;
ALTER TABLE refresh_tokens ADD COLUMN matrix_access_token_enc BLOB;

-- App devices still to be logged out on the homeserver (it was down, or is being asked
-- now). Entered in the same transaction that ends the session; removed once the
-- homeserver confirmed. Device ids are not secrets.
CREATE TABLE matrix_logouts (
    user_id         TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    device_id       TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    last_error      TEXT,
    created_at      INTEGER NOT NULL,
    PRIMARY KEY (user_id, device_id)
);
CREATE INDEX matrix_logouts_due ON matrix_logouts(next_attempt_at);
