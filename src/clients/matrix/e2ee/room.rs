//! What the sync worker and the send paths ask of a user's machine: feed it a sync
//! response's to-device part, decrypt timeline events, and encrypt for a room after
//! sharing its room key with every joined member's devices.

use std::collections::BTreeMap;
use std::ops::Deref;
use std::time::Duration;

use matrix_sdk_crypto::store::types::RoomSettings;
use matrix_sdk_crypto::types::events::room::encrypted::EncryptedEvent;
use matrix_sdk_crypto::vodozemac::megolm::DecryptionError;
use matrix_sdk_crypto::{CollectStrategy, EncryptionSettings, EncryptionSyncChanges, MegolmError};
use ruma::api::client::keys::get_keys;
use ruma::api::client::sync::sync_events::DeviceLists;
use ruma::events::room::encryption::RoomEncryptionEventContent;
use ruma::events::room::history_visibility::HistoryVisibility;
use ruma::serde::Raw;
use ruma::{OwnedRoomId, OwnedUserId, RoomId, UInt};
use serde_json::{json, Value};

use super::{E2eeError, UserCrypto};
use crate::clients::matrix::{encode, MatrixClient, MatrixError};

/// The end-to-end encryption part of one `/sync` response, as received.
#[derive(Debug, Default)]
pub struct SyncCrypto<'a> {
    pub to_device: &'a [Value],
    pub device_lists: &'a Value,
    pub one_time_keys_count: &'a Value,
    pub unused_fallback_key_types: Option<&'a Value>,
    pub next_batch: &'a str,
}

/// The one-time key counts and unused fallback key types of a sync response, as sent.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct KeyCounts {
    one_time: Value,
    fallback: Option<Value>,
}

impl KeyCounts {
    fn of(s: &SyncCrypto<'_>) -> Self {
        Self {
            one_time: s.one_time_keys_count.clone(),
            fallback: s.unused_fallback_key_types.cloned(),
        }
    }
}

fn raw<T>(v: &Value) -> Option<Raw<T>> {
    serde_json::value::to_raw_value(v).ok().map(Raw::from_json)
}

/// The room's `m.room.encryption` content as the homeserver has it now, or `None` for a
/// room without encryption. Asked only for a room the sync has not told about yet (see
/// `services::e2ee`).
pub async fn room_encryption(
    matrix: &MatrixClient,
    token: &str,
    room_id: &str,
) -> Result<Option<Value>, E2eeError> {
    let path = format!("rooms/{}/state/m.room.encryption/", encode(room_id));
    match matrix.get_json(token, &path).await {
        Ok(v) => Ok(Some(v)),
        Err(MatrixError::Http { status: 404, .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// What the crypto store keeps of an `m.room.encryption` content: the algorithm and the
/// room's megolm rotation (`rotation_period_ms`, `rotation_period_msgs`).
fn room_settings(content: &Value) -> Result<RoomSettings, E2eeError> {
    let content: RoomEncryptionEventContent =
        serde_json::from_value(content.clone()).map_err(E2eeError::crypto)?;
    Ok(RoomSettings {
        algorithm: content.algorithm.as_str().into(),
        only_allow_trusted_devices: false,
        session_rotation_period: content
            .rotation_period_ms
            .map(|ms| Duration::from_millis(ms.into())),
        session_rotation_period_messages: content
            .rotation_period_msgs
            .and_then(|n| usize::try_from(u64::from(n)).ok()),
    })
}

/// How a room key of a room with `settings` is made and shared.
fn encryption_settings(settings: &RoomSettings) -> EncryptionSettings {
    let mut out = EncryptionSettings {
        algorithm: settings.algorithm.clone(),
        // Shared with every joined member's devices, verified or not, as Element does.
        history_visibility: HistoryVisibility::Shared,
        sharing_strategy: CollectStrategy::AllDevices,
        ..EncryptionSettings::default()
    };
    if let Some(period) = settings.session_rotation_period {
        out.rotation_period = period;
    }
    if let Some(n) = settings.session_rotation_period_messages {
        out.rotation_period_msgs = n as u64;
    }
    out
}

/// Whether decryption failed for want of the room key (or of its earlier part).
fn missing_key(e: &MegolmError) -> bool {
    matches!(
        e,
        MegolmError::MissingRoomKey(_)
            | MegolmError::Decryption(DecryptionError::UnknownMessageIndex(..))
    )
}

impl UserCrypto {
    /// Feeds to-device events (room keys arrive here), device list changes and key counts
    /// to the machine; returns the rooms for which new room keys arrived. Call before the
    /// sync position is stored: to-device events are delivered only once.
    ///
    /// A response with no to-device event, no device change and the key counts of the
    /// last one fed is not fed while the machine is at rest (nothing sent or queued since,
    /// no verification open): the crate would only store the account again, and loading
    /// its pickle back recomputes every one-time key's public key (about a millisecond
    /// of CPU per empty long poll or typing notice, most of an idle server's CPU).
    pub async fn receive_sync(&self, s: &SyncCrypto<'_>) -> Result<Vec<String>, E2eeError> {
        let to_device_events: Vec<_> = s.to_device.iter().filter_map(raw).collect();
        let changed_devices: DeviceLists =
            serde_json::from_value(s.device_lists.clone()).unwrap_or_default();
        let counts = KeyCounts::of(s);
        let nothing_new = to_device_events.is_empty()
            && changed_devices.changed.is_empty()
            && changed_devices.left.is_empty();
        if nothing_new && self.at_rest_with(&counts) {
            return Ok(Vec::new());
        }
        self.leave_rest();

        let one_time_keys_counts: BTreeMap<ruma::OneTimeKeyAlgorithm, UInt> =
            serde_json::from_value(s.one_time_keys_count.clone()).unwrap_or_default();
        let fallback: Option<Vec<ruma::OneTimeKeyAlgorithm>> = s
            .unused_fallback_key_types
            .and_then(|v| serde_json::from_value(v.clone()).ok());
        let changes = EncryptionSyncChanges {
            to_device_events,
            changed_devices: &changed_devices,
            one_time_keys_counts: &one_time_keys_counts,
            unused_fallback_keys: fallback.as_deref(),
            next_batch_token: Some(s.next_batch.to_owned()),
        };
        let (events, keys) = self
            .machine
            .receive_sync_changes(changes, &Self::decryption_settings())
            .await
            .map_err(E2eeError::crypto)?;
        self.note_verification_events(events.iter().map(|e| e.as_raw()));
        if !changed_devices.changed.is_empty() {
            // Tracked users among them are queried by the next `process_outgoing`.
            tracing::info!(user_id = %self.user_id, changed = ?changed_devices.changed, "device lists changed");
        }
        if nothing_new && events.is_empty() && keys.is_empty() {
            // At rest from here until the machine has something to send or to settle.
            *self.at_rest.lock().unwrap_or_else(|p| p.into_inner()) = Some(counts);
        }
        let mut rooms: Vec<String> = keys.into_iter().map(|k| k.room_id.to_string()).collect();
        rooms.sort();
        rooms.dedup();
        Ok(rooms)
    }

    /// Whether the machine is at rest with the same key counts and no verification is
    /// open (the crate expires open ones when it is fed).
    fn at_rest_with(&self, counts: &KeyCounts) -> bool {
        let same = self
            .at_rest
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .is_some_and(|c| c == counts);
        same && self.verifications.all_settled()
    }

    /// The next response is fed whatever it holds: the machine has something to do
    /// (called when it has requests to send, and before each feeding).
    pub(super) fn leave_rest(&self) {
        *self.at_rest.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// Decrypts one `m.room.encrypted` event of `room_id` (the event as the homeserver
    /// sent it); returns the plaintext event's type and content, or `None` while its room
    /// key is missing (or it cannot be decrypted at all).
    pub async fn decrypt(&self, room_id: &str, event: &Value) -> Option<(String, Value)> {
        let room = RoomId::parse(room_id).ok()?;
        let encrypted: Raw<EncryptedEvent> = raw(event)?;
        let decrypted = match self
            .machine
            .decrypt_room_event(&encrypted, &room, &Self::decryption_settings())
            .await
        {
            Ok(d) => d,
            Err(e) => {
                tracing::debug!(user_id = %self.user_id, %room_id, event_id = ?event["event_id"], error = %e, "cannot decrypt (yet)");
                if missing_key(&e) {
                    self.request_key(&room, &encrypted).await;
                }
                return None;
            }
        };
        let plain: Value = serde_json::from_str(decrypted.event.json().get()).ok()?;
        let kind = plain["type"].as_str()?.to_owned();
        let mut content = plain.get("content").cloned().unwrap_or_else(|| json!({}));
        // Relations (edits, replies) may travel in the clear part only.
        if let (Some(obj), Some(rel)) = (
            content.as_object_mut(),
            event["content"].get("m.relates_to"),
        ) {
            obj.entry("m.relates_to").or_insert_with(|| rel.clone());
        }
        Some((kind, content))
    }

    /// Asks the user's other devices for a missing room key (`m.room_key_request`, sent by
    /// the next [`UserCrypto::process_outgoing`]), once per session and process. The crate
    /// accepts the `m.forwarded_room_key` answer from the user's own verified devices only;
    /// the sender's re-shares (`m.room_key`) arrive as to-device events anyway.
    async fn request_key(&self, room: &RoomId, event: &Raw<EncryptedEvent>) {
        let session = event
            .get_field::<Value>("content")
            .ok()
            .flatten()
            .and_then(|c| c["session_id"].as_str().map(str::to_owned));
        let Some(session) = session else { return };
        {
            let Ok(mut asked) = self.key_requests.lock() else {
                return;
            };
            if !asked.insert((room.to_string(), session.clone())) {
                return;
            }
        }
        self.trust.want(room.as_str(), &session);
        match self.machine.request_room_key(event, room).await {
            // Queued in the store: `outgoing_requests` hands it out until marked sent.
            Ok(_) => {
                tracing::info!(user_id = %self.user_id, room_id = %room, session_id = %session, "requested a missing room key")
            }
            Err(e) => {
                tracing::debug!(user_id = %self.user_id, room_id = %room, error = %e, "cannot request the room key")
            }
        }
    }

    /// Keeps `room_id`'s `m.room.encryption` content (from the sync, or asked of the
    /// homeserver) in the crypto store: a room once encrypted stays encrypted. The first
    /// content stays: the crate refuses changed settings as a possible downgrade.
    pub async fn remember_encryption(&self, room_id: &str, content: &Value) {
        let (Ok(room), Ok(settings)) = (RoomId::parse(room_id), room_settings(content)) else {
            tracing::warn!(user_id = %self.user_id, %room_id, "unusable m.room.encryption content");
            return;
        };
        if let Err(e) = self.machine.set_room_settings(&room, &settings).await {
            tracing::info!(user_id = %self.user_id, %room_id, error = %e, "room encryption settings kept as first seen");
        }
    }

    /// The room's encryption as remembered ([`UserCrypto::remember_encryption`]).
    pub async fn encryption_of(
        &self,
        room_id: &str,
    ) -> Result<Option<EncryptionSettings>, E2eeError> {
        let room = RoomId::parse(room_id).map_err(E2eeError::crypto)?;
        let settings = self
            .machine
            .room_settings(&room)
            .await
            .map_err(E2eeError::store)?;
        Ok(settings.as_ref().map(encryption_settings))
    }

    /// Tracks the device lists of `users` (members of encrypted rooms): their devices are
    /// queried by the next [`UserCrypto::process_outgoing`] and again whenever the sync
    /// says they changed, so a member's new device gets the room key on the next send.
    pub async fn track_users(&self, users: &[String]) -> Result<(), E2eeError> {
        let owned: Vec<OwnedUserId> = users
            .iter()
            .filter_map(|m| OwnedUserId::try_from(m.as_str()).ok())
            .collect();
        self.machine
            .update_tracked_users(owned.iter().map(Deref::deref))
            .await
            .map_err(E2eeError::store)
    }

    /// Encrypts `content` for `room_id`: tracks `members`, fetches their device lists,
    /// opens Olm sessions where missing, shares the room key (a new one when the room's
    /// rotation settings say so) and returns the `m.room.encrypted` content to send.
    ///
    /// Boxed as `Send` here: the machine's iterator arguments otherwise leave the caller's
    /// future with a lifetime the compiler cannot prove `Send` for (rust#102211).
    pub fn encrypt<'a>(
        &'a self,
        matrix: &'a MatrixClient,
        room_id: &'a str,
        members: &'a [String],
        settings: EncryptionSettings,
        event_type: &'a str,
        content: &'a Value,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Value, E2eeError>> + Send + 'a>>
    {
        Box::pin(self.encrypt_inner(matrix, room_id, members, settings, event_type, content))
    }

    async fn encrypt_inner(
        &self,
        matrix: &MatrixClient,
        room_id: &str,
        members: &[String],
        settings: EncryptionSettings,
        event_type: &str,
        content: &Value,
    ) -> Result<Value, E2eeError> {
        let room = OwnedRoomId::try_from(room_id).map_err(E2eeError::crypto)?;
        let owned: Vec<OwnedUserId> = members
            .iter()
            .filter_map(|m| OwnedUserId::try_from(m.as_str()).ok())
            .collect();
        self.track_users(members).await?;
        let _share = self.share_lock.lock().await;
        // Device lists of newly tracked or changed users (keys/query).
        self.process_outgoing(matrix).await?;
        if let Some((id, claim)) = self
            .machine
            .get_missing_sessions(owned.iter().map(Deref::deref))
            .await
            .map_err(E2eeError::store)?
        {
            self.keys_claim(matrix, &id, &claim).await?;
        }
        let requests = self
            .machine
            .share_room_key(&room, owned.iter().map(Deref::deref), settings)
            .await
            .map_err(E2eeError::crypto)?;
        for request in requests {
            self.to_device(matrix, &request).await?;
        }
        let raw_content = raw(content).ok_or_else(|| E2eeError::Crypto("content".into()))?;
        let encrypted = self
            .machine
            .encrypt_room_event_raw(&room, event_type, &raw_content)
            .await
            .map_err(E2eeError::crypto)?;
        serde_json::from_str(encrypted.content.json().get()).map_err(E2eeError::crypto)
    }

    /// Whether the homeserver already lists keys for this device (asked when the store is
    /// new: a device cannot publish a second identity).
    pub(super) async fn device_taken(&self, matrix: &MatrixClient) -> Result<bool, E2eeError> {
        let me = self.machine.user_id().to_string();
        let body = json!({"device_keys": {&me: [&self.device_id]}});
        let resp: get_keys::v3::Response = self
            .call(matrix, reqwest::Method::POST, "keys/query", &body)
            .await?;
        let ours = self.machine.identity_keys().ed25519.to_base64();
        let listed = resp
            .device_keys
            .get(self.machine.user_id())
            .and_then(|devices| devices.get(self.machine.device_id()));
        Ok(match listed {
            None => false,
            Some(keys) => {
                let keys: Value = serde_json::from_str(keys.json().get()).unwrap_or_default();
                let key_id = format!("ed25519:{}", self.device_id);
                keys["keys"][&key_id].as_str() != Some(ours.as_str())
            }
        })
    }
}

#[cfg(test)]
#[path = "room_tests.rs"]
mod tests;
