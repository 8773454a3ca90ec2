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

use crate::common::client::Refusal;
use crate::common::*;
use crate::push::devices::standin::ApnsStandIn;
use crate::push::devices::{device_token, register};
use crate::scheduled::reminders::{event_stream, wait_event};

mod delivery;
pub mod reminders;
mod routes;

fn random32() -> [u8; 32] {
    let mut out = [0u8; 32];
    out[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    out[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    out
}

/// The client side of the envelope seal (docs/api.md): `(encryptedBody, nonce, ephemeralPubkey)`.
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
    let created = app.api(token).scheduled().create(payload).await;
    created.expect("scheduled")
}

async fn get(app: &TestApp, token: &str, id: &str) -> Value {
    app.api(token)
        .scheduled()
        .get(id)
        .await
        .expect("scheduled message")
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
