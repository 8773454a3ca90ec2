use std::collections::HashMap;

use rusqlite::Transaction;
use serde_json::{json, Value};

use super::ingest::{ingest, IngestContext, IngestOutcome};
use super::room::{join_names, DirectRooms, RoomHint};
use crate::clients::matrix::SyncResponse;
use crate::clients::provisioning::identity::BridgeIdentities;
use crate::crypto::DataKey;
use crate::services::conversations::{open_message, open_room_field, MessageContent, RoomField};
use crate::services::importance::Reader;
use crate::store::users::UserRow;
use crate::store::{messages, rooms, sync_state, Store};

const ME: &str = "@sb_me:test";
const BOB: &str = "@bob:test";
const ROOM: &str = "!room:test";

struct Fixture {
    _dir: tempfile::TempDir,
    store: Store,
    dek: DataKey,
    reader: Reader,
    bridges: BridgeIdentities,
    direct: DirectRooms,
    hints: HashMap<String, RoomHint>,
}

impl Fixture {
    fn new() -> Self {
        let (dir, store) = Store::open_temp();
        crate::store::users::insert(&store.conn().unwrap(), &user_row("u1")).unwrap();
        Self {
            _dir: dir,
            store,
            dek: DataKey::generate(),
            reader: Reader::new(ME, Some("Meg")),
            bridges: BridgeIdentities::new([
                ("whatsapp", "@whatsappbot:test".into(), "whatsapp_".into()),
                ("discord", "@discordbot:test".into(), "discord_".into()),
            ]),
            direct: DirectRooms::default(),
            hints: HashMap::new(),
        }
    }

    fn ingest(&mut self, resp: Value) -> IngestOutcome {
        let resp: SyncResponse = serde_json::from_value(resp).unwrap();
        let mut direct = std::mem::take(&mut self.direct);
        let out = self.in_tx(|tx, ctx, dek| ingest(tx, ctx, dek, &mut direct, &resp));
        self.direct = direct;
        out
    }

    /// Runs one ingest step in a committed transaction, as user "u1" at a fixed time.
    fn in_tx<T>(
        &self,
        step: impl FnOnce(&Transaction<'_>, &IngestContext<'_>, &DataKey) -> rusqlite::Result<T>,
    ) -> T {
        let mut conn = self.store.conn().unwrap();
        let tx = conn.transaction().unwrap();
        let ctx = IngestContext {
            user_id: "u1",
            reader: &self.reader,
            bridges: &self.bridges,
            hints: &self.hints,
            now: 1_700_000_000,
        };
        let out = step(&tx, &ctx, &self.dek).unwrap();
        tx.commit().unwrap();
        out
    }

    fn room(&self, room_id: &str) -> rooms::RoomRow {
        rooms::find(&self.store.conn().unwrap(), "u1", room_id)
            .unwrap()
            .expect("room stored")
    }

    fn name(&self, room_id: &str) -> Option<String> {
        let row = self.room(room_id);
        open_room_field(
            &self.dek,
            "u1",
            room_id,
            RoomField::Name,
            row.name_enc.as_deref(),
        )
    }

    fn message(&self, event_id: &str) -> (messages::MessageRow, MessageContent) {
        let row = messages::find_by_event(&self.store.conn().unwrap(), "u1", event_id)
            .unwrap()
            .expect("message stored");
        let content = open_message(&self.dek, &row.id, &row.content_enc).unwrap();
        (row, content)
    }

    fn message_count(&self) -> i64 {
        self.store
            .conn()
            .unwrap()
            .query_row("SELECT COUNT(*) FROM messages", [], |r| r.get(0))
            .unwrap()
    }
}

fn user_row(id: &str) -> UserRow {
    UserRow {
        id: id.to_owned(),
        email_index: id.as_bytes().to_vec(),
        email_enc: vec![0],
        dek_wrapped: vec![0],
        display_name: None,
        username: None,
        avatar_url: None,
        is_admin: false,
        onboarding_completed: false,
        subscription_active: false,
        subscription_until: None,
        matrix_user_id: Some(ME.to_owned()),
        matrix_device_id: None,
        matrix_access_token_enc: None,
        primary_user_id: None,
        keys_shredded: false,
        last_key_deletion_at: None,
        created_at: 0,
        updated_at: 0,
    }
}

fn member(user: &str, membership: &str, name: Option<&str>) -> Value {
    let mut content = json!({"membership": membership});
    if let Some(n) = name {
        content["displayname"] = json!(n);
    }
    json!({"type": "m.room.member", "state_key": user, "sender": user,
           "event_id": format!("$m-{user}-{membership}"), "origin_server_ts": 1, "content": content})
}

fn text(event_id: &str, sender: &str, ts: i64, body: &str) -> Value {
    json!({"type": "m.room.message", "event_id": event_id, "sender": sender,
           "origin_server_ts": ts, "content": {"msgtype": "m.text", "body": body}})
}

/// The user, Bob and Carol, joined.
fn three_members() -> Vec<Value> {
    vec![
        member(ME, "join", None),
        member(BOB, "join", None),
        member("@carol:test", "join", None),
    ]
}

fn joined(batch: &str, room: &str, state: Vec<Value>, timeline: Vec<Value>) -> Value {
    json!({"next_batch": batch, "rooms": {"join": {room: {
        "state": {"events": state},
        "timeline": {"events": timeline},
    }}}})
}

#[test]
fn a_first_sync_stores_the_room_its_members_and_messages_with_the_new_since() {
    let mut f = Fixture::new();
    let out = f.ingest(joined(
        "s1",
        ROOM,
        vec![
            member(ME, "join", Some("Meg")),
            member(BOB, "join", Some("Bob")),
            json!({"type": "m.room.name", "state_key": "", "sender": BOB, "content": {"name": "Lunch club"}}),
            json!({"type": "m.room.topic", "state_key": "", "sender": BOB, "content": {"topic": "food"}}),
        ],
        vec![
            text("$1", BOB, 1000, "where shall we eat?"),
            text("$2", ME, 2000, "pizza"),
            json!({"type": "m.room.message", "event_id": "$3", "sender": BOB, "origin_server_ts": 3000,
                   "content": {"msgtype": "m.image", "body": "menu.jpg", "url": "mxc://test/x"}}),
        ],
    ));
    assert_eq!(out.new_messages.len(), 3);
    assert_eq!(out.changed_rooms.iter().collect::<Vec<_>>(), vec![ROOM]);
    let room = f.room(ROOM);
    assert_eq!(room.member_count, 2);
    assert_eq!(room.membership, "join");
    assert_eq!(room.last_message_ts, Some(3000));
    assert_eq!(f.name(ROOM).as_deref(), Some("Lunch club"));
    assert_eq!(
        rooms::members(&f.store.conn().unwrap(), "u1", ROOM).unwrap(),
        vec![BOB.to_owned(), ME.to_owned()]
    );
    let (q, content) = f.message("$1");
    assert_eq!(content.body, "where shall we eat?");
    assert!(q.is_question && !q.is_mine && q.category == "question");
    let (mine, _) = f.message("$2");
    assert!(mine.is_mine);
    assert_eq!(mine.importance, 0.0);
    let (image, _) = f.message("$3");
    assert_eq!(
        (image.msgtype.as_str(), image.category.as_str()),
        ("m.image", "media")
    );
    let sync = sync_state::find(&f.store.conn().unwrap(), "u1")
        .unwrap()
        .unwrap();
    assert_eq!(sync.since.as_deref(), Some("s1"));
}

#[test]
fn ingesting_the_same_events_again_adds_no_rows() {
    let mut f = Fixture::new();
    let resp = joined(
        "s1",
        ROOM,
        vec![member(ME, "join", None)],
        vec![text("$1", BOB, 1, "hi")],
    );
    assert_eq!(f.ingest(resp.clone()).new_messages.len(), 1);
    let again = f.ingest(resp);
    assert!(again.new_messages.is_empty());
    assert!(again.changed_rooms.is_empty());
    assert_eq!(f.message_count(), 1);
}

#[test]
fn unread_counts_read_markers_and_importance_follow_the_room() {
    let mut f = Fixture::new();
    let mut resp = joined(
        "s1",
        ROOM,
        three_members(),
        vec![
            text("$1", BOB, 1, "old news"),
            text("$2", BOB, 2, "urgent: call me"),
            text("$3", BOB, 3, "ok"),
        ],
    );
    let room = &mut resp["rooms"]["join"][ROOM];
    room["unread_notifications"] = json!({"notification_count": 2, "highlight_count": 1});
    room["ephemeral"] =
        json!({"events": [{"type": "m.receipt", "content": {"$1": {"m.read": {ME: {"ts": 5}}}}}]});
    f.ingest(resp);
    let row = f.room(ROOM);
    assert_eq!((row.unread_count, row.highlight_count), (2, 1));
    assert_eq!(row.last_read_event_id.as_deref(), Some("$1"));
    let urgent = f.message("$2").0.importance;
    // These messages date from 1970: long past the unread-age bonus's full day.
    let aged = crate::services::importance::round_score(
        (urgent + crate::services::importance::AGE_MAX_BONUS).min(1.0),
    );
    assert_eq!(row.importance, aged);

    let mut read = joined("s2", ROOM, vec![], vec![]);
    let room = &mut read["rooms"]["join"][ROOM];
    room["unread_notifications"] = json!({"notification_count": 0, "highlight_count": 0});
    room["account_data"] =
        json!({"events": [{"type": "m.fully_read", "content": {"event_id": "$3"}}]});
    f.ingest(read);
    let row = f.room(ROOM);
    assert_eq!(row.last_read_event_id.as_deref(), Some("$3"));
    assert_eq!(row.importance, 0.0);
}

mod bridges;
mod e2ee;
mod edits;
mod history;
mod joined;
mod membership;
mod naming;
