//! Scheduled messages: bodies sealed exactly as a client does (X25519 + HKDF-SHA256 +
//! XChaCha20-Poly1305 to the server key from /api/attestation), every status of the
//! routes, the state machine, delivery into a real Synapse room exactly once (also across
//! a kill -9), and the failure path.

use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use chacha20poly1305::aead::{Aead, KeyInit};
use chacha20poly1305::{Key, XChaCha20Poly1305, XNonce};
use hkdf::Hkdf;
use reqwest::Method;
use serde_json::{json, Value};
use sha2::Sha256;

use crate::common::*;
use crate::devices::standin::ApnsStandIn;
use crate::devices::{device_token, register};
use crate::reminders::{event_stream, wait_event};

fn random32() -> [u8; 32] {
    let mut out = [0u8; 32];
    out[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    out[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    out
}

/// The client side of the DESIGN §8 Seal: `(encryptedBody, nonce, ephemeralPubkey)`.
fn seal(server_public_b64: &str, plaintext: &str) -> (String, String, String) {
    let server: [u8; 32] = STANDARD
        .decode(server_public_b64)
        .unwrap()
        .try_into()
        .unwrap();
    let eph_secret = random32();
    let eph_public = x25519_dalek::x25519(eph_secret, x25519_dalek::X25519_BASEPOINT_BYTES);
    let shared = x25519_dalek::x25519(eph_secret, server);
    let mut key = [0u8; 32];
    Hkdf::<Sha256>::new(Some(&[]), &shared)
        .expand(b"switchboard-v1", &mut key)
        .unwrap();
    let nonce: [u8; 24] = random32()[..24].try_into().unwrap();
    let ct = XChaCha20Poly1305::new(&Key::from(key))
        .encrypt(&XNonce::from(nonce), plaintext.as_bytes())
        .unwrap();
    (
        STANDARD.encode(ct),
        STANDARD.encode(nonce),
        STANDARD.encode(eph_public),
    )
}

pub(crate) async fn server_key(app: &TestApp) -> String {
    expect_json(app.get("/api/attestation").await, 200).await["serverPublicKey"]
        .as_str()
        .unwrap()
        .to_owned()
}

pub(crate) fn at(secs: f64) -> String {
    (chrono::Utc::now() + chrono::Duration::milliseconds((secs * 1000.0) as i64)).to_rfc3339()
}

pub(crate) fn body(key: &str, room: &str, text: &str, when: &str) -> Value {
    let (b, n, e) = seal(key, text);
    json!({"roomId": room, "encryptedBody": b, "nonce": n, "ephemeralPubkey": e, "scheduledFor": when})
}

pub(crate) async fn schedule(app: &TestApp, token: &str, payload: Value) -> Value {
    let resp = app
        .post_json("/api/messages/schedule", Some(token), payload)
        .await;
    let created = expect_json(resp, 201).await;
    assert!(created["message"].is_string());
    created["scheduledMessage"].clone()
}

async fn get(app: &TestApp, token: &str, id: &str) -> Value {
    expect_json(
        app.get_auth(&format!("/api/messages/scheduled/{id}"), token)
            .await,
        200,
    )
    .await["scheduledMessage"]
        .clone()
}

/// Polls until the message leaves `pending`.
async fn wait_final(app: &TestApp, token: &str, id: &str, within: Duration) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let m = get(app, token, id).await;
        if m["status"] != "pending" {
            return m;
        }
        assert!(
            Instant::now() < deadline,
            "still pending after {within:?}: {m}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn create_room(matrix_token: &str) -> String {
    let resp = reqwest::Client::new()
        .post(format!(
            "{}/_matrix/client/v3/createRoom",
            synapse().base_url
        ))
        .bearer_auth(matrix_token)
        .json(&json!({"preset": "private_chat", "name": "scheduled test"}))
        .send()
        .await
        .unwrap();
    let v: Value = resp.json().await.unwrap();
    v["room_id"]
        .as_str()
        .unwrap_or_else(|| panic!("createRoom: {v}"))
        .to_owned()
}

/// `m.room.message` events of the room whose body is `text`, read back as `matrix_token`.
async fn room_messages_with(matrix_token: &str, room: &str, text: &str) -> Vec<Value> {
    let url = format!(
        "{}/_matrix/client/v3/rooms/{}/messages?dir=b&limit=100",
        synapse().base_url,
        urlencode(room)
    );
    let v: Value = reqwest::Client::new()
        .get(url)
        .bearer_auth(matrix_token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    v["chunk"]
        .as_array()
        .unwrap_or_else(|| panic!("messages: {v}"))
        .iter()
        .filter(|e| e["type"] == "m.room.message" && e["content"]["body"] == text)
        .cloned()
        .collect()
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[tokio::test]
async fn scheduling_routes_validate_input_and_follow_the_state_machine() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("sched-routes").await;
    let t = &user.access_token;
    let key = server_key(&app).await;
    let room = "!nowhere:example.org";

    // Create: 201, pending, no body echoed.
    let created = schedule(&app, t, {
        let mut b = body(&key, room, "hello later", &at(3600.0));
        b["targetPlatform"] = json!("telegram");
        b
    })
    .await;
    let id = created["id"].as_str().unwrap().to_owned();
    assert!(uuid::Uuid::parse_str(&id).is_ok());
    assert_eq!(created["status"], "pending");
    assert_eq!(created["roomId"], room);
    assert_eq!(created["targetPlatform"], "telegram");
    assert_eq!(created["attempts"], 0);
    for k in ["sentAt", "eventId", "failureReason"] {
        assert!(created[k].is_null(), "{k}");
    }
    for k in ["scheduledFor", "createdAt", "updatedAt"] {
        assert!(created[k].is_string(), "{k}");
    }
    assert!(created.get("encryptedBody").is_none());

    // Invalid times.
    for when in [
        at(-5.0),
        "tomorrow".to_owned(),
        "2030-13-01T00:00:00Z".to_owned(),
        String::new(),
    ] {
        let resp = app
            .post_json(
                "/api/messages/schedule",
                Some(t),
                body(&key, room, "x", &when),
            )
            .await;
        expect_error(resp, 400, "invalid_schedule_time").await;
    }
    // Envelopes that do not open with the server key.
    let good = body(&key, room, "x", &at(60.0));
    let other_key = STANDARD.encode(x25519_dalek::x25519(
        random32(),
        x25519_dalek::X25519_BASEPOINT_BYTES,
    ));
    let mut wrong_key = body(&other_key, room, "x", &at(60.0));
    wrong_key["scheduledFor"] = json!(at(60.0));
    let mut tampered = good.clone();
    let mut ct = STANDARD
        .decode(good["encryptedBody"].as_str().unwrap())
        .unwrap();
    ct[0] ^= 1;
    tampered["encryptedBody"] = json!(STANDARD.encode(ct));
    let mut short_nonce = good.clone();
    short_nonce["nonce"] = json!(STANDARD.encode([0u8; 12]));
    let mut not_b64 = good.clone();
    not_b64["ephemeralPubkey"] = json!("not base64!");
    for bad in [wrong_key, tampered, short_nonce, not_b64] {
        let resp = app.post_json("/api/messages/schedule", Some(t), bad).await;
        expect_error(resp, 400, "invalid_encryption").await;
    }
    // Other invalid input.
    let mut bad_platform = good.clone();
    bad_platform["targetPlatform"] = json!("signal");
    let mut bad_room = good.clone();
    bad_room["roomId"] = json!("general");
    let mut missing = good.clone();
    missing.as_object_mut().unwrap().remove("nonce");
    let empty = body(&key, room, "   ", &at(60.0));
    for bad in [
        bad_platform,
        bad_room,
        missing,
        empty,
        json!({}),
        json!([1]),
    ] {
        let resp = app.post_json("/api/messages/schedule", Some(t), bad).await;
        expect_error(resp, 400, "invalid_request").await;
    }

    // Get: 200, 400 malformed, 404 unknown and other user's.
    assert_eq!(get(&app, t, &id).await["id"], id.as_str());
    let resp = app.get_auth("/api/messages/scheduled/not-a-uuid", t).await;
    expect_error(resp, 400, "invalid_request").await;
    let resp = app
        .get_auth(
            &format!("/api/messages/scheduled/{}", uuid::Uuid::new_v4()),
            t,
        )
        .await;
    expect_error(resp, 404, "not_found").await;
    let other = app.sign_up("sched-other").await;
    let resp = app
        .get_auth(
            &format!("/api/messages/scheduled/{id}"),
            &other.access_token,
        )
        .await;
    expect_error(resp, 404, "not_found").await;
    let resp = app
        .send(
            Method::DELETE,
            &format!("/api/messages/scheduled/{id}"),
            Some(&other.access_token),
            None,
        )
        .await;
    expect_error(resp, 404, "not_found").await;

    // PATCH: time and envelope replaced while pending.
    let new_time = at(7200.0);
    let (b, n, e) = seal(&key, "hello even later");
    let resp = app
        .send(
            Method::PATCH,
            &format!("/api/messages/scheduled/{id}"),
            Some(t),
            Some(json!({"scheduledFor": new_time, "encryptedBody": b, "nonce": n, "ephemeralPubkey": e})),
        )
        .await;
    let patched = expect_json(resp, 200).await;
    assert!(patched["message"].is_string());
    assert_eq!(patched["scheduledMessage"]["status"], "pending");
    let got = chrono::DateTime::parse_from_rfc3339(
        patched["scheduledMessage"]["scheduledFor"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    let want = chrono::DateTime::parse_from_rfc3339(&new_time).unwrap();
    assert!((got - want).num_milliseconds().abs() <= 1);
    for (bad, code) in [
        (json!({"scheduledFor": at(-1.0)}), "invalid_schedule_time"),
        (json!({"encryptedBody": b}), "invalid_request"),
        (
            json!({"encryptedBody": "AAAA", "nonce": n, "ephemeralPubkey": e}),
            "invalid_encryption",
        ),
    ] {
        let resp = app
            .send(
                Method::PATCH,
                &format!("/api/messages/scheduled/{id}"),
                Some(t),
                Some(bad),
            )
            .await;
        expect_error(resp, 400, code).await;
    }

    // A second message in another room, for list filters and stats.
    let second = schedule(
        &app,
        t,
        body(&key, "!second:example.org", "two", &at(1800.0)),
    )
    .await;
    let second_id = second["id"].as_str().unwrap().to_owned();

    // Stats (static route wins over /{id}).
    let stats = expect_json(app.get_auth("/api/messages/scheduled/stats", t).await, 200).await
        ["stats"]
        .clone();
    assert_eq!(stats["pendingCount"], 2);
    assert_eq!(stats["sentCount"], 0);
    assert_eq!(stats["cancelledCount"], 0);
    assert_eq!(stats["failedCount"], 0);
    assert_eq!(stats["roomsWithScheduled"], 2);
    assert_eq!(stats["nextScheduled"], second["scheduledFor"]);

    // Cancel: pending → cancelled; then neither PATCH nor DELETE.
    let resp = app
        .send(
            Method::DELETE,
            &format!("/api/messages/scheduled/{id}"),
            Some(t),
            None,
        )
        .await;
    let cancelled = expect_json(resp, 200).await;
    assert_eq!(cancelled["cancelledId"], id.as_str());
    assert!(cancelled["message"].is_string());
    assert_eq!(get(&app, t, &id).await["status"], "cancelled");
    let resp = app
        .send(
            Method::PATCH,
            &format!("/api/messages/scheduled/{id}"),
            Some(t),
            Some(json!({"scheduledFor": at(60.0)})),
        )
        .await;
    expect_error(resp, 400, "not_pending").await;
    let resp = app
        .send(
            Method::DELETE,
            &format!("/api/messages/scheduled/{id}"),
            Some(t),
            None,
        )
        .await;
    expect_error(resp, 400, "not_pending").await;
    let resp = app
        .send(Method::DELETE, "/api/messages/scheduled/xyz", Some(t), None)
        .await;
    expect_error(resp, 400, "invalid_request").await;

    // List: filters, pagination, order, validation.
    let list = expect_json(app.get_auth("/api/messages/scheduled", t).await, 200).await;
    let ids: Vec<&str> = list["scheduledMessages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        vec![second_id.as_str(), id.as_str()],
        "earliest scheduledFor first"
    );
    assert_eq!(
        list["pagination"],
        json!({"total": 2, "limit": 50, "offset": 0, "hasMore": false})
    );
    let pending = expect_json(
        app.get_auth("/api/messages/scheduled?status=pending", t)
            .await,
        200,
    )
    .await;
    assert_eq!(pending["scheduledMessages"].as_array().unwrap().len(), 1);
    assert_eq!(pending["scheduledMessages"][0]["id"], second_id.as_str());
    let by_room = expect_json(
        app.get_auth(
            &format!("/api/messages/scheduled?roomId={}", urlencode(room)),
            t,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(by_room["scheduledMessages"][0]["id"], id.as_str());
    assert_eq!(by_room["pagination"]["total"], 1);
    let page = expect_json(
        app.get_auth("/api/messages/scheduled?limit=1&offset=1", t)
            .await,
        200,
    )
    .await;
    assert_eq!(
        page["pagination"],
        json!({"total": 2, "limit": 1, "offset": 1, "hasMore": false})
    );
    assert_eq!(page["scheduledMessages"][0]["id"], id.as_str());
    for q in [
        "status=sending",
        "limit=0",
        "limit=101",
        "offset=-1",
        "limit=ten",
    ] {
        let resp = app
            .get_auth(&format!("/api/messages/scheduled?{q}"), t)
            .await;
        expect_error(resp, 400, "invalid_request").await;
    }
    let stats = expect_json(app.get_auth("/api/messages/scheduled/stats", t).await, 200).await
        ["stats"]
        .clone();
    assert_eq!(
        (
            stats["pendingCount"].clone(),
            stats["cancelledCount"].clone()
        ),
        (json!(1), json!(1))
    );
    assert_eq!(stats["roomsWithScheduled"], 1);
    let empty_stats = expect_json(
        app.get_auth("/api/messages/scheduled/stats", &other.access_token)
            .await,
        200,
    )
    .await;
    assert_eq!(
        empty_stats,
        json!({"stats": {"pendingCount": 0, "sentCount": 0, "cancelledCount": 0, "failedCount": 0,
                          "roomsWithScheduled": 0, "nextScheduled": null}})
    );

    // Native only; authentication required.
    let pat = expect_json(
        app.post_json("/api/developer/tokens", Some(t), json!({"name": "s"}))
            .await,
        201,
    )
    .await["token"]
        .as_str()
        .unwrap()
        .to_owned();
    for (method, path) in [
        (Method::POST, "/api/messages/schedule".to_owned()),
        (Method::GET, "/api/messages/scheduled".to_owned()),
        (Method::GET, "/api/messages/scheduled/stats".to_owned()),
        (Method::GET, format!("/api/messages/scheduled/{second_id}")),
        (
            Method::DELETE,
            format!("/api/messages/scheduled/{second_id}"),
        ),
    ] {
        let resp = app
            .send(method, &path, Some(&pat), Some(good.clone()))
            .await;
        expect_error(resp, 403, "forbidden_for_api_token").await;
    }
    let resp = app
        .post_json("/api/messages/schedule", None, good.clone())
        .await;
    expect_error(resp, 401, "unauthorized").await;
}

#[tokio::test]
async fn a_due_message_arrives_in_the_synapse_room_exactly_once() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("sched-send").await;
    let t = &user.access_token;
    let mx = user.matrix_access_token.clone().expect("matrix token");
    let key = server_key(&app).await;
    let room = create_room(&mx).await;
    let mut events = event_stream(&app, t).await;

    let text = format!("scheduled hello {}", uuid::Uuid::new_v4());
    let started = Instant::now();
    let m = schedule(&app, t, body(&key, &room, &text, &at(2.0))).await;
    let id = m["id"].as_str().unwrap().to_owned();
    // Plaintext that is Matrix content is sent as such.
    let notice = format!("notice {}", uuid::Uuid::new_v4());
    let content = json!({"msgtype": "m.notice", "body": notice}).to_string();
    let n = schedule(&app, t, body(&key, &room, &content, &at(2.0))).await;

    let created = wait_event(&mut events, "scheduled.updated", |d| {
        d["id"] == id.as_str() && d["status"] == "pending"
    })
    .await;
    assert_eq!(created["roomId"], room.as_str());
    let sent = wait_final(&app, t, &id, Duration::from_secs(20)).await;
    assert_eq!(sent["status"], "sent", "{sent}");
    assert!(
        started.elapsed() >= Duration::from_millis(1500),
        "not sent before its time"
    );
    assert_eq!(sent["attempts"], 1);
    assert_eq!(sent["sentRoomId"], room.as_str());
    let scheduled_for =
        chrono::DateTime::parse_from_rfc3339(sent["scheduledFor"].as_str().unwrap()).unwrap();
    let sent_at = chrono::DateTime::parse_from_rfc3339(sent["sentAt"].as_str().unwrap()).unwrap();
    assert!(sent_at >= scheduled_for);
    assert!(
        (sent_at - scheduled_for).num_milliseconds() < 5_000,
        "late: {sent}"
    );
    wait_event(&mut events, "scheduled.updated", |d| {
        d["id"] == id.as_str() && d["status"] == "sent"
    })
    .await;

    let found = room_messages_with(&mx, &room, &text).await;
    assert_eq!(found.len(), 1, "exactly one event: {found:?}");
    assert_eq!(found[0]["event_id"], sent["eventId"]);
    assert_eq!(found[0]["content"]["msgtype"], "m.text");
    assert_eq!(found[0]["sender"], user.user["matrixUserId"]);

    let n = wait_final(&app, t, n["id"].as_str().unwrap(), Duration::from_secs(20)).await;
    assert_eq!(n["status"], "sent");
    let found = room_messages_with(&mx, &room, &notice).await;
    assert_eq!(found.len(), 1);
    assert_eq!(found[0]["content"]["msgtype"], "m.notice");

    // Sent is final.
    let resp = app
        .send(
            Method::DELETE,
            &format!("/api/messages/scheduled/{id}"),
            Some(t),
            None,
        )
        .await;
    expect_error(resp, 400, "not_pending").await;
    let resp = app
        .send(
            Method::PATCH,
            &format!("/api/messages/scheduled/{id}"),
            Some(t),
            Some(json!({"scheduledFor": at(60.0)})),
        )
        .await;
    expect_error(resp, 400, "not_pending").await;
    let stats = expect_json(app.get_auth("/api/messages/scheduled/stats", t).await, 200).await
        ["stats"]
        .clone();
    assert_eq!(stats["sentCount"], 2);
    assert_eq!(stats["nextScheduled"], Value::Null);

    // A cancelled message is never sent.
    let c = schedule(&app, t, body(&key, &room, "never", &at(1.5))).await;
    let resp = app
        .send(
            Method::DELETE,
            &format!("/api/messages/scheduled/{}", c["id"].as_str().unwrap()),
            Some(t),
            None,
        )
        .await;
    expect_json(resp, 200).await;
    // Positive marker: a message due after the cancelled one is sent, so the scheduler has
    // passed the cancelled one's time.
    let marker_text = format!("marker {}", uuid::Uuid::new_v4());
    let marker = schedule(&app, t, body(&key, &room, &marker_text, &at(2.0))).await;
    let marker = wait_final(
        &app,
        t,
        marker["id"].as_str().unwrap(),
        Duration::from_secs(20),
    )
    .await;
    assert_eq!(marker["status"], "sent", "{marker}");
    assert_eq!(room_messages_with(&mx, &room, &marker_text).await.len(), 1);
    assert!(room_messages_with(&mx, &room, "never").await.is_empty());
    // Seconds later, still exactly one event per sent message (no second send).
    assert_eq!(room_messages_with(&mx, &room, &text).await.len(), 1);
}

#[tokio::test]
async fn a_message_that_fell_due_while_stopped_is_sent_once_after_restart() {
    let mut app = TestApp::start_with_mail().await;
    let user = app.sign_up("sched-restart").await;
    let t = user.access_token.clone();
    let mx = user.matrix_access_token.clone().expect("matrix token");
    let key = server_key(&app).await;
    let room = create_room(&mx).await;

    let text = format!("after the crash {}", uuid::Uuid::new_v4());
    let m = schedule(&app, &t, body(&key, &room, &text, &at(2.0))).await;
    let id = m["id"].as_str().unwrap().to_owned();
    app.kill9();
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert!(
        room_messages_with(&mx, &room, &text).await.is_empty(),
        "nothing sent while stopped"
    );
    app.spawn().await;

    let sent = wait_final(&app, &t, &id, Duration::from_secs(20)).await;
    assert_eq!(sent["status"], "sent", "{sent}");
    let found = room_messages_with(&mx, &room, &text).await;
    assert_eq!(found.len(), 1, "exactly one event: {found:?}");
    assert_eq!(found[0]["event_id"], sent["eventId"]);

    // And not again after another restart.
    app.kill9();
    app.spawn().await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(room_messages_with(&mx, &room, &text).await.len(), 1);
    assert_eq!(get(&app, &t, &id).await["status"], "sent");
}

#[tokio::test]
async fn a_message_to_a_room_the_user_is_not_in_fails_with_a_reason_and_a_push() {
    let apns = ApnsStandIn::start().await;
    let app = TestApp::start_with_mail_and(apns.config()).await;
    let user = app.sign_up("sched-fail").await;
    let stranger = app.sign_up("sched-stranger").await;
    let t = &user.access_token;
    let device = device_token();
    register(&app, t, &device).await;
    let key = server_key(&app).await;
    let room = create_room(
        stranger
            .matrix_access_token
            .as_deref()
            .expect("matrix token"),
    )
    .await;
    let mut events = event_stream(&app, t).await;

    let m = schedule(&app, t, body(&key, &room, "you cannot post here", &at(1.0))).await;
    let id = m["id"].as_str().unwrap().to_owned();

    // The first refusal is recorded while a retry is pending.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let now = get(&app, t, &id).await;
        if now["attempts"].as_i64().unwrap_or(0) >= 1 && now["failureReason"].is_string() {
            assert!(
                now["status"] == "pending" || now["status"] == "failed",
                "{now}"
            );
            break;
        }
        assert!(Instant::now() < deadline, "no attempt recorded: {now}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    let failed = wait_final(&app, t, &id, Duration::from_secs(30)).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(failed["attempts"], 3);
    let reason = failed["failureReason"].as_str().unwrap();
    assert!(
        reason.contains("M_FORBIDDEN") || reason.contains("403"),
        "{reason}"
    );
    assert!(failed["eventId"].is_null());
    wait_event(&mut events, "scheduled.updated", |d| {
        d["id"] == id.as_str() && d["status"] == "failed"
    })
    .await;

    let pushes = apns
        .wait_for(&device, "the failure push", |r| !r.is_empty())
        .await;
    assert_eq!(pushes[0].payload["type"], "scheduled_failed");
    assert_eq!(pushes[0].payload["scheduledMessageId"], id.as_str());
    assert!(pushes[0].jwt_ok);

    let stats = expect_json(app.get_auth("/api/messages/scheduled/stats", t).await, 200).await
        ["stats"]
        .clone();
    assert_eq!(stats["failedCount"], 1);
    let resp = app
        .send(
            Method::DELETE,
            &format!("/api/messages/scheduled/{id}"),
            Some(t),
            None,
        )
        .await;
    expect_error(resp, 400, "not_pending").await;
}

/// A crash after the homeserver accepted the send but before the outcome was committed
/// means the message is sent again later; the txnId (the scheduled message id) makes that
/// second send return the first event. Simulated by sending with that txnId first.
/// The access token of Switchboard's own Matrix device of `user` (the one the scheduler
/// sends with; the app's `matrixAccessToken` is another device), opened as the server does.
fn own_matrix_token(app: &TestApp, user: &Session) -> String {
    let master = switchboard::crypto::MasterKey::load(&app.data_dir().join("master.key"))
        .expect("master key");
    let conn = rusqlite::Connection::open(app.data_dir().join("switchboard.db")).unwrap();
    let row = switchboard::store::users::find(&conn, user.user["id"].as_str().unwrap())
        .unwrap()
        .expect("user row");
    switchboard::services::users::matrix_token_of(&master, &row)
        .unwrap()
        .expect("own Matrix token")
}

#[tokio::test]
async fn a_repeated_send_after_a_crash_is_deduplicated_by_the_txn_id() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("sched-dedup").await;
    let t = &user.access_token;
    let mx = user.matrix_access_token.clone().expect("matrix token");
    let key = server_key(&app).await;
    let room = create_room(&mx).await;

    let text = format!("sent before the crash {}", uuid::Uuid::new_v4());
    let m = schedule(&app, t, body(&key, &room, &text, &at(2.0))).await;
    let id = m["id"].as_str().unwrap().to_owned();
    let url = format!(
        "{}/_matrix/client/v3/rooms/{}/send/m.room.message/{}",
        synapse().base_url,
        urlencode(&room),
        id
    );
    // The send the scheduler made before "crashing": same device, same transaction id.
    let first: Value = reqwest::Client::new()
        .put(url)
        .bearer_auth(own_matrix_token(&app, &user))
        .json(&json!({"msgtype": "m.text", "body": text}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let sent = wait_final(&app, t, &id, Duration::from_secs(20)).await;
    assert_eq!(sent["status"], "sent", "{sent}");
    assert_eq!(
        sent["eventId"], first["event_id"],
        "the homeserver answered with the first event"
    );
    assert_eq!(room_messages_with(&mx, &room, &text).await.len(), 1);
}
