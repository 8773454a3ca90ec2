//! Names of rooms without `m.room.name`: made from the other members, and renamed when
//! their display names change.

use super::*;

#[test]
fn an_unnamed_room_is_named_after_the_other_members() {
    let mut f = Fixture::new();
    f.ingest(joined(
        "s1",
        ROOM,
        vec![
            member(ME, "join", Some("Meg")),
            member(BOB, "join", Some("Bob Builder")),
        ],
        vec![],
    ));
    assert_eq!(f.name(ROOM).as_deref(), Some("Bob Builder"));
    // A new member changes the computed name once the room is confirmed unnamed.
    // Display names come from the hint (the homeserver's joined members).
    let names = HashMap::from([(BOB.to_owned(), "Bob Builder".to_owned())]);
    f.hints.insert(
        ROOM.to_owned(),
        RoomHint {
            unnamed: true,
            display_names: names,
            invited: Vec::new(),
        },
    );
    f.ingest(joined(
        "s2",
        ROOM,
        vec![],
        vec![member("@carol:test", "join", None)],
    ));
    assert_eq!(f.name(ROOM).as_deref(), Some("Bob Builder and carol"));
    assert_eq!(f.room(ROOM).member_count, 3);
}

#[test]
fn names_are_joined_readably() {
    let names = |n: &[&str]| join_names(&n.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    assert_eq!(names(&[]), "Empty room");
    assert_eq!(names(&["A", "B"]), "A and B");
    assert_eq!(names(&["A", "B", "C"]), "A, B and C");
    assert_eq!(names(&["A", "B", "C", "D", "E"]), "A, B, C and 2 others");
}

#[test]
fn a_display_name_change_renames_an_unnamed_room_but_not_a_named_one() {
    let mut f = Fixture::new();
    f.ingest(joined(
        "s1",
        ROOM,
        vec![member(ME, "join", None), member(BOB, "join", Some("Bob"))],
        vec![],
    ));
    f.hints.insert(
        ROOM.to_owned(),
        RoomHint {
            unnamed: true,
            ..RoomHint::default()
        },
    );
    f.ingest(joined(
        "s2",
        ROOM,
        vec![],
        vec![member(BOB, "join", Some("Robert"))],
    ));
    assert_eq!(f.name(ROOM).as_deref(), Some("Robert"));

    let named = "!named:test";
    let name = json!({"type": "m.room.name", "state_key": "", "sender": BOB, "content": {"name": "Book club"}});
    f.ingest(joined(
        "s3",
        named,
        vec![
            name,
            member(ME, "join", None),
            member(BOB, "join", Some("Bob")),
        ],
        vec![],
    ));
    f.hints.insert(named.to_owned(), RoomHint::default());
    f.ingest(joined(
        "s4",
        named,
        vec![],
        vec![member(BOB, "join", Some("Bobby"))],
    ));
    assert_eq!(f.name(named).as_deref(), Some("Book club"));
}
