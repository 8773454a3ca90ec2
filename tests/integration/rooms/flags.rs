//! Flags, client fields, deletion and the priority filter.

use reqwest::Method;
use serde_json::{json, Value};

use crate::common::*;
use crate::tokens::create_token;

use super::{
    db, fake_room_id, list, message_count, post, room_ids, room_path, seed_message, seed_room,
    user_id, Seed,
};

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
