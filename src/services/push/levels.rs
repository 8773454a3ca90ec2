//! Notification levels per chat and the rule that decides whether a message notifies,
//! for Web Push and APNs alike.
//!
//! - Levels: `all` (default), `mentions`, `off`. `off` is the room's `muted` flag, so
//!   muting sets the level and setting the level `off` mutes (the chosen `all`/`mentions`
//!   comes back on unmute).
//! - `mentions`: only messages that mention the user (their Matrix ID in
//!   `m.mentions.user_ids`, or their display name or Matrix localpart as a word of the
//!   text) or reply to one of their messages.
//! - A snoozed room (`snoozeUntil` in the future) notifies nothing until then.
//! - Never for the user's own messages, nor for a message the user has already read.

use serde_json::Value;

use super::now_ms;
use crate::clients::matrix::conversation::RoomPushLevel;
use crate::error::{AppError, AppResult};
use crate::events::ChangeEvent;
use crate::services::conversation::local_writes::SharedFlag;
use crate::services::session::Principal;
use crate::services::Context;
use crate::store::push_subscriptions as store;
use crate::store::rooms::RoomRow;

/// A snooze may reach at most this far ahead (a year).
pub const MAX_SNOOZE_MS: i64 = 366 * 24 * 3600 * 1000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    All,
    Mentions,
    Off,
}

impl Level {
    pub fn parse(value: &str) -> AppResult<Self> {
        match value {
            "all" => Ok(Self::All),
            "mentions" => Ok(Self::Mentions),
            "off" => Ok(Self::Off),
            _ => Err(AppError::invalid("level", "must be all, mentions or off")),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::All => "all",
            Self::Mentions => "mentions",
            Self::Off => "off",
        }
    }

    /// The level of a room as stored: `muted` wins, then `notify_level`.
    pub fn of(muted: bool, notify_level: &str) -> Self {
        match (muted, notify_level) {
            (true, _) => Self::Off,
            (false, "mentions") => Self::Mentions,
            _ => Self::All,
        }
    }

    pub fn of_row(row: &RoomRow) -> Self {
        Self::of(row.muted, &row.notify_level)
    }
}

/// `PUT /api/rooms/{roomId}/notifications`: sets the level and the snooze (absent or null:
/// no snooze; a past time clears it). 404 when the user does not have the room.
pub async fn set(
    state: &Context,
    principal: &Principal,
    room_id: &str,
    level: &str,
    snooze_until: Option<i64>,
) -> AppResult<String> {
    let level = Level::parse(level)?;
    let now = now_ms();
    if let Some(t) = snooze_until {
        if t < 0 || t > now + MAX_SNOOZE_MS {
            return Err(AppError::invalid(
                "snoozeUntil",
                "must be a time in Unix milliseconds at most a year ahead",
            ));
        }
    }
    let snooze_until = snooze_until.filter(|t| *t > now);
    let room = crate::services::rooms::require_room(state, principal.user_id(), room_id).await?;
    let uid = principal.user_id().to_owned();
    let rid = room.room_id.clone();
    // Until the homeserver has the new rules, a sync response begun earlier keeps off them.
    let _writing = state.local_writes.begin(&uid, &rid, SharedFlag::PushLevel);
    state
        .db(move |c| {
            let n = store::set_room_levels(c, &uid, &rid, level.as_str(), snooze_until, now)?;
            if n == 0 {
                return Err(AppError::not_found("room"));
            }
            Ok(())
        })
        .await?;
    // Shared with the user's other Matrix clients as Element's push rules (best effort,
    // like the other flags: the level stays stored when the homeserver cannot be told).
    let pushed = match level {
        Level::All => RoomPushLevel::All,
        Level::Mentions => RoomPushLevel::Mentions,
        Level::Off => RoomPushLevel::Off,
    };
    crate::services::conversation::mirror::level(state, principal.user_id(), &room.room_id, pushed)
        .await;
    state.events.publish(
        principal.user_id(),
        ChangeEvent::RoomUpdated {
            room_id: room.room_id.clone(),
        },
    );
    Ok(room.room_id)
}

/// Who the user is, for finding mentions of them.
#[derive(Debug, Clone, Default)]
pub struct Me {
    pub matrix_user_id: Option<String>,
    pub display_name: Option<String>,
}

impl Me {
    fn localpart(&self) -> Option<&str> {
        let id = self.matrix_user_id.as_deref()?;
        id.strip_prefix('@')?.split(':').next()
    }
}

/// Whether `needle` occurs in `text` as a whole word (case-insensitive; a word boundary is
/// anything that is not a letter, digit or `_`).
fn has_word(text: &str, needle: &str) -> bool {
    let needle = needle.trim();
    if needle.is_empty() {
        return false;
    }
    let text = text.to_lowercase();
    let needle = needle.to_lowercase();
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let mut from = 0;
    while let Some(pos) = text[from..].find(&needle) {
        let start = from + pos;
        let end = start + needle.len();
        let before = text[..start].chars().next_back();
        let after = text[end..].chars().next();
        if !before.is_some_and(is_word) && !after.is_some_and(is_word) {
            return true;
        }
        from = start + text[start..].chars().next().map_or(1, char::len_utf8);
    }
    false
}

/// The event this message replies to, if any.
pub fn reply_target(content: &Value) -> Option<&str> {
    content
        .get("m.relates_to")?
        .get("m.in_reply_to")?
        .get("event_id")?
        .as_str()
}

/// Whether a message mentions the user. `replies_to_me`: it replies to one of their
/// messages (the caller looked the target up).
pub fn mentions(me: &Me, content: &Value, body: &str, replies_to_me: bool) -> bool {
    if replies_to_me {
        return true;
    }
    if let Some(id) = &me.matrix_user_id {
        let listed = content
            .get("m.mentions")
            .and_then(|m| m.get("user_ids"))
            .and_then(Value::as_array)
            .is_some_and(|ids| ids.iter().any(|v| v.as_str() == Some(id)));
        if listed {
            return true;
        }
    }
    [me.display_name.as_deref(), me.localpart()]
        .into_iter()
        .flatten()
        .any(|name| has_word(body, name))
}

/// What the rule needs to know about one incoming message.
#[derive(Debug, Clone)]
pub struct Facts {
    pub is_mine: bool,
    pub level: Level,
    pub snooze_until: Option<i64>,
    /// The user's read marker is at or after the message.
    pub read: bool,
    pub mentioned: bool,
    pub is_direct: bool,
}

/// Why a message does not notify, or how urgently it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Skip(&'static str),
    /// `high`: a direct chat or a mention (RFC 8030 `Urgency: high`).
    Notify {
        high: bool,
    },
}

pub fn verdict(f: &Facts, now: i64) -> Verdict {
    if f.is_mine {
        return Verdict::Skip("own message");
    }
    match f.level {
        Level::Off => return Verdict::Skip("muted"),
        Level::Mentions if !f.mentioned => return Verdict::Skip("not a mention"),
        _ => {}
    }
    if f.snooze_until.is_some_and(|t| t > now) {
        return Verdict::Skip("snoozed");
    }
    if f.read {
        return Verdict::Skip("already read");
    }
    Verdict::Notify {
        high: f.is_direct || f.mentioned,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn me() -> Me {
        Me {
            matrix_user_id: Some("@alice:example.org".into()),
            display_name: Some("Alice B".into()),
        }
    }

    #[test]
    fn mentions_by_id_name_localpart_or_reply() {
        let none = json!({});
        assert!(mentions(
            &me(),
            &json!({"m.mentions": {"user_ids": ["@alice:example.org"]}}),
            "hi",
            false
        ));
        assert!(!mentions(
            &me(),
            &json!({"m.mentions": {"user_ids": ["@bob:example.org"]}}),
            "hi",
            false
        ));
        assert!(mentions(&me(), &none, "hey alice, lunch?", false));
        assert!(mentions(&me(), &none, "ask Alice B.", false));
        assert!(!mentions(&me(), &none, "malice aforethought", false));
        assert!(!mentions(&me(), &none, "alice_x is here", false));
        assert!(mentions(&me(), &none, "nothing", true));
        assert!(!mentions(&Me::default(), &none, "alice", false));
    }

    #[test]
    fn the_rule() {
        let base = Facts {
            is_mine: false,
            level: Level::All,
            snooze_until: None,
            read: false,
            mentioned: false,
            is_direct: false,
        };
        let now = 1_000;
        assert_eq!(verdict(&base, now), Verdict::Notify { high: false });
        let f = |change: &dyn Fn(&mut Facts)| {
            let mut f = base.clone();
            change(&mut f);
            verdict(&f, now)
        };
        assert_eq!(f(&|f| f.is_mine = true), Verdict::Skip("own message"));
        assert_eq!(f(&|f| f.level = Level::Off), Verdict::Skip("muted"));
        assert_eq!(
            f(&|f| f.level = Level::Mentions),
            Verdict::Skip("not a mention")
        );
        assert_eq!(
            f(&|f| {
                f.level = Level::Mentions;
                f.mentioned = true
            }),
            Verdict::Notify { high: true }
        );
        assert_eq!(
            f(&|f| f.snooze_until = Some(2_000)),
            Verdict::Skip("snoozed")
        );
        assert_eq!(
            f(&|f| f.snooze_until = Some(500)),
            Verdict::Notify { high: false }
        );
        assert_eq!(f(&|f| f.read = true), Verdict::Skip("already read"));
        assert_eq!(f(&|f| f.is_direct = true), Verdict::Notify { high: true });
        assert_eq!(Level::of(true, "mentions"), Level::Off);
        assert_eq!(Level::of(false, ""), Level::All);
        assert_eq!(Level::of(false, "mentions"), Level::Mentions);
    }
}
