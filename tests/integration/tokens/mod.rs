//! Personal API tokens against the running binary: creation, listing, the allowlist gate,
//! revocation, opt-in, and the subscription tier (set through the admin API and the CLI).

use std::time::Duration;

use reqwest::Method;
use serde_json::json;
use switchboard::api::routes::route_table;
use switchboard::services::allowlist::{
    personal_token_allows, ALLOWLIST_VERSION, PERSONAL_TOKEN_ALLOWLIST,
};

use crate::common::client::tokens::NewToken;
use crate::common::client::Refusal;
use crate::common::*;
use crate::server::admin::{admin_app, put_subscription, user_cli, user_id};

mod access;
mod lifecycle;

/// An allowlisted route.
const ALLOWED: &str = "/api/rooms";

pub type Token = NewToken;

pub async fn create_token(app: &TestApp, session: &Session, body: serde_json::Value) -> Token {
    app.user(session)
        .tokens()
        .create(body)
        .await
        .expect("token")
}

async fn list_tokens(app: &TestApp, session: &Session) -> serde_json::Value {
    app.user(session).tokens().list().await.expect("token list")
}

/// Asserts that `token` got past authentication, the subscription check and the
/// allowlist on `GET path` (whatever the handler then answers).
async fn assert_passes_gate(app: &TestApp, token: &str, path: &str) {
    let resp = app.get_auth(path, token).await;
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    assert!(
        status != 401 && status != 403 && status < 500,
        "GET {path} with a personal token: {status} {text}"
    );
    if status == 404 {
        let body: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(body["error"], "not_found", "{text}");
    }
}

async fn assert_subscription_expired(resp: reqwest::Response) {
    let body = expect_error(resp, 403, "subscription_expired").await;
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("active paid subscription"),
        "{body}"
    );
}

/// A concrete path of an allowlisted GET operation the served document has, if any.
async fn implemented_allowlisted_get(app: &TestApp) -> Option<String> {
    let doc: serde_json::Value =
        serde_yaml::from_str(&app.get("/openapi.yaml").await.text().await.unwrap()).unwrap();
    PERSONAL_TOKEN_ALLOWLIST
        .iter()
        .filter(|r| r.method == "GET" && r.path != "/api/sync")
        .find(|r| doc["paths"][r.path]["get"].is_object())
        .map(|r| concrete_path(r.path))
}

/// Fills every `{parameter}` of a template with a random UUID.
fn concrete_path(template: &str) -> String {
    template
        .split('/')
        .map(|seg| {
            if seg.starts_with('{') && seg.ends_with('}') {
                uuid::Uuid::new_v4().to_string()
            } else {
                seg.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

fn db(app: &TestApp) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(app.data_dir().join("switchboard.db")).unwrap();
    conn.busy_timeout(Duration::from_secs(5)).unwrap();
    conn
}
