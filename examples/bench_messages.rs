//! Benchmark of every read route against the cheapest route of the same binary (issue 13).
//!
//! `scripts/bench.sh` (it starts a throw-away Synapse and sets `BENCH_MATRIX_URL`,
//! `BENCH_MATRIX_SHARED_SECRET`, `BENCH_SWITCHBOARD_BIN`, then runs this release example).
//!
//! The release `switchboard serve` binary runs as its own process (`bench_support/server.rs`)
//! against that Synapse, so its CPU and its RSS are its own. The bench user is a Matrix
//! account on Synapse with a Switchboard user holding its access token, a registered X25519
//! key, a personal API token and a JWT, and 199 rooms seeded into the database before the
//! server starts (200 rooms in all with the real one). Once the server's sync worker has
//! done its first sync, the bench room is filled with 2,000 messages *through Synapse*, and
//! the server stores them as it stores any message (sync, gaps paged in). Then 64
//! concurrent connections are driven for 10 s per route; it prints requests per second,
//! p99, the ratio to `GET /api/attestation` and the target of each row:
//!
//! - readable history (personal token), also while 20 messages/s arrive, while 20
//!   messages/s arrive for `BENCH_OTHERS` (50) *other* users (target: >= 0.9x its quiet
//!   rate of the same run; `bench_support/others.rs`), and while another member of the
//!   room sends 20 typing notices a second (issue 31: no measurable cost, >= 0.9x quiet);
//! - native sealed history (JWT), also while 20 messages/s arrive;
//! - the room list with 200 rooms, both views, default page and `limit=100`;
//! - the single-room read and `GET /api/messages/stats`;
//! - Synapse's own `GET /_matrix/client/v3/rooms/{roomId}/messages?dir=b&limit=50` on the
//!   same room, with the same load generator;
//! - the server's RSS (`VmRSS` of /proc/<pid>/status) after its 64-connection runs, with
//!   its thread count and how much of it is anonymous memory (`smaps_rollup`);
//! - the access log's cost: the trivial route again, then on a second server with
//!   `[log] access = false`.
//!
//! Messages "arrive" as they do in production: sent to Synapse (20 a second) and stored by
//! the server's sync worker, each a write that ends every cached page; after each such row
//! the page must show the last one sent (freshness). Ratios within one run are what count
//! (the machine is shared). Knobs: `BENCH_SECS` (10), `BENCH_CONNS` (64), `BENCH_MESSAGES`
//! (2000), `BENCH_ROOMS` (200), `BENCH_CLIENT_THREADS` (2), `BENCH_LIMIT` (50),
//! `BENCH_ONLY` (a substring of the row names: run those rows only; `synapse`: Synapse's).
//! `BENCH_USERS=N` (or `--users N`) runs the many-users mode instead: see
//! `bench_support/many_users.rs`.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use switchboard::AppState;

#[path = "bench_support/activity.rs"]
mod activity;
#[path = "bench_support/bench_user.rs"]
mod bench_user;
#[path = "bench_support/load.rs"]
mod load;
#[path = "bench_support/many_users.rs"]
mod many_users;
#[path = "bench_support/others.rs"]
mod others;
#[path = "bench_support/probes.rs"]
mod probes;
#[path = "bench_support/read_rows.rs"]
mod read_rows;
#[path = "bench_support/server.rs"]
mod server;
#[path = "bench_support/synapse.rs"]
mod synapse;

use activity::Pulse;
use bench_user::seed;
use load::{ms, run, run_accepting, Outcome};
use probes::{check, compressed, settle};
use read_rows::{quiet_share_verdict, rows, verdict, Caller, BROWSER_ACCEPT_ENCODING};
use synapse::Homeserver;

/// Target of the server's RSS after the 64-connection runs, 51 users syncing (issue 36).
const RSS_TARGET_MIB: f64 = 100.0;

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
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
    let hs = Homeserver::from_env()
        .expect("the benchmark needs a Synapse and the release binary: run scripts/bench.sh");
    if users > 0 {
        let rooms = env_or("BENCH_USER_ROOMS", 50);
        return many_users::main(hs, users, rooms, env_or("BENCH_IDLE_SECS", 30));
    }
    let secs = env_or("BENCH_SECS", 10);
    let conns = env_or("BENCH_CONNS", 64) as usize;
    let count = env_or("BENCH_MESSAGES", 2_000);
    let room_count = env_or("BENCH_ROOMS", 200);
    let limit = env_or("BENCH_LIMIT", 50);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(env_or("BENCH_CLIENT_THREADS", 2) as usize)
        .thread_name("client")
        .enable_all()
        .build()
        .expect("client runtime");

    // 1. The Matrix account and its room on Synapse; the Switchboard user and its other
    // rooms in the server's data directory, written before the server starts.
    let who = rt.block_on(hs.register(
        &format!("bench_{}", &uuid::Uuid::new_v4().simple().to_string()[..8]),
        "bench-password",
    ));
    let room_id = rt.block_on(hs.create_room(&who, "Bench room"));
    // Another member of the bench room, whose typing notices the typing row sends.
    let typist = rt.block_on(async {
        let typist = hs
            .register(
                &format!("typist_{}", &uuid::Uuid::new_v4().simple().to_string()[..8]),
                "bench-password",
            )
            .await;
        hs.invite_and_join(&who, &room_id, &typist).await;
        typist
    });
    let other_users = rt.block_on(others::register(&hs, env_or("BENCH_OTHERS", 50)));
    let metrics_port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let setup = server::Setup::new(
        &hs,
        &format!(
            "[rate_limit]\nrequests = 1000000000\nwindow = \"60s\"\n[auth]\naccess_token_ttl = \"3h\"\n\
             [metrics]\nlisten = \"127.0.0.1:{metrics_port}\"\n"
        ),
    );
    let metrics_url = format!("http://127.0.0.1:{metrics_port}/metrics");
    let (token, jwt) = {
        let state = AppState::build(setup.config()).expect("application state");
        rt.block_on(others::seed(&state, &other_users));
        rt.block_on(seed(&state, &who, room_count))
    };

    // 2. The server, its first sync, then the room filled through Synapse.
    let mut srv = setup.start();
    let db = setup.database();
    let synced_sql = "SELECT COUNT(*) FROM sync_state WHERE since IS NOT NULL";
    let limit_wait = Duration::from_secs(600);
    let syncing = 1 + other_users.len() as u64;
    assert_eq!(
        server::wait_for(&mut srv, &db, synced_sql, syncing, limit_wait),
        syncing,
        "no first sync; log {}",
        srv.log.display()
    );
    let began = Instant::now();
    rt.block_on(hs.fill(&who, &room_id, count, 8));
    let filled = began.elapsed();
    let stored_sql = format!("SELECT COUNT(*) FROM messages WHERE room_id = '{room_id}'");
    let stored = server::wait_for(&mut srv, &db, &stored_sql, count, limit_wait);
    println!(
        "filled {room_id} on Synapse ({}) with {count} messages in {:.1} s; the server stored {stored} \
         ({:.1} s after the fill began); {room_count} rooms in all",
        hs.base,
        filled.as_secs_f64(),
        began.elapsed().as_secs_f64()
    );
    assert!(stored >= count, "log {}", srv.log.display());
    // The rows are measured against the trivial route, measured first: work the fill left
    // behind (the sync worker, cache upkeep, a WAL checkpoint) would slow that baseline and
    // flatter every ratio, so wait until the server is idle (and Synapse too) first.
    let settled = settle(&[srv.pid, env_or("BENCH_SYNAPSE_PID", 0) as u32]);
    println!("idle after the fill: {settled}");

    let base = format!("http://127.0.0.1:{}", setup.port);
    let room = switchboard::clients::matrix::encode(&room_id);
    let history = format!("/api/messages?roomId={room}&limit={limit}");
    let rows = rows(&history, &room);
    let only = std::env::var("BENCH_ONLY").unwrap_or_default();
    let duration = Duration::from_secs(secs);
    let (arrivals, typing, others_arriving) =
        (Pulse::default(), Pulse::default(), Pulse::default());
    let last_arrived = Arc::new(Mutex::new(String::new()));
    rt.spawn(activity::arrivals(
        arrivals.clone(),
        hs.clone(),
        who.clone(),
        room_id.clone(),
        last_arrived.clone(),
    ));
    rt.spawn(activity::typing(
        typing.clone(),
        hs.clone(),
        typist.clone(),
        room_id.clone(),
    ));
    rt.spawn(others::arrivals(
        others_arriving.clone(),
        hs.clone(),
        other_users.clone(),
    ));
    let pid = srv.pid;
    let server_cpu = move || load::process_cpu_secs(pid);
    let synapse_pid = env_or("BENCH_SYNAPSE_PID", 0) as u32;
    let synapse_cpu = move || load::process_cpu_secs(synapse_pid);

    // 3. The rows, then the server's RSS, then Synapse's own page.
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(conns)
        .http1_only()
        .build()
        .expect("client");
    let (att, measured, rss, synapse_run, access) = rt.block_on(async {
        let page = format!("{base}{history}");
        check(&client, &page, &token, limit as usize, None).await;
        check(&client, &page, &jwt, limit as usize, None).await;
        let warm = Duration::from_secs(1);
        let trivial = format!("{base}/api/attestation");
        run(&client, &trivial, None, conns, warm, &server_cpu).await;
        let att = run(&client, &trivial, None, conns, duration, &server_cpu).await;
        let mut measured = Vec::new();
        for r in rows
            .iter()
            .filter(|r| only.is_empty() || r.name.contains(&only))
        {
            let url = format!("{base}{}", r.path);
            let t = Some(match r.caller {
                Caller::Token => token.as_str(),
                Caller::Native => jwt.as_str(),
            });
            let accept = r.gzip.then_some(BROWSER_ACCEPT_ENCODING);
            if let Some(a) = accept {
                compressed(&client, &url, t, a).await;
            }
            run_accepting(&client, &url, t, accept, conns, warm, &server_cpu).await;
            let (sent, stored) = (arrivals.sent(), server::count(&db, &stored_sql));
            let synapse_before = synapse_cpu();
            let others_sent = others_arriving.sent();
            let pages_before = others::page_cache(&client, &metrics_url).await;
            let notices = typing.sent();
            arrivals.switch(r.arriving);
            others_arriving.switch(r.others);
            typing.switch(r.typing);
            let o = run_accepting(&client, &url, t, accept, conns, duration, &server_cpu).await;
            arrivals.switch(false);
            others_arriving.switch(false);
            typing.switch(false);
            // Synapse's work for the arriving messages shares the machine's cores.
            let synapse_share = (synapse_cpu() - synapse_before) / o.elapsed.as_secs_f64();
            let mut note = String::new();
            if r.arriving {
                // Freshness: the page shows the last message sent, once the sync worker
                // has stored it (a stale cached page would never show it).
                let last = last_arrived.lock().unwrap().clone();
                assert!(!last.is_empty(), "no message was sent to Synapse");
                let fresh = check(&client, &page, &token, limit as usize, Some(&last)).await;
                note = format!(
                    " ({} sent, {} stored, Synapse busy {:.0}% of a core; last one on the \
                     page {:.1} s after the run)",
                    arrivals.sent() - sent,
                    server::count(&db, &stored_sql) - stored,
                    synapse_share * 100.0,
                    fresh.as_secs_f64()
                );
            }
            if r.others {
                let (hits, misses) = others::page_cache(&client, &metrics_url).await;
                let (hits, misses) = (hits - pages_before.0, misses - pages_before.1);
                note = format!(
                    " ({} sent to {} other users; page cache {hits} hits, {misses} misses)",
                    others_arriving.sent() - others_sent,
                    other_users.len()
                );
            }
            if r.typing {
                let (hits, misses) = others::page_cache(&client, &metrics_url).await;
                let (hits, misses) = (hits - pages_before.0, misses - pages_before.1);
                note = format!(
                    " ({} typing notices sent, Synapse busy {:.0}% of a core; page cache {hits} \
                     hits, {misses} misses)",
                    typing.sent() - notices,
                    synapse_share * 100.0
                );
            }
            measured.push((r, o, note));
        }
        let rss = (srv.rss_mib(), srv.threads(), srv.memory_split_mib());
        let access = access_log_cost(&client, &hs, &trivial, conns, duration, &server_cpu).await;
        let synapse_run = if only.is_empty() || "synapse".contains(&only.to_lowercase()) {
            let url = hs.messages_url(&room_id, limit);
            let resp = client.get(&url).bearer_auth(&who.token).send().await;
            let body: serde_json::Value = resp.expect("synapse page").json().await.expect("json");
            assert_eq!(
                body["chunk"].as_array().map(Vec::len),
                Some(limit as usize),
                "{body}"
            );
            run(&client, &url, Some(&who.token), conns, warm, &synapse_cpu).await;
            Some(
                run(
                    &client,
                    &url,
                    Some(&who.token),
                    conns,
                    duration,
                    &synapse_cpu,
                )
                .await,
            )
        } else {
            None
        };
        (att, measured, rss, synapse_run, access)
    });
    srv.assert_running();
    drop(srv);

    // 4. The table, the details and the summary of every target.
    println!("{conns} connections, {secs} s per route, history limit {limit}, {room_count} rooms");
    println!(
        "{:<40} {:>8} {:>9} {:>9}  target",
        "route", "req/s", "p99 ms", "x trivial"
    );
    let p99 = |o: &Outcome| ms(o.percentile(0.99));
    println!(
        "{:<40} {:>8.0} {:>9.2} {:>9.3}",
        "trivial /api/attestation",
        att.rate(),
        p99(&att),
        1.0
    );
    let mut summary = Vec::new();
    let mut parent = "";
    for (r, o, note) in &measured {
        // An indented row is a variant of the row above it: the summary names both.
        let label = if r.name.starts_with(' ') {
            format!("{parent}, {}", r.name.trim())
        } else {
            parent = r.name;
            r.name.to_owned()
        };
        let ratio = o.rate() / att.rate();
        let ok = ratio >= r.target && o.errors == 0;
        if r.others || r.typing {
            summary.push(quiet_share_verdict(&measured, r, o));
        }
        let p99_ok = r.p99_ms.is_none_or(|t| p99(o) <= t);
        let p99_target = r
            .p99_ms
            .map_or(String::new(), |t| format!(", p99 <= {t} ms"));
        println!(
            "{:<40} {:>8.0} {:>9.2} {:>9.3}  >= {}{p99_target} {}{note}",
            r.name,
            o.rate(),
            p99(o),
            ratio,
            r.target,
            verdict(ok && p99_ok),
        );
        summary.push((format!("{label}: >= {}x trivial", r.target), ok));
        if let Some(t) = r.p99_ms {
            summary.push((
                format!(
                    "{label}: p99 <= {t} ms ({:.1} ms; the trivial route's own p99 {:.1} ms)",
                    p99(o),
                    p99(&att)
                ),
                p99_ok,
            ));
        }
    }
    match &synapse_run {
        Some(o) => println!(
            "{:<40} {:>8.0} {:>9.2} {:>9.3}  (reference; errors {})",
            "Synapse's own /messages page",
            o.rate(),
            p99(o),
            o.rate() / att.rate(),
            o.errors
        ),
        None => println!("Synapse's own /messages page: not measured (BENCH_ONLY)"),
    }
    let ((rss_now, rss_peak), threads, (anon, file)) = rss;
    let rss_ok = rss_now <= RSS_TARGET_MIB;
    println!(
        "RSS of switchboard serve after the {conns}-connection runs: {rss_now:.1} MiB \
         (peak {rss_peak:.1} MiB; target <= {RSS_TARGET_MIB} MiB) {}; {threads} threads, \
         {anon:.1} MiB anonymous, {file:.1} MiB file-backed",
        verdict(rss_ok)
    );
    summary.push((format!("server RSS <= {RSS_TARGET_MIB} MiB"), rss_ok));
    let (on, off) = &access;
    println!(
        "access log: trivial route {:.0} req/s with [log] access = true, {:.0} req/s with false \
         (CPU per request {:.0} µs vs {:.0} µs; the line costs {:.1}% of the trivial request)",
        on.rate(),
        off.rate(),
        on.server_cpu.as_secs_f64() * 1e6,
        off.server_cpu.as_secs_f64() * 1e6,
        (1.0 - off.server_cpu.as_secs_f64() / on.server_cpu.as_secs_f64().max(1e-9)) * 100.0
    );
    println!("details (CPU per request of the serving process and of the load generator):");
    on.print("trivial, access log on");
    off.print("trivial, access log off");
    att.print("trivial /api/attestation");
    for (r, o, _) in &measured {
        o.print(r.name);
    }
    if let Some(o) = &synapse_run {
        o.print("Synapse's own /messages page");
    }
    println!("summary of the targets:");
    for (what, ok) in &summary {
        println!("  {} {what}", verdict(*ok));
    }
    println!("  (many users: idle CPU <= 0.5%, RSS <= 120 MiB: scripts/bench.sh --users 100)");
    let all = summary.iter().all(|(_, ok)| *ok);
    println!(
        "all targets of this run: {}",
        if all { "met" } else { "NOT all met" }
    );
}

/// The trivial route on this server (access log on, the default), then on a second
/// server of the same build with `[log] access = false`: (on, off).
async fn access_log_cost(
    client: &reqwest::Client,
    hs: &synapse::Homeserver,
    trivial: &str,
    conns: usize,
    duration: Duration,
    server_cpu: &dyn Fn() -> f64,
) -> (Outcome, Outcome) {
    let on = run(client, trivial, None, conns, duration, server_cpu).await;
    let quiet = server::Setup::new(
        hs,
        "[rate_limit]\nrequests = 1000000000\nwindow = \"60s\"\n[log]\naccess = false\n",
    );
    let other = quiet.start();
    let url = format!("http://127.0.0.1:{}/api/attestation", quiet.port);
    let deadline = Instant::now() + Duration::from_secs(60);
    while client.get(&url).send().await.is_err() {
        assert!(Instant::now() < deadline, "second server did not start");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let pid = other.pid;
    let cpu = move || load::process_cpu_secs(pid);
    run(client, &url, None, conns, Duration::from_secs(1), &cpu).await;
    let off = run(client, &url, None, conns, duration, &cpu).await;
    drop(other);
    (on, off)
}
