//! Membership and direct rooms: m.direct, a two-member invite, leaving, and invites that
//! arrive after the room was joined.

use super::*;

#[test]
fn m_direct_marks_the_room_direct_with_the_partner_as_recipient() {
    let mut f = Fixture::new();
    let mut resp = joined("s1", ROOM, three_members(), vec![text("$1", BOB, 1, "hi")]);
    resp["account_data"] = json!({"events": [{"type": "m.direct", "content": {BOB: [ROOM]}}]});
    f.ingest(resp);
    let room = f.room(ROOM);
    assert!(room.is_direct);
    assert_eq!(room.recipient_id.as_deref(), Some(BOB));
    assert_eq!(f.message("$1").0.category, "direct");
}

#[test]
fn a_two_member_direct_room_has_the_other_member_as_recipient() {
    let mut f = Fixture::new();
    let resp = json!({"next_batch": "s1", "rooms": {"invite": {ROOM: {"invite_state": {"events": [
        {"type": "m.room.member", "state_key": ME, "sender": BOB, "content": {"membership": "invite", "is_direct": true}},
        {"type": "m.room.member", "state_key": BOB, "sender": BOB, "content": {"membership": "join", "displayname": "Bob"}},
    ]}}}}});
    let out = f.ingest(resp);
    // Bob is no bridge: his invitation waits for the user.
    assert!(out.invites.is_empty());
    let room = f.room(ROOM);
    assert_eq!(room.membership, "invite");
    assert_eq!(room.invited_by.as_deref(), Some(BOB));
    assert!(room.is_direct);
    assert_eq!(room.recipient_id.as_deref(), Some(BOB));
    assert_eq!(f.name(ROOM).as_deref(), Some("Bob"));
    f.ingest(joined(
        "s2",
        ROOM,
        vec![member(ME, "join", None), member(BOB, "join", None)],
        vec![],
    ));
    let room = f.room(ROOM);
    assert_eq!(room.membership, "join");
    assert_eq!(room.invited_by, None);
    assert_eq!(room.recipient_id.as_deref(), Some(BOB));
}

#[test]
fn leaving_a_room_keeps_its_messages() {
    let mut f = Fixture::new();
    f.ingest(joined(
        "s1",
        ROOM,
        vec![member(ME, "join", None)],
        vec![text("$1", BOB, 1, "bye")],
    ));
    let resp = json!({"next_batch": "s2", "rooms": {"leave": {ROOM: {"timeline": {"events": [member(ME, "leave", None)]}}}}});
    let out = f.ingest(resp);
    assert!(out.changed_rooms.contains(ROOM));
    assert_eq!(f.room(ROOM).membership, "leave");
    assert_eq!(f.message_count(), 1);
}

#[test]
fn a_stale_invite_does_not_take_back_a_join_but_a_leave_then_an_invite_is_an_invite() {
    let mut f = Fixture::new();
    f.ingest(joined(
        "s1",
        ROOM,
        three_members(),
        vec![text("$1", BOB, 1, "hi")],
    ));
    assert_eq!(f.room(ROOM).membership, "join");
    let invite = |batch: &str| {
        json!({"next_batch": batch, "rooms": {"invite": {ROOM: {"invite_state": {"events": [
            {"type": "m.room.member", "state_key": ME, "sender": BOB, "content": {"membership": "invite"}},
        ]}}}}})
    };
    // A response requested before the join (the API joined the room meanwhile).
    let out = f.ingest(invite("s2"));
    assert!(out.invites.is_empty());
    assert_eq!(f.room(ROOM).membership, "join");
    // After a leave, a new invite is one.
    f.ingest(
        json!({"next_batch": "s3", "rooms": {"leave": {ROOM: {"timeline": {"events": [
            {"type": "m.room.member", "state_key": ME, "sender": ME, "event_id": "$leave",
             "origin_server_ts": 5, "content": {"membership": "leave"}},
        ]}}}}}),
    );
    assert_eq!(f.room(ROOM).membership, "leave");
    f.ingest(invite("s4"));
    assert_eq!(f.room(ROOM).membership, "invite");
}

#[test]
fn a_stale_join_does_not_bring_back_a_left_room_but_a_join_after_the_leave_does() {
    let mut f = Fixture::new();
    f.ingest(joined(
        "s1",
        ROOM,
        three_members(),
        vec![text("$1", BOB, 1, "hi")],
    ));
    // Left through the API (as the groups service stores it).
    let mut row = f.room(ROOM);
    row.membership = "leave".to_owned();
    rooms::update_synced(&f.store.conn().unwrap(), &row).unwrap();
    // A response requested before the leave: the room still joined, with a new message.
    f.ingest(joined(
        "s2",
        ROOM,
        vec![],
        vec![text("$2", BOB, 2, "still here?")],
    ));
    assert_eq!(f.room(ROOM).membership, "leave");
    assert_eq!(f.message_count(), 2, "the stale response's events are kept");
    // Joining again elsewhere: the response carries the user's own join.
    f.ingest(joined("s3", ROOM, vec![member(ME, "join", None)], vec![]));
    assert_eq!(f.room(ROOM).membership, "join");
}
