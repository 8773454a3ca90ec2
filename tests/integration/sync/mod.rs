//! The sync worker against the real Synapse and the `GET /api/sync` event stream, and the
//! helpers other areas use to read that stream (`open_sse`, `is_message_created`).

mod events;
mod streams;
mod worker;

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use rusqlite::{Connection, OpenFlags, OptionalExtension};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::common::matrix::{self, MatrixUser};
use crate::common::*;

pub(crate) const WAIT: Duration = Duration::from_secs(20);

/// One event read from the stream.
#[derive(Debug, Clone)]
pub(crate) struct SseEvent {
    pub id: Option<String>,
    pub event: String,
    pub data: Value,
}

/// An open `GET /api/sync` stream, parsed in a background task.
pub(crate) struct Sse {
    rx: mpsc::UnboundedReceiver<SseEvent>,
}

pub(crate) async fn open_sse(app: &TestApp, token: &str, last_event_id: Option<&str>) -> Sse {
    // No overall timeout: the stream is endless.
    let client = reqwest::Client::new();
    let mut req = client.get(app.url("/api/sync")).bearer_auth(token);
    if let Some(id) = last_event_id {
        req = req.header("Last-Event-ID", id);
    }
    let resp = req.send().await.expect("GET /api/sync");
    assert_eq!(resp.status(), 200, "GET /api/sync: {:?}", resp.text().await);
    let content_type = resp.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(
        content_type.starts_with("text/event-stream"),
        "{content_type}"
    );
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut body = resp.bytes_stream();
        let mut buf = String::new();
        while let Some(Ok(chunk)) = body.next().await {
            buf.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buf.find("\n\n") {
                let block: String = buf.drain(..end + 2).collect();
                if let Some(event) = parse_block(&block) {
                    if tx.send(event).is_err() {
                        return;
                    }
                }
            }
        }
    });
    Sse { rx }
}

fn parse_block(block: &str) -> Option<SseEvent> {
    let (mut id, mut event, mut data) = (None, "message".to_owned(), None::<String>);
    for line in block.lines() {
        if let Some(v) = line.strip_prefix("id: ") {
            id = Some(v.to_owned());
        } else if let Some(v) = line.strip_prefix("event: ") {
            event = v.to_owned();
        } else if let Some(v) = line.strip_prefix("data: ") {
            data = Some(data.map_or(v.to_owned(), |d| format!("{d}\n{v}")));
        }
    }
    let data = serde_json::from_str(&data?).expect("data is JSON");
    Some(SseEvent { id, event, data })
}

impl Sse {
    /// The next event, or `None` on timeout or when the stream ended.
    pub async fn next(&mut self, timeout: Duration) -> Option<SseEvent> {
        tokio::time::timeout(timeout, self.rx.recv())
            .await
            .ok()
            .flatten()
    }

    /// Skips events until one matches.
    pub async fn wait_for(&mut self, what: &str, pred: impl Fn(&SseEvent) -> bool) -> SseEvent {
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next(left).await {
                Some(e) if pred(&e) => return e,
                Some(_) => continue,
                None => panic!("no {what} on the event stream within {WAIT:?}"),
            }
        }
    }

    /// Whether the stream ends within `timeout`.
    pub async fn ends_within(&mut self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            match tokio::time::timeout_at(deadline.into(), self.rx.recv()).await {
                Ok(Some(_)) => continue,
                Ok(None) => return true,
                Err(_) => return false,
            }
        }
    }
}

pub(crate) fn is_message_created(e: &SseEvent, event_id: &str) -> bool {
    e.event == "message.created" && e.data["eventId"] == event_id
}

/// A switchboard user and a second Matrix user ("Bob") who invited it to a room it
/// has joined (Bob is no bridge, so the user accepts the invitation through the API).
struct Convo {
    app: TestApp,
    session: Session,
    user_id: String,
    me: String,
    bob: MatrixUser,
    room: String,
}

async fn convo(name: Option<&str>, is_direct: bool) -> Convo {
    let app = TestApp::start_with_mail().await;
    let session = app.sign_up("sync").await;
    let me = session.user["matrixUserId"]
        .as_str()
        .expect("matrixUserId")
        .to_owned();
    let user_id = session.user["id"].as_str().expect("id").to_owned();
    let bob = matrix::register("bob").await;
    bob.set_display_name("Bob Example").await;
    let room = bob.create_room(name, &[&me], is_direct).await;
    accept_invite(&app, &session.access_token, &room).await;
    bob.wait_for_member(&room, &me, WAIT).await;
    Convo {
        app,
        session,
        user_id,
        me,
        bob,
        room,
    }
}

fn db(app: &TestApp) -> Connection {
    let conn = Connection::open_with_flags(
        app.data_dir().join("switchboard.db"),
        OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .expect("open the app's database");
    conn.busy_timeout(Duration::from_secs(5)).unwrap();
    conn
}

#[derive(Debug, Clone)]
struct StoredMessage {
    id: String,
    event_id: String,
    sender: String,
    is_mine: bool,
    edited: bool,
    redacted: bool,
}

fn stored_messages(app: &TestApp, user_id: &str, room: &str) -> Vec<StoredMessage> {
    let conn = db(app);
    let mut stmt = conn
        .prepare(
            "SELECT id, event_id, sender_id, is_mine, edited, redacted FROM messages \
             WHERE user_id = ?1 AND room_id = ?2 ORDER BY ts, event_id",
        )
        .unwrap();
    stmt.query_map([user_id, room], |r| {
        Ok(StoredMessage {
            id: r.get(0)?,
            event_id: r.get(1)?,
            sender: r.get(2)?,
            is_mine: r.get(3)?,
            edited: r.get(4)?,
            redacted: r.get(5)?,
        })
    })
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap()
}

/// Polls the database until `done` holds for the room's messages.
async fn wait_for_messages(
    app: &TestApp,
    user_id: &str,
    room: &str,
    what: &str,
    done: impl Fn(&[StoredMessage]) -> bool,
) -> Vec<StoredMessage> {
    let deadline = Instant::now() + WAIT;
    loop {
        let rows = stored_messages(app, user_id, room);
        if done(&rows) {
            return rows;
        }
        assert!(
            Instant::now() < deadline,
            "{what} not stored within {WAIT:?}; rows: {rows:#?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn has_all(rows: &[StoredMessage], event_ids: &[String]) -> bool {
    event_ids
        .iter()
        .all(|e| rows.iter().any(|r| &r.event_id == e))
}

/// Opens sealed values with the app's master key, as the app itself would.
struct Opener {
    dek: switchboard::crypto::DataKey,
}

impl Opener {
    fn new(app: &TestApp, user_id: &str) -> Self {
        let master = switchboard::crypto::MasterKey::load(&app.data_dir().join("master.key"))
            .expect("master key");
        let user = switchboard::store::users::find(&db(app), user_id)
            .unwrap()
            .expect("user row");
        let dek = switchboard::services::users::data_key(&master, &user).expect("data key");
        Self { dek }
    }

    fn body(&self, app: &TestApp, message_id: &str) -> String {
        let sealed: Vec<u8> = db(app)
            .query_row(
                "SELECT content_enc FROM messages WHERE id = ?1",
                [message_id],
                |r| r.get(0),
            )
            .unwrap();
        switchboard::services::conversations::open_message(&self.dek, message_id, &sealed)
            .expect("open message")
            .body
    }

    fn room_name(&self, app: &TestApp, user_id: &str, room: &str) -> Option<String> {
        let sealed: Option<Vec<u8>> = db(app)
            .query_row(
                "SELECT name_enc FROM rooms WHERE user_id = ?1 AND room_id = ?2",
                [user_id, room],
                |r| r.get(0),
            )
            .optional()
            .unwrap()
            .flatten();
        switchboard::services::conversations::open_room_field(
            &self.dek,
            user_id,
            room,
            switchboard::services::conversations::RoomField::Name,
            sealed.as_deref(),
        )
    }
}
