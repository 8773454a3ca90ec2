//! What the crypto machine keeps of the rooms the sync sees, so that sending needs no
//! homeserver round trip per message (see `services::e2ee::send_event`):
//!
//! - each encrypted room's `m.room.encryption` content (algorithm and megolm rotation),
//!   kept in the crypto store: once encrypted, always encrypted;
//! - the device lists of the members of encrypted rooms, tracked from the moment a room
//!   is joined or its members change: the sync's `device_lists.changed` then marks them
//!   for a key query in the sync loop, and a member's new device gets the room key on the
//!   next send.

use serde_json::Value;

use crate::clients::matrix::e2ee::UserCrypto;
use crate::clients::matrix::{MatrixClient, SyncResponse};
use crate::error::AppError;
use crate::services::Context;

/// The encryption-relevant room changes of one `/sync` response.
#[derive(Debug, Default)]
pub struct RoomChanges {
    /// (room, `m.room.encryption` content), in the order seen.
    encryption: Vec<(String, Value)>,
    /// Joined rooms whose encryption or members changed.
    rooms: Vec<String>,
}

impl RoomChanges {
    /// Read before ingest takes the response.
    pub fn of(resp: &SyncResponse) -> Self {
        let mut out = Self::default();
        for (room_id, room) in &resp.rooms.join {
            let mut touched = false;
            for ev in room.state.events.iter().chain(&room.timeline.events) {
                match ev.kind.as_str() {
                    "m.room.encryption" if ev.state_key.as_deref() == Some("") => {
                        out.encryption.push((room_id.clone(), ev.content.clone()));
                        touched = true;
                    }
                    "m.room.member" => touched = true,
                    _ => {}
                }
            }
            if touched {
                out.rooms.push(room_id.clone());
            }
        }
        out
    }

    pub fn is_empty(&self) -> bool {
        self.rooms.is_empty()
    }
}

/// After ingest (the rooms' `encrypted` flags and members are stored): remembers the
/// rooms' encryption, tracks the members of the changed encrypted rooms (of all the
/// user's encrypted rooms with `None`, when the worker starts) and queries their device
/// lists now. Failures are logged; the send path falls back to asking the homeserver.
pub async fn apply(
    state: &Context,
    matrix: &MatrixClient,
    crypto: &UserCrypto,
    user_id: &str,
    changes: Option<&RoomChanges>,
) {
    if let Some(changes) = changes {
        for (room_id, content) in &changes.encryption {
            crypto.remember_encryption(room_id, content).await;
        }
    }
    let uid = user_id.to_owned();
    let rooms = changes.map(|c| c.rooms.clone());
    let members = state
        .store
        .run(move |c| {
            crate::store::rooms::encrypted_members(c, &uid, rooms.as_deref())
                .map_err(AppError::from)
        })
        .await;
    let members = match members {
        Ok(m) if m.is_empty() => return,
        Ok(m) => m,
        Err(e) => {
            tracing::warn!(%user_id, error = %e, "cannot read the members of encrypted rooms");
            return;
        }
    };
    if let Err(e) = crypto.track_users(&members).await {
        tracing::warn!(%user_id, error = %e, "cannot track the members' devices");
        return;
    }
    tracing::debug!(%user_id, users = members.len(), "tracking the devices of encrypted rooms' members");
    if let Err(e) = crypto.process_outgoing(matrix).await {
        tracing::warn!(%user_id, error = %e, "end-to-end encryption requests failed");
    }
}
