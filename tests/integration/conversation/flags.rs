//! Flags shared with the user's other Matrix clients, both ways: favourite ↔ `m.favourite`,
//! archived ↔ `m.lowpriority`, muted ↔ Element's per-room `override` push rule, marked
//! unread ↔ `m.marked_unread`. "Another client" is Synapse's client API driven directly
//! with the user's Matrix token, as Element would.

use super::*;

fn tags_path(chat: &Chat) -> String {
    format!(
        "/user/{}/rooms/{}/tags",
        encode(&chat.me),
        encode(&chat.room)
    )
}

async fn tags(chat: &Chat) -> Value {
    cs_api(
        Method::GET,
        &tags_path(chat),
        &matrix_token(&chat.user),
        None,
    )
    .await["tags"]
        .clone()
}

/// The room's `override` push rule, or None.
async fn mute_rule(chat: &Chat) -> Option<Value> {
    push_rule(&matrix_token(&chat.user), "override", &chat.room).await
}

async fn act(app: &TestApp, chat: &Chat, action: &str) {
    let resp = app
        .post_json(&chat.path(action), Some(&chat.token), json!({}))
        .await;
    assert!(
        resp.status().is_success(),
        "{action}: {:?}",
        resp.text().await
    );
}

#[tokio::test]
async fn favourite_archive_and_mute_are_shared_with_other_matrix_clients_both_ways() {
    let app = TestApp::start_with_mail().await;
    let chat = Chat::new(&app, "flags").await;
    let mx = matrix_token(&chat.user);

    // Switchboard → homeserver.
    act(&app, &chat, "favorite").await;
    act(&app, &chat, "archive").await;
    act(&app, &chat, "mute").await;
    let t = tags(&chat).await;
    assert!(
        t.get("m.favourite").is_some() && t.get("m.lowpriority").is_some(),
        "{t}"
    );
    let rule = mute_rule(&chat)
        .await
        .expect("override rule for the muted room");
    assert_eq!(rule["actions"], json!([]), "{rule}");
    assert_eq!(
        rule["conditions"][0]["pattern"],
        chat.room.as_str(),
        "{rule}"
    );
    act(&app, &chat, "unfavorite").await;
    act(&app, &chat, "unmute").await;
    let t = tags(&chat).await;
    assert!(
        t.get("m.favourite").is_none() && t.get("m.lowpriority").is_some(),
        "{t}"
    );
    assert!(mute_rule(&chat).await.is_none());
    act(&app, &chat, "unarchive").await;
    assert!(tags(&chat).await.get("m.lowpriority").is_none());

    // Another client → Switchboard, within a sync.
    cs_api(
        Method::PUT,
        &format!("{}/m.favourite", tags_path(&chat)),
        &mx,
        Some(json!({"order": 0.5})),
    )
    .await;
    chat.room_until(&app, "favourite from Element", |r| r["favorite"] == true)
        .await;
    cs_api(
        Method::PUT,
        &format!("{}/m.lowpriority", tags_path(&chat)),
        &mx,
        Some(json!({})),
    )
    .await;
    chat.room_until(&app, "low priority from Element", |r| r["archived"] == true)
        .await;
    cs_api(
        Method::PUT,
        &format!("/pushrules/global/override/{}", encode(&chat.room)),
        &mx,
        Some(json!({"actions": [], "conditions": [{"kind": "event_match", "key": "room_id", "pattern": chat.room}]})),
    )
    .await;
    chat.room_until(&app, "mute from Element", |r| r["muted"] == true)
        .await;
    cs_api(
        Method::DELETE,
        &format!("{}/m.favourite", tags_path(&chat)),
        &mx,
        None,
    )
    .await;
    cs_api(
        Method::DELETE,
        &format!("{}/m.lowpriority", tags_path(&chat)),
        &mx,
        None,
    )
    .await;
    cs_api(
        Method::DELETE,
        &format!("/pushrules/global/override/{}", encode(&chat.room)),
        &mx,
        None,
    )
    .await;
    let r = chat
        .room_until(&app, "flags cleared from Element", |r| {
            r["favorite"] == false && r["archived"] == false && r["muted"] == false
        })
        .await;
    assert_eq!(r["pinned"], false);
}

#[tokio::test]
async fn marked_unread_is_set_cleared_by_reading_and_set_by_another_client() {
    let app = TestApp::start_with_mail().await;
    let chat = Chat::new(&app, "unread").await;
    let mx = matrix_token(&chat.user);
    let data_path = format!(
        "/user/{}/rooms/{}/account_data/m.marked_unread",
        encode(&chat.me),
        encode(&chat.room)
    );
    let room = wait_for_room(&app, &chat.token, &chat.room).await;
    assert_eq!(room["markedUnread"], false);

    let resp = app
        .post_json(&chat.path("unread"), Some(&chat.token), json!({}))
        .await;
    assert_eq!(resp.status(), 204);
    let room = expect_json(
        app.get_auth(&format!("/api/rooms/{}", encode(&chat.room)), &chat.token)
            .await,
        200,
    )
    .await;
    assert_eq!(room["room"]["markedUnread"], true, "{room}");
    assert_eq!(
        cs_api(Method::GET, &data_path, &mx, None).await,
        json!({"unread": true})
    );
    // The native view carries it too.
    let native = expect_json(
        app.get_auth("/api/rooms?limit=100", &chat.user.access_token)
            .await,
        200,
    )
    .await;
    let mine = native["rooms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["roomId"] == chat.room.as_str())
        .unwrap();
    assert_eq!(mine["markedUnread"], true);
    assert_eq!(mine["hasDraft"], false);

    // Reading clears it, here and on the homeserver.
    expect_json(
        app.post_json(&chat.path("read"), Some(&chat.token), json!({}))
            .await,
        200,
    )
    .await;
    let room = expect_json(
        app.get_auth(&format!("/api/rooms/{}", encode(&chat.room)), &chat.token)
            .await,
        200,
    )
    .await;
    assert_eq!(room["room"]["markedUnread"], false);
    assert_eq!(
        cs_api(Method::GET, &data_path, &mx, None).await,
        json!({"unread": false})
    );

    // Another client marks it unread: shown within a sync; and clears it again.
    cs_api(Method::PUT, &data_path, &mx, Some(json!({"unread": true}))).await;
    chat.room_until(&app, "marked unread by Element", |r| {
        r["markedUnread"] == true
    })
    .await;
    cs_api(Method::PUT, &data_path, &mx, Some(json!({"unread": false}))).await;
    chat.room_until(&app, "unmarked by Element", |r| r["markedUnread"] == false)
        .await;

    // Rooms the user does not have: 404.
    let resp = app
        .post_json(
            "/api/rooms/%21nope%3Alocalhost/unread",
            Some(&chat.token),
            json!({}),
        )
        .await;
    expect_error(resp, 404, "not_found").await;
}

/// The room's `room` push rule (Element's "mentions and keywords"), or None.
async fn room_rule(chat: &Chat) -> Option<Value> {
    push_rule(&matrix_token(&chat.user), "room", &chat.room).await
}

async fn set_level(app: &TestApp, chat: &Chat, level: &str) {
    expect_json(
        app.send(
            Method::PUT,
            &chat.path("notifications"),
            Some(&chat.user.access_token),
            Some(json!({"level": level})),
        )
        .await,
        200,
    )
    .await;
}

#[tokio::test]
async fn notification_levels_are_elements_push_rules_both_ways() {
    let app = TestApp::start_with_mail().await;
    let chat = Chat::new(&app, "levels").await;
    let mx = matrix_token(&chat.user);

    // Switchboard → homeserver: "mentions" is a `room` rule with no actions (Element's
    // "Mentions and keywords"), "off" the `override` rule, "all" neither.
    set_level(&app, &chat, "mentions").await;
    let rule = room_rule(&chat).await.expect("room rule for mentions");
    assert_eq!(rule["actions"], json!([]), "{rule}");
    assert_eq!(rule["rule_id"], chat.room.as_str(), "{rule}");
    assert!(mute_rule(&chat).await.is_none());
    set_level(&app, &chat, "off").await;
    assert!(mute_rule(&chat).await.is_some(), "override rule when off");
    assert!(room_rule(&chat).await.is_none());
    // Unmuting goes back to the level before: mentions.
    act(&app, &chat, "unmute").await;
    assert!(mute_rule(&chat).await.is_none());
    assert!(room_rule(&chat).await.is_some(), "back to mentions");
    set_level(&app, &chat, "all").await;
    assert!(room_rule(&chat).await.is_none() && mute_rule(&chat).await.is_none());
    chat.room_until(&app, "level all", |r| r["notifications"]["level"] == "all")
        .await;

    // Element → Switchboard, within a sync.
    cs_api(
        Method::PUT,
        &format!("/pushrules/global/room/{}", encode(&chat.room)),
        &mx,
        Some(json!({"actions": []})),
    )
    .await;
    let r = chat
        .room_until(&app, "mentions from Element", |r| {
            r["notifications"]["level"] == "mentions"
        })
        .await;
    assert_eq!(r["muted"], false, "{r}");
    cs_api(
        Method::DELETE,
        &format!("/pushrules/global/room/{}", encode(&chat.room)),
        &mx,
        None,
    )
    .await;
    chat.room_until(&app, "all from Element", |r| {
        r["notifications"]["level"] == "all"
    })
    .await;
}
