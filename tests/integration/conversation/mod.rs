//! A conversation that feels alive, against the real binary and the real Synapse, from
//! both sides: the user through Switchboard, a friend (and the user's "other Matrix
//! client", as Element would) straight through Synapse's client-server API.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{json, Value};
use switchboard::clients::matrix::encode;

use crate::common::*;
use crate::rooms::{
    create_room, cs_api, cs_api_status, matrix, matrix_id, matrix_token, matrix_user, send_text,
    wait_for_room,
};
use crate::sync::open_sse;
use crate::tokens::create_token;

mod browser;
mod concurrent;
mod drafts;
mod flags;
mod live;

const WAIT: Duration = Duration::from_secs(20);

/// A user with a personal token and a friend in a room the user created and the friend
/// joined, already stored by the sync worker.
pub(crate) struct Chat {
    pub user: Session,
    pub token: String,
    pub me: String,
    pub friend: String,
    pub friend_token: String,
    pub room: String,
}

impl Chat {
    pub async fn new(app: &TestApp, prefix: &str) -> Self {
        let user = app.sign_up(prefix).await;
        let token = create_token(app, &user, json!({"name": prefix}))
            .await
            .token;
        let me = matrix_id(&user);
        let (friend, friend_token) = matrix_user(&format!("{prefix}f")).await;
        let room = create_room(&matrix_token(&user), "Chat", false, &[&friend]).await;
        matrix().join(&friend_token, &room).await.unwrap();
        wait_for_room(app, &token, &room).await;
        Self {
            user,
            token,
            me,
            friend,
            friend_token,
            room,
        }
    }

    pub fn path(&self, tail: &str) -> String {
        format!("/api/rooms/{}/{tail}", encode(&self.room))
    }

    /// The room as the personal token lists it, polled until `pred` holds.
    pub async fn room_until(
        &self,
        app: &TestApp,
        what: &str,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        room_until(app, &self.token, &self.room, what, pred).await
    }
}

/// `room` as `token` lists it, polled until `pred` holds.
pub(crate) async fn room_until(
    app: &TestApp,
    token: &str,
    room: &str,
    what: &str,
    pred: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let found = wait_for_room(app, token, room).await;
        if pred(&found) {
            return found;
        }
        assert!(
            Instant::now() < deadline,
            "{what} not seen within {WAIT:?}: {found}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The user's push rule `kind` (`override`, `room`) for `room` on Synapse, or None.
pub(crate) async fn push_rule(mx: &str, kind: &str, room: &str) -> Option<Value> {
    let path = format!("/pushrules/global/{kind}/{}", encode(room));
    match cs_api_status(Method::GET, &path, mx, None).await {
        (status, rule) if status == 200 => Some(rule),
        (status, _) if status == 404 => None,
        (status, body) => panic!("push rule: {status} {body}"),
    }
}

/// `GET /sync` on Synapse as `token`, for `room` only: the initial sync when `since` is
/// None. Returns (the room's joined section, next_batch).
pub(crate) async fn hs_sync(token: &str, room: &str, since: Option<&str>) -> (Value, String) {
    let filter = json!({"room": {"rooms": [room], "timeline": {"limit": 1}}}).to_string();
    let mut path = format!("/sync?timeout=5000&filter={}", encode(&filter));
    if let Some(s) = since {
        path.push_str(&format!("&since={}", encode(s)));
    }
    let body = cs_api(Method::GET, &path, token, None).await;
    let next = body["next_batch"].as_str().unwrap().to_owned();
    (body["rooms"]["join"][room].clone(), next)
}

/// The ephemeral events of `kind` in a sync section.
pub(crate) fn ephemeral<'a>(section: &'a Value, kind: &str) -> Vec<&'a Value> {
    section["ephemeral"]["events"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["type"] == kind)
        .collect()
}
