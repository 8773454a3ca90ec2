-- A conversation that feels alive (issue #31): others' read receipts, the user's own marks
-- on a room that other Matrix clients share (`m.marked_unread`), drafts, and the privacy
-- settings of what the user's reading and typing tell the other side.

-- The latest public read receipt (`m.read`) of every other member of a room, as the sync
-- worker saw it: one row per (user, room, reader). Receipts are not private data of the
-- user (every member of the room sees them), so they are stored in the clear.
CREATE TABLE room_receipts (
    user_id   TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    room_id   TEXT NOT NULL,
    reader_id TEXT NOT NULL,
    event_id  TEXT NOT NULL,
    ts        INTEGER NOT NULL,
    PRIMARY KEY (user_id, room_id, reader_id)
);

-- Per-room state of the conversation kept apart from the synced `rooms` row (which the sync
-- worker rewrites whole): `marked_unread` mirrors the `m.marked_unread` room account data;
-- `draft_enc` is the draft (an opaque string the client chose), sealed under the user's data
-- key (AAD: room_drafts, content, "{user_id}/{room_id}"); `draft_updated_at` Unix ms.
CREATE TABLE room_marks (
    user_id          TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    room_id          TEXT NOT NULL,
    marked_unread    INTEGER NOT NULL DEFAULT 0,
    draft_enc        BLOB,
    draft_updated_at INTEGER,
    PRIMARY KEY (user_id, room_id)
);

-- What the user's reading and typing tell the other side: `read_receipts` is `public`
-- (`m.read`) or `private` (`m.read.private`); `typing` 0 sends no typing notices.
CREATE TABLE presence_settings (
    user_id       TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    read_receipts TEXT NOT NULL DEFAULT 'public' CHECK (read_receipts IN ('public', 'private')),
    typing        INTEGER NOT NULL DEFAULT 1,
    updated_at    INTEGER NOT NULL
);
