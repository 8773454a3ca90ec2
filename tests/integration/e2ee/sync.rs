//! Encrypted rooms as the sync keeps them, against the real Synapse with matrix-nio on
//! the other side: missing room keys are requested, members' device lists are tracked
//! (a new device gets the room key on the next send), megolm sessions rotate per the
//! room's `m.room.encryption`, known from the sync (no homeserver question per send),
//! and the crypto store is private on disk.

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use hmac::{KeyInit, Mac};
use serde_json::{json, Value};

use crate::common::synapse::synapse;
use crate::common::*;
use crate::e2ee::{enc, setup_with, wait_readable, Nio, Setup, WAIT};

/// Sets the Matrix password of `user_id` to the one [`Nio::login_as`] uses, with
/// Synapse's admin API (the test does not know the Switchboard user's own password); its
/// devices stay logged in.
pub(crate) async fn admin_set_password(user_id: &str) {
    let s = synapse();
    let http = reqwest::Client::new();
    let url = format!("{}/_synapse/admin/v1/register", s.base_url);
    let nonce: Value = http.get(&url).send().await.unwrap().json().await.unwrap();
    let nonce = nonce["nonce"].as_str().unwrap().to_owned();
    let localpart = format!("e2eeadmin_{}", uuid::Uuid::new_v4().simple());
    let password = format!("pw-{localpart}");
    let mut mac = hmac::Hmac::<sha1::Sha1>::new_from_slice(s.shared_secret.as_bytes()).unwrap();
    mac.update(format!("{nonce}\0{localpart}\0{password}\0admin").as_bytes());
    let body = json!({"nonce": nonce, "username": localpart, "password": password,
        "admin": true, "mac": hex::encode(mac.finalize().into_bytes())});
    let admin: Value = http
        .post(&url)
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let admin_token = admin["access_token"]
        .as_str()
        .expect("admin registered")
        .to_owned();
    let target = user_id[1..].split(':').next().unwrap();
    let url = format!("{}/_synapse/admin/v2/users/{}", s.base_url, enc(user_id));
    let resp = http
        .put(&url)
        .bearer_auth(&admin_token)
        .json(&json!({"password": format!("pw-{target}"), "logout_devices": false}))
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success(), "{:?}", resp.text().await);
}

fn sync_device(s: &Setup) -> String {
    let conn = rusqlite::Connection::open(s.app.data_dir().join("switchboard.db")).unwrap();
    conn.query_row(
        "SELECT matrix_device_id FROM users WHERE id = ?1",
        [s.session.user["id"].as_str().unwrap()],
        |r| r.get(0),
    )
    .unwrap()
}

/// Sends `text` through `POST /api/rooms/{id}/messages` (personal token).
async fn send(s: &Setup, text: &str, txn: &str) {
    let resp = s
        .app
        .post_json(
            &format!("/api/rooms/{}/messages", enc(&s.room)),
            Some(&s.token),
            json!({"content": text, "txnId": txn}),
        )
        .await;
    assert!(resp.status().is_success(), "{:?}", resp.text().await);
}

/// Waits until the log, after `from` bytes, has a line with all of `parts`.
async fn wait_log(app: &TestApp, from: usize, parts: &[&str]) {
    let deadline = Instant::now() + WAIT;
    loop {
        let log = app.log();
        if log[from.min(log.len())..]
            .lines()
            .any(|l| parts.iter().all(|p| l.contains(p)))
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "no log line with {parts:?}:\n{log}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn a_missing_room_key_is_requested_from_the_users_other_devices() {
    let mut s = setup_with(json!({})).await;
    s.nio.text(&s.room, "hello");
    wait_readable(&s.app, &s.token, &s.room, "hello").await;
    // Another E2EE device of the Switchboard user's own Matrix account.
    admin_set_password(&s.me).await;
    let mut own = Nio::login_as(&s.me).await;
    // A message whose room key nio holds back: Switchboard cannot decrypt it...
    let late = s
        .nio
        .call(json!({"op": "send_late", "room": s.room, "text": "key held back"}));
    let session = late["session_id"].as_str().unwrap().to_owned();
    // ...and asks the user's other devices for the key (m.room_key_request).
    let asked = own.call(json!({"op": "wait_key_request", "session_id": session, "timeout": 30}));
    assert_eq!(
        asked["requesting_device_id"],
        sync_device(&s).as_str(),
        "{asked}"
    );
    assert!(s.app.log().contains("requested a missing room key"));
    // The sender's key still opens it when it comes.
    s.nio.call(json!({"op": "share_late", "room": s.room}));
    wait_readable(&s.app, &s.token, &s.room, "key held back").await;
}

#[tokio::test]
async fn a_members_new_device_gets_the_room_key_on_the_next_send() {
    let mut s = setup_with(json!({})).await;
    send(&s, "before the new device", "dev-1").await;
    s.nio.wait_encrypted_text(&s.room, "before the new device");
    // The other user logs in a second device; the sync tells Switchboard (it tracks the
    // room's members since the join) and the sync loop queries the new device's keys.
    let from = s.app.log().len();
    let nio_user = s.nio.call(json!({"op": "whoami"}))["user_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut second = Nio::login_as(&nio_user).await;
    wait_log(&s.app, from, &["device lists changed", &nio_user]).await;
    send(&s, "after the new device", "dev-2").await;
    let sender = second.wait_encrypted_text(&s.room, "after the new device");
    assert_eq!(sender, s.me);
}

#[tokio::test]
async fn megolm_sessions_rotate_per_the_rooms_settings_known_from_the_sync() {
    let mut s = setup_with(json!({"rotation_period_msgs": 2})).await;
    // Positive marker: the sync ingested the joined room (and kept its encryption).
    s.nio.text(&s.room, "joined");
    wait_readable(&s.app, &s.token, &s.room, "joined").await;
    let mut sessions = Vec::new();
    for i in 0..5 {
        let text = format!("rotating {i}");
        send(&s, &text, &format!("rot-{i}")).await;
        let got = s
            .nio
            .call(json!({"op": "wait_text", "room": s.room, "text": text, "timeout": 30}));
        assert_eq!(got["decrypted"], true, "{got}");
        sessions.push(got["session_id"].as_str().unwrap().to_owned());
    }
    // Two messages per megolm session, as the room's m.room.encryption says.
    assert_eq!(sessions[0], sessions[1], "{sessions:?}");
    assert_ne!(sessions[1], sessions[2], "{sessions:?}");
    assert_eq!(sessions[2], sessions[3], "{sessions:?}");
    assert_ne!(sessions[3], sessions[4], "{sessions:?}");
    // The room's encryption came with the sync: no homeserver question per send.
    assert!(
        !s.app
            .log()
            .contains("asked the homeserver whether the room is encrypted"),
        "{}",
        s.app.log()
    );

    // The crypto store is private: directories 0700, every file (the SQLite WAL and SHM
    // included) 0600, whatever the umask.
    let e2ee = s.app.data_dir().join("e2ee");
    let store = e2ee.join(s.session.user["id"].as_str().unwrap());
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&e2ee), 0o700);
    assert_eq!(mode(&store), 0o700);
    let files: Vec<_> = std::fs::read_dir(&store)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(
        files.iter().any(|f| f.to_string_lossy().ends_with("-wal")),
        "{files:?}"
    );
    for f in &files {
        assert_eq!(mode(f), 0o600, "{f:?}");
    }

    // The dashboard shows the Matrix sync as healthy.
    let dashboard = expect_json(
        s.app.get_auth("/api/bridges/dashboard", &s.token).await,
        200,
    )
    .await;
    let sync = &dashboard["matrixSync"];
    assert_eq!(sync["healthy"], true, "{dashboard}");
    assert!(sync["lastSyncAt"].is_string(), "{dashboard}");
    assert!(sync["errorCode"].is_null(), "{dashboard}");
}
