//! Full history where a room's page is not the unit: the native all-rooms history (no
//! `roomId`) pages past what is stored into every room's older history, and a room stored
//! before history was tracked (no gap row; no timeline since) still reads back to its
//! first message.

use std::time::Duration;

use x25519_dalek::StaticSecret;

use super::backfill::{
    expected, read_all_readable, room_with_history, stored_messages, wait_for_newest, FETCHED,
};
use super::{decrypt, enc, history, me_on_matrix, personal_token, register_key};
use crate::common::matrix as mx;
use crate::common::*;

/// The whole native history of all rooms (no `roomId`), newest first: (room, body).
async fn read_all_rooms_native(
    app: &TestApp,
    jwt: &str,
    secret: &StaticSecret,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut query = "?limit=100".to_owned();
    for _ in 0..100 {
        let page = history(app, jwt, &query).await;
        let items = page["messages"].as_array().unwrap();
        let Some(oldest) = items.last() else {
            return out;
        };
        for m in items {
            let plain = decrypt(secret, m);
            let room = m["roomId"].as_str().unwrap().to_owned();
            out.push((room, plain["body"].as_str().unwrap().to_owned()));
        }
        let before = oldest["timestamp"].as_i64().unwrap();
        query = format!("?limit=100&before={before}");
    }
    panic!("native all-rooms history does not end");
}

#[tokio::test]
async fn the_native_all_rooms_history_pages_back_to_each_rooms_first_message() {
    let app = TestApp::start_with_mail().await;
    let session = app.sign_up("backfill.all").await;
    let token = personal_token(&app, &session).await;
    let secret = register_key(&app, &session).await;
    let bob = mx::register("bfall").await;
    let me = me_on_matrix(&session);
    let (first, _) = room_with_history(&bob, &me, 230).await;
    wait_for_newest(&app, &token, &first, "m229").await;
    let (second, _) = room_with_history(&bob, &me, 120).await;
    wait_for_newest(&app, &token, &second, "m119").await;
    assert!(stored_messages(&app, &first) < 150);

    let all = read_all_rooms_native(&app, &session.access_token, &secret).await;
    let of = |room: &str| -> Vec<String> {
        all.iter()
            .filter(|(r, _)| r == room)
            .map(|(_, b)| b.clone())
            .collect()
    };
    assert_eq!(of(&first), expected(230), "{}", app.log());
    assert_eq!(of(&second), expected(120));
    assert!(app.log().contains(FETCHED));
}

#[tokio::test]
async fn a_room_stored_before_history_was_tracked_reads_back_to_its_first_message() {
    let mut app = TestApp::start_with_mail().await;
    let session = app.sign_up("backfill.legacy").await;
    let token = personal_token(&app, &session).await;
    let secret = register_key(&app, &session).await;
    let bob = mx::register("bflegacy").await;
    let (room, _) = room_with_history(&bob, &me_on_matrix(&session), 180).await;
    wait_for_newest(&app, &token, &room, "m179").await;

    // As a version without back-fill left it: the messages, but no history rows.
    app.kill9();
    {
        let conn = rusqlite::Connection::open(app.data_dir().join("switchboard.db")).unwrap();
        conn.busy_timeout(Duration::from_secs(5)).unwrap();
        for table in ["history_gaps", "history_rooms"] {
            let n = conn
                .execute(&format!("DELETE FROM {table} WHERE room_id = ?1"), [&room])
                .unwrap();
            assert!(table == "history_gaps" || n == 1, "{table}: {n}");
        }
    }
    app.spawn().await;
    let readable = read_all_readable(&app, &token, &room).await;
    assert_eq!(readable, expected(180), "{}", app.log());
    assert!(app.log().contains("tracked from its oldest message"));

    // The native view of the room reads it all too (stored now).
    let mut bodies = Vec::new();
    let mut query = format!("?roomId={}&limit=100", enc(&room));
    loop {
        let page = history(&app, &session.access_token, &query).await;
        let items = page["messages"].as_array().unwrap();
        let Some(oldest) = items.last() else { break };
        for m in items {
            bodies.push(decrypt(&secret, m)["body"].as_str().unwrap().to_owned());
        }
        let before = oldest["timestamp"].as_i64().unwrap();
        query = format!("?roomId={}&limit=100&before={before}", enc(&room));
    }
    assert_eq!(bodies, expected(180));
}
