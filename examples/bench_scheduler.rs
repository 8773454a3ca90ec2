//! Benchmark of the scheduler.
//!
//! `cargo run --release --example bench_scheduler`
//!
//! (a) Against a real Synapse: `BENCH_USERS` (10) users, each with its own room, and
//!     `BENCH_MESSAGES` (1,000) scheduled messages (sealed to the server key like a client
//!     does) due at the same second. Measures the scheduler from that second to the last
//!     commit, and, in the same run, the same number of messages PUT straight to Synapse
//!     with the same concurrency (16), before and after. Prints both rates, the ratio
//!     (target ≥ 0.9) and the worst lateness (sentAt − scheduledFor); reads the rooms back
//!     and checks every message arrived exactly once.
//!     Homeserver: `MATRIX_BASE_URL`, `MATRIX_SERVER_NAME`, `MATRIX_SHARED_SECRET` when set
//!     (e.g. `eval "$(scripts/synapse.sh)"`); otherwise the test Synapse in
//!     `target/test-synapse` if it is running; otherwise it is started with
//!     `scripts/synapse.sh .synapse/venv target/bench-synapse 18459` (install it first with
//!     `scripts/synapse.sh --install`, or run `scripts/test.sh` once).
//! (b) Without a homeserver: `BENCH_LOCAL_MESSAGES` (20,000) messages due at once, sent to
//!     an in-process Matrix stand-in that answers at once. Measures claim + decrypt + send +
//!     state transitions: target ≥ 5,000 messages/s. Checks none was sent twice.
//!
//! `BENCH_PART=a|b` runs one part only (default both). `BENCH_PROFILE=1` also prints, in
//! (b), the cost of opening one envelope and the stand-in's raw send rate.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use poem::listener::{Acceptor, Listener, TcpListener};
use poem::web::{Data, Json, Path};
use poem::{handler, put, EndpointExt, Route, Server};
use serde_json::{json, Value};
use switchboard::config::{MatrixConfig, Secret};
use switchboard::crypto::seal_to;
use switchboard::services::{auth, users};
use switchboard::store::scheduled_messages::{self as store, ScheduledRow};
use switchboard::workers::scheduler::SEND_CONCURRENCY;
use switchboard::{AppState, Config};

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// CPU time (user + system) this process used so far, seconds (Linux; 0 elsewhere).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = stat.rsplit(')').next().unwrap_or_default();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let part = std::env::var("BENCH_PART").unwrap_or_default();
    let mut ok = true;
    if part.is_empty() || part == "a" {
        ok &= bench_synapse().await;
    }
    if part.is_empty() || part == "b" {
        ok &= bench_local().await;
    }
    if !ok {
        std::process::exit(1);
    }
}

fn state_with(dir: &std::path::Path, matrix: MatrixConfig) -> AppState {
    let mut config = Config::default();
    config.storage.data_dir = dir.join("data");
    config.matrix = Some(matrix);
    AppState::build(config).expect("application state")
}

/// Inserts `count` messages due at `due` spread over `owners` (user id, room id), sealed
/// to the server key; bodies are `"{tag} {i}"`.
async fn insert_due(
    state: &AppState,
    owners: &[(String, String)],
    count: usize,
    due: i64,
    tag: &str,
) {
    let server = state.server_keys.x25519_public();
    let now = now_ms();
    let rows: Vec<ScheduledRow> = (0..count)
        .map(|i| {
            let (user_id, room_id) = &owners[i % owners.len()];
            let (e, n, c) = seal_to(&server, format!("{tag} {i}").as_bytes())
                .unwrap()
                .to_base64();
            ScheduledRow {
                id: uuid::Uuid::new_v4().to_string(),
                user_id: user_id.clone(),
                room_id: room_id.clone(),
                encrypted_body: c,
                nonce: n,
                ephemeral_pubkey: e,
                status: store::PENDING.into(),
                scheduled_for: due,
                next_attempt_at: due,
                created_at: now,
                updated_at: now,
                ..ScheduledRow::default()
            }
        })
        .collect();
    state
        .store
        .run(move |c| {
            let tx = c.transaction()?;
            for r in &rows {
                store::insert(&tx, r)?;
            }
            tx.commit()?;
            Ok::<_, switchboard::store::StoreError>(())
        })
        .await
        .expect("insert scheduled messages");
}

struct Outcome {
    sent: i64,
    failed: i64,
    last_sent_at: i64,
    worst_lateness: i64,
}

/// Runs the real scheduler loop until every message due at `due` left `pending`.
async fn run_scheduler(state: &AppState, count: usize, due: i64) -> Outcome {
    let handle = switchboard::workers::scheduler::spawn(state);
    let deadline = Instant::now() + Duration::from_secs(600);
    // Cheap progress probe (the partial index of pending messages); the figures are read
    // once at the end from the rows themselves (sent_at), so polling does not skew them.
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let pending: bool = state
            .store
            .run(move |c| {
                c.query_row(
                    "SELECT EXISTS(SELECT 1 FROM scheduled_messages WHERE status = 'pending' \
                     AND next_attempt_at > 0 AND scheduled_for = ?1)",
                    [due],
                    |r| r.get(0),
                )
                .map_err(switchboard::store::StoreError::from)
            })
            .await
            .expect("progress");
        if !pending {
            break;
        }
        assert!(Instant::now() < deadline, "scheduler did not finish");
    }
    let outcome = state
        .store
        .run(move |c| {
            c.query_row(
                "SELECT COALESCE(SUM(status = 'sent'), 0), COALESCE(SUM(status = 'failed'), 0), \
                 COALESCE(MAX(sent_at), 0), COALESCE(MAX(sent_at - scheduled_for), 0) \
                 FROM scheduled_messages WHERE scheduled_for = ?1",
                [due],
                |r| {
                    Ok(Outcome {
                        sent: r.get(0)?,
                        failed: r.get(1)?,
                        last_sent_at: r.get(2)?,
                        worst_lateness: r.get(3)?,
                    })
                },
            )
            .map_err(switchboard::store::StoreError::from)
        })
        .await
        .expect("progress");
    let _ = count;
    state.shutdown.trigger();
    let _ = handle.await;
    outcome
}

// ---- (a) real Synapse ------------------------------------------------------------------

fn synapse_env() -> HashMap<String, String> {
    let mut env: HashMap<String, String> = [
        "MATRIX_BASE_URL",
        "MATRIX_SERVER_NAME",
        "MATRIX_SHARED_SECRET",
    ]
    .iter()
    .filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v)))
    .collect();
    if env.len() == 3 {
        return env;
    }
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let script = root.join("scripts/synapse.sh");
    let run = |args: &[&str]| {
        std::process::Command::new("bash")
            .arg(&script)
            .args(args)
            .current_dir(&root)
            .output()
            .expect("bash")
    };
    let status = run(&["--status", "target/test-synapse"]);
    let out = if status.status.success() {
        status.stdout
    } else {
        println!("starting Synapse in target/bench-synapse ...");
        let started = run(&[".synapse/venv", "target/bench-synapse", "18459"]);
        assert!(
            started.status.success(),
            "scripts/synapse.sh failed:\n{}",
            String::from_utf8_lossy(&started.stderr)
        );
        started.stdout
    };
    env = String::from_utf8_lossy(&out)
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().trim_matches('"').to_owned()))
        .collect();
    env
}

fn encode(s: &str) -> String {
    switchboard::clients::matrix::encode(s)
}

async fn direct_sends(
    http: &reqwest::Client,
    base: &str,
    owners: &[(String, String)],
    count: usize,
    tag: &str,
) -> Duration {
    let started = Instant::now();
    let results: Vec<bool> = futures_util::stream::iter(0..count)
        .map(|i| {
            let (token, room) = &owners[i % owners.len()];
            let url = format!(
                "{base}/_matrix/client/v3/rooms/{}/send/m.room.message/{}",
                encode(room),
                uuid::Uuid::new_v4()
            );
            let req = http
                .put(url)
                .bearer_auth(token)
                .json(&json!({"msgtype": "m.text", "body": format!("{tag} {i}")}));
            async move {
                req.send()
                    .await
                    .map(|r| r.status().is_success())
                    .unwrap_or(false)
            }
        })
        .buffer_unordered(SEND_CONCURRENCY)
        .collect()
        .await;
    let elapsed = started.elapsed();
    assert!(results.iter().all(|ok| *ok), "a direct send failed");
    elapsed
}

/// Bodies starting with `tag` in a room, read back through /messages.
async fn bodies_in(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    room: &str,
    tag: &str,
) -> Vec<String> {
    let mut out = Vec::new();
    let mut from: Option<String> = None;
    loop {
        let mut url = format!(
            "{base}/_matrix/client/v3/rooms/{}/messages?dir=b&limit=1000",
            encode(room)
        );
        if let Some(f) = &from {
            url.push_str(&format!("&from={}", encode(f)));
        }
        let v: Value = http
            .get(url)
            .bearer_auth(token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let chunk = v["chunk"].as_array().cloned().unwrap_or_default();
        for e in &chunk {
            if let Some(b) = e["content"]["body"].as_str() {
                if b.starts_with(tag) {
                    out.push(b.to_owned());
                }
            }
        }
        match v["end"].as_str() {
            Some(end) if !chunk.is_empty() => from = Some(end.to_owned()),
            _ => break,
        }
    }
    out
}

async fn bench_synapse() -> bool {
    let count = env_or("BENCH_MESSAGES", 1_000) as usize;
    let user_count = env_or("BENCH_USERS", 10) as usize;
    let env = synapse_env();
    let base = env["MATRIX_BASE_URL"].clone();
    println!("(a) Synapse at {base}: {count} messages over {user_count} users/rooms, concurrency {SEND_CONCURRENCY}");
    let dir = tempfile::tempdir().expect("temp dir");
    let state = state_with(
        dir.path(),
        MatrixConfig {
            homeserver_url: base.clone(),
            server_name: env["MATRIX_SERVER_NAME"].clone(),
            registration_shared_secret: Secret(env["MATRIX_SHARED_SECRET"].clone()),
        },
    );
    let http = reqwest::Client::new();
    let mut owners = Vec::new(); // (user id, room id)
    let mut tokens = Vec::new(); // (matrix token, room id)
    for i in 0..user_count {
        let email = format!("bench.{}.{i}@example.test", uuid::Uuid::new_v4().simple());
        let (user, _) = auth::find_or_create(&state, &email, None, None)
            .await
            .expect("user");
        let user = auth::ensure_matrix_account(&state, user)
            .await
            .expect("matrix account");
        let token = users::matrix_token_of(&state.master, &user)
            .unwrap()
            .unwrap();
        let created: Value = http
            .post(format!("{base}/_matrix/client/v3/createRoom"))
            .bearer_auth(&token)
            .json(&json!({"preset": "private_chat"}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let room = created["room_id"].as_str().expect("room").to_owned();
        owners.push((user.id.clone(), room.clone()));
        tokens.push((token, room));
    }

    let run = uuid::Uuid::new_v4().simple().to_string()[..8].to_owned();
    let before = direct_sends(&http, &base, &tokens, count, &format!("direct-1 {run}")).await;

    // Due at the start of a whole second, 2-3 s from now.
    let due = (now_ms() / 1000 + 3) * 1000;
    let tag = format!("scheduled {run}");
    insert_due(&state, &owners, count, due, &tag).await;
    let o = run_scheduler(&state, count, due).await;
    let after = direct_sends(&http, &base, &tokens, count, &format!("direct-2 {run}")).await;

    let sched_secs = (o.last_sent_at - due) as f64 / 1000.0;
    let sched_rate = count as f64 / sched_secs;
    let direct_rate = count as f64 / ((before + after).as_secs_f64() / 2.0);
    println!(
        "    direct PUT /send: {:.0} msg/s ({:.2} s before, {:.2} s after)",
        direct_rate,
        before.as_secs_f64(),
        after.as_secs_f64()
    );
    println!("    scheduler:        {sched_rate:.0} msg/s ({sched_secs:.2} s from the due second to the last commit)");
    println!(
        "    ratio scheduler/direct: {:.2} (target >= 0.9)",
        sched_rate / direct_rate
    );
    println!("    worst lateness: {} ms", o.worst_lateness);

    let mut seen: HashMap<String, usize> = HashMap::new();
    for (token, room) in &tokens {
        for b in bodies_in(&http, &base, token, room, &tag).await {
            *seen.entry(b).or_default() += 1;
        }
    }
    let twice = seen.values().filter(|n| **n > 1).count();
    let all_sent = o.sent as usize == count && o.failed == 0 && seen.len() == count;
    println!(
        "    check: {} sent, {} failed, {} distinct in Synapse, {} sent twice -> {}",
        o.sent,
        o.failed,
        seen.len(),
        twice,
        if all_sent && twice == 0 {
            "ok"
        } else {
            "FAILED"
        }
    );
    all_sent && twice == 0
}

// ---- (b) local stand-in ---------------------------------------------------------------

#[derive(Default)]
struct StandIn {
    calls: AtomicU64,
    per_txn: Mutex<HashMap<String, u32>>,
}

#[handler]
fn send(
    Path((_room, _kind, txn)): Path<(String, String, String)>,
    _body: Json<Value>,
    s: Data<&Arc<StandIn>>,
) -> Json<Value> {
    s.calls.fetch_add(1, Ordering::Relaxed);
    *s.per_txn.lock().unwrap().entry(txn.clone()).or_default() += 1;
    Json(json!({"event_id": format!("${txn}")}))
}

async fn bench_local() -> bool {
    let count = env_or("BENCH_LOCAL_MESSAGES", 20_000) as usize;
    let standin = Arc::new(StandIn::default());
    let acceptor = TcpListener::bind("127.0.0.1:0")
        .into_acceptor()
        .await
        .expect("bind");
    let addr = *acceptor.local_addr()[0].as_socket_addr().expect("addr");
    let app = Route::new()
        .at("/_matrix/client/v3/rooms/:room/send/:kind/:txn", put(send))
        .data(standin.clone());
    tokio::spawn(Server::new_with_acceptor(acceptor).run(app));

    let dir = tempfile::tempdir().expect("temp dir");
    let state = state_with(
        dir.path(),
        MatrixConfig {
            homeserver_url: format!("http://{addr}"),
            server_name: "localhost".into(),
            registration_shared_secret: Secret("unused".into()),
        },
    );
    let mut owners = Vec::new();
    for i in 0..10 {
        let mut user = users::new_user(&state, &format!("local{i}@example.test"), None);
        user.matrix_user_id = Some(format!("@local{i}:localhost"));
        user.matrix_access_token_enc =
            Some(users::seal_matrix_token(&state.master, &user, &format!("token-{i}")).unwrap());
        let row = user.clone();
        state
            .store
            .run(move |c| {
                switchboard::store::users::insert(c, &row)
                    .map_err(switchboard::store::StoreError::from)
            })
            .await
            .unwrap();
        owners.push((user.id, format!("!room{i}:localhost")));
    }
    if std::env::var("BENCH_PROFILE").is_ok() {
        let server = state.server_keys.x25519_public();
        let envs: Vec<_> = (0..5000)
            .map(|i| {
                seal_to(&server, format!("x {i}").as_bytes())
                    .unwrap()
                    .to_base64()
            })
            .collect();
        let t = Instant::now();
        for (e, n, c) in &envs {
            switchboard::services::scheduled::open_body(&state, c, n, e).unwrap();
        }
        println!(
            "    profile: open_body {:.1} us/msg",
            t.elapsed().as_secs_f64() * 1e6 / 5000.0
        );
        let m = state.matrix.clone().unwrap();
        let t = Instant::now();
        let _: Vec<_> = futures_util::stream::iter(0..5000)
            .map(|i| {
                let m = m.clone();
                async move {
                    m.send_event(
                        "tok",
                        "!r:l",
                        "m.room.message",
                        &format!("p{i}"),
                        &json!({"body": "x"}),
                    )
                    .await
                    .unwrap()
                }
            })
            .buffer_unordered(16)
            .collect()
            .await;
        println!(
            "    profile: send_event {:.0} msg/s",
            5000.0 / t.elapsed().as_secs_f64()
        );
    }
    let due = now_ms() + 1_000;
    let inserted = Instant::now();
    insert_due(&state, &owners, count, due, "local").await;
    println!(
        "(b) local stand-in: {count} messages due at once (inserted in {:.2} s)",
        inserted.elapsed().as_secs_f64()
    );
    let cpu_before = cpu_seconds();
    let o = run_scheduler(&state, count, due).await;
    let cpu = cpu_seconds() - cpu_before;
    let secs = (o.last_sent_at - due) as f64 / 1000.0;
    let rate = count as f64 / secs;
    let twice = standin
        .per_txn
        .lock()
        .unwrap()
        .values()
        .filter(|n| **n > 1)
        .count();
    let ok = o.sent as usize == count && twice == 0 && rate >= 5_000.0;
    println!(
        "    scheduler: {rate:.0} msg/s ({secs:.2} s), worst lateness {} ms, {} homeserver calls, {} sent twice (target >= 5000 msg/s) -> {}",
        o.worst_lateness,
        standin.calls.load(Ordering::Relaxed),
        twice,
        if ok { "ok" } else { "FAILED" }
    );
    println!(
        "    CPU: {cpu:.2} s for the run incl. the stand-in ({:.0} µs per message; {:.0} msg per CPU-second); {} cores",
        cpu * 1e6 / count as f64,
        count as f64 / cpu,
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
    );
    ok
}
