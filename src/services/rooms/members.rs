//! A room's members and direct partner read again from the homeserver when it is opened,
//! and the rule that picks the direct partner.

use std::collections::HashMap;

use rusqlite::TransactionBehavior;

use super::REFRESH_TIMEOUT;
use crate::clock::unix_now;
use crate::error::AppResult;
use crate::services::users;
use crate::services::Context;
use crate::store::rooms::{self, RoomRow};
use crate::store::users::UserRow;
use crate::store::Conn;

/// Asks the homeserver for the joined members and the user's `m.direct` map, resolves the
/// direct recipient and stores both. Failures (homeserver down, room left on Matrix) keep
/// the stored data.
pub(super) async fn refresh_members(state: &Context, user: &UserRow, row: &RoomRow) {
    let Some(me) = user.matrix_user_id.as_deref() else {
        return;
    };
    let Some((members, direct)) = ask_the_homeserver(state, user, me, &row.room_id).await else {
        return;
    };
    if members.is_none() && direct.is_none() {
        return;
    }
    let bots: Vec<&str> = state
        .config
        .bridges
        .iter()
        .filter_map(|(_, b)| b.bot_user_id.as_deref())
        .collect();
    let (is_direct, recipient) = resolve_recipient(
        me,
        &row.room_id,
        row.is_direct,
        row.recipient_id.as_deref(),
        members.as_deref(),
        direct.as_ref(),
        &bots,
    );
    let fresh = Fresh {
        member_count: members
            .as_ref()
            .map_or(row.member_count, |m| m.len() as i64),
        members,
        is_direct,
        recipient,
    };
    let (uid, rid) = (row.user_id.clone(), row.room_id.clone());
    let stored = state
        .db(move |c| store_if_changed(c, &uid, &rid, &fresh))
        .await;
    if let Err(e) = stored {
        tracing::warn!(error = %e, "refreshed room members not stored");
    }
}

/// The joined members and the `m.direct` map, each `None` when its lookup failed; `None`
/// in all when there is no homeserver or token, or it is too slow.
async fn ask_the_homeserver(
    state: &Context,
    user: &UserRow,
    me: &str,
    room_id: &str,
) -> Option<(Option<Vec<String>>, Option<HashMap<String, Vec<String>>>)> {
    let matrix = state.matrix.as_ref()?;
    let token = match users::matrix_token_of(&state.master, user) {
        Ok(t) => t?,
        Err(e) => {
            tracing::warn!(error = %e, "cannot open the Matrix access token");
            return None;
        }
    };
    let lookups = async {
        tokio::join!(
            matrix.joined_members(&token, room_id),
            matrix.direct_rooms(&token, me)
        )
    };
    let Ok((members, direct)) = tokio::time::timeout(REFRESH_TIMEOUT, lookups).await else {
        tracing::info!(room = %room_id, "homeserver too slow; stored members served");
        return None;
    };
    let members = members
        .inspect_err(
            |e| tracing::info!(room = %room_id, error = %e, "joined members not refreshed"),
        )
        .ok();
    let direct = direct
        .inspect_err(|e| tracing::info!(error = %e, "m.direct not read"))
        .ok();
    Some((members, direct))
}

/// What the homeserver says now about a room's members and direct partner.
struct Fresh {
    members: Option<Vec<String>>,
    is_direct: bool,
    recipient: Option<String>,
    member_count: i64,
}

/// Stores `fresh` when it differs from the stored room. Nothing new: no write (a write
/// would end every cached page of the database).
fn store_if_changed(c: &mut Conn, uid: &str, rid: &str, fresh: &Fresh) -> AppResult<()> {
    let Some(stored) = rooms::find(c, uid, rid)? else {
        return Ok(());
    };
    let same_members = match &fresh.members {
        Some(m) => {
            let mut sorted = m.clone();
            sorted.sort();
            sorted.dedup();
            sorted == rooms::members(c, uid, rid)?
        }
        None => true,
    };
    if same_members
        && stored.is_direct == fresh.is_direct
        && stored.recipient_id == fresh.recipient
        && stored.member_count == fresh.member_count
    {
        return Ok(());
    }
    let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
    if rooms::find(&tx, uid, rid)?.is_none() {
        return Ok(());
    }
    if let Some(members) = &fresh.members {
        rooms::set_members(&tx, uid, rid, members)?;
    }
    rooms::set_direct_info(
        &tx,
        uid,
        rid,
        fresh.is_direct,
        fresh.recipient.as_deref(),
        fresh.member_count,
        unix_now() as i64,
    )?;
    tx.commit()?;
    Ok(())
}

/// Who the direct partner of a room is.
///
/// - The room is listed in the user's `m.direct` under exactly one partner: that partner
///   (and the room is direct).
/// - Otherwise, for a direct room, the one joined member that is neither the user nor a
///   configured bridge bot; several such members: unknown (null); none (the partner has
///   not joined yet) or members unknown: the stored recipient.
/// - Group rooms have no recipient.
pub fn resolve_recipient(
    me: &str,
    room_id: &str,
    stored_is_direct: bool,
    stored_recipient: Option<&str>,
    members: Option<&[String]>,
    direct: Option<&HashMap<String, Vec<String>>>,
    bots: &[&str],
) -> (bool, Option<String>) {
    let partners: Vec<&String> = direct
        .map(|map| {
            map.iter()
                .filter(|(partner, rooms)| {
                    partner.as_str() != me && rooms.iter().any(|r| r == room_id)
                })
                .map(|(partner, _)| partner)
                .collect()
        })
        .unwrap_or_default();
    let is_direct = stored_is_direct || !partners.is_empty();
    if partners.len() == 1 {
        return (true, Some(partners[0].clone()));
    }
    if !is_direct {
        return (false, None);
    }
    let Some(members) = members else {
        return (true, stored_recipient.map(str::to_owned));
    };
    let others: Vec<&String> = members
        .iter()
        .filter(|m| m.as_str() != me && !bots.contains(&m.as_str()))
        .collect();
    match others.as_slice() {
        [one] => (true, Some((*one).clone())),
        [] => (true, stored_recipient.map(str::to_owned)),
        _ => (true, None),
    }
}
