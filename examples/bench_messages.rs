//! Benchmark of every read route against the cheapest route of the same binary (issue 13).
//!
//! `cargo run --release --example bench_messages`
//!
//! Builds a throw-away data directory with one user (a registered X25519 key, a personal
//! API token, a JWT), a room of 2,000 messages (sealed through the store like the sync
//! worker stores them) and 199 more rooms (200 in all), serves the real application on
//! 127.0.0.1 and drives 64 concurrent connections for 10 s per route, then prints requests
//! per second, p99, the ratio to `GET /api/attestation` and the target of each row:
//!
//! - readable history (personal token), also while 20 messages/s arrive;
//! - native sealed history (JWT), also while 20 messages/s arrive;
//! - the room list with 200 rooms, both views, default page and `limit=100`;
//! - the single-room read and `GET /api/messages/stats`.
//!
//! Messages "arrive" as the sync worker stores them: one store job per message, each a
//! write that ends every cached page. Ratios within one run are what count (the machine is
//! shared). Knobs: `BENCH_SECS` (10), `BENCH_CONNS` (64), `BENCH_MESSAGES` (2000),
//! `BENCH_ROOMS` (200), `BENCH_SERVER_THREADS` (2), `BENCH_CLIENT_THREADS` (2),
//! `BENCH_LIMIT` (50), `BENCH_ONLY` (a substring of the row names: run those rows only).
//!
//! With `BENCH_MATRIX_URL` and `BENCH_MATRIX_SHARED_SECRET` (set by `scripts/bench.sh`, which
//! starts a throw-away Synapse), it also registers a Matrix user there, fills a room with the
//! same number of messages through Synapse and measures Synapse's own
//! `GET /_matrix/client/v3/rooms/{roomId}/messages?dir=b&limit=50` with the same load generator.
//! `BENCH_USERS=N` (or `--users N`) runs the many-users mode instead: see `bench_support/many_users.rs`.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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

#[path = "bench_support/many_users.rs"]
mod many_users;
#[path = "bench_support/synapse.rs"]
mod synapse;

const ROOM_ID: &str = "!bench:localhost";
const OWN_ID: &str = "@bench:localhost";

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Who calls a row's route.
#[derive(Clone, Copy)]
enum Caller {
    Token,
    Native,
}

/// One row of the table: a route, its caller, whether messages arrive meanwhile, and the
/// target ratio to the trivial route.
struct Row {
    name: &'static str,
    path: String,
    caller: Caller,
    arriving: bool,
    target: f64,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let users = match args.iter().position(|a| a == "--users") {
        Some(i) => args
            .get(i + 1)
            .and_then(|v| v.parse().ok())
            .expect("--users N"),
        None => env_or("BENCH_USERS", 0),
    };
    if users > 0 {
        let hs = synapse::Homeserver::from_env()
            .expect("the many-users mode needs a Synapse: run scripts/bench.sh --users N");
        let rooms = env_or("BENCH_USER_ROOMS", 50);
        return many_users::main(hs, users, rooms, env_or("BENCH_IDLE_SECS", 30));
    }
    let secs = env_or("BENCH_SECS", 10);
    let conns = env_or("BENCH_CONNS", 64) as usize;
    let count = env_or("BENCH_MESSAGES", 2_000);
    let room_count = env_or("BENCH_ROOMS", 200);
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
    let state = AppState::build(config).expect("application state");
    let (token, jwt, uid) = server_rt.block_on(seed(&state, count, room_count));
    println!("seeded {count} messages in {ROOM_ID} and {room_count} rooms in all");

    let addr = server_rt.block_on(serve(state.clone()));
    let base = format!("http://{addr}");
    let room = switchboard::clients::matrix::encode(ROOM_ID);
    let limit = env_or("BENCH_LIMIT", 50);
    let history = format!("/api/messages?roomId={room}&limit={limit}");
    let row = |name, path: &str, caller, arriving, target| Row {
        name,
        path: path.to_owned(),
        caller,
        arriving,
        target,
    };
    let rows = [
        row(
            "readable history (personal token)",
            &history,
            Caller::Token,
            false,
            0.8,
        ),
        row(
            "  while 20 msg/s arrive",
            &history,
            Caller::Token,
            true,
            0.6,
        ),
        row(
            "native sealed history (access token)",
            &history,
            Caller::Native,
            false,
            0.5,
        ),
        row(
            "  while 20 msg/s arrive ",
            &history,
            Caller::Native,
            true,
            0.4,
        ),
        row(
            "room list (personal token)",
            "/api/rooms",
            Caller::Token,
            false,
            0.5,
        ),
        row(
            "  limit=100",
            "/api/rooms?limit=100",
            Caller::Token,
            false,
            0.5,
        ),
        row(
            "room list (native)",
            "/api/rooms",
            Caller::Native,
            false,
            0.5,
        ),
        row(
            "  limit=100 ",
            "/api/rooms?limit=100",
            Caller::Native,
            false,
            0.5,
        ),
        row(
            "room detail (personal token)",
            &format!("/api/rooms/{room}"),
            Caller::Token,
            false,
            0.5,
        ),
        row(
            "/api/messages/stats",
            "/api/messages/stats",
            Caller::Native,
            false,
            0.5,
        ),
    ];
    let only = std::env::var("BENCH_ONLY").unwrap_or_default();
    let duration = Duration::from_secs(secs);
    let arriving = Arc::new(AtomicBool::new(false));
    let arrived = Arc::new(AtomicU64::new(0));
    server_rt.spawn(arrive(state, uid, arriving.clone(), arrived.clone()));

    let hs = synapse::Homeserver::from_env();
    let synapse_page = hs.as_ref().map(|hs| {
        client_rt.block_on(async {
            let began = Instant::now();
            let who = hs
                .register(
                    &format!("bench_{}", &uuid::Uuid::new_v4().simple().to_string()[..8]),
                    "bench-password",
                )
                .await;
            let room = hs.create_room(&who, "Bench room").await;
            hs.fill(&who, &room, count, 8).await;
            println!(
                "filled {room} on Synapse ({}) with {count} messages in {:.1} s",
                hs.base,
                began.elapsed().as_secs_f64()
            );
            (hs.messages_url(&room, limit), who.token)
        })
    });

    client_rt.block_on(async {
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(conns)
            .http1_only()
            .build()
            .expect("client");
        let bearer = |c: Caller| match c {
            Caller::Token => Some(token.as_str()),
            Caller::Native => Some(jwt.as_str()),
        };
        check(
            &client,
            &format!("{base}{history}"),
            Some(&token),
            limit as usize,
        )
        .await;
        check(
            &client,
            &format!("{base}{history}"),
            Some(&jwt),
            limit as usize,
        )
        .await;
        let warm = Duration::from_secs(1);
        let trivial = format!("{base}/api/attestation");
        run(&client, &trivial, None, conns, warm).await;
        let att = run(&client, &trivial, None, conns, duration).await;
        let mut measured = Vec::new();
        for r in rows
            .iter()
            .filter(|r| only.is_empty() || r.name.contains(&only))
        {
            let url = format!("{base}{}", r.path);
            let t = bearer(r.caller);
            run(&client, &url, t, conns, warm).await;
            arriving.store(r.arriving, Ordering::SeqCst);
            let before = arrived.load(Ordering::SeqCst);
            let o = run(&client, &url, t, conns, duration).await;
            arriving.store(false, Ordering::SeqCst);
            let n = arrived.load(Ordering::SeqCst) - before;
            measured.push((r, o, n));
        }
        let synapse_run = match &synapse_page {
            Some((url, t)) if only.is_empty() || "synapse".contains(&only.to_lowercase()) => {
                let chunk = client.get(url).bearer_auth(t).send().await.expect("synapse page");
                let body: serde_json::Value = chunk.json().await.expect("json");
                assert_eq!(body["chunk"].as_array().map(Vec::len), Some(limit as usize), "{body}");
                run(&client, url, Some(t), conns, warm).await;
                Some(run(&client, url, Some(t), conns, duration).await)
            }
            _ => None,
        };
        println!(
            "{conns} connections, {secs} s per route, history limit {limit}, {room_count} rooms"
        );
        println!(
            "{:<40} {:>8} {:>9} {:>9}  target",
            "route", "req/s", "p99 ms", "x trivial"
        );
        println!(
            "{:<40} {:>8.0} {:>9.2} {:>9.3}",
            "trivial /api/attestation",
            att.rate(),
            ms(att.percentile(0.99)),
            1.0
        );
        let mut all = true;
        for (r, o, n) in &measured {
            let ratio = o.rate() / att.rate();
            let p99 = o.percentile(0.99);
            let ok = ratio >= r.target && o.errors == 0;
            all &= ok;
            let extra = if r.arriving {
                format!(" ({n} messages arrived)")
            } else {
                String::new()
            };
            println!(
                "{:<40} {:>8.0} {:>9.2} {:>9.3}  >= {} {}{extra}",
                r.name,
                o.rate(),
                ms(p99),
                ratio,
                r.target,
                verdict(ok),
            );
        }
        match &synapse_run {
            Some(o) => println!(
                "{:<40} {:>8.0} {:>9.2} {:>9.3}  (reference; errors {})",
                "Synapse's own /messages page",
                o.rate(),
                ms(o.percentile(0.99)),
                o.rate() / att.rate(),
                o.errors
            ),
            None => println!(
                "Synapse's own /messages page: not measured (no BENCH_MATRIX_URL; run scripts/bench.sh)"
            ),
        }
        println!("details (CPU per request, errors):");
        att.print("trivial /api/attestation");
        for (r, o, _) in &measured {
            o.print(r.name);
        }
        if let Some(o) = &synapse_run {
            o.print("Synapse's own /messages page");
        }
        println!("all ratio targets: {}", verdict(all));
        // Server and load generator share this process: the server's own RSS (target
        // <= 64 MiB) is not measured separately here.
        println!(
            "RSS after the runs: {:.1} MiB (server and load generator together; server alone not measured)",
            rss_mib()
        );
    });
}

/// Resident set size of this process (server and load generator together).
fn rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kib| kib / 1024.0)
}

/// Stores 20 messages a second into the bench room while `on` is set, one store job each,
/// as the sync worker stores what arrives.
async fn arrive(state: AppState, uid: String, on: Arc<AtomicBool>, arrived: Arc<AtomicU64>) {
    let mut tick = tokio::time::interval(Duration::from_millis(50));
    let dek = {
        let user = users::load(&state, &uid).await.expect("user");
        users::data_key(&state.master, &user).expect("data key")
    };
    let dek = Arc::new(dek);
    let mut i = 0u64;
    loop {
        tick.tick().await;
        if !on.load(Ordering::SeqCst) {
            continue;
        }
        i += 1;
        let (uid, dek) = (uid.clone(), dek.clone());
        let stored = state
            .store
            .run(move |c| {
                let id = uuid::Uuid::new_v4().to_string();
                let body = format!("Arrived {i}: on my way");
                let content = MessageContent {
                    content: json!({"msgtype": "m.text", "body": body}),
                    body,
                };
                let now = chrono::Utc::now();
                insert_if_new(
                    c,
                    &MessageRow {
                        content_enc: seal_message(&dek, &id, &content),
                        id,
                        user_id: uid,
                        room_id: ROOM_ID.to_owned(),
                        event_id: format!("$arrived{i:08}"),
                        sender_id: "@alice:localhost".to_owned(),
                        ts: now.timestamp_millis(),
                        msgtype: "m.text".to_owned(),
                        importance: 0.5,
                        category: "general".to_owned(),
                        created_at: now.timestamp(),
                        ..MessageRow::default()
                    },
                )
                .map_err(switchboard::store::StoreError::from)
            })
            .await;
        if stored.is_ok() {
            arrived.fetch_add(1, Ordering::SeqCst);
        }
    }
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

/// A user with a Matrix ID, a registered X25519 key, a personal token, a JWT, a room of
/// `count` messages from two senders one second apart, and `rooms - 1` more rooms.
async fn seed(state: &AppState, count: u64, room_count: u64) -> (String, String, String) {
    let mut user = users::new_user(state, "bench@example.test", None);
    user.matrix_user_id = Some(OWN_ID.to_owned());
    let dek: DataKey = users::data_key(&state.master, &user).expect("data key");
    // A real public key (a fixed test secret): sealing to it must succeed.
    let secret = x25519_dalek::StaticSecret::from([9u8; 32]);
    let public = base64::engine::general_purpose::STANDARD
        .encode(x25519_dalek::PublicKey::from(&secret).as_bytes());
    let key = keys::new_key_row(&user.id, public, None, 1, user.created_at);
    let uid = user.id.clone();
    let now_ms = user.created_at * 1000;
    state
        .store
        .run(move |c| {
            let tx = c.transaction()?;
            user_store::insert(&tx, &user)?;
            user_keys::upsert(&tx, &key)?;
            for r in 0..room_count.max(1) as i64 {
                let room_id = if r == 0 {
                    ROOM_ID.to_owned()
                } else {
                    format!("!bench{r:04}:localhost")
                };
                let name = seal_room_field(
                    &dek,
                    &user.id,
                    &room_id,
                    RoomField::Name,
                    &format!("Bench room {r}"),
                );
                rooms::upsert(
                    &tx,
                    &RoomRow {
                        user_id: user.id.clone(),
                        room_id,
                        name_enc: Some(name),
                        platform: Some("whatsapp".to_owned()),
                        member_count: 2,
                        unread_count: r % 7,
                        importance: (r % 10) as f64 / 10.0,
                        last_message_ts: Some(now_ms - r * 60_000),
                        membership: "join".to_owned(),
                        created_at: user.created_at,
                        updated_at: user.created_at,
                        ..RoomRow::default()
                    },
                )?;
            }
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
    (token, jwt, uid)
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
