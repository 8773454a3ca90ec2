-- Full history (issue #11): what is known to be missing from a room's stored timeline, so
-- paging back past it fetches it from the homeserver (`/rooms/{id}/messages`, dir=b).
--
-- history_rooms: one row per room whose history is tracked (created when the room first
-- appears in a joined timeline). `start_reached`: the room's creation is stored, nothing
-- older exists. A room without a row predates this migration: its older history is
-- tracked from its next timeline on.
CREATE TABLE history_rooms (
    user_id       TEXT NOT NULL,
    room_id       TEXT NOT NULL,
    start_reached INTEGER NOT NULL DEFAULT 0,
    created_at    INTEGER NOT NULL,
    PRIMARY KEY (user_id, room_id),
    FOREIGN KEY (user_id, room_id) REFERENCES rooms(user_id, room_id) ON DELETE CASCADE
) WITHOUT ROWID;

-- history_gaps: events older than the position (before_ts, before_event) -- the oldest
-- event of a stored stretch, in the history order `ts DESC, event_id ASC` -- are missing,
-- back to `to_token` (the `since` of the sync before a limited timeline) and messages
-- newer than `after_ts`, or back to the room's creation when `to_token` is NULL.
-- `from_token` is where the next `/messages` page starts (a timeline's `prev_batch`,
-- then each page's `end`). Pagination tokens are positions, not credentials.
CREATE TABLE history_gaps (
    id           INTEGER PRIMARY KEY,
    user_id      TEXT NOT NULL,
    room_id      TEXT NOT NULL,
    before_ts    INTEGER NOT NULL,
    before_event TEXT NOT NULL,
    from_token   TEXT NOT NULL,
    to_token     TEXT,
    after_ts     INTEGER,
    created_at   INTEGER NOT NULL,
    FOREIGN KEY (user_id, room_id) REFERENCES rooms(user_id, room_id) ON DELETE CASCADE
);
CREATE INDEX history_gaps_room ON history_gaps(user_id, room_id);
