//! Validation and unknown rooms: bad queries, an empty list, static routes.

use reqwest::Method;
use serde_json::{json, Value};

use crate::common::client::Refusal;
use crate::common::*;
use crate::tokens::create_token;

use super::{list, room_path};

#[tokio::test]
async fn bad_query_values_are_400_and_unknown_rooms_are_404_never_500() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("rooms-bad").await;
    let t = create_token(&app, &user, json!({"name": "bad"})).await;
    let native = user.access_token.as_str();

    for query in [
        "?limit=0",
        "?limit=101",
        "?limit=-5",
        "?limit=abc",
        "?sortBy=bogus",
        "?archived=maybe",
        "?cursor=garbage",
        "?cursor=%7B%7D",
    ] {
        for token in [native, t.token.as_str()] {
            let listed = app.api(token).rooms().list(query).await;
            listed.refused(400, "invalid_request");
        }
    }
    // Personal tokens page by recency or unread count only.
    let listed = app.api(&t.token).rooms().list("?sortBy=importance").await;
    let body = listed.refused(400, "invalid_request");
    assert!(
        body["message"].as_str().unwrap().starts_with("sortBy:"),
        "{body}"
    );
    // Bounds are accepted.
    for query in [
        "?limit=1",
        "?limit=100",
        "?sortBy=unread&archived=all",
        "?cursor=",
    ] {
        list(&app, native, query).await;
        list(&app, &t.token, query).await;
    }
    list(&app, native, "?sortBy=importance").await;
    list(&app, native, "?sortBy=recent").await;

    // Every per-room route answers 404 `not_found` for a room the user does not have.
    let unknown = room_path("!nope:localhost");
    for (method, suffix) in [
        (Method::GET, ""),
        (Method::DELETE, ""),
        (Method::POST, "/read"),
        (Method::POST, "/archive"),
        (Method::POST, "/unarchive"),
        (Method::POST, "/mute"),
        (Method::POST, "/unmute"),
        (Method::POST, "/favorite"),
        (Method::POST, "/unfavorite"),
        (Method::POST, "/pin"),
        (Method::POST, "/unpin"),
        (Method::GET, "/linked-group"),
    ] {
        let path = format!("{unknown}{suffix}");
        let resp = app.send(method.clone(), &path, Some(native), None).await;
        expect_error(resp, 404, "not_found").await;
    }
    let rooms = app.user(&user).rooms();
    let nope = "!nope:localhost";
    let put = rooms.put(nope, json!({"encryptedName": "AAAA"})).await;
    put.refused(404, "not_found");
    // Allowlisted routes answer 404 to tokens as well.
    for (method, suffix) in [
        (Method::GET, ""),
        (Method::POST, "/read"),
        (Method::POST, "/pin"),
    ] {
        let resp = app
            .send(method, &format!("{unknown}{suffix}"), Some(&t.token), None)
            .await;
        expect_error(resp, 404, "not_found").await;
    }

    // Bad values are 400 before the room is even looked up.
    let deleted = rooms.delete(nope, "?deleteMessages=yes").await;
    deleted.refused(400, "invalid_request");
    for body in [
        json!({"encryptedName": "not base64!"}),
        json!({"encryptedAvatar": "@@@"}),
        json!({"nonce": ""}),
        json!({"encryptedName": 5}),
    ] {
        rooms.put(nope, body).await.refused(400, "invalid_request");
    }

    // Without authentication: 401.
    let listed = app.anonymous().rooms().list("").await;
    listed.refused(401, "unauthorized");
}

#[tokio::test]
async fn a_new_user_has_no_rooms() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("rooms-empty").await;
    let body = list(&app, &user.access_token, "").await;
    assert_eq!(body, json!({"rooms": [], "nextCursor": null}));
    let body = app.user(&user).rooms().filter("priority").await.unwrap();
    assert_eq!(body, json!({"rooms": []}));
}

/// Literal segments are routes of their own, not room ids.
#[tokio::test]
async fn static_routes_under_rooms_are_not_captured_by_the_room_id_route() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("rooms-routes").await;
    let t = create_token(&app, &user, json!({"name": "routes"})).await;
    let native = user.access_token.as_str();

    let body = expect_json(app.get_auth("/api/rooms/linked", native).await, 200).await;
    assert_eq!(body, json!({"groups": []}));
    let body = app.user(&user).rooms().filter("priority").await.unwrap();
    assert_eq!(body, json!({"rooms": []}));
    // POST /api/rooms/link validates its body (it is not a room called "link").
    let resp = app
        .post_json("/api/rooms/link", Some(native), json!({"roomIds": []}))
        .await;
    expect_error(resp, 400, "invalid_request").await;
    let resp = app
        .get_auth(
            &format!("/api/rooms/linked/{}", uuid::Uuid::new_v4()),
            native,
        )
        .await;
    let body = expect_error(resp, 404, "not_found").await;
    assert!(
        body["message"].as_str().unwrap().contains("linked group"),
        "{body}"
    );

    // The gate resolves the same templates: these are not the allowlisted room routes.
    for path in ["/api/rooms/linked", "/api/rooms/filter/priority"] {
        let resp = app.get_auth(path, &t.token).await;
        expect_error(resp, 403, "forbidden_for_api_token").await;
    }
    let resp = app
        .post_json("/api/rooms/link", Some(&t.token), json!({}))
        .await;
    expect_error(resp, 403, "forbidden_for_api_token").await;

    let doc: Value =
        serde_yaml::from_str(&app.get("/openapi.yaml").await.text().await.unwrap()).unwrap();
    for path in [
        "/api/rooms",
        "/api/rooms/{roomId}",
        "/api/rooms/{roomId}/read",
        "/api/rooms/{roomId}/archive",
        "/api/rooms/{roomId}/unpin",
        "/api/rooms/{roomId}/linked-group",
        "/api/rooms/filter/priority",
        "/api/rooms/link",
        "/api/rooms/linked",
        "/api/rooms/linked/{groupId}",
        "/api/rooms/linked/{groupId}/rooms",
        "/api/rooms/linked/{groupId}/rooms/{roomId}",
    ] {
        assert!(
            doc["paths"][path].is_object(),
            "{path} missing from the document"
        );
    }
}
