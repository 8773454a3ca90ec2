//! Benchmark of the readable message history against the cheapest route.
//!
//! `cargo run --release --example bench_messages`
//!
//! Builds a throw-away data directory with one user, a personal API token and a room of
//! 10,000 messages (sealed through the store like the sync worker stores them), serves the
//! real application on 127.0.0.1 and drives 64 concurrent connections for 10 s each
//! against `GET /api/attestation` and `GET /api/messages?roomId=…&limit=50` (personal
//! token), then prints requests per second, the ratio, and latency percentiles.
//!
//! The measured route is served from the rendered-page cache between writes, as a script
//! polling a conversation is. For information the same route is also measured with the
//! cache off (`storage.history_cache_mb = 0`, a second server on the same database: every
//! request reads, opens and renders its page), as is the native encrypted view (JWT,
//! content sealed per message).
//!
//! Targets: messages/attestation ratio ≥ 0.5 and messages p99 ≤ 20 ms (2 cores).
//! Knobs: `BENCH_SECS` (10), `BENCH_CONNS` (64), `BENCH_MESSAGES` (10000),
//! `BENCH_SERVER_THREADS` (2), `BENCH_CLIENT_THREADS` (2), `BENCH_LIMIT` (50), `BENCH_ONLY`
//! (`attestation`, `messages`, `uncached` or `native`: run one route only).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use poem::listener::{Acceptor, Listener, TcpListener};
use poem::Server;
use serde_json::json;
use switchboard::config::HumanDuration;
use switchboard::crypto::DataKey;
use switchboard::services::conversations::{
    seal_message, seal_room_field, MessageContent, RoomField,
};
use switchboard::services::{keys, tokens, users};
use switchboard::store::messages::{insert_if_new, MessageRow};
use switchboard::store::rooms::{self, RoomRow};
use switchboard::store::{user_keys, users as user_store};
use switchboard::{api, AppState, Config};

const ROOM_ID: &str = "!bench:localhost";
const OWN_ID: &str = "@bench:localhost";

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let secs = env_or("BENCH_SECS", 10);
    let conns = env_or("BENCH_CONNS", 64) as usize;
    let count = env_or("BENCH_MESSAGES", 10_000);
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(env_or("BENCH_SERVER_THREADS", 2) as usize)
        .thread_name("server")
        .enable_all()
        .build()
        .expect("server runtime");
    let client_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(env_or("BENCH_CLIENT_THREADS", 2) as usize)
        .thread_name("client")
        .enable_all()
        .build()
        .expect("client runtime");

    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = Config::default();
    config.storage.data_dir = dir.path().join("data");
    config.rate_limit.requests = 1_000_000_000;
    config.rate_limit.window = HumanDuration(Duration::from_secs(60));
    let mut uncached_config = config.clone();
    uncached_config.storage.history_cache_mb = 0;
    let state = AppState::build(config).expect("application state");
    let (token, jwt) = server_rt.block_on(seed(&state, count));
    println!("seeded {count} messages in {ROOM_ID}");
    let uncached_state = AppState::build(uncached_config).expect("second application state");

    let addr = server_rt.block_on(serve(state));
    let uncached_addr = server_rt.block_on(serve(uncached_state));
    let base = format!("http://{addr}");
    let room = switchboard::matrix::encode(ROOM_ID);
    let limit = env_or("BENCH_LIMIT", 50);
    let path = format!("/api/messages?roomId={room}&limit={limit}");
    let messages_url = format!("{base}{path}");
    let uncached_url = format!("http://{uncached_addr}{path}");
    let duration = Duration::from_secs(secs);

    client_rt.block_on(async {
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(conns)
            .http1_only()
            .build()
            .expect("client");
        check(&client, &messages_url, Some(&token), limit as usize).await;
        let attestation_url = format!("{base}/api/attestation");
        let only = std::env::var("BENCH_ONLY").unwrap_or_default();
        let skip = |name: &str| !only.is_empty() && only != name;
        let warm = Duration::from_secs(1);
        let mut att = None;
        if !skip("attestation") {
            run(&client, &attestation_url, None, conns, warm).await;
            att = Some(run(&client, &attestation_url, None, conns, duration).await);
        }
        let mut msg = None;
        if !skip("messages") {
            run(&client, &messages_url, Some(&token), conns, warm).await;
            msg = Some(run(&client, &messages_url, Some(&token), conns, duration).await);
        }
        let mut uncached = None;
        if !skip("uncached") {
            check(&client, &uncached_url, Some(&token), limit as usize).await;
            run(&client, &uncached_url, Some(&token), conns, warm).await;
            uncached = Some(run(&client, &uncached_url, Some(&token), conns, duration).await);
        }
        let mut native = None;
        if !skip("native") {
            native = Some(run(&client, &messages_url, Some(&jwt), conns, duration).await);
        }
        println!("{conns} connections, {secs} s per route, limit {limit}");
        let routes = [
            ("GET /api/attestation", &att),
            ("GET /api/messages (personal token)", &msg),
            ("  same, page cache off", &uncached),
            ("GET /api/messages (native, sealed)", &native),
        ];
        for (what, outcome) in routes {
            if let Some(o) = outcome {
                o.print(what);
            }
        }
        if let (Some(att), Some(msg)) = (&att, &msg) {
            let ratio = msg.rate() / att.rate();
            let p99 = msg.percentile(0.99);
            println!(
                "ratio messages/attestation = {ratio:.3} (target >= 0.5: {}), messages p99 = {:.2} ms (target <= 20 ms: {})",
                verdict(ratio >= 0.5),
                ms(p99),
                verdict(p99 <= Duration::from_millis(20)),
            );
        }
        if let (Some(att), Some(unc)) = (&att, &uncached) {
            println!(
                "for information, with the page cache off: ratio {:.3}, p99 {:.2} ms",
                unc.rate() / att.rate(),
                ms(unc.percentile(0.99)),
            );
        }
    });
}

/// Serves the application on a free port of 127.0.0.1.
async fn serve(state: AppState) -> SocketAddr {
    let acceptor = TcpListener::bind("127.0.0.1:0")
        .into_acceptor()
        .await
        .expect("bind");
    let addr = *acceptor.local_addr()[0]
        .as_socket_addr()
        .expect("tcp address");
    tokio::spawn(Server::new_with_acceptor(acceptor).run(api::app(state)));
    addr
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "PASS"
    } else {
        "FAIL"
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// A user with a Matrix ID, a registered X25519 key, a personal token, a JWT, and a room
/// of `count` messages from two senders, one second apart.
async fn seed(state: &AppState, count: u64) -> (String, String) {
    let mut user = users::new_user(state, "bench@example.test", None);
    user.matrix_user_id = Some(OWN_ID.to_owned());
    let dek: DataKey = users::data_key(&state.master, &user).expect("data key");
    let public = base64::engine::general_purpose::STANDARD.encode([9u8; 32]);
    let key = keys::new_key_row(&user.id, public, None, 1, user.created_at);
    let uid = user.id.clone();
    let now_ms = user.created_at * 1000;
    state
        .store
        .run(move |c| {
            let tx = c.transaction()?;
            user_store::insert(&tx, &user)?;
            user_keys::upsert(&tx, &key)?;
            let name = seal_room_field(&dek, &user.id, ROOM_ID, RoomField::Name, "Bench room");
            rooms::upsert(
                &tx,
                &RoomRow {
                    user_id: user.id.clone(),
                    room_id: ROOM_ID.to_owned(),
                    name_enc: Some(name),
                    platform: Some("whatsapp".to_owned()),
                    member_count: 2,
                    membership: "join".to_owned(),
                    created_at: user.created_at,
                    updated_at: user.created_at,
                    ..RoomRow::default()
                },
            )?;
            for i in 0..count as i64 {
                let id = uuid::Uuid::new_v4().to_string();
                let mine = i % 3 == 0;
                let body = format!(
                    "Message {i}: are we still meeting at the usual place tomorrow around noon?"
                );
                let content = MessageContent {
                    content: json!({"msgtype": "m.text", "body": body}),
                    body,
                };
                insert_if_new(
                    &tx,
                    &MessageRow {
                        content_enc: seal_message(&dek, &id, &content),
                        id,
                        user_id: user.id.clone(),
                        room_id: ROOM_ID.to_owned(),
                        event_id: format!("$event{i:06}"),
                        sender_id: if mine { OWN_ID } else { "@alice:localhost" }.to_owned(),
                        ts: now_ms - (count as i64 - i) * 1000,
                        msgtype: "m.text".to_owned(),
                        is_mine: mine,
                        importance: (i % 10) as f64 / 10.0,
                        category: "general".to_owned(),
                        is_question: true,
                        created_at: user.created_at,
                        ..MessageRow::default()
                    },
                )?;
            }
            Ok::<_, switchboard::store::StoreError>(tx.commit()?)
        })
        .await
        .expect("seed");
    let token = tokens::create(state, &uid, "bench", None)
        .await
        .expect("personal token")
        .token;
    let (jwt, _) = state.jwt.issue(&uid, None).expect("jwt");
    (token, jwt)
}

async fn check(client: &reqwest::Client, url: &str, token: Option<&str>, limit: usize) {
    let mut req = client.get(url);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let resp = req.send().await.expect("request");
    let status = resp.status();
    let body: serde_json::Value = resp.json().await.expect("json");
    assert!(status.is_success(), "{status}: {body}");
    assert_eq!(
        body["messages"].as_array().map(Vec::len),
        Some(limit),
        "{body}"
    );
}

/// CPU seconds used so far by this process's threads whose name starts with `prefix`
/// (Linux `/proc`; 0 elsewhere).
fn cpu_secs(prefix: &str) -> f64 {
    let ticks_per_sec = 100.0;
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0.0;
    };
    let mut total = 0u64;
    for task in tasks.flatten() {
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        if !stat[open + 1..close].starts_with(prefix) {
            continue;
        }
        let fields: Vec<&str> = stat[close + 2..].split(' ').collect();
        let utime: u64 = fields.get(11).and_then(|v| v.parse().ok()).unwrap_or(0);
        let stime: u64 = fields.get(12).and_then(|v| v.parse().ok()).unwrap_or(0);
        total += utime + stime;
    }
    total as f64 / ticks_per_sec
}

struct Outcome {
    elapsed: Duration,
    /// Server and client CPU per successful request.
    server_cpu: Duration,
    client_cpu: Duration,
    ok: u64,
    errors: u64,
    latencies: Vec<Duration>,
}

impl Outcome {
    fn rate(&self) -> f64 {
        self.ok as f64 / self.elapsed.as_secs_f64()
    }

    fn percentile(&self, p: f64) -> Duration {
        if self.latencies.is_empty() {
            return Duration::ZERO;
        }
        let i = ((self.latencies.len() as f64 * p).ceil() as usize).clamp(1, self.latencies.len());
        self.latencies[i - 1]
    }

    fn print(&self, what: &str) {
        println!(
            "{what:<36} {:>7.0} req/s  p50 {:>6.2} ms  p99 {:>6.2} ms  max {:>7.2} ms  CPU/req server {:>4.0} µs client {:>4.0} µs  errors {}",
            self.rate(),
            ms(self.percentile(0.5)),
            ms(self.percentile(0.99)),
            ms(self.latencies.last().copied().unwrap_or_default()),
            self.server_cpu.as_secs_f64() * 1e6,
            self.client_cpu.as_secs_f64() * 1e6,
            self.errors
        );
    }
}

/// `conns` loops, each sending one request after the other until `duration` is over.
async fn run(
    client: &reqwest::Client,
    url: &str,
    token: Option<&str>,
    conns: usize,
    duration: Duration,
) -> Outcome {
    let start = Instant::now();
    let cpu_before = (cpu_secs("server"), cpu_secs("client"));
    let deadline = start + duration;
    let url: Arc<str> = url.into();
    let token: Option<Arc<str>> = token.map(Into::into);
    let tasks: Vec<_> = (0..conns)
        .map(|_| {
            let (client, url, token) = (client.clone(), url.clone(), token.clone());
            tokio::spawn(async move {
                let (mut ok, mut errors, mut latencies) = (0u64, 0u64, Vec::new());
                while Instant::now() < deadline {
                    let began = Instant::now();
                    let mut req = client.get(&*url);
                    if let Some(t) = &token {
                        req = req.bearer_auth(t);
                    }
                    let good = match req.send().await {
                        Ok(resp) => resp.status().is_success() && resp.bytes().await.is_ok(),
                        Err(_) => false,
                    };
                    if good {
                        ok += 1;
                        latencies.push(began.elapsed());
                    } else {
                        errors += 1;
                    }
                }
                (ok, errors, latencies)
            })
        })
        .collect();
    let mut out = Outcome {
        elapsed: Duration::ZERO,
        server_cpu: Duration::ZERO,
        client_cpu: Duration::ZERO,
        ok: 0,
        errors: 0,
        latencies: Vec::new(),
    };
    for t in tasks {
        let (ok, errors, latencies) = t.await.expect("load task");
        out.ok += ok;
        out.errors += errors;
        out.latencies.extend(latencies);
    }
    out.elapsed = start.elapsed();
    let per_request = |before: f64, now: f64| {
        Duration::from_secs_f64((now - before).max(0.0) / out.ok.max(1) as f64)
    };
    out.server_cpu = per_request(cpu_before.0, cpu_secs("server"));
    out.client_cpu = per_request(cpu_before.1, cpu_secs("client"));
    out.latencies.sort();
    out
}
