-- Issue #21: the keyed hashes of Message-IDs, subjects and locations (email_messages.key_hash,
-- email_thread_refs.ref_hash) are HMACs under a sub-key derived (HKDF) from the user's data key
-- (version 2), no longer under the data key itself, which also seals (AEAD). Accounts cached
-- under version 1 are rehashed from their sealed headers when their sync next loads them
-- (services::email::rekey); this column says which version an account's hashes are.
ALTER TABLE email_accounts ADD COLUMN refs_version INTEGER NOT NULL DEFAULT 1;
-- The account's last failure (the mail server's words) sealed under the user's data key; the
-- plaintext `error` column is emptied (version 2 seals what an account still had there).
ALTER TABLE email_accounts ADD COLUMN error_enc BLOB;
