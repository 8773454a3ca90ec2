-- Rich messages (issue #23; docs/design.md): when a message was last edited, and the
-- `m.reaction` annotations of messages.
--
-- messages.edited_at: origin time (ms) of the edit (`m.replace`) applied last; NULL when
-- never edited.
ALTER TABLE messages ADD COLUMN edited_at INTEGER;

-- reactions: one row per `m.reaction` event the user's sync saw (or the user sent); a
-- redacted reaction is deleted. `key_enc` is the annotation key (an emoji or short text),
-- sealed under the owner's data key (AAD: reactions, key, "{user_id}/{event_id}").
CREATE TABLE reactions (
    user_id          TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    event_id         TEXT NOT NULL,            -- the m.reaction event
    room_id          TEXT NOT NULL,
    target_event_id  TEXT NOT NULL,            -- the message it annotates
    sender_id        TEXT NOT NULL,
    key_enc          BLOB NOT NULL,
    ts               INTEGER NOT NULL,         -- ms
    PRIMARY KEY (user_id, event_id)
) WITHOUT ROWID;
CREATE INDEX reactions_target ON reactions(user_id, target_event_id);
