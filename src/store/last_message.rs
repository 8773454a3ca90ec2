//! The newest message of a room that still shows something (not deleted), for the
//! `lastMessage` of room objects: read when a room list is rendered, so it follows new
//! messages, edits (the row's content is re-sealed), redactions (a redacted row is skipped
//! and the one before it shows) and deletions without anything to keep in step.

use rusqlite::{Connection, OptionalExtension};

use super::messages::MessageRow;

/// The room's newest non-redacted message (`id`, `event_id`, `sender_id`, `ts`, `msgtype`,
/// `content_enc`, `is_mine`, `sender_enc` set). One range scan of the `messages_room_ts`
/// index from its newest end.
pub fn newest_shown(
    conn: &Connection,
    user_id: &str,
    room_id: &str,
) -> rusqlite::Result<Option<MessageRow>> {
    conn.prepare_cached(
        "SELECT id, event_id, sender_id, ts, msgtype, content_enc, is_mine, sender_enc \
         FROM messages WHERE user_id = ?1 AND room_id = ?2 AND redacted = 0 \
         ORDER BY ts DESC, event_id ASC LIMIT 1",
    )?
    .query_row([user_id, room_id], |r| {
        Ok(MessageRow {
            id: r.get(0)?,
            event_id: r.get(1)?,
            sender_id: r.get(2)?,
            ts: r.get(3)?,
            msgtype: r.get(4)?,
            content_enc: r.get(5)?,
            is_mine: r.get(6)?,
            sender_enc: r.get(7)?,
            user_id: user_id.to_owned(),
            room_id: room_id.to_owned(),
            ..MessageRow::default()
        })
    })
    .optional()
}
