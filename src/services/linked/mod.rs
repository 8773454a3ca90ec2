//! Linked room groups: rooms of one user on different platforms that are the same
//! conversation (e.g. a person's WhatsApp and Telegram chats).
//!
//! - A room is in at most one group of its user (409 `rooms_already_linked`).
//! - The readable `name` is sealed at rest under the user's data key, AAD
//!   ("linked_groups", "name", groupId); `encryptedName`/`nonce` are the native clients'
//!   own opaque values.
//! - A group lives while it has rooms: it is created with at least 2, survives with 1, and
//!   is deleted when its last room leaves (`groupDeleted: true`), whether by
//!   `DELETE /api/rooms/linked/{groupId}/rooms/{roomId}` or by `DELETE /api/rooms/{roomId}`.

use std::collections::HashMap;

use rusqlite::TransactionBehavior;

use super::rooms::{
    validate_base64, validate_patch, validate_room_id, Patch, MAX_ENCRYPTED_NAME, MAX_NONCE,
};
use super::users;
use crate::clock::unix_now;
use crate::crypto::{Aad, DataKey};
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::Context;
use crate::store::linked_groups::{self, GroupRow};
use crate::store::rooms;
use crate::store::Conn;
use rusqlite::{Connection, Transaction};

mod input;

pub use input::{parse_group_id, validate_name, validate_room_ids, MAX_NAME, MAX_ROOM_IDS};

/// A group as its owner sees it.
#[derive(Debug, Clone)]
pub struct GroupView {
    pub row: GroupRow,
    /// The readable name; `None` when unset (or unreadable after the keys were deleted).
    pub name: Option<String>,
    /// Member rooms in the order they were added, with their platform (`None`: plain
    /// Matrix room, or a room no longer in the room list).
    pub rooms: Vec<(String, Option<String>)>,
}

fn name_aad(group_id: &str) -> Aad<'_> {
    Aad::new("linked_groups", "name", group_id)
}

fn dek_of(state: &Context, conn: &Connection, user_id: &str) -> AppResult<DataKey> {
    let user = crate::store::users::find(conn, user_id)?
        .ok_or_else(|| AppError::unauthorized("the signed-in user no longer exists"))?;
    users::data_key(&state.master, &user)
}

/// Runs `job` on the store's thread with the context, a connection and the user's id.
async fn run<T: Send + 'static>(
    state: &Context,
    user_id: &str,
    job: impl FnOnce(&Context, &mut Conn, &str) -> AppResult<T> + Send + 'static,
) -> AppResult<T> {
    let (state2, uid) = (state.clone(), user_id.to_owned());
    state.db(move |c| job(&state2, c, &uid)).await
}

/// [`run`] in one IMMEDIATE transaction, committed when `job` succeeds: the checks and
/// the changes of a write see the same rows.
async fn write<T: Send + 'static>(
    state: &Context,
    user_id: &str,
    job: impl FnOnce(&Context, &Transaction<'_>, &str) -> AppResult<T> + Send + 'static,
) -> AppResult<T> {
    run(state, user_id, move |state, c, uid| {
        let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let out = job(state, &tx, uid)?;
        tx.commit()?;
        Ok(out)
    })
    .await
}

/// 404 unless every room is a visible (joined or invited) room of the user.
fn require_rooms(conn: &Connection, user_id: &str, room_ids: &[String]) -> AppResult<()> {
    for id in room_ids {
        let visible = rooms::find(conn, user_id, id)?.is_some_and(|r| r.membership != "leave");
        if !visible {
            return Err(AppError::NotFound {
                code: ErrorCode::NotFound,
                message: format!("room {id} not found"),
            });
        }
    }
    Ok(())
}

fn already_linked(room_ids: &[String]) -> AppError {
    AppError::conflict(
        ErrorCode::RoomsAlreadyLinked,
        format!(
            "already in a linked group: {}; remove them from their group first",
            room_ids.join(", ")
        ),
    )
}

fn is_constraint(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::ConstraintViolation)
}

/// Adds rooms to a group; 409 when any is in another group (nothing is added then).
/// Rooms already in this group are skipped. Returns the rooms added.
fn link_rooms(
    conn: &Connection,
    user_id: &str,
    group_id: &str,
    room_ids: &[String],
    now: i64,
) -> AppResult<Vec<String>> {
    let mut taken = Vec::new();
    let mut add = Vec::new();
    for id in room_ids {
        match linked_groups::group_of_room(conn, user_id, id)? {
            Some(g) if g == group_id => {}
            Some(_) => taken.push(id.clone()),
            None => add.push(id.clone()),
        }
    }
    if !taken.is_empty() {
        return Err(already_linked(&taken));
    }
    for id in &add {
        linked_groups::add_room(conn, group_id, user_id, id, now).map_err(|e| {
            if is_constraint(&e) {
                already_linked(std::slice::from_ref(id))
            } else {
                e.into()
            }
        })?;
    }
    Ok(add)
}

fn load_view(conn: &Connection, dek: &DataKey, row: GroupRow) -> AppResult<GroupView> {
    let members = linked_groups::rooms(conn, &row.id)?;
    let ids: Vec<String> = members.into_iter().map(|m| m.room_id).collect();
    let platforms = rooms::platforms_of(conn, &row.user_id, &ids)?;
    let name = row
        .name_enc
        .as_deref()
        .and_then(|sealed| dek.open_string(sealed, &name_aad(&row.id)).ok());
    let rooms = ids
        .into_iter()
        .map(|id| {
            let platform = platforms.get(&id).cloned().flatten();
            (id, platform)
        })
        .collect();
    Ok(GroupView { row, name, rooms })
}

/// `POST /api/rooms/link`.
#[derive(Debug, Clone, Default)]
pub struct NewGroup {
    pub room_ids: Vec<String>,
    pub name: Option<String>,
    pub encrypted_name: Option<String>,
    pub nonce: Option<String>,
}

pub async fn create(state: &Context, user_id: &str, new: NewGroup) -> AppResult<GroupView> {
    let room_ids = validate_room_ids(&new.room_ids, 2)?;
    let name = new
        .name
        .as_deref()
        .map(validate_name)
        .transpose()?
        .flatten();
    let encrypted_name = new
        .encrypted_name
        .as_deref()
        .map(|v| validate_base64("encryptedName", v, MAX_ENCRYPTED_NAME))
        .transpose()?;
    let nonce = new
        .nonce
        .as_deref()
        .map(|v| validate_base64("nonce", v, MAX_NONCE))
        .transpose()?;
    write(state, user_id, move |state, tx, uid| {
        require_rooms(tx, uid, &room_ids)?;
        let dek = dek_of(state, tx, uid)?;
        let id = uuid::Uuid::new_v4().to_string();
        let now = unix_now() as i64;
        let row = GroupRow {
            name_enc: name.map(|n| dek.seal_str(&n, &name_aad(&id))),
            id,
            user_id: uid.to_owned(),
            encrypted_name,
            nonce,
            created_at: now,
            updated_at: now,
        };
        linked_groups::insert(tx, &row)?;
        link_rooms(tx, uid, &row.id, &room_ids, now)?;
        load_view(tx, &dek, row)
    })
    .await
}

pub async fn list(state: &Context, user_id: &str) -> AppResult<Vec<GroupView>> {
    run(state, user_id, |state, c, uid| {
        let dek = dek_of(state, c, uid)?;
        linked_groups::list(c, uid)?
            .into_iter()
            .map(|row| load_view(c, &dek, row))
            .collect()
    })
    .await
}

fn find_group(conn: &Connection, user_id: &str, group_id: &str) -> AppResult<GroupRow> {
    linked_groups::find(conn, user_id, group_id)?.ok_or_else(|| AppError::not_found("linked group"))
}

/// The user's group `group_id` as its owner sees it; 404 when the user has no such group.
fn view_of(
    state: &Context,
    conn: &Connection,
    user_id: &str,
    group_id: &str,
) -> AppResult<GroupView> {
    let row = find_group(conn, user_id, group_id)?;
    let dek = dek_of(state, conn, user_id)?;
    load_view(conn, &dek, row)
}

pub async fn get(state: &Context, user_id: &str, group_id: &str) -> AppResult<GroupView> {
    let gid = parse_group_id(group_id)?;
    run(state, user_id, move |state, c, uid| {
        view_of(state, c, uid, &gid)
    })
    .await
}

/// The group of a room; 404 when the user does not have the room.
pub async fn of_room(
    state: &Context,
    user_id: &str,
    room_id: &str,
) -> AppResult<Option<GroupView>> {
    let room_id = validate_room_id(room_id)?;
    run(state, user_id, move |state, c, uid| {
        require_rooms(c, uid, std::slice::from_ref(&room_id))
            .map_err(|_| AppError::not_found("room"))?;
        let Some(gid) = linked_groups::group_of_room(c, uid, &room_id)? else {
            return Ok(None);
        };
        view_of(state, c, uid, &gid).map(Some)
    })
    .await
}

/// `PUT /api/rooms/linked/{groupId}`: absent fields stay, null clears.
#[derive(Debug, Clone, Default)]
pub struct GroupChange {
    pub name: Patch,
    pub encrypted_name: Patch,
    pub nonce: Patch,
}

pub async fn update(
    state: &Context,
    user_id: &str,
    group_id: &str,
    change: GroupChange,
) -> AppResult<()> {
    let gid = parse_group_id(group_id)?;
    let name = match change.name {
        Some(Some(n)) => Some(validate_name(&n)?),
        other => other,
    };
    let encrypted_name =
        validate_patch("encryptedName", change.encrypted_name, MAX_ENCRYPTED_NAME)?;
    let nonce = validate_patch("nonce", change.nonce, MAX_NONCE)?;
    write(state, user_id, move |state, tx, uid| {
        let mut row = find_group(tx, uid, &gid)?;
        if let Some(name) = name {
            let dek = dek_of(state, tx, uid)?;
            row.name_enc = name.map(|n| dek.seal_str(&n, &name_aad(&row.id)));
        }
        if let Some(v) = encrypted_name {
            row.encrypted_name = v;
        }
        if let Some(v) = nonce {
            row.nonce = v;
        }
        row.updated_at = unix_now() as i64;
        linked_groups::update(tx, &row)?;
        Ok(())
    })
    .await
}

/// Deletes a group (its rooms stay); returns the normalized group id.
pub async fn delete(state: &Context, user_id: &str, group_id: &str) -> AppResult<String> {
    let gid = parse_group_id(group_id)?;
    run(state, user_id, move |_, c, uid| {
        if linked_groups::delete(c, uid, &gid)? == 0 {
            return Err(AppError::not_found("linked group"));
        }
        Ok(gid)
    })
    .await
}

/// `POST /api/rooms/linked/{groupId}/rooms`: returns the rooms added (rooms already in
/// this group are skipped; a room in another group is 409 and nothing is added).
pub async fn add_rooms(
    state: &Context,
    user_id: &str,
    group_id: &str,
    room_ids: Vec<String>,
) -> AppResult<Vec<String>> {
    let gid = parse_group_id(group_id)?;
    let room_ids = validate_room_ids(&room_ids, 1)?;
    write(state, user_id, move |_, tx, uid| {
        find_group(tx, uid, &gid)?;
        require_rooms(tx, uid, &room_ids)?;
        let now = unix_now() as i64;
        let added = link_rooms(tx, uid, &gid, &room_ids, now)?;
        if !added.is_empty() {
            linked_groups::touch(tx, &gid, now)?;
        }
        Ok(added)
    })
    .await
}

/// `DELETE /api/rooms/linked/{groupId}/rooms/{roomId}`: returns whether the group was
/// deleted because it lost its last room. 404 when the room is not in the group.
pub async fn remove_room(
    state: &Context,
    user_id: &str,
    group_id: &str,
    room_id: &str,
) -> AppResult<(String, bool)> {
    let gid = parse_group_id(group_id)?;
    let room_id = validate_room_id(room_id)?;
    write(state, user_id, move |_, tx, uid| {
        find_group(tx, uid, &gid)?;
        if linked_groups::remove_room(tx, &gid, &room_id)? == 0 {
            return Err(AppError::NotFound {
                code: ErrorCode::NotFound,
                message: format!("room {room_id} is not in this linked group"),
            });
        }
        let deleted = if linked_groups::room_count(tx, &gid)? == 0 {
            linked_groups::delete(tx, uid, &gid)?;
            true
        } else {
            linked_groups::touch(tx, &gid, unix_now() as i64)?;
            false
        };
        Ok((room_id, deleted))
    })
    .await
}

/// The room to send to on `platform` for `room_id` (scheduled messages' `targetPlatform`):
/// when `room_id` is in a linked group, the group's room on that platform (the room
/// itself when it is on that platform; the earliest added one when several are); otherwise,
/// or when the group has no room on that platform, `room_id` unchanged.
pub async fn room_for_platform(
    state: &Context,
    user_id: &str,
    room_id: &str,
    platform: &str,
) -> AppResult<String> {
    let rid = room_id.to_owned();
    let platform = platform.trim().to_ascii_lowercase();
    run(state, user_id, move |_, c, uid| {
        let Some(gid) = linked_groups::group_of_room(c, uid, &rid)? else {
            return Ok(rid);
        };
        let members: Vec<String> = linked_groups::rooms(c, &gid)?
            .into_iter()
            .map(|m| m.room_id)
            .collect();
        let platforms: HashMap<String, Option<String>> = rooms::platforms_of(c, uid, &members)?;
        let on = |id: &String| {
            platforms.get(id).cloned().flatten().as_deref() == Some(platform.as_str())
        };
        if on(&rid) {
            return Ok(rid);
        }
        Ok(members.into_iter().find(|id| on(id)).unwrap_or(rid))
    })
    .await
}
