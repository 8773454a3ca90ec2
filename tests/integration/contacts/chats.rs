//! `POST /api/chats` on a bridge: a WhatsApp chat created through the emulator (a real
//! portal room on Synapse, the ghost's invitation joined), listed and readable at once,
//! found again; unknown and invalid identifiers; the bridge's failures.

use super::*;
use crate::common::bridge::{Network, Op};

#[tokio::test]
async fn a_new_whatsapp_chat_is_listed_at_once_joined_on_synapse_and_found_again() {
    let wa = BridgeEmulator::start(Network::WhatsApp).await;
    let (app, user) = setup(&[&wa], "").await;
    let me = mxid(&user);
    let token = personal_token(&app, &user).await;

    // A phone number as people write it: normalised to E.164, percent-encoded in the path.
    let created = expect_json(
        start_chat(&app, &token, "whatsapp", " +49 (155) 50002 ").await,
        201,
    )
    .await;
    assert_eq!(sorted_keys(&created), ["created", "roomId"]);
    assert_eq!(created["created"], true);
    let room = created["roomId"].as_str().unwrap().to_owned();
    assert_eq!(
        wa.portal_of(&me, "4915550002").as_deref(),
        Some(room.as_str())
    );
    assert_eq!(
        requests_to(&wa, "/v3/resolve_identifier/"),
        ["/_matrix/provision/v3/resolve_identifier/%2B4915550002"]
    );
    assert_eq!(
        requests_to(&wa, "/v3/create_dm/"),
        ["/_matrix/provision/v3/create_dm/%2B4915550002"]
    );

    // Listed and readable at once: no waiting for the sync.
    let rooms = expect_json(app.get_auth("/api/rooms", &token).await, 200).await;
    let listed = rooms["rooms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["roomId"] == room.as_str())
        .unwrap_or_else(|| panic!("{room} not listed: {rooms}"))
        .clone();
    assert_eq!(listed["platform"], "whatsapp", "{listed}");
    assert_eq!(listed["isDirect"], true, "{listed}");
    assert_eq!(listed["membership"], "join", "{listed}");
    assert_eq!(listed["name"], "Bob Builder", "{listed}");
    let ghost = wa.ghost_of("4915550002").expect("ghost");
    assert_eq!(listed["recipientId"], ghost.user_id.as_str(), "{listed}");
    let history = app
        .get_auth(&format!("/api/messages?roomId={}", enc(&room)), &token)
        .await;
    let history = expect_json(history, 200).await;
    assert!(history["messages"].as_array().is_some(), "{history}");

    // Joined on Synapse: the ghost (who invited the user) sees the user as a member.
    assert!(ghost.joined_members(&room).await.contains(&me));
    assert_eq!(
        ghost.membership_of(&room, &me).await.as_deref(),
        Some("join")
    );
    // And the ghost can talk to the user there, through the sync as usual.
    ghost.send_text(&room, "hello from WhatsApp").await;

    // The same person again (by contact id this time): the same room, 200.
    let again = expect_json(
        start_chat(&app, &token, "whatsapp", "4915550002").await,
        200,
    )
    .await;
    assert_eq!(again["created"], false);
    assert_eq!(again["roomId"], room.as_str());
    // The contact list now names the room.
    let list = expect_json(
        contacts(&app, &token, "?platform=whatsapp&q=bob").await,
        200,
    )
    .await;
    assert_eq!(list["contacts"][0]["roomId"], room.as_str(), "{list}");
    assert_eq!(list["contacts"][0]["matrixId"], ghost.user_id.as_str());
    crate::e2ee::wait_readable(&app, &token, &room, "hello from WhatsApp").await;
}

#[tokio::test]
async fn unknown_and_invalid_identifiers_and_bridge_failures_are_told_apart() {
    let wa = BridgeEmulator::start(Network::WhatsApp).await;
    let (app, user) = setup(&[&wa], "").await;
    let token = &user.access_token;

    // Nobody has this number: 404, and no chat was asked for.
    expect_error(
        start_chat(&app, token, "whatsapp", "+4915559999").await,
        404,
        "identifier_not_found",
    )
    .await;
    assert!(requests_to(&wa, "/v3/create_dm/").is_empty());

    // Invalid identifiers never reach the bridge.
    let before = wa.requests().len();
    let long = "9".repeat(300);
    for bad in [
        "",
        "   ",
        "..",
        "../whoami",
        "a/b",
        "+12",
        "4915550001?x=1",
        "a%2Fb",
        &long,
    ] {
        eprintln!("{bad:?}"); // names the case when the assertion below fails
        expect_invalid_field(start_chat(&app, token, "whatsapp", bad).await, "identifier").await;
    }
    expect_error(
        start_chat(&app, token, "signal", "+4915550001").await,
        400,
        "invalid_platform",
    )
    .await;
    let missing = app
        .post_json("/api/chats", Some(token), json!({"platform": "whatsapp"}))
        .await;
    let body = expect_error(missing, 400, "invalid_request").await;
    assert!(
        body["message"].as_str().unwrap().starts_with("identifier"),
        "{body}"
    );
    let wrong_type = app
        .post_json(
            "/api/chats",
            Some(token),
            json!({"platform": "whatsapp", "identifier": 4915550001u64}),
        )
        .await;
    expect_error(wrong_type, 400, "invalid_request").await;
    assert_eq!(
        wa.requests().len(),
        before,
        "invalid input reached the bridge"
    );
    // Not configured here.
    expect_error(
        start_chat(&app, token, "discord", "80351110224678913").await,
        503,
        "bridge_not_configured",
    )
    .await;

    // The bridge fails to create the portal: 502 naming the bridge, nothing listed.
    wa.fail_next(
        Op::CreateDm,
        500,
        "M_UNKNOWN",
        "Failed to create portal room",
    );
    let err = expect_error(
        start_chat(&app, token, "whatsapp", "+4915550001").await,
        502,
        "bridge_error",
    )
    .await;
    let message = err["message"].as_str().unwrap();
    assert!(
        message.contains("WhatsApp") && message.contains("Failed to create portal room"),
        "{err}"
    );
    // Its resolve refuses the secret: 502 too; unreachable: 503.
    wa.fail_next(Op::Resolve, 401, "M_UNKNOWN_TOKEN", "Invalid auth token");
    expect_error(
        start_chat(&app, token, "whatsapp", "+4915550001").await,
        502,
        "bridge_auth_failed",
    )
    .await;

    // A user without a WhatsApp login: 409.
    let other = app.sign_up("contacts.nologin").await;
    let err = expect_error(
        start_chat(&app, &other.access_token, "whatsapp", "+4915550001").await,
        409,
        "not_logged_in",
    )
    .await;
    assert!(
        err["message"].as_str().unwrap().contains("WhatsApp"),
        "{err}"
    );
}
