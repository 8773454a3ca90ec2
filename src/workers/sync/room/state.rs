//! Matrix state events read into a [`RoomView`]: name, avatar, topic, encryption, members
//! and their display names, invitations, and the bridge a room belongs to (believed only
//! from the configured bridge bots).

use super::RoomView;
use crate::clients::matrix::types::Event;
use crate::services::senders::{text_field, Profile};
use crate::workers::sync::context::IngestContext;

impl RoomView {
    /// After applying an invite's state: that state is stripped state, copies the inviting
    /// server chose rather than authenticated events, so senders in it prove nothing. Only
    /// the invite event itself counts: the platform is the trusted inviter's (bot or ghost),
    /// and bridge flags from the stripped state are dropped. The full state arrives once
    /// the room is joined.
    pub fn distrust_invite_state(&mut self, ctx: &IngestContext<'_>) {
        self.bridge_dm = false;
        // Names from stripped state are the inviting server's word: not kept.
        self.profiles.clear();
        self.platform_hint = self.inviter.as_deref().and_then(|i| {
            ctx.bridges
                .bot_platform(i)
                .or_else(|| ctx.bridges.ghost_platform(i))
        });
    }

    /// Applies one state event (from `state`, `invite_state`, or the timeline).
    pub fn apply_state(&mut self, ctx: &IngestContext<'_>, ev: &Event) {
        let content = &ev.content;
        let text = |key: &str| text_field(content, key);
        match ev.kind.as_str() {
            "m.room.name" => self.explicit_name = Some(text("name")),
            "m.room.avatar" => self.current.avatar = text("url"),
            "m.room.topic" => self.current.topic = text("topic"),
            "m.room.member" => self.apply_member(ctx, ev),
            "m.room.encryption" => self.row.encrypted = true,
            "m.room.create" => {
                // The sender, not `content.creator`: before room version 11 the content
                // is not checked against the sender, so a remote server could forge it.
                if let Some(p) = ev
                    .sender
                    .as_deref()
                    .and_then(|c| ctx.bridges.bot_platform(c))
                {
                    self.platform_hint = Some(p);
                }
            }
            "m.bridge" | "uk.half-shot.bridge" => {
                // Anyone with enough power in a room can send bridge state: only the
                // configured bot of the platform it names is believed (see
                // `bridges::identity`); otherwise the room stays a plain Matrix room.
                let sender = ev.sender.as_deref().unwrap_or_default();
                let named = content["protocol"]["id"].as_str().and_then(platform_of);
                match ctx.bridges.bot_platform(sender) {
                    Some(p) if named.is_none_or(|n| n == p) => {
                        self.platform_hint = Some(p);
                        if content["com.beeper.room_type"] == "dm" {
                            self.bridge_dm = true;
                        }
                    }
                    _ => tracing::debug!(
                        room_id = %self.row.room_id, %sender,
                        "bridge state not sent by the configured bot; ignored"
                    ),
                }
            }
            _ => {}
        }
    }

    fn apply_member(&mut self, ctx: &IngestContext<'_>, ev: &Event) {
        let Some(member) = ev.state_key.as_deref() else {
            return;
        };
        let content = &ev.content;
        if let Some(name) = content["displayname"].as_str().map(str::trim) {
            if !name.is_empty() {
                self.display_names
                    .insert(member.to_owned(), name.to_owned());
            }
        }
        match content["membership"].as_str().unwrap_or_default() {
            "join" => {
                self.invited.remove(member);
                self.members.insert(member.to_owned());
                self.profiles
                    .insert(member.to_owned(), Profile::from_member_content(content));
                if let Some(p) = ctx.bridges.bot_platform(member) {
                    self.platform_hint.get_or_insert(p);
                }
            }
            "invite" if member == ctx.reader.matrix_user_id => {
                self.inviter = ev.sender.clone();
                self.invited_direct |= content["is_direct"] == true;
            }
            "invite" => {
                self.invites_changed = true;
                self.invited.insert(member.to_owned());
            }
            "leave" | "ban" => {
                self.invites_changed |=
                    self.invited.remove(member) || member != ctx.reader.matrix_user_id;
                self.members.remove(member);
            }
            _ => {}
        }
    }
}

/// Maps a bridge `protocol.id` to a platform (`discordgo` is Discord's).
pub fn platform_of(protocol_id: &str) -> Option<&'static str> {
    let id = protocol_id.to_ascii_lowercase();
    crate::clients::provisioning::Platform::ALL
        .into_iter()
        .map(crate::clients::provisioning::Platform::id)
        .find(|p| id.contains(p))
}
