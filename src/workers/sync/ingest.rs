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

use std::collections::{BTreeSet, HashMap};

use rusqlite::Transaction;
use serde::Deserialize as _;

use super::amend::{redacted_content, update_read_marker};
use super::context::{replaced_event, score, Pass};
pub use super::context::{
    IngestContext, IngestOutcome, NewMessage, STICKER, UNDECRYPTABLE, UNDECRYPTABLE_BODY,
};
use super::gaps;
use super::room::{DirectRooms, RoomView};
use crate::clients::matrix::types::{Event, Events, JoinedRoom, SyncResponse};
use crate::crypto::DataKey;
use crate::services::conversations::{seal_message, MessageContent};
use crate::services::importance;
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
        let mut view = RoomView::load(tx, ctx, dek, room_id)?;
        if !view.is_new() && view.row.membership == "join" {
            // A response requested before the room was joined through Switchboard (a new
            // chat, an accepted invite) still lists the invite: it must not take the join
            // back. A real new invite follows a leave, which is stored as "leave" first (only
            // a leave and a re-invite both made elsewhere while no sync ran would be missed
            // here; the next join or leave event sets the membership again).
            tracing::debug!(user_id = ctx.user_id, %room_id, "stale invite for a joined room; ignored");
            continue;
        }
        for ev in &resp.rooms.invite[room_id].invite_state.events {
            view.apply_state(ctx, ev);
        }
        view.distrust_invite_state(ctx);
        view.row.membership = "invite".to_owned();
        // A response without the user's member event keeps the inviter already stored.
        if let Some(inviter) = view.inviter() {
            view.row.invited_by = Some(inviter.to_owned());
        }
        view.resolve_direct(ctx, direct);
        view.finish(ctx, dek, None);
        pass.save_if_changed(&mut view, false)?;
        if view.trusted_invite(ctx) {
            pass.out.invites.push(room_id.clone());
        } else {
            tracing::info!(user_id = ctx.user_id, %room_id, inviter = view.row.invited_by.as_deref().unwrap_or("unknown"),
                "invite from outside the configured bridges; waiting for the user to accept or decline");
        }
    }
    for room_id in sorted_keys(&resp.rooms.leave) {
        let mut view = RoomView::load(tx, ctx, dek, room_id)?;
        if view.is_new() {
            continue; // never stored (e.g. an invite withdrawn before it was seen)
        }
        let mut touched = false;
        for ev in &resp.rooms.leave[room_id].timeline.events {
            touched |= pass.timeline_event(&mut view, ev)?;
        }
        view.row.membership = "leave".to_owned();
        view.row.invited_by = None;
        view.finish(ctx, dek, None);
        pass.save_if_changed(&mut view, touched)?;
    }
    let muted = super::conversation::push_rules(tx, ctx, &resp.account_data)?;
    pass.out.changed_rooms.extend(muted);
    if direct_changed {
        let seen: BTreeSet<&str> = resp
            .rooms
            .join
            .keys()
            .chain(resp.rooms.invite.keys())
            .map(String::as_str)
            .collect();
        for (room_id, partner) in direct.iter() {
            if seen.contains(room_id)
                || !rooms::mark_direct(
                    tx,
                    ctx.user_id,
                    room_id,
                    partner,
                    importance::DIRECT_BASELINE,
                    ctx.now,
                )?
            {
                continue;
            }
            pass.out.changed_rooms.insert(room_id.to_owned());
        }
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

impl Pass<'_, '_> {
    /// Stores one joined room of a response; returns the room's last message time before it.
    fn joined(
        &mut self,
        direct: &DirectRooms,
        room_id: &str,
        room: &JoinedRoom,
    ) -> rusqlite::Result<Option<i64>> {
        let (tx, ctx) = (self.tx, self.ctx);
        let mut view = RoomView::load(tx, ctx, self.dek, room_id)?;
        let stored_until = view.row.last_message_ts;
        view.row.membership = "join".to_owned();
        view.row.invited_by = None;
        for ev in &room.state.events {
            view.apply_state(ctx, ev);
        }
        view.resolve_direct(ctx, direct);
        let mut touched = false;
        for ev in &room.timeline.events {
            touched |= self.timeline_event(&mut view, ev)?;
        }
        view.resolve_direct(ctx, direct);
        update_read_marker(tx, ctx, &mut view, room)?;
        let counts = &room.unread_notifications;
        if let Some(n) = counts.notification_count {
            view.row.unread_count = n;
        }
        if let Some(n) = counts.highlight_count {
            view.row.highlight_count = n;
        }
        view.finish(ctx, self.dek, Some(&room.summary));
        view.row.importance = importance::unread_room_importance(tx, &view.row, ctx.now)?;
        self.save_if_changed(&mut view, touched)?;
        Ok(stored_until)
    }

    fn save_if_changed(&mut self, view: &mut RoomView, touched: bool) -> rusqlite::Result<()> {
        if touched || view.changed() {
            view.save(self.tx, self.ctx.now)?;
            self.out.changed_rooms.insert(view.row.room_id.clone());
        }
        // A new room is always saved above, so its row exists for the profiles.
        view.save_profiles(self.tx, self.dek)?;
        Ok(())
    }
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
    fn timeline_event(&mut self, view: &mut RoomView, ev: &Event) -> rusqlite::Result<bool> {
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
        let msgtype = match ev.content["msgtype"].as_str() {
            _ if undecryptable => UNDECRYPTABLE,
            _ if ev.kind == STICKER => STICKER,
            Some(t) => t,
            None => DEFAULT_MSGTYPE,
        };
        let (content, s) = if redacted {
            redacted_content()
        } else if undecryptable {
            let (_, s) = redacted_content();
            let content = MessageContent {
                body: UNDECRYPTABLE_BODY.to_owned(),
                content: ev.content.clone(),
            };
            (content, s)
        } else {
            let body = ev.content["body"].as_str().unwrap_or_default().to_owned();
            let s = score(ctx, view.row.is_direct, &ev.content, msgtype, is_mine);
            (
                MessageContent {
                    body,
                    content: ev.content.clone(),
                },
                s,
            )
        };
        let id = uuid::Uuid::new_v4().to_string();
        let ts = ev.origin_server_ts.unwrap_or(ctx.now * 1000);
        // The sender's name and avatar as of this point of the timeline (a later rename
        // changes the member's profile, not this row).
        let profile = match self.senders_then.get(event_id) {
            Some(then) => Some(then.clone()),
            None => view.sender_profile(tx, dek, sender)?,
        };
        let sender_enc = profile.map(|p| senders::seal_sender(dek, &id, &p));
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
        // An incoming message sent after the archiving brings the conversation back to the
        // active list. `archived_at` has whole seconds: a message from that same second may
        // predate the archiving, so only later seconds count.
        if !is_mine
            && view.row.archived
            && view.row.archived_at.is_none_or(|at| ts >= (at + 1) * 1000)
        {
            crate::store::rooms::set_flag(
                tx,
                ctx.user_id,
                &view.row.room_id,
                RoomFlag::Archived,
                false,
                ctx.now,
            )?;
            view.row.archived = false;
            view.row.archived_at = None;
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
}
