//! `DELETE /api/keys` removes the old ciphertext from the live database files, not only
//! the key that opens it.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde_json::json;

use crate::common::client::keys::CONFIRM_KEY_DELETION;
use crate::common::*;
use crate::rooms::{db, fake_room_id, seed_message, seed_room, user_id, Seed};

fn new_key() -> String {
    let mut bytes = Vec::with_capacity(32);
    bytes.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    bytes.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    STANDARD.encode(bytes)
}

/// The sealed values of the user as stored, each with where it came from.
fn sealed_values(app: &TestApp, uid: &str) -> Vec<(&'static str, Vec<u8>)> {
    let conn = db(app);
    let mut out = Vec::new();
    for (what, sql) in [
        (
            "message body",
            "SELECT content_enc FROM messages WHERE user_id = ?1",
        ),
        (
            "room name",
            "SELECT name_enc FROM rooms WHERE user_id = ?1 AND name_enc IS NOT NULL",
        ),
        (
            "reminder title",
            "SELECT title_enc FROM reminders WHERE user_id = ?1",
        ),
        (
            "reminder notes",
            "SELECT notes_enc FROM reminders WHERE user_id = ?1",
        ),
        (
            "recovery material",
            "SELECT encrypted_master_key_enc FROM user_keys WHERE user_id = ?1",
        ),
        (
            "push token",
            "SELECT token_enc FROM devices WHERE user_id = ?1",
        ),
        ("e-mail", "SELECT email_enc FROM users WHERE id = ?1"),
    ] {
        let mut stmt = conn.prepare(sql).unwrap();
        let rows = stmt
            .query_map([uid], |r| r.get::<_, Vec<u8>>(0))
            .unwrap()
            .map(Result::unwrap);
        out.extend(rows.map(|v| (what, v)));
    }
    out
}

#[tokio::test]
async fn deleting_keys_leaves_no_old_ciphertext_in_the_database_or_the_wal() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("shred-files").await;
    let uid = user_id(&user);
    let t = &user.access_token;
    let body = json!({"publicKey": new_key(), "encryptedMasterKey": STANDARD.encode(b"recovery material")});
    let api = app.api(t);
    api.keys().register(body).await.unwrap();

    // Content sealed under the data key, as the sync worker and the API store it.
    let room = fake_room_id("shred");
    seed_room(&app, &uid, Seed::new(&room).name("Secret room name"));
    seed_message(
        &app,
        &uid,
        &room,
        "$shred-event",
        1_700_000_000_000,
        "secret body",
    );
    let reminder = json!({"title": "secret reminder", "notes": "secret notes", "dueAt": "2031-05-01T09:30:00Z"});
    api.reminders().create(reminder).await.unwrap();
    let device = json!({"token": "ab".repeat(32), "deviceName": "phone"});
    api.devices().register_with(device).await.unwrap();

    let before = sealed_values(&app, &uid);
    let kinds: Vec<&str> = before.iter().map(|(k, _)| *k).collect();
    for kind in [
        "message body",
        "room name",
        "reminder title",
        "recovery material",
        "push token",
    ] {
        assert!(kinds.contains(&kind), "{kind} stored before; got {kinds:?}");
    }
    // The values are really in the files now (otherwise the check below proves nothing).
    let bytes = database_bytes(&app);
    for (what, value) in &before {
        assert!(
            contains(&bytes, value),
            "{what} is in the database files before"
        );
    }

    api.keys().delete(Some(CONFIRM_KEY_DELETION)).await.unwrap();

    let bytes = database_bytes(&app);
    for (what, value) in &before {
        assert!(
            !contains(&bytes, value),
            "the old {what} ciphertext is still in switchboard.db or its WAL"
        );
    }
    // What the deletion left: the rooms (without names), the account, the push device.
    let conn = db(&app);
    let count = |sql: &str| -> i64 { conn.query_row(sql, [&uid], |r| r.get(0)).unwrap() };
    assert_eq!(count("SELECT COUNT(*) FROM messages WHERE user_id = ?1"), 0);
    assert_eq!(
        count("SELECT COUNT(*) FROM reminders WHERE user_id = ?1"),
        0
    );
    assert_eq!(
        count("SELECT COUNT(*) FROM rooms WHERE user_id = ?1 AND name_enc IS NULL"),
        1
    );
    assert_eq!(count("SELECT COUNT(*) FROM devices WHERE user_id = ?1"), 1);
    drop(conn);
    let me = api.me().await.unwrap();
    assert_eq!(me["email"], user.email.to_lowercase());
    let devices = api.devices().list().await.unwrap();
    assert_eq!(devices.len(), 1, "{devices:?}");
}
