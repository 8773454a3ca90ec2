//! The subscription API: shapes, idempotence, limits, the SSRF rule, native-only access,
//! settings and the notification level route's validation.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use reqwest::Method;
use serde_json::{json, Value};

use super::{subscribe, subscriptions, vapid};
use crate::common::push_service::PushService;
use crate::common::{expect_error, expect_json, personal_token, sorted_keys, Session, TestApp};

#[tokio::test]
async fn subscriptions_are_idempotent_limited_listed_without_their_secret_and_native_only() {
    let service = PushService::start();
    let mut app = TestApp::start_with_mail_and(PushService::config()).await;
    let s = app.sign_up("push-api").await;

    let key = vapid(&app, &service, &s).await;
    let point = URL_SAFE_NO_PAD.decode(&key).unwrap();
    assert_eq!((point.len(), point[0]), (65, 4), "uncompressed P-256 point");
    let (sub, first) = subscribing_is_idempotent_and_lists_no_secret(&app, &service, &s).await;
    at_most_ten_and_only_the_owner_deletes(&app, &service, &s, &first).await;
    personal_tokens_and_settings(&app, &s, &sub).await;

    // The VAPID key is made once: the same after a restart.
    app.restart_after_kill9().await;
    let s2 = app.sign_up("push-api-after").await;
    let after = expect_json(app.get_auth("/api/push/vapid", &s2.access_token).await, 200).await;
    assert_eq!(after["publicKey"], key.as_str());
}

/// The same endpoint twice is the same subscription; the list shows its origin, never the
/// endpoint's secret path. Returns the service's subscription and the first answer.
async fn subscribing_is_idempotent_and_lists_no_secret(
    app: &TestApp,
    service: &PushService,
    s: &Session,
) -> (Value, Value) {
    let t = &s.access_token;
    let sub = service.subscription().await;
    let body = json!({"endpoint": sub["endpoint"], "keys": sub["keys"]});
    let first = expect_json(
        app.post_json("/api/push/subscriptions", Some(t), body.clone())
            .await,
        201,
    )
    .await;
    assert_eq!(sorted_keys(&first), ["id"]);
    let again = expect_json(
        app.post_json("/api/push/subscriptions", Some(t), body)
            .await,
        200,
    )
    .await;
    assert_eq!(again["id"], first["id"], "same endpoint, same id");

    let list = subscriptions(app, s).await;
    assert_eq!(list.len(), 1);
    let entry = &list[0];
    assert_eq!(
        sorted_keys(entry),
        [
            "createdAt",
            "endpointOrigin",
            "failures",
            "id",
            "lastSuccessAt"
        ]
    );
    assert_eq!(entry["endpointOrigin"], service.url.as_str());
    assert_eq!(entry["failures"], 0);
    assert!(entry["lastSuccessAt"].is_null());
    let path = sub["endpoint"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_owned();
    let raw = app
        .get_auth("/api/push/subscriptions", t)
        .await
        .text()
        .await
        .unwrap();
    assert!(
        !raw.contains(&path),
        "the endpoint's path is never returned"
    );
    (sub, first)
}

/// At most 10 per user; delete is 204 then 404, and another user can neither see nor delete.
async fn at_most_ten_and_only_the_owner_deletes(
    app: &TestApp,
    service: &PushService,
    s: &Session,
    first: &Value,
) {
    let t = &s.access_token;
    for _ in 1..10 {
        subscribe(app, service, s).await;
    }
    let extra = service.subscription().await;
    expect_error(
        app.post_json(
            "/api/push/subscriptions",
            Some(t),
            json!({"endpoint": extra["endpoint"], "keys": extra["keys"]}),
        )
        .await,
        400,
        "too_many_push_subscriptions",
    )
    .await;

    // Delete: 204, then 404; another user cannot see or delete it.
    let other = app.sign_up("push-api-other").await;
    let id = first["id"].as_str().unwrap();
    let path = format!("/api/push/subscriptions/{id}");
    expect_error(
        app.send(Method::DELETE, &path, Some(&other.access_token), None)
            .await,
        404,
        "not_found",
    )
    .await;
    assert!(subscriptions(app, &other).await.is_empty());
    let resp = app.send(Method::DELETE, &path, Some(t), None).await;
    assert_eq!(resp.status(), 204);
    expect_error(
        app.send(Method::DELETE, &path, Some(t), None).await,
        404,
        "not_found",
    )
    .await;
    assert_eq!(subscriptions(app, s).await.len(), 9);
}

/// Personal tokens are refused on every push route; the settings validate their field.
async fn personal_tokens_and_settings(app: &TestApp, s: &Session, sub: &Value) {
    let t = &s.access_token;
    let pat = personal_token(app, s).await;
    expect_error(
        app.get_auth("/api/push/vapid", &pat).await,
        403,
        "forbidden_for_api_token",
    )
    .await;
    expect_error(
        app.post_json(
            "/api/push/subscriptions",
            Some(&pat),
            json!({"endpoint": "https://x.example/1", "keys": sub["keys"]}),
        )
        .await,
        403,
        "forbidden_for_api_token",
    )
    .await;

    // Settings.
    let settings = expect_json(app.get_auth("/api/push/settings", t).await, 200).await;
    assert_eq!(settings, json!({"previews": true}));
    let put = expect_json(
        app.send(
            Method::PUT,
            "/api/push/settings",
            Some(t),
            Some(json!({"previews": false})),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(put, json!({"previews": false}));
    expect_error(
        app.send(
            Method::PUT,
            "/api/push/settings",
            Some(t),
            Some(json!({"previews": "no"})),
        )
        .await,
        400,
        "invalid_request",
    )
    .await;
}

#[tokio::test]
async fn bad_subscriptions_are_refused_naming_the_field_and_private_hosts_need_the_operator() {
    let service = PushService::start();
    // Default configuration: only public https endpoints.
    let app = TestApp::start_with_mail().await;
    let s = app.sign_up("push-ssrf").await;
    let t = Some(s.access_token.as_str());
    let sub = service.subscription().await;
    let keys = sub["keys"].clone();
    let post = |body: serde_json::Value| app.post_json("/api/push/subscriptions", t, body);

    for (endpoint, code, field) in [
        (sub["endpoint"].clone(), "invalid_request", "endpoint"), // http to loopback
        (json!("ftp://push.example/x"), "invalid_request", "endpoint"),
        (json!("not a url"), "invalid_request", "endpoint"),
        (
            json!("https://user:pw@push.example/x"),
            "invalid_request",
            "endpoint",
        ),
        (
            json!("https://127.0.0.1/x"),
            "push_endpoint_not_allowed",
            "endpoint",
        ),
        (
            json!("https://[::1]:8443/x"),
            "push_endpoint_not_allowed",
            "endpoint",
        ),
        (
            json!("https://169.254.169.254/latest"),
            "push_endpoint_not_allowed",
            "endpoint",
        ),
        (
            json!("https://localhost/x"),
            "push_endpoint_not_allowed",
            "endpoint",
        ),
    ] {
        let body = expect_error(
            post(json!({"endpoint": endpoint, "keys": keys})).await,
            400,
            code,
        )
        .await;
        assert!(
            body["message"].as_str().unwrap().contains(field),
            "{endpoint}: {body}"
        );
    }
    let url = "https://push.example/x";
    for (bad_keys, field) in [
        (
            json!({"p256dh": "!!!", "auth": keys["auth"]}),
            "keys.p256dh",
        ),
        (
            json!({"p256dh": URL_SAFE_NO_PAD.encode([4u8; 65]), "auth": keys["auth"]}),
            "keys.p256dh",
        ),
        (
            json!({"p256dh": keys["p256dh"], "auth": URL_SAFE_NO_PAD.encode([1u8; 15])}),
            "keys.auth",
        ),
    ] {
        let body = expect_error(
            post(json!({"endpoint": url, "keys": bad_keys})).await,
            400,
            "invalid_request",
        )
        .await;
        assert!(body["message"].as_str().unwrap().contains(field), "{body}");
    }
    expect_error(post(json!({"endpoint": url})).await, 400, "invalid_request").await;
    assert!(super::subscriptions(&app, &s).await.is_empty());

    // The level route's validation.
    let room = "/api/rooms/%21nope%3Aexample.org/notifications";
    expect_error(
        app.send(Method::PUT, room, t, Some(json!({"level": "loud"})))
            .await,
        400,
        "invalid_request",
    )
    .await;
    expect_error(
        app.send(
            Method::PUT,
            room,
            t,
            Some(json!({"level": "all", "snoozeUntil": i64::MAX})),
        )
        .await,
        400,
        "invalid_request",
    )
    .await;
    expect_error(
        app.send(Method::PUT, room, t, Some(json!({"level": "all"})))
            .await,
        404,
        "not_found",
    )
    .await;
}
