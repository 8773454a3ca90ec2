//! Ingest of one `/sync` response: a pure function over a SQLite transaction and the
//! user's data key, so it can be tested and benchmarked without a homeserver.
//!
//! What is stored (all in the caller's transaction, together with the new `since`):
//! - joined rooms: state (`state`, then state events in `timeline`) through
//!   [`RoomView`]; `m.room.message` events of every msgtype as message rows (content
//!   sealed, scored by [`importance`]); edits (`m.replace`) rewrite the original row
//!   (`edited`), redactions empty it (`redacted`); unread and highlight counts; the read
//!   marker from `m.fully_read` and the user's own `m.receipt`; room importance.
//! - invited rooms: a row with membership `invite` and the inviter. Invites from a
//!   configured bridge bot or its ghosts are handed to the worker to join (bridges invite
//!   users to their portal rooms); every other invite stays `invite` until the user
//!   accepts or declines it through the API. The platform of an invited room is its
//!   trusted inviter's: the invite's stripped state is not authenticated.
//! - left rooms: membership `leave`; rows and messages are kept.
//! - the global `m.direct` account data: direct flags and recipients.
//!
//! Messages are unique per (user, event id), so a response ingested twice adds nothing.
//! Each joined timeline also records what is missing before it ([`gaps`]): the room's
//! older history on its first appearance, the gap of a `limited` timeline later on.
//! [`ingest_history`] stores what paging back fetches, through the same event path.
//! Encrypted events arrive here decrypted (see [`super::e2ee`]); one still encrypted (its
//! room key has not arrived) is stored as an undecryptable row ([`UNDECRYPTABLE`]) and
//! rewritten when the key comes.

use std::collections::HashMap;

use rusqlite::Transaction;
use serde::Deserialize as _;

use super::amend::redacted_content;
use super::context::{replaced_event, score, Pass};
pub use super::context::{
    IngestContext, IngestOutcome, NewMessage, STICKER, UNDECRYPTABLE, UNDECRYPTABLE_BODY,
};
use super::gaps;
use super::room::{DirectRooms, RoomView};
use crate::clients::matrix::types::{Event, Events, JoinedRoom, SyncResponse};
use crate::crypto::DataKey;
use crate::services::conversations::{seal_message, MessageContent};
use crate::services::importance::{self, Score};
use crate::services::senders;
use crate::store::messages::{self, MessageRow};
use crate::store::rooms::RoomFlag;
use crate::store::{rooms, sync_state};

/// msgtype stored when an event has none (e.g. it arrived already redacted).
const DEFAULT_MSGTYPE: &str = "m.text";
/// Stores `resp` and records `resp.next_batch` as the new position. `direct` is the
/// user's `m.direct` map, replaced when the response carries a new one.
pub fn ingest(
    tx: &Transaction<'_>,
    ctx: &IngestContext<'_>,
    dek: &DataKey,
    direct: &mut DirectRooms,
    resp: &SyncResponse,
) -> rusqlite::Result<IngestOutcome> {
    let mut pass = Pass::new(tx, ctx, dek);
    let direct_changed = apply_account_data(direct, &resp.account_data);
    // The position before this response: where a limited timeline's gap ends.
    let since = sync_state::find(tx, ctx.user_id)?.and_then(|s| s.since);
    for room_id in sorted_keys(&resp.rooms.join) {
        let room = &resp.rooms.join[room_id];
        let stored_until = pass.joined(direct, room_id, room)?;
        super::conversation::ephemeral(tx, ctx, room_id, room, &mut pass.out.live)?;
        if super::conversation::room_flags(tx, ctx, room_id, &room.account_data)? {
            pass.out.changed_rooms.insert(room_id.clone());
        }
        gaps::note_timeline(
            tx,
            ctx,
            room_id,
            &room.timeline,
            since.as_deref(),
            stored_until,
        )?;
    }
    for room_id in sorted_keys(&resp.rooms.invite) {
        pass.invited(direct, room_id, &resp.rooms.invite[room_id])?;
    }
    for room_id in sorted_keys(&resp.rooms.leave) {
        pass.left(room_id, &resp.rooms.leave[room_id])?;
    }
    let muted = super::conversation::push_rules(tx, ctx, &resp.account_data)?;
    pass.out.changed_rooms.extend(muted);
    if direct_changed {
        pass.mark_direct(direct, resp)?;
    }
    sync_state::save_since(tx, ctx.user_id, &resp.next_batch, ctx.now)?;
    Ok(pass.out)
}

fn sorted_keys<V>(map: &HashMap<String, V>) -> Vec<&String> {
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    keys
}

/// Takes a new `m.direct` from the global account data; returns whether it changed.
fn apply_account_data(direct: &mut DirectRooms, data: &Events) -> bool {
    let mut changed = false;
    for ev in data.events.iter().filter(|e| e.kind == "m.direct") {
        let fresh = DirectRooms::from_content(&ev.content);
        if fresh != *direct {
            *direct = fresh;
            changed = true;
        }
    }
    changed
}

/// Stores events paged back from the homeserver (`/rooms/{id}/messages`, given oldest
/// first) for one stored room, through the same per-event path as a sync. Only what is
/// not room state: old state events describe the room as it was, not as it is; but each
/// message is stored with its sender's name of then, from the page's member `state` and
/// the member events inside it ([`super::past_senders`]). An edit that happened later
/// comes bundled with the original (`unsigned.m.relations`), whose own event was paged
/// earlier (before its original was stored), so it is applied here.
pub fn ingest_history(
    tx: &Transaction<'_>,
    ctx: &IngestContext<'_>,
    dek: &DataKey,
    room_id: &str,
    events: &[Event],
    state: &[Event],
) -> rusqlite::Result<IngestOutcome> {
    let mut pass = Pass::new(tx, ctx, dek);
    pass.senders_then = super::past_senders::past_senders(state, events);
    let mut view = RoomView::load(tx, ctx, dek, room_id)?;
    if view.is_new() {
        return Ok(pass.out); // removed meanwhile
    }
    let mut touched = false;
    for ev in events.iter().filter(|e| e.state_key.is_none()) {
        touched |= pass.timeline_event(&mut view, ev)?;
        let bundled = ev.unsigned.as_ref().map(|u| &u["m.relations"]["m.replace"]);
        if let Some(edit) = bundled.and_then(|e| Event::deserialize(e).ok()) {
            touched |= pass.timeline_event(&mut view, &edit)?;
        }
    }
    if touched {
        view.row.importance = importance::unread_room_importance(tx, &view.row, ctx.now)?;
    }
    pass.save_if_changed(&mut view, touched)?;
    Ok(pass.out)
}

/// Stores a room the API has just created or joined from its full state, as one joined
/// room of a sync without a timeline: no gap is recorded, so the room's first synced
/// timeline records its history as for any newly joined room.
pub fn ingest_joined_state(
    tx: &Transaction<'_>,
    ctx: &IngestContext<'_>,
    dek: &DataKey,
    direct: &DirectRooms,
    joined: &crate::services::history::JoinedState<'_>,
) -> rusqlite::Result<()> {
    let mut pass = Pass::new(tx, ctx, dek);
    let mut room = JoinedRoom::default();
    room.state.events = joined.state.clone();
    room.summary.heroes = Some(joined.heroes.clone());
    pass.joined(direct, joined.room_id, &room)?;
    Ok(())
}

impl Pass<'_, '_> {
    /// Applies one timeline event; returns whether a message was added or changed.
    pub(super) fn timeline_event(
        &mut self,
        view: &mut RoomView,
        ev: &Event,
    ) -> rusqlite::Result<bool> {
        if ev.state_key.is_some() {
            view.apply_state(self.ctx, ev);
            return Ok(false);
        }
        match ev.kind.as_str() {
            "m.room.message" | STICKER => match replaced_event(&ev.content) {
                Some(target) => self.apply_edit(view, ev, target),
                None => self.insert_message(view, ev),
            },
            "m.reaction" => self.apply_reaction(view, ev),
            "m.room.redaction" => self.apply_redaction(view, ev),
            UNDECRYPTABLE => self.insert_message(view, ev),
            _ => Ok(false),
        }
    }

    /// Stores a new message (unless its event is stored already); returns whether it was new.
    fn insert_message(&mut self, view: &mut RoomView, ev: &Event) -> rusqlite::Result<bool> {
        let (tx, ctx, dek) = (self.tx, self.ctx, self.dek);
        let (Some(event_id), Some(sender)) = (ev.event_id.as_deref(), ev.sender.as_deref()) else {
            return Ok(false);
        };
        let redacted = ev
            .unsigned
            .as_ref()
            .is_some_and(|u| u.get("redacted_because").is_some());
        let is_mine = sender == ctx.reader.matrix_user_id;
        let undecryptable = ev.kind == UNDECRYPTABLE;
        let msgtype = msgtype_of(ev);
        let (content, s) = match (redacted, undecryptable) {
            (true, _) => redacted_content(),
            (false, true) => undecryptable_content(ev),
            (false, false) => readable_content(ctx, view.row.is_direct, ev, msgtype, is_mine),
        };
        let id = uuid::Uuid::new_v4().to_string();
        let ts = ev.origin_server_ts.unwrap_or(ctx.now * 1000);
        let sender_enc = self
            .sender_then(view, event_id, sender)?
            .map(|p| senders::seal_sender(dek, &id, &p));
        let row = MessageRow {
            sender_enc,
            content_enc: seal_message(dek, &id, &content),
            id,
            user_id: ctx.user_id.to_owned(),
            room_id: view.row.room_id.clone(),
            event_id: event_id.to_owned(),
            sender_id: sender.to_owned(),
            ts,
            msgtype: msgtype.to_owned(),
            is_mine,
            importance: s.importance,
            category: s.category.to_owned(),
            is_question: s.is_question,
            edited: false,
            redacted,
            created_at: ctx.now,
            edited_at: None,
        };
        if !messages::insert_if_new(tx, &row)? {
            return Ok(false);
        }
        crate::services::search::index_message(tx, dek, &row, &content.body)?;
        if !is_mine {
            self.unarchive_if_newer(view, ts)?;
        }
        view.row.last_message_ts = Some(view.row.last_message_ts.map_or(ts, |t| t.max(ts)));
        self.out.new_messages.push(NewMessage {
            room_id: row.room_id,
            event_id: row.event_id,
            message_id: row.id,
            scorable: !is_mine && !redacted && !undecryptable,
        });
        Ok(true)
    }

    /// The sender's name and avatar as of this point of the timeline (a later rename
    /// changes the member's profile, not this row): for back-fill, as the page showed it
    /// ([`super::past_senders`]); else the newest member event of this response, else the
    /// stored profile.
    fn sender_then(
        &self,
        view: &mut RoomView,
        event_id: &str,
        sender: &str,
    ) -> rusqlite::Result<Option<senders::Profile>> {
        match self.senders_then.get(event_id) {
            Some(then) => Ok(Some(then.clone())),
            None => view.sender_profile(self.tx, self.dek, sender),
        }
    }

    /// An incoming message sent after the archiving brings the conversation back to the
    /// active list. `archived_at` has whole seconds: a message from that same second may
    /// predate the archiving, so only later seconds count.
    fn unarchive_if_newer(&mut self, view: &mut RoomView, ts: i64) -> rusqlite::Result<()> {
        if !view.row.archived || view.row.archived_at.is_some_and(|at| ts < (at + 1) * 1000) {
            return Ok(());
        }
        let ctx = self.ctx;
        let room_id = &view.row.room_id;
        rooms::set_flag(
            self.tx,
            ctx.user_id,
            room_id,
            RoomFlag::Archived,
            false,
            ctx.now,
        )?;
        view.row.archived = false;
        view.row.archived_at = None;
        Ok(())
    }
}

/// An event still encrypted: its encrypted content kept (to decrypt it when its key
/// comes), a placeholder text, no score.
/// A readable message's content and its score.
fn readable_content(
    ctx: &IngestContext<'_>,
    is_direct: bool,
    ev: &Event,
    msgtype: &str,
    is_mine: bool,
) -> (MessageContent, Score) {
    let body = ev.content["body"].as_str().unwrap_or_default().to_owned();
    let s = score(ctx, is_direct, &ev.content, msgtype, is_mine);
    let content = ev.content.clone();
    (MessageContent { body, content }, s)
}

fn undecryptable_content(ev: &Event) -> (MessageContent, Score) {
    let (_, s) = redacted_content();
    let content = MessageContent {
        body: UNDECRYPTABLE_BODY.to_owned(),
        content: ev.content.clone(),
    };
    (content, s)
}

/// The msgtype a message is stored with: its own, or what stands for it (stickers,
/// undecryptable events, none at all).
fn msgtype_of(ev: &Event) -> &str {
    match ev.content["msgtype"].as_str() {
        _ if ev.kind == UNDECRYPTABLE => UNDECRYPTABLE,
        _ if ev.kind == STICKER => STICKER,
        Some(t) => t,
        None => DEFAULT_MSGTYPE,
    }
}
