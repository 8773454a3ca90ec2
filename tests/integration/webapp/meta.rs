//! `sealedMeta` on native room objects: a named Synapse room and a direct chat, opened
//! here with the user's private key; null without a key; absent for personal tokens.

use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde_json::{json, Value};
use switchboard::clients::matrix::encode;
use switchboard::crypto::{open_envelope, Envelope};
use x25519_dalek::{PublicKey, StaticSecret};

use crate::common::matrix::{self, MatrixUser};
use crate::common::{accept_invite, expect_json, personal_token, unique_email, TestApp};

fn key_pair() -> (StaticSecret, String) {
    let mut bytes = [0u8; 32];
    bytes[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    bytes[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    let secret = StaticSecret::from(bytes);
    let public = STANDARD.encode(PublicKey::from(&secret).as_bytes());
    (secret, public)
}

/// Opens a `sealedMeta` envelope with the user's secret: the JSON it holds.
fn open(secret: &StaticSecret, meta: &Value) -> Value {
    let field = |k: &str| meta[k].as_str().unwrap_or_else(|| panic!("{k}: {meta}"));
    let env = Envelope::from_base64(
        field("ephemeralPubkey"),
        field("nonce"),
        field("ciphertext"),
    )
    .expect("envelope");
    let plain = open_envelope(secret, &env).expect("sealedMeta opens with the user's key");
    serde_json::from_slice(&plain).expect("JSON")
}

async fn native_rooms(app: &TestApp, token: &str) -> Vec<Value> {
    let resp = app
        .get_auth("/api/rooms?archived=all&limit=100", token)
        .await;
    expect_json(resp, 200).await["rooms"]
        .as_array()
        .unwrap()
        .clone()
}

/// Polls the native list until `done` holds for the room (the sync worker's work).
async fn wait_for(
    app: &TestApp,
    token: &str,
    room_id: &str,
    what: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let rooms = native_rooms(app, token).await;
        if let Some(room) = rooms.iter().find(|r| r["roomId"] == room_id) {
            if done(room) {
                return room.clone();
            }
        }
        assert!(
            Instant::now() < deadline,
            "{room_id}: {what} not within 20 s: {rooms:?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test]
async fn sealed_meta_names_the_room_and_the_direct_partner_for_the_users_key() {
    let app = TestApp::start_with_mail().await;
    let (secret, public) = key_pair();
    let user = app.sign_in(&unique_email("meta"), Some(&public)).await;
    let me = user.user["matrixUserId"].as_str().unwrap().to_owned();
    let mine = MatrixUser::from_token(&me, user.matrix_access_token.as_deref().unwrap());
    let group = mine
        .create_room_with(json!({
            "preset": "private_chat",
            "name": "Book club",
            "topic": "Thursdays at eight",
        }))
        .await;
    let bob = matrix::register("metabob").await;
    bob.set_display_name("Bob Example").await;
    let dm = bob.create_room(None, &[&me], true).await;
    bob.send_text(&dm, "hello").await;
    accept_invite(&app, &user.access_token, &dm).await;

    let token = user.access_token.as_str();
    let named = wait_for(&app, token, &group, "the name", |r| {
        r["sealedMeta"].is_object() && open(&secret, &r["sealedMeta"])["name"] == "Book club"
    })
    .await;
    assert_eq!(
        open(&secret, &named["sealedMeta"]),
        json!({"name": "Book club", "topic": "Thursdays at eight", "avatarUrl": null, "recipientName": null})
    );
    // Native objects still have no readable fields; the client's own override stays.
    for absent in ["name", "topic", "avatarUrl"] {
        assert!(named.get(absent).is_none(), "{absent}: {named}");
    }
    assert!(named["encryptedName"].is_null());
    let direct = wait_for(&app, token, &dm, "the partner's name", |r| {
        r["sealedMeta"].is_object()
            && open(&secret, &r["sealedMeta"])["recipientName"] == "Bob Example"
    })
    .await;
    assert_eq!(direct["recipientId"], bob.user_id.as_str());
    assert_eq!(direct["isDirect"], true);
    let meta = open(&secret, &direct["sealedMeta"]);
    assert_eq!(meta["name"], "Bob Example", "{meta}");
    // One ephemeral key per answer, a nonce per room.
    let rooms = native_rooms(&app, token).await;
    let metas: Vec<&Value> = rooms.iter().map(|r| &r["sealedMeta"]).collect();
    assert!(metas.len() >= 2);
    assert!(metas
        .iter()
        .all(|m| m["ephemeralPubkey"] == metas[0]["ephemeralPubkey"]));
    assert_ne!(metas[0]["nonce"], metas[1]["nonce"]);

    // The single-room read and the priority filter carry it too.
    let detail = app
        .get_auth(&format!("/api/rooms/{}", encode(&dm)), token)
        .await;
    let detail = expect_json(detail, 200).await["room"].clone();
    assert_eq!(
        open(&secret, &detail["sealedMeta"])["recipientName"],
        "Bob Example"
    );
    let priority = expect_json(app.get_auth("/api/rooms/filter/priority", token).await, 200).await;
    for room in priority["rooms"].as_array().unwrap() {
        assert!(room["sealedMeta"].is_object(), "{room}");
    }

    // A wrong key does not open it.
    let (other, _) = key_pair();
    let env = &detail["sealedMeta"];
    let env = Envelope::from_base64(
        env["ephemeralPubkey"].as_str().unwrap(),
        env["nonce"].as_str().unwrap(),
        env["ciphertext"].as_str().unwrap(),
    )
    .unwrap();
    assert!(open_envelope(&other, &env).is_err());

    // Personal tokens: readable fields, no sealedMeta.
    let csk = personal_token(&app, &user).await;
    let resp = app.get_auth("/api/rooms?archived=all", &csk).await;
    let listed = expect_json(resp, 200).await["rooms"]
        .as_array()
        .unwrap()
        .clone();
    let group_row = listed
        .iter()
        .find(|r| r["roomId"] == group.as_str())
        .unwrap();
    assert_eq!(group_row["name"], "Book club");
    assert!(
        listed.iter().all(|r| r.get("sealedMeta").is_none()),
        "{listed:?}"
    );
    let resp = app
        .get_auth(&format!("/api/rooms/{}", encode(&dm)), &csk)
        .await;
    let room = expect_json(resp, 200).await["room"].clone();
    assert!(room.get("sealedMeta").is_none(), "{room}");
}

#[tokio::test]
async fn sealed_meta_is_null_until_a_key_is_registered() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("metanokey").await;
    let me = user.user["matrixUserId"].as_str().unwrap().to_owned();
    let mine = MatrixUser::from_token(&me, user.matrix_access_token.as_deref().unwrap());
    let room = mine.create_room(Some("Plans"), &[], false).await;
    let token = user.access_token.as_str();
    let listed = wait_for(&app, token, &room, "the room", |_| true).await;
    assert!(listed["sealedMeta"].is_null(), "{listed}");
    assert!(listed.as_object().unwrap().contains_key("sealedMeta"));
    let detail = app
        .get_auth(&format!("/api/rooms/{}", encode(&room)), token)
        .await;
    assert!(expect_json(detail, 200).await["room"]["sealedMeta"].is_null());

    // Registering a key ends the cached page: the next read is sealed to it.
    let (secret, public) = key_pair();
    let resp = app
        .post_json(
            "/api/keys/register",
            Some(token),
            json!({"publicKey": public}),
        )
        .await;
    assert!(resp.status().is_success(), "{}", resp.text().await.unwrap());
    let rooms = native_rooms(&app, token).await;
    let sealed = rooms.iter().find(|r| r["roomId"] == room.as_str()).unwrap();
    assert_eq!(open(&secret, &sealed["sealedMeta"])["name"], "Plans");
}
