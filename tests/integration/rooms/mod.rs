//! `/api/rooms/*` against the real binary and the real Synapse: both caller shapes (native
//! JWT and personal token), sorting and cursor paging, flags, mark read (read markers on
//! the homeserver), the single-room read (members and recipient from the homeserver, stored
//! data when it is down), deletion, the priority filter and validation.
//!
//! Rooms that must exist on the homeserver are created there for real and reach the
//! service through the sync worker (the tests wait for them in `GET /api/rooms`). Tests of
//! list order, paging, flags and validation seed the rows the worker would write straight
//! into the server's database (names sealed with the user's data key, exactly as the
//! worker does), under room ids the homeserver does not know, so the worker never touches
//! them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{json, Value};
use switchboard::clients::matrix::{encode, MatrixClient};
use switchboard::config::{MatrixConfig, Secret};
use switchboard::crypto::MasterKey;
use switchboard::services::conversations::{
    seal_message, seal_room_field, MessageContent, RoomField,
};
use switchboard::store::messages::MessageRow;
use switchboard::store::rooms::RoomRow;

use crate::common::*;

mod flags;
mod homeserver;
mod keys;
mod lists;
mod sync_worker;
mod validation;

// ---------------------------------------------------------------------------------------
// Helpers shared with the linked-group tests.

static ROOM_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A room id no other test uses (not on the homeserver).
pub fn fake_room_id(tag: &str) -> String {
    let n = ROOM_COUNTER.fetch_add(1, Ordering::SeqCst);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("!{tag}{n}x{nanos}x{}:localhost", std::process::id())
}

pub fn user_id(session: &Session) -> String {
    session.user["id"].as_str().expect("user id").to_owned()
}

pub fn room_path(room_id: &str) -> String {
    format!("/api/rooms/{}", encode(room_id))
}

pub fn db(app: &TestApp) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(app.data_dir().join("switchboard.db")).unwrap();
    conn.busy_timeout(Duration::from_secs(5)).unwrap();
    conn
}

fn data_key(
    app: &TestApp,
    conn: &rusqlite::Connection,
    user_id: &str,
) -> switchboard::crypto::DataKey {
    let master = MasterKey::load(&app.data_dir().join("master.key")).expect("master key");
    let user = switchboard::store::users::find(conn, user_id)
        .unwrap()
        .expect("user row");
    switchboard::services::users::data_key(&master, &user).expect("data key")
}

/// What a seeded room looks like; the rest of the row takes defaults.
#[derive(Debug, Clone)]
pub struct Seed {
    pub room_id: String,
    pub name: Option<String>,
    pub topic: Option<String>,
    pub platform: Option<&'static str>,
    pub is_direct: bool,
    pub recipient: Option<String>,
    pub unread: i64,
    pub highlight: i64,
    pub last_ts: Option<i64>,
    pub importance: f64,
    pub archived: bool,
    pub pinned: bool,
    pub membership: &'static str,
    pub members: Vec<String>,
}

impl Seed {
    pub fn new(room_id: &str) -> Self {
        Self {
            room_id: room_id.to_owned(),
            name: None,
            topic: None,
            platform: None,
            is_direct: false,
            recipient: None,
            unread: 0,
            highlight: 0,
            last_ts: None,
            importance: 0.0,
            archived: false,
            pinned: false,
            membership: "join",
            members: Vec::new(),
        }
    }

    pub fn name(mut self, name: &str) -> Self {
        self.name = Some(name.to_owned());
        self
    }

    pub fn platform(mut self, p: &'static str) -> Self {
        self.platform = Some(p);
        self
    }

    pub fn ts(mut self, ts: i64) -> Self {
        self.last_ts = Some(ts);
        self
    }

    pub fn unread(mut self, n: i64) -> Self {
        self.unread = n;
        self
    }

    pub fn importance(mut self, i: f64) -> Self {
        self.importance = i;
        self
    }
}

/// Writes the room row the sync worker would write (names sealed under the user's data
/// key), unless the room is already stored (e.g. the worker was faster).
pub fn seed_room(app: &TestApp, user_id: &str, seed: Seed) {
    let conn = db(app);
    if switchboard::store::rooms::find(&conn, user_id, &seed.room_id)
        .unwrap()
        .is_some()
    {
        return;
    }
    let dek = data_key(app, &conn, user_id);
    let seal = |field, value: &Option<String>| {
        value
            .as_deref()
            .map(|v| seal_room_field(&dek, user_id, &seed.room_id, field, v))
    };
    let now = chrono::Utc::now().timestamp();
    let row = RoomRow {
        user_id: user_id.to_owned(),
        room_id: seed.room_id.clone(),
        name_enc: seal(RoomField::Name, &seed.name),
        topic_enc: seal(RoomField::Topic, &seed.topic),
        is_direct: seed.is_direct,
        recipient_id: seed.recipient.clone(),
        platform: seed.platform.map(str::to_owned),
        member_count: seed.members.len() as i64,
        unread_count: seed.unread,
        highlight_count: seed.highlight,
        last_message_ts: seed.last_ts,
        importance: seed.importance,
        archived: seed.archived,
        archived_at: seed.archived.then_some(now),
        pinned: seed.pinned,
        membership: seed.membership.to_owned(),
        created_at: now,
        updated_at: now,
        ..RoomRow::default()
    };
    switchboard::store::rooms::upsert(&conn, &row).unwrap();
    switchboard::store::rooms::set_members(&conn, user_id, &seed.room_id, &seed.members).unwrap();
}

/// Stores a message row as the sync worker would (content sealed); no-op if present.
pub fn seed_message(
    app: &TestApp,
    user_id: &str,
    room_id: &str,
    event_id: &str,
    ts: i64,
    body: &str,
) {
    let conn = db(app);
    let dek = data_key(app, &conn, user_id);
    let id = uuid::Uuid::new_v4().to_string();
    let content = MessageContent {
        body: body.to_owned(),
        content: json!({"msgtype": "m.text", "body": body}),
    };
    let row = MessageRow {
        content_enc: seal_message(&dek, &id, &content),
        id,
        user_id: user_id.to_owned(),
        room_id: room_id.to_owned(),
        event_id: event_id.to_owned(),
        sender_id: "@someone:localhost".to_owned(),
        ts,
        msgtype: "m.text".to_owned(),
        category: "general".to_owned(),
        created_at: ts / 1000,
        ..MessageRow::default()
    };
    switchboard::store::messages::insert_if_new(&conn, &row).unwrap();
}

fn message_count(app: &TestApp, user_id: &str, room_id: &str) -> i64 {
    db(app)
        .query_row(
            "SELECT COUNT(*) FROM messages WHERE user_id = ?1 AND room_id = ?2",
            [user_id, room_id],
            |r| r.get(0),
        )
        .unwrap()
}

/// Client of the test Synapse for a second party and for checks on the homeserver.
pub fn matrix() -> MatrixClient {
    let s = synapse();
    MatrixClient::new(&MatrixConfig {
        homeserver_url: s.base_url.clone(),
        server_name: s.server_name.clone(),
        registration_shared_secret: Secret(s.shared_secret.clone()),
    })
    .expect("matrix client")
}

/// A new Matrix user registered with the shared secret: (user id, access token).
pub async fn matrix_user(prefix: &str) -> (String, String) {
    let n = ROOM_COUNTER.fetch_add(1, Ordering::SeqCst);
    let localpart = format!(
        "{prefix}{n}x{}x{}",
        std::process::id(),
        chrono::Utc::now().timestamp_micros()
    );
    let s = matrix()
        .register(&localpart, "test-password-123")
        .await
        .expect("register Matrix user");
    (s.user_id, s.access_token)
}

/// A client-API call to Synapse (`path` after `/_matrix/client/v3`) as `token`: the status
/// and the JSON body (null when none), whatever the status.
pub(crate) async fn cs_api_status(
    method: Method,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> (reqwest::StatusCode, Value) {
    let mut req = reqwest::Client::new()
        .request(
            method,
            format!("{}/_matrix/client/v3{path}", synapse().base_url),
        )
        .bearer_auth(token);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = req.send().await.expect("homeserver request");
    let status = resp.status();
    (status, resp.json().await.unwrap_or_default())
}

/// [`cs_api_status`] that must succeed; returns the body.
pub(crate) async fn cs_api(method: Method, path: &str, token: &str, body: Option<Value>) -> Value {
    let (status, body) = cs_api_status(method, path, token, body).await;
    assert!(status.is_success(), "homeserver {path}: {status} {body}");
    body
}

/// Creates a room on Synapse as the holder of `token`; returns its id.
pub async fn create_room(token: &str, name: &str, is_direct: bool, invite: &[&str]) -> String {
    let body = cs_api(
        Method::POST,
        "/createRoom",
        token,
        Some(json!({
            "name": name,
            "preset": if is_direct { "trusted_private_chat" } else { "private_chat" },
            "is_direct": is_direct,
            "invite": invite,
        })),
    )
    .await;
    body["room_id"].as_str().expect("room_id").to_owned()
}

pub async fn send_text(token: &str, room_id: &str, text: &str) -> String {
    let txn = uuid::Uuid::new_v4().to_string();
    matrix()
        .send_event(
            token,
            room_id,
            "m.room.message",
            &txn,
            &json!({"msgtype": "m.text", "body": text}),
        )
        .await
        .expect("send")
}

pub(crate) fn matrix_token(session: &Session) -> String {
    session
        .matrix_access_token
        .clone()
        .expect("matrix access token")
}

pub(crate) fn matrix_id(session: &Session) -> String {
    session.user["matrixUserId"]
        .as_str()
        .expect("matrixUserId")
        .to_owned()
}

async fn list(app: &TestApp, token: &str, query: &str) -> Value {
    app.api(token).rooms().list(query).await.expect("room list")
}

use crate::common::client::rooms::room_ids;

/// Polls the personal-token room list until `room_id` shows up (the sync worker's work).
pub(crate) async fn wait_for_room(app: &TestApp, token: &str, room_id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(15);
    let rooms = app.api(token).rooms();
    loop {
        if let Some(room) = rooms.listed("?archived=all&limit=100", room_id).await {
            return room;
        }
        assert!(
            Instant::now() < deadline,
            "room {room_id} did not appear in GET /api/rooms within 15 s (sync worker)"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Like [`wait_for_room`], until the user has joined (an accepted or bridge invitation).
pub(crate) async fn wait_for_joined(app: &TestApp, token: &str, room_id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let room = wait_for_room(app, token, room_id).await;
        if room["membership"] == "join" {
            return room;
        }
        assert!(
            Instant::now() < deadline,
            "invite to {room_id} not accepted: {room}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
