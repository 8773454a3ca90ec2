//! `sealedMeta` of native room objects (docs/design.md): the room's readable name, topic and
//! avatar and the direct partner's display name, as one JSON document sealed to the user's
//! registered X25519 key with the envelope of `crypto::envelope` (docs/api.md). Native
//! clients otherwise see no readable name at all; personal tokens get the fields in the
//! clear instead and no `sealedMeta`.
//!
//! One ephemeral key per answer ([`crypto::Sealer`], as the history pages do): the X25519
//! agreement is paid once per page, each room's envelope has its own random nonce. Pages
//! are cached (`services::pages`); registering or replacing the key is a write, which ends
//! every cached page, so no page sealed to an old key is served.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde::Serialize;

use crate::crypto::{self, DataKey};
use crate::error::AppResult;
use crate::services::conversations::{open_room_field, RoomField};
use crate::services::public_key::validate_public_key;
use crate::services::{users, Context};
use crate::store::rooms::RoomRow;
use crate::store::user_keys;
use crate::store::users::UserRow;

/// One `sealedMeta` envelope, base64 fields as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealedMeta {
    pub ephemeral_pubkey: String,
    pub nonce: String,
    pub ciphertext: String,
}

/// The sealed plaintext: `{"name", "topic", "avatarUrl", "recipientName"}` (each a string or
/// null).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Plain<'a> {
    name: Option<&'a str>,
    topic: Option<&'a str>,
    avatar_url: Option<&'a str>,
    recipient_name: Option<&'a str>,
}

/// Seals the rooms of one answer to one user's key.
pub struct MetaSealer {
    dek: DataKey,
    sealer: crypto::Sealer,
    ephemeral: String,
}

impl MetaSealer {
    /// The sealer for `user`'s registered key; `None` before a key is registered (and
    /// after `DELETE /api/keys`), when `sealedMeta` is null.
    pub async fn for_user(state: &Context, user: &UserRow) -> AppResult<Option<Self>> {
        let uid = user.id.clone();
        let Some(key) = state.store.query(move |c| user_keys::find(c, &uid)).await? else {
            return Ok(None);
        };
        // Registration checks keys; one that cannot be sealed to leaves the names out
        // rather than failing the room list.
        let sealer = validate_public_key(&key.public_key)
            .ok()
            .and_then(|k| crypto::Sealer::to(&k).ok());
        let Some(sealer) = sealer else {
            tracing::warn!(user_id = %user.id, "registered key cannot be sealed to; sealedMeta null");
            return Ok(None);
        };
        Ok(Some(Self {
            dek: users::data_key(&state.master, user)?,
            ephemeral: STANDARD.encode(sealer.ephemeral_pubkey()),
            sealer,
        }))
    }

    /// The data key the room fields are opened with.
    pub fn data_key(&self) -> &DataKey {
        &self.dek
    }

    /// Any JSON document sealed like `sealedMeta` (same ephemeral key, its own nonce):
    /// `sealedLastMessage`.
    pub fn seal_value<T: Serialize>(&self, value: &T) -> SealedMeta {
        let json = serde_json::to_vec(value).unwrap_or_default();
        let envelope = self.sealer.seal(&json);
        SealedMeta {
            ephemeral_pubkey: self.ephemeral.clone(),
            nonce: STANDARD.encode(envelope.nonce),
            ciphertext: STANDARD.encode(&envelope.ciphertext),
        }
    }

    /// The room's `sealedMeta`.
    pub fn seal(&self, row: &RoomRow) -> SealedMeta {
        let open = |field, sealed: &Option<Vec<u8>>| {
            open_room_field(
                &self.dek,
                &row.user_id,
                &row.room_id,
                field,
                sealed.as_deref(),
            )
        };
        let (name, topic, avatar, recipient) = (
            open(RoomField::Name, &row.name_enc),
            open(RoomField::Topic, &row.topic_enc),
            open(RoomField::Avatar, &row.avatar_enc),
            open(RoomField::RecipientName, &row.recipient_name_enc),
        );
        let plain = Plain {
            name: name.as_deref(),
            topic: topic.as_deref(),
            avatar_url: avatar.as_deref(),
            recipient_name: recipient.as_deref(),
        };
        let json = serde_json::to_vec(&plain).unwrap_or_default();
        let envelope = self.sealer.seal(&json);
        SealedMeta {
            ephemeral_pubkey: self.ephemeral.clone(),
            nonce: STANDARD.encode(envelope.nonce),
            ciphertext: STANDARD.encode(&envelope.ciphertext),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::Envelope;
    use crate::services::conversations::seal_room_field;
    use x25519_dalek::{PublicKey, StaticSecret};

    #[test]
    fn the_meta_opens_with_the_users_secret_and_rooms_share_the_ephemeral_key() {
        let secret = StaticSecret::from([7u8; 32]);
        let public = PublicKey::from(&secret).to_bytes();
        let dek = DataKey::generate();
        let sealer = crypto::Sealer::to(&public).unwrap();
        let meta = MetaSealer {
            ephemeral: STANDARD.encode(sealer.ephemeral_pubkey()),
            sealer,
            dek: dek.clone(),
        };
        let row = |room: &str, name: Option<&str>, partner: Option<&str>| RoomRow {
            user_id: "u".into(),
            room_id: room.into(),
            name_enc: name.map(|n| seal_room_field(&dek, "u", room, RoomField::Name, n)),
            recipient_name_enc: partner
                .map(|n| seal_room_field(&dek, "u", room, RoomField::RecipientName, n)),
            ..RoomRow::default()
        };
        let a = meta.seal(&row("!a:x", Some("Family"), None));
        let b = meta.seal(&row("!b:x", Some("Mom"), Some("Mom")));
        assert_eq!(a.ephemeral_pubkey, b.ephemeral_pubkey);
        assert_ne!(a.nonce, b.nonce);
        let open = |m: &SealedMeta| {
            let env = Envelope::from_base64(&m.ephemeral_pubkey, &m.nonce, &m.ciphertext).unwrap();
            let plain = crypto::open_envelope(&secret, &env).unwrap();
            serde_json::from_slice::<serde_json::Value>(&plain).unwrap()
        };
        assert_eq!(
            open(&a),
            serde_json::json!({"name": "Family", "topic": null, "avatarUrl": null, "recipientName": null})
        );
        assert_eq!(open(&b)["recipientName"], "Mom");
    }
}
