//! Gaps recorded at ingest, back-filled events and which pages reach a gap.

use serde_json::{json, Value};

use super::{member, text, Fixture, BOB, ME, ROOM};
use crate::clients::matrix::types::Event;
use crate::services::history::{gap_crossed, PageSpan};
use crate::store::history::{self, Gap};
use crate::store::messages::PageStart;
use crate::workers::sync::ingest::ingest_history;

fn timeline(batch: &str, events: Vec<Value>, limited: bool, prev: Option<&str>) -> Value {
    json!({"next_batch": batch, "rooms": {"join": {ROOM: {
        "state": {"events": [member(ME, "join", None), member(BOB, "join", None)]},
        "timeline": {"events": events, "limited": limited, "prev_batch": prev},
    }}}})
}

/// A first, limited timeline: $5 and $6, with older history before them.
fn five_and_six() -> Value {
    timeline(
        "s1",
        vec![text("$5", BOB, 5000, "five"), text("$6", BOB, 6000, "six")],
        true,
        Some("p1"),
    )
}

impl Fixture {
    fn gaps(&self) -> Vec<Gap> {
        history::gaps(&self.store.conn().unwrap(), "u1", ROOM).unwrap()
    }

    fn back_fill(&self, events: Vec<Value>) -> usize {
        let events: Vec<Event> = events
            .into_iter()
            .map(|e| serde_json::from_value(e).unwrap())
            .collect();
        self.in_tx(|tx, ctx, dek| ingest_history(tx, ctx, dek, ROOM, &events, &[]))
            .new_messages
            .len()
    }
}

#[test]
fn a_first_timeline_leaves_the_rooms_start_to_fetch_and_a_limited_one_its_gap() {
    let mut f = Fixture::new();
    f.ingest(five_and_six());
    let start = f.gaps();
    assert_eq!(start.len(), 1);
    let g = &start[0];
    assert_eq!((g.before_ts, g.before_event.as_str()), (5000, "$5"));
    assert_eq!((g.from_token.as_str(), g.to_token.as_deref()), ("p1", None));
    assert_eq!(g.after_ts, None);

    // Not limited: nothing skipped.
    f.ingest(timeline(
        "s2",
        vec![text("$7", BOB, 7000, "seven")],
        false,
        Some("p2"),
    ));
    assert_eq!(f.gaps().len(), 1);

    // Limited: a gap from its prev_batch back to the previous since, above $7.
    f.ingest(timeline(
        "s3",
        vec![text("$20", BOB, 20_000, "twenty")],
        true,
        Some("p3"),
    ));
    let gaps = f.gaps();
    assert_eq!(gaps.len(), 2);
    let g = &gaps[0];
    assert_eq!((g.before_ts, g.before_event.as_str()), (20_000, "$20"));
    assert_eq!(
        (g.from_token.as_str(), g.to_token.as_deref()),
        ("p3", Some("s2"))
    );
    assert_eq!(g.after_ts, Some(7000));
}

#[test]
fn a_timeline_that_begins_with_the_creation_leaves_nothing_to_fetch() {
    let mut f = Fixture::new();
    let create = json!({"type": "m.room.create", "state_key": "", "sender": BOB,
        "event_id": "$c", "origin_server_ts": 1, "content": {}});
    f.ingest(timeline(
        "s1",
        vec![create, text("$1", BOB, 2, "hi")],
        false,
        Some("p1"),
    ));
    assert!(f.gaps().is_empty());
    assert!(history::start_reached(&f.store.conn().unwrap(), "u1", ROOM).unwrap());
}

#[test]
fn back_filled_events_add_messages_and_edits_but_not_old_state() {
    let mut f = Fixture::new();
    let name = |n: &str| {
        json!({"type": "m.room.name", "state_key": "", "sender": BOB, "event_id": format!("$n{n}"),
               "origin_server_ts": 1, "content": {"name": n}})
    };
    f.ingest(timeline(
        "s1",
        vec![name("Now"), text("$9", BOB, 9000, "nine")],
        true,
        Some("p1"),
    ));
    let mut edited = text("$2", BOB, 2000, "tyop");
    edited["unsigned"] = json!({"m.relations": {"m.replace": {
        "type": "m.room.message", "event_id": "$e", "sender": BOB, "origin_server_ts": 8000,
        "content": {"msgtype": "m.text", "body": "* typo", "m.new_content": {"msgtype": "m.text", "body": "typo"},
                    "m.relates_to": {"rel_type": "m.replace", "event_id": "$2"}}}}});
    let added = f.back_fill(vec![
        name("Back then"),
        member(BOB, "leave", None),
        text("$1", BOB, 1000, "one"),
        edited,
    ]);
    assert_eq!(added, 2);
    assert_eq!(f.message("$1").1.body, "one");
    let (row, content) = f.message("$2");
    assert!(row.edited);
    assert_eq!(content.body, "typo");
    // Old state describes the room as it was: the name and members stay as they are.
    assert_eq!(f.name(ROOM).as_deref(), Some("Now"));
    assert_eq!(f.room(ROOM).member_count, 2);
    assert_eq!(f.room(ROOM).last_message_ts, Some(9000));
    // Again: nothing new.
    assert_eq!(f.back_fill(vec![text("$1", BOB, 1000, "one")]), 0);
}

#[test]
fn a_page_reaches_a_gap_when_it_runs_past_its_top_or_starts_inside_it() {
    let mut f = Fixture::new();
    f.ingest(five_and_six());
    f.ingest(timeline(
        "s2",
        vec![text("$20", BOB, 20_000, "twenty")],
        true,
        Some("p2"),
    ));
    let conn = f.store.conn().unwrap();
    let crossed = |start: PageStart, last: Option<(i64, &str)>, full: bool| {
        let span = PageSpan {
            start: &start,
            last,
            full,
        };
        gap_crossed(&conn, "u1", ROOM, &span)
            .unwrap()
            .map(|g| g.to_token)
    };
    let newest = PageStart::newest;
    // One row ($20), page of 1: full, ends at the gap's top: not crossed yet.
    assert_eq!(crossed(newest(), Some((20_000, "$20")), true), None);
    // Page of 2 reads $20 and $6: past the gap above $20.
    assert_eq!(
        crossed(newest(), Some((6000, "$6")), true),
        Some(Some("s1".into()))
    );
    // A short page from $20 on runs out: the nearest gap first.
    assert_eq!(
        crossed(PageStart::after(20_000, "$20"), None, false),
        Some(Some("s1".into()))
    );
    // `before` inside the gap (10 s): that gap.
    assert_eq!(
        crossed(PageStart::before(10_000), Some((5000, "$5")), true),
        Some(Some("s1".into()))
    );
    // Below the gap: within the stored stretch, nothing to fetch...
    assert_eq!(
        crossed(PageStart::before(6000), Some((5000, "$5")), true),
        None
    );
    // ...until the page runs past the oldest stored event: the room's start.
    assert_eq!(
        crossed(PageStart::before(6000), Some((5000, "$5")), false),
        Some(None)
    );
}
