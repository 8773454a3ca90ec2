//! One text to several rooms (`POST /api/messages/send-multi`): each room's send is a
//! result of its own, at most [`MULTI_SEND_CONCURRENCY`] at once.

use std::collections::HashSet;

use futures_util::stream::{self, StreamExt};

use super::send::{
    matrix_token, no_homeserver, not_joined, text_content, validate_text, MAX_MULTI_ROOMS,
    MULTI_SEND_CONCURRENCY, TEXT_MSGTYPES,
};
use super::{parse_room_id, room_not_found};
use crate::error::{AppError, AppResult};
use crate::services::e2ee::{self, Outgoing, SendFailure};
use crate::services::users::load_row;
use crate::services::Context;
use crate::store::rooms;

/// One room of a multi-send.
#[derive(Debug)]
pub struct MultiSendItem {
    pub room_id: String,
    pub result: AppResult<String>,
}

/// `POST /api/messages/send-multi`: `body` to each room (duplicates removed, first
/// occurrence kept), at most [`MULTI_SEND_CONCURRENCY`] at once. Per-room failures are
/// results, not errors; only invalid input is an error.
pub async fn send_multi(
    state: &Context,
    user_id: &str,
    room_ids: &[String],
    body: &str,
    msgtype: Option<&str>,
) -> AppResult<Vec<MultiSendItem>> {
    let unique = unique_rooms(room_ids)?;
    validate_text("body", body)?;
    let msgtype = msgtype.map(str::trim).unwrap_or("m.text");
    if !TEXT_MSGTYPES.contains(&msgtype) {
        return Err(AppError::invalid(
            "msgtype",
            format!("must be one of {}", TEXT_MSGTYPES.join(", ")),
        ));
    }
    let (token, known, joined) = rooms_and_token(state, user_id, unique.clone()).await?;
    let content = text_content(msgtype, body);
    let batch = uuid::Uuid::new_v4().simple().to_string();
    let (token, content, known, joined, batch) = (&token, &content, &known, &joined, &batch);
    let items = stream::iter(unique.into_iter().enumerate())
        .map(|(i, room_id)| async move {
            let result = match (token, state.matrix.as_ref()) {
                _ if !known.contains(&room_id) => Err(room_not_found()),
                _ if !joined.contains(&room_id) => Err(not_joined()),
                (Err(e), _) => Err(clone_error(e)),
                (Ok(_), None) => Err(no_homeserver()),
                (Ok(token), Some(matrix)) => {
                    let out = Outgoing {
                        room_id: &room_id,
                        txn_id: &format!("sb-multi.{batch}.{i}"),
                        event_type: "m.room.message",
                        content,
                    };
                    e2ee::send_event(state, matrix, user_id, token, &out)
                        .await
                        .map_err(SendFailure::into_app_error)
                }
            };
            MultiSendItem { room_id, result }
        })
        .buffered(MULTI_SEND_CONCURRENCY)
        .collect()
        .await;
    Ok(items)
}

/// The validated room ids, duplicates removed (first occurrence kept, in order).
fn unique_rooms(room_ids: &[String]) -> AppResult<Vec<String>> {
    if room_ids.is_empty() || room_ids.len() > MAX_MULTI_ROOMS {
        return Err(AppError::invalid(
            "roomIds",
            format!("must hold 1 to {MAX_MULTI_ROOMS} room ids"),
        ));
    }
    let mut unique = Vec::with_capacity(room_ids.len());
    for (i, r) in room_ids.iter().enumerate() {
        let room = parse_room_id(&format!("roomIds[{i}]"), r)?;
        if !unique.contains(&room) {
            unique.push(room);
        }
    }
    Ok(unique)
}

/// The user's Matrix token (or why there is none), and which of `wanted` are the user's
/// rooms and which of those are joined.
async fn rooms_and_token(
    state: &Context,
    user_id: &str,
    wanted: Vec<String>,
) -> AppResult<(AppResult<String>, HashSet<String>, HashSet<String>)> {
    let (uid, st) = (user_id.to_owned(), state.clone());
    state
        .db(move |c| {
            let user = load_row(c, &uid)?;
            let token = match st.matrix {
                Some(_) => matrix_token(&st, &user),
                None => Err(no_homeserver()),
            };
            let (mut known, mut joined) = (HashSet::new(), HashSet::new());
            for room in &wanted {
                if let Some(r) = rooms::find(c, &uid, room)? {
                    if r.membership == "join" {
                        joined.insert(room.clone());
                    }
                    known.insert(room.clone());
                }
            }
            Ok((token, known, joined))
        })
        .await
}

/// The same error again (for reporting one cause on several rooms).
fn clone_error(e: &AppError) -> AppError {
    match e {
        AppError::Conflict { code, message } => AppError::conflict(*code, message.clone()),
        AppError::Unavailable {
            code,
            message,
            retry_after_secs,
        } => AppError::Unavailable {
            code: *code,
            message: message.clone(),
            retry_after_secs: *retry_after_secs,
        },
        other => AppError::internal(other),
    }
}
