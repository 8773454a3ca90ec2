//! `GET /api/attestation`: public, signed, and stable across restarts.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use ed25519_dalek::{Signature, VerifyingKey};
use serde_json::Value;

use crate::common::*;

fn bytes<const N: usize>(body: &Value, field: &str) -> [u8; N] {
    let text = body[field]
        .as_str()
        .unwrap_or_else(|| panic!("{field} missing: {body}"));
    let raw = STANDARD
        .decode(text)
        .unwrap_or_else(|_| panic!("{field} is not base64: {text}"));
    raw.try_into()
        .unwrap_or_else(|_| panic!("{field} is not {N} bytes"))
}

/// Verifies the signature over the exact documented message.
fn signature_verifies(body: &Value) -> bool {
    let message = format!(
        "switchboard-attestation-v1\n{}\n{}\n{}",
        body["serverPublicKey"].as_str().unwrap(),
        body["keyVersion"].as_i64().unwrap(),
        body["version"].as_str().unwrap()
    );
    let key = VerifyingKey::from_bytes(&bytes::<32>(body, "signingPublicKey"))
        .expect("valid Ed25519 key");
    let sig = Signature::from_bytes(&bytes::<64>(body, "signature"));
    key.verify_strict(message.as_bytes(), &sig).is_ok()
}

#[tokio::test]
async fn attestation_needs_no_authentication_and_its_signature_verifies() {
    let app = TestApp::start().await;
    let resp = app.get("/api/attestation").await;
    assert_rate_headers(&resp);
    let body = expect_json(resp, 200).await;
    bytes::<32>(&body, "serverPublicKey");
    assert_eq!(body["keyVersion"], 1);
    assert_eq!(body["version"], env!("CARGO_PKG_VERSION"));
    assert!(
        body["commit"].as_str().is_some_and(|c| !c.is_empty()),
        "{body}"
    );
    assert!(signature_verifies(&body), "signature must verify: {body}");

    // Any change to the signed fields breaks the signature.
    let mut altered = body.clone();
    altered["keyVersion"] = 2.into();
    assert!(!signature_verifies(&altered));
    let mut altered = body.clone();
    altered["version"] = "0.0.0".into();
    assert!(!signature_verifies(&altered));

    // A bad bearer token does not matter on a public route.
    let resp = app.get_auth("/api/attestation", "not-a-token").await;
    assert_eq!(expect_json(resp, 200).await, body);
}

#[tokio::test]
async fn the_server_key_is_the_one_in_the_data_directory_and_survives_restarts() {
    let mut app = TestApp::start().await;
    let first = expect_json(app.get("/api/attestation").await, 200).await;
    let second = expect_json(app.get("/api/attestation").await, 200).await;
    assert_eq!(first, second, "every call returns the same attestation");

    let secret: [u8; 32] = std::fs::read(app.data_dir().join("server_x25519.key"))
        .expect("server key file")
        .try_into()
        .expect("32 bytes");
    let public = x25519_dalek::PublicKey::from(&x25519_dalek::StaticSecret::from(secret));
    assert_eq!(first["serverPublicKey"], STANDARD.encode(public.as_bytes()));

    app.restart_after_kill9().await;
    let after = expect_json(app.get("/api/attestation").await, 200).await;
    assert_eq!(after["serverPublicKey"], first["serverPublicKey"]);
    assert_eq!(after["signingPublicKey"], first["signingPublicKey"]);
    assert!(signature_verifies(&after));
}
