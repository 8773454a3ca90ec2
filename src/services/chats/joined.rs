//! A room the API has just created or joined, stored before the answer (not after the
//! next sync): its full state goes through the sync's own ingest
//! ([`crate::services::history::TimelineSink::ingest_joined`]), and `room.updated` is
//! published.

use rusqlite::TransactionBehavior;

use super::Acting;
use crate::clients::matrix::types::Event;
use crate::clients::matrix::MatrixClient;
use crate::clock::unix_now;
use crate::error::{AppError, AppResult};
use crate::events::ChangeEvent;
use crate::services::history::JoinedState;
use crate::services::upstream::homeserver_error;
use crate::services::users;
use crate::services::Context;

/// The room's current state as the user sees it (the user must have joined).
pub async fn room_state(
    matrix: &MatrixClient,
    acting: &Acting,
    room_id: &str,
) -> AppResult<Vec<Event>> {
    matrix
        .room_state(&acting.token, room_id)
        .await
        .map_err(homeserver_error)
}

/// Stores the joined room from `state_events`; `direct` is the user's `m.direct` content.
pub async fn store(
    state: &Context,
    acting: &Acting,
    room_id: &str,
    state_events: Vec<Event>,
    direct: serde_json::Value,
    heroes: Vec<String>,
) -> AppResult<()> {
    let sink = state.history.clone();
    let master = state.master.clone();
    let user = acting.user.clone();
    let rid = room_id.to_owned();
    state
        .db(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let dek = users::data_key(&master, &user)?;
            let joined = JoinedState {
                user: &user,
                dek: &dek,
                room_id: &rid,
                state: state_events,
                direct: &direct,
                heroes,
                now: unix_now() as i64,
            };
            sink.ingest_joined(&tx, &joined)?;
            tx.commit()?;
            Ok::<_, AppError>(())
        })
        .await?;
    state.events.publish(
        &acting.user.id,
        ChangeEvent::RoomUpdated {
            room_id: room_id.to_owned(),
        },
    );
    Ok(())
}

/// Whether the user's stored copy of the room says it has joined.
pub async fn is_joined(state: &Context, user_id: &str, room_id: &str) -> AppResult<bool> {
    let (uid, rid) = (user_id.to_owned(), room_id.to_owned());
    state
        .db(move |c| {
            let row = crate::store::rooms::find(c, &uid, &rid)?;
            Ok(row.is_some_and(|r| r.membership == "join"))
        })
        .await
}
