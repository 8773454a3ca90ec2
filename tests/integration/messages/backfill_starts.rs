//! Full history where a room's page is not the unit: the native all-rooms history (no
//! `roomId`) pages past what is stored into every room's older history, and a room stored
//! before history was tracked (no gap row; no timeline since) still reads back to its
//! first message.

use std::time::Duration;

use super::backfill::{
    expected, read_all_readable, read_native, room_with_history, stored_messages, str_of,
    wait_for_newest, FETCHED,
};
use super::{me_on_matrix, personal_token, register_key};
use crate::common::matrix as mx;
use crate::common::*;

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

    let all = read_native(&app, &session.access_token, &secret, None).await;
    let of = |room: &str| -> Vec<String> {
        all.iter()
            .filter(|(m, _)| m["roomId"] == room)
            .map(|(_, plain)| str_of(plain, "body"))
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
    let bodies: Vec<String> = read_native(&app, &session.access_token, &secret, Some(&room))
        .await
        .iter()
        .map(|(_, plain)| str_of(plain, "body"))
        .collect();
    assert_eq!(bodies, expected(180));
}
