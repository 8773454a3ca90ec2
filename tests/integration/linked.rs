//! Linked room groups (`/api/rooms/link`, `/api/rooms/linked/*`,
//! `/api/rooms/{roomId}/linked-group`) against the real binary, on rooms seeded as the
//! sync worker stores them; and the in-process helpers other areas use
//! (`services::linked::room_for_platform`, `services::rooms::visible_room_counts_by_platform`).

use reqwest::Method;
use serde_json::{json, Value};

use crate::common::*;
use crate::rooms::{db, fake_room_id, room_path, seed_room, user_id, Seed};
use crate::tokens::create_token;

async fn link(app: &TestApp, token: &str, body: Value) -> reqwest::Response {
    app.post_json("/api/rooms/link", Some(token), body).await
}

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
    let token = user.access_token.as_str();
    let [wa, tg, dc] = three_rooms(&app, &user, "flow");

    let resp = link(
        &app,
        token,
        json!({"roomIds": [wa, tg], "name": "  Alice everywhere ", "encryptedName": "bmFtZQ==", "nonce": "bm9uY2U="}),
    )
    .await;
    let created = expect_json(resp, 201).await;
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
    let got = expect_json(app.get_auth(&group_path(&gid), token).await, 200).await;
    assert_eq!(got["group"], group);
    let upper = expect_json(
        app.get_auth(&group_path(&gid.to_uppercase()), token).await,
        200,
    )
    .await;
    assert_eq!(upper["group"]["groupId"], gid.as_str());
    let listed = expect_json(app.get_auth("/api/rooms/linked", token).await, 200).await;
    assert_eq!(listed["groups"], json!([group]));
    let of_room = expect_json(
        app.get_auth(&format!("{}/linked-group", room_path(&tg)), token)
            .await,
        200,
    )
    .await;
    assert_eq!(of_room["linkedGroup"]["groupId"], gid.as_str());
    let of_room = expect_json(
        app.get_auth(&format!("{}/linked-group", room_path(&dc)), token)
            .await,
        200,
    )
    .await;
    assert_eq!(of_room, json!({"linkedGroup": null}));

    // Rename: absent fields stay, null clears.
    let resp = app
        .send(
            Method::PUT,
            &group_path(&gid),
            Some(token),
            Some(json!({"name": "Alice", "nonce": null})),
        )
        .await;
    assert!(expect_json(resp, 200).await["message"].is_string());
    let got = expect_json(app.get_auth(&group_path(&gid), token).await, 200).await["group"].clone();
    assert_eq!(got["name"], "Alice");
    assert_eq!(got["encryptedName"], "bmFtZQ==");
    assert_eq!(got["nonce"], Value::Null);
    let resp = app
        .send(
            Method::PUT,
            &group_path(&gid),
            Some(token),
            Some(json!({"name": null})),
        )
        .await;
    expect_json(resp, 200).await;
    let got = expect_json(app.get_auth(&group_path(&gid), token).await, 200).await["group"].clone();
    assert_eq!(got["name"], Value::Null);

    // Delete: the rooms stay and are free to link again.
    let resp = app
        .send(Method::DELETE, &group_path(&gid), Some(token), None)
        .await;
    let body = expect_json(resp, 200).await;
    assert_eq!(body["groupId"], gid.as_str());
    expect_error(
        app.get_auth(&group_path(&gid), token).await,
        404,
        "not_found",
    )
    .await;
    let resp = app
        .send(Method::DELETE, &group_path(&gid), Some(token), None)
        .await;
    expect_error(resp, 404, "not_found").await;
    expect_json(app.get_auth(&room_path(&wa), token).await, 200).await;
    let links: i64 = db(&app)
        .query_row(
            "SELECT COUNT(*) FROM linked_group_rooms WHERE user_id = ?1",
            [&uid],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(links, 0);
    expect_json(
        link(&app, token, json!({"roomIds": [wa, tg, dc]})).await,
        201,
    )
    .await;
}

#[tokio::test]
async fn rooms_are_added_and_removed_and_the_last_room_takes_the_group_with_it() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("linked-members").await;
    let token = user.access_token.as_str();
    let [wa, tg, dc] = three_rooms(&app, &user, "mem");

    let created = expect_json(link(&app, token, json!({"roomIds": [wa, tg]})).await, 201).await;
    let gid = created["group"]["groupId"].as_str().unwrap().to_owned();
    assert_eq!(created["group"]["name"], Value::Null);
    let rooms_path = format!("{}/rooms", group_path(&gid));

    // Adding: rooms already in the group are skipped.
    let resp = app
        .post_json(&rooms_path, Some(token), json!({"roomIds": [tg, dc]}))
        .await;
    let body = expect_json(resp, 200).await;
    assert_eq!(body["addedRoomIds"], json!([dc]));
    assert!(body["message"].is_string());
    let got = expect_json(app.get_auth(&group_path(&gid), token).await, 200).await["group"].clone();
    assert_eq!(got["roomIds"], json!([wa, tg, dc]));

    // Removing: the group survives with one room and goes with its last.
    for (room, last) in [(&wa, false), (&tg, false), (&dc, true)] {
        let path = format!("{rooms_path}/{}", urlencode(room));
        let resp = app.send(Method::DELETE, &path, Some(token), None).await;
        let body = expect_json(resp, 200).await;
        assert_eq!(body["roomId"], room.as_str());
        assert_eq!(body["groupDeleted"], last, "{body}");
        if !last {
            let resp = app.send(Method::DELETE, &path, Some(token), None).await;
            expect_error(resp, 404, "not_found").await;
        }
    }
    expect_error(
        app.get_auth(&group_path(&gid), token).await,
        404,
        "not_found",
    )
    .await;
    let listed = expect_json(app.get_auth("/api/rooms/linked", token).await, 200).await;
    assert_eq!(listed, json!({"groups": []}));

    // Deleting a room from the service unlinks it; an emptied group is deleted.
    let created = expect_json(link(&app, token, json!({"roomIds": [wa, tg]})).await, 201).await;
    let gid = created["group"]["groupId"].as_str().unwrap().to_owned();
    expect_json(
        app.send(Method::DELETE, &room_path(&wa), Some(token), None)
            .await,
        200,
    )
    .await;
    let got = expect_json(app.get_auth(&group_path(&gid), token).await, 200).await["group"].clone();
    assert_eq!(got["roomIds"], json!([tg]));
    expect_json(
        app.send(Method::DELETE, &room_path(&tg), Some(token), None)
            .await,
        200,
    )
    .await;
    expect_error(
        app.get_auth(&group_path(&gid), token).await,
        404,
        "not_found",
    )
    .await;
}

#[tokio::test]
async fn a_room_is_in_at_most_one_group() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("linked-409").await;
    let token = user.access_token.as_str();
    let [wa, tg, dc] = three_rooms(&app, &user, "dup");
    let extra = fake_room_id("dupx");
    seed_room(
        &app,
        &user_id(&user),
        Seed::new(&extra).platform("telegram"),
    );

    let first = expect_json(link(&app, token, json!({"roomIds": [wa, tg]})).await, 201).await;
    let first_id = first["group"]["groupId"].as_str().unwrap().to_owned();
    let resp = link(&app, token, json!({"roomIds": [dc, tg]})).await;
    let body = expect_error(resp, 409, "rooms_already_linked").await;
    assert!(
        body["message"].as_str().unwrap().contains(tg.as_str()),
        "{body}"
    );
    // Nothing was created.
    let listed = expect_json(app.get_auth("/api/rooms/linked", token).await, 200).await;
    assert_eq!(listed["groups"].as_array().unwrap().len(), 1);

    let second = expect_json(
        link(&app, token, json!({"roomIds": [dc, extra]})).await,
        201,
    )
    .await;
    let second_id = second["group"]["groupId"].as_str().unwrap().to_owned();
    let resp = app
        .post_json(
            &format!("{}/rooms", group_path(&second_id)),
            Some(token),
            json!({"roomIds": [wa]}),
        )
        .await;
    expect_error(resp, 409, "rooms_already_linked").await;
    let got =
        expect_json(app.get_auth(&group_path(&first_id), token).await, 200).await["group"].clone();
    assert_eq!(got["roomIds"], json!([wa, tg]));
    let got =
        expect_json(app.get_auth(&group_path(&second_id), token).await, 200).await["group"].clone();
    assert_eq!(got["roomIds"], json!([dc, extra]));
}

#[tokio::test]
async fn bad_input_is_400_and_foreign_or_unknown_ids_are_404() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("linked-bad").await;
    let other = app.sign_up("linked-bad-other").await;
    let token = user.access_token.as_str();
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
        let resp = link(&app, token, body.clone()).await;
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        assert_eq!(status, 400, "{body}: {text}");
        assert!(text.contains("invalid_request"), "{text}");
    }
    // 255 characters is fine.
    expect_json(
        link(
            &app,
            token,
            json!({"roomIds": [wa, tg], "name": "é".repeat(255)}),
        )
        .await,
        201,
    )
    .await;

    // Rooms that are not the caller's: 404.
    let resp = link(
        &app,
        token,
        json!({"roomIds": [own_room(&app, &user), foreign]}),
    )
    .await;
    expect_error(resp, 404, "not_found").await;
    let resp = link(
        &app,
        token,
        json!({"roomIds": [fake_room_id("ghost"), fake_room_id("ghost")]}),
    )
    .await;
    expect_error(resp, 404, "not_found").await;

    // Malformed group ids: 400 on every group route; unknown or foreign ones: 404.
    let own = expect_json(app.get_auth("/api/rooms/linked", token).await, 200).await["groups"][0]
        ["groupId"]
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
    let rooms_path = format!("{}/rooms", group_path(&own));
    for body in [
        json!({"roomIds": []}),
        json!({"roomIds": [wa, wa]}),
        json!({}),
    ] {
        let resp = app.post_json(&rooms_path, Some(token), body).await;
        assert_eq!(resp.status().as_u16(), 400);
    }
    let resp = app
        .post_json(&rooms_path, Some(token), json!({"roomIds": [foreign]}))
        .await;
    expect_error(resp, 404, "not_found").await;
    // Renaming validates like creating.
    for body in [
        json!({"name": "y".repeat(256)}),
        json!({"encryptedName": "%%%"}),
        json!({"nonce": 7}),
    ] {
        let resp = app
            .send(Method::PUT, &group_path(&own), Some(token), Some(body))
            .await;
        expect_error(resp, 400, "invalid_request").await;
    }
    // The foreign user's group is intact and unseen.
    let listed = expect_json(
        app.get_auth("/api/rooms/linked", &other.access_token).await,
        200,
    )
    .await;
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
    let created = expect_json(
        link(&app, &user.access_token, json!({"roomIds": [wa, tg]})).await,
        201,
    )
    .await;
    let gid = created["group"]["groupId"].as_str().unwrap().to_owned();
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
        user_id: uid.clone(),
        token_id: "t".into(),
        allowlist_version: 1,
        opted_in_version: 0,
    };
    let page = rooms::list(&state, &principal, rooms::ListParams::default())
        .await
        .unwrap();
    assert_eq!(page.rooms.len() as i64, expected.values().sum::<i64>());
}
