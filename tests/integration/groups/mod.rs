//! Groups against the real binary, the real Synapse and the bridge emulator (whose
//! `create_group` makes real portal rooms): new groups on Matrix and on a bridge, managing
//! them (name, topic, picture, members, leaving) as the homeserver sees it, the
//! homeserver's refusals, and the abuse cases.

use serde_json::{json, Value};

use crate::common::bridge::BridgeEmulator;
use crate::common::matrix::{self, MatrixUser};
use crate::common::*;
pub(crate) use crate::contacts::{enc, mxid, requests_to, setup};

mod browser;
mod create;
mod leave_race;
mod manage;
mod refusals;

/// `POST /api/chats` in the group form.
pub(crate) async fn create_group(
    app: &TestApp,
    token: &str,
    platform: &str,
    participants: &[&str],
    name: Option<&str>,
) -> reqwest::Response {
    let mut body = json!({"platform": platform, "participants": participants});
    if let Some(n) = name {
        body["name"] = json!(n);
    }
    app.post_json("/api/chats", Some(token), body).await
}

/// A request to `/api/rooms/{room}{rest}` with a JSON body.
pub(crate) async fn room_call(
    app: &TestApp,
    token: &str,
    method: reqwest::Method,
    room: &str,
    rest: &str,
    body: Option<Value>,
) -> reqwest::Response {
    let path = format!("/api/rooms/{}{rest}", enc(room));
    app.send(method, &path, Some(token), body).await
}

/// `POST /api/rooms/{room}/avatar` with one `file` part.
pub(crate) async fn upload_avatar(
    app: &TestApp,
    token: &str,
    room: &str,
    ctype: &str,
    bytes: &[u8],
) -> reqwest::Response {
    let (form_type, body) = crate::rich::form(&[], Some(("pic.png", ctype, bytes)));
    app.http
        .post(app.url(&format!("/api/rooms/{}/avatar", enc(room))))
        .bearer_auth(token)
        .header("Content-Type", form_type)
        .body(body)
        .send()
        .await
        .expect("avatar upload")
}

/// The room as `GET /api/rooms` lists it (readable names for a personal token).
pub(crate) async fn listed(app: &TestApp, token: &str, room: &str) -> Option<Value> {
    let rooms = expect_json(app.get_auth("/api/rooms", token).await, 200).await;
    rooms["rooms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["roomId"] == room)
        .cloned()
}

/// A fresh Synapse user.
pub(crate) async fn person() -> MatrixUser {
    matrix::register("grp").await
}

/// The keys of the emulator's recorded `create_group` bodies.
pub(crate) fn create_group_bodies(emu: &BridgeEmulator) -> Vec<Value> {
    emu.requests()
        .into_iter()
        .filter(|r| r.path.contains("/v3/create_group/"))
        .map(|r| r.body)
        .collect()
}
