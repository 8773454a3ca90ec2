//! With the homeserver: the single-room read (also with it down) and marking read.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{json, Value};
use switchboard::clients::matrix::encode;

use crate::common::*;
use crate::tokens::create_token;

use super::{
    create_room, cs_api, db, fake_room_id, list, matrix, matrix_id, matrix_token, matrix_user,
    message_count, seed_message, seed_room, send_text, user_id, wait_for_joined, wait_for_room,
    Seed,
};

#[tokio::test]
async fn the_single_room_read_refreshes_members_and_resolves_the_direct_recipient() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("rooms-detail").await;
    let t = create_token(&app, &user, json!({"name": "detail"})).await;
    let me = matrix_id(&user);
    let (bob, bob_token) = matrix_user("bob").await;
    let (carol, carol_token) = matrix_user("carol").await;

    // Bob opens a direct chat with the user (invite with is_direct); Bob is no bridge, so
    // the user accepts the invitation.
    let dm = create_room(&bob_token, "", true, &[&me]).await;
    send_text(&bob_token, &dm, "hi").await;
    accept_invite(&app, &user.access_token, &dm).await;
    wait_for_joined(&app, &t.token, &dm).await;
    let got = app.api(&t.token).rooms().get(&dm).await.unwrap();
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
    let got = room_of(&app, &user.access_token, &group).await;
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
    let got = room_of(&app, &user.access_token, &quiet).await;
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
    let got = room_of(&app, &user.access_token, &room).await;
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
    let got = room_of(&app, &user.access_token, &room).await;
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
    let body = app
        .api(&user.access_token)
        .rooms()
        .act(&room, "read")
        .await
        .unwrap();
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

    let body = app.api(&t.token).rooms().act(&room, "read").await.unwrap();
    assert_eq!(body["message"], "room marked as read");
    let got = app.api(&t.token).rooms().get(&room).await.unwrap();
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
    // Positive marker: one more message after the read is stored; the worker then has the
    // homeserver's counts from after the read, which count only that message unread.
    send_text(&bob_token, &room, "third").await;
    let deadline = Instant::now() + Duration::from_secs(15);
    while message_count(&app, &uid, &room) < 3 {
        assert!(
            Instant::now() < deadline,
            "the third message was not stored"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let got = app.api(&t.token).rooms().get(&room).await.unwrap();
        if got["unreadCount"] == 1 {
            assert_eq!(got["highlightCount"], 0, "{got}");
            break;
        }
        assert_eq!(
            got["unreadCount"], 0,
            "only the new message is unread: {got}"
        );
        assert!(
            Instant::now() < deadline,
            "the new message was not counted: {got}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // A room without stored messages is marked read here only.
    let empty = fake_room_id("read-empty");
    seed_room(&app, &uid, Seed::new(&empty).unread(3));
    let body = app
        .api(&user.access_token)
        .rooms()
        .act(&empty, "read")
        .await
        .unwrap();
    assert!(
        body["message"].as_str().unwrap().contains("no messages"),
        "{body}"
    );
    let rooms = app.user(&user).rooms();
    let cleared = rooms
        .listed("?sortBy=unread", &empty)
        .await
        .expect("listed");
    assert_eq!(cleared["unreadCount"], 0, "{cleared}");
    // The other room still counts only the message after its read marker.
    let other = rooms.listed("?sortBy=unread", &room).await.expect("listed");
    assert_eq!(other["unreadCount"], 1, "{other}");
}

/// `GET /api/rooms/{room}` as `token`, answered 200.
async fn room_of(app: &TestApp, token: &str, room: &str) -> Value {
    app.api(token).rooms().get(room).await.unwrap()
}
