//! Linked room groups (`/api/rooms/link`, `/api/rooms/linked/*`,
//! `/api/rooms/{roomId}/linked-group`) against the real binary, on rooms seeded as the
//! sync worker stores them; and the in-process helpers other areas use
//! (`services::linked::room_for_platform`, `services::rooms::visible_room_counts_by_platform`).

use reqwest::Method;
use serde_json::{json, Value};

use crate::common::client::Refusal;
use crate::common::*;
use crate::rooms::{db, fake_room_id, room_path, seed_room, user_id, Seed};
use crate::tokens::create_token;

fn group_path(id: &str) -> String {
    format!("/api/rooms/linked/{id}")
}

/// Seeds rooms on whatsapp, telegram and discord for `session`; returns their ids.
fn three_rooms(app: &TestApp, session: &Session, tag: &str) -> [String; 3] {
    let uid = user_id(session);
    let ids = [
        fake_room_id(&format!("{tag}wa")),
        fake_room_id(&format!("{tag}tg")),
        fake_room_id(&format!("{tag}dc")),
    ];
    for (id, platform) in ids.iter().zip(["whatsapp", "telegram", "discord"]) {
        seed_room(app, &uid, Seed::new(id).platform(platform));
    }
    ids
}

#[tokio::test]
async fn a_group_is_created_read_listed_renamed_and_deleted() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("linked-flow").await;
    let uid = user_id(&user);
    let groups = app.user(&user).linked();
    let [wa, tg, dc] = three_rooms(&app, &user, "flow");

    let created = groups
        .link(json!({"roomIds": [wa, tg], "name": "  Alice everywhere ",
            "encryptedName": "bmFtZQ==", "nonce": "bm9uY2U="}))
        .await
        .unwrap();
    assert!(created["message"].is_string());
    let group = created["group"].clone();
    let gid = group["groupId"].as_str().unwrap().to_owned();
    uuid::Uuid::parse_str(&gid).expect("groupId is a UUID");
    assert_eq!(group["name"], "Alice everywhere");
    assert_eq!(group["encryptedName"], "bmFtZQ==");
    assert_eq!(group["nonce"], "bm9uY2U=");
    assert_eq!(group["roomIds"], json!([wa, tg]));
    assert_eq!(
        group["rooms"],
        json!([{"roomId": wa, "platform": "whatsapp"}, {"roomId": tg, "platform": "telegram"}])
    );
    assert!(group["createdAt"].is_string() && group["updatedAt"].is_string());

    // The readable name is sealed at rest.
    let (name_enc, encrypted_name): (Vec<u8>, String) = db(&app)
        .query_row(
            "SELECT name_enc, encrypted_name FROM linked_groups WHERE id = ?1",
            [&gid],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert!(
        !name_enc.windows(5).any(|w| w == b"Alice"),
        "name stored in the clear"
    );
    assert_eq!(encrypted_name, "bmFtZQ==");

    // Read back, listed, and found from its rooms.
    assert_eq!(groups.get(&gid).await.unwrap(), group);
    let upper = groups.get(&gid.to_uppercase()).await.unwrap();
    assert_eq!(upper["groupId"], gid.as_str());
    let listed = groups.list().await.unwrap();
    assert_eq!(listed["groups"], json!([group]));
    let of_room = groups.of_room(&tg).await.unwrap();
    assert_eq!(of_room["linkedGroup"]["groupId"], gid.as_str());
    let of_room = groups.of_room(&dc).await.unwrap();
    assert_eq!(of_room, json!({"linkedGroup": null}));

    // Rename: absent fields stay, null clears.
    let renamed = groups.update(&gid, json!({"name": "Alice", "nonce": null}));
    assert!(renamed.await.unwrap()["message"].is_string());
    let got = groups.get(&gid).await.unwrap();
    assert_eq!(got["name"], "Alice");
    assert_eq!(got["encryptedName"], "bmFtZQ==");
    assert_eq!(got["nonce"], Value::Null);
    groups.update(&gid, json!({"name": null})).await.unwrap();
    let got = groups.get(&gid).await.unwrap();
    assert_eq!(got["name"], Value::Null);

    // Delete: the rooms stay and are free to link again.
    let body = groups.delete(&gid).await.unwrap();
    assert_eq!(body["groupId"], gid.as_str());
    groups.get(&gid).await.refused(404, "not_found");
    groups.delete(&gid).await.refused(404, "not_found");
    app.user(&user).rooms().get(&wa).await.unwrap();
    let links: i64 = db(&app)
        .query_row(
            "SELECT COUNT(*) FROM linked_group_rooms WHERE user_id = ?1",
            [&uid],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(links, 0);
    groups.link(json!({"roomIds": [wa, tg, dc]})).await.unwrap();
}

#[tokio::test]
async fn rooms_are_added_and_removed_and_the_last_room_takes_the_group_with_it() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("linked-members").await;
    let groups = app.user(&user).linked();
    let [wa, tg, dc] = three_rooms(&app, &user, "mem");

    let created = groups.link(json!({"roomIds": [wa, tg]})).await.unwrap();
    let gid = created["group"]["groupId"].as_str().unwrap().to_owned();
    assert_eq!(created["group"]["name"], Value::Null);

    // Adding: rooms already in the group are skipped.
    let body = groups.add_rooms(&gid, json!({"roomIds": [tg, dc]}));
    let body = body.await.unwrap();
    assert_eq!(body["addedRoomIds"], json!([dc]));
    assert!(body["message"].is_string());
    let got = groups.get(&gid).await.unwrap();
    assert_eq!(got["roomIds"], json!([wa, tg, dc]));

    // Removing: the group survives with one room and goes with its last.
    for (room, last) in [(&wa, false), (&tg, false), (&dc, true)] {
        let body = groups.remove_room(&gid, room).await.unwrap();
        assert_eq!(body["roomId"], room.as_str());
        assert_eq!(body["groupDeleted"], last, "{body}");
        if !last {
            let again = groups.remove_room(&gid, room).await;
            again.refused(404, "not_found");
        }
    }
    groups.get(&gid).await.refused(404, "not_found");
    let listed = groups.list().await.unwrap();
    assert_eq!(listed, json!({"groups": []}));

    // Deleting a room from the service unlinks it; an emptied group is deleted.
    let created = groups.link(json!({"roomIds": [wa, tg]})).await.unwrap();
    let gid = created["group"]["groupId"].as_str().unwrap().to_owned();
    let rooms = app.user(&user).rooms();
    rooms.delete(&wa, "").await.unwrap();
    let got = groups.get(&gid).await.unwrap();
    assert_eq!(got["roomIds"], json!([tg]));
    rooms.delete(&tg, "").await.unwrap();
    groups.get(&gid).await.refused(404, "not_found");
}

#[tokio::test]
async fn a_room_is_in_at_most_one_group() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("linked-409").await;
    let groups = app.user(&user).linked();
    let [wa, tg, dc] = three_rooms(&app, &user, "dup");
    let extra = fake_room_id("dupx");
    seed_room(
        &app,
        &user_id(&user),
        Seed::new(&extra).platform("telegram"),
    );

    let first = groups.link(json!({"roomIds": [wa, tg]})).await.unwrap();
    let first_id = first["group"]["groupId"].as_str().unwrap().to_owned();
    let linked = groups.link(json!({"roomIds": [dc, tg]})).await;
    let body = linked.refused(409, "rooms_already_linked");
    assert!(
        body["message"].as_str().unwrap().contains(tg.as_str()),
        "{body}"
    );
    // Nothing was created.
    let listed = groups.list().await.unwrap();
    assert_eq!(listed["groups"].as_array().unwrap().len(), 1);

    let second = groups.link(json!({"roomIds": [dc, extra]})).await.unwrap();
    let second_id = second["group"]["groupId"].as_str().unwrap().to_owned();
    let added = groups.add_rooms(&second_id, json!({"roomIds": [wa]})).await;
    added.refused(409, "rooms_already_linked");
    let got = groups.get(&first_id).await.unwrap();
    assert_eq!(got["roomIds"], json!([wa, tg]));
    let got = groups.get(&second_id).await.unwrap();
    assert_eq!(got["roomIds"], json!([dc, extra]));
}

#[tokio::test]
async fn bad_input_is_400_and_foreign_or_unknown_ids_are_404() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("linked-bad").await;
    let other = app.sign_up("linked-bad-other").await;
    let token = user.access_token.as_str();
    let groups = app.user(&user).linked();
    let [wa, tg, _dc] = three_rooms(&app, &user, "bad");
    let [foreign, ..] = three_rooms(&app, &other, "badother");

    for body in [
        json!({}),
        json!({"roomIds": []}),
        json!({"roomIds": [wa]}),
        json!({"roomIds": [wa, wa]}),
        json!({"roomIds": [wa, ""]}),
        json!({"roomIds": "nope"}),
        json!({"roomIds": [wa, tg], "name": "x".repeat(256)}),
        json!({"roomIds": [wa, tg], "encryptedName": "not base64"}),
        json!({"roomIds": [wa, tg], "nonce": "***"}),
    ] {
        let err = groups.link(body.clone()).await.unwrap_err();
        assert_eq!(err.pair(), (400, "invalid_request"), "{body}: {}", err.body);
    }
    // 255 characters is fine.
    let long_name = json!({"roomIds": [wa, tg], "name": "é".repeat(255)});
    groups.link(long_name).await.unwrap();

    // Rooms that are not the caller's: 404.
    for room_ids in [
        [own_room(&app, &user), foreign.clone()],
        [fake_room_id("ghost"), fake_room_id("ghost")],
    ] {
        let linked = groups.link(json!({ "roomIds": room_ids })).await;
        linked.refused(404, "not_found");
    }

    // Malformed group ids: 400 on every group route; unknown or foreign ones: 404.
    let own = groups.list().await.unwrap()["groups"][0]["groupId"]
        .as_str()
        .unwrap()
        .to_owned();
    for gid in ["not-a-uuid", "123"] {
        for (method, suffix, body) in [
            (Method::GET, "", None),
            (Method::PUT, "", Some(json!({"name": "x"}))),
            (Method::DELETE, "", None),
            (Method::POST, "/rooms", Some(json!({"roomIds": [wa]}))),
            (Method::DELETE, "/rooms/%21a%3Alocalhost", None),
        ] {
            let resp = app
                .send(
                    method.clone(),
                    &format!("{}{suffix}", group_path(gid)),
                    Some(token),
                    body,
                )
                .await;
            expect_error(resp, 400, "invalid_request").await;
        }
    }
    let unknown = uuid::Uuid::new_v4().to_string();
    for gid in [unknown.as_str(), own.as_str()] {
        let caller = if gid == own {
            other.access_token.as_str()
        } else {
            token
        };
        for (method, suffix, body) in [
            (Method::GET, "", None),
            (Method::PUT, "", Some(json!({"name": "x"}))),
            (Method::DELETE, "", None),
            (Method::POST, "/rooms", Some(json!({"roomIds": [foreign]}))),
            (Method::DELETE, "/rooms/%21a%3Alocalhost", None),
        ] {
            let resp = app
                .send(
                    method.clone(),
                    &format!("{}{suffix}", group_path(gid)),
                    Some(caller),
                    body,
                )
                .await;
            expect_error(resp, 404, "not_found").await;
        }
    }
    // Adding needs at least one distinct room of the caller.
    for body in [
        json!({"roomIds": []}),
        json!({"roomIds": [wa, wa]}),
        json!({}),
    ] {
        let added = groups.add_rooms(&own, body).await;
        assert_eq!(added.unwrap_err().status, 400);
    }
    let added = groups.add_rooms(&own, json!({"roomIds": [foreign]})).await;
    added.refused(404, "not_found");
    // Renaming validates like creating.
    for body in [
        json!({"name": "y".repeat(256)}),
        json!({"encryptedName": "%%%"}),
        json!({"nonce": 7}),
    ] {
        groups
            .update(&own, body)
            .await
            .refused(400, "invalid_request");
    }
    // The foreign user's group is intact and unseen.
    let listed = app.user(&other).linked().list().await.unwrap();
    assert_eq!(listed, json!({"groups": []}));
}

fn own_room(app: &TestApp, session: &Session) -> String {
    let id = fake_room_id("mine");
    seed_room(app, &user_id(session), Seed::new(&id).platform("discord"));
    id
}

fn urlencode(room_id: &str) -> String {
    switchboard::clients::matrix::encode(room_id)
}

#[tokio::test]
async fn personal_tokens_cannot_use_linked_groups() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("linked-token").await;
    let t = create_token(&app, &user, json!({"name": "linked"})).await;
    let [wa, tg, _] = three_rooms(&app, &user, "tok");
    let groups = app.user(&user).linked();
    let gid = groups.link_id(json!({"roomIds": [wa, tg]})).await;
    for (method, path) in [
        (Method::POST, "/api/rooms/link".to_owned()),
        (Method::GET, "/api/rooms/linked".to_owned()),
        (Method::GET, group_path(&gid)),
        (Method::PUT, group_path(&gid)),
        (Method::DELETE, group_path(&gid)),
        (Method::POST, format!("{}/rooms", group_path(&gid))),
        (
            Method::DELETE,
            format!("{}/rooms/{}", group_path(&gid), urlencode(&wa)),
        ),
        (Method::GET, format!("{}/linked-group", room_path(&wa))),
    ] {
        let body = matches!(method, Method::POST | Method::PUT).then(|| json!({}));
        let resp = app.send(method.clone(), &path, Some(&t.token), body).await;
        expect_error(resp, 403, "forbidden_for_api_token").await;
    }
}

/// The helpers other areas call, in process on a database of their own.
#[tokio::test]
async fn room_for_platform_and_chat_counts_follow_groups_and_the_list_filter() {
    use switchboard::services::session::Principal;
    use switchboard::services::{linked, rooms, users};

    let dir = tempfile::tempdir().unwrap();
    let mut config = switchboard::Config::default();
    config.storage.data_dir = dir.path().join("data");
    let state = switchboard::AppState::build(config).expect("state");
    let user = users::new_user(&state, &unique_email("inproc"), None);
    let uid = user.id.clone();
    switchboard::store::users::insert(&state.store.conn().unwrap(), &user).unwrap();

    let conn = state.store.conn().unwrap();
    let now = chrono::Utc::now().timestamp();
    let add = |id: &str, platform: Option<&str>, archived: bool, membership: &str| {
        let row = switchboard::store::rooms::RoomRow {
            user_id: uid.clone(),
            room_id: id.to_owned(),
            platform: platform.map(str::to_owned),
            archived,
            membership: membership.to_owned(),
            created_at: now,
            updated_at: now,
            ..Default::default()
        };
        switchboard::store::rooms::upsert(&conn, &row).unwrap();
    };
    add("!wa:hs", Some("whatsapp"), false, "join");
    add("!wa2:hs", Some("whatsapp"), false, "invite");
    add("!tg:hs", Some("telegram"), false, "join");
    add("!dc:hs", Some("discord"), true, "join");
    add("!plain:hs", None, false, "join");
    add("!left:hs", Some("telegram"), false, "leave");
    add("!alone:hs", Some("discord"), false, "join");

    let group = linked::create(
        &state,
        &uid,
        linked::NewGroup {
            room_ids: vec!["!wa:hs".into(), "!tg:hs".into(), "!dc:hs".into()],
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(group.rooms.len(), 3);

    let target = |room: &'static str, platform: &'static str| {
        let state = state.clone();
        let uid = uid.clone();
        async move {
            linked::room_for_platform(&state, &uid, room, platform)
                .await
                .unwrap()
        }
    };
    assert_eq!(target("!wa:hs", "telegram").await, "!tg:hs");
    assert_eq!(target("!tg:hs", "whatsapp").await, "!wa:hs");
    assert_eq!(target("!wa:hs", "discord").await, "!dc:hs");
    assert_eq!(target("!wa:hs", "whatsapp").await, "!wa:hs");
    // No room of that platform in the group, or no group: the room itself.
    assert_eq!(target("!wa:hs", "signal").await, "!wa:hs");
    assert_eq!(target("!alone:hs", "telegram").await, "!alone:hs");
    assert_eq!(target("!unknown:hs", "telegram").await, "!unknown:hs");

    // Chat counts: visible (joined or invited), non-archived rooms per platform, exactly
    // what the default room list shows.
    let counts = rooms::visible_room_counts_by_platform(&state, &uid)
        .await
        .unwrap();
    let expected: std::collections::HashMap<String, i64> = [
        ("whatsapp", 2),
        ("telegram", 1),
        ("discord", 1),
        ("matrix", 1),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    assert_eq!(counts, expected);
    let principal = Principal::ApiToken {
        user_id: uid.as_str().into(),
        token_id: "t".into(),
        allowlist_version: 1,
        opted_in_version: 0,
    };
    let page = rooms::list(&state, &principal, rooms::ListParams::default())
        .await
        .unwrap();
    assert_eq!(page.rooms.len() as i64, expected.values().sum::<i64>());
}
