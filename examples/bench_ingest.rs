//! Benchmark of the sync ingest path, without a homeserver.
//!
//! `cargo run --release --example bench_ingest`
//!
//! Builds a synthetic `/sync` response (JSON) with 10,000 `m.room.message` events over 50
//! rooms (plus room state: create, name, members, a bridge event in every fifth room),
//! then measures parse (serde into `matrix::SyncResponse`) + score + encrypt + store into
//! a temporary SQLite database through `sync::ingest::ingest`, in one transaction as the
//! worker does. Prints messages/s (target ≥ 20,000/s) and a breakdown: scoring and
//! encryption are also timed alone over the same events; "store" is the rest of ingest.
//!
//! Knobs: `BENCH_MESSAGES` (10000), `BENCH_ROOMS` (50), `BENCH_ROUNDS` (5, each a new user
//! in the same, growing database; the median round is reported).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use switchboard::clients::matrix::SyncResponse;
use switchboard::config::StorageConfig;
use switchboard::crypto::DataKey;
use switchboard::services::conversations::{seal_message, MessageContent};
use switchboard::services::importance::{self, MessageFacts, Reader};
use switchboard::store::users::UserRow;
use switchboard::store::Store;
use switchboard::workers::sync::ingest::{ingest, IngestContext};
use switchboard::workers::sync::room::DirectRooms;

const ME: &str = "@bench:localhost";

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A `/sync` body as a homeserver would send it.
pub fn synthetic_sync(messages: usize, rooms: usize, batch: &str) -> Vec<u8> {
    const BODIES: &[&str] = &[
        "see you tomorrow at the station",
        "can you send me the report?",
        "URGENT: the deadline moved to friday",
        "bench, are you joining the call",
        "ok 👍",
        "what time works for everyone",
        "I pushed the fix, please review when you have a minute",
        "lol",
    ];
    let mut join = serde_json::Map::new();
    let per_room = messages.div_ceil(rooms);
    let mut n = 0;
    for r in 0..rooms {
        let room_id = format!("!room{r}:localhost");
        let others: Vec<String> = (0..3).map(|i| format!("@user{r}_{i}:localhost")).collect();
        let mut state = vec![
            json!({"type": "m.room.create", "state_key": "", "sender": others[0], "event_id": format!("$c{r}"),
                   "origin_server_ts": 1, "content": {"room_version": "10"}}),
            json!({"type": "m.room.name", "state_key": "", "sender": others[0], "event_id": format!("$n{r}"),
                   "origin_server_ts": 2, "content": {"name": format!("Room number {r}")}}),
        ];
        for (i, m) in others.iter().chain([&ME.to_owned()]).enumerate() {
            state.push(json!({"type": "m.room.member", "state_key": m, "sender": m,
                "event_id": format!("$m{r}_{i}"), "origin_server_ts": 3,
                "content": {"membership": "join", "displayname": format!("User {r}.{i}")}}));
        }
        if r % 5 == 0 {
            state.push(json!({"type": "m.bridge", "state_key": "localhost/whatsapp", "sender": "@whatsappbot:localhost",
                "event_id": format!("$b{r}"), "origin_server_ts": 4,
                "content": {"bridgebot": "@whatsappbot:localhost", "protocol": {"id": "whatsapp"}}}));
        }
        let mut timeline = Vec::with_capacity(per_room);
        for i in 0..per_room {
            if n == messages {
                break;
            }
            let sender = if i % 7 == 0 {
                ME
            } else {
                others[i % 3].as_str()
            };
            let content = if i % 20 == 19 {
                json!({"msgtype": "m.image", "body": "photo.jpg", "url": "mxc://localhost/abc",
                       "info": {"mimetype": "image/jpeg", "size": 123_456, "w": 800, "h": 600}})
            } else {
                json!({"msgtype": "m.text", "body": format!("{} #{n}", BODIES[n % BODIES.len()])})
            };
            timeline.push(json!({"type": "m.room.message", "event_id": format!("$e{n}_{batch}"), "sender": sender,
                "origin_server_ts": 1_700_000_000_000i64 + n as i64, "content": content,
                "unsigned": {"age": 1234}}));
            n += 1;
        }
        join.insert(
            room_id,
            json!({"state": {"events": state}, "timeline": {"events": timeline, "limited": false},
                   "unread_notifications": {"notification_count": 5, "highlight_count": 0},
                   "ephemeral": {"events": []}, "account_data": {"events": []}}),
        );
    }
    let body = json!({"next_batch": batch, "rooms": {"join": join},
                      "account_data": {"events": [{"type": "m.direct", "content": {}}]}});
    serde_json::to_vec(&body).expect("json")
}

pub fn bench_user(id: &str) -> UserRow {
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

struct Round {
    parse: Duration,
    ingest: Duration,
    score: Duration,
    encrypt: Duration,
    stored: usize,
}

fn round(store: &Store, user_id: &str, body: &[u8]) -> Round {
    switchboard::store::users::insert(&store.conn().expect("conn"), &bench_user(user_id))
        .expect("user");
    let dek = DataKey::generate();
    let reader = Reader::new(ME, Some("Bench"));
    let bots = switchboard::clients::provisioning::identity::BridgeIdentities::new([(
        "whatsapp",
        "@whatsappbot:localhost".to_owned(),
        "whatsapp_".to_owned(),
    )]);
    let hints = HashMap::new();

    let t = Instant::now();
    let resp: SyncResponse = serde_json::from_slice(body).expect("parse");
    let parse = t.elapsed();

    // Scoring and sealing alone, over the same messages, for the breakdown.
    let events: Vec<&Value> = resp
        .rooms
        .join
        .values()
        .flat_map(|r| r.timeline.events.iter().map(|e| &e.content))
        .collect();
    let t = Instant::now();
    for c in &events {
        std::hint::black_box(importance::score(
            &reader,
            &MessageFacts {
                body: c["body"].as_str().unwrap_or_default(),
                msgtype: c["msgtype"].as_str().unwrap_or("m.text"),
                is_mine: false,
                is_direct: false,
                mentioned_ids: &[],
            },
        ));
    }
    let score = t.elapsed();
    let t = Instant::now();
    for c in &events {
        let content = MessageContent {
            body: c["body"].as_str().unwrap_or_default().to_owned(),
            content: (*c).clone(),
        };
        std::hint::black_box(seal_message(
            &dek,
            "00000000-0000-0000-0000-000000000000",
            &content,
        ));
    }
    let encrypt = t.elapsed();

    let t = Instant::now();
    let mut conn = store.conn().expect("conn");
    let tx = conn.transaction().expect("tx");
    let ctx = IngestContext {
        user_id,
        reader: &reader,
        bridges: &bots,
        hints: &hints,
        now: 1_700_000_000,
    };
    let out = ingest(&tx, &ctx, &dek, &mut DirectRooms::default(), &resp).expect("ingest");
    tx.commit().expect("commit");
    let ingest = t.elapsed();
    Round {
        parse,
        ingest,
        score,
        encrypt,
        stored: out.new_messages.len(),
    }
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    let messages = env_or("BENCH_MESSAGES", 10_000);
    let rooms = env_or("BENCH_ROOMS", 50);
    let rounds = env_or("BENCH_ROUNDS", 5).max(1);
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Store::open(&StorageConfig {
        data_dir: dir.path().to_path_buf(),
        ..StorageConfig::default()
    })
    .expect("store");
    let body = synthetic_sync(messages, rooms, "s1");
    println!(
        "synthetic /sync: {messages} messages in {rooms} rooms, {:.1} MiB of JSON; {rounds} rounds (synchronous = full, WAL)",
        body.len() as f64 / (1024.0 * 1024.0)
    );
    let mut results: Vec<Round> = (0..rounds)
        .map(|i| round(&store, &format!("bench-user-{i}"), &body))
        .collect();
    for r in &results {
        assert_eq!(r.stored, messages, "every message is stored once");
    }
    results.sort_by_key(|r| r.parse + r.ingest);
    let r = &results[results.len() / 2];
    let total = r.parse + r.ingest;
    let per_sec = messages as f64 / total.as_secs_f64();
    let store_only = r.ingest.saturating_sub(r.score + r.encrypt);
    println!(
        "median round: {} total → {per_sec:.0} messages/s (target ≥ 20000)",
        ms(total)
    );
    println!("  parse    {:>10}", ms(r.parse));
    println!("  score    {:>10}  (heuristic alone)", ms(r.score));
    println!(
        "  encrypt  {:>10}  (content JSON + XChaCha20-Poly1305 alone)",
        ms(r.encrypt)
    );
    println!(
        "  store    {:>10}  (rest of ingest: rooms, members, inserts, commit)",
        ms(store_only)
    );
    println!(
        "  ingest   {:>10}  (score + encrypt + store, one transaction)",
        ms(r.ingest)
    );
    let best = &results[0];
    println!(
        "best round: {:.0} messages/s",
        messages as f64 / (best.parse + best.ingest).as_secs_f64()
    );
    if per_sec < 20_000.0 {
        println!("BELOW TARGET");
        std::process::exit(1);
    }
}
