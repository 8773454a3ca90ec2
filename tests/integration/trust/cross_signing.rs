//! Cross-signing: bootstrapped at sign-up and verified from Synapse's `/keys/query`, kept
//! across restarts (no second bootstrap), per user, native sessions only; a refused
//! bootstrap leaves decryption working; cross-signing replaced elsewhere is left alone.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::*;
use crate::common::homeserver_proxy::{homeserver_proxy, start_behind, Rule};
use crate::e2ee::wait_readable;

fn count(log: &str, needle: &str) -> usize {
    log.matches(needle).count()
}

#[tokio::test]
async fn sign_up_cross_signs_the_sync_device_and_a_restart_keeps_it() {
    let mut app = TestApp::start_with_mail().await;
    let s = app.sign_up("trust").await;
    let me = s.user["matrixUserId"].as_str().unwrap().to_owned();
    let st = wait_trusted(&app, &s.access_token).await;
    let device = st["deviceId"].as_str().unwrap().to_owned();
    assert_eq!(device, sync_device(&app, &uid(&s)), "{st}");
    assert_eq!(st["crossSigning"]["exists"], true, "{st}");
    assert_eq!(st["crossSigning"]["madeBySwitchboard"], true, "{st}");
    assert!(st["error"].is_null(), "{st}");
    assert_eq!(st["recoveryKeyShown"], false, "{st}");

    // Checked from outside: the signatures on Synapse verify.
    let mt = matrix_token(&s);
    let master = assert_cross_signed(&mt, &me, &device).await;
    // The backup Synapse holds is the status's, signed by the master key and the device.
    let (code, info) = synapse_get(&mt, "room_keys/version").await;
    assert_eq!(code, 200, "{info}");
    assert_eq!(info["version"], st["backup"]["version"], "{info} {st}");
    assert_eq!(info["algorithm"], "m.megolm_backup.v1.curve25519-aes-sha2");
    assert!(verify_signed(&info["auth_data"], &me, &master), "{info}");

    // A restart bootstraps nothing again: same keys, same backup, same device.
    let started = count(&app.log(), "sync worker started");
    app.restart_after_kill9().await;
    let deadline = Instant::now() + WAIT;
    while count(&app.log(), "sync worker started") < 1 + started.min(1) {
        assert!(Instant::now() < deadline, "{}", app.log());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let again = wait_trusted(&app, &s.access_token).await;
    assert_eq!(again["deviceId"], st["deviceId"]);
    assert_eq!(again["backup"]["version"], st["backup"]["version"]);
    assert_eq!(assert_cross_signed(&mt, &me, &device).await, master);
    let log = app.log();
    assert_eq!(count(&log, "cross-signing bootstrapped"), 1, "{log}");
    assert_eq!(count(&log, "key backup created"), 1, "{log}");
    assert!(!log.contains("cross-signing or key backup failed"), "{log}");
    // The account password that answered the user-interactive auth is not logged.
    let master_key =
        switchboard::crypto::MasterKey::load(&app.data_dir().join("master.key")).unwrap();
    let password = switchboard::services::matrix_sessions::matrix_password(&master_key, &uid(&s));
    assert!(!log.contains(&password));

    // Personal tokens are refused (the routes are not on the allowlist).
    let pt = personal_token(&app, &s).await;
    expect_error(
        app.get_auth("/api/e2ee/status", &pt).await,
        403,
        "forbidden_for_api_token",
    )
    .await;
    expect_error(
        app.post_json("/api/e2ee/recovery-key", Some(&pt), json!({}))
            .await,
        403,
        "forbidden_for_api_token",
    )
    .await;
    expect_error(app.get("/api/e2ee/status").await, 401, "unauthorized").await;

    // Another user sees only their own device, keys and backup.
    let other = app.sign_up("trust-other").await;
    let theirs = wait_trusted(&app, &other.access_token).await;
    assert_ne!(theirs["deviceId"], st["deviceId"]);
    assert_ne!(theirs["backup"]["version"], Value::Null);
    let other_me = other.user["matrixUserId"].as_str().unwrap();
    let other_master = assert_cross_signed(
        &matrix_token(&other),
        other_me,
        theirs["deviceId"].as_str().unwrap(),
    )
    .await;
    assert_ne!(other_master, master);
    let mine = status(&app, &s.access_token).await;
    assert_eq!(mine["deviceId"], st["deviceId"]);
}

#[tokio::test]
async fn a_refused_bootstrap_is_visible_and_leaves_decryption_working() {
    let refuse = Arc::new(AtomicBool::new(true));
    let refusing = refuse.clone();
    let (proxy, _stop) = homeserver_proxy(move |_, path| {
        if refusing.load(Ordering::SeqCst) && path.contains("/keys/device_signing/upload") {
            Rule::Refuse
        } else {
            Rule::Forward
        }
    });
    let mut app = start_behind(&proxy).await;
    let s = app.sign_up("trust-refused").await;
    // The homeserver refused the cross-signing upload: shown in the status...
    let st = wait_status(&app, &s.access_token, "the refusal", |v| {
        v["error"].is_string()
    })
    .await;
    let error = st["error"].as_str().unwrap();
    assert!(
        error.contains("cross-signing") && error.contains("403"),
        "{st}"
    );
    assert_eq!(st["crossSigning"]["exists"], false, "{st}");
    assert_eq!(st["crossSigning"]["deviceSigned"], false, "{st}");
    // ...the backup does not depend on it...
    assert_eq!(st["backup"]["enabled"], true, "{st}");
    assert!(app
        .log()
        .contains("cross-signing or key backup failed; decryption is unaffected"));
    // ...and encrypted messages are still decrypted.
    let (mut nio, room) = encrypted_room_with(&app, &s).await;
    let token = personal_token(&app, &s).await;
    nio.text(&room, "decrypted despite the refusal");
    wait_readable(&app, &token, &room, "decrypted despite the refusal").await;

    // Once the homeserver accepts, the next start bootstraps and the error clears.
    refuse.store(false, Ordering::SeqCst);
    app.restart_after_kill9().await;
    // The error is cleared when the whole round (cross-signing, then backup) has succeeded,
    // a moment after the device shows as signed.
    let st = wait_status(&app, &s.access_token, "a signed device and no error", |v| {
        v["crossSigning"]["deviceSigned"] == true && v["error"].is_null()
    })
    .await;
    assert_eq!(st["backup"]["enabled"], true, "{st}");
    let me = s.user["matrixUserId"].as_str().unwrap();
    assert_cross_signed(&matrix_token(&s), me, st["deviceId"].as_str().unwrap()).await;
    nio.text(&room, "after the bootstrap");
    wait_readable(&app, &token, &room, "after the bootstrap").await;
}

/// Uploads a new cross-signing identity (master + self-signing, signed) for `user` as
/// another client would, answering user-interactive auth with `password`; returns the
/// new master key.
async fn replace_cross_signing(token: &str, user: &str, password: &str) -> String {
    let key = |seed: u8| {
        let mut bytes = [0u8; 32];
        bytes[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
        bytes[31] = seed;
        ed25519_dalek::SigningKey::from_bytes(&bytes)
    };
    let (master, ssk, usk) = (key(1), key(2), key(3));
    let public =
        |k: &ed25519_dalek::SigningKey| STANDARD_NO_PAD.encode(k.verifying_key().as_bytes());
    let (mpk, sspk, uspk) = (public(&master), public(&ssk), public(&usk));
    let master_key =
        json!({"user_id": user, "usage": ["master"], "keys": {format!("ed25519:{mpk}"): mpk}});
    use ed25519_dalek::Signer;
    let signed = |usage: &str, pk: &str| {
        let mut k =
            json!({"user_id": user, "usage": [usage], "keys": {format!("ed25519:{pk}"): pk}});
        let canonical = ruma::canonical_json::to_canonical_value(&k)
            .unwrap()
            .to_string();
        let sig = STANDARD_NO_PAD.encode(master.sign(canonical.as_bytes()).to_bytes());
        k["signatures"] = json!({user: {format!("ed25519:{mpk}"): sig}});
        k
    };
    let (ssk_key, usk_key) = (signed("self_signing", &sspk), signed("user_signing", &uspk));
    let mut body = json!({"master_key": master_key, "self_signing_key": ssk_key,
        "user_signing_key": usk_key});
    let (code, answer) = synapse_call(
        reqwest::Method::POST,
        token,
        "keys/device_signing/upload",
        Some(body.clone()),
    )
    .await;
    if code == 401 {
        body["auth"] = json!({"type": "m.login.password", "session": answer["session"],
            "identifier": {"type": "m.id.user", "user": user}, "password": password});
        let (code, answer) = synapse_call(
            reqwest::Method::POST,
            token,
            "keys/device_signing/upload",
            Some(body),
        )
        .await;
        assert_eq!(code, 200, "{answer}");
    } else {
        assert_eq!(code, 200, "{answer}");
    }
    mpk
}

#[tokio::test]
async fn cross_signing_replaced_elsewhere_is_left_alone() {
    let mut app = TestApp::start_with_mail().await;
    let s = app.sign_up("trust-elsewhere").await;
    let me = s.user["matrixUserId"].as_str().unwrap().to_owned();
    let st = wait_trusted(&app, &s.access_token).await;
    let mt = matrix_token(&s);
    let ours = assert_cross_signed(&mt, &me, st["deviceId"].as_str().unwrap()).await;
    // Another client of the account (it knows the password) replaces cross-signing.
    crate::e2ee::sync::admin_set_password(&me).await;
    let localpart = me[1..].split(':').next().unwrap();
    let theirs = replace_cross_signing(&mt, &me, &format!("pw-{localpart}")).await;
    assert_ne!(theirs, ours);
    app.restart_after_kill9().await;
    let st = wait_status(&app, &s.access_token, "cross-signing made elsewhere", |v| {
        v["crossSigning"]["madeBySwitchboard"] == false
    })
    .await;
    assert_eq!(st["crossSigning"]["exists"], true, "{st}");
    assert_eq!(st["crossSigning"]["deviceSigned"], false, "{st}");
    assert_eq!(st["backup"]["enabled"], true, "{st}");
    // Switchboard did not reset it: the master key is still the other client's.
    let q = keys_query(&mt, &me).await;
    assert_eq!(ed25519_of(&q["master_keys"][&me]), theirs, "{q}");
    assert_eq!(
        count(&app.log(), "cross-signing bootstrapped"),
        1,
        "{}",
        app.log()
    );
    assert!(app
        .log()
        .contains("cross-signing was replaced elsewhere; left alone"));
}

#[tokio::test]
async fn without_a_homeserver_the_routes_answer_503_with_a_code() {
    let app = TestApp::start_with(TestConfig {
        matrix: MatrixMode::Missing,
        extra: crate::common::mail::smtp_config(),
    })
    .await;
    let s = app.sign_up("trust-nomatrix").await;
    expect_error(
        app.get_auth("/api/e2ee/status", &s.access_token).await,
        503,
        "encryption_unavailable",
    )
    .await;
    expect_error(
        app.post_json("/api/e2ee/recovery-key", Some(&s.access_token), json!({}))
            .await,
        503,
        "encryption_unavailable",
    )
    .await;
}
