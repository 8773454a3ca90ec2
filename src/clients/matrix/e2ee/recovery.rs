//! Secret storage (SSSS) under a recovery key (docs/design.md): the key backup's key and the
//! private cross-signing keys, encrypted with a new `m.secret_storage.v1.aes-hmac-sha2`
//! key, go into the account data where Element and other clients look for them; the key
//! itself is returned once as the base58 recovery key and kept nowhere.

use matrix_sdk_crypto::secret_storage::SecretStorageKey;
use ruma::events::secret::request::SecretName;
use ruma::events::secret_storage::key::SecretStorageKeyEventContent;
use ruma::events::EventContentFromType;
use serde_json::{json, Value};

use super::{CrossSigningSeeds, E2eeError, UserCrypto};
use crate::clients::matrix::{encode, MatrixClient, MatrixError};

impl UserCrypto {
    /// Makes a new secret storage key, stores `backup_key` (base64) and the `seeds` given
    /// under it, makes it the default key, and returns the recovery key (base58).
    pub async fn new_secret_storage(
        &self,
        matrix: &MatrixClient,
        backup_key: &str,
        seeds: Option<&CrossSigningSeeds>,
    ) -> Result<String, E2eeError> {
        let key = SecretStorageKey::new();
        let mut secrets = vec![(
            SecretName::from("m.megolm_backup.v1"),
            backup_key.to_owned(),
        )];
        if let Some(s) = seeds {
            for (name, seed) in [
                ("m.cross_signing.master", &s.master),
                ("m.cross_signing.self_signing", &s.self_signing),
                ("m.cross_signing.user_signing", &s.user_signing),
            ] {
                if let Some(seed) = seed {
                    secrets.push((SecretName::from(name), seed.clone()));
                }
            }
        }
        let info = serde_json::to_value(key.event_content()).map_err(E2eeError::crypto)?;
        self.put_account_data(matrix, &key.event_type().to_string(), &info)
            .await?;
        for (name, secret) in secrets {
            let encrypted = key.encrypt(secret.into_bytes(), &name);
            let data = serde_json::to_value(&encrypted).map_err(E2eeError::crypto)?;
            let content = json!({ "encrypted": { key.key_id(): data } });
            self.put_account_data(matrix, name.as_str(), &content)
                .await?;
        }
        self.put_account_data(
            matrix,
            "m.secret_storage.default_key",
            &json!({ "key": key.key_id() }),
        )
        .await?;
        Ok(key.to_base58())
    }

    /// Whether `input` (a recovery key, or a passphrase when the key was made from one)
    /// opens the account's current default secret storage key: checked against the key's
    /// MAC in the account data, as Element does. False when the account has no secret
    /// storage or the input does not match.
    pub async fn opens_secret_storage(
        &self,
        matrix: &MatrixClient,
        input: &str,
    ) -> Result<bool, E2eeError> {
        let Some(default) = self
            .account_data(matrix, "m.secret_storage.default_key")
            .await?
        else {
            return Ok(false);
        };
        let Some(key_id) = default["key"].as_str() else {
            return Ok(false);
        };
        let kind = format!("m.secret_storage.key.{key_id}");
        let Some(info) = self.account_data(matrix, &kind).await? else {
            return Ok(false);
        };
        let raw = serde_json::value::to_raw_value(&info).map_err(E2eeError::crypto)?;
        let Ok(content) = SecretStorageKeyEventContent::from_parts(&kind, &raw) else {
            return Ok(false);
        };
        let input = input.to_owned();
        // A passphrase key runs PBKDF2 (its iteration count is the account data's): off
        // the async workers.
        tokio::task::spawn_blocking(move || {
            SecretStorageKey::from_account_data(&input, content).is_ok()
        })
        .await
        .map_err(E2eeError::crypto)
    }

    /// One account data event of the user; `None` when it is not set.
    async fn account_data(
        &self,
        matrix: &MatrixClient,
        kind: &str,
    ) -> Result<Option<Value>, E2eeError> {
        let path = format!(
            "user/{}/account_data/{}",
            encode(self.machine.user_id().as_str()),
            encode(kind)
        );
        match matrix.get_json(&self.token(), &path).await {
            Ok(v) => Ok(Some(v)),
            Err(MatrixError::Http { status: 404, .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    async fn put_account_data(
        &self,
        matrix: &MatrixClient,
        kind: &str,
        content: &Value,
    ) -> Result<(), E2eeError> {
        let path = format!(
            "user/{}/account_data/{}",
            encode(self.machine.user_id().as_str()),
            encode(kind)
        );
        matrix
            .call_json(reqwest::Method::PUT, &self.token(), &path, content)
            .await?;
        Ok(())
    }
}
