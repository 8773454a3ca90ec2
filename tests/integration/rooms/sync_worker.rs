//! The whole path through the sync worker.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use switchboard::clients::matrix::encode;

use crate::common::*;
use crate::tokens::create_token;

use super::{
    create_room, list, matrix, matrix_token, matrix_user, room_ids, send_text, wait_for_room,
};

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
    let detail = app.api(&t.token).rooms().get(&room).await.unwrap();
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

    app.api(&t.token)
        .rooms()
        .act(&room, "archive")
        .await
        .unwrap();
    assert!(!room_ids(&list(&app, &t.token, "").await).contains(&room));
    // The user's own message does not bring it back.
    send_text(&matrix_token(&user), &room, "note to self").await;
    // Positive marker: the message is stored (readable through the messages API) before
    // the room is looked at.
    let history = format!("/api/messages?roomId={}", encode(&room));
    let deadline = Instant::now() + Duration::from_secs(15);
    while !app
        .get_auth(&history, &t.token)
        .await
        .text()
        .await
        .unwrap()
        .contains("note to self")
    {
        assert!(Instant::now() < deadline, "the own message was not stored");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(!room_ids(&list(&app, &t.token, "").await).contains(&room));
    // `archived_at` has whole seconds and a message from the archiving second may predate
    // it, so the incoming message is sent in a later second.
    tokio::time::sleep(Duration::from_millis(1100)).await;
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
