-- The trusted sync device (issue #25; docs/design.md): what must outlive the crypto store.
-- `cross_signing_enc`: the private cross-signing keys (JSON of the three seeds), sealed under
-- the user's data key; `cross_signing_ours`: Switchboard made the account's cross-signing
-- (only then may it reset it when the private keys are lost). `backup_key_enc`: the key
-- backup's decryption key (base64), sealed under the data key, for `backup_version`.
-- `backup_delete_version`: a version `DELETE /api/keys` forgot that is still to be deleted on
-- the homeserver. `recovery_key_shown`: the recovery key was handed out (never stored).
CREATE TABLE e2ee_trust (
    user_id               TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    cross_signing_enc     BLOB,
    cross_signing_ours    INTEGER NOT NULL DEFAULT 0,
    backup_version        TEXT,
    backup_key_enc        BLOB,
    backup_delete_version TEXT,
    recovery_key_shown    INTEGER NOT NULL DEFAULT 0,
    last_error            TEXT,
    updated_at            INTEGER NOT NULL
);
