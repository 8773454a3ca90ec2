//! SAS (emoji) verification of Switchboard's sync device with another device of the same
//! Matrix account: matrix-nio (`tests/e2ee/nio_client.py`), logged in with the account's
//! password, starts the legacy to-device flow and the test answers through
//! `/api/e2ee/verifications`, against the real Synapse.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::*;
use crate::e2ee::{enc, Nio};

mod browser;
mod flows;
mod requests;

const WAIT: Duration = Duration::from_secs(30);

/// A Switchboard user and a nio device of the user's own Matrix account.
pub(crate) struct Own {
    pub(crate) app: TestApp,
    pub(crate) session: Session,
    pub(crate) mxid: String,
    pub(crate) nio: Nio,
    pub(crate) nio_device: String,
    /// Switchboard's sync device.
    pub(crate) sync_device: String,
}

/// The sync device id, once the sync worker stored it and its keys are on Synapse.
async fn sync_device(app: &TestApp, user_id: &str) -> String {
    let deadline = Instant::now() + WAIT;
    loop {
        let row = switchboard::store::users::find(&crate::rooms::db(app), user_id)
            .unwrap()
            .expect("user row");
        if let Some(d) = row.matrix_device_id {
            return d;
        }
        assert!(Instant::now() < deadline, "no sync device within {WAIT:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

pub(crate) async fn own() -> Own {
    let app = TestApp::start_with_mail().await;
    let session = app.sign_up("verify").await;
    let user_id = session.user["id"].as_str().unwrap().to_owned();
    let mxid = session.user["matrixUserId"].as_str().unwrap().to_owned();
    let master = switchboard::crypto::MasterKey::load(&app.data_dir().join("master.key"))
        .expect("master key");
    let password = switchboard::services::matrix_sessions::matrix_password(&master, &user_id);
    let sync_device = sync_device(&app, &user_id).await;
    let mut nio = Nio::login_with(&mxid, &password).await;
    let nio_device = nio.call(json!({"op": "whoami"}))["device_id"]
        .as_str()
        .unwrap()
        .to_owned();
    Own {
        app,
        session,
        mxid,
        nio,
        nio_device,
        sync_device,
    }
}

impl Own {
    pub(crate) fn token(&self) -> &str {
        &self.session.access_token
    }

    /// nio starts a verification with the sync device; returns its id.
    pub(crate) fn nio_starts(&mut self) -> String {
        let a = self.nio.call(json!({
            "op": "sas_start", "device_id": self.sync_device, "timeout": 30,
        }));
        a["transaction_id"].as_str().unwrap().to_owned()
    }

    pub(crate) async fn list(&self) -> Vec<Value> {
        let body = expect_json(
            self.app
                .get_auth("/api/e2ee/verifications", self.token())
                .await,
            200,
        )
        .await;
        body["verifications"].as_array().unwrap().clone()
    }

    /// Polls the list until verification `id` is in `state`.
    pub(crate) async fn wait_state(&self, id: &str, state: &str) -> Value {
        self.wait_for(id, state, |_| true).await
    }

    /// Polls until `id` is `done` and the other device trusted (the trust is stored just
    /// after the state changes).
    pub(crate) async fn wait_verified(&self, id: &str) -> Value {
        self.wait_for(id, "done", |v| v["otherDeviceVerified"] == true)
            .await
    }

    async fn wait_for(&self, id: &str, state: &str, also: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            let list = self.list().await;
            if let Some(v) = list
                .iter()
                .find(|v| v["id"] == id && v["state"] == state && also(v))
            {
                return v.clone();
            }
            assert!(
                Instant::now() < deadline,
                "verification {id} not {state} within {WAIT:?}: {list:?}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    pub(crate) async fn act(&self, id: &str, action: &str, token: &str) -> reqwest::Response {
        let path = format!("/api/e2ee/verifications/{}/{action}", enc(id));
        self.app.post_json(&path, Some(token), json!({})).await
    }
}

/// The emoji symbols of the API's `[{symbol, description}]` or nio's `[[symbol,
/// description]]`. Symbols are what people compare; the English names differ between
/// clients (nio writes "Wrench" and "Thumbs up" where the spec and the crate write
/// "Spanner" and "Thumbs Up"), so the API's are only checked to be there.
pub(crate) fn emoji_of(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let (sym, desc) = match e {
                Value::Array(pair) => (&pair[0], &pair[1]),
                _ => (&e["symbol"], &e["description"]),
            };
            assert!(!desc.as_str().unwrap().is_empty(), "{e}");
            sym.as_str().unwrap().to_owned()
        })
        .collect()
}
