//! The native history page: one ephemeral key per response, a fresh nonce per envelope,
//! every envelope opening with the contract's recipe; the page served again is the same
//! bytes, and any write (a deleted message, a rotated key) ends it at once.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use reqwest::Method;
use serde_json::{json, Value};
use x25519_dalek::{PublicKey, StaticSecret};

use crate::common::*;

use super::{decrypt, enc, history, msg, register_key, uid, Seeder};

fn field(page: &Value, name: &str) -> Vec<String> {
    page["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["encryptedContent"][name].as_str().unwrap().to_owned())
        .collect()
}

fn opened_bodies(secret: &StaticSecret, page: &Value) -> Vec<String> {
    page["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| decrypt(secret, m)["body"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn one_response_shares_one_ephemeral_key_with_distinct_nonces_and_writes_end_the_page() {
    let app = TestApp::start_with_mail().await;
    let me = app.sign_up("msg.sealed.page").await;
    let other = app.sign_up("msg.sealed.other").await;
    let (id, other_id) = (uid(&me), uid(&other));
    let seed = Seeder::open(&app);
    let room = "!sealed-page:seed.test";
    seed.room(&id, room, None);
    seed.room(&other_id, room, None);
    let bob = "@bob:seed.test";
    let mut ids = Vec::new();
    for i in 1..=6 {
        let (mid, _) = seed.message(&id, room, &msg(bob, 1_000 * i, &format!("sealed {i}")));
        ids.push(mid);
    }
    seed.message(&other_id, room, &msg(bob, 500, "someone else's"));
    let secret = register_key(&app, &me).await;
    let other_secret = register_key(&app, &other).await;
    let query = format!("?roomId={}&limit=10", enc(room));

    // Nothing written in between: the same page, byte for byte (a repeat of one
    // encryption, not a new one under the same key and nonce). Any write in the process
    // (this user's sync worker may still be finishing its first sync) ends the page, so a
    // pair is read again until one pair falls between writes.
    let mut pair = None;
    for _ in 0..20 {
        let began = Instant::now();
        let page = history(&app, &me.access_token, &query).await;
        let again = history(&app, &me.access_token, &query).await;
        if again == page && began.elapsed() < Duration::from_millis(500) {
            pair = Some((page, again));
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (page, again) = pair.expect("two reads with no write between them return the same bytes");

    // One ephemeral key for the whole response, a distinct nonce per envelope, and each
    // envelope opens on its own with the registered key.
    let keys: HashSet<String> = field(&page, "ephemeralPubkey").into_iter().collect();
    assert_eq!(keys.len(), 1, "{page}");
    let nonces = field(&page, "nonce");
    assert_eq!(nonces.len(), 6);
    assert_eq!(nonces.iter().collect::<HashSet<_>>().len(), 6, "{nonces:?}");
    let expected: Vec<String> = (1..=6).rev().map(|i| format!("sealed {i}")).collect();
    assert_eq!(opened_bodies(&secret, &page), expected);
    assert_eq!(opened_bodies(&secret, &again), expected);

    // The other user reading the same room id gets their own page, sealed to their key.
    let theirs = history(&app, &other.access_token, &query).await;
    assert_eq!(opened_bodies(&other_secret, &theirs), ["someone else's"]);
    assert!(field(&theirs, "ephemeralPubkey")[0] != field(&page, "ephemeralPubkey")[0]);

    // A write through the service ends the page: the next read is resealed without it.
    let resp = app
        .send(
            Method::DELETE,
            &format!("/api/messages/{}", ids[5]),
            Some(&me.access_token),
            None,
        )
        .await;
    expect_json(resp, 200).await;
    let after = history(&app, &me.access_token, &query).await;
    assert_eq!(opened_bodies(&secret, &after), expected[1..]);
    assert_ne!(
        field(&after, "ephemeralPubkey")[0],
        field(&page, "ephemeralPubkey")[0],
        "a new page is sealed under a new ephemeral key"
    );

    // A rotated key: the very next page is sealed to the new key, not the old one.
    let mut bytes = [0u8; 32];
    bytes[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    bytes[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    let rotated = StaticSecret::from(bytes);
    let public = STANDARD.encode(PublicKey::from(&rotated).as_bytes());
    let resp = app
        .send(
            Method::PUT,
            "/api/keys",
            Some(&me.access_token),
            Some(json!({"publicKey": public})),
        )
        .await;
    expect_json(resp, 200).await;
    let resealed = history(&app, &me.access_token, &query).await;
    assert_eq!(opened_bodies(&rotated, &resealed), expected[1..]);
    let first = &resealed["messages"][0]["encryptedContent"];
    let env = switchboard::crypto::Envelope::from_base64(
        first["ephemeralPubkey"].as_str().unwrap(),
        first["nonce"].as_str().unwrap(),
        first["ciphertext"].as_str().unwrap(),
    )
    .unwrap();
    assert!(
        switchboard::crypto::open_envelope(&secret, &env).is_err(),
        "the old key no longer opens the page"
    );
}
