//! Drafts: shared between two sessions of the user (with `draft.updated`), sealed at rest,
//! deleted by a send, refused when too long.

use super::*;

#[tokio::test]
async fn a_draft_is_shared_between_sessions_sealed_at_rest_and_deleted_by_a_send() {
    let app = TestApp::start_with_mail().await;
    let chat = Chat::new(&app, "drafts").await;
    let laptop = &chat.user.access_token;
    let phone = app.sign_in(&chat.user.email, None).await.access_token;
    let mut phone_stream = open_sse(&app, &phone, None).await;

    expect_error(
        app.get_auth(&chat.path("draft"), laptop).await,
        404,
        "not_found",
    )
    .await;
    let text = "half-written reply zebracorn-7731";
    let saved = expect_json(
        app.send(
            Method::PUT,
            &chat.path("draft"),
            Some(laptop),
            Some(json!({"content": text})),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(saved["content"], text);
    let room = chat.room.clone();
    phone_stream
        .wait_for("draft.updated", |e| {
            e.event == "draft.updated" && e.data["roomId"] == room.as_str()
        })
        .await;
    let got = expect_json(app.get_auth(&chat.path("draft"), &phone).await, 200).await;
    assert_eq!(got["content"], text);
    assert!(
        got["updatedAt"].as_i64().unwrap() > 1_600_000_000_000,
        "{got}"
    );
    let listed = chat
        .room_until(&app, "hasDraft", |r| r["hasDraft"] == true)
        .await;
    assert_eq!(listed["hasDraft"], true);

    // Not in the database file (nor its WAL) in plain text.
    for name in ["switchboard.db", "switchboard.db-wal"] {
        let path = app.data_dir().join(name);
        if let Ok(bytes) = std::fs::read(&path) {
            assert!(
                !bytes.windows(b"zebracorn".len()).any(|w| w == b"zebracorn"),
                "draft in plain text in {name}"
            );
        }
    }

    // Too long, empty, wrong type: 400 naming the field.
    for body in [
        json!({"content": "x".repeat(16 * 1024 + 1)}),
        json!({"content": ""}),
        json!({"content": 5}),
    ] {
        let resp = app
            .send(Method::PUT, &chat.path("draft"), Some(laptop), Some(body))
            .await;
        let err = expect_error(resp, 400, "invalid_request").await;
        assert!(
            err["message"].as_str().unwrap().contains("content"),
            "{err}"
        );
    }
    let max = "é".repeat(8 * 1024);
    let resp = app
        .send(
            Method::PUT,
            &chat.path("draft"),
            Some(laptop),
            Some(json!({"content": max})),
        )
        .await;
    assert_eq!(resp.status(), 200);

    // Sending a message deletes it (and tells the other session).
    expect_json(
        app.post_json(
            &chat.path("messages"),
            Some(&chat.token),
            json!({"content": "sent", "txnId": "d-1"}),
        )
        .await,
        200,
    )
    .await;
    let room = chat.room.clone();
    phone_stream
        .wait_for("draft.updated after the send", |e| {
            e.event == "draft.updated" && e.data["roomId"] == room.as_str()
        })
        .await;
    expect_error(
        app.get_auth(&chat.path("draft"), &phone).await,
        404,
        "not_found",
    )
    .await;
    chat.room_until(&app, "hasDraft cleared", |r| r["hasDraft"] == false)
        .await;

    // DELETE: 204 with or without a draft.
    app.send(
        Method::PUT,
        &chat.path("draft"),
        Some(laptop),
        Some(json!({"content": "again"})),
    )
    .await;
    for _ in 0..2 {
        let resp = app
            .send(Method::DELETE, &chat.path("draft"), Some(laptop), None)
            .await;
        assert_eq!(resp.status(), 204);
    }
    expect_error(
        app.get_auth(&chat.path("draft"), laptop).await,
        404,
        "not_found",
    )
    .await;
}
