//! A room the API created or joined, stored from its state before the next sync
//! (`POST /api/chats`), and what the sync does with it afterwards.

use super::*;
use crate::clients::matrix::types::Event;
use crate::services::history::JoinedState;
use crate::workers::sync::ingest::ingest_joined_state;

fn new_dm_state() -> Vec<Event> {
    let invite = json!({"type": "m.room.member", "state_key": BOB, "sender": ME,
        "content": {"membership": "invite", "is_direct": true, "displayname": "Bob"}});
    let encryption = json!({"type": "m.room.encryption", "state_key": "", "sender": ME,
        "content": {"algorithm": "m.megolm.v1.aes-sha2"}});
    let create = json!({"type": "m.room.create", "state_key": "", "sender": ME, "content": {}});
    [create, member(ME, "join", Some("Meg")), invite, encryption]
        .into_iter()
        .map(|v| serde_json::from_value(v).unwrap())
        .collect()
}

#[test]
fn a_new_direct_room_is_stored_from_its_state_without_touching_the_sync_position() {
    let mut f = Fixture::new();
    let user = user_row("u1");
    let direct = json!({BOB: [ROOM]});
    f.in_tx(|tx, ctx, dek| {
        let joined = JoinedState {
            user: &user,
            dek,
            room_id: ROOM,
            state: new_dm_state(),
            direct: &direct,
            heroes: vec![BOB.to_owned()],
            now: ctx.now,
        };
        ingest_joined_state(tx, ctx, dek, &DirectRooms::from_content(&direct), &joined)
    });
    let room = f.room(ROOM);
    assert_eq!(room.membership, "join");
    assert!(room.encrypted && room.is_direct);
    assert_eq!(room.recipient_id.as_deref(), Some(BOB));
    assert_eq!(room.platform, None);
    // Named after the invitee, not "Empty room".
    assert_eq!(f.name(ROOM).as_deref(), Some("Bob"));
    let conn = f.store.conn().unwrap();
    assert!(sync_state::find(&conn, "u1").unwrap().is_none());
    // No history is recorded yet: the room's first synced timeline does that.
    assert!(!crate::store::history::tracked(&conn, "u1", ROOM).unwrap());
    drop(conn);
    let mut first = joined(
        "s1",
        ROOM,
        vec![member(BOB, "join", Some("Bob"))],
        vec![text("$1", BOB, 5, "hi")],
    );
    first["rooms"]["join"][ROOM]["timeline"]["prev_batch"] = json!("p0");
    f.ingest(first);
    let conn = f.store.conn().unwrap();
    assert!(crate::store::history::tracked(&conn, "u1", ROOM).unwrap());
    assert_eq!(f.room(ROOM).member_count, 2);
    assert_eq!(f.message("$1").1.body, "hi");
}
