//! Flags, client fields, deletion and the priority filter.

use serde_json::{json, Value};

use crate::common::client::Refusal;
use crate::common::*;
use crate::tokens::create_token;

use super::{
    db, fake_room_id, list, message_count, room_ids, seed_message, seed_room, user_id, Seed,
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

    for token in [user.access_token.as_str(), t.token.as_str()] {
        let rooms = app.api(token).rooms();
        let body = rooms.act(&room, "archive").await.unwrap();
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
        assert_eq!(rooms.get(&room).await.unwrap()["archived"], true);

        let body = rooms.act(&room, "unarchive").await.unwrap();
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
            let body = rooms.act(&room, action).await.unwrap();
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
        rooms.act(&room, "unpin").await.unwrap();
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
    let native = user.access_token.as_str();
    let rooms = app.user(&user).rooms();

    let body = json!({"encryptedName": "bmFtZQ==", "encryptedAvatar": "YXZhdGFy", "nonce": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"});
    assert!(rooms.put(&room, body).await.unwrap()["message"].is_string());
    let got = rooms.get(&room).await.unwrap();
    assert_eq!(got["encryptedName"], "bmFtZQ==");
    assert_eq!(got["encryptedAvatar"], "YXZhdGFy");
    assert_eq!(got["nonce"], "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
    assert!(got.get("name").is_none());
    let listed = list(&app, native, "").await;
    assert_eq!(listed["rooms"][0]["encryptedName"], "bmFtZQ==");

    // Absent fields stay, null clears.
    rooms
        .put(&room, json!({"encryptedAvatar": null}))
        .await
        .unwrap();
    let got = rooms.get(&room).await.unwrap();
    assert_eq!(got["encryptedName"], "bmFtZQ==");
    assert_eq!(got["encryptedAvatar"], Value::Null);
    rooms.put(&room, json!({})).await.unwrap();

    // Invalid base64 is 400 and changes nothing.
    let err = rooms
        .put(&room, json!({"encryptedName": "bm FtZQ"}))
        .await
        .refused(400, "invalid_request");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .starts_with("encryptedName:"),
        "{err}"
    );
    let got = rooms.get(&room).await.unwrap();
    assert_eq!(got["encryptedName"], "bmFtZQ==");

    // Personal tokens see the readable name, never the client fields, and cannot PUT.
    let scripted = app.api(&t.token).rooms();
    let got = scripted.get(&room).await.unwrap();
    assert_eq!(got["name"], "Server name");
    assert!(got.get("encryptedName").is_none());
    scripted
        .put(&room, json!({"encryptedName": "AAAA"}))
        .await
        .refused(403, "forbidden_for_api_token");
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
    let scripted = app.api(&t.token).rooms().delete(&keep, "").await;
    scripted.refused(403, "forbidden_for_api_token");

    let rooms = app.user(&user).rooms();
    let body = rooms.delete(&keep, "").await.unwrap();
    assert_eq!(body["roomId"], keep.as_str());
    assert_eq!(body["messagesDeleted"], false);
    assert_eq!(body["deletedMessagesCount"], 0);
    assert!(body["message"].is_string());
    assert_eq!(message_count(&app, &uid, &keep), 2);
    rooms.get(&keep).await.refused(404, "not_found");
    assert!(!room_ids(&list(&app, native, "?archived=all").await).contains(&keep));
    // Deleting again: 404.
    rooms.delete(&keep, "").await.refused(404, "not_found");

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
    let body = rooms.delete(&wipe, "?deleteMessages=true").await.unwrap();
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
    let body = rooms.delete(&third, "?deleteMessages=false").await.unwrap();
    assert_eq!(body["messagesDeleted"], false);
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

    let body = app.user(&user).rooms().filter("priority").await.unwrap();
    assert_eq!(room_ids(&body), vec![important, threshold, mention]);
    assert!(body["rooms"][0].get("encryptedName").is_some());
}
