-- Issue #21: a mailbox (label) name is private ("Lawyer – divorce", "Job applications/Acme").
-- `name_enc` holds it sealed under the owner's data key (AAD: email_mailboxes, name, row id);
-- `name_hash` is its keyed hash (HMAC-SHA256 under a sub-key HKDF-derived from the data key,
-- label `switchboard-email-mailbox-name-v1`; per user, case-sensitive like IMAP names): what
-- SQL compares, groups and keeps unique. The old `name` column (NOT NULL, UNIQUE with the
-- account) keeps no name: it is set to the row's own id. Rows from before are sealed once at
-- start (services::email::mailboxes::seal_legacy_at_start), then the WAL is truncated.
ALTER TABLE email_mailboxes ADD COLUMN name_enc BLOB;
ALTER TABLE email_mailboxes ADD COLUMN name_hash TEXT;
CREATE UNIQUE INDEX email_mailboxes_name_hash ON email_mailboxes(account_id, name_hash);
