//! Sign-in by e-mail code over real SMTP, Matrix account creation, sessions and profile.

use serde_json::json;

use crate::common::auth_api::wrong_code;
use crate::common::client::Refusal;
use crate::common::*;

#[tokio::test]
async fn sign_up_by_mailed_code_gives_tokens_and_a_working_matrix_account() {
    let app = TestApp::start_with_mail().await;
    let email = unique_email("Alice");
    let session = app.sign_in(&email, None).await;
    assert_eq!(session.user["email"], email.to_lowercase());
    let matrix_token = session
        .matrix_access_token
        .clone()
        .expect("matrixAccessToken");
    let whoami: serde_json::Value = reqwest::Client::new()
        .get(format!(
            "{}/_matrix/client/v3/account/whoami",
            synapse().base_url
        ))
        .bearer_auth(&matrix_token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(whoami["user_id"], session.user["matrixUserId"]);

    let me = expect_json(
        app.get_auth("/api/auth/me", &session.access_token).await,
        200,
    )
    .await;
    assert_eq!(me["id"], session.user["id"]);
    assert_eq!(me["email"], email.to_lowercase());

    // Signing in again finds the same account and the same Matrix user.
    let again = app.sign_in(&email, None).await;
    assert_eq!(again.user["id"], session.user["id"]);
    assert_eq!(again.user["matrixUserId"], session.user["matrixUserId"]);
}

#[tokio::test]
async fn a_code_works_once_and_wrong_codes_are_400() {
    let app = TestApp::start_with_mail().await;
    let email = unique_email("once");
    let auth = app.auth();
    let code = auth.mailed_code(&email, 0).await;
    auth.verify_refused(&email, wrong_code(&code)).await;
    let body = expect_json(auth.verify(&email, &code).await, 200).await;
    assert_eq!(body["isNewUser"], true);
    auth.verify_refused(&email, &code).await;
}

#[tokio::test]
async fn five_wrong_tries_burn_the_code() {
    let app = TestApp::start_with_mail().await;
    let email = unique_email("burn");
    let auth = app.auth();
    let code = auth.mailed_code(&email, 0).await;
    for _ in 0..5 {
        auth.verify_refused(&email, wrong_code(&code)).await;
    }
    auth.verify_refused(&email, &code).await;
}

#[tokio::test]
async fn an_expired_code_is_refused() {
    let app = TestApp::start_with_mail_and("[auth]\ncode_ttl = \"1s\"\n".into()).await;
    let email = unique_email("expired");
    let code = app.auth().mailed_code(&email, 0).await;
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    app.auth().verify_refused(&email, &code).await;
}

#[tokio::test]
async fn at_most_three_codes_per_ten_minutes_per_address() {
    let app = TestApp::start_with_mail().await;
    let email = unique_email("limit");
    for _ in 0..3 {
        expect_json(
            app.post_json("/api/auth/code", None, json!({"email": email}))
                .await,
            200,
        )
        .await;
    }
    let resp = app
        .post_json("/api/auth/code", None, json!({"email": email}))
        .await;
    assert!(resp.headers().get("retry-after").is_some());
    expect_error(resp, 429, "rate_limited").await;
    // Another address is not affected.
    let other = unique_email("limit-other");
    expect_json(
        app.post_json("/api/auth/code", None, json!({"email": other}))
            .await,
        200,
    )
    .await;
    // The newest of the three codes signs in.
    let code = mail::wait_for_code(&email, 2).await;
    let resp = app
        .post_json(
            "/api/auth/verify",
            None,
            json!({"email": email, "code": code}),
        )
        .await;
    expect_json(resp, 200).await;
}

#[tokio::test]
async fn malformed_sign_in_input_is_400_not_500() {
    let app = TestApp::start_with_mail().await;
    let cases = [
        ("/api/auth/code", json!({"email": "not-an-address"})),
        ("/api/auth/code", json!({})),
        ("/api/auth/code", json!({"email": 5})),
        (
            "/api/auth/verify",
            json!({"email": "a@b.test", "code": "12345"}),
        ),
        (
            "/api/auth/verify",
            json!({"email": "a@b.test", "code": "abcdef"}),
        ),
        ("/api/auth/verify", json!({"email": "a@b.test"})),
        (
            "/api/auth/verify",
            json!({"email": "a@b.test", "code": "123456", "publicKey": "not base64!"}),
        ),
        ("/api/auth/refresh", json!({})),
    ];
    for (path, body) in cases {
        let resp = app.post_json(path, None, body.clone()).await;
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        assert!(status == 400, "{path} {body}: {status} {text}");
        let parsed: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(
            parsed["error"].is_string() && parsed["message"].is_string(),
            "{text}"
        );
    }
    let resp = app
        .http
        .post(app.url("/api/auth/code"))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    expect_error(resp, 400, "invalid_request").await;
}

/// poem-openapi's own parse error names only the schema ("while parsing VerifyRequest");
/// the client is told which field is missing, like every other 400.
#[tokio::test]
async fn a_missing_field_is_400_naming_the_field() {
    let app = TestApp::start_with_mail().await;
    for (path, body, field) in [
        ("/api/auth/verify", json!({"email": "x"}), "code"),
        ("/api/auth/verify", json!({"code": "123456"}), "email"),
        (
            "/api/auth/verify",
            json!({"email": "x", "code": null}),
            "code",
        ),
        ("/api/auth/refresh", json!({}), "refreshToken"),
        ("/api/auth/code", json!({}), "email"),
    ] {
        let resp = app.post_json(path, None, body).await;
        let err = expect_error(resp, 400, "invalid_request").await;
        assert_eq!(err["message"], format!("{field}: required"), "{path}");
    }
}

#[tokio::test]
async fn refresh_issues_access_tokens_until_logout() {
    let app = TestApp::start_with_mail().await;
    let session = app.sign_up("refresh").await;
    let anonymous = app.anonymous().session();
    let body = anonymous.refresh(&session.refresh_token).await.unwrap();
    let fresh = body["accessToken"].as_str().unwrap().to_owned();
    app.api(&fresh).me().await.unwrap();

    anonymous.refresh("nope").await.refused(401, "unauthorized");

    app.api(&fresh).session().logout().await.unwrap();
    let refreshed = anonymous.refresh(&session.refresh_token).await;
    refreshed.refused(401, "unauthorized");
}

#[tokio::test]
async fn profile_rules_and_unique_usernames() {
    let app = TestApp::start_with_mail().await;
    let a = app.sign_up("prof-a").await;
    let b = app.sign_up("prof-b").await;
    let name = format!("user_{}", &a.user["id"].as_str().unwrap()[..8]);
    let (alice, bob) = (app.user(&a).session(), app.user(&b).session());
    let ok = alice
        .profile(
            json!({"displayName": "Alice", "username": name, "avatarUrl": "mxc://localhost/abc"}),
        )
        .await
        .unwrap();
    assert_eq!(ok["success"], true);
    assert_eq!(ok["user"]["displayName"], "Alice");
    assert_eq!(ok["user"]["username"], name.as_str());
    let taken = bob.profile(json!({"username": name.to_uppercase()})).await;
    taken.refused(409, "username_taken");
    for bad in [
        json!({"displayName": ""}),
        json!({"displayName": "x".repeat(256)}),
        json!({"username": "ab"}),
        json!({"username": "x".repeat(51)}),
        json!({"username": "bad-name"}),
        json!({"avatarUrl": "http://insecure.example/a.png"}),
        json!({"avatarUrl": "aGVsbG8="}),
    ] {
        bob.profile(bad).await.refused(400, "invalid_request");
    }
    let png = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
    bob.profile(json!({"avatarUrl": png})).await.unwrap();
    let https = json!({"avatarUrl": "https://example.org/a.png"});
    bob.profile(https).await.unwrap();

    let done = bob.complete_onboarding(Some(json!({"displayName": "Bob"})));
    let done = done.await.unwrap();
    assert_eq!(done["user"]["onboardingCompleted"], true);
    assert_eq!(done["user"]["displayName"], "Bob");
    alice.complete_onboarding(None).await.unwrap();
}
