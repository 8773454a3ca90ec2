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
use switchboard::config::{MatrixConfig, Secret};
use switchboard::crypto::MasterKey;
use switchboard::matrix::{encode, MatrixClient};
use switchboard::services::conversations::{
    seal_message, seal_room_field, MessageContent, RoomField,
};
use switchboard::store::messages::MessageRow;
use switchboard::store::rooms::RoomRow;

use crate::common::*;
use crate::tokens::create_token;

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

async fn cs_api(method: Method, path: &str, token: &str, body: Option<Value>) -> Value {
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
    let body: Value = resp.json().await.unwrap_or_default();
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

fn matrix_token(session: &Session) -> String {
    session
        .matrix_access_token
        .clone()
        .expect("matrix access token")
}

fn matrix_id(session: &Session) -> String {
    session.user["matrixUserId"]
        .as_str()
        .expect("matrixUserId")
        .to_owned()
}

async fn list(app: &TestApp, token: &str, query: &str) -> Value {
    expect_json(
        app.get_auth(&format!("/api/rooms{query}"), token).await,
        200,
    )
    .await
}

fn room_ids(list: &Value) -> Vec<String> {
    list["rooms"]
        .as_array()
        .expect("rooms")
        .iter()
        .map(|r| r["roomId"].as_str().unwrap().to_owned())
        .collect()
}

async fn post(app: &TestApp, path: &str, token: &str) -> reqwest::Response {
    app.send(Method::POST, path, Some(token), None).await
}

/// Polls the personal-token room list until `room_id` shows up (the sync worker's work).
async fn wait_for_room(app: &TestApp, token: &str, room_id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let rooms = list(app, token, "?archived=all&limit=100").await;
        if let Some(room) = rooms["rooms"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["roomId"] == room_id)
        {
            return room.clone();
        }
        assert!(
            Instant::now() < deadline,
            "room {room_id} did not appear in GET /api/rooms within 15 s (sync worker)"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Like [`wait_for_room`], until the user has joined (the worker accepts invites).
async fn wait_for_joined(app: &TestApp, token: &str, room_id: &str) -> Value {
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

// ---------------------------------------------------------------------------------------
// Validation and unknown rooms.

#[tokio::test]
async fn bad_query_values_are_400_and_unknown_rooms_are_404_never_500() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("rooms-bad").await;
    let t = create_token(&app, &user, json!({"name": "bad"})).await;
    let native = user.access_token.as_str();

    for query in [
        "?limit=0",
        "?limit=101",
        "?limit=-5",
        "?limit=abc",
        "?sortBy=bogus",
        "?archived=maybe",
        "?cursor=garbage",
        "?cursor=%7B%7D",
    ] {
        for token in [native, t.token.as_str()] {
            let resp = app.get_auth(&format!("/api/rooms{query}"), token).await;
            expect_error(resp, 400, "invalid_request").await;
        }
    }
    // Personal tokens page by recency or unread count only.
    let resp = app.get_auth("/api/rooms?sortBy=importance", &t.token).await;
    let body = expect_error(resp, 400, "invalid_request").await;
    assert!(
        body["message"].as_str().unwrap().starts_with("sortBy:"),
        "{body}"
    );
    // Bounds are accepted.
    for query in [
        "?limit=1",
        "?limit=100",
        "?sortBy=unread&archived=all",
        "?cursor=",
    ] {
        list(&app, native, query).await;
        list(&app, &t.token, query).await;
    }
    list(&app, native, "?sortBy=importance").await;
    list(&app, native, "?sortBy=recent").await;

    // Every per-room route answers 404 `not_found` for a room the user does not have.
    let unknown = room_path("!nope:localhost");
    for (method, suffix) in [
        (Method::GET, ""),
        (Method::DELETE, ""),
        (Method::POST, "/read"),
        (Method::POST, "/archive"),
        (Method::POST, "/unarchive"),
        (Method::POST, "/mute"),
        (Method::POST, "/unmute"),
        (Method::POST, "/favorite"),
        (Method::POST, "/unfavorite"),
        (Method::POST, "/pin"),
        (Method::POST, "/unpin"),
        (Method::GET, "/linked-group"),
    ] {
        let path = format!("{unknown}{suffix}");
        let resp = app.send(method.clone(), &path, Some(native), None).await;
        expect_error(resp, 404, "not_found").await;
    }
    let resp = app
        .send(
            Method::PUT,
            &unknown,
            Some(native),
            Some(json!({"encryptedName": "AAAA"})),
        )
        .await;
    expect_error(resp, 404, "not_found").await;
    // Allowlisted routes answer 404 to tokens as well.
    for (method, suffix) in [
        (Method::GET, ""),
        (Method::POST, "/read"),
        (Method::POST, "/pin"),
    ] {
        let resp = app
            .send(method, &format!("{unknown}{suffix}"), Some(&t.token), None)
            .await;
        expect_error(resp, 404, "not_found").await;
    }

    // Bad values are 400 before the room is even looked up.
    let resp = app
        .send(
            Method::DELETE,
            &format!("{unknown}?deleteMessages=yes"),
            Some(native),
            None,
        )
        .await;
    expect_error(resp, 400, "invalid_request").await;
    for body in [
        json!({"encryptedName": "not base64!"}),
        json!({"encryptedAvatar": "@@@"}),
        json!({"nonce": ""}),
        json!({"encryptedName": 5}),
    ] {
        let resp = app
            .send(Method::PUT, &unknown, Some(native), Some(body))
            .await;
        expect_error(resp, 400, "invalid_request").await;
    }

    // Without authentication: 401.
    let resp = app.get("/api/rooms").await;
    expect_error(resp, 401, "unauthorized").await;
}

#[tokio::test]
async fn a_new_user_has_no_rooms() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("rooms-empty").await;
    let body = list(&app, &user.access_token, "").await;
    assert_eq!(body, json!({"rooms": [], "nextCursor": null}));
    let body = expect_json(
        app.get_auth("/api/rooms/filter/priority", &user.access_token)
            .await,
        200,
    )
    .await;
    assert_eq!(body, json!({"rooms": []}));
}

/// Literal segments are routes of their own, not room ids.
#[tokio::test]
async fn static_routes_under_rooms_are_not_captured_by_the_room_id_route() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("rooms-routes").await;
    let t = create_token(&app, &user, json!({"name": "routes"})).await;
    let native = user.access_token.as_str();

    let body = expect_json(app.get_auth("/api/rooms/linked", native).await, 200).await;
    assert_eq!(body, json!({"groups": []}));
    let body = expect_json(
        app.get_auth("/api/rooms/filter/priority", native).await,
        200,
    )
    .await;
    assert_eq!(body, json!({"rooms": []}));
    // POST /api/rooms/link validates its body (it is not a room called "link").
    let resp = app
        .post_json("/api/rooms/link", Some(native), json!({"roomIds": []}))
        .await;
    expect_error(resp, 400, "invalid_request").await;
    let resp = app
        .get_auth(
            &format!("/api/rooms/linked/{}", uuid::Uuid::new_v4()),
            native,
        )
        .await;
    let body = expect_error(resp, 404, "not_found").await;
    assert!(
        body["message"].as_str().unwrap().contains("linked group"),
        "{body}"
    );

    // The gate resolves the same templates: these are not the allowlisted room routes.
    for path in ["/api/rooms/linked", "/api/rooms/filter/priority"] {
        let resp = app.get_auth(path, &t.token).await;
        expect_error(resp, 403, "forbidden_for_api_token").await;
    }
    let resp = app
        .post_json("/api/rooms/link", Some(&t.token), json!({}))
        .await;
    expect_error(resp, 403, "forbidden_for_api_token").await;

    let doc: Value =
        serde_yaml::from_str(&app.get("/openapi.yaml").await.text().await.unwrap()).unwrap();
    for path in [
        "/api/rooms",
        "/api/rooms/{roomId}",
        "/api/rooms/{roomId}/read",
        "/api/rooms/{roomId}/archive",
        "/api/rooms/{roomId}/unpin",
        "/api/rooms/{roomId}/linked-group",
        "/api/rooms/filter/priority",
        "/api/rooms/link",
        "/api/rooms/linked",
        "/api/rooms/linked/{groupId}",
        "/api/rooms/linked/{groupId}/rooms",
        "/api/rooms/linked/{groupId}/rooms/{roomId}",
    ] {
        assert!(
            doc["paths"][path].is_object(),
            "{path} missing from the document"
        );
    }
}

// ---------------------------------------------------------------------------------------
// Lists.

#[tokio::test]
async fn lists_sort_filter_and_page_with_both_caller_shapes() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("rooms-list").await;
    let uid = user_id(&user);
    let t = create_token(&app, &user, json!({"name": "lists"})).await;
    let native = user.access_token.as_str();

    let ids: Vec<String> = (0..7).map(|i| fake_room_id(&format!("list{i}"))).collect();
    // 0: old, important, 1 unread.  1: newest, unimportant, 5 unread.  2: middle, pinned.
    // 3: archived.  4: same time as 1, no name.  5: left (never listed).  6: invite.
    seed_room(
        &app,
        &uid,
        Seed::new(&ids[0])
            .name("Alpha")
            .ts(1_000)
            .importance(0.9)
            .unread(1)
            .platform("whatsapp"),
    );
    seed_room(
        &app,
        &uid,
        Seed::new(&ids[1])
            .name("Bravo")
            .ts(5_000)
            .importance(0.1)
            .unread(5)
            .platform("telegram"),
    );
    seed_room(
        &app,
        &uid,
        Seed {
            pinned: true,
            ..Seed::new(&ids[2]).name("Charlie").ts(3_000).importance(0.5)
        },
    );
    seed_room(
        &app,
        &uid,
        Seed {
            archived: true,
            ..Seed::new(&ids[3]).name("Delta").ts(9_000).importance(0.95)
        },
    );
    seed_room(
        &app,
        &uid,
        Seed::new(&ids[4]).ts(5_000).importance(0.1).unread(2),
    );
    seed_room(
        &app,
        &uid,
        Seed {
            membership: "leave",
            ..Seed::new(&ids[5]).name("Echo").ts(9_999)
        },
    );
    seed_room(
        &app,
        &uid,
        Seed {
            membership: "invite",
            ..Seed::new(&ids[6]).name("Foxtrot").ts(2_000).importance(0.3)
        },
    );

    // Tie on the same time and importance: room id ascending.
    let (a, b) = if ids[1] < ids[4] {
        (&ids[1], &ids[4])
    } else {
        (&ids[4], &ids[1])
    };

    // Native default: importance, pinned first; archived and left rooms hidden.
    let body = list(&app, native, "").await;
    let expected: Vec<String> = [&ids[2], &ids[0], &ids[6], a, b]
        .into_iter()
        .cloned()
        .collect();
    assert_eq!(room_ids(&body), expected);
    assert!(body["nextCursor"].is_null());
    let first = body["rooms"][1].as_object().unwrap();
    assert_eq!(first["id"], first["roomId"]);
    assert_eq!(first["platform"], "whatsapp");
    assert_eq!(first["unreadCount"], 1);
    assert_eq!(first["lastMessageAt"], 1_000);
    assert_eq!(first["importance"], 0.9);
    assert_eq!(first["encryptedName"], Value::Null);
    assert_eq!(first["encryptedAvatar"], Value::Null);
    assert_eq!(first["nonce"], Value::Null);
    for absent in ["name", "topic", "avatarUrl", "memberIds"] {
        assert!(
            !first.contains_key(absent),
            "native list room has {absent}: {first:?}"
        );
    }
    for key in [
        "isDirect",
        "recipientId",
        "highlightCount",
        "archived",
        "muted",
        "favorite",
        "pinned",
        "memberCount",
    ] {
        assert!(first.contains_key(key), "{key} missing: {first:?}");
    }
    assert_eq!(body["rooms"][2]["membership"], "invite");

    // Recent and unread orders.
    let body = list(&app, native, "?sortBy=recent").await;
    let expected: Vec<String> = [&ids[2], a, b, &ids[6], &ids[0]]
        .into_iter()
        .cloned()
        .collect();
    assert_eq!(room_ids(&body), expected);
    let body = list(&app, native, "?sortBy=unread").await;
    let expected: Vec<String> = [&ids[2], &ids[1], &ids[4], &ids[0], &ids[6]]
        .into_iter()
        .cloned()
        .collect();
    assert_eq!(room_ids(&body), expected);

    // Personal token: recent by default, readable names, no client fields.
    let body = list(&app, &t.token, "").await;
    let expected: Vec<String> = [&ids[2], a, b, &ids[6], &ids[0]]
        .into_iter()
        .cloned()
        .collect();
    assert_eq!(room_ids(&body), expected);
    let rooms = body["rooms"].as_array().unwrap();
    assert_eq!(rooms[0]["name"], "Charlie");
    assert_eq!(rooms[0]["pinned"], true);
    assert_eq!(rooms[4]["name"], "Alpha");
    let unnamed = rooms
        .iter()
        .find(|r| r["roomId"] == ids[4].as_str())
        .unwrap();
    assert_eq!(unnamed["name"], Value::Null);
    for r in rooms {
        let r = r.as_object().unwrap();
        for absent in ["encryptedName", "encryptedAvatar", "nonce", "memberIds"] {
            assert!(
                !r.contains_key(absent),
                "token list room has {absent}: {r:?}"
            );
        }
        assert!(
            r.contains_key("topic") && r.contains_key("avatarUrl"),
            "{r:?}"
        );
    }

    // archived=true / all.
    let body = list(&app, &t.token, "?archived=true").await;
    assert_eq!(room_ids(&body), vec![ids[3].clone()]);
    assert_eq!(body["rooms"][0]["name"], "Delta");
    assert_eq!(body["rooms"][0]["archived"], true);
    let body = list(&app, &t.token, "?archived=all").await;
    assert_eq!(body["rooms"].as_array().unwrap().len(), 6);
    assert_eq!(body["rooms"][1]["roomId"], ids[3].as_str());

    // Paging by cursor gives the single page's order, for every sort and filter.
    for (token, query) in [
        (t.token.as_str(), "sortBy=recent&archived=all"),
        (t.token.as_str(), "sortBy=unread&archived=all"),
        (native, "sortBy=importance&archived=all"),
        (native, "sortBy=recent"),
    ] {
        let whole = room_ids(&list(&app, token, &format!("?{query}")).await);
        for page_size in [1, 2, 4] {
            let mut paged = Vec::new();
            let mut cursor: Option<String> = None;
            for _ in 0..20 {
                let mut q = format!("?{query}&limit={page_size}");
                if let Some(c) = &cursor {
                    q.push_str(&format!("&cursor={c}"));
                }
                let page = list(&app, token, &q).await;
                assert!(page["rooms"].as_array().unwrap().len() <= page_size);
                paged.extend(room_ids(&page));
                match page["nextCursor"].as_str() {
                    Some(c) => cursor = Some(c.to_owned()),
                    None => break,
                }
            }
            assert_eq!(paged, whole, "{query} by {page_size}");
        }
    }

    // A cursor is bound to its filters.
    let page = list(&app, &t.token, "?limit=1").await;
    let cursor = page["nextCursor"].as_str().expect("cursor").to_owned();
    for other in [
        format!("?sortBy=unread&cursor={cursor}"),
        format!("?archived=all&cursor={cursor}"),
    ] {
        let resp = app.get_auth(&format!("/api/rooms{other}"), &t.token).await;
        let body = expect_error(resp, 400, "invalid_request").await;
        assert!(
            body["message"].as_str().unwrap().starts_with("cursor:"),
            "{body}"
        );
    }
    list(&app, &t.token, &format!("?limit=1&cursor={cursor}")).await;

    // The counts per platform use the list's own filter.
    let counts = switchboard::store::rooms::count_by_platform(&db(&app), &uid).unwrap();
    let listed = list(&app, &t.token, "?limit=100").await;
    let mut from_list = std::collections::BTreeMap::<String, i64>::new();
    for r in listed["rooms"].as_array().unwrap() {
        let p = r["platform"].as_str().unwrap_or("matrix").to_owned();
        *from_list.entry(p).or_default() += 1;
    }
    assert_eq!(
        counts
            .into_iter()
            .collect::<std::collections::BTreeMap<_, _>>(),
        from_list
    );

    // Another user sees none of these rooms.
    let other = app.sign_up("rooms-list-other").await;
    assert_eq!(
        list(&app, &other.access_token, "?archived=all").await["rooms"],
        json!([])
    );
    let resp = app.get_auth(&room_path(&ids[0]), &other.access_token).await;
    expect_error(resp, 404, "not_found").await;
}

// ---------------------------------------------------------------------------------------
// Flags, client fields, deletion, priority.

#[tokio::test]
async fn archive_mute_favorite_and_pin_round_trip_for_both_callers() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("rooms-flags").await;
    let uid = user_id(&user);
    let t = create_token(&app, &user, json!({"name": "flags"})).await;
    let room = fake_room_id("flags");
    let other = fake_room_id("flags-other");
    seed_room(&app, &uid, Seed::new(&room).name("Flagged").ts(1_000));
    seed_room(&app, &uid, Seed::new(&other).name("Other").ts(2_000));
    let path = room_path(&room);

    for token in [user.access_token.as_str(), t.token.as_str()] {
        let body = expect_json(post(&app, &format!("{path}/archive"), token).await, 200).await;
        assert_eq!(body["roomId"], room.as_str());
        assert_eq!(body["archived"], true);
        let note = body["note"].as_str().unwrap();
        assert!(
            note.contains("unarchive") && note.contains("new incoming message"),
            "{note}"
        );
        assert!(!room_ids(&list(&app, token, "").await).contains(&room));
        assert_eq!(
            room_ids(&list(&app, &t.token, "?archived=true").await),
            vec![room.clone()]
        );
        // The single-room read still finds an archived room.
        let got = expect_json(app.get_auth(&path, token).await, 200).await;
        assert_eq!(got["room"]["archived"], true);

        let body = expect_json(post(&app, &format!("{path}/unarchive"), token).await, 200).await;
        assert_eq!(
            body,
            json!({"message": body["message"], "roomId": room, "archived": false})
        );
        assert!(room_ids(&list(&app, token, "").await).contains(&room));

        for (action, flag, value) in [
            ("mute", "muted", true),
            ("unmute", "muted", false),
            ("favorite", "favorite", true),
            ("unfavorite", "favorite", false),
            ("pin", "pinned", true),
            ("unpin", "pinned", false),
        ] {
            let body = expect_json(post(&app, &format!("{path}/{action}"), token).await, 200).await;
            assert_eq!(body["roomId"], room.as_str(), "{action}");
            assert_eq!(body[flag], value, "{action}: {body}");
            assert!(body["message"].as_str().is_some());
            let listed = list(&app, token, "?sortBy=recent").await;
            let r = listed["rooms"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["roomId"] == room.as_str())
                .unwrap()
                .clone();
            assert_eq!(r[flag], value, "{action}");
            // A pinned room comes first although the other one is more recent.
            let expected_first = if flag == "pinned" && value {
                &room
            } else {
                &other
            };
            assert_eq!(&room_ids(&listed)[0], expected_first, "{action}");
        }
        // Repeating an action is harmless.
        expect_json(post(&app, &format!("{path}/unpin"), token).await, 200).await;
    }
}

#[tokio::test]
async fn put_stores_the_native_clients_encrypted_name_and_tokens_cannot_use_it() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("rooms-put").await;
    let uid = user_id(&user);
    let t = create_token(&app, &user, json!({"name": "put"})).await;
    let room = fake_room_id("put");
    seed_room(&app, &uid, Seed::new(&room).name("Server name"));
    let path = room_path(&room);
    let native = user.access_token.as_str();

    let body = json!({"encryptedName": "bmFtZQ==", "encryptedAvatar": "YXZhdGFy", "nonce": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"});
    let resp = app.send(Method::PUT, &path, Some(native), Some(body)).await;
    assert!(expect_json(resp, 200).await["message"].is_string());
    let got = expect_json(app.get_auth(&path, native).await, 200).await["room"].clone();
    assert_eq!(got["encryptedName"], "bmFtZQ==");
    assert_eq!(got["encryptedAvatar"], "YXZhdGFy");
    assert_eq!(got["nonce"], "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
    assert!(got.get("name").is_none());
    let listed = list(&app, native, "").await;
    assert_eq!(listed["rooms"][0]["encryptedName"], "bmFtZQ==");

    // Absent fields stay, null clears.
    let resp = app
        .send(
            Method::PUT,
            &path,
            Some(native),
            Some(json!({"encryptedAvatar": null})),
        )
        .await;
    expect_json(resp, 200).await;
    let got = expect_json(app.get_auth(&path, native).await, 200).await["room"].clone();
    assert_eq!(got["encryptedName"], "bmFtZQ==");
    assert_eq!(got["encryptedAvatar"], Value::Null);
    let resp = app
        .send(Method::PUT, &path, Some(native), Some(json!({})))
        .await;
    expect_json(resp, 200).await;

    // Invalid base64 is 400 and changes nothing.
    let resp = app
        .send(
            Method::PUT,
            &path,
            Some(native),
            Some(json!({"encryptedName": "bm FtZQ"})),
        )
        .await;
    let err = expect_error(resp, 400, "invalid_request").await;
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .starts_with("encryptedName:"),
        "{err}"
    );
    let got = expect_json(app.get_auth(&path, native).await, 200).await["room"].clone();
    assert_eq!(got["encryptedName"], "bmFtZQ==");

    // Personal tokens see the readable name, never the client fields, and cannot PUT.
    let got = expect_json(app.get_auth(&path, &t.token).await, 200).await["room"].clone();
    assert_eq!(got["name"], "Server name");
    assert!(got.get("encryptedName").is_none());
    let resp = app
        .send(
            Method::PUT,
            &path,
            Some(&t.token),
            Some(json!({"encryptedName": "AAAA"})),
        )
        .await;
    expect_error(resp, 403, "forbidden_for_api_token").await;
}

#[tokio::test]
async fn delete_removes_the_room_from_the_service_and_optionally_its_messages() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("rooms-delete").await;
    let uid = user_id(&user);
    let t = create_token(&app, &user, json!({"name": "delete"})).await;
    let native = user.access_token.as_str();

    let keep = fake_room_id("del-keep");
    seed_room(&app, &uid, Seed::new(&keep).name("Keep messages"));
    seed_message(
        &app,
        &uid,
        &keep,
        &format!("$k1{}", uuid::Uuid::new_v4()),
        1_000,
        "one",
    );
    seed_message(
        &app,
        &uid,
        &keep,
        &format!("$k2{}", uuid::Uuid::new_v4()),
        2_000,
        "two",
    );

    // Personal tokens may not delete rooms.
    let resp = app
        .send(Method::DELETE, &room_path(&keep), Some(&t.token), None)
        .await;
    expect_error(resp, 403, "forbidden_for_api_token").await;

    let resp = app
        .send(Method::DELETE, &room_path(&keep), Some(native), None)
        .await;
    let body = expect_json(resp, 200).await;
    assert_eq!(body["roomId"], keep.as_str());
    assert_eq!(body["messagesDeleted"], false);
    assert_eq!(body["deletedMessagesCount"], 0);
    assert!(body["message"].is_string());
    assert_eq!(message_count(&app, &uid, &keep), 2);
    expect_error(
        app.get_auth(&room_path(&keep), native).await,
        404,
        "not_found",
    )
    .await;
    assert!(!room_ids(&list(&app, native, "?archived=all").await).contains(&keep));
    // Deleting again: 404.
    let resp = app
        .send(Method::DELETE, &room_path(&keep), Some(native), None)
        .await;
    expect_error(resp, 404, "not_found").await;

    let wipe = fake_room_id("del-wipe");
    seed_room(
        &app,
        &uid,
        Seed {
            members: vec!["@a:localhost".into()],
            ..Seed::new(&wipe)
        },
    );
    for i in 0..3 {
        seed_message(
            &app,
            &uid,
            &wipe,
            &format!("$w{i}{}", uuid::Uuid::new_v4()),
            1_000 + i,
            "x",
        );
    }
    let resp = app
        .send(
            Method::DELETE,
            &format!("{}?deleteMessages=true", room_path(&wipe)),
            Some(native),
            None,
        )
        .await;
    let body = expect_json(resp, 200).await;
    assert_eq!(body["messagesDeleted"], true);
    assert_eq!(body["deletedMessagesCount"], 3);
    assert_eq!(message_count(&app, &uid, &wipe), 0);
    let members: i64 = db(&app)
        .query_row(
            "SELECT COUNT(*) FROM room_members WHERE user_id = ?1 AND room_id = ?2",
            [&uid, &wipe],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(members, 0);

    // deleteMessages=false explicitly is the default.
    let third = fake_room_id("del-false");
    seed_room(&app, &uid, Seed::new(&third));
    let resp = app
        .send(
            Method::DELETE,
            &format!("{}?deleteMessages=false", room_path(&third)),
            Some(native),
            None,
        )
        .await;
    assert_eq!(expect_json(resp, 200).await["messagesDeleted"], false);
}

#[tokio::test]
async fn the_priority_filter_lists_important_unread_and_highlighted_rooms() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("rooms-priority").await;
    let uid = user_id(&user);
    let important = fake_room_id("prio-imp");
    let threshold = fake_room_id("prio-thr");
    let mention = fake_room_id("prio-men");
    seed_room(
        &app,
        &uid,
        Seed::new(&important).unread(2).importance(0.9).ts(1_000),
    );
    seed_room(
        &app,
        &uid,
        Seed::new(&threshold).unread(1).importance(0.7).ts(1_000),
    );
    seed_room(
        &app,
        &uid,
        Seed {
            highlight: 1,
            ..Seed::new(&mention).unread(1).importance(0.1)
        },
    );
    seed_room(
        &app,
        &uid,
        Seed::new(&fake_room_id("prio-low"))
            .unread(4)
            .importance(0.5),
    );
    seed_room(
        &app,
        &uid,
        Seed::new(&fake_room_id("prio-read"))
            .unread(0)
            .importance(0.99),
    );
    seed_room(
        &app,
        &uid,
        Seed {
            archived: true,
            ..Seed::new(&fake_room_id("prio-arch"))
                .unread(3)
                .importance(0.9)
        },
    );

    let body = expect_json(
        app.get_auth("/api/rooms/filter/priority", &user.access_token)
            .await,
        200,
    )
    .await;
    assert_eq!(room_ids(&body), vec![important, threshold, mention]);
    assert!(body["rooms"][0].get("encryptedName").is_some());
}

// ---------------------------------------------------------------------------------------
// Keys.

#[tokio::test]
async fn personal_tokens_get_no_signing_key_after_the_keys_were_deleted() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("rooms-shred").await;
    let uid = user_id(&user);
    let t = create_token(&app, &user, json!({"name": "shred"})).await;
    let room = fake_room_id("shred");
    seed_room(&app, &uid, Seed::new(&room).name("Secret name"));
    assert_eq!(
        list(&app, &t.token, "").await["rooms"][0]["name"],
        "Secret name"
    );

    let key = base64_key();
    let resp = app
        .post_json(
            "/api/keys/register",
            Some(&user.access_token),
            json!({"publicKey": key}),
        )
        .await;
    expect_json(resp, 200).await;
    let resp = app
        .http
        .delete(app.url("/api/keys"))
        .bearer_auth(&user.access_token)
        .header(
            "X-Confirm-Key-Deletion",
            "PERMANENTLY_DELETE_ALL_MY_MESSAGES",
        )
        .send()
        .await
        .unwrap();
    expect_json(resp, 200).await;

    for path in ["/api/rooms".to_owned(), room_path(&room)] {
        let resp = app.get_auth(&path, &t.token).await;
        expect_error(resp, 409, "NO_SIGNING_KEY").await;
    }
    // Actions that return nothing readable still work; native lists too.
    expect_json(
        post(&app, &format!("{}/pin", room_path(&room)), &t.token).await,
        200,
    )
    .await;
    let body = list(&app, &user.access_token, "").await;
    assert_eq!(room_ids(&body), vec![room.clone()]);

    // New keys: readable again, but the old name is gone with the old data key.
    let resp = app
        .post_json(
            "/api/keys/register",
            Some(&user.access_token),
            json!({"publicKey": base64_key()}),
        )
        .await;
    expect_json(resp, 200).await;
    let body = list(&app, &t.token, "").await;
    assert_eq!(body["rooms"][0]["name"], Value::Null);
}

fn base64_key() -> String {
    use base64::Engine as _;
    let mut bytes = Vec::with_capacity(32);
    bytes.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    bytes.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

// ---------------------------------------------------------------------------------------
// With the homeserver.

#[tokio::test]
async fn the_single_room_read_refreshes_members_and_resolves_the_direct_recipient() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("rooms-detail").await;
    let t = create_token(&app, &user, json!({"name": "detail"})).await;
    let me = matrix_id(&user);
    let (bob, bob_token) = matrix_user("bob").await;
    let (carol, carol_token) = matrix_user("carol").await;

    // Bob opens a direct chat with the user, as a bridge does (invite with is_direct);
    // the sync worker accepts the invite.
    let dm = create_room(&bob_token, "", true, &[&me]).await;
    send_text(&bob_token, &dm, "hi").await;
    wait_for_joined(&app, &t.token, &dm).await;
    let got = expect_json(app.get_auth(&room_path(&dm), &t.token).await, 200).await["room"].clone();
    assert_eq!(got["roomId"], dm.as_str());
    assert_eq!(got["isDirect"], true);
    assert_eq!(got["recipientId"], bob.as_str());
    let mut expected = vec![me.clone(), bob.clone()];
    expected.sort();
    assert_eq!(got["memberIds"], json!(expected));
    assert_eq!(got["memberCount"], 2);
    // Lists carry the stored recipient too, but no member ids.
    let listed = list(&app, &t.token, "").await;
    let r = listed["rooms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["roomId"] == dm.as_str())
        .unwrap()
        .clone();
    assert_eq!(r["recipientId"], bob.as_str());
    assert!(r.get("memberIds").is_none());

    // A group room with Bob and Carol: all members, no recipient.
    let group = create_room(&matrix_token(&user), "Group", false, &[&bob, &carol]).await;
    matrix().join(&bob_token, &group).await.unwrap();
    matrix().join(&carol_token, &group).await.unwrap();
    wait_for_room(&app, &t.token, &group).await;
    let got = expect_json(
        app.get_auth(&room_path(&group), &user.access_token).await,
        200,
    )
    .await["room"]
        .clone();
    assert_eq!(got["isDirect"], false);
    assert_eq!(got["recipientId"], Value::Null);
    let mut expected = vec![me.clone(), bob.clone(), carol.clone()];
    expected.sort();
    assert_eq!(got["memberIds"], json!(expected));

    // A room not flagged direct that the user's m.direct lists under Carol: the read
    // consults m.direct itself, whether or not the worker has seen the change yet.
    let quiet = create_room(&matrix_token(&user), "", false, &[&carol]).await;
    matrix().join(&carol_token, &quiet).await.unwrap();
    wait_for_room(&app, &t.token, &quiet).await;
    let mut direct = serde_json::Map::new();
    direct.insert(carol.clone(), json!([quiet]));
    direct.insert(bob.clone(), json!([dm]));
    cs_api(
        Method::PUT,
        &format!("/user/{}/account_data/m.direct", encode(&me)),
        &matrix_token(&user),
        Some(Value::Object(direct)),
    )
    .await;
    let got = expect_json(
        app.get_auth(&room_path(&quiet), &user.access_token).await,
        200,
    )
    .await["room"]
        .clone();
    assert_eq!(got["isDirect"], true);
    assert_eq!(got["recipientId"], carol.as_str());
}

#[tokio::test]
async fn the_single_room_read_serves_stored_data_when_the_homeserver_is_down() {
    let mut app = TestApp::start_with_mail().await;
    let user = app.sign_up("rooms-down").await;
    let uid = user_id(&user);
    let room = fake_room_id("down");
    seed_room(
        &app,
        &uid,
        Seed {
            is_direct: true,
            recipient: Some("@partner:localhost".into()),
            members: vec!["@partner:localhost".into(), matrix_id(&user)],
            ..Seed::new(&room).name("Partner")
        },
    );
    // A room the homeserver does not know: refused there, stored data served.
    let got = expect_json(
        app.get_auth(&room_path(&room), &user.access_token).await,
        200,
    )
    .await["room"]
        .clone();
    assert_eq!(got["recipientId"], "@partner:localhost");
    assert_eq!(got["memberIds"].as_array().unwrap().len(), 2);

    // Restart against a homeserver address nothing listens on.
    app.kill9();
    let config = std::fs::read_to_string(&app.config_path).unwrap();
    let down = config
        .lines()
        .map(|l| {
            if l.starts_with("homeserver_url") {
                format!("homeserver_url = \"http://127.0.0.1:{}\"", free_port())
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(&app.config_path, down).unwrap();
    app.spawn().await;

    let started = Instant::now();
    let got = expect_json(
        app.get_auth(&room_path(&room), &user.access_token).await,
        200,
    )
    .await["room"]
        .clone();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "fallback took {:?}",
        started.elapsed()
    );
    assert_eq!(got["recipientId"], "@partner:localhost");
    assert_eq!(got["isDirect"], true);
    let mut expected = vec!["@partner:localhost".to_owned(), matrix_id(&user)];
    expected.sort();
    assert_eq!(got["memberIds"], json!(expected));
    // Marking read still works here; the message says the homeserver was not told.
    seed_message(&app, &uid, &room, "$down-event", 1_000, "hi");
    let body = expect_json(
        post(
            &app,
            &format!("{}/read", room_path(&room)),
            &user.access_token,
        )
        .await,
        200,
    )
    .await;
    assert!(
        body["message"].as_str().unwrap().contains("homeserver"),
        "{body}"
    );
}

#[tokio::test]
async fn marking_read_clears_the_counts_and_moves_the_read_markers_on_the_homeserver() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("rooms-read").await;
    let uid = user_id(&user);
    let t = create_token(&app, &user, json!({"name": "read"})).await;
    let me = matrix_id(&user);
    let (bob, bob_token) = matrix_user("reader").await;
    let room = create_room(&matrix_token(&user), "Read me", false, &[&bob]).await;
    matrix().join(&bob_token, &room).await.unwrap();
    send_text(&bob_token, &room, "first").await;
    let last = send_text(&bob_token, &room, "second @mention").await;

    // Wait until the sync worker stored both messages and counted them unread.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let r = wait_for_room(&app, &t.token, &room).await;
        if message_count(&app, &uid, &room) == 2 && r["unreadCount"].as_i64() > Some(0) {
            break;
        }
        assert!(Instant::now() < deadline, "messages not ingested: {r}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    let body = expect_json(
        post(&app, &format!("{}/read", room_path(&room)), &t.token).await,
        200,
    )
    .await;
    assert_eq!(body["message"], "room marked as read");
    let got =
        expect_json(app.get_auth(&room_path(&room), &t.token).await, 200).await["room"].clone();
    assert_eq!(got["unreadCount"], 0);
    assert_eq!(got["highlightCount"], 0);
    let stored: Option<String> = db(&app)
        .query_row(
            "SELECT last_read_event_id FROM rooms WHERE user_id = ?1 AND room_id = ?2",
            [&uid, &room],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(stored.as_deref(), Some(last.as_str()));

    // The homeserver has the fully-read marker at the newest message, and no longer counts
    // the room unread (so the worker keeps it at 0).
    let marker = cs_api(
        Method::GET,
        &format!(
            "/user/{}/rooms/{}/account_data/m.fully_read",
            encode(&me),
            encode(&room)
        ),
        &matrix_token(&user),
        None,
    )
    .await;
    assert_eq!(marker["event_id"], last.as_str());
    tokio::time::sleep(Duration::from_secs(2)).await;
    let got =
        expect_json(app.get_auth(&room_path(&room), &t.token).await, 200).await["room"].clone();
    assert_eq!(got["unreadCount"], 0, "{got}");

    // A room without stored messages is marked read here only.
    let empty = fake_room_id("read-empty");
    seed_room(&app, &uid, Seed::new(&empty).unread(3));
    let body = expect_json(
        post(
            &app,
            &format!("{}/read", room_path(&empty)),
            &user.access_token,
        )
        .await,
        200,
    )
    .await;
    assert!(
        body["message"].as_str().unwrap().contains("no messages"),
        "{body}"
    );
    let listed = list(&app, &user.access_token, "?sortBy=unread").await;
    assert!(
        listed["rooms"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["unreadCount"] == 0),
        "{listed}"
    );
}

// ---------------------------------------------------------------------------------------
// The whole path through the sync worker.

/// Rooms created on the homeserver appear in the list with readable names, through the
/// sync worker.
#[tokio::test]
async fn rooms_from_the_homeserver_appear_with_readable_names() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("rooms-sync").await;
    let t = create_token(&app, &user, json!({"name": "sync"})).await;
    let (bob, bob_token) = matrix_user("syncer").await;
    let room = create_room(&matrix_token(&user), "Synced room", false, &[&bob]).await;
    matrix().join(&bob_token, &room).await.unwrap();
    send_text(&bob_token, &room, "hello").await;

    let got = wait_for_room(&app, &t.token, &room).await;
    assert_eq!(got["name"], "Synced room");
    assert_eq!(got["platform"], Value::Null);
    assert_eq!(got["archived"], false);
    let detail =
        expect_json(app.get_auth(&room_path(&room), &t.token).await, 200).await["room"].clone();
    assert_eq!(detail["memberIds"].as_array().unwrap().len(), 2);
    let native = wait_for_room(&app, &user.access_token, &room).await;
    assert!(native.get("name").is_none());
    assert_eq!(native["encryptedName"], Value::Null);
}

/// Needs the sync worker to clear `archived` when a new incoming message arrives in an
/// archived room (the documented way back besides POST …/unarchive).
#[tokio::test]
async fn an_incoming_message_unarchives_a_room() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("rooms-unarchive").await;
    let t = create_token(&app, &user, json!({"name": "unarchive"})).await;
    let (bob, bob_token) = matrix_user("unarchiver").await;
    let room = create_room(&matrix_token(&user), "Comes back", false, &[&bob]).await;
    matrix().join(&bob_token, &room).await.unwrap();
    send_text(&bob_token, &room, "hello").await;
    wait_for_room(&app, &t.token, &room).await;

    expect_json(
        post(&app, &format!("{}/archive", room_path(&room)), &t.token).await,
        200,
    )
    .await;
    assert!(!room_ids(&list(&app, &t.token, "").await).contains(&room));
    // The user's own message does not bring it back.
    send_text(&matrix_token(&user), &room, "note to self").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(!room_ids(&list(&app, &t.token, "").await).contains(&room));
    send_text(&bob_token, &room, "are you there?").await;
    let deadline = Instant::now() + Duration::from_secs(15);
    while !room_ids(&list(&app, &t.token, "").await).contains(&room) {
        assert!(
            Instant::now() < deadline,
            "an incoming message did not unarchive the room"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
