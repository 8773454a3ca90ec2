//! The identity journey of a new user, end to end through HTTP: e-mail sign-up over real
//! SMTP, a Matrix token Synapse accepts, keys, a second account, a personal token on allowed
//! and denied routes, subscription lapse and renewal, revocation.

use base64::Engine as _;
use serde_json::json;

use crate::common::*;

#[tokio::test]
async fn a_new_user_signs_up_and_uses_every_identity_feature() {
    let admin_email = unique_email("journey.admin");
    let app =
        TestApp::start_with_mail_and(format!("[auth]\nadmin_emails = [\"{admin_email}\"]\n")).await;

    // Sign up by e-mail code; the Matrix token works on Synapse.
    let me = app.sign_up("journey").await;
    let matrix_token = me.matrix_access_token.clone().expect("matrix token");
    let whoami = reqwest::Client::new()
        .get(format!(
            "{}/_matrix/client/v3/account/whoami",
            synapse().base_url
        ))
        .bearer_auth(&matrix_token)
        .send()
        .await
        .unwrap();
    let whoami = expect_json(whoami, 200).await;
    assert_eq!(whoami["user_id"], me.user["matrixUserId"]);

    // Register an X25519 key.
    let public = base64::engine::general_purpose::STANDARD.encode(
        x25519_dalek::PublicKey::from(&x25519_dalek::StaticSecret::from([9u8; 32])).as_bytes(),
    );
    let reg = app
        .post_json(
            "/api/keys/register",
            Some(&me.access_token),
            json!({"publicKey": public}),
        )
        .await;
    assert_eq!(expect_json(reg, 200).await["keyVersion"], 1);

    // Add and switch to a second account.
    let second = unique_email("journey.second");
    let added = add_account(&app, &me, &second).await;
    let second_id = added["id"].as_str().unwrap().to_owned();
    let resp = app
        .post_json(
            &format!("/api/accounts/{second_id}/switch"),
            Some(&me.access_token),
            json!({}),
        )
        .await;
    let switched = expect_json(resp, 200).await;
    let second_me = expect_json(
        app.get_auth("/api/auth/me", switched["accessToken"].as_str().unwrap())
            .await,
        200,
    )
    .await;
    assert_eq!(second_me["email"], second.to_lowercase());

    // A personal token: allowed route works, denied route is refused with the exact code.
    let resp = app
        .post_json(
            "/api/developer/tokens",
            Some(&me.access_token),
            json!({"name": "script"}),
        )
        .await;
    let created = expect_json(resp, 201).await;
    let token = created["token"].as_str().unwrap().to_owned();
    assert_eq!(token.len(), 52);
    assert!(token.starts_with("csk_"));
    let rooms = app.get_auth("/api/rooms", &token).await;
    let rooms = expect_json(rooms, 200).await;
    assert!(rooms["rooms"].is_array());
    expect_error(
        app.get_auth("/api/auth/me", &token).await,
        403,
        "forbidden_for_api_token",
    )
    .await;
    expect_error(
        app.get_auth("/api/keys/info", &token).await,
        403,
        "forbidden_for_api_token",
    )
    .await;

    // The admin lapses the subscription: every token request is 403 subscription_expired.
    let admin = app.sign_in(&admin_email, None).await;
    let user_id = me.user["id"].as_str().unwrap();
    let path = format!("/api/admin/users/{user_id}/subscription");
    let resp = app
        .send(
            reqwest::Method::PUT,
            &path,
            Some(&admin.access_token),
            Some(json!({"active": false})),
        )
        .await;
    expect_json(resp, 200).await;
    expect_error(
        app.get_auth("/api/rooms", &token).await,
        403,
        "subscription_expired",
    )
    .await;
    expect_error(
        app.get_auth("/api/auth/me", &token).await,
        403,
        "subscription_expired",
    )
    .await;

    // Renewal restores it at once.
    let resp = app
        .send(
            reqwest::Method::PUT,
            &path,
            Some(&admin.access_token),
            Some(json!({"active": true})),
        )
        .await;
    expect_json(resp, 200).await;
    expect_json(app.get_auth("/api/rooms", &token).await, 200).await;

    // Revocation: 401 at once.
    let id = created["id"].as_str().unwrap();
    let resp = app
        .send(
            reqwest::Method::DELETE,
            &format!("/api/developer/tokens/{id}"),
            Some(&me.access_token),
            None,
        )
        .await;
    expect_json(resp, 200).await;
    expect_error(
        app.get_auth("/api/rooms", &token).await,
        401,
        "unauthorized",
    )
    .await;
}
