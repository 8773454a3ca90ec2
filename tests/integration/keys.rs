//! `/api/keys/*`: registration, rotation, lookup, recovery material and crypto-shredding
//! deletion, against the real binary.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use reqwest::Method;
use serde_json::{json, Value};

use crate::common::*;

const CONFIRM: &str = "PERMANENTLY_DELETE_ALL_MY_MESSAGES";

/// A fresh base64 X25519 public key (any 32 bytes are a valid X25519 public key).
fn new_key() -> String {
    let mut bytes = Vec::with_capacity(32);
    bytes.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    bytes.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    STANDARD.encode(bytes)
}

async fn info(app: &TestApp, token: &str) -> Value {
    expect_json(app.get_auth("/api/keys/info", token).await, 200).await
}

async fn register(app: &TestApp, token: &str, body: Value) -> reqwest::Response {
    app.post_json("/api/keys/register", Some(token), body).await
}

async fn rotate(app: &TestApp, token: &str, body: Value) -> reqwest::Response {
    app.send(Method::PUT, "/api/keys", Some(token), Some(body))
        .await
}

async fn delete_keys(app: &TestApp, token: &str, confirmation: Option<&str>) -> reqwest::Response {
    let mut req = app.http.delete(app.url("/api/keys")).bearer_auth(token);
    if let Some(value) = confirmation {
        req = req.header("X-Confirm-Key-Deletion", value);
    }
    req.send().await.expect("request")
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
    let body = expect_json(
        register(&app, &s.access_token, json!({"publicKey": key})).await,
        200,
    )
    .await;
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

    let again = register(&app, &s.access_token, json!({"publicKey": new_key()})).await;
    expect_error(again, 400, "keys_already_registered").await;
    // The refused registration changed nothing.
    let lookup = app
        .get_auth(
            &format!("/api/keys/public/{}", user_id(&s)),
            &s.access_token,
        )
        .await;
    let lookup = expect_json(lookup, 200).await;
    assert_eq!(lookup["publicKey"], key.as_str());
    assert_eq!(lookup["keyVersion"], 1);
}

#[tokio::test]
async fn rotation_increments_the_version_and_needs_registered_keys() {
    let app = TestApp::start_with_mail().await;
    let s = app.sign_up("keys-rot").await;
    let resp = rotate(&app, &s.access_token, json!({"publicKey": new_key()})).await;
    expect_error(resp, 404, "not_found").await;

    expect_json(
        register(&app, &s.access_token, json!({"publicKey": new_key()})).await,
        200,
    )
    .await;
    let created = info(&app, &s.access_token).await["createdAt"].clone();
    let mut latest = String::new();
    for expected in [2, 3] {
        latest = new_key();
        let body = expect_json(
            rotate(&app, &s.access_token, json!({"publicKey": latest})).await,
            200,
        )
        .await;
        assert_eq!(body["keyVersion"], expected);
        assert!(body["message"].is_string());
    }
    let now = info(&app, &s.access_token).await;
    assert_eq!(now["keyVersion"], 3);
    assert_eq!(
        now["createdAt"], created,
        "rotation keeps the creation time"
    );
    let lookup = app
        .get_auth(
            &format!("/api/keys/public/{}", user_id(&s)),
            &s.access_token,
        )
        .await;
    let lookup = expect_json(lookup, 200).await;
    assert_eq!(lookup["publicKey"], latest.as_str());
    assert_eq!(lookup["keyVersion"], 3);
}

#[tokio::test]
async fn other_users_look_up_public_keys_by_user_id_or_matrix_id() {
    let app = TestApp::start_with_mail().await;
    let alice = app.sign_up("keys-pub-a").await;
    let bob = app.sign_up("keys-pub-b").await;
    let key = new_key();
    expect_json(
        register(&app, &alice.access_token, json!({"publicKey": key})).await,
        200,
    )
    .await;

    let by_id = app
        .get_auth(
            &format!("/api/keys/public/{}", user_id(&alice)),
            &bob.access_token,
        )
        .await;
    let by_id = expect_json(by_id, 200).await;
    assert_eq!(by_id["publicKey"], key.as_str());
    assert_eq!(by_id["keyVersion"], 1);

    let matrix_id = alice.user["matrixUserId"].as_str().expect("matrixUserId");
    let encoded = matrix_id.replace('@', "%40").replace(':', "%3A");
    let by_matrix = expect_json(
        app.get_auth(&format!("/api/keys/public/{encoded}"), &bob.access_token)
            .await,
        200,
    )
    .await;
    assert_eq!(by_matrix["publicKey"], key.as_str());

    // Bob has no keys; an unknown id is no user at all.
    let resp = app
        .get_auth(
            &format!("/api/keys/public/{}", user_id(&bob)),
            &alice.access_token,
        )
        .await;
    expect_error(resp, 404, "not_found").await;
    let unknown = uuid::Uuid::new_v4();
    expect_error(
        app.get_auth(&format!("/api/keys/public/{unknown}"), &bob.access_token)
            .await,
        404,
        "not_found",
    )
    .await;
    expect_error(
        app.get_auth("/api/keys/public/%40nobody%3Alocalhost", &bob.access_token)
            .await,
        404,
        "not_found",
    )
    .await;

    // Key routes need a bearer token.
    expect_error(
        app.get(&format!("/api/keys/public/{}", user_id(&alice)))
            .await,
        401,
        "unauthorized",
    )
    .await;
    expect_error(app.get("/api/keys/info").await, 401, "unauthorized").await;
}

#[tokio::test]
async fn recovery_material_is_404_until_stored_then_round_trips_with_a_salt() {
    let app = TestApp::start_with_mail().await;
    let s = app.sign_up("keys-rec").await;
    expect_error(
        app.get_auth("/api/keys/recovery", &s.access_token).await,
        404,
        "not_found",
    )
    .await;
    expect_json(
        register(&app, &s.access_token, json!({"publicKey": new_key()})).await,
        200,
    )
    .await;
    expect_error(
        app.get_auth("/api/keys/recovery", &s.access_token).await,
        404,
        "not_found",
    )
    .await;

    let material = STANDARD.encode(b"opaque recovery blob: the client's wrapped master key");
    let body = json!({"publicKey": new_key(), "encryptedMasterKey": material});
    expect_json(rotate(&app, &s.access_token, body).await, 200).await;
    assert_eq!(info(&app, &s.access_token).await["hasRecoveryKey"], true);
    let rec = expect_json(
        app.get_auth("/api/keys/recovery", &s.access_token).await,
        200,
    )
    .await;
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
    expect_json(
        rotate(&app, &s.access_token, json!({"publicKey": new_key()})).await,
        200,
    )
    .await;
    let kept = expect_json(
        app.get_auth("/api/keys/recovery", &s.access_token).await,
        200,
    )
    .await;
    assert_eq!(kept, rec);
    let newer = STANDARD.encode(b"second blob");
    let body = json!({"publicKey": new_key(), "encryptedMasterKey": newer});
    expect_json(rotate(&app, &s.access_token, body).await, 200).await;
    let replaced = expect_json(
        app.get_auth("/api/keys/recovery", &s.access_token).await,
        200,
    )
    .await;
    assert_eq!(replaced["encryptedMasterKey"], newer.as_str());
    assert_ne!(replaced["salt"], rec["salt"]);

    // Material given at registration is stored as well.
    let other = app.sign_up("keys-rec-2").await;
    let body = json!({"publicKey": new_key(), "encryptedMasterKey": material});
    expect_json(register(&app, &other.access_token, body).await, 200).await;
    let rec2 = expect_json(
        app.get_auth("/api/keys/recovery", &other.access_token)
            .await,
        200,
    )
    .await;
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
    expect_json(register(&app, &s.access_token, body).await, 200).await;

    expect_error(
        delete_keys(&app, &s.access_token, None).await,
        400,
        "confirmation_required",
    )
    .await;
    expect_error(
        delete_keys(&app, &s.access_token, Some("yes please")).await,
        400,
        "confirmation_required",
    )
    .await;
    expect_error(
        delete_keys(
            &app,
            &s.access_token,
            Some("permanently_delete_all_my_messages"),
        )
        .await,
        400,
        "confirmation_required",
    )
    .await;
    assert_eq!(
        info(&app, &s.access_token).await["hasKeys"],
        true,
        "refused deletions keep the keys"
    );
    let (dek_before, email_before, shredded, last) = db_user(&app, &uid);
    assert!(!shredded && last.is_none());

    let done = expect_json(delete_keys(&app, &s.access_token, Some(CONFIRM)).await, 200).await;
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
    expect_error(
        app.get_auth(&format!("/api/keys/public/{uid}"), &other.access_token)
            .await,
        404,
        "not_found",
    )
    .await;
    expect_error(
        app.get_auth("/api/keys/recovery", &s.access_token).await,
        404,
        "not_found",
    )
    .await;

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
    let resp = delete_keys(&app, &s.access_token, Some(CONFIRM)).await;
    let retry: u64 = resp.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=3600).contains(&retry), "Retry-After {retry}");
    expect_error(resp, 429, "rate_limited").await;

    // Registering again works, continues the numbering and makes the user usable again.
    let body = json!({"publicKey": new_key()});
    let reg = expect_json(register(&app, &s.access_token, body).await, 200).await;
    assert_eq!(reg["keyVersion"], 2, "versions continue after a deletion");
    assert_eq!(info(&app, &s.access_token).await["keyVersion"], 2);
    assert!(!db_user(&app, &uid).2, "keys_shredded is cleared");
    expect_json(
        app.get_auth(&format!("/api/keys/public/{uid}"), &other.access_token)
            .await,
        200,
    )
    .await;

    app.restart_after_kill9().await;
    let resp = delete_keys(&app, &s.access_token, Some(CONFIRM)).await;
    assert!(resp.headers().get("retry-after").is_some());
    expect_error(resp, 429, "rate_limited").await;
    assert_eq!(info(&app, &s.access_token).await["hasKeys"], true);
}

#[tokio::test]
async fn deleting_without_keys_is_404_and_does_not_count_against_the_limit() {
    let app = TestApp::start_with_mail().await;
    let s = app.sign_up("keys-del-none").await;
    expect_error(
        delete_keys(&app, &s.access_token, Some(CONFIRM)).await,
        404,
        "not_found",
    )
    .await;
    expect_json(
        register(&app, &s.access_token, json!({"publicKey": new_key()})).await,
        200,
    )
    .await;
    expect_json(delete_keys(&app, &s.access_token, Some(CONFIRM)).await, 200).await;
}

#[tokio::test]
async fn a_key_sent_at_sign_up_is_registered_with_version_1() {
    let app = TestApp::start_with_mail().await;
    let key = new_key();
    let s = app.sign_in(&unique_email("keys-signup"), Some(&key)).await;
    let now = info(&app, &s.access_token).await;
    assert_eq!(now["hasKeys"], true);
    assert_eq!(now["keyVersion"], 1);
    let lookup = expect_json(
        app.get_auth(
            &format!("/api/keys/public/{}", user_id(&s)),
            &s.access_token,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(lookup["publicKey"], key.as_str());
    expect_error(
        register(&app, &s.access_token, json!({"publicKey": new_key()})).await,
        400,
        "keys_already_registered",
    )
    .await;
    let rotated = expect_json(
        rotate(&app, &s.access_token, json!({"publicKey": new_key()})).await,
        200,
    )
    .await;
    assert_eq!(rotated["keyVersion"], 2);
}

#[tokio::test]
async fn malformed_key_requests_are_400_json_and_store_nothing() {
    let app = TestApp::start_with_mail().await;
    let s = app.sign_up("keys-bad").await;
    let registered = app.sign_up("keys-bad-rot").await;
    expect_json(
        register(
            &app,
            &registered.access_token,
            json!({"publicKey": new_key()}),
        )
        .await,
        200,
    )
    .await;
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
        for (name, resp) in [
            (
                "register",
                register(&app, &s.access_token, body.clone()).await,
            ),
            (
                "rotate",
                rotate(&app, &registered.access_token, body.clone()).await,
            ),
        ] {
            let status = resp.status().as_u16();
            let text = resp.text().await.unwrap();
            assert_eq!(status, 400, "{name} {body}: {text}");
            let parsed: Value =
                serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"));
            assert!(
                parsed["error"].is_string() && parsed["message"].is_string(),
                "{text}"
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
