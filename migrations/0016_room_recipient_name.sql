-- The direct partner's display name of a room (issue #22: `sealedMeta.recipientName`), sealed
-- under the user's data key like the room's name, topic and avatar; null when unknown.
ALTER TABLE rooms ADD COLUMN recipient_name_enc BLOB;
