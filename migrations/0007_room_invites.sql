-- Who invited the user to a room still in membership 'invite'. The sync worker joins
-- invitations from the configured bridge bots and their ghosts only (also after a restart,
-- from this column); other invitations wait for the user to accept or decline them.
ALTER TABLE rooms ADD COLUMN invited_by TEXT;
