//! The layer every request passes, against the real binary: no `/api` answer may be kept
//! by a cache, and the gate names a request exactly as poem's router routes it.

use std::time::Duration;

use reqwest::Method;

use crate::common::*;
use crate::search::token_with_id;

fn cache_control(resp: &reqwest::Response) -> Option<String> {
    resp.headers()
        .get("cache-control")
        .map(|v| v.to_str().unwrap().to_owned())
}

#[tokio::test]
async fn every_api_answer_says_no_store() {
    let app = TestApp::start_with_mail().await;
    let session = app.sign_up("nostore").await;
    let token = personal_token(&app, &session).await;
    let cases: [(Method, &str, Option<&str>, u16); 7] = [
        // Public, signed in, a personal token, refused, unknown, wrong method, HEAD.
        (Method::GET, "/api/attestation", None, 200),
        (
            Method::GET,
            "/api/auth/me",
            Some(&session.access_token),
            200,
        ),
        (Method::GET, "/api/rooms", Some(&token), 200),
        (Method::GET, "/api/rooms", None, 401),
        (Method::GET, "/api/no-such-route", None, 404),
        (Method::GET, "/api/keys/recovery", Some(&token), 403),
        (Method::HEAD, "/api/attestation", None, 200),
    ];
    for (method, path, bearer, status) in cases {
        let resp = app.send(method.clone(), path, bearer, None).await;
        assert_eq!(resp.status(), status, "{method} {path}");
        assert_eq!(
            cache_control(&resp).as_deref(),
            Some("no-store"),
            "{method} {path}"
        );
    }
    // The sign-in answer carries the tokens themselves.
    let resp = app
        .post_json(
            "/api/auth/code",
            None,
            serde_json::json!({"email": session.email}),
        )
        .await;
    assert!(resp.status().is_success(), "{}", resp.status());
    assert_eq!(cache_control(&resp).as_deref(), Some("no-store"));
    // A rate-limit refusal too (the gate's own answer).
    let limited =
        TestApp::start_with_mail_and("[rate_limit]\nrequests = 2\nwindow = \"60s\"\n".into()).await;
    let mut last = None;
    for _ in 0..3 {
        last = Some(
            limited
                .send(Method::GET, "/api/attestation", None, None)
                .await,
        );
    }
    let last = last.unwrap();
    assert_eq!(last.status(), 429);
    assert_eq!(cache_control(&last).as_deref(), Some("no-store"));
    // The web app's files keep their own policy (they hold no private data).
    let page = app.send(Method::GET, "/", None, None).await;
    assert_eq!(cache_control(&page).as_deref(), Some("no-cache"));
}

#[tokio::test]
async fn empty_segments_are_judged_as_the_router_routes_them() {
    let app = TestApp::start_with_mail().await;
    let session = app.sign_up("emptyseg").await;
    let (id, old) = token_with_id(&app, &session).await;
    // A token from before attachments existed (allowlist version 3): attachment routes
    // are refused to it. Set before its first use, so no cached verdict predates it.
    let db = rusqlite::Connection::open(app.data_dir().join("switchboard.db")).unwrap();
    db.busy_timeout(Duration::from_secs(5)).unwrap();
    db.execute(
        "UPDATE api_tokens SET allowlist_version = 3 WHERE id = ?1",
        [&id],
    )
    .unwrap();
    // poem routes an empty `{roomId}` to the attachment operation: the gate must refuse
    // it as that operation (it used to see no operation and let the handler run).
    for path in ["/api/rooms/x/media/y", "/api/rooms//media/y"] {
        let resp = app.send(Method::GET, path, Some(&old), None).await;
        expect_error(resp, 403, "forbidden_for_api_token").await;
    }
    // Without a token the same path is an operation that needs one (401), not an
    // unknown one.
    let resp = app
        .send(Method::GET, "/api/rooms//media/y", None, None)
        .await;
    expect_error(resp, 401, "unauthorized").await;
    // A token allowed the route reaches the handler, which refuses the empty id as bad
    // input (4xx JSON), never a 5xx.
    let fresh = personal_token(&app, &session).await;
    let resp = app
        .send(Method::GET, "/api/rooms//media/y", Some(&fresh), None)
        .await;
    let status = resp.status().as_u16();
    assert!((400..500).contains(&status), "{status}");
    let body: serde_json::Value = resp.json().await.unwrap();
    assert!(body["error"].is_string(), "{body}");
    // A path no operation has stays the router's 404, with or without a token.
    for bearer in [None, Some(fresh.as_str())] {
        let resp = app
            .send(Method::GET, "/api/rooms/x/nothing", bearer, None)
            .await;
        expect_error(resp, 404, "not_found").await;
    }
}
