//! Bridges: the provisioning proxy against the bridge emulator (a real HTTP server that
//! speaks the mautrix bridgev2 provisioning API), with real Synapse users.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::bridge::BridgeEmulator;
use crate::common::*;

mod dot_segments;
mod errors;
mod login_flows;
mod status;

/// A server configured with the given emulators, and a signed-up user.
async fn setup(emulators: &[&BridgeEmulator], prefix: &str) -> (TestApp, Session) {
    let extra: String = emulators.iter().map(|e| e.config_section()).collect();
    let app = TestApp::start_with_mail_and(extra).await;
    let user = app.sign_up(prefix).await;
    (app, user)
}

fn mxid(user: &Session) -> String {
    user.user["matrixUserId"]
        .as_str()
        .expect("matrixUserId")
        .to_owned()
}

async fn start(app: &TestApp, token: &str, platform: &str, flow: &str) -> Value {
    let started = app.api(token).bridges().start(platform, flow).await;
    started.expect("login started")
}

fn login_ids(body: &Value) -> Vec<String> {
    body["logins"]
        .as_array()
        .expect("logins")
        .iter()
        .map(|l| l["id"].as_str().unwrap().to_owned())
        .collect()
}

fn platform<'a>(list: &'a Value, id: &str) -> &'a Value {
    list["bridges"]
        .as_array()
        .expect("bridges")
        .iter()
        .find(|b| b["platform"] == id)
        .unwrap_or_else(|| panic!("{id} missing in {list}"))
}

/// Opens `GET /api/sync` for `token`.
async fn open_sync(app: &TestApp, token: &str) -> reqwest::Response {
    let resp = reqwest::Client::new()
        .get(app.url("/api/sync"))
        .bearer_auth(token)
        .send()
        .await
        .expect("sync");
    assert_eq!(resp.status(), 200);
    resp
}

/// Reads server-sent events until a `bridge.state` one matches `want`, for at most 15 s.
async fn bridge_event(
    stream: &mut reqwest::Response,
    buf: &mut String,
    want: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        while let Some(end) = buf.find("\n\n") {
            let block: String = buf.drain(..end + 2).collect();
            if !block.lines().any(|l| l == "event: bridge.state") {
                continue;
            }
            let data: String = block
                .lines()
                .filter_map(|l| l.strip_prefix("data: "))
                .collect();
            let value: Value = serde_json::from_str(&data).expect("event data");
            if want(&value) {
                return value;
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(
            !left.is_zero(),
            "no matching bridge.state event; buffer: {buf}"
        );
        match tokio::time::timeout(left, stream.chunk()).await {
            Ok(Ok(Some(chunk))) => buf.push_str(&String::from_utf8_lossy(&chunk)),
            other => panic!("event stream ended: {other:?}"),
        }
    }
}
