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

/// The room as `POST /api/chats` stores it (named after the invitee from its heroes).
fn store_new_dm(f: &mut Fixture) {
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
}

#[test]
fn a_new_chat_keeps_the_invitees_name_when_its_first_state_comes_by_sync_later() {
    let mut f = Fixture::new();
    store_new_dm(&mut f);
    assert_eq!(f.name(ROOM).as_deref(), Some("Bob"));
    // The sync brings the room's first events afterwards: the user's own join changes the
    // people, the homeserver says the room has no name and Bob is invited (not joined).
    f.hints.insert(
        ROOM.to_owned(),
        RoomHint {
            unnamed: true,
            display_names: HashMap::from([(BOB.to_owned(), "Bob".to_owned())]),
            invited: vec![BOB.to_owned()],
        },
    );
    f.ingest(joined(
        "s1",
        ROOM,
        vec![member(ME, "join", Some("Meg"))],
        vec![],
    ));
    assert_eq!(f.name(ROOM).as_deref(), Some("Bob"), "not \"Empty room\"");
}

#[test]
fn a_room_first_seen_with_only_an_invitee_is_named_after_them() {
    let mut f = Fixture::new();
    let invite = json!({"type": "m.room.member", "state_key": BOB, "sender": ME,
        "content": {"membership": "invite", "displayname": "Bob Climber"}});
    f.ingest(joined(
        "s1",
        ROOM,
        vec![member(ME, "join", Some("Meg")), invite],
        vec![],
    ));
    assert_eq!(f.name(ROOM).as_deref(), Some("Bob Climber"));
    // Bob leaves without joining: nobody else is left.
    let gone = json!({"type": "m.room.member", "state_key": BOB, "sender": BOB,
        "content": {"membership": "leave"}});
    f.hints.insert(
        ROOM.to_owned(),
        RoomHint {
            unnamed: true,
            ..RoomHint::default()
        },
    );
    f.ingest(joined("s2", ROOM, vec![], vec![gone]));
    assert_eq!(f.name(ROOM).as_deref(), Some("Empty room"));
}

#[test]
fn a_response_with_only_typing_is_quiet_and_one_with_a_message_is_not() {
    let mut f = Fixture::new();
    let first = f.ingest(joined(
        "s1",
        ROOM,
        vec![member(ME, "join", Some("Meg"))],
        vec![],
    ));
    assert!(!first.is_quiet(), "a new room is news");
    let mut typing = joined("s2", ROOM, vec![], vec![]);
    typing["rooms"]["join"][ROOM]["ephemeral"] =
        json!({"events": [{"type": "m.typing", "content": {"user_ids": [BOB]}}]});
    let out = f.ingest(typing);
    assert_eq!(out.live.typing.len(), 1, "the typing notice was read");
    assert!(out.is_quiet(), "{out:?}");
    let out = f.ingest(joined("s3", ROOM, vec![], vec![text("$1", BOB, 5, "hi")]));
    assert!(!out.is_quiet());
}
