//! Delivery: a message from a Synapse user reaches the stand-in as an RFC 8030 push whose
//! VAPID JWT verifies with `GET /api/push/vapid` and whose payload decrypts with the
//! subscription's private key; the levels, snooze, own messages and previews rule what is
//! sent; 410 removes a subscription and 5xx is retried a bounded number of times.

use std::time::Duration;

use reqwest::Method;
use serde_json::{json, Value};

use super::{subscribe, subscriptions, vapid};
use crate::common::matrix::{self, MatrixUser};
use crate::common::push_service::PushService;
use crate::common::{accept_invite, expect_json, Session, TestApp};

fn enc(s: &str) -> String {
    switchboard::clients::matrix::encode(s)
}

/// A group room "Garden club" of a fresh Matrix user with `reader` in it; returns the
/// sender and the room id.
async fn room_with(app: &TestApp, reader: &Session) -> (MatrixUser, String) {
    let sender = matrix::register("pushsender").await;
    // A display name, as people have: the push names the sender by it, not by the Matrix ID.
    sender.set_display_name("Pat Gardener").await;
    let reader_id = reader.user["matrixUserId"].as_str().unwrap();
    let room = sender
        .create_room(Some("Garden club"), &[reader_id], false)
        .await;
    accept_invite(app, &reader.access_token, &room).await;
    (sender, room)
}

async fn set_level(app: &TestApp, s: &Session, room: &str, body: Value) -> Value {
    expect_json(
        app.send(
            Method::PUT,
            &format!("/api/rooms/{}/notifications", enc(room)),
            Some(&s.access_token),
            Some(body),
        )
        .await,
        200,
    )
    .await
}

fn event_ids(pushes: &[Value]) -> Vec<String> {
    pushes
        .iter()
        .map(|p| p["payload"]["eventId"].as_str().unwrap_or("?").to_owned())
        .collect()
}

/// A reader subscribed to pushes, in `room` with `sender`; `witness_room` is a second room
/// (level `all`) whose messages are the positive markers that what was sent before them
/// has been handled.
struct Scene {
    service: PushService,
    app: TestApp,
    reader: Session,
    sub: String,
    sender: MatrixUser,
    room: String,
    witness_room: String,
}

impl Scene {
    /// The event ids of the pushes of `room` only.
    fn in_room(&self, pushes: &[Value]) -> Vec<String> {
        let of_room: Vec<Value> = pushes
            .iter()
            .filter(|p| p["payload"]["roomId"] == self.room.as_str())
            .cloned()
            .collect();
        event_ids(&of_room)
    }

    /// Sends `text` to the witness room and waits for its push: every push so far.
    async fn witness(&self, text: &str) -> Vec<Value> {
        let e = self.sender.send_text(&self.witness_room, text).await;
        self.service
            .wait_for(&self.sub, text, |r| event_ids(r).contains(&e))
            .await
    }

    async fn set_level(&self, body: Value) -> Value {
        set_level(&self.app, &self.reader, &self.room, body).await
    }
}

#[tokio::test]
async fn messages_are_pushed_encrypted_and_signed_as_the_levels_allow() {
    let service = PushService::start();
    let app = TestApp::start_with_mail_and(PushService::config()).await;
    let reader = app.sign_up("push-reader").await;
    vapid(&app, &service, &reader).await;
    let (sub, _) = subscribe(&app, &service, &reader).await;
    let (sender, room) = room_with(&app, &reader).await;
    let me = MatrixUser::from_token(
        reader.user["matrixUserId"].as_str().unwrap(),
        reader.matrix_access_token.as_deref().unwrap(),
    );
    let localpart = me.user_id[1..].split(':').next().unwrap().to_owned();

    let first = a_message_is_pushed_encrypted_and_signed(&service, &sub, &sender, &room).await;
    let reader_id = reader.user["matrixUserId"].as_str().unwrap().to_owned();
    let witness_room = sender
        .create_room(Some("Witness"), &[&reader_id], false)
        .await;
    accept_invite(&app, &reader.access_token, &witness_room).await;
    let s = Scene {
        service,
        app,
        reader,
        sub,
        sender,
        room,
        witness_room,
    };
    own_messages_are_never_pushed(&s, &me, &first).await;
    let mention = at_mentions_only_a_mention_is_pushed_urgently(&s, &localpart, &first).await;
    let so_far = [first, mention];
    off_is_muted_until_unmuted(&s, &localpart, &so_far).await;
    a_snoozed_room_is_silent(&s, &so_far).await;
    previews_off_send_a_generic_text(&s).await;

    // The subscription shows the last success.
    let list = subscriptions(&s.app, &s.reader).await;
    assert!(list[0]["lastSuccessAt"].is_string(), "{list:?}");
}

/// 1. A message from someone else: pushed with a VAPID JWT that verifies, a payload that
///    decrypts, an opaque topic and the sender's display name. Returns its event id.
async fn a_message_is_pushed_encrypted_and_signed(
    service: &PushService,
    sub: &str,
    sender: &MatrixUser,
    room: &str,
) -> String {
    let first = sender.send_text(room, "Tomatoes are ripe").await;
    let pushes = service
        .wait_for(sub, "the first push", |r| !r.is_empty())
        .await;
    let p = &pushes[0];
    assert_eq!(p["vapid"]["ok"], true, "VAPID JWT verifies: {p}");
    assert_eq!(p["vapid"]["claims"]["sub"], "mailto:ops@switchboard.test");
    assert!(p["decryptError"].is_null(), "{p}");
    let h = &p["headers"];
    assert_eq!(h["contentEncoding"], "aes128gcm");
    assert_eq!(h["ttl"], "86400");
    assert_eq!(h["urgency"], "normal", "a group message without a mention");
    let topic = h["topic"].as_str().unwrap();
    assert!(
        topic.len() == 32
            && topic
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    );
    assert!(!topic.contains("Garden"));
    let payload = &p["payload"];
    assert_eq!(payload["type"], "message");
    assert_eq!(payload["roomId"], room);
    assert_eq!(payload["eventId"], first.as_str());
    assert_eq!(payload["title"], "Garden club");
    assert_eq!(payload["body"], "Pat Gardener: Tomatoes are ripe");
    assert!(payload["unread"].as_i64().unwrap() >= 1);
    assert!(p["size"].as_u64().unwrap() <= 3 * 1024 + 103);
    first
}

/// 2. Own messages are never pushed.
async fn own_messages_are_never_pushed(s: &Scene, me: &MatrixUser, first: &str) {
    me.send_text(&s.room, "my own words").await;
    let pushes = s.witness("after own").await;
    assert_eq!(s.in_room(&pushes), [first]);
}

/// 3. mentions: a plain message is not pushed, a mention is (urgently). Returns the
///    mention's event id.
async fn at_mentions_only_a_mention_is_pushed_urgently(
    s: &Scene,
    localpart: &str,
    first: &str,
) -> String {
    let r = s.set_level(json!({"level": "mentions"})).await;
    assert_eq!(
        r["notifications"],
        json!({"level": "mentions", "snoozeUntil": null})
    );
    assert_eq!(r["muted"], false);
    s.sender.send_text(&s.room, "weather talk").await;
    let mention = s
        .sender
        .send_text(&s.room, &format!("{localpart}, dinner at 8?"))
        .await;
    let pushes = s
        .service
        .wait_for(&s.sub, "the mention", |r| event_ids(r).contains(&mention))
        .await;
    assert_eq!(s.in_room(&pushes), [first, mention.as_str()]);
    assert_eq!(pushes.last().unwrap()["headers"]["urgency"], "high");
    mention
}

/// 4. off ⇔ muted: nothing; unmuting with POST …/unmute brings `mentions` back.
async fn off_is_muted_until_unmuted(s: &Scene, localpart: &str, so_far: &[String]) {
    let r = s.set_level(json!({"level": "off"})).await;
    assert_eq!(
        (r["muted"].clone(), r["notifications"]["level"].clone()),
        (json!(true), json!("off"))
    );
    s.sender
        .send_text(&s.room, &format!("{localpart}: muted mention"))
        .await;
    let pushes = s.witness("after muted").await;
    assert_eq!(s.in_room(&pushes), so_far);
    let token = &s.reader.access_token;
    expect_json(
        s.app
            .send(
                Method::POST,
                &format!("/api/rooms/{}/unmute", enc(&s.room)),
                Some(token),
                None,
            )
            .await,
        200,
    )
    .await;
    let got = expect_json(
        s.app
            .get_auth(&format!("/api/rooms/{}", enc(&s.room)), token)
            .await,
        200,
    )
    .await;
    assert_eq!(got["room"]["notifications"]["level"], "mentions");
    assert_eq!(got["room"]["muted"], false);
}

/// 5. Snoozed: nothing until the time passes (here: until cleared).
async fn a_snoozed_room_is_silent(s: &Scene, so_far: &[String]) {
    let until = chrono::Utc::now().timestamp_millis() + 3_600_000;
    let r = s
        .set_level(json!({"level": "all", "snoozeUntil": until}))
        .await;
    assert_eq!(r["notifications"]["snoozeUntil"], until);
    s.sender.send_text(&s.room, "snoozed news").await;
    let pushes = s.witness("after snoozed").await;
    assert_eq!(s.in_room(&pushes), so_far);
    let r = s.set_level(json!({"level": "all"})).await;
    assert_eq!(
        r["notifications"],
        json!({"level": "all", "snoozeUntil": null})
    );
}

/// 6. Previews off: a generic text only.
async fn previews_off_send_a_generic_text(s: &Scene) {
    expect_json(
        s.app
            .send(
                Method::PUT,
                "/api/push/settings",
                Some(&s.reader.access_token),
                Some(json!({"previews": false})),
            )
            .await,
        200,
    )
    .await;
    let secret = format!("the code is {}", uuid::Uuid::new_v4().simple());
    let hidden = s.sender.send_text(&s.room, &secret).await;
    let pushes = s
        .service
        .wait_for(&s.sub, "the hidden push", |r| {
            event_ids(r).contains(&hidden)
        })
        .await;
    let last = &pushes.last().unwrap()["payload"];
    assert_eq!(
        (last["title"].as_str(), last["body"].as_str()),
        (Some("Switchboard"), Some("New message"))
    );
    assert!(!last.to_string().contains("the code is"));
}

#[tokio::test]
async fn gone_subscriptions_are_removed_and_failing_services_are_retried_a_bounded_number_of_times()
{
    let service = PushService::start();
    let app = TestApp::start_with_mail_and(PushService::config()).await;
    let reader = app.sign_up("push-failing").await;
    vapid(&app, &service, &reader).await;
    let (gone, gone_id) = subscribe(&app, &service, &reader).await;
    let (flaky, flaky_id) = subscribe(&app, &service, &reader).await;
    service.answer(&gone, 410, None).await;
    service.answer(&flaky, 503, None).await;
    let (sender, room) = room_with(&app, &reader).await;

    let event = sender.send_text(&room, "anyone home?").await;
    service
        .wait_for(&gone, "the push answered 410", |r| r.len() == 1)
        .await;
    // The 410 removes the subscription.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let ids: Vec<Value> = subscriptions(&app, &reader)
            .await
            .iter()
            .map(|s| s["id"].clone())
            .collect();
        if !ids.contains(&json!(gone_id)) {
            assert_eq!(ids, [json!(flaky_id.clone())]);
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "410 did not remove the subscription"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // 503: three tries in all (backoff 1 s, 2 s), then given up and counted.
    let tries = service
        .wait_for(&flaky, "three tries", |r| r.len() == 3)
        .await;
    assert!(tries
        .iter()
        .all(|t| t["payload"]["eventId"] == event.as_str()));
    let gap = tries[2]["at"].as_f64().unwrap() - tries[1]["at"].as_f64().unwrap();
    assert!(gap >= 1.5, "backoff between tries: {gap}");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let list = subscriptions(&app, &reader).await;
        if list[0]["failures"] == 1 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "failure not counted: {list:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Marker: the service recovers; the next message arrives, the first was not tried again.
    service.answer(&flaky, 201, None).await;
    let marker = sender.send_text(&room, "marker").await;
    let pushes = service
        .wait_for(&flaky, "the marker", |r| event_ids(r).contains(&marker))
        .await;
    assert_eq!(pushes.len(), 4, "bounded: {:?}", event_ids(&pushes));
    assert!(
        service.requests_for(&gone).await.len() == 1,
        "nothing more to a removed subscription"
    );
    assert_eq!(subscriptions(&app, &reader).await[0]["failures"], 0);

    // A retry waits out of the workers and is dropped once the message is read.
    service.answer(&flaky, 500, Some(3)).await;
    let unread = sender.send_text(&room, "read me soon").await;
    service
        .wait_for(&flaky, "the first try", |r| event_ids(r).contains(&unread))
        .await;
    let read = app
        .send(
            Method::POST,
            &format!("/api/rooms/{}/read", enc(&room)),
            Some(&reader.access_token),
            None,
        )
        .await;
    assert_eq!(read.status(), 200);
    // Marker: a message of another room, unread, tried after it and retried 3 s later;
    // the read message's retry was due before it.
    let reader_id = reader.user["matrixUserId"].as_str().unwrap();
    let other_room = sender.create_room(Some("Other"), &[reader_id], false).await;
    accept_invite(&app, &reader.access_token, &other_room).await;
    let other = sender.send_text(&other_room, "still unread").await;
    let pushes = service
        .wait_for(&flaky, "the other room's retry", |r| {
            r.iter()
                .filter(|p| p["payload"]["eventId"] == other.as_str())
                .count()
                == 2
        })
        .await;
    let tries_of_read = pushes
        .iter()
        .filter(|p| p["payload"]["eventId"] == unread.as_str())
        .count();
    assert_eq!(
        tries_of_read,
        1,
        "read meanwhile: no retry; {:?}",
        event_ids(&pushes)
    );
}
