//! `/api/keys/*`: registration, rotation, lookup, recovery material and crypto-shredding
//! deletion, against the real binary.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde_json::{json, Value};

use crate::common::client::keys::{KeysApi, CONFIRM_KEY_DELETION as CONFIRM};
use crate::common::client::Refusal;
use crate::common::*;

/// A fresh base64 X25519 public key (any 32 bytes are a valid X25519 public key).
fn new_key() -> String {
    let mut bytes = Vec::with_capacity(32);
    bytes.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    bytes.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    STANDARD.encode(bytes)
}

async fn info(app: &TestApp, token: &str) -> Value {
    app.api(token).keys().info().await.expect("key info")
}

/// The key routes as the holder of `token`.
fn keys<'a>(app: &'a TestApp, token: &'a str) -> KeysApi<'a> {
    app.api(token).keys()
}

/// `owner`'s public key as `reader` looks it up: `key` at `version`.
async fn assert_published(
    app: &TestApp,
    reader: &Session,
    owner: &Session,
    key: &str,
    version: i64,
) {
    let lookup = keys(app, &reader.access_token)
        .public(&user_id(owner))
        .await
        .unwrap();
    assert_eq!(lookup["publicKey"], key, "{lookup}");
    assert_eq!(lookup["keyVersion"], version, "{lookup}");
}

fn user_id(session: &Session) -> String {
    session.user["id"].as_str().expect("user id").to_owned()
}

/// Reads one row of the running server's database (read-only, beside the server).
fn db_user(app: &TestApp, id: &str) -> (Vec<u8>, Vec<u8>, bool, Option<i64>) {
    let conn = rusqlite::Connection::open_with_flags(
        app.data_dir().join("switchboard.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .expect("open database");
    conn.query_row(
        "SELECT dek_wrapped, email_enc, keys_shredded, last_key_deletion_at FROM users WHERE id = ?1",
        [id],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
    )
    .expect("user row")
}

#[tokio::test]
async fn registering_keys_gives_version_1_and_registering_again_is_400() {
    let app = TestApp::start_with_mail().await;
    let s = app.sign_up("keys-reg").await;

    let before = info(&app, &s.access_token).await;
    assert_eq!(before["hasKeys"], false);
    assert_eq!(before["hasRecoveryKey"], false);
    assert!(before["keyVersion"].is_null(), "{before}");
    assert!(
        before["createdAt"].is_null() && before["updatedAt"].is_null(),
        "{before}"
    );

    let key = new_key();
    let body = keys(&app, &s.access_token)
        .register(json!({"publicKey": key}))
        .await
        .unwrap();
    assert_eq!(body["keyVersion"], 1);
    assert!(body["message"].as_str().is_some_and(|m| !m.is_empty()));

    let after = info(&app, &s.access_token).await;
    assert_eq!(after["hasKeys"], true);
    assert_eq!(after["hasRecoveryKey"], false);
    assert_eq!(after["keyVersion"], 1);
    assert!(
        after["createdAt"].as_str().is_some_and(|t| t.contains('T')),
        "{after}"
    );
    assert!(after["updatedAt"].is_string(), "{after}");

    let again = keys(&app, &s.access_token).register(json!({"publicKey": new_key()}));
    again.await.refused(400, "keys_already_registered");
    // The refused registration changed nothing.
    assert_published(&app, &s, &s, &key, 1).await;
}

#[tokio::test]
async fn rotation_increments_the_version_and_needs_registered_keys() {
    let app = TestApp::start_with_mail().await;
    let s = app.sign_up("keys-rot").await;
    let rotated = keys(&app, &s.access_token).rotate(json!({"publicKey": new_key()}));
    rotated.await.refused(404, "not_found");

    keys(&app, &s.access_token)
        .register(json!({"publicKey": new_key()}))
        .await
        .unwrap();
    let created = info(&app, &s.access_token).await["createdAt"].clone();
    let mut latest = String::new();
    for expected in [2, 3] {
        latest = new_key();
        let body = keys(&app, &s.access_token)
            .rotate(json!({"publicKey": latest}))
            .await
            .unwrap();
        assert_eq!(body["keyVersion"], expected);
        assert!(body["message"].is_string());
    }
    let now = info(&app, &s.access_token).await;
    assert_eq!(now["keyVersion"], 3);
    assert_eq!(
        now["createdAt"], created,
        "rotation keeps the creation time"
    );
    assert_published(&app, &s, &s, &latest, 3).await;
}

#[tokio::test]
async fn other_users_look_up_public_keys_by_user_id_or_matrix_id() {
    let app = TestApp::start_with_mail().await;
    let alice = app.sign_up("keys-pub-a").await;
    let bob = app.sign_up("keys-pub-b").await;
    let key = new_key();
    keys(&app, &alice.access_token)
        .register(json!({"publicKey": key}))
        .await
        .unwrap();

    assert_published(&app, &bob, &alice, &key, 1).await;

    let matrix_id = alice.user["matrixUserId"].as_str().expect("matrixUserId");
    let by_matrix = keys(&app, &bob.access_token)
        .public(matrix_id)
        .await
        .unwrap();
    assert_eq!(by_matrix["publicKey"], key.as_str());

    // Bob has no keys; an unknown id is no user at all.
    let lookup = keys(&app, &alice.access_token).public(&user_id(&bob)).await;
    lookup.refused(404, "not_found");
    let unknown = uuid::Uuid::new_v4();
    keys(&app, &bob.access_token)
        .public(&unknown.to_string())
        .await
        .refused(404, "not_found");
    let nobody = keys(&app, &bob.access_token)
        .public("@nobody:localhost")
        .await;
    nobody.refused(404, "not_found");

    // Key routes need a bearer token.
    let anonymous = app.anonymous().keys();
    let lookup = anonymous.public(&user_id(&alice)).await;
    lookup.refused(401, "unauthorized");
    anonymous.info().await.refused(401, "unauthorized");
}

#[tokio::test]
async fn recovery_material_is_404_until_stored_then_round_trips_with_a_salt() {
    let app = TestApp::start_with_mail().await;
    let s = app.sign_up("keys-rec").await;
    keys(&app, &s.access_token)
        .recovery()
        .await
        .refused(404, "not_found");
    keys(&app, &s.access_token)
        .register(json!({"publicKey": new_key()}))
        .await
        .unwrap();
    keys(&app, &s.access_token)
        .recovery()
        .await
        .refused(404, "not_found");

    let material = STANDARD.encode(b"opaque recovery blob: the client's wrapped master key");
    let body = json!({"publicKey": new_key(), "encryptedMasterKey": material});
    keys(&app, &s.access_token).rotate(body).await.unwrap();
    assert_eq!(info(&app, &s.access_token).await["hasRecoveryKey"], true);
    let rec = keys(&app, &s.access_token).recovery().await.unwrap();
    assert_eq!(rec["encryptedMasterKey"], material.as_str());
    let salt = rec["salt"].as_str().expect("salt");
    assert_eq!(STANDARD.decode(salt).expect("salt is base64").len(), 16);

    // Sealed at rest: neither the base64 nor the raw bytes are in the database row.
    let conn = rusqlite::Connection::open_with_flags(
        app.data_dir().join("switchboard.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    let stored: Vec<u8> = conn
        .query_row(
            "SELECT encrypted_master_key_enc FROM user_keys WHERE user_id = ?1",
            [user_id(&s)],
            |r| r.get(0),
        )
        .unwrap();
    let contains = |hay: &[u8], needle: &[u8]| hay.windows(needle.len()).any(|w| w == needle);
    assert!(!contains(&stored, material.as_bytes()));
    assert!(!contains(&stored, b"opaque recovery blob"));

    // Rotating without material keeps it; new material replaces it with a new salt.
    keys(&app, &s.access_token)
        .rotate(json!({"publicKey": new_key()}))
        .await
        .unwrap();
    let kept = keys(&app, &s.access_token).recovery().await.unwrap();
    assert_eq!(kept, rec);
    let newer = STANDARD.encode(b"second blob");
    let body = json!({"publicKey": new_key(), "encryptedMasterKey": newer});
    keys(&app, &s.access_token).rotate(body).await.unwrap();
    let replaced = keys(&app, &s.access_token).recovery().await.unwrap();
    assert_eq!(replaced["encryptedMasterKey"], newer.as_str());
    assert_ne!(replaced["salt"], rec["salt"]);

    // Material given at registration is stored as well.
    let other = app.sign_up("keys-rec-2").await;
    let body = json!({"publicKey": new_key(), "encryptedMasterKey": material});
    keys(&app, &other.access_token)
        .register(body)
        .await
        .unwrap();
    let rec2 = keys(&app, &other.access_token).recovery().await.unwrap();
    assert_eq!(rec2["encryptedMasterKey"], material.as_str());
    assert_ne!(rec2["salt"], rec["salt"]);
}

#[tokio::test]
async fn deleting_keys_needs_confirmation_shreds_the_data_key_and_is_limited_to_once_per_hour() {
    let mut app = TestApp::start_with_mail().await;
    let s = app.sign_up("keys-del").await;
    let uid = user_id(&s);
    let material = STANDARD.encode(b"recovery");
    let body = json!({"publicKey": new_key(), "encryptedMasterKey": material});
    keys(&app, &s.access_token).register(body).await.unwrap();

    keys(&app, &s.access_token)
        .delete(None)
        .await
        .refused(400, "confirmation_required");
    keys(&app, &s.access_token)
        .delete(Some("yes please"))
        .await
        .refused(400, "confirmation_required");
    keys(&app, &s.access_token)
        .delete(Some("permanently_delete_all_my_messages"))
        .await
        .refused(400, "confirmation_required");
    assert_eq!(
        info(&app, &s.access_token).await["hasKeys"],
        true,
        "refused deletions keep the keys"
    );
    let (dek_before, email_before, shredded, last) = db_user(&app, &uid);
    assert!(!shredded && last.is_none());

    let done = keys(&app, &s.access_token)
        .delete(Some(CONFIRM))
        .await
        .unwrap();
    assert!(
        done["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{done}"
    );
    assert!(
        done["warning"].as_str().is_some_and(|m| !m.is_empty()),
        "{done}"
    );

    let after = info(&app, &s.access_token).await;
    assert_eq!(after["hasKeys"], false);
    assert_eq!(after["hasRecoveryKey"], false);
    assert!(after["keyVersion"].is_null());
    let other = app.sign_up("keys-del-peer").await;
    keys(&app, &other.access_token)
        .public(&uid.to_string())
        .await
        .refused(404, "not_found");
    keys(&app, &s.access_token)
        .recovery()
        .await
        .refused(404, "not_found");

    // A new data key, the identity re-sealed under it, the user marked shredded.
    let (dek_after, email_after, shredded, last) = db_user(&app, &uid);
    assert_ne!(dek_after, dek_before, "the data key is replaced");
    assert_ne!(email_after, email_before, "the e-mail is re-sealed");
    assert!(shredded);
    assert!(last.is_some());
    // The account keeps working: e-mail and Matrix token open under the new key.
    let me = expect_json(app.get_auth("/api/auth/me", &s.access_token).await, 200).await;
    assert_eq!(me["email"], s.email.to_lowercase());
    let again = app.sign_in(&s.email, None).await;
    assert_eq!(user_id(&again), uid);
    // The same Matrix account; the new sign-in has a Matrix device of its own.
    assert_eq!(again.user["matrixUserId"], s.user["matrixUserId"]);
    assert!(again.matrix_access_token.is_some());
    assert_ne!(again.matrix_access_token, s.matrix_access_token);

    // One deletion per hour, even with no keys to delete and across a restart.
    let refused = keys(&app, &s.access_token).delete(Some(CONFIRM)).await;
    let retry: u64 = refused.as_ref().unwrap_err().headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=3600).contains(&retry), "Retry-After {retry}");
    refused.refused(429, "rate_limited");

    // Registering again works, continues the numbering and makes the user usable again.
    let body = json!({"publicKey": new_key()});
    let reg = keys(&app, &s.access_token).register(body).await.unwrap();
    assert_eq!(reg["keyVersion"], 2, "versions continue after a deletion");
    assert_eq!(info(&app, &s.access_token).await["keyVersion"], 2);
    assert!(!db_user(&app, &uid).2, "keys_shredded is cleared");
    keys(&app, &other.access_token).public(&uid).await.unwrap();

    app.restart_after_kill9().await;
    let refused = keys(&app, &s.access_token).delete(Some(CONFIRM)).await;
    assert!(refused
        .as_ref()
        .unwrap_err()
        .headers
        .get("retry-after")
        .is_some());
    refused.refused(429, "rate_limited");
    assert_eq!(info(&app, &s.access_token).await["hasKeys"], true);
}

#[tokio::test]
async fn deleting_without_keys_is_404_and_does_not_count_against_the_limit() {
    let app = TestApp::start_with_mail().await;
    let s = app.sign_up("keys-del-none").await;
    keys(&app, &s.access_token)
        .delete(Some(CONFIRM))
        .await
        .refused(404, "not_found");
    keys(&app, &s.access_token)
        .register(json!({"publicKey": new_key()}))
        .await
        .unwrap();
    keys(&app, &s.access_token)
        .delete(Some(CONFIRM))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_key_sent_at_sign_up_is_registered_with_version_1() {
    let app = TestApp::start_with_mail().await;
    let key = new_key();
    let s = app.sign_in(&unique_email("keys-signup"), Some(&key)).await;
    let now = info(&app, &s.access_token).await;
    assert_eq!(now["hasKeys"], true);
    assert_eq!(now["keyVersion"], 1);
    let lookup = keys(&app, &s.access_token)
        .public(&user_id(&s))
        .await
        .unwrap();
    assert_eq!(lookup["publicKey"], key.as_str());
    keys(&app, &s.access_token)
        .register(json!({"publicKey": new_key()}))
        .await
        .refused(400, "keys_already_registered");
    let rotated = keys(&app, &s.access_token)
        .rotate(json!({"publicKey": new_key()}))
        .await
        .unwrap();
    assert_eq!(rotated["keyVersion"], 2);
}

#[tokio::test]
async fn malformed_key_requests_are_400_json_and_store_nothing() {
    let app = TestApp::start_with_mail().await;
    let s = app.sign_up("keys-bad").await;
    let registered = app.sign_up("keys-bad-rot").await;
    keys(&app, &registered.access_token)
        .register(json!({"publicKey": new_key()}))
        .await
        .unwrap();
    let too_big = STANDARD.encode(vec![7u8; 64 * 1024 + 1]);
    let cases = [
        json!({}),
        json!({"encryptedMasterKey": STANDARD.encode(b"x")}),
        json!({"publicKey": 5}),
        json!({"publicKey": null}),
        json!({"publicKey": "not base64!"}),
        json!({"publicKey": STANDARD.encode([1u8; 31])}),
        json!({"publicKey": STANDARD.encode([1u8; 33])}),
        json!({"publicKey": ""}),
        json!({"publicKey": new_key(), "encryptedMasterKey": ""}),
        json!({"publicKey": new_key(), "encryptedMasterKey": "***"}),
        json!({"publicKey": new_key(), "encryptedMasterKey": 42}),
        json!({"publicKey": new_key(), "encryptedMasterKey": too_big}),
        json!(["publicKey"]),
    ];
    for body in cases {
        for (name, result) in [
            (
                "register",
                keys(&app, &s.access_token).register(body.clone()).await,
            ),
            (
                "rotate",
                keys(&app, &registered.access_token)
                    .rotate(body.clone())
                    .await,
            ),
        ] {
            let err = result.unwrap_err();
            assert_eq!(err.status, 400, "{name} {body}: {}", err.body);
            assert!(
                err.body["error"].is_string() && err.body["message"].is_string(),
                "{}",
                err.body
            );
        }
    }
    let resp = app
        .http
        .post(app.url("/api/keys/register"))
        .bearer_auth(&s.access_token)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    expect_error(resp, 400, "invalid_request").await;
    assert_eq!(info(&app, &s.access_token).await["hasKeys"], false);
    assert_eq!(info(&app, &registered.access_token).await["keyVersion"], 1);
}
