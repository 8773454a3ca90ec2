//! Typing both ways, others' receipts, and the privacy settings (private receipts, no
//! typing notices) as Synapse sees them.

use super::*;

/// Polls the friend's incremental `/sync` until the room's `m.typing` satisfies `pred`;
/// returns that typing list.
async fn friend_sees_typing(
    chat: &Chat,
    since: &mut String,
    pred: impl Fn(&[String]) -> bool,
) -> Vec<String> {
    let deadline = Instant::now() + WAIT;
    loop {
        let (section, next) = hs_sync(&chat.friend_token, &chat.room, Some(since)).await;
        *since = next;
        for ev in ephemeral(&section, "m.typing") {
            let ids: Vec<String> = ev["content"]["user_ids"]
                .as_array()
                .unwrap()
                .iter()
                .map(|u| u.as_str().unwrap().to_owned())
                .collect();
            if pred(&ids) {
                return ids;
            }
        }
        assert!(
            Instant::now() < deadline,
            "typing not seen on the homeserver"
        );
    }
}

#[tokio::test]
async fn typing_reaches_the_homeserver_and_the_friend_s_typing_arrives_on_the_stream() {
    let app = TestApp::start_with_mail().await;
    let chat = Chat::new(&app, "typing").await;
    let (_, mut since) = hs_sync(&chat.friend_token, &chat.room, None).await;
    let mut sse = open_sse(&app, &chat.user.access_token, None).await;

    // The user types (through a personal token, allowlist version 5): the friend's
    // homeserver sync shows it.
    let resp = app
        .send(
            Method::PUT,
            &chat.path("typing"),
            Some(&chat.token),
            Some(json!({"typing": true, "timeoutMs": 20000})),
        )
        .await;
    assert_eq!(resp.status(), 204, "{:?}", resp.text().await);
    let me = chat.me.clone();
    friend_sees_typing(&chat, &mut since, |ids| ids.contains(&me)).await;
    let resp = app
        .send(
            Method::PUT,
            &chat.path("typing"),
            Some(&chat.token),
            Some(json!({"typing": false})),
        )
        .await;
    assert_eq!(resp.status(), 204);
    friend_sees_typing(&chat, &mut since, |ids| !ids.contains(&me)).await;

    // The friend types: `typing` {roomId, userIds} on the user's stream.
    cs_api(
        Method::PUT,
        &format!(
            "/rooms/{}/typing/{}",
            encode(&chat.room),
            encode(&chat.friend)
        ),
        &chat.friend_token,
        Some(json!({"typing": true, "timeout": 20000})),
    )
    .await;
    let friend = chat.friend.clone();
    let room = chat.room.clone();
    let ev = sse
        .wait_for("typing", |e| {
            e.event == "typing" && e.data["userIds"] == json!([friend])
        })
        .await;
    assert_eq!(ev.data["roomId"], room.as_str());
    assert_eq!(ev.data["type"], "typing");
    // And stopping: an empty list.
    cs_api(
        Method::PUT,
        &format!(
            "/rooms/{}/typing/{}",
            encode(&chat.room),
            encode(&chat.friend)
        ),
        &chat.friend_token,
        Some(json!({"typing": false})),
    )
    .await;
    sse.wait_for("typing stopped", |e| {
        e.event == "typing" && e.data["userIds"] == json!([])
    })
    .await;

    // Bad input: a timeout out of range names the field; an unknown room is 404.
    let resp = app
        .send(
            Method::PUT,
            &chat.path("typing"),
            Some(&chat.token),
            Some(json!({"typing": true, "timeoutMs": 5})),
        )
        .await;
    let body = expect_error(resp, 400, "invalid_request").await;
    assert!(
        body["message"].as_str().unwrap().contains("timeoutMs"),
        "{body}"
    );
    let resp = app
        .send(
            Method::PUT,
            "/api/rooms/%21nope%3Alocalhost/typing",
            Some(&chat.token),
            Some(json!({"typing": true})),
        )
        .await;
    expect_error(resp, 404, "not_found").await;

    // Typing off: 204 and nothing sent. The friend then types: their own notice is the
    // positive marker, and the user is not in it.
    let settings = expect_json(
        app.send(
            Method::PUT,
            "/api/settings/presence",
            Some(&chat.user.access_token),
            Some(json!({"typing": false})),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(settings, json!({"readReceipts": "public", "typing": false}));
    let resp = app
        .send(
            Method::PUT,
            &chat.path("typing"),
            Some(&chat.token),
            Some(json!({"typing": true})),
        )
        .await;
    assert_eq!(resp.status(), 204);
    cs_api(
        Method::PUT,
        &format!(
            "/rooms/{}/typing/{}",
            encode(&chat.room),
            encode(&chat.friend)
        ),
        &chat.friend_token,
        Some(json!({"typing": true, "timeout": 20000})),
    )
    .await;
    let friend = chat.friend.clone();
    let ids = friend_sees_typing(&chat, &mut since, |ids| ids.contains(&friend)).await;
    assert!(
        !ids.contains(&chat.me),
        "the user's typing went out while off: {ids:?}"
    );
}

#[tokio::test]
async fn the_friend_s_receipt_is_listed_and_streamed_and_private_receipts_stay_private() {
    let app = TestApp::start_with_mail().await;
    let chat = Chat::new(&app, "receipts").await;
    let mut sse = open_sse(&app, &chat.user.access_token, None).await;

    // The user writes; the friend reads it (a public receipt on the homeserver).
    let sent = expect_json(
        app.post_json(
            &chat.path("messages"),
            Some(&chat.token),
            json!({"content": "did you see this?", "txnId": "r-1"}),
        )
        .await,
        200,
    )
    .await;
    let event_id = sent["eventId"].as_str().unwrap().to_owned();
    cs_api(
        Method::POST,
        &format!(
            "/rooms/{}/receipt/m.read/{}",
            encode(&chat.room),
            encode(&event_id)
        ),
        &chat.friend_token,
        Some(json!({})),
    )
    .await;
    let friend = chat.friend.clone();
    let ev = sse
        .wait_for("receipt", |e| {
            e.event == "receipt" && e.data["userId"] == friend.as_str()
        })
        .await;
    assert_eq!(ev.data["eventId"], event_id.as_str());
    assert_eq!(ev.data["roomId"], chat.room.as_str());
    assert!(ev.data["ts"].as_i64().unwrap() > 0);
    let listed = expect_json(app.get_auth(&chat.path("receipts"), &chat.token).await, 200).await;
    let receipts = listed["receipts"].as_array().unwrap();
    assert_eq!(receipts.len(), 1, "{listed}");
    assert_eq!(receipts[0]["userId"], chat.friend.as_str());
    assert_eq!(receipts[0]["eventId"], event_id.as_str());

    // Private receipts: the user reads the friend's message; the user's own clients get
    // `m.read.private`, the friend sees no receipt of the user.
    let settings = expect_json(
        app.send(
            Method::PUT,
            "/api/settings/presence",
            Some(&chat.user.access_token),
            Some(json!({"readReceipts": "private"})),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(settings["readReceipts"], "private");
    let bad = app
        .send(
            Method::PUT,
            "/api/settings/presence",
            Some(&chat.user.access_token),
            Some(json!({"readReceipts": "loud"})),
        )
        .await;
    let body = expect_error(bad, 400, "invalid_request").await;
    assert!(
        body["message"].as_str().unwrap().contains("readReceipts"),
        "{body}"
    );
    let got = expect_json(
        app.get_auth("/api/settings/presence", &chat.user.access_token)
            .await,
        200,
    )
    .await;
    assert_eq!(got, json!({"readReceipts": "private", "typing": true}));
    // Native only.
    expect_error(
        app.get_auth("/api/settings/presence", &chat.token).await,
        403,
        "forbidden_for_api_token",
    )
    .await;

    let theirs = send_text(&chat.friend_token, &chat.room, "read me quietly").await;
    chat.room_until(&app, "the friend's message", |r| {
        r["unreadCount"].as_i64() > Some(0)
    })
    .await;
    let read = expect_json(
        app.post_json(&chat.path("read"), Some(&chat.token), json!({}))
            .await,
        200,
    )
    .await;
    assert_eq!(read["message"], "room marked as read", "{read}");
    // The user's own initial sync: a private receipt of the user on the friend's message.
    let (mine, _) = hs_sync(&matrix_token(&chat.user), &chat.room, None).await;
    let receipts = ephemeral(&mine, "m.receipt");
    let on_theirs = receipts
        .iter()
        .map(|e| &e["content"][&theirs])
        .find(|c| !c.is_null())
        .cloned();
    let on_theirs = on_theirs.unwrap_or_else(|| panic!("no receipt on the message: {mine}"));
    assert!(
        on_theirs["m.read.private"][&chat.me].is_object(),
        "{on_theirs}"
    );
    assert!(on_theirs["m.read"].get(&chat.me).is_none(), "{on_theirs}");
    // The friend's initial sync lists every public receipt of the room: the friend's own
    // (the positive marker), none of the user's.
    let (theirs_view, _) = hs_sync(&chat.friend_token, &chat.room, None).await;
    let all = ephemeral(&theirs_view, "m.receipt");
    let content = all
        .first()
        .map(|e| e["content"].clone())
        .unwrap_or_default();
    assert!(content.to_string().contains(&chat.friend), "{content}");
    assert!(
        !content.to_string().contains(&chat.me),
        "public receipt of the user: {content}"
    );
}

#[tokio::test]
async fn personal_tokens_reach_typing_receipts_and_unread_but_not_drafts_or_settings() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("conv-token").await;
    let t = create_token(&app, &user, json!({"name": "v5"})).await.token;
    let room = "/api/rooms/%21none%3Alocalhost";
    // Past the gate (the handler answers 404 for a room the user does not have).
    for (method, tail, body) in [
        (Method::PUT, "typing", Some(json!({"typing": true}))),
        (Method::GET, "receipts", None),
        (Method::POST, "unread", None),
    ] {
        let resp = app
            .send(method, &format!("{room}/{tail}"), Some(&t), body)
            .await;
        expect_error(resp, 404, "not_found").await;
    }
    for (method, path, body) in [
        (Method::GET, format!("{room}/draft"), None),
        (
            Method::PUT,
            format!("{room}/draft"),
            Some(json!({"content": "x"})),
        ),
        (Method::DELETE, format!("{room}/draft"), None),
        (Method::GET, "/api/settings/presence".to_owned(), None),
        (
            Method::PUT,
            "/api/settings/presence".to_owned(),
            Some(json!({"typing": false})),
        ),
    ] {
        let resp = app.send(method, &path, Some(&t), body).await;
        expect_error(resp, 403, "forbidden_for_api_token").await;
    }
}
