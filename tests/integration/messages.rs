//! `/api/messages*` and `POST /api/rooms/{roomId}/messages` against the real binary and the
//! test Synapse.
//!
//! History, deletion and statistics tests seed rooms and messages straight into the
//! running server's database (sealed with the server's master key, exactly as the sync
//! worker stores them), so they do not depend on sync timing. Sending tests use rooms
//! created on Synapse with the user's own Matrix token, and check Synapse's own history.
//! The last test goes through the sync worker: a second Matrix user writes, and both views
//! of the history show it.

use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use reqwest::Method;
use serde_json::{json, Value};
use switchboard::crypto::{open_envelope, Envelope, MasterKey};
use switchboard::services::conversations::{seal_message, MessageContent};
use switchboard::store::messages::{insert_if_new, MessageRow};
use switchboard::store::rooms::{upsert as upsert_room, RoomRow};
use x25519_dalek::{PublicKey, StaticSecret};

use crate::common::matrix::{self as mx, MatrixUser};
use crate::common::*;

const CONFIRM: &str = "DELETE_MESSAGES";

// ---- helpers ----------------------------------------------------------------

fn uid(s: &Session) -> String {
    s.user["id"].as_str().expect("user id").to_owned()
}

fn matrix_id(s: &Session) -> String {
    s.user["matrixUserId"]
        .as_str()
        .expect("matrixUserId")
        .to_owned()
}

fn enc(segment: &str) -> String {
    switchboard::matrix::encode(segment)
}

async fn personal_token(app: &TestApp, s: &Session) -> String {
    let resp = app
        .post_json(
            "/api/developer/tokens",
            Some(&s.access_token),
            json!({"name": "messages test"}),
        )
        .await;
    expect_json(resp, 201).await["token"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Registers a fresh X25519 key for the user; returns its secret.
async fn register_key(app: &TestApp, s: &Session) -> StaticSecret {
    let mut bytes = [0u8; 32];
    bytes[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    bytes[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    let secret = StaticSecret::from(bytes);
    let public = STANDARD.encode(PublicKey::from(&secret).as_bytes());
    let resp = app
        .post_json(
            "/api/keys/register",
            Some(&s.access_token),
            json!({"publicKey": public}),
        )
        .await;
    expect_json(resp, 200).await;
    secret
}

/// Opens `encryptedContent` of a native message with the test's secret.
fn decrypt(secret: &StaticSecret, message: &Value) -> Value {
    let c = &message["encryptedContent"];
    let env = Envelope::from_base64(
        c["ephemeralPubkey"].as_str().unwrap(),
        c["nonce"].as_str().unwrap(),
        c["ciphertext"].as_str().unwrap(),
    )
    .expect("envelope fields are base64 of the right sizes");
    let plain = open_envelope(secret, &env).expect("opens with the registered key");
    serde_json::from_slice(&plain).expect("plaintext is JSON")
}

async fn history(app: &TestApp, bearer: &str, query: &str) -> Value {
    expect_json(
        app.get_auth(&format!("/api/messages{query}"), bearer).await,
        200,
    )
    .await
}

fn bodies(page: &Value, field: &str) -> Vec<String> {
    page["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m[field].as_str().unwrap().to_owned())
        .collect()
}

/// Writes rooms and messages into the running server's database, sealed like the sync
/// worker seals them.
struct Seeder {
    conn: rusqlite::Connection,
    master: MasterKey,
}

/// A message to seed; `Default` gives a plain incoming `m.text`.
#[derive(Clone, Default)]
struct Msg {
    sender: String,
    ts: i64,
    body: String,
    importance: f64,
    category: String,
    question: bool,
    redacted: bool,
    edited: bool,
    mine: bool,
}

fn msg(sender: &str, ts: i64, body: &str) -> Msg {
    Msg {
        sender: sender.to_owned(),
        ts,
        body: body.to_owned(),
        category: "general".to_owned(),
        ..Msg::default()
    }
}

impl Seeder {
    fn open(app: &TestApp) -> Self {
        let conn = rusqlite::Connection::open(app.data_dir().join("switchboard.db")).unwrap();
        conn.busy_timeout(Duration::from_secs(10)).unwrap();
        let master = MasterKey::load(&app.data_dir().join("master.key")).expect("master key");
        Self { conn, master }
    }

    fn room(&self, user_id: &str, room_id: &str, platform: Option<&str>) {
        self.room_with(user_id, room_id, platform, false, None);
    }

    fn room_with(
        &self,
        user_id: &str,
        room_id: &str,
        platform: Option<&str>,
        direct: bool,
        recipient: Option<&str>,
    ) {
        let now = chrono::Utc::now().timestamp();
        upsert_room(
            &self.conn,
            &RoomRow {
                user_id: user_id.to_owned(),
                room_id: room_id.to_owned(),
                platform: platform.map(str::to_owned),
                is_direct: direct,
                recipient_id: recipient.map(str::to_owned),
                membership: "join".to_owned(),
                created_at: now,
                updated_at: now,
                ..RoomRow::default()
            },
        )
        .unwrap();
    }

    /// Seeds `m` into `room_id` of `user_id`; returns (message id, event id).
    fn message(&self, user_id: &str, room_id: &str, m: &Msg) -> (String, String) {
        let user = switchboard::store::users::find(&self.conn, user_id)
            .unwrap()
            .expect("user row");
        let dek = switchboard::services::users::data_key(&self.master, &user).unwrap();
        let id = uuid::Uuid::new_v4().to_string();
        let event_id = format!("${}", uuid::Uuid::new_v4().simple());
        let content = MessageContent {
            body: if m.redacted {
                String::new()
            } else {
                m.body.clone()
            },
            content: if m.redacted {
                json!({})
            } else {
                json!({"msgtype": "m.text", "body": m.body})
            },
        };
        let row = MessageRow {
            content_enc: seal_message(&dek, &id, &content),
            id: id.clone(),
            user_id: user_id.to_owned(),
            room_id: room_id.to_owned(),
            event_id: event_id.clone(),
            sender_id: m.sender.clone(),
            ts: m.ts,
            msgtype: "m.text".to_owned(),
            is_mine: m.mine,
            importance: m.importance,
            category: m.category.clone(),
            is_question: m.question,
            edited: m.edited,
            redacted: m.redacted,
            created_at: chrono::Utc::now().timestamp(),
        };
        assert!(insert_if_new(&self.conn, &row).unwrap());
        (id, event_id)
    }

    fn count(&self, user_id: &str) -> i64 {
        self.conn
            .query_row(
                "SELECT COUNT(*) FROM messages WHERE user_id = ?1",
                [user_id],
                |r| r.get(0),
            )
            .unwrap()
    }
}

/// Events of `room_id` with `body`, as Synapse itself stores them.
async fn synapse_bodies(token: &str, room_id: &str, body: &str) -> usize {
    let url = format!(
        "{}/_matrix/client/v3/rooms/{}/messages?dir=b&limit=200",
        synapse().base_url,
        enc(room_id)
    );
    let resp = reqwest::Client::new()
        .get(url)
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    let page = expect_json(resp, 200).await;
    page["chunk"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "m.room.message" && e["content"]["body"] == body)
        .count()
}

fn me_on_matrix(s: &Session) -> MatrixUser {
    MatrixUser::from_token(
        &matrix_id(s),
        s.matrix_access_token.as_deref().expect("matrix token"),
    )
}

// ---- history ------------------------------------------------------------------

#[tokio::test]
async fn native_history_is_sealed_to_the_registered_key_and_pages_strictly_before() {
    let app = TestApp::start_with_mail().await;
    let me = app.sign_up("msg.native").await;
    let jwt = me.access_token.clone();
    let id = uid(&me);
    let seed = Seeder::open(&app);
    let room = "!native-a:seed.test";
    let other = "!native-b:seed.test";
    seed.room(&id, room, Some("telegram"));
    seed.room(&id, other, None);

    // Without a registered key the encrypted view is refused.
    expect_error(
        app.get_auth("/api/messages", &jwt).await,
        409,
        "keys_not_registered",
    )
    .await;
    let secret = register_key(&app, &me).await;

    let alice = "@alice:seed.test";
    let mut seeded = Vec::new();
    for i in 1..=5 {
        let mut m = msg(alice, 1_700_000_000_000 + i * 1000, &format!("native {i}"));
        m.importance = i as f64 / 10.0;
        m.edited = i == 2;
        m.redacted = i == 3;
        m.mine = i == 4;
        if m.mine {
            m.sender = matrix_id(&me);
        }
        seeded.push((seed.message(&id, room, &m), m));
    }
    seed.message(&id, other, &msg(alice, 1_700_000_000_500, "other room"));
    seed.message(&id, other, &msg(alice, 1_700_000_009_000, "other newest"));

    // Newest first, two per page, each page strictly older than `before`.
    let mut got = Vec::new();
    let mut query = format!("?roomId={}&limit=2", enc(room));
    loop {
        let page = history(&app, &jwt, &query).await;
        let items = page["messages"].as_array().unwrap().clone();
        assert!(page.get("nextCursor").is_none(), "{page}");
        if items.is_empty() {
            break;
        }
        assert!(items.len() <= 2);
        let oldest = items.last().unwrap()["timestamp"].as_i64().unwrap();
        got.extend(items);
        query = format!("?roomId={}&limit=2&before={oldest}", enc(room));
    }
    assert_eq!(got.len(), 5);
    for (item, ((mid, event_id), m)) in got.iter().zip(seeded.iter().rev()) {
        assert_eq!(item["id"], mid.as_str());
        assert_eq!(item["eventId"], event_id.as_str());
        assert_eq!(item["roomId"], room);
        assert_eq!(item["senderId"], m.sender.as_str());
        assert_eq!(item["timestamp"], m.ts);
        assert_eq!(item["msgtype"], "m.text");
        assert_eq!(item["platform"], "telegram");
        assert_eq!(item["importance"].as_f64().unwrap(), m.importance);
        assert_eq!(item["isMine"], m.mine);
        assert_eq!(item["edited"], m.edited);
        assert_eq!(item["redacted"], m.redacted);
        let plain = decrypt(&secret, item);
        if m.redacted {
            assert_eq!(plain["body"], "", "{plain}");
        } else {
            assert_eq!(plain["body"], m.body.as_str());
            assert_eq!(plain["content"]["body"], m.body.as_str());
            assert_eq!(plain["content"]["msgtype"], "m.text");
        }
        let keys: Vec<&String> = item.as_object().unwrap().keys().collect();
        assert!(
            !keys.iter().any(|k| *k == "text" || *k == "content"),
            "{item}"
        );
    }

    // `before` as RFC 3339 means the same instant.
    let cutoff = chrono::DateTime::from_timestamp_millis(1_700_000_003_000)
        .unwrap()
        .to_rfc3339();
    let page = history(
        &app,
        &jwt,
        &format!("?roomId={}&before={}", enc(room), enc(&cutoff)),
    )
    .await;
    let ts: Vec<i64> = page["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["timestamp"].as_i64().unwrap())
        .collect();
    assert_eq!(ts, [1_700_000_002_000, 1_700_000_001_000]);

    // Without roomId: every room of the caller, newest first.
    let all = history(&app, &jwt, "").await;
    let ts: Vec<i64> = all["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["timestamp"].as_i64().unwrap())
        .collect();
    assert_eq!(ts.len(), 7);
    assert!(ts.windows(2).all(|w| w[0] >= w[1]), "{ts:?}");
    assert_eq!(all["messages"][0]["roomId"], other);
    assert!(all["messages"][0]["platform"].is_null());

    // Bad input is 400, unknown rooms 404 — never 500.
    for q in [
        "?limit=0",
        "?limit=101",
        "?limit=-3",
        "?limit=abc",
        "?before=yesterday",
        "?before=-1",
        "?cursor=abc",
        "?roomId=",
    ] {
        expect_error(
            app.get_auth(&format!("/api/messages{q}"), &jwt).await,
            400,
            "invalid_request",
        )
        .await;
    }
    expect_error(
        app.get_auth("/api/messages?roomId=%21unknown%3Aseed.test", &jwt)
            .await,
        404,
        "not_found",
    )
    .await;
    let page = history(&app, &jwt, &format!("?roomId={}&limit=100", enc(room))).await;
    assert_eq!(page["messages"].as_array().unwrap().len(), 5);
}

#[tokio::test]
async fn readable_history_walks_each_conversation_with_an_opaque_cursor() {
    let app = TestApp::start_with_mail().await;
    let me = app.sign_up("msg.readable").await;
    let id = uid(&me);
    let token = personal_token(&app, &me).await;
    let mine = matrix_id(&me);

    // A second account of the same group: its Matrix ID counts as outgoing.
    let second = unique_email("msg.readable.second");
    let resp = app
        .post_json(
            "/api/accounts/add/code",
            Some(&me.access_token),
            json!({"email": second}),
        )
        .await;
    expect_json(resp, 200).await;
    let code = mail::wait_for_code(&second, 0).await;
    let resp = app
        .post_json(
            "/api/accounts/add/verify",
            Some(&me.access_token),
            json!({"email": second, "code": code}),
        )
        .await;
    let added = expect_json(resp, 200).await;
    let seed = Seeder::open(&app);
    let linked: String = seed
        .conn
        .query_row(
            "SELECT matrix_user_id FROM users WHERE id = ?1",
            [added["account"]["id"].as_str().unwrap()],
            |r| r.get(0),
        )
        .expect("the added account has a Matrix ID");

    let (a, b, c) = (
        "!walk-a:seed.test",
        "!walk-b:seed.test",
        "!walk-c:seed.test",
    );
    for r in [c, a, b] {
        seed.room(&id, r, Some("whatsapp"));
    }
    let bob = "@bob:seed.test";
    let mut redacted = msg(bob, 3000, "secret");
    redacted.redacted = true;
    let mut own = msg(&mine, 2000, "from me");
    own.mine = true;
    let a_msgs = [
        msg(bob, 1000, "a1"),
        own,
        redacted,
        msg(&linked, 4000, "from my other account"),
    ];
    let a_events: Vec<String> = a_msgs.iter().map(|m| seed.message(&id, a, m).1).collect();
    let c_events: Vec<String> = [msg(bob, 500, "c1"), msg(bob, 600, "c2")]
        .iter()
        .map(|m| seed.message(&id, c, m).1)
        .collect();
    // Another user's rows never show up.
    let stranger = app.sign_up("msg.readable.stranger").await;
    seed.room(&uid(&stranger), a, None);
    seed.message(&uid(&stranger), a, &msg(bob, 5000, "not yours"));

    // The walk: room id order, each room newest first, one room per page, an empty
    // page for the empty room still carries a cursor, null at the end.
    let mut pages = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let q = match &cursor {
            Some(c) => format!("?limit=3&cursor={c}"),
            None => "?limit=3".to_owned(),
        };
        let page = history(&app, &token, &q).await;
        let next = page["nextCursor"].as_str().map(str::to_owned);
        pages.push(page);
        match next {
            Some(n) => {
                assert!(n.parse::<i64>().is_err(), "cursor is opaque: {n}");
                cursor = Some(n);
            }
            None => break,
        }
        assert!(pages.len() < 10, "the walk must end");
    }
    let rooms_per_page: Vec<Vec<String>> = pages.iter().map(|p| bodies(p, "roomId")).collect();
    assert_eq!(
        rooms_per_page,
        vec![
            vec![a.to_owned(); 3],
            vec![a.to_owned()],
            vec![],
            vec![c.to_owned(); 2]
        ],
        "{pages:#?}"
    );
    let walked: Vec<String> = pages.iter().flat_map(|p| bodies(p, "eventId")).collect();
    let mut expected: Vec<String> = a_events.iter().rev().cloned().collect();
    expected.extend(c_events.iter().rev().cloned());
    assert_eq!(walked, expected);

    // Fields of the readable message.
    let first = &pages[0]["messages"];
    assert_eq!(first[0]["text"], "from my other account");
    assert_eq!(first[0]["direction"], "outgoing");
    assert_eq!(first[0]["isMine"], false);
    assert_eq!(first[0]["timestamp"], 4000);
    assert_eq!(first[0]["senderId"], linked.as_str());
    assert_eq!(first[0]["content"]["body"], "from my other account");
    assert_eq!(first[1]["text"], "", "redacted text is empty");
    assert_eq!(first[1]["direction"], "incoming");
    assert_eq!(first[2]["text"], "from me");
    assert_eq!(first[2]["direction"], "outgoing");
    assert_eq!(first[2]["isMine"], true);
    let mut keys: Vec<&str> = first[0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "content",
            "direction",
            "eventId",
            "isMine",
            "roomId",
            "senderId",
            "text",
            "timestamp"
        ]
    );

    // One room: newest first to the end.
    let page = history(&app, &token, &format!("?roomId={}&limit=3", enc(a))).await;
    assert_eq!(
        bodies(&page, "text"),
        ["from my other account", "", "from me"]
    );
    let next = page["nextCursor"].as_str().unwrap().to_owned();
    let page2 = history(
        &app,
        &token,
        &format!("?roomId={}&limit=3&cursor={next}", enc(a)),
    )
    .await;
    assert_eq!(bodies(&page2, "text"), ["a1"]);
    assert!(page2["nextCursor"].is_null());
    let empty = history(&app, &token, &format!("?roomId={}", enc(b))).await;
    assert_eq!(empty["messages"], json!([]));
    assert!(empty["nextCursor"].is_null());

    // Cursors are checked: garbage, timestamps and cursors of other filters are 400.
    let walk_cursor = pages[0]["nextCursor"].as_str().unwrap();
    for q in [
        "?cursor=garbage".to_owned(),
        "?cursor=1700000000000".to_owned(),
        format!("?roomId={}&cursor={walk_cursor}", enc(a)),
        format!("?cursor={next}"),
        format!("?roomId={}&cursor={next}", enc(c)),
        "?before=1700000000000".to_owned(),
        "?limit=0".to_owned(),
        "?limit=101".to_owned(),
    ] {
        expect_error(
            app.get_auth(&format!("/api/messages{q}"), &token).await,
            400,
            "invalid_request",
        )
        .await;
    }
    expect_error(
        app.get_auth("/api/messages?roomId=%21nope%3Aseed.test", &token)
            .await,
        404,
        "not_found",
    )
    .await;
}

#[tokio::test]
async fn readable_history_answers_no_signing_key_after_key_deletion() {
    let app = TestApp::start_with_mail().await;
    let me = app.sign_up("msg.shred").await;
    let id = uid(&me);
    let token = personal_token(&app, &me).await;
    register_key(&app, &me).await;
    let seed = Seeder::open(&app);
    let room = "!shred:seed.test";
    seed.room(&id, room, None);
    seed.message(&id, room, &msg("@bob:seed.test", 1000, "before deletion"));
    let page = history(&app, &token, "").await;
    assert_eq!(bodies(&page, "text"), ["before deletion"]);

    let resp = app
        .http
        .delete(app.url("/api/keys"))
        .bearer_auth(&me.access_token)
        .header(
            "X-Confirm-Key-Deletion",
            "PERMANENTLY_DELETE_ALL_MY_MESSAGES",
        )
        .send()
        .await
        .unwrap();
    expect_json(resp, 200).await;
    expect_error(
        app.get_auth("/api/messages", &token).await,
        409,
        "NO_SIGNING_KEY",
    )
    .await;
    expect_error(
        app.get_auth(&format!("/api/messages?roomId={}", enc(room)), &token)
            .await,
        409,
        "NO_SIGNING_KEY",
    )
    .await;
    expect_error(
        app.get_auth("/api/messages", &me.access_token).await,
        409,
        "keys_not_registered",
    )
    .await;

    // New keys: readable again; the shredded content stays gone, new content reads.
    let secret = register_key(&app, &me).await;
    seed.message(&id, room, &msg("@bob:seed.test", 2000, "after new keys"));
    let page = history(&app, &token, "").await;
    assert_eq!(bodies(&page, "text"), ["after new keys"]);
    let native = history(&app, &me.access_token, "").await;
    assert_eq!(native["messages"].as_array().unwrap().len(), 1);
    assert_eq!(
        decrypt(&secret, &native["messages"][0])["body"],
        "after new keys"
    );
}

/// Pages are served from memory between writes (see `services::messages::readable`): a
/// change made through the service shows on the very next read, and one written to the
/// database by another process within the documented second.
#[tokio::test]
async fn a_page_read_again_reflects_every_change_at_once() {
    let app = TestApp::start_with_mail().await;
    let me = app.sign_up("msg.fresh").await;
    let id = uid(&me);
    let token = personal_token(&app, &me).await;
    let seed = Seeder::open(&app);
    let room = "!fresh:seed.test";
    seed.room(&id, room, None);
    let (first, _) = seed.message(&id, room, &msg("@bob:seed.test", 1000, "first"));
    seed.message(&id, room, &msg("@bob:seed.test", 2000, "second"));
    let query = format!("?roomId={}&limit=10", enc(room));
    let page = history(&app, &token, &query).await;
    assert_eq!(bodies(&page, "text"), ["second", "first"]);
    assert_eq!(
        history(&app, &token, &query).await,
        page,
        "the same page again"
    );

    // Deleting one message through the API: gone from the next read.
    let resp = app
        .send(
            Method::DELETE,
            &format!("/api/messages/{first}"),
            Some(&me.access_token),
            None,
        )
        .await;
    expect_json(resp, 200).await;
    assert_eq!(
        bodies(&history(&app, &token, &query).await, "text"),
        ["second"]
    );

    // A row written by another process (here: this test) shows within a second.
    seed.message(&id, room, &msg("@bob:seed.test", 3000, "third"));
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let texts = bodies(&history(&app, &token, &query).await, "text");
        if texts == ["third", "second"] {
            break;
        }
        assert!(Instant::now() < deadline, "still {texts:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Deleting by criteria, then revoking the token: both effective on the next request.
    let resp = delete_messages(
        &app,
        &me.access_token,
        &format!("?roomId={}", enc(room)),
        Some(CONFIRM),
    )
    .await;
    expect_json(resp, 200).await;
    assert!(bodies(&history(&app, &token, &query).await, "text").is_empty());
    let tokens = expect_json(
        app.get_auth("/api/developer/tokens", &me.access_token)
            .await,
        200,
    )
    .await;
    let token_id = tokens["tokens"][0]["id"].as_str().unwrap().to_owned();
    let resp = app
        .send(
            Method::DELETE,
            &format!("/api/developer/tokens/{token_id}"),
            Some(&me.access_token),
            None,
        )
        .await;
    assert!(resp.status().is_success(), "{}", resp.status());
    expect_error(
        app.get_auth(&format!("/api/messages{query}"), &token).await,
        401,
        "unauthorized",
    )
    .await;
}

// ---- deletion and statistics -------------------------------------------------

async fn delete_messages(
    app: &TestApp,
    bearer: &str,
    query: &str,
    confirm: Option<&str>,
) -> reqwest::Response {
    let mut req = app
        .http
        .delete(app.url(&format!("/api/messages{query}")))
        .bearer_auth(bearer);
    if let Some(c) = confirm {
        req = req.header("X-Confirm-Delete", c);
    }
    req.send().await.unwrap()
}

#[tokio::test]
async fn deleting_needs_confirmation_and_removes_only_the_callers_rows() {
    let app = TestApp::start_with_mail().await;
    let me = app.sign_up("msg.delete").await;
    let other = app.sign_up("msg.delete.other").await;
    let (id, other_id) = (uid(&me), uid(&other));
    let seed = Seeder::open(&app);
    let (a, b) = ("!del-a:seed.test", "!del-b:seed.test");
    let bob = "@bob:seed.test";
    for user in [&id, &other_id] {
        seed.room(user, a, None);
        seed.room(user, b, None);
        for ts in [1000, 2000, 3000] {
            seed.message(user, a, &msg(bob, ts, "a"));
        }
        seed.message(user, b, &msg(bob, 1500, "b"));
    }
    let jwt = &me.access_token;

    expect_error(
        delete_messages(&app, jwt, "", None).await,
        400,
        "confirmation_required",
    )
    .await;
    expect_error(
        delete_messages(&app, jwt, "", Some("delete_messages")).await,
        400,
        "confirmation_required",
    )
    .await;
    expect_error(
        delete_messages(&app, jwt, "?before=soon", Some(CONFIRM)).await,
        400,
        "invalid_request",
    )
    .await;
    assert_eq!(seed.count(&id), 4);

    // Room a, strictly older than 3000: two rows.
    let resp = delete_messages(
        &app,
        jwt,
        &format!("?roomId={}&before=3000", enc(a)),
        Some(CONFIRM),
    )
    .await;
    let body = expect_json(resp, 200).await;
    assert_eq!(body["deletedCount"], 2);
    assert_eq!(body["criteria"], json!({"roomId": a, "before": 3000}));
    assert!(body["message"].as_str().unwrap().contains('2'));
    assert_eq!(seed.count(&id), 2);
    assert_eq!(seed.count(&other_id), 4, "other users are untouched");

    // RFC 3339 cutoff over all rooms.
    let resp = delete_messages(&app, jwt, "?before=1970-01-01T00:00:02Z", Some(CONFIRM)).await;
    let body = expect_json(resp, 200).await;
    assert_eq!(body["deletedCount"], 1, "{body}");
    assert_eq!(body["criteria"], json!({"roomId": null, "before": 2000}));
    assert_eq!(seed.count(&id), 1);

    // One message by id.
    let (mine, _) = seed.message(&id, a, &msg(bob, 9000, "one"));
    let (theirs, _) = seed.message(&other_id, a, &msg(bob, 9000, "theirs"));
    expect_error(
        app.send(Method::DELETE, "/api/messages/not-a-uuid", Some(jwt), None)
            .await,
        400,
        "invalid_request",
    )
    .await;
    for missing in [uuid::Uuid::new_v4().to_string(), theirs.clone()] {
        expect_error(
            app.send(
                Method::DELETE,
                &format!("/api/messages/{missing}"),
                Some(jwt),
                None,
            )
            .await,
            404,
            "not_found",
        )
        .await;
    }
    let resp = app
        .send(
            Method::DELETE,
            &format!("/api/messages/{}", mine.to_uppercase()),
            Some(jwt),
            None,
        )
        .await;
    let body = expect_json(resp, 200).await;
    assert_eq!(body["deletedId"], mine.as_str());
    assert!(body["message"].is_string());
    expect_error(
        app.send(
            Method::DELETE,
            &format!("/api/messages/{mine}"),
            Some(jwt),
            None,
        )
        .await,
        404,
        "not_found",
    )
    .await;
    assert_eq!(seed.count(&other_id), 5);

    // Everything of the caller.
    let body = expect_json(delete_messages(&app, jwt, "", Some(CONFIRM)).await, 200).await;
    assert_eq!(body["deletedCount"], 1);
    assert_eq!(body["criteria"], json!({"roomId": null, "before": null}));
    assert_eq!(seed.count(&id), 0);
    assert_eq!(seed.count(&other_id), 5);

    // Native only: personal tokens are refused by the allowlist.
    let token = personal_token(&app, &me).await;
    expect_error(
        delete_messages(&app, &token, "", Some(CONFIRM)).await,
        403,
        "forbidden_for_api_token",
    )
    .await;
}

#[tokio::test]
async fn stats_are_aggregates_of_the_callers_messages_and_static_routes_win() {
    let app = TestApp::start_with_mail().await;
    let me = app.sign_up("msg.stats").await;
    let id = uid(&me);
    let jwt = &me.access_token;
    let empty = expect_json(app.get_auth("/api/messages/stats", jwt).await, 200).await;
    assert_eq!(
        empty,
        json!({"stats": {"total_messages": 0, "total_rooms": 0, "avg_importance": 0.0,
            "high_importance_count": 0, "questions_count": 0, "all_categories": []}})
    );

    let seed = Seeder::open(&app);
    let rooms = [
        "!stats-a:seed.test",
        "!stats-b:seed.test",
        "!stats-c:seed.test",
    ];
    let categories = ["work", "general", "question", "social"];
    let mut sent = Vec::new();
    for i in 0..13usize {
        let room = rooms[i % 2];
        let mut m = msg("@bob:seed.test", 1000 + i as i64, &format!("m{i}"));
        m.importance = (i % 11) as f64 / 10.0;
        m.category = categories[i % 3].to_owned();
        m.question = i % 4 == 0;
        seed.room(&id, room, None);
        seed.message(&id, room, &m);
        sent.push((room, m));
    }
    seed.room(&id, rooms[2], None); // a room without messages does not count
    let other = app.sign_up("msg.stats.other").await;
    seed.room(&uid(&other), rooms[2], None);
    let mut noise = msg("@bob:seed.test", 1, "other user's");
    noise.category = "social".to_owned();
    noise.importance = 1.0;
    seed.message(&uid(&other), rooms[2], &noise);

    let stats = expect_json(app.get_auth("/api/messages/stats", jwt).await, 200).await;
    let stats = &stats["stats"];
    let total = sent.len() as f64;
    let avg = sent.iter().map(|(_, m)| m.importance).sum::<f64>() / total;
    let mut cats: Vec<&str> = sent.iter().map(|(_, m)| m.category.as_str()).collect();
    cats.sort_unstable();
    cats.dedup();
    let distinct_rooms = sent
        .iter()
        .map(|(r, _)| *r)
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    assert_eq!(stats["total_messages"], sent.len());
    assert_eq!(stats["total_rooms"], distinct_rooms);
    assert!(
        (stats["avg_importance"].as_f64().unwrap() - avg).abs() < 1e-9,
        "{stats}"
    );
    assert_eq!(
        stats["high_importance_count"],
        sent.iter().filter(|(_, m)| m.importance >= 0.7).count()
    );
    assert_eq!(
        stats["questions_count"],
        sent.iter().filter(|(_, m)| m.question).count()
    );
    assert_eq!(stats["all_categories"], json!(cats));

    // Static segments win over /api/messages/{messageId}; other methods on them are
    // refused cleanly, never 500.
    for (method, path) in [
        (Method::DELETE, "/api/messages/stats"),
        (Method::POST, "/api/messages/stats"),
        (Method::GET, "/api/messages/send-multi"),
        (Method::DELETE, "/api/messages/send-multi"),
    ] {
        let resp = app.send(method.clone(), path, Some(jwt), None).await;
        let status = resp.status().as_u16();
        let body = resp.text().await.unwrap();
        assert_eq!(status, 405, "{method} {path}: {body}");
    }
    let resp = app
        .post_json(
            "/api/messages/send-multi",
            Some(jwt),
            json!({"roomIds": [], "body": "x"}),
        )
        .await;
    let err = expect_error(resp, 400, "invalid_request").await;
    assert!(
        err["message"].as_str().unwrap().starts_with("roomIds"),
        "{err}"
    );

    let token = personal_token(&app, &me).await;
    expect_error(
        app.get_auth("/api/messages/stats", &token).await,
        403,
        "forbidden_for_api_token",
    )
    .await;
}

// ---- sending ------------------------------------------------------------------

async fn send_text(app: &TestApp, bearer: &str, room: &str, body: Value) -> reqwest::Response {
    app.post_json(
        &format!("/api/rooms/{}/messages", enc(room)),
        Some(bearer),
        body,
    )
    .await
}

#[tokio::test]
async fn sending_is_idempotent_per_txn_id_and_lands_once_on_synapse() {
    let app = TestApp::start_with_mail().await;
    let me = app.sign_up("msg.send").await;
    let token = personal_token(&app, &me).await;
    let matrix = me_on_matrix(&me);
    let room = matrix.create_room(Some("send test"), &[], false).await;
    let other_room = matrix.create_room(Some("send test 2"), &[], false).await;
    let seed = Seeder::open(&app);
    seed.room(&uid(&me), &room, None);
    seed.room(&uid(&me), &other_room, None);

    let text = format!("approved text {}", uuid::Uuid::new_v4());
    let txn = format!("txn-{}", uuid::Uuid::new_v4().simple());
    let first = expect_json(
        send_text(&app, &token, &room, json!({"content": text, "txnId": txn})).await,
        200,
    )
    .await;
    let event_id = first["eventId"].as_str().unwrap().to_owned();
    assert!(event_id.starts_with('$'), "{first}");
    assert_eq!(first["roomId"], room.as_str());
    assert_eq!(first["txnId"], txn.as_str());
    assert_eq!(first["duplicate"], false);

    // The same txnId again (even with other text, even as the native session): nothing new.
    for (bearer, content) in [(&token, text.as_str()), (&me.access_token, "changed")] {
        let again = expect_json(
            send_text(
                &app,
                bearer,
                &room,
                json!({"content": content, "txnId": txn}),
            )
            .await,
            200,
        )
        .await;
        assert_eq!(again["eventId"], event_id.as_str());
        assert_eq!(again["duplicate"], true);
    }
    assert_eq!(synapse_bodies(matrix_access(&me), &room, &text).await, 1);
    assert_eq!(
        synapse_bodies(matrix_access(&me), &room, "changed").await,
        0
    );

    // The same txnId for another room is a conflict; a new txnId sends again.
    expect_error(
        send_text(
            &app,
            &token,
            &other_room,
            json!({"content": text, "txnId": txn}),
        )
        .await,
        409,
        "txn_id_conflict",
    )
    .await;
    let native = expect_json(
        send_text(
            &app,
            &me.access_token,
            &room,
            json!({"content": text, "txnId": "native-1"}),
        )
        .await,
        200,
    )
    .await;
    assert_ne!(native["eventId"], event_id.as_str());
    assert_eq!(synapse_bodies(matrix_access(&me), &room, &text).await, 2);

    // Concurrent repeats of a new txnId still send once.
    let text2 = format!("concurrent {}", uuid::Uuid::new_v4());
    let body = json!({"content": text2, "txnId": "race-1"});
    let (r1, r2, r3) = tokio::join!(
        send_text(&app, &token, &room, body.clone()),
        send_text(&app, &token, &room, body.clone()),
        send_text(&app, &token, &room, body.clone()),
    );
    let mut ids = Vec::new();
    for r in [r1, r2, r3] {
        ids.push(
            expect_json(r, 200).await["eventId"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    ids.dedup();
    assert_eq!(ids.len(), 1, "{ids:?}");
    assert_eq!(synapse_bodies(matrix_access(&me), &room, &text2).await, 1);
}

fn matrix_access(s: &Session) -> &str {
    s.matrix_access_token.as_deref().unwrap()
}

#[tokio::test]
async fn sending_refuses_bad_input_unknown_rooms_and_unresolved_recipients() {
    let app = TestApp::start_with_mail().await;
    let me = app.sign_up("msg.refuse").await;
    let token = personal_token(&app, &me).await;
    let seed = Seeder::open(&app);
    let id = uid(&me);
    let direct = "!direct-unresolved:seed.test";
    seed.room_with(&id, direct, Some("whatsapp"), true, None);
    let room = "!plain:seed.test";
    seed.room(&id, room, None);

    let err = expect_error(
        send_text(
            &app,
            &token,
            direct,
            json!({"content": "hi", "txnId": "t1"}),
        )
        .await,
        409,
        "recipient_unresolved",
    )
    .await;
    assert!(
        err["message"].as_str().unwrap().contains("native app"),
        "{err}"
    );
    expect_error(
        send_text(
            &app,
            &token,
            "!unknown:seed.test",
            json!({"content": "hi", "txnId": "t2"}),
        )
        .await,
        404,
        "not_found",
    )
    .await;
    let too_long = "x".repeat(65_537);
    let long_txn = "t".repeat(256);
    for body in [
        json!({"content": "", "txnId": "t3"}),
        json!({"content": "   ", "txnId": "t3"}),
        json!({"content": too_long, "txnId": "t3"}),
        json!({"content": "hi", "txnId": ""}),
        json!({"content": "hi", "txnId": "has space"}),
        json!({"content": "hi", "txnId": "a/b"}),
        json!({"content": "hi", "txnId": long_txn}),
        json!({"content": "hi"}),
        json!({"txnId": "t3"}),
        json!({"content": {"body": "hi"}, "txnId": "t3"}),
        json!([1, 2]),
    ] {
        let resp = send_text(&app, &token, room, body.clone()).await;
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        assert_eq!(status, 400, "{body}: {text}");
        let err: Value = serde_json::from_str(&text).unwrap();
        assert!(
            err["error"].is_string() && err["message"].is_string(),
            "{text}"
        );
    }
    let resp = app
        .http
        .post(app.url(&format!("/api/rooms/{}/messages", enc(room))))
        .bearer_auth(&token)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    // Nothing was recorded for refused sends.
    let n: i64 = seed
        .conn
        .query_row(
            "SELECT COUNT(*) FROM sent_transactions WHERE user_id = ?1",
            [&id],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(n, 0);
}

#[tokio::test]
async fn homeserver_failures_are_502_and_503_and_a_retry_with_the_txn_id_is_safe() {
    let mut app = TestApp::start_with_mail().await;
    let me = app.sign_up("msg.hsfail").await;
    let token = personal_token(&app, &me).await;
    let seed = Seeder::open(&app);
    let id = uid(&me);
    // A room the user "has" that does not exist on the homeserver.
    let ghost = format!(
        "!ghost{}:{}",
        uuid::Uuid::new_v4().simple(),
        synapse().server_name
    );
    seed.room(&id, &ghost, None);
    let err = expect_error(
        send_text(
            &app,
            &token,
            &ghost,
            json!({"content": "hi", "txnId": "g1"}),
        )
        .await,
        502,
        "homeserver_error",
    )
    .await;
    assert!(err["message"].as_str().unwrap().contains("M_"), "{err}");

    // A real room, then the homeserver becomes unreachable.
    let matrix = me_on_matrix(&me);
    let room = matrix.create_room(None, &[], false).await;
    seed.room(&id, &room, None);
    drop(seed);
    app.signal("TERM");
    let config = std::fs::read_to_string(&app.config_path).unwrap();
    let dead = format!("http://127.0.0.1:{}", free_port());
    std::fs::write(&app.config_path, config.replace(&synapse().base_url, &dead)).unwrap();
    app.spawn().await;
    let text = format!("retry me {}", uuid::Uuid::new_v4());
    let body = json!({"content": text, "txnId": "retry-1"});
    let err = expect_error(
        send_text(&app, &token, &room, body.clone()).await,
        503,
        "homeserver_unavailable",
    )
    .await;
    assert!(!err["message"].as_str().unwrap().is_empty());

    // Back online: the retry with the same txnId sends, once.
    app.signal("TERM");
    std::fs::write(&app.config_path, config).unwrap();
    app.spawn().await;
    let sent = expect_json(send_text(&app, &token, &room, body.clone()).await, 200).await;
    let again = expect_json(send_text(&app, &token, &room, body).await, 200).await;
    assert_eq!(sent["eventId"], again["eventId"]);
    assert_eq!(again["duplicate"], true);
    assert_eq!(synapse_bodies(matrix_access(&me), &room, &text).await, 1);
}

#[tokio::test]
async fn multi_send_answers_200_207_or_500_with_the_same_shape() {
    let app = TestApp::start_with_mail().await;
    let me = app.sign_up("msg.multi").await;
    let jwt = &me.access_token;
    let matrix = me_on_matrix(&me);
    let r1 = matrix.create_room(Some("multi 1"), &[], false).await;
    let r2 = matrix.create_room(Some("multi 2"), &[], false).await;
    let seed = Seeder::open(&app);
    let id = uid(&me);
    seed.room(&id, &r1, None);
    seed.room(&id, &r2, None);
    let ghost = format!(
        "!ghost{}:{}",
        uuid::Uuid::new_v4().simple(),
        synapse().server_name
    );
    seed.room(&id, &ghost, None);
    let unknown = "!not-mine:seed.test";

    let multi = |room_ids: Vec<&str>, body: &str, msgtype: Option<&str>| {
        let mut b = json!({"roomIds": room_ids, "body": body});
        if let Some(t) = msgtype {
            b["msgtype"] = json!(t);
        }
        app.post_json("/api/messages/send-multi", Some(jwt), b)
    };
    let check_shape = |body: &Value, sent: u64, failed: u64| {
        assert_eq!(body["sent"], sent, "{body}");
        assert_eq!(body["failed"], failed, "{body}");
        assert_eq!(body["total"], sent + failed, "{body}");
        let results = body["results"].as_array().unwrap();
        assert_eq!(results.len() as u64, sent + failed);
        for r in results {
            if r["success"] == true {
                assert!(r["eventId"].as_str().unwrap().starts_with('$'), "{r}");
                assert!(r["error"].is_null());
            } else {
                assert!(r["eventId"].is_null());
                assert!(r["error"].is_string() && r["message"].is_string(), "{r}");
            }
        }
    };

    let text = format!("to all {}", uuid::Uuid::new_v4());
    let all = expect_json(multi(vec![&r1, &r2, &r1], &text, None).await, 200).await;
    check_shape(&all, 2, 0);
    assert_eq!(all["results"][0]["roomId"], r1.as_str());
    assert_eq!(all["results"][1]["roomId"], r2.as_str());
    for r in [&r1, &r2] {
        assert_eq!(synapse_bodies(matrix_access(&me), r, &text).await, 1);
    }

    let text = format!("partial {}", uuid::Uuid::new_v4());
    let partial = expect_json(
        multi(vec![unknown, &r1, &ghost], &text, Some("m.notice")).await,
        207,
    )
    .await;
    check_shape(&partial, 1, 2);
    assert_eq!(partial["results"][0]["error"], "not_found");
    assert_eq!(partial["results"][1]["success"], true);
    assert_eq!(partial["results"][2]["error"], "homeserver_error");
    assert_eq!(synapse_bodies(matrix_access(&me), &r1, &text).await, 1);

    let failed = expect_json(multi(vec![unknown, &ghost], "nobody", None).await, 500).await;
    check_shape(&failed, 0, 2);

    let hundred_one: Vec<String> = (0..101).map(|i| format!("!r{i}:seed.test")).collect();
    for body in [
        json!({"roomIds": [], "body": "x"}),
        json!({"roomIds": hundred_one, "body": "x"}),
        json!({"roomIds": [r1], "body": ""}),
        json!({"roomIds": [r1], "body": "x", "msgtype": "m.image"}),
        json!({"roomIds": [""], "body": "x"}),
        json!({"roomIds": [r1]}),
        json!({"body": "x"}),
        json!({"roomIds": "not an array", "body": "x"}),
    ] {
        let resp = app
            .post_json("/api/messages/send-multi", Some(jwt), body.clone())
            .await;
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        assert_eq!(status, 400, "{body}: {text}");
    }
    let token = personal_token(&app, &me).await;
    expect_error(
        app.post_json(
            "/api/messages/send-multi",
            Some(&token),
            json!({"roomIds": [r1], "body": "x"}),
        )
        .await,
        403,
        "forbidden_for_api_token",
    )
    .await;
}

// ---- through the sync worker --------------------------------------------------

/// Polls the readable history of `room` until `want` messages are there (the sync worker
/// ingests them); 404 while the room itself is not ingested yet.
async fn wait_for_history(app: &TestApp, token: &str, room: &str, want: usize) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let resp = app
            .get_auth(
                &format!("/api/messages?roomId={}&limit=100", enc(room)),
                token,
            )
            .await;
        let status = resp.status().as_u16();
        let body: Value = resp.json().await.unwrap_or_default();
        if status == 200 && body["messages"].as_array().map_or(0, Vec::len) >= want {
            return body;
        }
        assert!(
            Instant::now() < deadline,
            "history of {room} did not reach {want} messages (is the sync worker running?): {status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn a_synced_conversation_reads_in_both_views_and_counts_in_the_stats() {
    let app = TestApp::start_with_mail().await;
    let me = app.sign_up("msg.sync").await;
    let token = personal_token(&app, &me).await;
    let secret = register_key(&app, &me).await;
    let bob = mx::register("msgbob").await;
    let matrix = me_on_matrix(&me);
    let room = matrix
        .create_room(Some("sync test"), &[&bob.user_id], false)
        .await;
    bob.join(&room).await;
    bob.send_text(&room, "hello from bob").await;
    bob.send_text(&room, "are you there?").await;
    wait_for_history(&app, &token, &room, 2).await;

    let reply = "yes, here";
    let sent = expect_json(
        send_text(
            &app,
            &token,
            &room,
            json!({"content": reply, "txnId": "reply-1"}),
        )
        .await,
        200,
    )
    .await;
    let page = wait_for_history(&app, &token, &room, 3).await;
    let texts = bodies(&page, "text");
    assert_eq!(texts, [reply, "are you there?", "hello from bob"], "{page}");
    let m = &page["messages"];
    assert_eq!(m[0]["eventId"], sent["eventId"]);
    assert_eq!(m[0]["direction"], "outgoing");
    assert_eq!(m[0]["isMine"], true);
    assert_eq!(m[0]["senderId"], matrix_id(&me).as_str());
    for i in [1, 2] {
        assert_eq!(m[i]["direction"], "incoming");
        assert_eq!(m[i]["isMine"], false);
        assert_eq!(m[i]["senderId"], bob.user_id.as_str());
        assert_eq!(m[i]["content"]["msgtype"], "m.text");
    }
    let ts: Vec<i64> = m
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["timestamp"].as_i64().unwrap())
        .collect();
    let now = chrono::Utc::now().timestamp_millis();
    assert!(
        ts.iter().all(|t| (now - 120_000..=now + 5_000).contains(t)),
        "{ts:?}"
    );

    // The native view: same events, content sealed to the registered key.
    let native = history(&app, &me.access_token, &format!("?roomId={}", enc(&room))).await;
    let items = native["messages"].as_array().unwrap();
    assert_eq!(items.len(), 3);
    for (item, text) in items.iter().zip(&texts) {
        let plain = decrypt(&secret, item);
        assert_eq!(plain["body"], text.as_str());
        assert_eq!(plain["content"]["body"], text.as_str());
        uuid::Uuid::parse_str(item["id"].as_str().unwrap()).expect("id is a UUID");
    }
    assert_eq!(items[0]["isMine"], true);
    assert_eq!(items[1]["isMine"], false);

    // Statistics over what was stored: the three messages of one room.
    let stats = expect_json(
        app.get_auth("/api/messages/stats", &me.access_token).await,
        200,
    )
    .await;
    let s = &stats["stats"];
    assert_eq!(s["total_messages"], 3);
    assert_eq!(s["total_rooms"], 1);
    let seed = Seeder::open(&app);
    let (avg, high, questions): (f64, i64, i64) = seed
        .conn
        .query_row(
            "SELECT AVG(importance), SUM(importance >= 0.7), SUM(is_question) FROM messages WHERE user_id = ?1",
            [uid(&me)],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert!((s["avg_importance"].as_f64().unwrap() - avg).abs() < 1e-9);
    assert_eq!(s["high_importance_count"], high);
    assert_eq!(s["questions_count"], questions);
    assert!(s["all_categories"]
        .as_array()
        .is_some_and(|c| !c.is_empty()));
}
