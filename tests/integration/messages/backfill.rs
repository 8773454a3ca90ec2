//! Full history through the sync worker and the real Synapse: a room joined with more
//! history than one timeline holds is read back to its first message in both views (the
//! older part fetched from the homeserver while paging), one fetch for concurrent pagers,
//! no news for old messages, nothing for strangers, what is stored when the homeserver is
//! down.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use serde_json::Value;
use x25519_dalek::StaticSecret;

use crate::common::matrix::{self as mx, MatrixUser};
use crate::common::*;
use crate::sync::{is_message_created, open_sse};

use super::{decrypt, enc, history, me_on_matrix, personal_token, register_key};

pub(super) const FETCHED: &str = "fetched older history from the homeserver";

/// Bob's room with `n` messages "m0".."m{n-1}", sent one after the other (distinct
/// timestamps), which the user then joins on Matrix; returns (room, last event id).
pub(super) async fn room_with_history(
    bob: &MatrixUser,
    me: &MatrixUser,
    n: usize,
) -> (String, String) {
    let room = bob.create_room(Some("Long story"), &[], false).await;
    let mut last = String::new();
    for i in 0..n {
        last = bob.send_text(&room, &format!("m{i}")).await;
    }
    bob.invite(&room, &me.user_id).await;
    me.join(&room).await;
    (room, last)
}

/// Waits until the newest message of `room` is in the readable history (the worker
/// ingested the room's first timeline).
pub(super) async fn wait_for_newest(app: &TestApp, token: &str, room: &str, body: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let resp = app
            .get_auth(
                &format!("/api/messages?roomId={}&limit=1", enc(room)),
                token,
            )
            .await;
        if resp.status() == 200 {
            let page: Value = resp.json().await.unwrap();
            if page["messages"][0]["text"] == body {
                return;
            }
        }
        assert!(
            Instant::now() < deadline,
            "{room} not synced:\n{}",
            app.log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The whole readable history of `room`, newest first, page by page.
pub(super) async fn read_all_readable(app: &TestApp, token: &str, room: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut query = format!("?roomId={}&limit=100", enc(room));
    for _ in 0..100 {
        let page = history(app, token, &query).await;
        for m in page["messages"].as_array().unwrap() {
            out.push(m["text"].as_str().unwrap().to_owned());
        }
        match page["nextCursor"].as_str() {
            Some(c) => query = format!("?roomId={}&limit=100&cursor={c}", enc(room)),
            None => return out,
        }
    }
    panic!("readable history of {room} does not end");
}

/// The whole native history (of `room`, or of all rooms without one), newest first: each
/// message with its content opened with `secret`.
pub(super) async fn read_native(
    app: &TestApp,
    jwt: &str,
    secret: &StaticSecret,
    room: Option<&str>,
) -> Vec<(Value, Value)> {
    let scope = room.map_or(String::new(), |r| format!("roomId={}&", enc(r)));
    let mut out = Vec::new();
    let mut query = format!("?{scope}limit=100");
    for _ in 0..100 {
        let page = history(app, jwt, &query).await;
        let items = page["messages"].as_array().unwrap();
        let Some(oldest) = items.last() else {
            return out;
        };
        for m in items {
            out.push((m.clone(), decrypt(secret, m)));
        }
        let before = oldest["timestamp"].as_i64().unwrap();
        query = format!("?{scope}limit=100&before={before}");
    }
    panic!("native history of {room:?} does not end");
}

/// The whole native history of `room`, newest first: (event id, body).
async fn read_all_native(
    app: &TestApp,
    jwt: &str,
    secret: &StaticSecret,
    room: &str,
) -> Vec<(String, String)> {
    read_native(app, jwt, secret, Some(room))
        .await
        .into_iter()
        .map(|(m, plain)| (str_of(&m, "eventId"), str_of(&plain, "body")))
        .collect()
}

pub(super) fn str_of(v: &Value, field: &str) -> String {
    v[field].as_str().unwrap().to_owned()
}

pub(super) fn expected(n: usize) -> Vec<String> {
    (0..n).rev().map(|i| format!("m{i}")).collect()
}

fn fetches(app: &TestApp, room: &str) -> usize {
    app.log()
        .lines()
        .filter(|l| l.contains(FETCHED) && l.contains(room))
        .count()
}

#[tokio::test]
async fn a_room_with_500_earlier_messages_reads_back_to_its_first_in_both_views_without_news() {
    let app = TestApp::start_with_mail().await;
    let session = app.sign_up("backfill").await;
    let token = personal_token(&app, &session).await;
    let secret = register_key(&app, &session).await;
    let bob = mx::register("bfbob").await;
    let (room, _) = room_with_history(&bob, &me_on_matrix(&session), 500).await;
    wait_for_newest(&app, &token, &room, "m499").await;
    // The first timeline holds the latest events only: the rest is fetched while paging.
    let stored_at_join = stored_messages(&app, &room);
    assert!(stored_at_join < 150, "{stored_at_join} stored at join");
    let mut sse = open_sse(&app, &session.access_token, None).await;

    let readable = read_all_readable(&app, &token, &room).await;
    assert_eq!(
        readable,
        expected(500),
        "readable history in order, once each"
    );
    assert!(fetches(&app, &room) >= 3, "{}", app.log());

    let native = read_all_native(&app, &session.access_token, &secret, &room).await;
    let bodies: Vec<String> = native.iter().map(|(_, b)| b.clone()).collect();
    assert_eq!(bodies, expected(500), "native history in order, once each");
    assert_eq!(stored_messages(&app, &room), 500);

    // Old history is not news: up to a new message (the marker), the stream announced
    // none of the back-filled ones.
    let back_filled: HashSet<&str> = native.iter().map(|(e, _)| e.as_str()).collect();
    let marker = bob.send_text(&room, "news").await;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let e = sse.next(left).await.expect("the marker's message.created");
        if is_message_created(&e, &marker) {
            break;
        }
        if e.event == "message.created" {
            let id = e.data["eventId"].as_str().unwrap_or_default();
            assert!(
                !back_filled.contains(id),
                "back-filled {id} announced as new"
            );
        }
    }
}

#[tokio::test]
async fn concurrent_pagers_of_one_room_trigger_one_fetch_and_strangers_none() {
    let app = TestApp::start_with_mail().await;
    let session = app.sign_up("backfill.race").await;
    let token = personal_token(&app, &session).await;
    let _secret = register_key(&app, &session).await;
    let bob = mx::register("bfrace").await;
    let (room, _) = room_with_history(&bob, &me_on_matrix(&session), 260).await;
    wait_for_newest(&app, &token, &room, "m259").await;

    // A stranger (another user of the service) cannot page the room: 404, nothing fetched.
    let stranger = app.sign_up("backfill.stranger").await;
    let stranger_token = personal_token(&app, &stranger).await;
    let path = format!("/api/messages?roomId={}&limit=100", enc(&room));
    expect_error(app.get_auth(&path, &stranger_token).await, 404, "not_found").await;
    register_key(&app, &stranger).await;
    expect_error(
        app.get_auth(&path, &stranger.access_token).await,
        404,
        "not_found",
    )
    .await;
    // Bad positions: 400 naming the field, nothing fetched.
    let bad_cursor = format!("{path}&cursor=not-a-cursor");
    expect_error(
        app.get_auth(&bad_cursor, &token).await,
        400,
        "invalid_request",
    )
    .await;
    let bad_before = format!("{path}&before=yesterday");
    let resp = app.get_auth(&bad_before, &session.access_token).await;
    expect_error(resp, 400, "invalid_request").await;
    assert_eq!(fetches(&app, &room), 0, "{}", app.log());

    // Eight pagers at once, each a different page (no shared page cache entry), all
    // reaching past what the join stored.
    let pagers = (0..8).map(|i| {
        let limit = 100 - i;
        let (app, room) = (&app, &room);
        let bearer = if i % 2 == 0 {
            token.clone()
        } else {
            session.access_token.clone()
        };
        async move {
            let page = history(
                app,
                &bearer,
                &format!("?roomId={}&limit={limit}", enc(room)),
            )
            .await;
            (limit, page["messages"].as_array().unwrap().len())
        }
    });
    for (limit, got) in futures_util::future::join_all(pagers).await {
        assert_eq!(got, limit as usize, "a full page of {limit}");
    }
    assert_eq!(fetches(&app, &room), 1, "{}", app.log());
    let stranger_id = stranger.user["id"].as_str().unwrap();
    assert!(
        !app.log()
            .lines()
            .any(|l| l.contains(FETCHED) && l.contains(stranger_id)),
        "{}",
        app.log()
    );
    assert_eq!(read_all_readable(&app, &token, &room).await, expected(260));
}

/// More room state than one request fetches (5 pages of 100 events) between the newest
/// and the only message: the readable page comes back empty but with a cursor, and
/// following it reaches the message.
#[tokio::test]
async fn a_long_stretch_without_messages_does_not_end_the_readable_history() {
    let app = TestApp::start_with_mail().await;
    let session = app.sign_up("backfill.state").await;
    let token = personal_token(&app, &session).await;
    let bob = mx::register("bfstate").await;
    let room = bob.create_room(Some("Chatty state"), &[], false).await;
    bob.send_text(&room, "the only message").await;
    for i in 0..650 {
        bob.send_state(
            &room,
            "m.room.topic",
            "",
            serde_json::json!({"topic": format!("t{i}")}),
        )
        .await;
    }
    let me = me_on_matrix(&session);
    bob.invite(&room, &me.user_id).await;
    me.join(&room).await;
    // Positive marker: the join is ingested (listed as joined, not as the invitation).
    let path = format!("/api/rooms/{}", enc(&room));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let resp = app.get_auth(&path, &session.access_token).await;
        if resp.status() == 200
            && resp.json::<Value>().await.unwrap()["room"]["membership"] == "join"
        {
            break;
        }
        assert!(Instant::now() < deadline, "join not synced:\n{}", app.log());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(
        read_all_readable(&app, &token, &room).await,
        ["the only message"]
    );
    assert!(fetches(&app, &room) > 5, "{}", app.log());
}

/// Deleting a room's stored messages also drops what was left to fetch: paging does not
/// bring the history back from the homeserver.
#[tokio::test]
async fn deleted_history_is_not_fetched_again() {
    let app = TestApp::start_with_mail().await;
    let session = app.sign_up("backfill.delete").await;
    let token = personal_token(&app, &session).await;
    let bob = mx::register("bfdel").await;
    let (room, _) = room_with_history(&bob, &me_on_matrix(&session), 150).await;
    wait_for_newest(&app, &token, &room, "m149").await;
    let resp = super::delete_messages(
        &app,
        &session.access_token,
        &format!("?roomId={}", enc(&room)),
        Some(super::CONFIRM),
    )
    .await;
    expect_json(resp, 200).await;
    let page = history(&app, &token, &format!("?roomId={}&limit=100", enc(&room))).await;
    assert_eq!(page["messages"], serde_json::json!([]), "{page}");
    assert!(page.get("nextCursor").is_none_or(Value::is_null), "{page}");
    assert_eq!(fetches(&app, &room), 0, "{}", app.log());
    // A new message is stored and read as usual.
    bob.send_text(&room, "after").await;
    wait_for_newest(&app, &token, &room, "after").await;
    assert_eq!(read_all_readable(&app, &token, &room).await, ["after"]);
    assert_eq!(fetches(&app, &room), 0, "{}", app.log());
}

#[tokio::test]
async fn with_the_homeserver_down_paging_answers_what_is_stored() {
    let mut app = TestApp::start_with_mail().await;
    let session = app.sign_up("backfill.down").await;
    let token = personal_token(&app, &session).await;
    let bob = mx::register("bfdown").await;
    let (room, _) = room_with_history(&bob, &me_on_matrix(&session), 150).await;
    wait_for_newest(&app, &token, &room, "m149").await;
    let stored = stored_messages(&app, &room);
    assert!(stored < 150, "{stored}");

    // Same data, homeserver unreachable.
    app.kill9();
    let config = std::fs::read_to_string(&app.config_path).unwrap();
    let synapse = synapse().base_url.clone();
    let dead = format!("http://127.0.0.1:{}", free_port());
    std::fs::write(&app.config_path, config.replace(&synapse, &dead)).unwrap();
    app.spawn().await;
    let all = read_all_readable(&app, &token, &room).await;
    assert_eq!(all.len() as i64, stored, "what is stored, newest first");
    assert_eq!(all[0], "m149");
    assert!(
        app.log()
            .contains("cannot fetch older history; answering what is stored"),
        "{}",
        app.log()
    );
    assert_eq!(fetches(&app, &room), 0);
}

/// Messages of `room` in the server's database.
pub(super) fn stored_messages(app: &TestApp, room: &str) -> i64 {
    let conn = rusqlite::Connection::open_with_flags(
        app.data_dir().join("switchboard.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    conn.busy_timeout(Duration::from_secs(5)).unwrap();
    conn.query_row(
        "SELECT COUNT(*) FROM messages WHERE room_id = ?1",
        [room],
        |r| r.get(0),
    )
    .unwrap()
}
