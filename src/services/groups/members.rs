//! `GET /api/rooms/{roomId}/members`: who is in a group (joined and invited), each with
//! display name and power level, and what the user may change there, read live from the
//! homeserver's room state (so the group details screen matches what the homeserver will
//! allow).

use std::collections::HashMap;

use serde_json::Value;

use super::{joined_room, refused};
use crate::clients::matrix::types::Event;

/// The power level given to the creators of a room version 12 room, who outrank every
/// number: JavaScript's largest safe integer, so clients read it exactly.
pub const CREATOR_LEVEL: i64 = (1 << 53) - 1;

/// Most members listed (joined first, then by power and name); `total` counts them all.
pub const MAX_MEMBERS: usize = 500;

/// A member of the group.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    pub user_id: String,
    pub display_name: Option<String>,
    pub has_avatar: bool,
    /// `join`, `invite` or `ban`.
    pub membership: String,
    pub power_level: i64,
}

/// What the user may do in the group, by the room's power levels.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Permissions {
    pub rename: bool,
    pub set_topic: bool,
    pub set_avatar: bool,
    pub invite: bool,
    pub remove: bool,
}

pub struct Members {
    pub members: Vec<Member>,
    pub total: usize,
    pub me: Permissions,
}

pub async fn list(
    state: &crate::services::Context,
    user_id: &str,
    room_id: &str,
) -> crate::error::AppResult<Members> {
    let room = joined_room(state, user_id, room_id).await?;
    let events = room
        .matrix
        .room_state(&room.acting.token, &room.room_id)
        .await
        .map_err(|e| refused("read this room", e))?;
    Ok(from_state(&events, &room.acting.mxid))
}

/// Power levels as the spec defines them, with its defaults when a key is missing.
struct Levels<'a> {
    content: &'a Value,
    /// Creators of a room version 12 room: above every level.
    creators: Vec<&'a str>,
}

impl Levels<'_> {
    fn number(&self, key: &str, default: i64) -> i64 {
        self.content[key].as_i64().unwrap_or(default)
    }

    fn user(&self, user_id: &str) -> i64 {
        if self.creators.contains(&user_id) {
            return CREATOR_LEVEL;
        }
        self.content["users"][user_id]
            .as_i64()
            .unwrap_or_else(|| self.number("users_default", 0))
    }

    fn state_event(&self, kind: &str) -> i64 {
        self.content["events"][kind]
            .as_i64()
            .unwrap_or_else(|| self.number("state_default", 50))
    }
}

/// The members and the user's permissions from the room's full state.
pub fn from_state(events: &[Event], me: &str) -> Members {
    let empty = Value::Null;
    let of_kind = |kind: &str| {
        events
            .iter()
            .find(|e| e.kind == kind && e.state_key.as_deref() == Some(""))
    };
    let power = of_kind("m.room.power_levels").map_or(&empty, |e| &e.content);
    let create = of_kind("m.room.create");
    let creators = create
        .filter(|c| c.content["room_version"] == "12")
        .map(|c| {
            let mut v: Vec<&str> = c.sender.as_deref().into_iter().collect();
            if let Some(more) = c.content["additional_creators"].as_array() {
                v.extend(more.iter().filter_map(Value::as_str));
            }
            v
        })
        .unwrap_or_default();
    let levels = Levels {
        content: power,
        creators,
    };
    let mut members: Vec<Member> = events
        .iter()
        .filter(|e| e.kind == "m.room.member")
        .filter_map(|e| {
            let user_id = e.state_key.clone()?;
            let membership = e.content["membership"].as_str()?.to_owned();
            matches!(membership.as_str(), "join" | "invite" | "ban").then(|| Member {
                power_level: levels.user(&user_id),
                display_name: e.content["displayname"].as_str().map(str::to_owned),
                has_avatar: e.content["avatar_url"]
                    .as_str()
                    .is_some_and(|u| !u.is_empty()),
                user_id,
                membership,
            })
        })
        .collect();
    let rank: HashMap<&str, u8> = [("join", 0), ("invite", 1), ("ban", 2)].into();
    members.sort_by(|a, b| {
        rank[a.membership.as_str()]
            .cmp(&rank[b.membership.as_str()])
            .then(b.power_level.cmp(&a.power_level))
            .then_with(|| sort_name(a).cmp(&sort_name(b)))
    });
    let total = members.len();
    members.truncate(super::members::MAX_MEMBERS);
    let mine = levels.user(me);
    let me = Permissions {
        rename: mine >= levels.state_event("m.room.name"),
        set_topic: mine >= levels.state_event("m.room.topic"),
        set_avatar: mine >= levels.state_event("m.room.avatar"),
        invite: mine >= levels.number("invite", 0),
        remove: mine >= levels.number("kick", 50),
    };
    Members { members, total, me }
}

fn sort_name(m: &Member) -> String {
    m.display_name
        .as_deref()
        .unwrap_or(&m.user_id)
        .to_lowercase()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn ev(v: Value) -> Event {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn members_and_permissions_follow_the_power_levels() {
        let state = vec![
            ev(
                json!({"type": "m.room.create", "state_key": "", "sender": "@a:x", "content": {"room_version": "10"}}),
            ),
            ev(
                json!({"type": "m.room.power_levels", "state_key": "", "content": {
                "users": {"@a:x": 100, "@b:x": 50}, "events": {"m.room.name": 60}, "kick": 50}}),
            ),
            ev(
                json!({"type": "m.room.member", "state_key": "@a:x", "content": {"membership": "join", "displayname": "Ann"}}),
            ),
            ev(
                json!({"type": "m.room.member", "state_key": "@b:x", "content": {"membership": "join", "avatar_url": "mxc://x/y"}}),
            ),
            ev(
                json!({"type": "m.room.member", "state_key": "@c:x", "content": {"membership": "invite"}}),
            ),
            ev(
                json!({"type": "m.room.member", "state_key": "@d:x", "content": {"membership": "leave"}}),
            ),
        ];
        let m = from_state(&state, "@b:x");
        let ids: Vec<_> = m.members.iter().map(|m| m.user_id.as_str()).collect();
        assert_eq!(ids, ["@a:x", "@b:x", "@c:x"]);
        assert_eq!(m.total, 3);
        assert!(m.members[1].has_avatar);
        // 50: topic and avatar (state_default 50), invite and kick, but not the name (60).
        assert_eq!(
            m.me,
            Permissions {
                rename: false,
                set_topic: true,
                set_avatar: true,
                invite: true,
                remove: true
            }
        );
        let c = from_state(&state, "@c:x").me;
        assert!(c.invite && !c.remove && !c.set_topic);
        // Room version 12: the creator outranks every level without being listed.
        let v12 = vec![ev(
            json!({"type": "m.room.create", "state_key": "", "sender": "@z:x",
            "content": {"room_version": "12"}}),
        )];
        assert!(from_state(&v12, "@z:x").me.rename);
    }
}
