//! Contacts and new chats (`GET /api/contacts`, `POST /api/chats`) against the real
//! binary, the real Synapse and the bridge emulator (whose `create_dm` makes real portal
//! rooms on Synapse), with matrix-nio as the invited person's independent E2EE client.

use serde_json::{json, Value};

use crate::common::bridge::{BridgeEmulator, Login};
use crate::common::*;

mod chats;
mod listing;
mod matrix_dm;
mod tokens;

pub(crate) fn enc(s: &str) -> String {
    switchboard::clients::matrix::encode(s)
}

pub(crate) fn mxid(user: &Session) -> String {
    user.user["matrixUserId"]
        .as_str()
        .expect("matrixUserId")
        .to_owned()
}

/// A server with these emulators (and `extra` config) and a user logged in on each.
pub(crate) async fn setup(emulators: &[&BridgeEmulator], extra: &str) -> (TestApp, Session) {
    let mut config: String = emulators.iter().map(|e| e.config_section()).collect();
    config.push_str(extra);
    let app = TestApp::start_with_mail_and(config).await;
    let user = app.sign_up("contacts").await;
    for emu in emulators {
        emu.add_login(&mxid(&user), Login::connected("4915550000", "+4915550000"));
    }
    (app, user)
}

pub(crate) async fn contacts(app: &TestApp, token: &str, query: &str) -> reqwest::Response {
    app.get_auth(&format!("/api/contacts{query}"), token).await
}

pub(crate) async fn start_chat(
    app: &TestApp,
    token: &str,
    platform: &str,
    identifier: &str,
) -> reqwest::Response {
    app.post_json(
        "/api/chats",
        Some(token),
        json!({"platform": platform, "identifier": identifier}),
    )
    .await
}

/// The ids of a contact list, in order.
pub(crate) fn ids(list: &Value) -> Vec<String> {
    list["contacts"]
        .as_array()
        .expect("contacts")
        .iter()
        .map(|c| {
            format!(
                "{}:{}",
                c["platform"].as_str().unwrap(),
                c["id"].as_str().unwrap()
            )
        })
        .collect()
}

/// Requests the emulator received whose path contains `part`.
pub(crate) fn requests_to(emu: &BridgeEmulator, part: &str) -> Vec<String> {
    emu.requests()
        .into_iter()
        .filter(|r| r.path.contains(part))
        .map(|r| r.path)
        .collect()
}
