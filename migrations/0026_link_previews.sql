-- Link previews (issue #32): whether the user wants previews of the links in their messages.
-- One row per user who changed it; no row means on (the default). A preference, not private
-- data, so it is stored in the clear. The previews themselves are never stored at rest (they
-- are kept in memory only, in a bounded cache).
CREATE TABLE preview_settings (
    user_id    TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    enabled    INTEGER NOT NULL DEFAULT 1,
    updated_at INTEGER NOT NULL
);
