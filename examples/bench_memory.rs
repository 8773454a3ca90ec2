//! Resident memory of the real application holding 100,000 messages for 10 users.
//!
//! `cargo run --release --example bench_memory`
//!
//! Builds the real `AppState` on a temporary data directory (no homeserver configured, so
//! no sync workers run), creates 10 users, stores 10,000 messages for each through the
//! sync ingest path (synthetic `/sync` responses of 1,000 messages over 10 rooms, one
//! transaction each, as a worker would), serves `GET /health` once, and prints VmRSS
//! from /proc/self/status after storing and when idle (target ≤ 60 MiB).
//!
//! Knobs: `BENCH_USERS` (10), `BENCH_MESSAGES_PER_USER` (10000).

use std::collections::HashMap;
use std::net::TcpListener;
use std::time::Duration;

use serde_json::json;
use switchboard::clients::matrix::SyncResponse;
use switchboard::config::Config;
use switchboard::services::importance::Reader;
use switchboard::services::users;
use switchboard::workers::sync::ingest::{ingest, IngestContext};
use switchboard::workers::sync::room::DirectRooms;
use switchboard::AppState;

const BATCH: usize = 1_000;
const ROOMS: usize = 10;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// VmRSS in KiB.
fn vm_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

/// One `/sync` body of `BATCH` messages over `ROOMS` rooms.
fn batch(me: &str, user: usize, batch: usize) -> Vec<u8> {
    let mut join = serde_json::Map::new();
    for r in 0..ROOMS {
        let other = format!("@friend{user}_{r}:localhost");
        let state = if batch == 0 {
            json!([
                {"type": "m.room.name", "state_key": "", "sender": other, "event_id": format!("$n{r}"),
                 "origin_server_ts": 1, "content": {"name": format!("Chat {r}")}},
                {"type": "m.room.member", "state_key": other, "sender": other, "event_id": format!("$m{r}"),
                 "origin_server_ts": 1, "content": {"membership": "join", "displayname": "Friend"}},
                {"type": "m.room.member", "state_key": me, "sender": me, "event_id": format!("$me{r}"),
                 "origin_server_ts": 1, "content": {"membership": "join"}},
            ])
        } else {
            json!([])
        };
        let timeline: Vec<_> = (0..BATCH / ROOMS)
            .map(|i| {
                let n = batch * BATCH + r * (BATCH / ROOMS) + i;
                json!({"type": "m.room.message", "event_id": format!("$e{n}"), "sender": other,
                       "origin_server_ts": 1_700_000_000_000i64 + n as i64,
                       "content": {"msgtype": "m.text", "body": format!("message number {n}, how are you?")}})
            })
            .collect();
        join.insert(
            format!("!room{r}:localhost"),
            json!({"state": {"events": state}, "timeline": {"events": timeline}}),
        );
    }
    serde_json::to_vec(&json!({"next_batch": format!("s{batch}"), "rooms": {"join": join}}))
        .expect("json")
}

fn main() {
    let user_count = env_or("BENCH_USERS", 10);
    let per_user = env_or("BENCH_MESSAGES_PER_USER", 10_000);
    let dir = tempfile::tempdir().expect("temp dir");
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let mut config = Config::default();
    config.storage.data_dir = dir.path().join("data");
    config.server.listen = format!("127.0.0.1:{port}").parse().expect("addr");
    config.log.level = "warn".to_owned();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async move {
        let state = AppState::build(config).expect("app state");
        let started = std::time::Instant::now();
        for u in 0..user_count {
            let user = users::new_user(&state, &format!("bench{u}@example.test"), None);
            let me = format!("@bench{u}:localhost");
            let dek = users::data_key(&state.master, &user).expect("dek");
            let uid = user.id.clone();
            let master_user = user.clone();
            state
                .store
                .run(move |c| {
                    switchboard::store::users::insert(c, &master_user)
                        .map_err(switchboard::error::AppError::from)
                })
                .await
                .expect("user");
            for b in 0..per_user.div_ceil(BATCH) {
                let body = batch(&me, u, b);
                let (uid, me, dek) = (uid.clone(), me.clone(), dek.clone());
                state
                    .store
                    .run(move |c| {
                        let resp: SyncResponse = serde_json::from_slice(&body).expect("parse");
                        let reader = Reader::new(&me, None);
                        let hints = HashMap::new();
                        let ctx = IngestContext {
                            user_id: &uid,
                            reader: &reader,
                            bridges: &Default::default(),
                            hints: &hints,
                            now: 1_700_000_000,
                        };
                        let tx = c.transaction()?;
                        ingest(&tx, &ctx, &dek, &mut DirectRooms::default(), &resp)?;
                        tx.commit().map_err(switchboard::error::AppError::from)
                    })
                    .await
                    .expect("ingest");
            }
        }
        let stored: i64 = state
            .store
            .run(|c| {
                c.query_row("SELECT COUNT(*) FROM messages", [], |r| r.get(0))
                    .map_err(switchboard::error::AppError::from)
            })
            .await
            .expect("count");
        println!(
            "stored {stored} messages for {user_count} users in {:.1} s; VmRSS {}",
            started.elapsed().as_secs_f64(),
            mib(vm_rss_kib())
        );

        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(switchboard::serve(state.clone(), async {
            let _ = stopped.await;
        }));
        let http = reqwest::Client::new();
        let url = format!("http://127.0.0.1:{port}/health");
        let mut health = None;
        for _ in 0..100 {
            if let Ok(resp) = http.get(&url).send().await {
                health = Some(resp.status());
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        println!(
            "GET /health → {}",
            health.map_or("no answer".into(), |s| s.to_string())
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
        let idle = vm_rss_kib();
        println!("idle VmRSS after serving: {} (target ≤ 60 MiB)", mib(idle));
        let _ = stop.send(());
        let _ = server.await;
        if idle > 60 * 1024 {
            println!("ABOVE TARGET");
            std::process::exit(1);
        }
    });
}
