//! The sync worker against the real Synapse (ingest, restart safety, edits and
//! redactions) and the `GET /api/sync` event stream.

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

/// The worker's long poll (30 s) returns as soon as the homeserver has the message, so the
/// event arrives well before the poll would have ended by itself. How fast it arrives is a
/// figure for the benchmarks, not an assertion here: a loaded CI machine may take seconds.
#[tokio::test]
async fn a_message_from_another_user_reaches_the_event_stream_before_the_long_poll_ends() {
    let c = convo(Some("Sync latency"), false).await;
    let mut sse = open_sse(&c.app, &c.session.access_token, None).await;
    // Let the worker finish the join and go back to its long-poll: one message first.
    let warm_up = c.bob.send_text(&c.room, "warming up").await;
    sse.wait_for("message.created", |e| is_message_created(e, &warm_up))
        .await;

    let started = Instant::now();
    let event_id = c.bob.send_text(&c.room, "is anyone there?").await;
    let send_took = started.elapsed();
    let e = sse
        .wait_for("message.created", |e| is_message_created(e, &event_id))
        .await;
    let latency = started.elapsed();
    eprintln!("message.created arrived {latency:?} after sending began (the send itself took {send_took:?})");
    assert!(
        latency < Duration::from_secs(15),
        "took {latency:?}: the long poll did not return on the message"
    );
    assert_eq!(e.data["type"], "message.created");
    assert_eq!(e.data["roomId"], c.room.as_str());
    assert!(e.data["messageId"].as_str().is_some_and(|m| m.len() == 36));
    assert!(e.id.as_deref().is_some_and(|id| id.parse::<u64>().is_ok()));
    let updated = sse
        .wait_for("room.updated", |e| {
            e.event == "room.updated" && e.data["roomId"] == c.room.as_str()
        })
        .await;
    assert_eq!(updated.data["type"], "room.updated");
}

#[tokio::test]
async fn the_worker_stores_accepted_rooms_and_messages_once() {
    let c = convo(None, true).await;
    let mine = MatrixUser::from_token(&c.me, c.session.matrix_access_token.as_deref().unwrap());
    let mut sent = vec![
        c.bob.send_text(&c.room, "hello from bob").await,
        mine.send_text(&c.room, "hello from me").await,
        c.bob.send_text(&c.room, "urgent: call me").await,
    ];
    let rows = wait_for_messages(&c.app, &c.user_id, &c.room, "messages", |r| {
        has_all(r, &sent)
    })
    .await;
    assert_eq!(rows.len(), 3, "{rows:#?}");
    for row in &rows {
        assert_eq!(row.is_mine, row.sender == c.me, "{row:?}");
        assert!(!row.edited && !row.redacted);
    }
    let conn = db(&c.app);
    let (membership, is_direct, recipient, members): (String, bool, Option<String>, i64) = conn
        .query_row(
            "SELECT membership, is_direct, recipient_id, member_count FROM rooms \
             WHERE user_id = ?1 AND room_id = ?2",
            [&c.user_id, &c.room],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .unwrap();
    assert_eq!(membership, "join");
    assert!(is_direct, "a direct invite makes a direct room");
    assert_eq!(recipient.as_deref(), Some(c.bob.user_id.as_str()));
    assert_eq!(members, 2);
    let (category, importance): (String, f64) = conn
        .query_row(
            "SELECT category, importance FROM messages WHERE event_id = ?1",
            [&sent[2]],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(category, "urgent");
    assert!(importance > 0.5);
    let opener = Opener::new(&c.app, &c.user_id);
    assert_eq!(
        opener.room_name(&c.app, &c.user_id, &c.room).as_deref(),
        Some("Bob Example")
    );
    let bob_row = rows.iter().find(|r| r.event_id == sent[0]).unwrap();
    assert_eq!(opener.body(&c.app, &bob_row.id), "hello from bob");

    // A second room with a name; nothing is stored twice.
    let named = c.bob.create_room(Some("Team chat"), &[&c.me], false).await;
    accept_invite(&c.app, &c.session.access_token, &named).await;
    c.bob.wait_for_member(&named, &c.me, WAIT).await;
    sent.push(c.bob.send_text(&named, "welcome").await);
    wait_for_messages(&c.app, &c.user_id, &named, "message", |r| r.len() == 1).await;
    assert_eq!(
        opener.room_name(&c.app, &c.user_id, &named).as_deref(),
        Some("Team chat")
    );
    let total: i64 = db(&c.app)
        .query_row(
            "SELECT COUNT(*) FROM messages WHERE user_id = ?1",
            [&c.user_id],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(total, 4);
}

#[tokio::test]
async fn a_kill_9_restart_resumes_without_losing_or_duplicating_messages() {
    let mut c = convo(Some("Crash test"), false).await;
    let mut sent = Vec::new();
    for i in 0..3 {
        sent.push(c.bob.send_text(&c.room, &format!("before {i}")).await);
    }
    wait_for_messages(&c.app, &c.user_id, &c.room, "first messages", |r| {
        has_all(r, &sent)
    })
    .await;

    c.app.kill9();
    for i in 0..3 {
        sent.push(c.bob.send_text(&c.room, &format!("while down {i}")).await);
    }
    c.app.spawn().await;
    for i in 0..2 {
        sent.push(c.bob.send_text(&c.room, &format!("after {i}")).await);
    }
    let rows = wait_for_messages(&c.app, &c.user_id, &c.room, "all messages", |r| {
        has_all(r, &sent)
    })
    .await;
    // Positive marker: one more message is stored, so further polls have happened; then
    // nothing was added twice.
    let marker = c.bob.send_text(&c.room, "marker").await;
    let rows_after = wait_for_messages(&c.app, &c.user_id, &c.room, "the marker", |r| {
        has_all(r, std::slice::from_ref(&marker))
    })
    .await;
    assert_eq!(rows.len() + 1, rows_after.len());
    for event_id in &sent {
        let n = rows_after
            .iter()
            .filter(|r| &r.event_id == event_id)
            .count();
        assert_eq!(n, 1, "{event_id} stored {n} times");
    }
    assert_eq!(
        rows_after.len(),
        sent.len() + 1,
        "the sent messages and the marker"
    );
    let since: Option<String> = db(&c.app)
        .query_row(
            "SELECT since FROM sync_state WHERE user_id = ?1",
            [&c.user_id],
            |r| r.get(0),
        )
        .unwrap();
    assert!(since.is_some());
}

#[tokio::test]
async fn an_edit_rewrites_the_message_and_a_redaction_empties_it() {
    let c = convo(Some("Edits"), false).await;
    let typo = c.bob.send_text(&c.room, "helo wrld").await;
    let secret = c.bob.send_text(&c.room, "my password is hunter2").await;
    wait_for_messages(&c.app, &c.user_id, &c.room, "messages", |r| {
        has_all(r, &[typo.clone(), secret.clone()])
    })
    .await;

    c.bob.edit(&c.room, &typo, "hello world").await;
    c.bob.redact(&c.room, &secret).await;
    let rows = wait_for_messages(&c.app, &c.user_id, &c.room, "edit and redaction", |r| {
        r.iter().any(|m| m.event_id == typo && m.edited)
            && r.iter().any(|m| m.event_id == secret && m.redacted)
    })
    .await;
    assert_eq!(rows.len(), 2, "an edit adds no row: {rows:#?}");
    let opener = Opener::new(&c.app, &c.user_id);
    let edited = rows.iter().find(|m| m.event_id == typo).unwrap();
    assert_eq!(opener.body(&c.app, &edited.id), "hello world");
    let redacted = rows.iter().find(|m| m.event_id == secret).unwrap();
    assert_eq!(opener.body(&c.app, &redacted.id), "");
}

#[tokio::test]
async fn reconnecting_with_last_event_id_replays_missed_events_or_asks_for_a_rescan() {
    let c = convo(Some("Replay"), false).await;
    let token = c.session.access_token.clone();
    let mut sse = open_sse(&c.app, &token, None).await;
    let first = c.bob.send_text(&c.room, "one").await;
    let seen = sse
        .wait_for("first message", |e| is_message_created(e, &first))
        .await;
    drop(sse);

    let missed = vec![
        c.bob.send_text(&c.room, "two").await,
        c.bob.send_text(&c.room, "three").await,
    ];
    wait_for_messages(&c.app, &c.user_id, &c.room, "missed messages", |r| {
        has_all(r, &missed)
    })
    .await;
    let mut resumed = open_sse(&c.app, &token, seen.id.as_deref()).await;
    let mut replayed = Vec::new();
    while replayed.len() < missed.len() {
        let e = resumed
            .next(Duration::from_secs(5))
            .await
            .expect("replayed events");
        assert_ne!(e.event, "resync");
        assert!(
            !is_message_created(&e, &first),
            "the acknowledged event is not repeated"
        );
        if e.event == "message.created" {
            replayed.push(e.data["eventId"].as_str().unwrap().to_owned());
        }
    }
    assert_eq!(replayed, missed);

    // An id from before this process started: the client must rescan.
    let mut stale = open_sse(&c.app, &token, Some("1")).await;
    let e = stale.next(Duration::from_secs(5)).await.expect("resync");
    assert_eq!(e.event, "resync");
    assert_eq!(e.data["type"], "resync");
}

#[tokio::test]
async fn personal_tokens_may_stream_and_anonymous_callers_may_not() {
    let app = TestApp::start_with_mail().await;
    let session = app.sign_up("ssetoken").await;
    let token = personal_token(&app, &session).await;
    let _sse = open_sse(&app, &token, None).await;
    expect_error(app.get("/api/sync").await, 401, "unauthorized").await;
}

#[tokio::test]
async fn sigterm_ends_open_streams_and_exits_within_ten_seconds() {
    let mut app = TestApp::start_with_mail().await;
    let session = app.sign_up("term").await;
    let mut sse = open_sse(&app, &session.access_token, None).await;
    let started = Instant::now();
    let status = app.signal("TERM");
    let took = started.elapsed();
    eprintln!("exited {took:?} after SIGTERM with an open stream");
    assert!(status.success(), "{status}");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    // The process is gone by now, so the stream has ended either way; what shows that the
    // server ended it (rather than the 10 s grace running out with it open) is the time.
    assert!(
        took < Duration::from_secs(5),
        "the open stream held the shutdown for {took:?}"
    );
    assert!(
        sse.ends_within(Duration::from_secs(1)).await,
        "the stream ended"
    );
}

#[tokio::test]
async fn homeserver_errors_are_recorded_and_stored_data_is_still_served() {
    let mut c = convo(Some("Outage"), false).await;
    let event_id = c.bob.send_text(&c.room, "before the outage").await;
    wait_for_messages(&c.app, &c.user_id, &c.room, "message", |r| {
        has_all(r, std::slice::from_ref(&event_id))
    })
    .await;

    // Restart pointing at a homeserver that is down.
    let config = std::fs::read_to_string(&c.app.config_path).unwrap();
    let down = format!("homeserver_url = \"http://127.0.0.1:{}\"", free_port());
    let config = config
        .lines()
        .map(|l| {
            if l.starts_with("homeserver_url") {
                down.clone()
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    c.app.signal("TERM");
    std::fs::write(&c.app.config_path, config).unwrap();
    c.app.spawn().await;

    let deadline = Instant::now() + WAIT;
    let error = loop {
        let error: Option<String> = db(&c.app)
            .query_row(
                "SELECT last_error FROM sync_state WHERE user_id = ?1",
                [&c.user_id],
                |r| r.get(0),
            )
            .unwrap();
        if let Some(e) = error {
            break e;
        }
        assert!(Instant::now() < deadline, "no last_error recorded");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(error.contains("unreachable"), "{error}");
    let me = expect_json(
        c.app
            .get_auth("/api/auth/me", &c.session.access_token)
            .await,
        200,
    )
    .await;
    assert_eq!(me["id"], c.user_id.as_str());
    let _sse = open_sse(&c.app, &c.session.access_token, None).await;
    assert_eq!(stored_messages(&c.app, &c.user_id, &c.room).len(), 1);
    assert!(c.app.log().contains("sync failed; retrying with backoff"));
}

/// The worker is down while more happens than one timeline holds: the limited sync after
/// the restart brings the latest events and records the gap, which is fetched when a
/// reader pages into it; every message reads back once, in order, none skipped.
#[tokio::test]
async fn a_gap_after_downtime_is_filled_when_paging_back() {
    let mut c = convo(Some("Busy room"), false).await;
    let token = personal_token(&c.app, &c.session).await;
    let first = c.bob.send_text(&c.room, "before").await;
    wait_for_messages(&c.app, &c.user_id, &c.room, "first message", |r| {
        has_all(r, std::slice::from_ref(&first))
    })
    .await;
    c.app.kill9();
    // More than the worker's per-room timeline limit (100) while it is down.
    let mut sent = vec![(first, "before".to_owned())];
    for i in 0..150 {
        let body = format!("busy {i}");
        sent.push((c.bob.send_text(&c.room, &body).await, body));
    }
    c.app.spawn().await;
    let newest = sent.last().unwrap().0.clone();
    let rows = wait_for_messages(&c.app, &c.user_id, &c.room, "the newest message", |r| {
        has_all(r, std::slice::from_ref(&newest))
    })
    .await;
    assert!(rows.len() < sent.len(), "the gap is not fetched at sync");
    assert!(
        c.app.log().contains("recorded a timeline gap"),
        "{}",
        c.app.log()
    );

    // Paging back from the newest message fills the gap.
    let mut read: Vec<(String, String)> = Vec::new();
    let mut query = format!(
        "?roomId={}&limit=40",
        switchboard::clients::matrix::encode(&c.room)
    );
    loop {
        let resp = c
            .app
            .get_auth(&format!("/api/messages{query}"), &token)
            .await;
        let page = expect_json(resp, 200).await;
        for m in page["messages"].as_array().unwrap() {
            let id = m["eventId"].as_str().unwrap().to_owned();
            read.push((id, m["text"].as_str().unwrap().to_owned()));
        }
        match page["nextCursor"].as_str() {
            Some(cur) => {
                query = format!(
                    "?roomId={}&limit=40&cursor={cur}",
                    switchboard::clients::matrix::encode(&c.room)
                )
            }
            None => break,
        }
    }
    sent.reverse();
    assert_eq!(read, sent, "every message once, newest first");
    assert_eq!(
        stored_messages(&c.app, &c.user_id, &c.room).len(),
        sent.len()
    );
    assert!(
        c.app
            .log()
            .contains("fetched older history from the homeserver"),
        "{}",
        c.app.log()
    );
}
