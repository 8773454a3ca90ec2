//! Delivery into a real Synapse room: exactly once, across restarts and crashes, and the
//! failure path.

use super::*;

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
    let api = app.user(&user).scheduled();
    api.cancel(&id).await.refused(400, "not_pending");
    let patched = api.update(&id, json!({"scheduledFor": at(60.0)})).await;
    patched.refused(400, "not_pending");
    let stats = api.stats().await.unwrap()["stats"].clone();
    assert_eq!(stats["sentCount"], 2);
    assert_eq!(stats["nextScheduled"], Value::Null);

    // A cancelled message is never sent.
    let c = schedule(&app, t, body(&key, &room, "never", &at(1.5))).await;
    api.cancel(c["id"].as_str().unwrap()).await.unwrap();
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
    let due = chrono::DateTime::parse_from_rfc3339(m["scheduledFor"].as_str().unwrap()).unwrap();
    app.kill9();
    // Stopped until the message is due (and a little more).
    let until_due = (due.with_timezone(&chrono::Utc) - chrono::Utc::now())
        .to_std()
        .unwrap_or_default();
    tokio::time::sleep(until_due + Duration::from_secs(1)).await;
    // Positive marker: the stopped server's database says the message is still pending
    // with no attempt (the process is gone, so this is final until the restart).
    let stored: (String, i64) = rusqlite::Connection::open(app.data_dir().join("switchboard.db"))
        .unwrap()
        .query_row(
            "SELECT status, attempts FROM scheduled_messages WHERE id = ?1",
            [&id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(
        stored,
        ("pending".to_owned(), 0),
        "nothing sent while stopped"
    );
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

    // And not again after another restart. Positive marker: a message scheduled after the
    // restart is sent, so the scheduler has had its rounds since the start.
    app.kill9();
    app.spawn().await;
    let marker_text = format!("marker {}", uuid::Uuid::new_v4());
    let marker = schedule(&app, &t, body(&key, &room, &marker_text, &at(1.0))).await;
    let marker = wait_final(
        &app,
        &t,
        marker["id"].as_str().unwrap(),
        Duration::from_secs(20),
    )
    .await;
    assert_eq!(marker["status"], "sent", "{marker}");
    assert_eq!(room_messages_with(&mx, &room, &marker_text).await.len(), 1);
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

    let api = app.user(&user).scheduled();
    let stats = api.stats().await.unwrap()["stats"].clone();
    assert_eq!(stats["failedCount"], 1);
    api.cancel(&id).await.refused(400, "not_pending");
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
