//! The rooms of one `/sync` response by membership: joined rooms (state, timeline, read
//! marker, counts), invited rooms (the inviter; trusted invites are joined) and left rooms,
//! and the direct flags of a new `m.direct`. Steps of [`super::ingest::ingest`].

use std::collections::BTreeSet;

use super::amend::update_read_marker;
use super::context::{IngestContext, Pass};
use super::room::{DirectRooms, RoomView};
use crate::clients::matrix::types::{InvitedRoom, JoinedRoom, LeftRoom, SyncResponse};
use crate::services::importance;
use crate::store::rooms;

impl Pass<'_, '_> {
    /// Stores one joined room of a response; returns the room's last message time before it.
    pub(super) fn joined(
        &mut self,
        direct: &DirectRooms,
        room_id: &str,
        room: &JoinedRoom,
    ) -> rusqlite::Result<Option<i64>> {
        let (tx, ctx) = (self.tx, self.ctx);
        let mut view = RoomView::load(tx, ctx, self.dek, room_id)?;
        let stored_until = view.row.last_message_ts;
        if !view.is_new() && view.row.membership == "leave" && !joins_again(ctx, room) {
            // A response requested before the room was left through Switchboard still lists
            // it as joined: its events are kept, but it must not bring the room back. A real
            // join after a leave carries the user's own join event (the state of a newly
            // joined room is sent in full), so it still counts.
            tracing::debug!(user_id = ctx.user_id, %room_id, "stale join for a left room; kept as left");
        } else {
            view.row.membership = "join".to_owned();
            view.row.invited_by = None;
        }
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

    /// Stores one invited room of a response: the inviter, and whether to join it.
    pub(super) fn invited(
        &mut self,
        direct: &DirectRooms,
        room_id: &String,
        room: &InvitedRoom,
    ) -> rusqlite::Result<()> {
        let (tx, ctx, dek) = (self.tx, self.ctx, self.dek);
        let mut view = RoomView::load(tx, ctx, dek, room_id)?;
        if !view.is_new() && view.row.membership == "join" {
            // A response requested before the room was joined through Switchboard (a new
            // chat, an accepted invite) still lists the invite: it must not take the join
            // back. A real new invite follows a leave, which is stored as "leave" first (only
            // a leave and a re-invite both made elsewhere while no sync ran would be missed
            // here; the next join or leave event sets the membership again).
            tracing::debug!(user_id = ctx.user_id, %room_id, "stale invite for a joined room; ignored");
            return Ok(());
        }
        for ev in &room.invite_state.events {
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
        self.save_if_changed(&mut view, false)?;
        if view.trusted_invite(ctx) {
            self.out.invites.push(room_id.clone());
        } else {
            tracing::info!(user_id = ctx.user_id, %room_id, inviter = view.row.invited_by.as_deref().unwrap_or("unknown"),
                "invite from outside the configured bridges; waiting for the user to accept or decline");
        }
        Ok(())
    }

    /// Stores one left room of a response (its last timeline events, then `leave`); rows
    /// and messages are kept.
    pub(super) fn left(&mut self, room_id: &str, room: &LeftRoom) -> rusqlite::Result<()> {
        let mut view = RoomView::load(self.tx, self.ctx, self.dek, room_id)?;
        if view.is_new() {
            return Ok(()); // never stored (e.g. an invite withdrawn before it was seen)
        }
        let mut touched = false;
        for ev in &room.timeline.events {
            touched |= self.timeline_event(&mut view, ev)?;
        }
        view.row.membership = "leave".to_owned();
        view.row.invited_by = None;
        view.finish(self.ctx, self.dek, None);
        self.save_if_changed(&mut view, touched)
    }

    /// After a new `m.direct`: marks the stored rooms it names direct (those of this
    /// response were resolved with their own state already).
    pub(super) fn mark_direct(
        &mut self,
        direct: &DirectRooms,
        resp: &SyncResponse,
    ) -> rusqlite::Result<()> {
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
                    self.tx,
                    self.ctx.user_id,
                    room_id,
                    partner,
                    importance::DIRECT_BASELINE,
                    self.ctx.now,
                )?
            {
                continue;
            }
            self.out.changed_rooms.insert(room_id.to_owned());
        }
        Ok(())
    }

    pub(super) fn save_if_changed(
        &mut self,
        view: &mut RoomView,
        touched: bool,
    ) -> rusqlite::Result<()> {
        if touched || view.changed() {
            view.save(self.tx, self.ctx.now)?;
            self.out.changed_rooms.insert(view.row.room_id.clone());
        }
        // A new room is always saved above, so its row exists for the profiles.
        view.save_profiles(self.tx, self.dek)?;
        Ok(())
    }
}

/// Whether a joined room of a response carries the user's own `join` member event (in its
/// state or its timeline): what a join made after a stored leave always brings.
fn joins_again(ctx: &IngestContext<'_>, room: &JoinedRoom) -> bool {
    let me = ctx.reader.matrix_user_id.as_str();
    room.state
        .events
        .iter()
        .chain(&room.timeline.events)
        .any(|ev| {
            ev.kind == "m.room.member"
                && ev.state_key.as_deref() == Some(me)
                && ev.content["membership"] == "join"
        })
}
