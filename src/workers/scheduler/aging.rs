//! Unread age: every [`EVERY`] the scheduler recomputes the importance of the rooms with
//! unread messages, so that messages left waiting rise in the importance order (see
//! [`crate::services::importance`] for the bonus). A room whose importance changed is
//! announced with `room.updated`.

use std::time::Duration;

use crate::clock::unix_now;
use crate::error::AppResult;
use crate::events::ChangeEvent;
use crate::services::importance;
use crate::services::Context;
use crate::store::rooms;

/// How often importance is re-aged. The bonus grows by at most 0.002 a minute, so this
/// keeps rooms within about 0.02 of their exact score.
pub const EVERY: Duration = Duration::from_secs(10 * 60);

/// Recomputes the importance of every room with unread messages; returns the rooms whose
/// importance changed, as (user id, room id).
pub fn reage(conn: &mut rusqlite::Connection, now: i64) -> AppResult<Vec<(String, String)>> {
    let tx = conn.transaction()?;
    let mut changed = Vec::new();
    for room in rooms::with_unread(&tx)? {
        let importance = importance::unread_room_importance(&tx, &room, now)?;
        if rooms::set_importance(&tx, &room.user_id, &room.room_id, importance, now)? {
            changed.push((room.user_id, room.room_id));
        }
    }
    tx.commit()?;
    Ok(changed)
}

/// [`reage`] on the store, announcing the changed rooms.
pub async fn run(state: &Context) -> AppResult<usize> {
    let now = unix_now() as i64;
    let changed = state.store.run(move |c| reage(c, now)).await?;
    for (user_id, room_id) in &changed {
        state.events.publish(
            user_id,
            ChangeEvent::RoomUpdated {
                room_id: room_id.to_owned(),
            },
        );
    }
    if !changed.is_empty() {
        tracing::debug!(rooms = changed.len(), "re-aged room importance");
    }
    Ok(changed.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::messages::{insert_if_new, MessageRow};
    use crate::store::rooms::RoomRow;
    use crate::store::Store;

    #[test]
    fn a_room_whose_unread_message_waited_a_day_gains_the_full_bonus() {
        let (_dir, store) = Store::open_temp();
        let mut conn = store.conn().unwrap();
        let now = 2_000_000_000;
        // Rooms and messages only: no user row needed for this.
        conn.pragma_update(None, "foreign_keys", "OFF").unwrap();
        for (room, waited) in [("!old:x", 2 * 86_400), ("!new:x", 60), ("!read:x", 0)] {
            rooms::upsert(
                &conn,
                &RoomRow {
                    user_id: "u1".into(),
                    room_id: room.into(),
                    membership: "join".into(),
                    unread_count: i64::from(room != "!read:x"),
                    importance: 0.4,
                    ..RoomRow::default()
                },
            )
            .unwrap();
            insert_if_new(
                &conn,
                &MessageRow {
                    id: format!("m{room}"),
                    user_id: "u1".into(),
                    room_id: room.into(),
                    event_id: format!("$e{room}"),
                    sender_id: "@bob:x".into(),
                    ts: (now - waited) * 1000,
                    importance: 0.4,
                    ..MessageRow::default()
                },
            )
            .unwrap();
        }
        let mut changed = reage(&mut conn, now).unwrap();
        changed.sort();
        assert_eq!(changed, vec![("u1".to_owned(), "!old:x".to_owned())]);
        let old = rooms::find(&conn, "u1", "!old:x").unwrap().unwrap();
        assert_eq!(old.importance, 0.6);
        let new = rooms::find(&conn, "u1", "!new:x").unwrap().unwrap();
        assert_eq!(
            new.importance, 0.4,
            "a fresh unread message does not age yet"
        );
        let read = rooms::find(&conn, "u1", "!read:x").unwrap().unwrap();
        assert_eq!(
            read.importance, 0.4,
            "rooms without unread messages are left alone"
        );
        assert!(reage(&mut conn, now).unwrap().is_empty(), "stable");
    }
}
