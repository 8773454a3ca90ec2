-- Who said what (issue #38): senders' display names and avatars.
--
-- member_profiles: each room member's display name and avatar (`m.room.member` content
-- `displayname`, `avatar_url`) as the user's sync last saw it, one row per member ever seen
-- joined (kept after the member leaves, so their old messages still have a name). The
-- profile is sealed JSON `{"name", "avatar"}` under the owner's data key (AAD:
-- member_profiles, profile, "{user_id}/{room_id}/{member_id}").
CREATE TABLE member_profiles (
    user_id      TEXT NOT NULL,
    room_id      TEXT NOT NULL,
    member_id    TEXT NOT NULL,
    profile_enc  BLOB NOT NULL,
    PRIMARY KEY (user_id, room_id, member_id),
    FOREIGN KEY (user_id, room_id) REFERENCES rooms(user_id, room_id) ON DELETE CASCADE
) WITHOUT ROWID;

-- messages.sender_enc: the sender's profile as it was when the message was stored (the
-- member state in force at that point of the timeline), the same sealed JSON (AAD:
-- messages, sender, id). NULL for messages stored before this migration: they show the
-- member's stored profile instead.
ALTER TABLE messages ADD COLUMN sender_enc BLOB;
