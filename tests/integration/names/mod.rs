//! Who said what (issue #38) against the real Synapse: the sender's display name and avatar
//! on message objects of both views (the native one opened with the user's key), the name
//! as it was when sent, the member avatar route, and the rooms' last message following new
//! messages, edits and redactions.

use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use reqwest::Method;
use serde_json::{json, Value};
use switchboard::crypto::{open_envelope, Envelope};
use x25519_dalek::StaticSecret;

use crate::common::matrix::{self as mx, MatrixUser};
use crate::common::*;
use crate::messages::{decrypt, register_key};

mod backfill;
mod browser;
mod search;

const WAIT: Duration = Duration::from_secs(30);
/// A valid 1×1 PNG: Synapse decodes it and makes its thumbnails.
pub(crate) const PNG_1X1: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

fn enc(s: &str) -> String {
    switchboard::clients::matrix::encode(s)
}

/// A Switchboard user with a personal token and a registered key, and a friend on Synapse
/// (display name "Anna Berg", an avatar) in a room the user made.
struct Scene {
    app: TestApp,
    session: Session,
    token: String,
    secret: StaticSecret,
    me: MatrixUser,
    anna: MatrixUser,
    avatar: String,
    room: String,
}

async fn scene() -> Scene {
    let app = TestApp::start_with_mail().await;
    let session = app.sign_up("names").await;
    let (_, token) = crate::search::token_with_id(&app, &session).await;
    let secret = register_key(&app, &session).await;
    let me = crate::search::me_on_matrix(&session);
    let anna = mx::register("anna").await;
    anna.set_display_name("Anna Berg").await;
    let avatar = anna
        .upload(STANDARD.decode(PNG_1X1).unwrap(), "image/png")
        .await;
    anna.set_avatar_url(&avatar).await;
    let room = me
        .create_room(Some("Book club"), &[&anna.user_id], false)
        .await;
    anna.join(&room).await;
    Scene {
        app,
        session,
        token,
        secret,
        me,
        anna,
        avatar,
        room,
    }
}

impl Scene {
    /// Polls the readable history until the message `event` is stored; returns it.
    async fn readable(&self, event: &str) -> Value {
        let path = format!("/api/messages?roomId={}&limit=100", enc(&self.room));
        let deadline = Instant::now() + WAIT;
        loop {
            let resp = self.app.get_auth(&path, &self.token).await;
            // 404 until the sync worker has stored the room.
            let page: Value = if resp.status().as_u16() == 404 {
                Value::Null
            } else {
                expect_json(resp, 200).await
            };
            if let Some(m) = page["messages"]
                .as_array()
                .and_then(|ms| ms.iter().find(|m| m["eventId"] == event))
            {
                return m.clone();
            }
            assert!(Instant::now() < deadline, "{event} never stored: {page}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The native message `event` (stored already) and its opened content.
    async fn native(&self, event: &str) -> (Value, Value) {
        let path = format!("/api/messages?roomId={}&limit=100", enc(&self.room));
        let page = expect_json(
            self.app.get_auth(&path, &self.session.access_token).await,
            200,
        )
        .await;
        let m = page["messages"]
            .as_array()
            .and_then(|ms| ms.iter().find(|m| m["eventId"] == event))
            .unwrap_or_else(|| panic!("{event} not in the native page: {page}"))
            .clone();
        let opened = decrypt(&self.secret, &m);
        (m, opened)
    }

    /// Polls the readable room until its `lastMessage` satisfies `ok`; returns it.
    async fn last_message(&self, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
        let path = format!("/api/rooms/{}", enc(&self.room));
        let deadline = Instant::now() + WAIT;
        loop {
            let resp = self.app.get_auth(&path, &self.token).await;
            let body: Value = if resp.status().as_u16() == 404 {
                Value::Null // not stored yet
            } else {
                expect_json(resp, 200).await
            };
            let last = body["room"]["lastMessage"].clone();
            if ok(&last) {
                return last;
            }
            assert!(Instant::now() < deadline, "{what}: lastMessage is {last}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The native room's `sealedLastMessage`, opened with the user's key.
    async fn sealed_last_message(&self) -> Value {
        let path = format!("/api/rooms/{}", enc(&self.room));
        let body = expect_json(
            self.app.get_auth(&path, &self.session.access_token).await,
            200,
        )
        .await;
        let room = &body["room"];
        assert!(
            room.get("lastMessage").is_none(),
            "plain in the native view: {room}"
        );
        let s = &room["sealedLastMessage"];
        let env = Envelope::from_base64(
            s["ephemeralPubkey"].as_str().expect("sealedLastMessage"),
            s["nonce"].as_str().unwrap(),
            s["ciphertext"].as_str().unwrap(),
        )
        .unwrap();
        serde_json::from_slice(&open_envelope(&self.secret, &env).unwrap()).unwrap()
    }
}

#[tokio::test]
async fn a_friends_display_name_is_on_both_views_and_a_rename_leaves_old_messages() {
    let s = scene().await;
    let first = s.anna.send_text(&s.room, "see you Saturday").await;
    let avatar_path = format!(
        "/api/rooms/{}/members/{}/avatar",
        enc(&s.room),
        enc(&s.anna.user_id)
    );

    let m = s.readable(&first).await;
    assert_eq!(m["senderId"], s.anna.user_id.as_str(), "{m}");
    assert_eq!(m["senderName"], "Anna Berg", "{m}");
    assert_eq!(m["senderAvatarUrl"], avatar_path.as_str(), "{m}");
    // Native: the name is content, sealed with the text; nothing of it in the clear.
    let (native, opened) = s.native(&first).await;
    assert!(native.get("senderName").is_none(), "{native}");
    assert!(native.get("senderAvatarUrl").is_none(), "{native}");
    assert_eq!(opened["senderName"], "Anna Berg", "{opened}");
    assert_eq!(opened["senderAvatarUrl"], avatar_path.as_str(), "{opened}");
    assert_eq!(opened["body"], "see you Saturday");

    // A later rename is a state event: the old message keeps the name it was sent with,
    // the next one carries the new name.
    s.anna.set_display_name("Anna B. Svensson").await;
    // Synapse may carry the rename into the room's member state in the background: the next
    // message is sent once the room has it.
    let deadline = Instant::now() + WAIT;
    while s
        .anna
        .member_display_name(&s.room, &s.anna.user_id)
        .await
        .as_deref()
        != Some("Anna B. Svensson")
    {
        assert!(
            Instant::now() < deadline,
            "the rename never reached the room"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let second = s.anna.send_text(&s.room, "bring the book").await;
    let m2 = s.readable(&second).await;
    assert_eq!(m2["senderName"], "Anna B. Svensson", "{m2}");
    let m1 = s.readable(&first).await;
    assert_eq!(m1["senderName"], "Anna Berg", "{m1}");
    let (_, opened1) = s.native(&first).await;
    assert_eq!(opened1["senderName"], "Anna Berg", "{opened1}");
    let (_, opened2) = s.native(&second).await;
    assert_eq!(opened2["senderName"], "Anna B. Svensson", "{opened2}");

    // The user's own message: their own name (no avatar set: null).
    let mine = expect_json(
        s.app
            .send(
                Method::POST,
                &format!("/api/rooms/{}/messages", enc(&s.room)),
                Some(&s.token),
                Some(json!({"content": "I will", "txnId": "names-1"})),
            )
            .await,
        200,
    )
    .await;
    let own = s.readable(mine["eventId"].as_str().unwrap()).await;
    assert_eq!(own["isMine"], true, "{own}");
    assert!(own["senderAvatarUrl"].is_null(), "{own}");
    assert!(
        own["senderName"].as_str().is_some_and(|n| !n.is_empty()),
        "{own}"
    );
}

#[tokio::test]
async fn the_avatar_route_serves_the_members_avatar_and_refuses_the_rest() {
    let s = scene().await;
    let first = s.anna.send_text(&s.room, "hello").await;
    let m = s.readable(&first).await;
    let url = m["senderAvatarUrl"]
        .as_str()
        .expect("senderAvatarUrl")
        .to_owned();

    // The bytes are the homeserver's thumbnail of Anna's avatar, fetched as the user.
    let (status, expected) = s.me.thumbnail(&s.avatar, 800, 600).await;
    assert_eq!(status, 200, "Synapse's own thumbnail");
    for bearer in [&s.token, &s.session.access_token] {
        let resp = s.app.get_auth(&url, bearer).await;
        assert_eq!(resp.status().as_u16(), 200);
        let h = |n: &str| {
            resp.headers()
                .get(n)
                .map(|v| v.to_str().unwrap().to_owned())
                .unwrap_or_default()
        };
        assert!(
            h("content-type").starts_with("image/"),
            "{}",
            h("content-type")
        );
        assert_eq!(h("x-content-type-options"), "nosniff");
        assert!(h("content-disposition").starts_with("attachment"));
        assert_eq!(resp.bytes().await.unwrap().to_vec(), expected);
    }

    let avatar = |room: &str, member: &str| {
        format!("/api/rooms/{}/members/{}/avatar", enc(room), enc(member))
    };
    // A member without an avatar (the user): 404.
    let resp = s
        .app
        .get_auth(&avatar(&s.room, &s.me.user_id), &s.token)
        .await;
    expect_error(resp, 404, "not_found").await;
    // Someone who is not a member of the room: 404.
    let resp = s
        .app
        .get_auth(&avatar(&s.room, "@stranger:localhost"), &s.token)
        .await;
    expect_error(resp, 404, "not_found").await;
    // A room that is not the user's: 404, even for a real member of it.
    let other = s.anna.create_room(Some("private"), &[], false).await;
    let resp = s
        .app
        .get_auth(&avatar(&other, &s.anna.user_id), &s.token)
        .await;
    expect_error(resp, 404, "not_found").await;
    // Another Switchboard user cannot read the avatars of this user's room.
    let eve = s.app.sign_up("names.eve").await;
    let resp = s
        .app
        .get_auth(&avatar(&s.room, &s.anna.user_id), &eve.access_token)
        .await;
    expect_error(resp, 404, "not_found").await;
    // Not a Matrix user ID: 400 naming the field.
    let resp = s.app.get_auth(&avatar(&s.room, "anna"), &s.token).await;
    let err = expect_error(resp, 400, "invalid_request").await;
    assert!(err["message"].as_str().unwrap().contains("userId"), "{err}");
    // No token: 401.
    let resp = s.app.send(Method::GET, &url, None, None).await;
    assert_eq!(resp.status().as_u16(), 401);

    // A personal token from before allowlist version 5 (changed in the database before its
    // first use: the server caches the tokens it has seen) needs its opt-in for the route.
    let (old_id, old) = crate::search::token_with_id(&s.app, &s.session).await;
    let conn = rusqlite::Connection::open(s.app.data_dir().join("switchboard.db")).unwrap();
    conn.busy_timeout(Duration::from_secs(5)).unwrap();
    conn.execute(
        "UPDATE api_tokens SET allowlist_version = 4, opted_in_version = 0 WHERE id = ?1",
        [&old_id],
    )
    .unwrap();
    let resp = s.app.get_auth(&url, &old).await;
    expect_error(resp, 403, "forbidden_for_api_token").await;
    // The names themselves ride on the history, which the old token keeps.
    let path = format!("/api/messages?roomId={}&limit=100", enc(&s.room));
    let page = expect_json(s.app.get_auth(&path, &old).await, 200).await;
    assert_eq!(page["messages"][0]["senderName"], "Anna Berg", "{page}");
}

#[tokio::test]
async fn the_last_message_follows_new_messages_edits_and_redactions() {
    let s = scene().await;
    let first = s.anna.send_text(&s.room, "see you Saturday").await;
    let last = s
        .last_message("first message", |l| l["eventId"] == first.as_str())
        .await;
    assert_eq!(
        (
            &last["senderName"],
            &last["isMine"],
            &last["msgtype"],
            &last["text"]
        ),
        (
            &json!("Anna Berg"),
            &json!(false),
            &json!("m.text"),
            &json!("see you Saturday")
        ),
        "{last}"
    );
    assert!(last["ts"].as_i64().is_some_and(|t| t > 0), "{last}");

    // A new message takes over.
    let long = "x".repeat(300);
    let second = s.anna.send_text(&s.room, &long).await;
    let last = s
        .last_message("second message", |l| l["eventId"] == second.as_str())
        .await;
    assert_eq!(
        last["text"].as_str().unwrap().chars().count(),
        140,
        "cut at 140"
    );

    // An edit changes its text.
    s.anna.edit(&s.room, &second, "bring the book").await;
    s.last_message("the edit", |l| {
        l["eventId"] == second.as_str() && l["text"] == "bring the book"
    })
    .await;
    // The native view: the same, sealed to the user's key.
    let sealed = s.sealed_last_message().await;
    assert_eq!(sealed["eventId"], second.as_str(), "{sealed}");
    assert_eq!(sealed["senderName"], "Anna Berg", "{sealed}");
    assert_eq!(sealed["text"], "bring the book", "{sealed}");

    // Deleted for everyone: the one before shows again.
    s.anna.redact(&s.room, &second).await;
    s.last_message("after the redaction", |l| {
        l["eventId"] == first.as_str() && l["text"] == "see you Saturday"
    })
    .await;

    // An attachment shows its file name; the user's own message is `isMine`.
    let mxc = s
        .anna
        .upload(STANDARD.decode(PNG_1X1).unwrap(), "image/png")
        .await;
    let photo = s
        .anna
        .send(
            &s.room,
            "m.room.message",
            json!({"msgtype": "m.image", "body": "beach.png", "url": mxc,
                   "info": {"mimetype": "image/png", "size": 70}}),
        )
        .await;
    let last = s
        .last_message("the photo", |l| l["eventId"] == photo.as_str())
        .await;
    assert_eq!(
        (&last["msgtype"], &last["text"]),
        (&json!("m.image"), &json!("beach.png"))
    );
    let mine = s.me.send_text(&s.room, "lovely").await;
    let last = s
        .last_message("the user's own", |l| l["eventId"] == mine.as_str())
        .await;
    assert_eq!(last["isMine"], true, "{last}");

    // The room list carries it too.
    let list = expect_json(s.app.get_auth("/api/rooms", &s.token).await, 200).await;
    let listed = list["rooms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["roomId"] == s.room.as_str())
        .expect("room listed")
        .clone();
    assert_eq!(listed["lastMessage"]["eventId"], mine.as_str(), "{listed}");
}
