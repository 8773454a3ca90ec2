//! Decryption on the way into [`super::ingest`]: the worker feeds each `/sync` response's
//! to-device part to the user's crypto machine, then decrypts `m.room.encrypted` timeline
//! events in place, so ingest stores them in the same message rows as plaintext ones.
//! Events whose room key has not arrived are stored undecryptable
//! ([`ingest::UNDECRYPTABLE`]) and rewritten here once the key comes (see
//! [`retry_undecryptable`]), announced with `message.created`.
//!
//! Every path that feeds ingest (sync timelines, gap pages, history back-fill) calls
//! [`decrypt_events`] first.

use std::collections::{BTreeSet, HashMap};

use rusqlite::{Transaction, TransactionBehavior};
use serde_json::{json, Value};

use super::context::{self, IngestContext, Pass, UNDECRYPTABLE};
use super::room::{RoomHint, RoomView};
use crate::clients::matrix::e2ee::{SyncCrypto, UserCrypto};
use crate::clients::matrix::types::{Event, SyncResponse};
use crate::clients::provisioning::identity::BridgeIdentities;
use crate::clock::unix_now;
use crate::crypto::DataKey;
use crate::error::{AppError, AppResult};
use crate::events::ChangeEvent;
use crate::services::conversations::{open_message, MessageContent};
use crate::services::importance::Reader;
use crate::services::users;
use crate::services::Context;
use crate::store::messages::{self, MessageRow};

/// Undecryptable rows tried again per pass.
const RETRY_BATCH: i64 = 2_000;

/// The end-to-end encryption part of a sync response, for [`UserCrypto::receive_sync`].
pub fn sync_crypto(resp: &SyncResponse) -> SyncCrypto<'_> {
    SyncCrypto {
        to_device: &resp.to_device.events,
        device_lists: &resp.device_lists,
        one_time_keys_count: &resp.device_one_time_keys_count,
        unused_fallback_key_types: resp.device_unused_fallback_key_types.as_ref(),
        next_batch: &resp.next_batch,
    }
}

fn raw_event(room_id: &str, ev: &Event) -> Value {
    let mut v = json!({
        "type": ev.kind,
        "room_id": room_id,
        "event_id": ev.event_id,
        "sender": ev.sender,
        "origin_server_ts": ev.origin_server_ts,
        "content": ev.content,
    });
    if let Some(unsigned) = &ev.unsigned {
        v["unsigned"] = unsigned.clone();
    }
    v
}

/// Decrypts the `m.room.encrypted` events of one room in place (their type and content
/// become the plaintext's); events without a key stay as they are. Returns how many were
/// decrypted.
pub async fn decrypt_events(crypto: &UserCrypto, room_id: &str, events: &mut [Event]) -> usize {
    let mut n = 0;
    for ev in events.iter_mut().filter(|e| e.kind == UNDECRYPTABLE) {
        if let Some((kind, content)) = crypto.decrypt(room_id, &raw_event(room_id, ev)).await {
            ev.kind = kind;
            ev.content = content;
            n += 1;
        }
    }
    n
}

/// [`decrypt_events`] over every joined and left room's timeline.
pub async fn decrypt_response(crypto: &UserCrypto, resp: &mut SyncResponse) -> usize {
    let mut n = 0;
    for (room_id, room) in resp.rooms.join.iter_mut() {
        n += decrypt_events(crypto, room_id, &mut room.timeline.events).await;
    }
    for (room_id, room) in resp.rooms.leave.iter_mut() {
        n += decrypt_events(crypto, room_id, &mut room.timeline.events).await;
    }
    n
}

/// Applies the plaintext of a row stored undecryptable: rewrites it (a message), applies
/// it to the message it edits and drops the placeholder (an edit), or drops it (other
/// event types are not messages). Returns the id of the message that changed.
fn apply_decrypted(
    pass: &mut Pass<'_, '_>,
    mut row: MessageRow,
    kind: &str,
    content: &Value,
) -> rusqlite::Result<Option<String>> {
    let (tx, ctx) = (pass.tx, pass.ctx);
    let view = RoomView::load(tx, ctx, pass.dek, &row.room_id)?;
    pass.out.changed_rooms.insert(row.room_id.clone());
    let ev = Event {
        kind: kind.to_owned(),
        event_id: Some(row.event_id.clone()),
        sender: Some(row.sender_id.clone()),
        origin_server_ts: Some(row.ts),
        content: content.clone(),
        ..Event::default()
    };
    if kind == "m.reaction" {
        // The placeholder row goes; the reaction is stored as one.
        messages::delete_one(tx, ctx.user_id, &row.id)?;
        pass.apply_reaction(&view, &ev)?;
        return Ok(None);
    }
    if kind != "m.room.message" && kind != context::STICKER {
        messages::delete_one(tx, ctx.user_id, &row.id)?;
        return Ok(None);
    }
    if let Some(target) = context::replaced_event(content) {
        pass.apply_edit(&view, &ev, target)?;
        messages::delete_one(tx, ctx.user_id, &row.id)?;
        return Ok(messages::find_by_event(tx, ctx.user_id, target)?.map(|m| m.id));
    }
    let msgtype = match content["msgtype"].as_str() {
        _ if kind == context::STICKER => context::STICKER,
        Some(t) => t,
        None => "m.text",
    }
    .to_owned();
    let s = context::score(ctx, view.row.is_direct, content, &msgtype, row.is_mine);
    let plain = MessageContent {
        body: content["body"].as_str().unwrap_or_default().to_owned(),
        content: content.clone(),
    };
    row.msgtype = msgtype;
    pass.rewrite(&mut row, &plain, s)?;
    Ok(Some(row.id))
}

/// Who is syncing (for [`retry_undecryptable`]).
pub struct Syncer<'a> {
    pub user_id: &'a str,
    pub reader: &'a Reader,
    pub bridges: &'a BridgeIdentities,
}

impl Syncer<'_> {
    /// Runs `step` off the executor in one IMMEDIATE transaction as this user at the
    /// current time, opening the data key inside it so a concurrent key deletion cannot
    /// interleave; commits when `step` succeeds.
    pub async fn in_tx<T, F>(
        &self,
        state: &Context,
        hints: HashMap<String, RoomHint>,
        step: F,
    ) -> AppResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Transaction<'_>, &IngestContext<'_>, &DataKey) -> AppResult<T> + Send + 'static,
    {
        let master = state.master.clone();
        let (user_id, reader, bridges) = (
            self.user_id.to_owned(),
            self.reader.clone(),
            self.bridges.clone(),
        );
        state
            .store
            .run(move |c| {
                // Ingest writes this user's rows only: other users' cached pages stay.
                crate::store::epoch::scope_to_user(&user_id);
                let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
                let user = crate::services::users::load_row(&tx, &user_id)?;
                let dek = users::data_key(&master, &user)?;
                let ctx = IngestContext {
                    user_id: &user_id,
                    reader: &reader,
                    bridges: &bridges,
                    hints: &hints,
                    now: unix_now() as i64,
                };
                let out = step(&tx, &ctx, &dek)?;
                tx.commit()?;
                Ok(out)
            })
            .await
    }
}

/// Tries the undecryptable messages of `rooms` (all rooms: `None`) again, e.g. after
/// room keys arrived or at start; stores what decrypts and announces each message with
/// `message.created`. Returns how many changed.
pub async fn retry_undecryptable(
    state: &Context,
    crypto: &UserCrypto,
    who: &Syncer<'_>,
    rooms: Option<&[String]>,
) -> AppResult<usize> {
    let rows = undecryptable_rows(state, who.user_id, rooms).await?;
    let mut plain = Vec::new();
    for (row, content) in rows {
        let ev = json!({
            "type": UNDECRYPTABLE,
            "room_id": row.room_id,
            "event_id": row.event_id,
            "sender": row.sender_id,
            "origin_server_ts": row.ts,
            "content": content,
        });
        if let Some((kind, content)) = crypto.decrypt(&row.room_id, &ev).await {
            plain.push((row, kind, content));
        }
    }
    if plain.is_empty() {
        return Ok(0);
    }
    let (changed, rooms) = who
        .in_tx(state, HashMap::new(), |tx, ctx, dek| {
            let mut pass = Pass::new(tx, ctx, dek);
            let mut changed = Vec::new();
            for (row, kind, content) in plain {
                let (room_id, event_id) = (row.room_id.clone(), row.event_id.clone());
                if let Some(id) = apply_decrypted(&mut pass, row, &kind, &content)? {
                    changed.push((room_id, event_id, id));
                }
            }
            Ok((changed, pass.out.changed_rooms))
        })
        .await?;
    announce_decrypted(state, who.user_id, &changed, rooms);
    tracing::info!(
        user_id = who.user_id,
        messages = changed.len(),
        "decrypted messages whose room keys arrived late"
    );
    Ok(changed.len())
}

/// The stored undecryptable messages of `rooms` (all: `None`), at most [`RETRY_BATCH`]
/// per room, with their encrypted event content.
async fn undecryptable_rows(
    state: &Context,
    user_id: &str,
    rooms: Option<&[String]>,
) -> AppResult<Vec<(MessageRow, Value)>> {
    let master = state.master.clone();
    let uid = user_id.to_owned();
    let wanted: Vec<Option<String>> = match rooms {
        Some(r) => r.iter().cloned().map(Some).collect(),
        None => vec![None],
    };
    state
        .store
        .run(move |c| {
            let user = crate::services::users::load_row(c, &uid)?;
            let dek = users::data_key(&master, &user)?;
            let mut rows = Vec::new();
            for room in &wanted {
                for row in
                    messages::with_msgtype(c, &uid, UNDECRYPTABLE, room.as_deref(), RETRY_BATCH)?
                {
                    if let Ok(m) = open_message(&dek, &row.id, &row.content_enc) {
                        rows.push((row, m.content));
                    }
                }
            }
            Ok::<_, AppError>(rows)
        })
        .await
}

/// `message.created` for each late-decrypted message, `room.updated` for their rooms.
fn announce_decrypted(
    state: &Context,
    user_id: &str,
    changed: &[(String, String, String)],
    rooms: BTreeSet<String>,
) {
    for (room_id, event_id, message_id) in changed {
        state.events.publish(
            user_id,
            ChangeEvent::MessageCreated {
                room_id: room_id.clone(),
                event_id: event_id.clone(),
                message_id: message_id.clone(),
            },
        );
    }
    for room_id in rooms {
        state
            .events
            .publish(user_id, ChangeEvent::RoomUpdated { room_id });
    }
}
