//! `/api/messages*` and `POST /api/rooms/{roomId}/messages` against the real binary and the
//! test Synapse.
//!
//! History, deletion and statistics tests seed rooms and messages straight into the
//! running server's database (sealed with the server's master key, exactly as the sync
//! worker stores them), so they do not depend on sync timing. Sending tests use rooms
//! created on Synapse with the user's own Matrix token, and check Synapse's own history.
//! The last test goes through the sync worker: a second Matrix user writes, and both views
//! of the history show it.

use std::time::Duration;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde_json::{json, Value};
use switchboard::crypto::{open_envelope, Envelope, MasterKey};
use switchboard::services::conversations::{seal_message, MessageContent};
use switchboard::store::messages::{insert_if_new, MessageRow};
use switchboard::store::rooms::{upsert as upsert_room, RoomRow};
use x25519_dalek::{PublicKey, StaticSecret};

use crate::common::matrix::MatrixUser;
use crate::common::*;

mod backfill;
mod backfill_starts;
mod compressed;
mod deletion_and_stats;
mod history;
mod sealed_pages;
mod sending;
mod sync_worker;

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
    switchboard::clients::matrix::encode(segment)
}

/// Registers a fresh X25519 key for the user; returns its secret.
pub(crate) async fn register_key(app: &TestApp, s: &Session) -> StaticSecret {
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
pub(crate) fn decrypt(secret: &StaticSecret, message: &Value) -> Value {
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
    app.api(bearer)
        .messages()
        .page(query)
        .await
        .expect("history page")
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
            edited_at: None,
            sender_enc: None,
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
