//! Push devices: registration rules, the push configuration, test pushes through a local
//! APNs stand-in (HTTP/2 cleartext, JWT verified with the public half of the throw-away
//! key in tests/support), and removal of tokens APNs reports dead.

use reqwest::Method;
use serde_json::{json, Value};

use crate::common::client::keys::CONFIRM_KEY_DELETION;
use crate::common::client::Refusal;
use crate::common::*;

/// The APNs stand-in (moved to `common::apns`; the name stays for the other tests).
pub use crate::common::apns as standin;

use standin::ApnsStandIn;

/// A random valid APNs-like token (64 hex characters).
pub fn device_token() -> String {
    let a = uuid::Uuid::new_v4().simple().to_string();
    let b = uuid::Uuid::new_v4().simple().to_string();
    format!("{a}{b}")
}

pub async fn register(app: &TestApp, token: &str, device_token: &str) -> String {
    app.api(token).devices().register(device_token).await
}

async fn devices(app: &TestApp, token: &str) -> Vec<Value> {
    app.api(token).devices().list().await.expect("devices")
}

#[tokio::test]
async fn registration_is_validated_and_idempotent_and_never_shows_the_token() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("dev-reg").await;
    let t = &user.access_token;
    let api = app.user(&user).devices();

    // Push not configured: the documented status and 503 for a test push.
    let status = api.status().await.unwrap();
    assert_eq!(
        status,
        json!({"configured": false, "environment": null, "bundleId": null})
    );

    let bad = [
        json!({"token": "a".repeat(63)}),
        json!({"token": "a".repeat(201)}),
        json!({"token": format!("{}xyz", "a".repeat(61))}),
        json!({"token": device_token(), "deviceName": "n".repeat(101)}),
        json!({"token": device_token(), "deviceModel": "m".repeat(51)}),
        json!({"token": device_token(), "osVersion": "1".repeat(21)}),
        json!({"token": device_token(), "appVersion": "1".repeat(21)}),
        json!({"token": device_token(), "environment": "staging"}),
        json!({"deviceName": "no token"}),
        json!({"token": 42}),
    ];
    for body in bad {
        api.register_with(body)
            .await
            .refused(400, "invalid_request");
    }
    assert!(devices(&app, t).await.is_empty());

    // Exactly the limits are fine; upper-case hex is the same token.
    let dt = device_token();
    let first = api
        .register_with(
            json!({"token": dt.to_uppercase(), "deviceName": "n".repeat(100),
            "deviceModel": "m".repeat(50), "osVersion": "1".repeat(20),
            "appVersion": "2".repeat(20), "environment": "development"}),
        )
        .await
        .unwrap();
    assert!(first["message"].is_string());
    let token_id = first["tokenId"].as_str().unwrap().to_owned();
    assert!(uuid::Uuid::parse_str(&token_id).is_ok());

    // Registering again updates the same device.
    let again = register(&app, t, &dt).await;
    assert_eq!(again, token_id);
    let list = devices(&app, t).await;
    assert_eq!(list.len(), 1);
    let d = &list[0];
    assert_eq!(d["tokenId"], token_id);
    assert_eq!(d["deviceName"], "Test phone");
    assert_eq!(d["deviceModel"], "iPhone15,2");
    assert_eq!(d["osVersion"], "17.4");
    assert_eq!(d["appVersion"], "2.0.0");
    assert_eq!(d["environment"], "production", "default without [push]");
    assert_eq!(d["tokenSuffix"], &dt[dt.len() - 6..]);
    assert!(d["createdAt"].is_string());
    assert!(d["lastUsedAt"].is_null());
    assert!(
        !d.to_string().contains(&dt),
        "the raw token is never returned"
    );

    // The token is sealed at rest: not in the database files.
    for name in ["switchboard.db", "switchboard.db-wal"] {
        let bytes = std::fs::read(app.data_dir().join(name)).unwrap_or_default();
        let hay = String::from_utf8_lossy(&bytes);
        assert!(
            !hay.contains(&dt) && !hay.contains(&dt.to_uppercase()),
            "token in {name}"
        );
    }

    // Test push without [push]: 503.
    api.test_push(&token_id)
        .await
        .refused(503, "push_not_configured");

    // Unregister: 400 malformed, 404 unknown, then gone.
    api.unregister("zz").await.refused(400, "invalid_request");
    api.unregister(&device_token())
        .await
        .refused(404, "not_found");
    api.unregister(&dt).await.unwrap();
    assert!(devices(&app, t).await.is_empty());
    api.unregister(&dt).await.refused(404, "not_found");

    // Delete by tokenId: 400 malformed, 404 unknown / other user's, 200.
    let id = register(&app, t, &dt).await;
    assert_ne!(id, token_id, "a new registration after removal");
    api.delete("not-a-uuid")
        .await
        .refused(400, "invalid_request");
    api.delete(&uuid::Uuid::new_v4().to_string())
        .await
        .refused(404, "not_found");
    let other = app.sign_up("dev-other").await;
    let theirs = app.user(&other).devices();
    theirs.delete(&id).await.refused(404, "not_found");
    theirs
        .test_push(&id)
        .await
        .refused(503, "push_not_configured");
    api.delete(&id).await.unwrap();
    assert!(devices(&app, t).await.is_empty());

    // A token registered by another user moves to them.
    let mine = register(&app, t, &dt).await;
    let theirs = register(&app, &other.access_token, &dt).await;
    assert_ne!(mine, theirs);
    assert!(devices(&app, t).await.is_empty());
    assert_eq!(devices(&app, &other.access_token).await.len(), 1);

    // Personal tokens may not touch devices.
    let pat = app.user(&user).tokens().create_named("script").await.token;
    for (method, path) in [
        (Method::GET, "/api/devices".to_owned()),
        (Method::GET, "/api/devices/status".to_owned()),
        (Method::POST, "/api/devices/register".to_owned()),
        (Method::DELETE, format!("/api/devices/{mine}")),
    ] {
        let resp = app
            .send(method, &path, Some(&pat), Some(json!({"token": dt})))
            .await;
        expect_error(resp, 403, "forbidden_for_api_token").await;
    }
    // Unauthenticated: 401.
    app.anonymous()
        .devices()
        .list()
        .await
        .refused(401, "unauthorized");
}

#[tokio::test]
async fn test_pushes_reach_apns_with_a_valid_jwt_and_dead_tokens_are_removed() {
    let apns = ApnsStandIn::start().await;
    let app = TestApp::start_with_mail_and(apns.config()).await;
    let user = app.sign_up("dev-push").await;
    let t = &user.access_token;
    let api = app.user(&user).devices();

    let status = api.status().await.unwrap();
    assert_eq!(
        status,
        json!({"configured": true, "environment": "development", "bundleId": standin::BUNDLE_ID})
    );

    let good = device_token();
    let good_id = register(&app, t, &good).await;
    let list = devices(&app, t).await;
    assert_eq!(
        list[0]["environment"], "development",
        "defaults to the server's environment"
    );

    let body = api.test_push(&good_id).await.unwrap();
    assert!(body["message"].is_string());
    let seen = apns.requests_for(&good);
    assert_eq!(seen.len(), 1);
    let r = &seen[0];
    assert!(r.http2, "APNs is spoken to over HTTP/2");
    assert!(r.jwt_ok, "provider JWT verifies (ES256, kid, iss, iat)");
    assert_eq!(r.topic.as_deref(), Some(standin::BUNDLE_ID));
    assert_eq!(r.push_type.as_deref(), Some("alert"));
    assert!(r.payload["aps"]["alert"]["title"].is_string());
    assert_eq!(r.payload["aps"]["sound"], "default");
    assert_eq!(r.status, 200);
    let list = devices(&app, t).await;
    assert!(
        list[0]["lastUsedAt"].is_string(),
        "a delivered push is recorded"
    );

    // A second push reuses the cached provider token and still verifies.
    api.test_push(&good_id).await.unwrap();
    let seen = apns.requests_for(&good);
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(seen.iter().all(|r| r.jwt_ok));

    // A token APNs reports Unregistered: 502 with the reason, and the device is gone.
    let dead = device_token();
    let dead_id = register(&app, t, &dead).await;
    apns.mark_dead(&dead);
    let err = api.test_push(&dead_id).await.refused(502, "push_rejected");
    assert!(
        err["message"].as_str().unwrap().contains("Unregistered"),
        "{err}"
    );
    let ids: Vec<Value> = devices(&app, t)
        .await
        .iter()
        .map(|d| d["tokenId"].clone())
        .collect();
    assert_eq!(ids, vec![json!(good_id)]);
    api.test_push(&dead_id).await.refused(404, "not_found");
    api.test_push("nope").await.refused(400, "invalid_request");
}

async fn matrix(method: Method, path: &str, token: &str, body: Value) -> Value {
    let resp = reqwest::Client::new()
        .request(method, format!("{}{path}", synapse().base_url))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = resp.status();
    let v: Value = resp.json().await.unwrap_or(Value::Null);
    assert!(status.is_success(), "{path}: {status} {v}");
    v
}

fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[tokio::test]
async fn an_important_incoming_message_is_pushed_without_its_text() {
    let apns = ApnsStandIn::start().await;
    let app = TestApp::start_with_mail_and(apns.config()).await;
    let reader = app.sign_up("dev-important").await;
    let sender = app.sign_up("dev-sender").await;
    let device = device_token();
    register(&app, &reader.access_token, &device).await;
    let reader_mx = reader.matrix_access_token.clone().unwrap();
    let sender_mx = sender.matrix_access_token.clone().unwrap();
    let reader_id = reader.user["matrixUserId"].as_str().unwrap().to_owned();

    let room = matrix(
        Method::POST,
        "/_matrix/client/v3/createRoom",
        &sender_mx,
        json!({"preset": "private_chat", "name": "team", "invite": [reader_id]}),
    )
    .await["room_id"]
        .as_str()
        .unwrap()
        .to_owned();
    matrix(
        Method::POST,
        &format!("/_matrix/client/v3/join/{}", enc(&room)),
        &reader_mx,
        json!({}),
    )
    .await;

    // Unimportant first (group chat, no mention): no push.
    let send = |body: String| {
        let url = format!(
            "/_matrix/client/v3/rooms/{}/send/m.room.message/{}",
            enc(&room),
            uuid::Uuid::new_v4()
        );
        let sender_mx = sender_mx.clone();
        async move {
            matrix(
                Method::PUT,
                &url,
                &sender_mx,
                json!({"msgtype": "m.text", "body": body}),
            )
            .await
        }
    };
    send("just saying hi".to_owned()).await;
    // Mention + urgency: 0.10 + 0.35 + 0.30 = 0.75.
    let secret = format!("the vault code is {}", uuid::Uuid::new_v4().simple());
    let event = send(format!("{reader_id} urgent: {secret}")).await;

    apns.wait_for(&device, "the important-message push", |r| !r.is_empty())
        .await;
    // Positive marker: a second important message, sent after the first push arrived, is
    // pushed too; the unimportant one (handled before either) must not be among them.
    let marker = send(format!("{reader_id} urgent: the marker")).await;
    let pushes = apns
        .wait_for(&device, "the marker's push", |r| {
            r.iter().any(|p| p.payload["eventId"] == marker["event_id"])
        })
        .await;
    let pushed: Vec<&Value> = pushes.iter().map(|p| &p.payload["eventId"]).collect();
    assert_eq!(
        pushed,
        [&event["event_id"], &marker["event_id"]],
        "only the important messages are pushed: {pushes:?}"
    );
    let p = &pushes[0];
    assert_eq!(p.payload["type"], "message");
    assert_eq!(p.payload["roomId"], room.as_str());
    assert_eq!(p.payload["eventId"], event["event_id"]);
    assert!(
        !p.payload.to_string().contains(&secret),
        "no message text in the push"
    );
    assert!(p.jwt_ok);
}

#[tokio::test]
async fn push_keeps_working_after_the_user_deletes_their_keys() {
    use base64::Engine as _;
    let apns = ApnsStandIn::start().await;
    let app = TestApp::start_with_mail_and(apns.config()).await;
    let user = app.sign_up("dev-shred").await;
    let t = &user.access_token;
    let key = base64::engine::general_purpose::STANDARD.encode([7u8; 32]);
    let keys = app.user(&user).keys();
    keys.register(json!({"publicKey": key})).await.unwrap();
    let token = device_token();
    let id = register(&app, t, &token).await;
    keys.delete(Some(CONFIRM_KEY_DELETION)).await.unwrap();
    app.user(&user).devices().test_push(&id).await.unwrap();
    assert_eq!(
        apns.requests_for(&token).len(),
        1,
        "the push token was re-sealed, not shredded"
    );
    let list = devices(&app, t).await;
    assert!(list[0]["tokenSuffix"].is_string(), "{list:?}");
}
