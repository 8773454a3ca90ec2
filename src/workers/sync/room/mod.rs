//! How a stored room follows its Matrix state: name, avatar, topic, joined members,
//! direct flag and recipient, platform.
//!
//! Room names: `m.room.name` when the room has one. Otherwise a name is computed from
//! the summary's heroes, or else from the other joined members (bridge bots left out
//! unless nobody else is there): their display names (`m.room.member`
//! `content.displayname`, else the ID's localpart) as "Alice", "Alice and Bob",
//! "Alice, Bob and Carol" or "Alice, Bob, Carol and 2 others"; "Empty room" when the user
//! is alone. A computed name is made when the room first appears (with its full state) or
//! loses its `m.room.name`, and refreshed on membership or display-name changes once the
//! worker has confirmed on the homeserver that the room has no name (see [`RoomHint`]):
//! the stored row does not record whether its name was computed.

use std::collections::{BTreeSet, HashMap};

use rusqlite::Connection;
use serde_json::Value;

use super::context::IngestContext;
pub use super::context::RoomHint;
use crate::clients::matrix::types::RoomSummary;
use crate::crypto::DataKey;
use crate::services::conversations::{open_room_field, seal_room_field, RoomField};
use crate::services::senders::{self, Profile};
use crate::store::rooms::{self, RoomRow};

mod naming;
mod state;

pub use naming::{join_names, localpart};
pub use state::platform_of;

/// Direct chats from the `m.direct` account data, by room.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DirectRooms {
    partner_by_room: HashMap<String, String>,
}

impl DirectRooms {
    /// From the content of `m.direct`: `{partner: [room ids]}`.
    pub fn from_content(content: &Value) -> Self {
        let mut partner_by_room = HashMap::new();
        if let Some(map) = content.as_object() {
            for (partner, rooms) in map {
                for room in rooms.as_array().into_iter().flatten() {
                    if let Some(room) = room.as_str() {
                        partner_by_room.insert(room.to_owned(), partner.clone());
                    }
                }
            }
        }
        Self { partner_by_room }
    }

    pub fn partner(&self, room_id: &str) -> Option<&str> {
        self.partner_by_room.get(room_id).map(String::as_str)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.partner_by_room
            .iter()
            .map(|(r, p)| (r.as_str(), p.as_str()))
    }
}

/// Plain values of the sealed columns.
#[derive(Debug, Clone, Default, PartialEq)]
struct Sealed {
    name: Option<String>,
    avatar: Option<String>,
    topic: Option<String>,
    /// The direct partner's display name.
    recipient_name: Option<String>,
}

/// A room being updated from one `/sync` response.
pub struct RoomView {
    pub row: RoomRow,
    existing: Option<RoomRow>,
    stored: Sealed,
    current: Sealed,
    /// `m.room.name` seen in this response: `Some(None)` when it was emptied.
    explicit_name: Option<Option<String>>,
    stored_members: BTreeSet<String>,
    pub members: BTreeSet<String>,
    display_names: HashMap<String, String>,
    bridge_dm: bool,
    bots: BTreeSet<String>,
    platform_hint: Option<&'static str>,
    inviter: Option<String>,
    invited_direct: bool,
    /// Others invited in this response and not joined or gone since: a room whose only
    /// other person is invited (a chat just started) is named after them.
    invited: BTreeSet<String>,
    /// Someone else was invited, or left or was banned, in this response.
    invites_changed: bool,
    /// Member profiles announced in this response (`join` events, in timeline order), to
    /// store; the newest one is the sender's profile of the messages after it.
    profiles: HashMap<String, Profile>,
    /// Stored profiles already looked up in this pass.
    loaded_profiles: HashMap<String, Option<Profile>>,
}

impl RoomView {
    /// The stored room (with its sealed fields opened), or a fresh one.
    pub fn load(
        conn: &Connection,
        ctx: &IngestContext<'_>,
        dek: &DataKey,
        room_id: &str,
    ) -> rusqlite::Result<Self> {
        let existing = rooms::find(conn, ctx.user_id, room_id)?;
        let (row, stored, stored_members) = match &existing {
            Some(row) => {
                let open = |field, sealed: &Option<Vec<u8>>| {
                    open_room_field(dek, ctx.user_id, room_id, field, sealed.as_deref())
                };
                let stored = Sealed {
                    name: open(RoomField::Name, &row.name_enc),
                    avatar: open(RoomField::Avatar, &row.avatar_enc),
                    topic: open(RoomField::Topic, &row.topic_enc),
                    recipient_name: open(RoomField::RecipientName, &row.recipient_name_enc),
                };
                let members = rooms::members(conn, ctx.user_id, room_id)?;
                (row.clone(), stored, members.into_iter().collect())
            }
            None => (
                RoomRow {
                    user_id: ctx.user_id.to_owned(),
                    room_id: room_id.to_owned(),
                    membership: "join".to_owned(),
                    created_at: ctx.now,
                    updated_at: ctx.now,
                    ..RoomRow::default()
                },
                Sealed::default(),
                BTreeSet::new(),
            ),
        };
        Ok(Self {
            row,
            existing,
            current: stored.clone(),
            stored,
            explicit_name: None,
            members: stored_members.clone(),
            stored_members,
            display_names: HashMap::new(),
            bridge_dm: false,
            bots: ctx.bridges.bots().map(str::to_owned).collect(),
            platform_hint: None,
            inviter: None,
            invited_direct: false,
            invited: BTreeSet::new(),
            invites_changed: false,
            profiles: HashMap::new(),
            loaded_profiles: HashMap::new(),
        })
    }

    pub fn is_new(&self) -> bool {
        self.existing.is_none()
    }

    /// Who invited the user (from the user's own `invite` member event).
    pub fn inviter(&self) -> Option<&str> {
        self.inviter.as_deref()
    }

    /// Whether the invitation comes from a configured bridge bot or one of its ghosts
    /// (and so is joined without asking the user).
    pub fn trusted_invite(&self, ctx: &IngestContext<'_>) -> bool {
        self.inviter()
            .is_some_and(|i| ctx.bridges.is_trusted_inviter(i))
    }

    /// The sender's profile at this point of the timeline: the newest member event of this
    /// response, else the stored profile.
    pub fn sender_profile(
        &mut self,
        conn: &Connection,
        dek: &DataKey,
        sender: &str,
    ) -> rusqlite::Result<Option<Profile>> {
        if let Some(p) = self.profiles.get(sender) {
            return Ok(Some(p.clone()));
        }
        if let Some(p) = self.loaded_profiles.get(sender) {
            return Ok(p.clone());
        }
        let p = senders::member_profile(conn, dek, &self.row.user_id, &self.row.room_id, sender)?;
        self.loaded_profiles.insert(sender.to_owned(), p.clone());
        Ok(p)
    }

    /// Stores the member profiles this response announced (the room row must exist).
    pub fn save_profiles(&mut self, conn: &Connection, dek: &DataKey) -> rusqlite::Result<()> {
        let (user, room) = (&self.row.user_id, &self.row.room_id);
        for (member, profile) in self.profiles.drain() {
            let sealed = senders::seal_member_profile(dek, user, room, &member, &profile);
            crate::store::member_profiles::upsert(conn, user, room, &member, &sealed)?;
            self.loaded_profiles.insert(member, Some(profile));
        }
        Ok(())
    }

    /// Other joined members, bridge bots left out.
    fn others(&self, ctx: &IngestContext<'_>) -> Vec<&str> {
        let me = ctx.reader.matrix_user_id.as_str();
        self.members
            .iter()
            .map(String::as_str)
            .filter(|m| *m != me && !self.bots.contains(*m))
            .collect()
    }

    /// Direct flag and recipient: the `m.direct` partner; else, for a direct room, the one
    /// other member (bots aside), the other member of a two-member room, the stored
    /// recipient, or whoever invited the user.
    pub fn resolve_direct(&mut self, ctx: &IngestContext<'_>, direct: &DirectRooms) {
        let partner = direct.partner(&self.row.room_id);
        self.row.is_direct |= partner.is_some() || self.bridge_dm || self.invited_direct;
        if !self.row.is_direct {
            return;
        }
        let me = ctx.reader.matrix_user_id.as_str();
        let others = self.others(ctx);
        let everyone_else: Vec<&String> = self.members.iter().filter(|m| *m != me).collect();
        let recipient = if let Some(p) = partner {
            Some(p.to_owned())
        } else if others.len() == 1 {
            Some(others[0].to_owned())
        } else if everyone_else.len() == 1 {
            Some(everyone_else[0].clone())
        } else if self.row.recipient_id.is_some() {
            self.row.recipient_id.clone()
        } else {
            self.inviter
                .clone()
                .filter(|i| i != me && !self.bots.contains(i))
        };
        self.row.recipient_id = recipient;
    }

    /// Completes the row: members, platform, name; seals changed fields.
    pub fn finish(
        &mut self,
        ctx: &IngestContext<'_>,
        dek: &DataKey,
        summary: Option<&RoomSummary>,
    ) {
        self.row.member_count = self.members.len() as i64;
        if let Some(p) = self.platform_hint {
            self.row.platform = Some(p.to_owned());
        }
        let hint = ctx.hints.get(&self.row.room_id);
        // Joins, leaves and display-name changes can change a computed name.
        let people_changed = self.members != self.stored_members
            || !self.display_names.is_empty()
            || self.invites_changed;
        self.current.name = match &self.explicit_name {
            Some(Some(name)) => Some(name.clone()),
            Some(None) => Some(self.computed_name(ctx, summary, hint)),
            None if self.stored.name.is_none()
                || (people_changed && hint.is_some_and(|h| h.unnamed)) =>
            {
                Some(self.computed_name(ctx, summary, hint))
            }
            None => self.stored.name.clone(),
        };
        let (user, room) = (ctx.user_id, self.row.room_id.clone());
        let seal = |field, value: &Option<String>| {
            value
                .as_deref()
                .map(|v| seal_room_field(dek, user, &room, field, v))
        };
        if self.current.name != self.stored.name || self.row.name_enc.is_none() {
            self.row.name_enc = seal(RoomField::Name, &self.current.name);
        }
        if self.current.avatar != self.stored.avatar {
            self.row.avatar_enc = seal(RoomField::Avatar, &self.current.avatar);
        }
        if self.current.topic != self.stored.topic {
            self.row.topic_enc = seal(RoomField::Topic, &self.current.topic);
        }
        self.current.recipient_name = self.recipient_name(hint);
        if self.current.recipient_name != self.stored.recipient_name {
            self.row.recipient_name_enc =
                seal(RoomField::RecipientName, &self.current.recipient_name);
        }
    }

    /// Whether anything stored changes, compared with the row as loaded.
    pub fn changed(&self) -> bool {
        let Some(old) = &self.existing else {
            return true;
        };
        let r = &self.row;
        self.current != self.stored
            || self.members != self.stored_members
            || old.name_enc.is_none() != r.name_enc.is_none()
            || (old.is_direct, &old.recipient_id, &old.platform)
                != (r.is_direct, &r.recipient_id, &r.platform)
            || (old.member_count, old.unread_count, old.highlight_count)
                != (r.member_count, r.unread_count, r.highlight_count)
            || (&old.last_read_event_id, old.last_message_ts)
                != (&r.last_read_event_id, r.last_message_ts)
            || old.importance != r.importance
            || (&old.membership, &old.invited_by) != (&r.membership, &r.invited_by)
            || old.encrypted != r.encrypted
    }

    /// Writes the room and, when they changed, its members.
    pub fn save(&mut self, conn: &Connection, now: i64) -> rusqlite::Result<()> {
        self.row.updated_at = now;
        if self.existing.is_none() {
            rooms::upsert(conn, &self.row)?;
        } else {
            rooms::update_synced(conn, &self.row)?;
        }
        if self.members != self.stored_members {
            let members: Vec<String> = self.members.iter().cloned().collect();
            rooms::set_members(conn, &self.row.user_id, &self.row.room_id, &members)?;
        }
        Ok(())
    }
}
