//! What ingest reads beyond messages and room state, for a conversation that feels alive
//! and agrees with the user's other Matrix clients:
//!
//! - `m.typing` (ephemeral): who else is typing, published as `typing`; nothing stored.
//! - `m.receipt` (ephemeral): other members' latest public `m.read` receipt in the main
//!   timeline, stored and published as `receipt` when it moved (the user's own receipts
//!   move the read marker in `amend`).
//! - room account data `m.tag`: `m.favourite` is the favorite flag, `m.lowpriority` the
//!   archived flag; `m.marked_unread` (and its unstable predecessor
//!   `com.famedly.marked_unread`) the marked-unread mark.
//! - global account data `m.push_rules`: the per-room rules Element writes
//!   ([`room_push_levels`]) give each room's level; `Off` is the muted flag, `Mentions`
//!   and `All` the level (`notify_level`) of a room that is not muted.
//!
//! Each flag is applied only when its event is in the response (another client changed it,
//! or this is the first sync), so flags set before the homeserver knew them stay; and not
//! when the user changed that flag here after the sync request began
//! ([`strip_overtaken`]): the response may have been computed before the change reached
//! the homeserver. Such a left-out flag is read again from the homeserver once the write
//! has finished (`worker_recheck`): the left-out copy may also have carried another
//! client's later change, and the sync will not bring it again.

use std::collections::BTreeSet;
use std::time::Instant;

use rusqlite::Transaction;
use serde_json::Value;

use super::context::{IngestContext, Live};
use crate::clients::matrix::conversation::{room_push_levels, RoomPushLevel};
use crate::clients::matrix::types::{Events, JoinedRoom, SyncResponse};
use crate::services::conversation::local_writes::{LocalWrites, SharedFlag};
use crate::services::conversation::mirror::{FAVOURITE_TAG, LOW_PRIORITY_TAG};
use crate::store::conversation::{self, ReceiptRow};
use crate::store::rooms::{self, RoomFlag};

/// Room account data of the marked-unread mark (Matrix 1.12), and its unstable name.
pub const MARKED_UNREAD: &str = "m.marked_unread";
pub const MARKED_UNREAD_UNSTABLE: &str = "com.famedly.marked_unread";

/// What [`strip_overtaken`] left out of a response.
#[derive(Debug, Default)]
pub struct Overtaken {
    /// Each room's flag whose copy in the response was left out: read again from the
    /// homeserver once the local write has finished, since another client may have
    /// changed it too and this response was its only news of that.
    pub stale: BTreeSet<(String, SharedFlag)>,
    /// The response's `m.push_rules` when some rooms' levels were written here meanwhile:
    /// applied to every other room ([`push_rules_except`]).
    pub push_rules: Option<Value>,
}

/// Takes out of `resp` the shared flags the user changed here after the request began
/// (`began`) or is changing now: a room's `m.tag` and `m.marked_unread`, and the
/// `m.push_rules` event when a room's level was changed (kept in the result, to apply to
/// the other rooms). Call it inside ingest's transaction, so a local change either
/// committed before (and is seen here) or commits after ingest.
pub fn strip_overtaken(
    writes: &LocalWrites,
    user_id: &str,
    began: Instant,
    resp: &mut SyncResponse,
) -> Overtaken {
    let mut out = Overtaken::default();
    for (room_id, room) in resp.rooms.join.iter_mut() {
        room.account_data.events.retain(|ev| {
            let flag = match ev.kind.as_str() {
                "m.tag" => SharedFlag::Tags,
                MARKED_UNREAD | MARKED_UNREAD_UNSTABLE => SharedFlag::MarkedUnread,
                _ => return true,
            };
            let overtaken = writes.is_newer(user_id, room_id, flag, began);
            if overtaken {
                tracing::debug!(%room_id, kind = %ev.kind, "room account data older than a local change: left out");
                out.stale.insert((room_id.clone(), flag));
            }
            !overtaken
        });
    }
    let rooms = writes.newer_rooms(user_id, SharedFlag::PushLevel, began);
    let rules = resp
        .account_data
        .events
        .iter()
        .rposition(|e| e.kind == "m.push_rules");
    if let (false, Some(at)) = (rooms.is_empty(), rules) {
        let ev = resp.account_data.events.remove(at);
        resp.account_data
            .events
            .retain(|e| e.kind != "m.push_rules");
        out.push_rules = Some(ev.content);
        out.stale
            .extend(rooms.into_iter().map(|r| (r, SharedFlag::PushLevel)));
    }
    out
}

/// Typing and others' receipts of a joined room; returns whether the room's stored
/// receipts changed.
pub(super) fn ephemeral(
    tx: &Transaction<'_>,
    ctx: &IngestContext<'_>,
    room_id: &str,
    room: &JoinedRoom,
    live: &mut Live,
) -> rusqlite::Result<()> {
    let me = ctx.reader.matrix_user_id.as_str();
    for ev in &room.ephemeral.events {
        match ev.kind.as_str() {
            "m.typing" => {
                let others: Vec<String> = ev.content["user_ids"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|u| u.as_str())
                    .filter(|u| *u != me)
                    .map(str::to_owned)
                    .collect();
                live.typing.push((room_id.to_owned(), others));
            }
            "m.receipt" => {
                for (event_id, kinds) in ev.content.as_object().into_iter().flatten() {
                    for (reader, r) in kinds["m.read"].as_object().into_iter().flatten() {
                        let main = r["thread_id"].as_str().is_none_or(|t| t == "main");
                        if reader == me || !main {
                            continue;
                        }
                        let row = ReceiptRow {
                            reader_id: reader.clone(),
                            event_id: event_id.clone(),
                            ts: r["ts"].as_i64().unwrap_or(ctx.now * 1000),
                        };
                        if conversation::upsert_receipt(tx, ctx.user_id, room_id, &row)? {
                            live.receipts.push((room_id.to_owned(), row));
                        }
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// The flags another client set on a joined room (room account data); returns whether
/// one changed. The room's row exists (it was just stored).
pub(super) fn room_flags(
    tx: &Transaction<'_>,
    ctx: &IngestContext<'_>,
    room_id: &str,
    data: &Events,
) -> rusqlite::Result<bool> {
    let Some(row) = rooms::find(tx, ctx.user_id, room_id)? else {
        return Ok(false);
    };
    let mut changed = false;
    for ev in &data.events {
        match ev.kind.as_str() {
            "m.tag" => {
                let tags = &ev.content["tags"];
                let favourite = tags.get(FAVOURITE_TAG).is_some();
                let archived = tags.get(LOW_PRIORITY_TAG).is_some();
                if favourite != row.favorite {
                    rooms::set_flag(
                        tx,
                        ctx.user_id,
                        room_id,
                        RoomFlag::Favorite,
                        favourite,
                        ctx.now,
                    )?;
                    changed = true;
                }
                if archived != row.archived {
                    rooms::set_flag(
                        tx,
                        ctx.user_id,
                        room_id,
                        RoomFlag::Archived,
                        archived,
                        ctx.now,
                    )?;
                    changed = true;
                }
            }
            MARKED_UNREAD | MARKED_UNREAD_UNSTABLE => {
                let unread = ev.content["unread"].as_bool().unwrap_or(false);
                changed |= conversation::set_marked_unread(tx, ctx.user_id, room_id, unread)?;
            }
            _ => {}
        }
    }
    Ok(changed)
}

/// The rooms' levels from a new `m.push_rules` in the global account data; returns the
/// rooms whose flags changed. `Off` is muted; otherwise the room is unmuted at `Mentions`
/// or `All` (a room absent from the rules is at `All`).
pub(super) fn push_rules(
    tx: &Transaction<'_>,
    ctx: &IngestContext<'_>,
    data: &Events,
) -> rusqlite::Result<Vec<String>> {
    let Some(ev) = data.events.iter().rev().find(|e| e.kind == "m.push_rules") else {
        return Ok(Vec::new());
    };
    push_rules_except(tx, ctx, &ev.content, &BTreeSet::new())
}

/// [`push_rules`] from the event's content, leaving alone the rooms whose flag is in
/// `keep` (their level was written here after the rules were read).
pub(super) fn push_rules_except(
    tx: &Transaction<'_>,
    ctx: &IngestContext<'_>,
    content: &Value,
    keep: &BTreeSet<(String, SharedFlag)>,
) -> rusqlite::Result<Vec<String>> {
    let levels = room_push_levels(content);
    let mut changed = Vec::new();
    for (room_id, muted, notify) in conversation::push_levels(tx, ctx.user_id)? {
        if !keep.is_empty() && keep.contains(&(room_id.clone(), SharedFlag::PushLevel)) {
            continue;
        }
        let level = levels.get(&room_id).copied().unwrap_or(RoomPushLevel::All);
        if apply_level(tx, ctx, &room_id, (muted, &notify), level)? {
            changed.push(room_id);
        }
    }
    Ok(changed)
}

/// Where a room's push level lands in its stored flags (`(muted, notify_level)` now):
/// `Off` is muted (the level to come back to is kept); `Mentions` and `All` unmute and set
/// the level. Returns whether anything changed.
fn apply_level(
    tx: &Transaction<'_>,
    ctx: &IngestContext<'_>,
    room_id: &str,
    (muted, notify): (bool, &str),
    level: RoomPushLevel,
) -> rusqlite::Result<bool> {
    let want_muted = level == RoomPushLevel::Off;
    let mut changed = false;
    if want_muted != muted {
        rooms::set_flag(
            tx,
            ctx.user_id,
            room_id,
            RoomFlag::Muted,
            want_muted,
            ctx.now,
        )?;
        changed = true;
    }
    let want_level = match level {
        RoomPushLevel::Off => notify,
        RoomPushLevel::Mentions => "mentions",
        RoomPushLevel::All => "all",
    };
    if want_level != notify {
        conversation::set_notify_level(tx, ctx.user_id, room_id, want_level, ctx.now)?;
        changed = true;
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: &str = "u1";
    const ROOM: &str = "!a:hs";

    /// A response that, among other things, marks ROOM unread, tags it favourite and
    /// brings new push rules.
    fn response() -> SyncResponse {
        serde_json::from_value(serde_json::json!({
            "next_batch": "s2",
            "account_data": {"events": [
                {"type": "m.push_rules", "content": {"global": {}}},
                {"type": "m.direct", "content": {}},
            ]},
            "rooms": {"join": {ROOM: {"account_data": {"events": [
                {"type": "m.marked_unread", "content": {"unread": true}},
                {"type": "m.tag", "content": {"tags": {"m.favourite": {}}}},
                {"type": "m.fully_read", "content": {"event_id": "$e"}},
            ]}}}},
        }))
        .unwrap()
    }

    fn room_kinds(resp: &SyncResponse) -> Vec<&str> {
        resp.rooms.join[ROOM]
            .account_data
            .events
            .iter()
            .map(|e| e.kind.as_str())
            .collect()
    }

    #[test]
    fn a_clear_after_the_request_began_keeps_the_older_mark_out() {
        let writes = LocalWrites::default();
        let began = Instant::now();
        // The user reads the room while the request is on its way.
        drop(writes.begin(ME, ROOM, SharedFlag::MarkedUnread));
        let mut resp = response();
        let out = strip_overtaken(&writes, ME, began, &mut resp);
        assert_eq!(room_kinds(&resp), ["m.tag", "m.fully_read"]);
        assert_eq!(resp.account_data.events.len(), 2, "push rules untouched");
        let stale: Vec<_> = out.stale.into_iter().collect();
        assert_eq!(stale, [(ROOM.to_owned(), SharedFlag::MarkedUnread)]);
        assert!(out.push_rules.is_none());
    }

    #[test]
    fn a_level_changed_meanwhile_keeps_the_push_rules_for_the_other_rooms() {
        let writes = LocalWrites::default();
        let began = Instant::now();
        let _writing = writes.begin(ME, "!other:hs", SharedFlag::PushLevel);
        let mut resp = response();
        let out = strip_overtaken(&writes, ME, began, &mut resp);
        assert_eq!(out.push_rules, Some(serde_json::json!({"global": {}})));
        let stale: Vec<_> = out.stale.into_iter().collect();
        assert_eq!(stale, [("!other:hs".to_owned(), SharedFlag::PushLevel)]);
        let kinds: Vec<&str> = resp
            .account_data
            .events
            .iter()
            .map(|e| e.kind.as_str())
            .collect();
        assert_eq!(kinds, ["m.direct"]);
        assert_eq!(room_kinds(&resp).len(), 3, "room data untouched");
    }

    #[test]
    fn a_response_begun_after_the_write_or_for_another_user_is_whole() {
        let writes = LocalWrites::default();
        drop(writes.begin(ME, ROOM, SharedFlag::Tags));
        drop(writes.begin("u2", ROOM, SharedFlag::MarkedUnread));
        std::thread::sleep(std::time::Duration::from_millis(2));
        let began = Instant::now();
        let mut resp = response();
        let out = strip_overtaken(&writes, ME, began, &mut resp);
        assert_eq!(room_kinds(&resp).len(), 3);
        assert_eq!(resp.account_data.events.len(), 2);
        assert!(out.stale.is_empty() && out.push_rules.is_none());
    }
}
