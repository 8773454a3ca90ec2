//! Each user's sync device as an end-to-end encryption device (docs/design.md): opening its
//! machine (and replacing the device when a destroyed store left its keys on the
//! homeserver), sending into encrypted rooms, and destroying the crypto store on key
//! deletion and account removal.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::Value;

use super::matrix_sessions::matrix_password;
use super::upstream::homeserver_error;
use super::users;
use crate::clients::matrix::e2ee::{
    self, E2eeError, EncryptionSettings, Identity, Opened, UserCrypto,
};
use crate::clients::matrix::{MatrixClient, MatrixError};
use crate::clock::unix_now;
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::Context;
use crate::store::users::UserRow;

/// How long a homeserver's "not encrypted" answer stands for sends (see [`plain_rooms`]).
const PLAIN_FOR: Duration = Duration::from_secs(3600);
/// HKDF label of the crypto store key (derived from the user's data key).
const STORE_KEY_LABEL: &str = "switchboard/v1/matrix-crypto-store";

pub fn error(e: E2eeError) -> AppError {
    match e {
        E2eeError::Matrix(e) => homeserver_error(e),
        other => {
            tracing::warn!(error = %other, "end-to-end encryption failed");
            AppError::Unavailable {
                code: ErrorCode::EncryptionUnavailable,
                message: "end-to-end encryption for this room failed; nothing was sent".into(),
                retry_after_secs: None,
            }
        }
    }
}

/// The user's machine; `None` without a homeserver or a Matrix account. Replaces the
/// sync device once when its keys on the homeserver belong to a destroyed store.
pub async fn machine_for(state: &Context, user: &UserRow) -> AppResult<Option<Arc<UserCrypto>>> {
    let Some(matrix) = &state.matrix else {
        return Ok(None);
    };
    let mut user = user.clone();
    // Whether `user` was read after the last replacement of the sync device finished.
    let mut fresh = false;
    for _ in 0..3 {
        let (Some(token), Some(mxid)) = (
            users::matrix_token_of(&state.master, &user)?,
            user.matrix_user_id.clone(),
        ) else {
            return Ok(None);
        };
        let key = users::data_key(&state.master, &user)?.derive(STORE_KEY_LABEL);
        if let Some(device_id) = user.matrix_device_id.clone() {
            let id = Identity {
                user_id: &user.id,
                matrix_user_id: &mxid,
                device_id: &device_id,
                token: &token,
                store_key: &key,
            };
            match state.e2ee.open(matrix, &id, fresh).await.map_err(error)? {
                Opened::Ready(crypto) => return Ok(Some(crypto)),
                Opened::DeviceTaken => {}
                Opened::Stale => {
                    // Another sync device was opened since `user` was read: wait for a
                    // replacement under way, then read the user again.
                    drop(state.e2ee.rotation_lock().await);
                    user = crate::services::users::load(state, &user.id).await?;
                    fresh = true;
                    continue;
                }
            }
        }
        user = replace_sync_device(state, matrix, &user, &token, &mxid).await?;
        fresh = true;
    }
    Err(error(E2eeError::Crypto(
        "the new sync device was refused as well".into(),
    )))
}

/// Logs in a new sync device, stores its token and id, and logs the old one out (which
/// removes its keys from the homeserver). Serialised so that the sync worker and a send
/// never both replace it.
async fn replace_sync_device(
    state: &Context,
    matrix: &MatrixClient,
    user: &UserRow,
    old_token: &str,
    mxid: &str,
) -> AppResult<UserRow> {
    let _guard = state.e2ee.rotation_lock().await;
    let current = crate::services::users::load(state, &user.id).await?;
    if current.matrix_device_id != user.matrix_device_id {
        return Ok(current); // replaced meanwhile
    }
    let password = matrix_password(&state.master, &user.id);
    let session = matrix
        .login_device(mxid, &password, "Switchboard")
        .await
        .map_err(homeserver_error)?;
    let master = state.master.clone();
    let uid = user.id.clone();
    let row = state
        .store
        .run(move |c| {
            let tx = c.transaction()?;
            let mut row = crate::services::users::load_row(&tx, &uid)?;
            row.matrix_access_token_enc = Some(users::seal_matrix_token(
                &master,
                &row,
                &session.access_token,
            )?);
            row.matrix_device_id = session.device_id;
            row.updated_at = unix_now() as i64;
            crate::store::users::set_matrix_account(&tx, &row)?;
            tx.commit()?;
            Ok::<_, AppError>(row)
        })
        .await?;
    tracing::info!(user_id = %user.id, device_id = ?row.matrix_device_id, "new sync device for end-to-end encryption");
    if let Err(e) = matrix.logout(old_token).await {
        tracing::warn!(user_id = %user.id, error = %e, "could not log the old sync device out");
    }
    Ok(row)
}

/// One event to send into a room.
pub struct Outgoing<'a> {
    pub room_id: &'a str,
    /// Homeserver transaction id (idempotency per access token).
    pub txn_id: &'a str,
    pub event_type: &'a str,
    pub content: &'a Value,
}

/// Why a send failed: the homeserver's answer, or encryption (nothing was sent then).
#[derive(Debug)]
pub enum SendFailure {
    Homeserver(MatrixError),
    Encryption(AppError),
}

impl SendFailure {
    pub fn into_app_error(self) -> AppError {
        match self {
            Self::Homeserver(e) => homeserver_error(e),
            Self::Encryption(e) => e,
        }
    }
}

/// Sends one event as `user_id`'s sync device (`token`), encrypted when the room is (see
/// [`route`]). Room keys go to every joined member's devices. Returns the event id.
pub async fn send_event(
    state: &Context,
    matrix: &MatrixClient,
    user_id: &str,
    token: &str,
    out: &Outgoing<'_>,
) -> Result<String, SendFailure> {
    let (crypto, settings, members) =
        match route(state, matrix, user_id, token, out.room_id).await? {
            Route::Plain => {
                return matrix
                    .send_event(token, out.room_id, out.event_type, out.txn_id, out.content)
                    .await
                    .map_err(SendFailure::Homeserver)
            }
            Route::Encrypted(crypto, settings, members) => (crypto, settings, members),
        };
    let token = crypto.token();
    let members = match members {
        Some(m) => m,
        None => matrix
            .joined_members(&token, out.room_id)
            .await
            .map_err(SendFailure::Homeserver)?,
    };
    let encrypted = crypto
        .encrypt(
            matrix,
            out.room_id,
            &members,
            settings,
            out.event_type,
            out.content,
        )
        .await
        .map_err(|e| match e {
            E2eeError::Matrix(e) => SendFailure::Homeserver(e),
            other => SendFailure::Encryption(error(other)),
        })?;
    matrix
        .send_event(
            &token,
            out.room_id,
            "m.room.encrypted",
            out.txn_id,
            &encrypted,
        )
        .await
        .map_err(SendFailure::Homeserver)
}

/// Whether sends into the room are encrypted (the same decision [`send_event`] makes):
/// attachments for it are encrypted before they are uploaded.
pub async fn room_is_encrypted(
    state: &Context,
    matrix: &MatrixClient,
    user_id: &str,
    token: &str,
    room_id: &str,
) -> AppResult<bool> {
    match route(state, matrix, user_id, token, room_id).await {
        Ok(Route::Plain) => Ok(false),
        Ok(Route::Encrypted(..)) => Ok(true),
        Err(e) => Err(e.into_app_error()),
    }
}

/// How a send into a room goes out: in the clear, or encrypted with the room's settings
/// for its joined members (`None`: not stored, ask the homeserver).
enum Route {
    Plain,
    Encrypted(Arc<UserCrypto>, EncryptionSettings, Option<Vec<String>>),
}

/// Rooms the homeserver said were not encrypted, per (user, room). The stored `encrypted`
/// flag of a room may predate encryption tracking (rooms synced before it default to
/// not encrypted), so a room counts as plain only once the homeserver said so in this
/// process; a room that turns encrypted later is seen by the sync first (its flag and
/// the crypto store's settings are read before this).
fn plain_rooms() -> &'static moka::sync::Cache<(String, String), ()> {
    static PLAIN: OnceLock<moka::sync::Cache<(String, String), ()>> = OnceLock::new();
    PLAIN.get_or_init(|| {
        moka::sync::Cache::builder()
            .max_capacity(100_000)
            .time_to_live(PLAIN_FOR)
            .build()
    })
}

/// Whether the room is encrypted, from what the sync saw (the room's stored flag and
/// members, the `m.room.encryption` settings in the crypto store: once encrypted, always
/// encrypted). The homeserver is asked only about a room the sync has not told about;
/// an encrypted room never gets a message in the clear (503 `encryption_unavailable`).
async fn route(
    state: &Context,
    matrix: &MatrixClient,
    user_id: &str,
    token: &str,
    room_id: &str,
) -> Result<Route, SendFailure> {
    let (flagged, members) = what_the_sync_saw(state, user_id, room_id).await?;
    let key = (user_id.to_owned(), room_id.to_owned());
    if !flagged && plain_rooms().contains_key(&key) {
        return Ok(Route::Plain);
    }
    let crypto = match machine_for_id(state, user_id).await {
        Ok(c) => Some(c),
        // A plain room can still be written to; an encrypted one cannot.
        Err(e) if !flagged => {
            tracing::warn!(%user_id, error = %e, "crypto machine unavailable; asking whether the room is encrypted");
            None
        }
        Err(e) => return Err(SendFailure::Encryption(e)),
    };
    if let Some(c) = &crypto {
        let known = c
            .encryption_of(room_id)
            .await
            .map_err(|e| SendFailure::Encryption(error(e)))?;
        if let Some(settings) = known {
            return Ok(Route::Encrypted(c.clone(), settings, members));
        }
    }
    tracing::info!(%user_id, %room_id, "asked the homeserver whether the room is encrypted");
    let content = match e2ee::room_encryption(matrix, token, room_id).await {
        Ok(c) => c,
        Err(E2eeError::Matrix(e)) => return Err(SendFailure::Homeserver(e)),
        Err(e) => return Err(SendFailure::Encryption(error(e))),
    };
    let unavailable = |why: &str| SendFailure::Encryption(error(E2eeError::Crypto(why.into())));
    match (content, crypto) {
        (Some(content), Some(c)) => {
            c.remember_encryption(room_id, &content).await;
            match c.encryption_of(room_id).await {
                Ok(Some(settings)) => Ok(Route::Encrypted(c, settings, members)),
                _ => Err(unavailable("unusable m.room.encryption")),
            }
        }
        (Some(_), None) => Err(unavailable("no crypto machine")),
        (None, _) if flagged => Err(unavailable("encrypted room without encryption state")),
        (None, _) => {
            plain_rooms().insert(key, ());
            Ok(Route::Plain)
        }
    }
}

/// The room's stored encryption flag and, when the user has joined it, its members as
/// the sync stored them (`None`: not known).
async fn what_the_sync_saw(
    state: &Context,
    user_id: &str,
    room_id: &str,
) -> Result<(bool, Option<Vec<String>>), SendFailure> {
    let (uid, rid) = (user_id.to_owned(), room_id.to_owned());
    let (flagged, members) = state
        .store
        .run(move |c| {
            let row = crate::store::rooms::find(c, &uid, &rid)?;
            let members = match &row {
                Some(r) if r.membership == "join" => crate::store::rooms::members(c, &uid, &rid)?,
                _ => Vec::new(),
            };
            Ok::<_, AppError>((row.is_some_and(|r| r.encrypted), members))
        })
        .await
        .map_err(SendFailure::Encryption)?;
    Ok((flagged, (!members.is_empty()).then_some(members)))
}

async fn machine_for_id(state: &Context, user_id: &str) -> AppResult<Arc<UserCrypto>> {
    let uid = user_id.to_owned();
    let user = crate::services::users::load(state, &uid).await?;
    machine_for(state, &user)
        .await?
        .ok_or_else(|| error(E2eeError::Crypto("no Matrix account".into())))
}

/// Destroys the user's crypto store (key deletion, account removal). The sync device's
/// keys on the homeserver are replaced with a new device when the machine is next needed.
pub async fn destroy(state: &Context, user_id: &str) {
    match state.e2ee.destroy(user_id).await {
        Ok(true) => tracing::info!(%user_id, "crypto store destroyed"),
        Ok(false) => {}
        Err(e) => tracing::warn!(%user_id, error = %e, "could not remove the crypto store"),
    }
}
