//! The trusted sync device (issue #25; docs/design.md) against the real Synapse, checked from
//! outside: cross-signing keys and the sync device's signatures read from `/keys/query`
//! and verified here (canonical JSON + Ed25519), the key backup read from
//! `/room_keys/*`, secret storage opened with the recovery key, and the status route.

use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD_NO_PAD;
use base64::Engine as _;
use serde_json::{json, Value};

use crate::common::*;
use crate::e2ee::enc;

mod backup;
mod cross_signing;

const WAIT: Duration = Duration::from_secs(45);

/// `GET /api/e2ee/status` (native session).
async fn status(app: &TestApp, token: &str) -> Value {
    expect_json(app.get_auth("/api/e2ee/status", token).await, 200).await
}

/// Polls the status until `ok` holds for it.
async fn wait_status(app: &TestApp, token: &str, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let s = status(app, token).await;
        if ok(&s) {
            return s;
        }
        assert!(
            Instant::now() < deadline,
            "status never showed {what}: {s}\n{}",
            app.log()
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// Polls until the sync device is cross-signed and backing up.
async fn wait_trusted(app: &TestApp, token: &str) -> Value {
    wait_status(app, token, "a signed device with a backup", |s| {
        s["crossSigning"]["deviceSigned"] == true && s["backup"]["enabled"] == true
    })
    .await
}

/// A raw client-API call to Synapse with a Matrix access token of the account; `path`
/// without its leading slash.
async fn synapse_call(
    method: reqwest::Method,
    token: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let (status, body) =
        crate::rooms::cs_api_status(method, &format!("/{path}"), token, body).await;
    (status.as_u16(), body)
}

async fn synapse_get(token: &str, path: &str) -> (u16, Value) {
    synapse_call(reqwest::Method::GET, token, path, None).await
}

/// `/keys/query` for `user` as Synapse answers it.
async fn keys_query(token: &str, user: &str) -> Value {
    let (status, v) = synapse_call(
        reqwest::Method::POST,
        token,
        "keys/query",
        Some(json!({"device_keys": {user: []}})),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    v
}

/// The one `ed25519:<key>` of a cross-signing key object.
fn ed25519_of(key: &Value) -> String {
    let keys = key["keys"].as_object().expect("keys");
    assert_eq!(keys.len(), 1, "{key}");
    keys.values().next().unwrap().as_str().unwrap().to_owned()
}

/// Verifies the signature of `signer_key` (unpadded base64 Ed25519) by `user` on `object`
/// (Matrix signing: canonical JSON without `signatures` and `unsigned`).
fn verify_signed(object: &Value, user: &str, signer_key: &str) -> bool {
    let sig = &object["signatures"][user][format!("ed25519:{signer_key}")];
    let Some(sig) = sig.as_str() else {
        return false;
    };
    let mut unsigned = object.clone();
    let obj = unsigned.as_object_mut().unwrap();
    obj.remove("signatures");
    obj.remove("unsigned");
    let canonical = ruma::canonical_json::to_canonical_value(&unsigned)
        .unwrap()
        .to_string();
    let key: [u8; 32] = STANDARD_NO_PAD
        .decode(signer_key)
        .unwrap()
        .try_into()
        .unwrap();
    let sig: [u8; 64] = STANDARD_NO_PAD.decode(sig).unwrap().try_into().unwrap();
    let key = ed25519_dalek::VerifyingKey::from_bytes(&key).unwrap();
    key.verify_strict(
        canonical.as_bytes(),
        &ed25519_dalek::Signature::from_bytes(&sig),
    )
    .is_ok()
}

/// Asserts, from Synapse's `/keys/query`, that `device` of `user` carries a valid
/// signature of the self-signing key, itself validly signed by the master key; returns
/// the master key.
async fn assert_cross_signed(token: &str, user: &str, device: &str) -> String {
    let q = keys_query(token, user).await;
    let master = &q["master_keys"][user];
    let ssk = &q["self_signing_keys"][user];
    assert!(
        master.is_object() && ssk.is_object(),
        "no cross-signing keys: {q}"
    );
    let (mpk, sspk) = (ed25519_of(master), ed25519_of(ssk));
    assert_eq!(master["usage"], json!(["master"]), "{master}");
    assert_eq!(ssk["usage"], json!(["self_signing"]), "{ssk}");
    assert!(
        verify_signed(ssk, user, &mpk),
        "self-signing key not signed by the master key: {q}"
    );
    let dev = &q["device_keys"][user][device];
    assert!(dev.is_object(), "device {device} not listed: {q}");
    assert!(
        verify_signed(dev, user, &sspk),
        "device not signed by the self-signing key: {dev}"
    );
    // A forged signature does not pass (the check is real).
    let mut forged = dev.clone();
    forged["keys"][format!("curve25519:{device}")] = json!("AAAA");
    assert!(!verify_signed(&forged, user, &sspk));
    mpk
}

fn matrix_token(s: &Session) -> String {
    s.matrix_access_token.clone().expect("matrixAccessToken")
}

fn sync_device(app: &TestApp, user_id: &str) -> String {
    let conn = rusqlite::Connection::open_with_flags(
        app.data_dir().join("switchboard.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    conn.query_row(
        "SELECT matrix_device_id FROM users WHERE id = ?1",
        [user_id],
        |r| r.get(0),
    )
    .unwrap()
}

fn uid(s: &Session) -> String {
    s.user["id"].as_str().unwrap().to_owned()
}

/// The room keys Synapse holds in backup `version`: (room, session) pairs.
async fn backed_up(token: &str, version: &str) -> Vec<(String, String)> {
    let (status, v) = synapse_get(token, &format!("room_keys/keys?version={}", enc(version))).await;
    assert_eq!(status, 200, "{v}");
    let mut out = Vec::new();
    for (room, r) in v["rooms"].as_object().into_iter().flatten() {
        for session in r["sessions"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, _)| k)
        {
            out.push((room.clone(), session.clone()));
        }
    }
    out
}

/// A nio user's encrypted room the Switchboard user of `s` joined; returns (nio, room).
async fn encrypted_room_with(app: &TestApp, s: &Session) -> (crate::e2ee::Nio, String) {
    let me = s.user["matrixUserId"].as_str().unwrap().to_owned();
    let mut nio = crate::e2ee::Nio::start().await;
    let room = nio.call(json!({"op": "create_room", "invite": [me], "encryption": {}}))["room_id"]
        .as_str()
        .unwrap()
        .to_owned();
    accept_invite(app, &s.access_token, &room).await;
    nio.call(json!({"op": "wait_joined", "room": room, "user_id": me, "timeout": 30}));
    (nio, room)
}
