//! Caps on rows a signed-in user can mint at will: personal tokens and refresh tokens.

use serde_json::json;

use crate::common::*;
use crate::rooms::{db, user_id};

async fn create(app: &TestApp, s: &Session, name: &str) -> reqwest::Response {
    app.post_json(
        "/api/developer/tokens",
        Some(&s.access_token),
        json!({"name": name}),
    )
    .await
}

#[tokio::test]
async fn the_51st_live_personal_token_is_409_until_one_is_revoked() {
    let app = TestApp::start_with_mail().await;
    let s = app.sign_up("cap-pat").await;
    let mut first_id = String::new();
    for i in 0..50 {
        let body = expect_json(create(&app, &s, &format!("script {i}")).await, 201).await;
        if i == 0 {
            first_id = body["id"].as_str().unwrap().to_owned();
        }
    }
    let body = expect_error(
        create(&app, &s, "one too many").await,
        409,
        "too_many_tokens",
    )
    .await;
    assert!(body["message"].as_str().unwrap().contains("50"), "{body}");
    let listed = expect_json(
        app.get_auth("/api/developer/tokens", &s.access_token).await,
        200,
    )
    .await;
    assert_eq!(
        listed["tokens"].as_array().unwrap().len(),
        50,
        "the refused one is not stored"
    );

    // A revoked token no longer counts.
    let resp = app
        .send(
            reqwest::Method::DELETE,
            &format!("/api/developer/tokens/{first_id}"),
            Some(&s.access_token),
            None,
        )
        .await;
    expect_json(resp, 200).await;
    expect_json(create(&app, &s, "replacement").await, 201).await;
    expect_error(
        create(&app, &s, "again too many").await,
        409,
        "too_many_tokens",
    )
    .await;
}

#[tokio::test]
async fn switching_to_the_current_account_in_a_loop_keeps_at_most_100_refresh_tokens() {
    let app = TestApp::start_with_mail().await;
    let s = app.sign_up("cap-switch").await;
    let uid = user_id(&s);
    let path = format!("/api/accounts/{uid}/switch");
    let mut newest = String::new();
    for _ in 0..105 {
        let body = expect_json(
            app.post_json(&path, Some(&s.access_token), json!({})).await,
            200,
        )
        .await;
        assert_eq!(body["account"]["id"], uid.as_str());
        newest = body["refreshToken"].as_str().unwrap().to_owned();
    }
    let rows: i64 = db(&app)
        .query_row(
            "SELECT COUNT(*) FROM refresh_tokens WHERE user_id = ?1",
            [&uid],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(rows, 100, "106 tokens issued, the 100 newest kept");

    let refresh = |token: String| {
        let app = &app;
        async move {
            app.post_json("/api/auth/refresh", None, json!({"refreshToken": token}))
                .await
        }
    };
    expect_json(refresh(newest).await, 200).await;
    // The sign-in's own refresh token was the oldest: it ended.
    expect_error(refresh(s.refresh_token.clone()).await, 401, "unauthorized").await;
}
