//! Actions on sent messages: reactions (add, remove), edits of the caller's
//! own text (`m.replace`) and deletion for everyone of the caller's own messages (a
//! redaction). Each goes through [`send::send_once`], the txnId idempotency and E2EE path
//! of text sends, and is announced on `/api/sync` (`room.updated`) at once; the sync
//! worker stores the homeserver's echo.

use serde_json::json;

use super::parse_room_id;
use super::send::{
    self, parse_event_id, validate_text, validate_txn_id, Action, Outbound, Sent, Target,
    TargetRule,
};
use crate::clock::unix_now;
use crate::error::{AppError, AppResult};
use crate::events::ChangeEvent;
use crate::services::conversations::{open_reaction_key, seal_reaction_key};
use crate::services::users;
use crate::services::users::load_row;
use crate::services::Context;
use crate::store::reactions::{self, ReactionRow};

/// Longest reaction key accepted, in UTF-8 bytes.
pub const MAX_REACTION_KEY_BYTES: usize = 64;

/// A reaction key: 1 to 64 bytes, not only whitespace.
pub fn validate_key(key: &str) -> AppResult<()> {
    if key.trim().is_empty() || key.len() > MAX_REACTION_KEY_BYTES {
        return Err(AppError::invalid(
            "key",
            format!("must be 1 to {MAX_REACTION_KEY_BYTES} bytes and not only whitespace"),
        ));
    }
    Ok(())
}

/// Locks serialising reactions of one user with one key on one message (striped: a few
/// unrelated reactions may share a lock, which only makes them wait for each other).
/// Without it two identical requests at once would both find no stored reaction and
/// both send one.
static REACTION_LOCKS: [tokio::sync::Mutex<()>; 64] =
    [const { tokio::sync::Mutex::const_new(()) }; 64];

fn reaction_lock(user_id: &str, target: &str, key: &str) -> &'static tokio::sync::Mutex<()> {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (user_id, target, key).hash(&mut h);
    &REACTION_LOCKS[(h.finish() % REACTION_LOCKS.len() as u64) as usize]
}

fn fresh_txn(kind: &str) -> String {
    format!("{kind}-{}", uuid::Uuid::new_v4().simple())
}

/// The caller's stored reactions with `key` on `target`.
async fn my_reactions(
    state: &Context,
    user_id: &str,
    target: &str,
    key: &str,
) -> AppResult<Vec<ReactionRow>> {
    let (uid, target, key, master) = (
        user_id.to_owned(),
        target.to_owned(),
        key.to_owned(),
        state.master.clone(),
    );
    state
        .db(move |c| {
            let user = load_row(c, &uid)?;
            let dek = users::data_key(&master, &user)?;
            let me = user.matrix_user_id.unwrap_or_default();
            Ok(reactions::of_target(c, &uid, &target)?
                .into_iter()
                .filter(|r| r.sender_id == me)
                .filter(|r| {
                    open_reaction_key(&dek, &uid, &r.event_id, &r.key_enc).as_deref()
                        == Some(key.as_str())
                })
                .collect())
        })
        .await
}

fn announce(state: &Context, user_id: &str, room_id: &str) {
    state.events.publish(
        user_id,
        ChangeEvent::RoomUpdated {
            room_id: room_id.to_owned(),
        },
    );
}

/// `POST …/messages/{eventId}/reactions {key}`: reacts once per key (a repeat returns the
/// stored reaction with `duplicate: true`, also when both arrive at once).
pub async fn react(
    state: &Context,
    user_id: &str,
    room_id: &str,
    event_id: &str,
    key: &str,
) -> AppResult<Sent> {
    let room_id = parse_room_id("roomId", room_id)?;
    let target = parse_event_id("eventId", event_id)?;
    validate_key(key)?;
    // Held until the reaction is stored, so a concurrent repeat finds it.
    let _serial = reaction_lock(user_id, &target, key).lock().await;
    if let Some(r) = my_reactions(state, user_id, &target, key).await?.first() {
        return Ok(Sent {
            event_id: r.event_id.clone(),
            room_id,
            txn_id: String::new(),
            duplicate: true,
        });
    }
    let out = Outbound {
        room_id: room_id.clone(),
        txn_id: fresh_txn("react"),
        action: Action::Send {
            event_type: "m.reaction",
            content: json!({"m.relates_to": {
                "rel_type": "m.annotation", "event_id": target, "key": key,
            }}),
        },
        target: Some(Target {
            field: "eventId",
            event_id: target.clone(),
            rule: TargetRule::InRoom,
        }),
    };
    let sent = send::send_once(state, user_id, out).await?;
    // Stored now, so the reaction shows (and a repeat finds it) before the sync's echo.
    store_own_reaction(state, user_id, &room_id, target, key, &sent.event_id).await?;
    announce(state, user_id, &room_id);
    Ok(sent)
}

/// Stores the user's reaction `ev` (just sent) to `target` with `key`, sealed.
async fn store_own_reaction(
    state: &Context,
    user_id: &str,
    room_id: &str,
    target: String,
    key: &str,
    ev: &str,
) -> AppResult<()> {
    let (uid, master, key, ev, room) = (
        user_id.to_owned(),
        state.master.clone(),
        key.to_owned(),
        ev.to_owned(),
        room_id.to_owned(),
    );
    state
        .db(move |c| {
            let user = load_row(c, &uid)?;
            let dek = users::data_key(&master, &user)?;
            let row = ReactionRow {
                key_enc: seal_reaction_key(&dek, &uid, &ev, &key),
                user_id: uid,
                event_id: ev,
                room_id: room,
                target_event_id: target,
                sender_id: user.matrix_user_id.unwrap_or_default(),
                ts: unix_now() as i64 * 1000,
            };
            reactions::insert_if_new(c, &row)?;
            Ok(())
        })
        .await
}

/// `DELETE …/messages/{eventId}/reactions/{key}`: redacts the caller's reactions with
/// `key`; returns the redaction event ids. 404 when the caller has none.
pub async fn unreact(
    state: &Context,
    user_id: &str,
    room_id: &str,
    event_id: &str,
    key: &str,
) -> AppResult<Vec<String>> {
    let room_id = parse_room_id("roomId", room_id)?;
    let target = parse_event_id("eventId", event_id)?;
    validate_key(key)?;
    let _serial = reaction_lock(user_id, &target, key).lock().await;
    let mine = my_reactions(state, user_id, &target, key).await?;
    if mine.is_empty() {
        return Err(AppError::not_found("reaction"));
    }
    let mut redactions = Vec::new();
    for r in mine {
        let out = Outbound {
            room_id: room_id.clone(),
            txn_id: fresh_txn("unreact"),
            action: Action::Redact {
                event_id: r.event_id.clone(),
            },
            target: None,
        };
        redactions.push(send::send_once(state, user_id, out).await?.event_id);
        let (uid, ev) = (user_id.to_owned(), r.event_id);
        state
            .db(move |c| Ok(reactions::delete(c, &uid, &ev)?))
            .await?;
    }
    announce(state, user_id, &room_id);
    Ok(redactions)
}

/// `PUT /api/rooms/{roomId}/messages/{eventId} {content, txnId?}`: replaces the text of
/// the caller's own text message (`m.replace` with `m.new_content`).
pub async fn edit(
    state: &Context,
    user_id: &str,
    room_id: &str,
    event_id: &str,
    text: &str,
    txn_id: Option<&str>,
) -> AppResult<Sent> {
    let room_id = parse_room_id("roomId", room_id)?;
    let target = parse_event_id("eventId", event_id)?;
    validate_text("content", text)?;
    let txn_id = match txn_id {
        Some(t) => {
            validate_txn_id(t)?;
            t.to_owned()
        }
        None => fresh_txn("edit"),
    };
    let out = Outbound {
        room_id: room_id.clone(),
        txn_id,
        action: Action::Send {
            event_type: "m.room.message",
            content: json!({
                "msgtype": "m.text",
                "body": format!("* {text}"),
                "m.new_content": {"msgtype": "m.text", "body": text},
                "m.relates_to": {"rel_type": "m.replace", "event_id": target},
            }),
        },
        target: Some(Target {
            field: "eventId",
            event_id: target,
            rule: TargetRule::OwnText,
        }),
    };
    let sent = send::send_once(state, user_id, out).await?;
    announce(state, user_id, &room_id);
    Ok(sent)
}

/// `DELETE /api/rooms/{roomId}/messages/{eventId}`: deletes the caller's own message for
/// everyone (a redaction). Returns the redaction's event id.
pub async fn delete_for_everyone(
    state: &Context,
    user_id: &str,
    room_id: &str,
    event_id: &str,
) -> AppResult<Sent> {
    let room_id = parse_room_id("roomId", room_id)?;
    let target = parse_event_id("eventId", event_id)?;
    let out = Outbound {
        room_id: room_id.clone(),
        txn_id: fresh_txn("redact"),
        action: Action::Redact {
            event_id: target.clone(),
        },
        target: Some(Target {
            field: "eventId",
            event_id: target,
            rule: TargetRule::Own,
        }),
    };
    let sent = send::send_once(state, user_id, out).await?;
    announce(state, user_id, &room_id);
    Ok(sent)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reaction_keys_are_at_most_64_bytes() {
        assert!(validate_key("👍").is_ok());
        assert!(validate_key(&"a".repeat(64)).is_ok());
        let err = validate_key(&"a".repeat(65)).unwrap_err();
        assert!(err.to_string().starts_with("key: "), "{err}");
        assert!(validate_key(" ").is_err());
        assert!(validate_key("").is_err());
    }
}
