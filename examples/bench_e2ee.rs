//! Benchmark of encrypted ingest next to plaintext ingest, in the same run, without a
//! homeserver.
//!
//! `cargo run --release --example bench_e2ee`
//!
//! Builds two synthetic `/sync` responses with the same `m.room.message` events over the
//! same rooms: one in the clear, one as `m.room.encrypted` (one Megolm session per room,
//! encrypted with vodozemac as a sending client would; the room keys are imported into a
//! crypto machine over a `matrix-sdk-sqlite` store, as if they had arrived as to-device
//! events). Then measures parse + ingest (plaintext) against parse + decrypt
//! (`workers::sync::e2ee::decrypt_response`) + ingest (encrypted) into a temporary
//! database, one transaction each as the worker does, and prints messages/s for both.
//!
//! Knobs: `BENCH_MESSAGES` (5000), `BENCH_ROOMS` (20).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use matrix_sdk_crypto::olm::ExportedRoomKey;
use matrix_sdk_crypto::types::EventEncryptionAlgorithm;
use matrix_sdk_crypto::types::{SigningKey, SigningKeys};
use matrix_sdk_crypto::vodozemac::megolm::{GroupSession, InboundGroupSession, SessionConfig};
use matrix_sdk_crypto::vodozemac::{Curve25519PublicKey, Curve25519SecretKey, Ed25519SecretKey};
use matrix_sdk_crypto::OlmMachine;
use ruma::{DeviceKeyAlgorithm, OwnedDeviceId, OwnedRoomId, OwnedUserId};
use serde_json::{json, Value};
use switchboard::clients::matrix::e2ee::UserCrypto;
use switchboard::clients::matrix::SyncResponse;
use switchboard::clients::provisioning::identity::BridgeIdentities;
use switchboard::config::StorageConfig;
use switchboard::crypto::DataKey;
use switchboard::services::importance::Reader;
use switchboard::store::users::UserRow;
use switchboard::store::Store;
use switchboard::workers::sync::e2ee::decrypt_response;
use switchboard::workers::sync::ingest::{ingest, IngestContext};
use switchboard::workers::sync::room::DirectRooms;

const ME: &str = "@bench:localhost";
const SENDER: &str = "@alice:localhost";

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn user(id: &str) -> UserRow {
    UserRow {
        id: id.to_owned(),
        email_index: id.as_bytes().to_vec(),
        email_enc: vec![0],
        dek_wrapped: vec![0],
        display_name: Some("Bench".to_owned()),
        username: None,
        avatar_url: None,
        is_admin: false,
        onboarding_completed: true,
        subscription_active: true,
        subscription_until: None,
        matrix_user_id: Some(ME.to_owned()),
        matrix_device_id: None,
        matrix_access_token_enc: None,
        primary_user_id: None,
        keys_shredded: false,
        last_key_deletion_at: None,
        created_at: 0,
        updated_at: 0,
    }
}

/// The plaintext and the encrypted `/sync` body, and the room keys of the latter.
fn bodies(messages: usize, rooms: usize) -> (Vec<u8>, Vec<u8>, Vec<ExportedRoomKey>) {
    let sender_key = Curve25519PublicKey::from(&Curve25519SecretKey::new());
    let signing = Ed25519SecretKey::new();
    let (mut plain, mut encrypted, mut keys) =
        (serde_json::Map::new(), serde_json::Map::new(), Vec::new());
    let per_room = messages.div_ceil(rooms);
    let mut n = 0;
    for r in 0..rooms {
        let room_id = format!("!room{r}:localhost");
        let mut session = GroupSession::new(SessionConfig::version_1());
        let mut inbound =
            InboundGroupSession::new(&session.session_key(), SessionConfig::version_1());
        let mut claimed = SigningKeys::new();
        claimed.insert(
            DeviceKeyAlgorithm::Ed25519,
            SigningKey::Ed25519(signing.public_key()),
        );
        keys.push(ExportedRoomKey {
            algorithm: EventEncryptionAlgorithm::MegolmV1AesSha2,
            room_id: OwnedRoomId::try_from(room_id.as_str()).unwrap(),
            sender_key,
            session_id: session.session_id(),
            session_key: inbound.export_at(0).expect("export"),
            sender_claimed_keys: claimed,
            forwarding_curve25519_key_chain: Vec::new(),
            shared_history: false,
        });
        let state = vec![
            json!({"type": "m.room.member", "state_key": ME, "sender": ME,
            "event_id": format!("$m{r}"), "origin_server_ts": 1, "content": {"membership": "join"}}),
        ];
        let (mut clear, mut sealed) = (Vec::new(), Vec::new());
        for _ in 0..per_room {
            if n == messages {
                break;
            }
            let content = json!({"msgtype": "m.text", "body": format!("message number {n}, see you at the station?")});
            let meta = |kind: &str, content: Value| {
                json!({"type": kind, "event_id": format!("$e{n}"),
                "sender": SENDER, "origin_server_ts": 1_700_000_000_000i64 + n as i64, "content": content})
            };
            clear.push(meta("m.room.message", content.clone()));
            let payload = json!({"type": "m.room.message", "content": content, "room_id": room_id});
            let ciphertext = session.encrypt(payload.to_string()).to_base64();
            sealed.push(meta(
                "m.room.encrypted",
                json!({"algorithm": "m.megolm.v1.aes-sha2",
                "sender_key": sender_key.to_base64(), "ciphertext": ciphertext,
                "session_id": session.session_id(), "device_id": "ALICEDEV"}),
            ));
            n += 1;
        }
        let room = |events: Vec<Value>| json!({"state": {"events": state}, "timeline": {"events": events}});
        plain.insert(room_id.clone(), room(clear));
        encrypted.insert(room_id, room(sealed));
    }
    let body =
        |join| serde_json::to_vec(&json!({"next_batch": "s1", "rooms": {"join": join}})).unwrap();
    (body(plain), body(encrypted), keys)
}

/// Parse (+ decrypt) + ingest of `body` for a new user; returns the time and rows stored.
async fn run(
    store: &Store,
    user_id: &str,
    body: &[u8],
    crypto: Option<&UserCrypto>,
) -> (Duration, usize) {
    switchboard::store::users::insert(&store.conn().unwrap(), &user(user_id)).unwrap();
    let dek = DataKey::generate();
    let reader = Reader::new(ME, Some("Bench"));
    let bridges = BridgeIdentities::new([]);
    let hints = HashMap::new();
    let t = Instant::now();
    let mut resp: SyncResponse = serde_json::from_slice(body).unwrap();
    if let Some(c) = crypto {
        decrypt_response(c, &mut resp).await;
    }
    let mut conn = store.conn().unwrap();
    let tx = conn.transaction().unwrap();
    let ctx = IngestContext {
        user_id,
        reader: &reader,
        bridges: &bridges,
        hints: &hints,
        now: 1_700_000_000,
    };
    let out = ingest(&tx, &ctx, &dek, &mut DirectRooms::default(), &resp).unwrap();
    tx.commit().unwrap();
    let stored: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM messages WHERE user_id = ?1 AND msgtype = 'm.text'",
            [user_id],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(out.new_messages.len(), stored as usize);
    (t.elapsed(), stored as usize)
}

#[tokio::main]
async fn main() {
    let messages = env_or("BENCH_MESSAGES", 5_000);
    let rooms = env_or("BENCH_ROOMS", 20);
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&StorageConfig {
        data_dir: dir.path().to_path_buf(),
        ..StorageConfig::default()
    })
    .unwrap();
    let (plain, encrypted, keys) = bodies(messages, rooms);
    let crypto_dir = dir.path().join("e2ee");
    let crypto_store =
        matrix_sdk_sqlite::SqliteCryptoStore::open_with_key(&crypto_dir, Some(&[7u8; 32]))
            .await
            .unwrap();
    let me = OwnedUserId::try_from(ME).unwrap();
    let machine = OlmMachine::with_store(&me, &OwnedDeviceId::from("BENCHDEV"), crypto_store, None)
        .await
        .unwrap();
    let imported = machine
        .store()
        .import_exported_room_keys(keys, |_, _| {})
        .await
        .unwrap();
    assert_eq!(imported.imported_count, rooms);
    let crypto = UserCrypto::standalone(machine, "bench-e2ee");
    println!("{messages} messages in {rooms} rooms, plaintext and Megolm-encrypted (sqlite crypto store)");
    let (t_plain, n_plain) = run(&store, "bench-plain", &plain, None).await;
    let (t_enc, n_enc) = run(&store, "bench-encrypted", &encrypted, Some(&crypto)).await;
    assert_eq!(
        (n_plain, n_enc),
        (messages, messages),
        "every message stored as text once"
    );
    let rate = |t: Duration| messages as f64 / t.as_secs_f64();
    println!(
        "plaintext ingest: {:>9.0} msgs/s ({:.0} ms)",
        rate(t_plain),
        t_plain.as_secs_f64() * 1e3
    );
    println!(
        "encrypted ingest: {:>9.0} msgs/s ({:.0} ms, decryption included)",
        rate(t_enc),
        t_enc.as_secs_f64() * 1e3
    );
}
