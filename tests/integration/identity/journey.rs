//! The identity journey of a new user, end to end through HTTP: e-mail sign-up over real
//! SMTP, a Matrix token Synapse accepts, keys, a second account, a personal token on allowed
//! and denied routes, subscription lapse and renewal, revocation.

use base64::Engine as _;
use serde_json::json;

use crate::common::client::Refusal;
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
    let mine = app.user(&me);
    let reg = mine.keys().register(json!({"publicKey": public})).await;
    assert_eq!(reg.unwrap()["keyVersion"], 1);

    // Add and switch to a second account.
    let second = unique_email("journey.second");
    let added = add_account(&app, &me, &second).await;
    let second_id = added["id"].as_str().unwrap().to_owned();
    let switched = mine.accounts().switch(&second_id).await.unwrap();
    let second_me = app.api(switched["accessToken"].as_str().unwrap()).me();
    assert_eq!(second_me.await.unwrap()["email"], second.to_lowercase());

    // A personal token: allowed route works, denied route is refused with the exact code.
    let created = mine.tokens().create_named("script").await;
    let token = created.token.clone();
    assert_eq!(token.len(), 52);
    assert!(token.starts_with("csk_"));
    let script = app.api(&token);
    let rooms = script.rooms().list("").await.unwrap();
    assert!(rooms["rooms"].is_array());
    script.me().await.refused(403, "forbidden_for_api_token");
    let info = script.keys().info().await;
    info.refused(403, "forbidden_for_api_token");

    // The admin lapses the subscription: every token request is 403 subscription_expired.
    let admin = app.sign_in(&admin_email, None).await;
    let user_id = me.user["id"].as_str().unwrap();
    let admin = app.user(&admin).admin();
    let lapsed = admin.set_subscription(user_id, json!({"active": false}));
    lapsed.await.unwrap();
    let rooms = script.rooms().list("").await;
    rooms.refused(403, "subscription_expired");
    script.me().await.refused(403, "subscription_expired");

    // Renewal restores it at once.
    let renewed = admin.set_subscription(user_id, json!({"active": true}));
    renewed.await.unwrap();
    script.rooms().list("").await.unwrap();

    // Revocation: 401 at once.
    mine.tokens().revoke(&created.id).await.unwrap();
    let rooms = script.rooms().list("").await;
    rooms.refused(401, "unauthorized");
}
