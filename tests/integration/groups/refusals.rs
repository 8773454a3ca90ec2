//! What is refused: the homeserver's power levels (403 `not_permitted` with its reason),
//! rooms that are not the user's, bad input (101 participants, bad ids, long names and
//! reasons, oversize and non-image pictures), and personal tokens older than version 6.

use std::time::Duration;

use reqwest::Method;

use super::*;
use crate::common::bridge::Network;
use crate::search::{opt_in, token_with_id};

#[tokio::test]
async fn a_member_without_power_is_refused_with_the_homeservers_reason() {
    let (app, user) = setup(&[], "").await;
    let me = mxid(&user);
    let token = &user.access_token;
    // Bob's room: the user is invited with power level 0.
    let bob = person().await;
    let room = bob.create_room(Some("Bob's club"), &[&me], false).await;
    accept_invite(&app, token, &room).await;

    for (rest, body) in [
        ("/name", json!({"name": "Mine now"})),
        ("/topic", json!({"topic": "hijacked"})),
    ] {
        let err = expect_error(
            room_call(&app, token, Method::PUT, &room, rest, Some(body)).await,
            403,
            "not_permitted",
        )
        .await;
        let message = err["message"].as_str().unwrap();
        assert!(message.contains("M_FORBIDDEN"), "{err}");
    }
    let path = format!("/members/{}", enc(&bob.user_id));
    expect_error(
        room_call(&app, token, Method::DELETE, &room, &path, None).await,
        403,
        "not_permitted",
    )
    .await;
    let png = crate::rich::png(2, 2, 10);
    expect_error(
        upload_avatar(&app, token, &room, "image/png", &png).await,
        403,
        "not_permitted",
    )
    .await;
    // Nothing changed on Synapse; the members route says what the user may do.
    assert_eq!(
        bob.state(&room, "m.room.name", "").await["name"],
        "Bob's club"
    );
    let members = expect_json(
        room_call(&app, token, Method::GET, &room, "/members", None).await,
        200,
    )
    .await;
    assert_eq!(members["permissions"]["rename"], false, "{members}");
    assert_eq!(members["permissions"]["remove"], false, "{members}");

    // A room the user is not in: 404, before anything reaches the homeserver.
    let other = bob.create_room(Some("Private"), &[], false).await;
    expect_error(
        room_call(
            &app,
            token,
            Method::PUT,
            &other,
            "/name",
            Some(json!({"name": "x"})),
        )
        .await,
        404,
        "not_found",
    )
    .await;
}

#[tokio::test]
async fn bad_input_is_refused_naming_the_field_before_anything_is_sent() {
    let wa = BridgeEmulator::start(Network::WhatsApp).await;
    let (app, user) = setup(&[&wa], "").await;
    let token = &user.access_token;
    let bob = person().await;
    let hundred_one: Vec<String> = (0..101).map(|i| format!("+4915550{i:04}")).collect();
    let many: Vec<&str> = hundred_one.iter().map(String::as_str).collect();
    let long_name = "n".repeat(256);
    let cases: Vec<(Vec<&str>, Option<&str>, &str)> = vec![
        (many, Some("Big"), "participants: "),
        (vec![], Some("Empty"), "participants: "),
        (
            vec!["4915550001", "../whoami"],
            Some("F"),
            "participants[1]: ",
        ),
        (
            vec!["4915550001", "+49 155 50001"],
            Some("F"),
            "participants[1]: ",
        ),
        (vec!["4915550001"], Some(&long_name), "name: "),
        (vec!["4915550001"], Some("a\u{7}b"), "name: "),
    ];
    for (participants, name, field) in cases {
        let err = expect_error(
            create_group(&app, token, "whatsapp", &participants, name).await,
            400,
            "invalid_request",
        )
        .await;
        assert!(
            err["message"].as_str().unwrap().starts_with(field),
            "{field}: {err}"
        );
    }
    assert!(wa.requests().is_empty(), "invalid input reached the bridge");
    // Both forms at once, or a name for a direct chat.
    let both =
        json!({"platform": "matrix", "identifier": bob.user_id, "participants": [bob.user_id]});
    expect_error(
        app.post_json("/api/chats", Some(token), both).await,
        400,
        "invalid_request",
    )
    .await;
    let named = json!({"platform": "matrix", "identifier": bob.user_id, "name": "x"});
    expect_error(
        app.post_json("/api/chats", Some(token), named).await,
        400,
        "invalid_request",
    )
    .await;
    // The user's own Matrix ID.
    let err = expect_error(
        create_group(&app, token, "matrix", &[&bob.user_id, &mxid(&user)], None).await,
        400,
        "invalid_request",
    )
    .await;
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .starts_with("participants[1]: "),
        "{err}"
    );

    // Management input.
    let room = create_group(&app, token, "matrix", &[&bob.user_id], Some("Input")).await;
    let room = expect_json(room, 201).await["roomId"]
        .as_str()
        .unwrap()
        .to_owned();
    let bad: Vec<(Method, String, Option<Value>, &str)> = vec![
        (
            Method::PUT,
            "/name".into(),
            Some(json!({"name": "n".repeat(256)})),
            "name: ",
        ),
        (
            Method::PUT,
            "/topic".into(),
            Some(json!({"topic": "t".repeat(2049)})),
            "topic: ",
        ),
        (
            Method::POST,
            "/members".into(),
            Some(json!({"userId": "bob"})),
            "userId: ",
        ),
        (
            Method::POST,
            "/members".into(),
            Some(json!({"userId": "@bob:exa mple.org"})),
            "userId: ",
        ),
        (
            Method::DELETE,
            "/members/not-an-id".into(),
            None,
            "userId: ",
        ),
        (
            Method::DELETE,
            format!("/members/{}", enc(&bob.user_id)),
            Some(json!({"reason": "r".repeat(513)})),
            "reason: ",
        ),
        (
            Method::DELETE,
            format!("/members/{}", enc(&mxid(&user))),
            None,
            "userId: ",
        ),
    ];
    for (method, rest, body, field) in bad {
        let err = expect_error(
            room_call(&app, token, method, &room, &rest, body).await,
            400,
            "invalid_request",
        )
        .await;
        assert!(
            err["message"].as_str().unwrap().starts_with(field),
            "{rest}: {err}"
        );
    }
    // Pictures: over 5 MiB is 413; text claimed as PNG, or sent as text, is 400 naming file.
    let big = crate::rich::png(8, 8, 5 * 1024 * 1024);
    let resp = upload_avatar(&app, token, &room, "image/png", &big).await;
    expect_error(resp, 413, "payload_too_large").await;
    for ctype in ["image/png", "text/plain", "image/svg+xml"] {
        let err = expect_error(
            upload_avatar(&app, token, &room, ctype, b"<svg>not a picture</svg>").await,
            400,
            "invalid_request",
        )
        .await;
        assert!(
            err["message"].as_str().unwrap().starts_with("file: "),
            "{ctype}: {err}"
        );
    }
    // Synapse still has no avatar for the room.
    let state = bob_state_kinds(&bob, &room).await;
    assert!(!state.contains(&"m.room.avatar".to_owned()), "{state:?}");
}

async fn bob_state_kinds(bob: &MatrixUser, room: &str) -> Vec<String> {
    bob.join(room).await;
    bob.room_state(room)
        .await
        .iter()
        .filter_map(|e| e["type"].as_str().map(str::to_owned))
        .collect()
}

fn db(app: &TestApp) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(app.data_dir().join("switchboard.db")).unwrap();
    conn.busy_timeout(Duration::from_secs(5)).unwrap();
    conn
}

#[tokio::test]
async fn tokens_before_version_6_opt_in_and_mcp_has_the_same_rule() {
    let (app, user) = setup(&[], "").await;
    let bob = person().await;
    let (id, token) = token_with_id(&app, &user).await;
    db(&app)
        .execute(
            "UPDATE api_tokens SET allowlist_version = 5 WHERE id = ?1",
            [&id],
        )
        .unwrap();
    // The group form is refused; the direct form of the same route still works.
    let err = expect_error(
        create_group(&app, &token, "matrix", &[&bob.user_id], Some("G")).await,
        403,
        "forbidden_for_api_token",
    )
    .await;
    assert!(
        err["message"].as_str().unwrap().contains("version 6"),
        "{err}"
    );
    let dm = json!({"platform": "matrix", "identifier": bob.user_id});
    let dm = expect_json(app.post_json("/api/chats", Some(&token), dm).await, 201).await;
    let dm_room = dm["roomId"].as_str().unwrap().to_owned();
    for (method, rest, body) in [
        (Method::PUT, "/name", Some(json!({"name": "x"}))),
        (Method::GET, "/members", None),
        (Method::POST, "/leave", None),
    ] {
        expect_error(
            room_call(&app, &token, method, &dm_room, rest, body).await,
            403,
            "forbidden_for_api_token",
        )
        .await;
    }
    // MCP tools wrap the routes: the same refusal.
    crate::mcp::actions::enable(&app, &user, &id, true).await;
    let calls = json!([
        {"tool": "create_group", "args": {"platform": "matrix", "participants": [bob.user_id], "name": "G"}},
        {"tool": "rename_chat", "args": {"roomId": dm_room, "name": "x"}},
    ]);
    let report = crate::mcp::mcp_client(&app, &token, calls.clone()).await;
    for r in report["results"].as_array().unwrap() {
        assert_eq!(
            r["error"]["data"]["error"], "forbidden_for_api_token",
            "{report}"
        );
    }

    // After the opt-in: the MCP tools create, rename, invite and remove.
    opt_in(&app, &user, &id).await;
    let carol = person().await;
    let report = crate::mcp::mcp_client(&app, &token, json!([
        {"tool": "create_group", "args": {"platform": "matrix", "participants": [bob.user_id], "name": "G"}},
    ]))
    .await;
    let room = report["results"][0]["ok"]["roomId"]
        .as_str()
        .unwrap_or_else(|| panic!("{report}"))
        .to_owned();
    let report = crate::mcp::mcp_client(&app, &token, json!([
        {"tool": "rename_chat", "args": {"roomId": room, "name": "Renamed by MCP"}},
        {"tool": "invite", "args": {"roomId": room, "userId": carol.user_id}},
        {"tool": "remove_member", "args": {"roomId": room, "userId": carol.user_id, "reason": "test"}},
    ]))
    .await;
    for r in report["results"].as_array().unwrap() {
        assert_eq!(r["ok"]["roomId"], room.as_str(), "{report}");
    }
    bob.join(&room).await;
    assert_eq!(
        bob.state(&room, "m.room.name", "").await["name"],
        "Renamed by MCP"
    );
    let carol_now = bob.state(&room, "m.room.member", &carol.user_id).await;
    assert_eq!(carol_now["membership"], "leave", "{carol_now}");
    assert_eq!(carol_now["reason"], "test", "{carol_now}");
}
