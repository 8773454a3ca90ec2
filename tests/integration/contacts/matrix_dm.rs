//! `POST /api/chats` on Matrix: an encrypted direct room with the person invited and
//! `m.direct` updated, checked on Synapse; the invited person's own E2EE client
//! (matrix-nio) joins and decrypts what Switchboard sends; the user directory finds people.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::*;
use crate::common::matrix;
use crate::e2ee::Nio;

/// `GET /_matrix/client/v3/{path}` as `token`: (status, JSON body).
async fn matrix_get(token: &str, path: &str) -> (u16, Value) {
    let get = reqwest::Method::GET;
    let (status, body) = crate::rooms::cs_api_status(get, &format!("/{path}"), token, None).await;
    (status.as_u16(), body)
}

#[tokio::test]
async fn a_matrix_dm_is_encrypted_direct_and_its_messages_reach_the_invited_e2ee_client() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("contacts.mx").await;
    let me = mxid(&user);
    let my_token = user.matrix_access_token.clone().expect("matrix token");
    let token = personal_token(&app, &user).await;
    let friend = matrix::register("nio").await;
    let mut nio = Nio::login_as(&friend.user_id).await;

    let created = expect_json(
        start_chat(&app, &token, "matrix", &friend.user_id).await,
        201,
    )
    .await;
    let room = created["roomId"].as_str().unwrap().to_owned();

    // On Synapse: encrypted, the friend invited as a direct chat, m.direct updated.
    let r = enc(&room);
    let (status, encryption) =
        matrix_get(&my_token, &format!("rooms/{r}/state/m.room.encryption/")).await;
    assert_eq!(status, 200, "{encryption}");
    assert_eq!(encryption["algorithm"], "m.megolm.v1.aes-sha2");
    let member_path = format!("rooms/{r}/state/m.room.member/{}", enc(&friend.user_id));
    let (_, invite) = matrix_get(&my_token, &member_path).await;
    assert_eq!(invite["membership"], "invite", "{invite}");
    assert_eq!(invite["is_direct"], true, "{invite}");
    let (_, direct) = matrix_get(
        &my_token,
        &format!("user/{}/account_data/m.direct", enc(&me)),
    )
    .await;
    assert_eq!(
        direct[&friend.user_id],
        serde_json::json!([room]),
        "{direct}"
    );

    // Listed at once, encrypted and direct with the friend as recipient.
    let got = expect_json(app.get_auth(&format!("/api/rooms/{r}"), &token).await, 200).await;
    let listed = &got["room"];
    assert_eq!(listed["encrypted"], true, "{listed}");
    assert_eq!(listed["isDirect"], true, "{listed}");
    assert_eq!(listed["recipientId"], friend.user_id.as_str(), "{listed}");
    assert_eq!(listed["platform"], Value::Null, "{listed}");
    assert_eq!(listed["membership"], "join", "{listed}");

    // Again: the same room.
    let again = expect_json(
        start_chat(&app, &token, "matrix", &friend.user_id).await,
        200,
    )
    .await;
    assert_eq!(
        (again["roomId"].as_str(), again["created"].as_bool()),
        (Some(room.as_str()), Some(false))
    );
    // The Matrix contacts without a query are the direct chats' people.
    let mine = expect_json(contacts(&app, &token, "?platform=matrix").await, 200).await;
    assert_eq!(ids(&mine), [format!("matrix:{}", friend.user_id)]);
    assert_eq!(mine["contacts"][0]["roomId"], room.as_str());

    // The friend's own E2EE client joins and decrypts what Switchboard sends.
    nio.call(serde_json::json!({"op": "join", "room": room, "timeout": 30}));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = expect_json(app.get_auth(&format!("/api/rooms/{r}"), &token).await, 200).await;
        if got["room"]["memberCount"] == 2 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the join did not reach Switchboard: {got}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let text = "hello over a brand-new encrypted DM";
    let sent = app
        .post_json(
            &format!("/api/rooms/{r}/messages"),
            Some(&token),
            serde_json::json!({"content": text, "txnId": "new-dm-1"}),
        )
        .await;
    expect_json(sent, 200).await;
    assert_eq!(nio.wait_encrypted_text(&room, text), me);
}

#[tokio::test]
async fn matrix_people_are_found_in_the_directory_and_bad_ids_are_refused() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("contacts.dir").await;
    let me = mxid(&user);
    let token = &user.access_token;
    // Someone in a public room is in everyone's directory (Synapse's default).
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let name = format!("Zed Directory {nanos}");
    let zed = matrix::register("zed").await;
    zed.set_display_name(&name).await;
    zed.create_room_with(serde_json::json!({"preset": "public_chat"}))
        .await;
    let query = format!("?platform=matrix&q={}", enc(&name));
    let deadline = Instant::now() + Duration::from_secs(30);
    let found = loop {
        let found = expect_json(contacts(&app, token, &query).await, 200).await;
        if !ids(&found).is_empty() {
            break found;
        }
        assert!(
            Instant::now() < deadline,
            "{name} not in the directory: {found}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    let zed_contact = &found["contacts"][0];
    assert_eq!(zed_contact["id"], zed.user_id.as_str(), "{found}");
    assert_eq!(zed_contact["name"], name.as_str());
    assert_eq!(zed_contact["matrixId"], zed.user_id.as_str());
    assert_eq!(zed_contact["roomId"], Value::Null);

    // Unknown users, one's own ID, and IDs off the grammar.
    let nobody = format!("@nobody_{nanos}:{}", synapse().server_name);
    expect_error(
        start_chat(&app, token, "matrix", &nobody).await,
        404,
        "identifier_not_found",
    )
    .await;
    expect_error(
        start_chat(&app, token, "matrix", &me).await,
        400,
        "invalid_request",
    )
    .await;
    for bad in [
        "alice",
        "@alice",
        "@alice:",
        "@al ice:localhost",
        "@alice:localhost/../x",
        "+4915550001",
    ] {
        eprintln!("{bad}"); // names the case when the assertion below fails
        expect_invalid_field(start_chat(&app, token, "matrix", bad).await, "identifier").await;
    }
}
