//! Key backup: room keys reach Synapse's backup, a lost crypto store restores from it,
//! the recovery key opens secret storage once (then 409; a reset, proven by the current
//! recovery key or a fresh sign-in code, makes a new backup), and
//! `DELETE /api/keys` deletes the backup on Synapse.

use matrix_sdk_crypto::secret_storage::{AesHmacSha2EncryptedData, SecretStorageKey};
use matrix_sdk_crypto::store::types::BackupDecryptionKey;
use ruma::events::secret::request::SecretName;

use super::*;
use crate::common::client::keys::CONFIRM_KEY_DELETION;
use crate::e2ee::{setup_with, wait_readable};

/// Polls Synapse's backup `version` until it holds a room key of `room`.
async fn wait_backed_up(token: &str, version: &str, room: &str) {
    let deadline = Instant::now() + WAIT;
    loop {
        let keys = backed_up(token, version).await;
        if keys.iter().any(|(r, _)| r == room) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "no key of {room} in backup {version}: {keys:?}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

#[tokio::test]
async fn room_keys_are_backed_up_and_a_lost_crypto_store_restores_from_the_backup() {
    let mut s = setup_with(json!({})).await;
    let st = wait_trusted(&s.app, &s.session.access_token).await;
    let version = st["backup"]["version"].as_str().unwrap().to_owned();
    let old_device = st["deviceId"].as_str().unwrap().to_owned();
    let mt = matrix_token(&s.session);
    s.nio.text(&s.room, "before the store was lost");
    wait_readable(&s.app, &s.token, &s.room, "before the store was lost").await;
    wait_backed_up(&mt, &version, &s.room).await;
    let st = wait_status(&s.app, &s.session.access_token, "the key backed up", |v| {
        v["backup"]["keysBackedUp"].as_u64() >= Some(1)
    })
    .await;
    assert_eq!(
        st["backup"]["keysBackedUp"], st["backup"]["keysTotal"],
        "{st}"
    );

    // The crypto store is removed while the server is stopped; nio goes on with the same
    // megolm session, whose key only the backup holds for the next sync device. More
    // messages than one sync timeline holds (100): the older ones come by back-fill.
    s.app.kill9();
    std::fs::remove_dir_all(s.app.data_dir().join("e2ee").join(uid(&s.session))).unwrap();
    let away = 110;
    s.nio
        .call(json!({"op": "send_many", "room": s.room, "prefix": "away", "count": away}));
    s.app.spawn().await;
    wait_readable(&s.app, &s.token, &s.room, &format!("away {}", away - 1)).await;
    let log = s.app.log();
    assert!(
        log.contains("crypto store restored from the key backup"),
        "{log}"
    );
    assert!(log.contains("recorded a timeline gap"), "{log}");
    // Paging back fills the gap from the homeserver: every older message decrypts too.
    let texts = read_all(&s.app, &s.token, &s.room).await;
    for i in 0..away {
        let text = format!("away {i}");
        assert!(texts.contains(&text), "{text:?} missing: {texts:?}");
    }
    assert!(
        !texts.iter().any(|t| t.contains("Unable to decrypt")),
        "{texts:?}"
    );
    // The new sync device is signed again with the kept cross-signing keys.
    let st = wait_trusted(&s.app, &s.session.access_token).await;
    let device = st["deviceId"].as_str().unwrap();
    assert_ne!(device, old_device, "{st}");
    assert_eq!(st["backup"]["version"], version.as_str(), "{st}");
    assert!(st["error"].is_null(), "{st}");
    assert_cross_signed(&mt, &s.me, device).await;
    assert_eq!(
        log.matches("cross-signing bootstrapped").count(),
        1,
        "{log}"
    );
}

/// Every message text of `room`, paging back through the readable history (which fills
/// recorded gaps from the homeserver).
async fn read_all(app: &TestApp, token: &str, room: &str) -> Vec<String> {
    let mut texts = Vec::new();
    let mut query = format!("?roomId={}&limit=50", enc(room));
    loop {
        let page = expect_json(
            app.get_auth(&format!("/api/messages{query}"), token).await,
            200,
        )
        .await;
        for m in page["messages"].as_array().unwrap() {
            texts.push(m["text"].as_str().unwrap_or_default().to_owned());
        }
        match page["nextCursor"].as_str() {
            Some(cur) => query = format!("?roomId={}&limit=50&cursor={cur}", enc(room)),
            None => return texts,
        }
    }
}

/// Opens the account's secret storage with `recovery_key` and returns the secret `name`.
async fn open_secret(token: &str, me: &str, recovery_key: &str, name: &str) -> String {
    let data = |kind: &str| format!("user/{}/account_data/{}", enc(me), enc(kind));
    let (code, default) = synapse_get(token, &data("m.secret_storage.default_key")).await;
    assert_eq!(code, 200, "{default}");
    let key_id = default["key"].as_str().unwrap().to_owned();
    let (code, info) = synapse_get(token, &data(&format!("m.secret_storage.key.{key_id}"))).await;
    assert_eq!(code, 200, "{info}");
    let event = json!({"type": format!("m.secret_storage.key.{key_id}"), "content": info});
    let ruma::events::AnyGlobalAccountDataEvent::SecretStorageKey(event) =
        serde_json::from_value(event).unwrap()
    else {
        panic!("not a secret storage key: {info}");
    };
    let content = event.content;
    let key = SecretStorageKey::from_account_data(recovery_key, content)
        .expect("the recovery key opens secret storage");
    let (code, secret) = synapse_get(token, &data(name)).await;
    assert_eq!(code, 200, "{secret}");
    let encrypted: AesHmacSha2EncryptedData =
        serde_json::from_value(secret["encrypted"][&key_id].clone()).unwrap();
    String::from_utf8(key.decrypt(&encrypted, &SecretName::from(name)).unwrap()).unwrap()
}

/// Asserts the backup key in secret storage is the one of Synapse's backup `version`.
async fn assert_backup_key(token: &str, me: &str, recovery_key: &str, version: &str) {
    let secret = open_secret(token, me, recovery_key, "m.megolm_backup.v1").await;
    let key = BackupDecryptionKey::from_base64(&secret).unwrap();
    let (code, info) = synapse_get(token, &format!("room_keys/version/{}", enc(version))).await;
    assert_eq!(code, 200, "{info}");
    assert_eq!(
        info["auth_data"]["public_key"].as_str().unwrap(),
        key.megolm_v1_public_key().to_base64()
    );
}

#[tokio::test]
async fn the_recovery_key_is_shown_once_opens_secret_storage_and_a_reset_makes_a_new_backup() {
    let app = TestApp::start_with_mail().await;
    let s = app.sign_up("trust-recovery").await;
    let me = s.user["matrixUserId"].as_str().unwrap().to_owned();
    let st = wait_trusted(&app, &s.access_token).await;
    let version = st["backup"]["version"].as_str().unwrap().to_owned();
    let mt = matrix_token(&s);

    let got = expect_json(
        app.post_json("/api/e2ee/recovery-key", Some(&s.access_token), json!({}))
            .await,
        200,
    )
    .await;
    let recovery = got["recoveryKey"].as_str().unwrap().to_owned();
    // Base58 in 12 groups of four, as Element shows it.
    let groups: Vec<&str> = recovery.split(' ').collect();
    assert_eq!(groups.len(), 12, "{recovery}");
    assert!(groups.iter().all(|g| g.len() == 4), "{recovery}");
    assert_backup_key(&mt, &me, &recovery, &version).await;
    let old_backup_key = open_secret(&mt, &me, &recovery, "m.megolm_backup.v1").await;
    // The cross-signing master key is in secret storage too (Switchboard made it).
    let seed = open_secret(&mt, &me, &recovery, "m.cross_signing.master").await;
    let seed: [u8; 32] = STANDARD_NO_PAD.decode(seed).unwrap().try_into().unwrap();
    let public = STANDARD_NO_PAD.encode(
        ed25519_dalek::SigningKey::from_bytes(&seed)
            .verifying_key()
            .as_bytes(),
    );
    let q = keys_query(&mt, &me).await;
    assert_eq!(ed25519_of(&q["master_keys"][&me]), public);

    // Once only.
    let st = status(&app, &s.access_token).await;
    assert_eq!(st["recoveryKeyShown"], true, "{st}");
    for body in [json!({}), json!({"reset": false})] {
        expect_error(
            app.post_json("/api/e2ee/recovery-key", Some(&s.access_token), body)
                .await,
            409,
            "recovery_key_shown",
        )
        .await;
    }
    expect_error(
        app.post_json(
            "/api/e2ee/recovery-key",
            Some(&s.access_token),
            json!({"reset": "yes"}),
        )
        .await,
        400,
        "invalid_request",
    )
    .await;

    // The attack: an access token alone cannot reset (which would hand out a key that
    // opens secret storage and delete the backup). Neither can a wrong recovery key or code.
    let reset_with = |body: serde_json::Value| {
        app.post_json("/api/e2ee/recovery-key", Some(&s.access_token), body)
    };
    // A well-formed recovery key of no account.
    let wrong_key = SecretStorageKey::new().to_base58();
    for body in [
        json!({"reset": true}),
        json!({"reset": true, "recoveryKey": ""}),
        json!({"reset": true, "recoveryKey": wrong_key}),
        json!({"reset": true, "recoveryKey": "not a recovery key"}),
        json!({"reset": true, "code": "123456"}),
    ] {
        let err = expect_error(reset_with(body.clone()).await, 403, "reauth_required").await;
        let message = err["message"].as_str().unwrap();
        assert!(
            message.contains("code") || message.contains("recoveryKey"),
            "{body}: {err}"
        );
    }
    for (body, field) in [
        (json!({"reset": true, "code": "12ab"}), "code"),
        (
            json!({"reset": true, "recoveryKey": "x".repeat(1025)}),
            "recoveryKey",
        ),
    ] {
        let err = expect_error(reset_with(body).await, 400, "invalid_request").await;
        assert!(err["message"].as_str().unwrap().starts_with(field), "{err}");
    }
    let st = status(&app, &s.access_token).await;
    assert_eq!(
        st["backup"]["version"],
        version.as_str(),
        "nothing changed: {st}"
    );
    assert_backup_key(&mt, &me, &recovery, &version).await;

    // A reset with the current recovery key: a new key, a new backup; the old one is gone.
    let reset = expect_json(
        reset_with(json!({"reset": true, "recoveryKey": recovery})).await,
        200,
    )
    .await;
    let new_recovery = reset["recoveryKey"].as_str().unwrap().to_owned();
    assert_ne!(new_recovery, recovery);
    let st = status(&app, &s.access_token).await;
    let new_version = st["backup"]["version"].as_str().unwrap().to_owned();
    assert_ne!(new_version, version, "{st}");
    assert_eq!(st["backup"]["enabled"], true, "{st}");
    let (code, _) = synapse_get(&mt, &format!("room_keys/version/{}", enc(&version))).await;
    assert_eq!(code, 404, "the replaced backup is deleted");
    assert_backup_key(&mt, &me, &new_recovery, &new_version).await;
    // No secret in the log: neither recovery key nor the backup keys they open.
    let new_backup_key = open_secret(&mt, &me, &new_recovery, "m.megolm_backup.v1").await;
    let log = app.log();
    for secret in [&recovery, &new_recovery, &old_backup_key, &new_backup_key] {
        assert!(!log.contains(secret.as_str()), "{log}");
    }
    expect_error(
        app.post_json("/api/e2ee/recovery-key", Some(&s.access_token), json!({}))
            .await,
        409,
        "recovery_key_shown",
    )
    .await;

    // The replaced key proves nothing any more; a fresh sign-in code does, once.
    let old = json!({"reset": true, "recoveryKey": recovery});
    expect_error(reset_with(old).await, 403, "reauth_required").await;
    let seen = crate::common::mail::messages_to(&s.email).len();
    let code = app.auth().mailed_code(&s.email, seen).await;
    let by_code = json!({"reset": true, "code": code});
    let third = expect_json(reset_with(by_code.clone()).await, 200).await;
    let third = third["recoveryKey"].as_str().unwrap().to_owned();
    assert_ne!(third, new_recovery);
    let st = status(&app, &s.access_token).await;
    let third_version = st["backup"]["version"].as_str().unwrap().to_owned();
    assert_ne!(third_version, new_version, "{st}");
    assert_backup_key(&mt, &me, &third, &third_version).await;
    expect_error(reset_with(by_code).await, 403, "reauth_required").await;
}

#[tokio::test]
async fn deleting_the_keys_deletes_the_backup_on_synapse() {
    let app = TestApp::start_with_mail().await;
    let s = app.sign_up("trust-delete").await;
    let me = s.user["matrixUserId"].as_str().unwrap().to_owned();
    crate::messages::register_key(&app, &s).await;
    let st = wait_trusted(&app, &s.access_token).await;
    let version = st["backup"]["version"].as_str().unwrap().to_owned();
    let mt = matrix_token(&s);
    let master = assert_cross_signed(&mt, &me, st["deviceId"].as_str().unwrap()).await;
    let (code, _) = synapse_get(&mt, &format!("room_keys/version/{}", enc(&version))).await;
    assert_eq!(code, 200);

    app.api(&s.access_token)
        .keys()
        .delete(Some(CONFIRM_KEY_DELETION))
        .await
        .unwrap();
    // The app's Matrix devices were logged out with the keys: sign in again.
    let s = app.sign_in(&s.email, None).await;
    let mt = matrix_token(&s);
    // Gone on Synapse when the deletion answers: it cannot bring the messages back.
    let (code, answer) = synapse_get(&mt, &format!("room_keys/version/{}", enc(&version))).await;
    assert_eq!(code, 404, "{answer}");
    assert!(
        app.log().contains("key backup deleted with the keys"),
        "{}",
        app.log()
    );

    // The next sync device gets a new backup and is signed with the same (resealed)
    // cross-signing keys.
    crate::messages::register_key(&app, &s).await;
    let st = wait_status(&app, &s.access_token, "a new backup", |v| {
        v["backup"]["enabled"] == true
            && v["backup"]["version"]
                .as_str()
                .is_some_and(|n| n != version)
            && v["crossSigning"]["deviceSigned"] == true
    })
    .await;
    assert_eq!(st["recoveryKeyShown"], false, "{st}");
    assert_eq!(
        assert_cross_signed(&mt, &me, st["deviceId"].as_str().unwrap()).await,
        master
    );
}

/// Copies the files of `from` into a new directory `to`.
fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, to.join(path.file_name().unwrap())).unwrap();
    }
}

#[tokio::test]
async fn a_store_restored_from_an_older_copy_fetches_a_missing_key_from_the_backup() {
    let mut s = setup_with(json!({})).await;
    let st = wait_trusted(&s.app, &s.session.access_token).await;
    let version = st["backup"]["version"].as_str().unwrap().to_owned();
    let mt = matrix_token(&s.session);
    // An older copy of the crypto store: the backup key, but no room key yet.
    let store = s.app.data_dir().join("e2ee").join(uid(&s.session));
    let older = tempfile::tempdir().unwrap();
    s.app.kill9();
    copy_dir(&store, &older.path().join("store"));
    s.app.spawn().await;
    s.nio.text(&s.room, "the key goes to the backup");
    wait_readable(&s.app, &s.token, &s.room, "the key goes to the backup").await;
    wait_backed_up(&mt, &version, &s.room).await;

    // The store comes back from the older copy; nio goes on with the same megolm session.
    s.app.kill9();
    std::fs::remove_dir_all(&store).unwrap();
    copy_dir(&older.path().join("store"), &store);
    s.nio.text(&s.room, "its key is only in the backup");
    s.app.spawn().await;
    wait_readable(&s.app, &s.token, &s.room, "its key is only in the backup").await;
    let log = s.app.log();
    // The one session was fetched; the store was not restored wholesale (not new).
    assert!(
        log.contains("room keys restored from the key backup"),
        "{log}"
    );
    assert!(
        !log.contains("crypto store restored from the key backup"),
        "{log}"
    );
    let st = status(&s.app, &s.session.access_token).await;
    assert_eq!(
        st["deviceId"],
        sync_device(&s.app, &uid(&s.session)).as_str(),
        "{st}"
    );
}
