-- Bridges: each user's logins at the mautrix bridges and their last known state.
-- Refreshed from the bridge's /v3/whoami (at most every 10 s per user and platform) and on
-- login completion and logout. remote_name_enc / remote_profile_enc are sealed under the
-- owner's data key (AAD: table, column, "{user_id}/{platform}/{login_id}"): bridge user
-- info (phone numbers, names, usernames) is sensitive.

CREATE TABLE bridge_logins (
    user_id             TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    platform            TEXT NOT NULL,           -- whatsapp | telegram | discord
    login_id            TEXT NOT NULL,           -- the bridge's user_login_id
    remote_name_enc     BLOB,
    remote_profile_enc  BLOB,                    -- sealed JSON object
    state_event         TEXT NOT NULL DEFAULT '',-- CONNECTED, TRANSIENT_DISCONNECT, BAD_CREDENTIALS, …; '' = none yet
    error_code          TEXT,                    -- state.error, e.g. wa-logged-out
    error               TEXT,                    -- state.message (human-readable)
    state_ts            INTEGER,                 -- state.timestamp (Unix seconds)
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL,
    PRIMARY KEY (user_id, platform, login_id)
) WITHOUT ROWID;
