//! `/api/keys/*`: the user's X25519 public key, its version and recovery material.
//! Native sessions only: personal API tokens are refused by the gate (not allowlisted).

use chrono::{DateTime, Utc};
use poem::web::Data;
use poem_openapi::param::{Header, Path};
use poem_openapi::payload::Json;
use poem_openapi::{Object, OpenApi};

use super::security::NativeAuth;
use super::views::opt_time;
use super::ApiTags;
use crate::error::AppError;
use crate::services::keys::{self, KeyChange};
use crate::services::Context;
use crate::state::AppState;

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct KeyRequest {
    /// Standard base64 of the 32-byte X25519 public key.
    pub public_key: String,
    /// Recovery material (opaque to the server): non-empty standard base64, at most 64 KiB
    /// decoded. Stored encrypted at rest; a new random 16-byte `salt` is generated each time
    /// it is stored.
    pub encrypted_master_key: Option<String>,
}

/// Result of registering or rotating keys.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct KeyVersionResult {
    pub message: String,
    /// Version of the key now registered: 1 for a user's first key, +1 per rotation; after a
    /// deletion numbering continues (a version never repeats for a user).
    pub key_version: i64,
}

/// Result of deleting keys.
#[derive(Debug, Object)]
pub struct KeyDeletionResult {
    pub message: String,
    /// What the deletion destroyed.
    pub warning: String,
}

/// The caller's key status.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct KeyInfoResult {
    pub has_keys: bool,
    /// Whether recovery material is stored (`GET /api/keys/recovery` answers 200).
    pub has_recovery_key: bool,
    /// Null without keys.
    #[oai(nullable)]
    pub key_version: Option<i64>,
    /// When the current key record was created (first registration; rotation keeps it);
    /// null without keys.
    #[oai(nullable)]
    pub created_at: Option<DateTime<Utc>>,
    /// Last registration or rotation; null without keys.
    #[oai(nullable)]
    pub updated_at: Option<DateTime<Utc>>,
}

/// Another user's public key.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct PublicKeyResult {
    /// Standard base64 X25519 public key.
    pub public_key: String,
    pub key_version: i64,
}

/// The caller's recovery material.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct RecoveryResult {
    /// Exactly the base64 value last stored.
    pub encrypted_master_key: String,
    /// Standard base64 of 16 random bytes the server generated when the material was stored.
    pub salt: String,
}

pub struct KeysApi;

#[OpenApi(prefix_path = "/api/keys", tag = "ApiTags::Keys")]
impl KeysApi {
    /// Register encryption keys
    ///
    /// Registers the caller's X25519 public key and optional recovery material. The first key
    /// of a user has `keyVersion` 1. 400 `keys_already_registered` when a key record exists
    /// (rotate with `PUT /api/keys`). Registering after `DELETE /api/keys` is allowed, makes
    /// the account usable again, and continues the numbering after the highest version the
    /// user ever had. 400 `invalid_request` for a key that is not standard base64 of 32 bytes
    /// or invalid recovery material. Not available to personal API tokens.
    #[oai(path = "/register", method = "post", operation_id = "keys_register")]
    async fn register(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        body: Json<KeyRequest>,
    ) -> Result<Json<KeyVersionResult>, AppError> {
        let message = "encryption keys registered";
        store_key(&state, &auth, body.0, KeyChange::Register, message).await
    }

    /// Rotate encryption keys
    ///
    /// Replaces the public key; `keyVersion` goes up by 1. New `encryptedMasterKey` replaces
    /// the stored recovery material (with a new salt); when omitted the stored material is
    /// kept. 404 `not_found` when no keys are registered (use `POST /api/keys/register`);
    /// 400 `invalid_request` on invalid input.
    #[oai(path = "/", method = "put", operation_id = "keys_rotate")]
    async fn rotate(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        body: Json<KeyRequest>,
    ) -> Result<Json<KeyVersionResult>, AppError> {
        let message = "encryption keys rotated";
        store_key(&state, &auth, body.0, KeyChange::Rotate, message).await
    }

    /// Delete encryption keys (crypto-shredding)
    ///
    /// Requires the header `X-Confirm-Key-Deletion: PERMANENTLY_DELETE_ALL_MY_MESSAGES`;
    /// without it, or with another value, 400 `confirmation_required`. At most one deletion
    /// per hour per user (429 `rate_limited` with Retry-After; survives restarts). 404
    /// `not_found` when no keys are registered. Deletes the key record and recovery material
    /// and replaces the user's data-encryption key: the account itself (e-mail, Matrix
    /// account, registered push devices) is re-encrypted and keeps working. Everything
    /// encrypted under the old key is deleted in the same transaction: stored messages,
    /// reminders and scheduled messages (pending ones are cancelled by the deletion; a send
    /// already in progress may still complete), and the names, avatars and topics of rooms,
    /// linked-group names and bridge profile details (the rooms, groups and logins stay,
    /// without them). Deleted rows are overwritten with zeros in the database file and the
    /// write-ahead log is checkpointed and truncated right after, so the old ciphertext is
    /// gone from the live files when this answers (unless a reader blocked the checkpoint
    /// for 5 s, which is logged; the WAL then holds it until its frames are reused or the
    /// server stops). **Backups are not touched:** a
    /// backup taken before the deletion (`switchboard backup`, a copy of the data
    /// directory, a filesystem snapshot) still holds all of that content and the old
    /// wrapped key, readable by whoever has that backup and `master.key`; delete such
    /// backups to complete the deletion. Until new keys are registered, content routes
    /// answer 409 `NO_SIGNING_KEY`. The Matrix access tokens handed to apps at sign-in are
    /// logged out on the homeserver (sessions stay signed in; `GET /api/accounts/active`
    /// hands out a new one).
    #[oai(path = "/", method = "delete", operation_id = "keys_delete")]
    async fn delete(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        /// Must be exactly `PERMANENTLY_DELETE_ALL_MY_MESSAGES` (required; 400
        /// `confirmation_required` otherwise).
        #[oai(name = "X-Confirm-Key-Deletion")]
        confirmation: Header<Option<String>>,
    ) -> Result<Json<KeyDeletionResult>, AppError> {
        keys::delete(&state, auth.user_id(), confirmation.0.as_deref()).await?;
        Ok(Json(KeyDeletionResult {
            message: "encryption keys deleted".to_owned(),
            warning: "all messages and content encrypted under your previous keys are deleted; \
                      backups made before now still hold them; register new keys to continue"
                .to_owned(),
        }))
    }

    /// Key status of the caller
    ///
    /// `hasKeys`, `hasRecoveryKey`, and `keyVersion`, `createdAt`, `updatedAt` of the key
    /// record (null when there is none).
    #[oai(path = "/info", method = "get", operation_id = "keys_info")]
    async fn info(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
    ) -> Result<Json<KeyInfoResult>, AppError> {
        let info = keys::info(&state, auth.user_id()).await?;
        Ok(Json(KeyInfoResult {
            has_keys: info.has_keys,
            has_recovery_key: info.has_recovery_key,
            key_version: info.key_version,
            created_at: opt_time(info.created_at),
            updated_at: opt_time(info.updated_at),
        }))
    }

    /// Public key of a user
    ///
    /// `targetUserId` is a user id (UUID) or that user's Matrix user id (`@localpart:server`,
    /// URL-encoded). 404 `not_found` when the user does not exist or has no keys registered.
    #[oai(
        path = "/public/:targetUserId",
        method = "get",
        operation_id = "keys_get_public"
    )]
    async fn public(
        &self,
        state: Data<&AppState>,
        _auth: NativeAuth,
        /// User id (UUID) or Matrix user id.
        #[oai(name = "targetUserId")]
        target_user_id: Path<String>,
    ) -> Result<Json<PublicKeyResult>, AppError> {
        let (public_key, key_version) = keys::public_key_of(&state, &target_user_id.0).await?;
        Ok(Json(PublicKeyResult {
            public_key,
            key_version,
        }))
    }

    /// Recovery material of the caller
    ///
    /// The stored `encryptedMasterKey` and its `salt` (16 random bytes, standard base64,
    /// generated by the server each time recovery material is stored). 404 `not_found` when
    /// no recovery material is stored.
    #[oai(path = "/recovery", method = "get", operation_id = "keys_get_recovery")]
    async fn recovery(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
    ) -> Result<Json<RecoveryResult>, AppError> {
        let (encrypted_master_key, salt) = keys::recovery(&state, auth.user_id()).await?;
        Ok(Json(RecoveryResult {
            encrypted_master_key,
            salt,
        }))
    }
}

/// Registering and rotating take the same request and answer alike with the new version;
/// only the kind of change and the message differ.
async fn store_key(
    state: &Context,
    auth: &NativeAuth,
    body: KeyRequest,
    change: KeyChange,
    message: &str,
) -> Result<Json<KeyVersionResult>, AppError> {
    let key_version = change
        .store(
            state,
            auth.user_id(),
            body.public_key,
            body.encrypted_master_key,
        )
        .await?;
    Ok(Json(KeyVersionResult {
        message: message.to_owned(),
        key_version,
    }))
}
