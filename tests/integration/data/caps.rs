//! Caps on rows a signed-in user can mint at will: personal tokens and refresh tokens.

use serde_json::json;

use crate::common::client::Refusal;
use crate::common::*;
use crate::rooms::{db, user_id};

#[tokio::test]
async fn the_51st_live_personal_token_is_409_until_one_is_revoked() {
    let app = TestApp::start_with_mail().await;
    let s = app.sign_up("cap-pat").await;
    let tokens = app.user(&s).tokens();
    let create = |name: String| tokens.create(json!({ "name": name }));
    let mut first_id = String::new();
    for i in 0..50 {
        let created = create(format!("script {i}")).await.unwrap();
        if i == 0 {
            first_id = created.id;
        }
    }
    let refused = create("one too many".to_owned()).await;
    let body = refused.refused(409, "too_many_tokens");
    assert!(body["message"].as_str().unwrap().contains("50"), "{body}");
    let listed = tokens.list().await.unwrap();
    assert_eq!(
        listed["tokens"].as_array().unwrap().len(),
        50,
        "the refused one is not stored"
    );

    // A revoked token no longer counts.
    tokens.revoke(&first_id).await.unwrap();
    create("replacement".to_owned()).await.unwrap();
    let refused = create("again too many".to_owned()).await;
    refused.refused(409, "too_many_tokens");
}

#[tokio::test]
async fn switching_to_the_current_account_in_a_loop_keeps_at_most_100_refresh_tokens() {
    let app = TestApp::start_with_mail().await;
    let s = app.sign_up("cap-switch").await;
    let uid = user_id(&s);
    let accounts = app.user(&s).accounts();
    let mut newest = String::new();
    for _ in 0..105 {
        let body = accounts.switch(&uid).await.unwrap();
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

    let session = app.anonymous().session();
    session.refresh(&newest).await.unwrap();
    // The sign-in's own refresh token was the oldest: it ended.
    let refreshed = session.refresh(&s.refresh_token).await;
    refreshed.refused(401, "unauthorized");
}
