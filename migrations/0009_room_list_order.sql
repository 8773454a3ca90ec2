-- Room list pages read in index order: one index per sort order of `GET /api/rooms`
-- (pinned first, then the order's key, then recency, then the room id; see
-- store::rooms::list_page), so a page reads `limit` rows instead of sorting all of the
-- user's rooms. They replace rooms_recent, whose columns they start with.
DROP INDEX IF EXISTS rooms_recent;
CREATE INDEX rooms_page_recent ON rooms(user_id, archived, pinned DESC,
    COALESCE(last_message_ts, created_at * 1000) DESC, room_id);
CREATE INDEX rooms_page_importance ON rooms(user_id, archived, pinned DESC, importance DESC,
    COALESCE(last_message_ts, created_at * 1000) DESC, room_id);
CREATE INDEX rooms_page_unread ON rooms(user_id, archived, pinned DESC, unread_count DESC,
    COALESCE(last_message_ts, created_at * 1000) DESC, room_id);
