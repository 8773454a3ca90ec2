-- Whether a room is end-to-end encrypted (it has m.room.encryption state; this cannot be
-- turned off again in Matrix). Room list and detail report it.
ALTER TABLE rooms ADD COLUMN encrypted INTEGER NOT NULL DEFAULT 0;
