//! Web Push (issue #30): the subscription API and its abuse cases ([`api`]), and delivery
//! through a push-service stand-in that checks VAPID and decrypts every push
//! ([`delivery`]).

mod api;
mod bench;
mod delivery;
pub mod devices;

use serde_json::Value;

use crate::common::push_service::PushService;
use crate::common::{expect_json, Session, TestApp};

/// Subscribes `session` with a fresh stand-in subscription; returns `(its stand-in id,
/// Switchboard's subscription id)`.
pub async fn subscribe(
    app: &TestApp,
    service: &PushService,
    session: &Session,
) -> (String, String) {
    let sub = service.subscription().await;
    let created = expect_json(
        app.post_json(
            "/api/push/subscriptions",
            Some(&session.access_token),
            serde_json::json!({"endpoint": sub["endpoint"], "keys": sub["keys"]}),
        )
        .await,
        201,
    )
    .await;
    (
        sub["id"].as_str().unwrap().to_owned(),
        created["id"].as_str().unwrap().to_owned(),
    )
}

/// `GET /api/push/vapid` → the public key, and tells the stand-in to expect it.
pub async fn vapid(app: &TestApp, service: &PushService, session: &Session) -> String {
    let v = expect_json(
        app.get_auth("/api/push/vapid", &session.access_token).await,
        200,
    )
    .await;
    let key = v["publicKey"].as_str().unwrap().to_owned();
    service.expect_vapid(&key).await;
    key
}

pub async fn subscriptions(app: &TestApp, session: &Session) -> Vec<Value> {
    expect_json(
        app.get_auth("/api/push/subscriptions", &session.access_token)
            .await,
        200,
    )
    .await["subscriptions"]
        .as_array()
        .unwrap()
        .clone()
}
