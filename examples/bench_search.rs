//! Benchmark of encrypted search (issue 14): `GET /api/search` over 100,000 messages of one
//! user next to `GET /api/attestation` (the cheapest route), served by the release
//! `switchboard serve` binary as its own process, both in the same run.
//!
//! `scripts/bench-search.sh` builds both in release mode and runs this. By hand:
//! `cargo build --release --example bench_search --bin switchboard` and run
//! `target/release/examples/bench_search` (`BENCH_SWITCHBOARD_BIN` names another binary).
//! Self-contained: no homeserver. The messages are sealed and indexed exactly as the sync
//! ingest stores them (`seal_message` + `services::search::index_message`) into the data
//! directory the server then opens: 8 to 16 words each drawn from a Zipf-like vocabulary of
//! 5,000 words, over 50 rooms and a year. `BENCH_CONNS` (64) connections then drive each
//! query for `BENCH_SECS` (5) seconds; it prints req/s, p50, p99, the server's CPU per
//! request, the ratio to the trivial route, the index size and the load average before and
//! after (the machine is shared; read the figures with it). Knobs: `BENCH_MESSAGES`
//! (100000), `BENCH_SECS`, `BENCH_CONNS`.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use switchboard::config::Overrides;
use switchboard::services::conversations::{seal_message, MessageContent};
use switchboard::services::{search, tokens, users};
use switchboard::store::messages::{insert_if_new, MessageRow};
use switchboard::{AppState, Config};

#[allow(dead_code)] // shared with bench_messages
#[path = "bench_support/load.rs"]
mod load;

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A deterministic pseudo-random sequence (xorshift), so runs are comparable.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// Zipf-like rank in 0..n: small ranks far more often.
    fn zipf(&mut self, n: u64) -> u64 {
        let u = (self.next() % 1_000_000) as f64 / 1_000_000.0;
        ((n as f64).powf(u) - 1.0) as u64
    }
}

fn word(rank: u64) -> String {
    // Pronounceable, distinct words: "bakolu", "tiremo", …
    const C: &[u8] = b"bdfgklmnprstvz";
    const V: &[u8] = b"aeiou";
    let mut w = String::new();
    let mut r = rank + 1000;
    while r > 0 {
        w.push(C[(r % C.len() as u64) as usize] as char);
        r /= C.len() as u64;
        w.push(V[(r % V.len() as u64) as usize] as char);
        r /= V.len() as u64;
    }
    w
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// The release binary serving `config_path`; killed when dropped (also on a panic).
struct Served(std::process::Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve(config_path: &std::path::Path, log: &std::path::Path) -> Served {
    let bin = std::env::var("BENCH_SWITCHBOARD_BIN")
        .unwrap_or_else(|_| format!("{}/target/release/switchboard", env!("CARGO_MANIFEST_DIR")));
    let log = std::fs::File::create(log).expect("log file");
    let child = Command::new(&bin)
        .arg("--config")
        .arg(config_path)
        .arg("serve")
        .stdout(log.try_clone().expect("log"))
        .stderr(log)
        .stdin(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("start {bin}: {e} (build it: cargo build --release)"));
    Served(child)
}

fn main() {
    let total = env_or("BENCH_MESSAGES", 100_000);
    let secs = env_or("BENCH_SECS", 5);
    let conns = env_or("BENCH_CONNS", 64) as usize;
    let dir = tempfile::tempdir().expect("temp dir");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    // The file the served binary reads; this process seeds the same data directory.
    let config_path = dir.path().join("switchboard.toml");
    std::fs::write(
        &config_path,
        format!(
            "[server]\nlisten = \"127.0.0.1:{port}\"\n[storage]\ndata_dir = \"{}\"\n\
             [rate_limit]\nrequests = 1000000000\n[log]\nlevel = \"warn\"\n",
            dir.path().join("data").display()
        ),
    )
    .expect("config");
    let overrides = Overrides {
        config_path: Some(config_path.clone()),
        ..Overrides::default()
    };
    let config = Config::load(&overrides, std::iter::empty()).expect("config");
    println!("load average before: {}", loadavg());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("client")
        .build()
        .expect("runtime");
    rt.block_on(async move {
        let state = AppState::build(config).expect("state");
        let user = users::new_user(&state, "bench@example.test", None);
        let uid = user.id.clone();
        let dek = users::data_key(&state.master, &user).expect("dek");
        let mut conn = state.store.conn().expect("conn");
        switchboard::store::users::insert(&conn, &user).expect("user");

        let started = Instant::now();
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let base_ts = 1_700_000_000_000i64;
        let tx = conn.transaction().expect("tx");
        for i in 0..total {
            let n = 8 + rng.next() % 9;
            let mut words: Vec<String> = (0..n).map(|_| word(rng.zipf(5_000))).collect();
            if i % 1000 == 7 {
                words.insert(2, "lighthouse keeper".into());
            }
            let body = words.join(" ");
            let id = uuid::Uuid::new_v4().to_string();
            let row = MessageRow {
                content_enc: seal_message(
                    &dek,
                    &id,
                    &MessageContent {
                        body: body.clone(),
                        content: serde_json::json!({"msgtype": "m.text", "body": body}),
                    },
                ),
                id,
                user_id: uid.clone(),
                room_id: format!("!room{}:bench", i % 50),
                event_id: format!("$e{i}"),
                sender_id: format!("@p{}:bench", i % 20),
                ts: base_ts + (i as i64) * 315_000,
                msgtype: "m.text".into(),
                category: "general".into(),
                created_at: 0,
                ..MessageRow::default()
            };
            insert_if_new(&tx, &row).expect("insert");
            search::index_message(&tx, &dek, &row, &body).expect("index");
        }
        tx.commit().expect("commit");
        let (docs, postings) =
            switchboard::store::search_index::counts(&conn, &uid).expect("counts");
        let db_bytes = std::fs::metadata(state.config.storage.database_path())
            .map(|m| m.len())
            .unwrap_or(0);
        println!(
            "seeded and indexed {total} messages in {:.1} s: {docs} documents, {postings} \
             postings ({:.1} per message), database {:.1} MiB",
            started.elapsed().as_secs_f64(),
            postings as f64 / docs.max(1) as f64,
            db_bytes as f64 / 1048576.0
        );
        drop(conn);

        let created = tokens::create(&state, &uid, "bench", None)
            .await
            .expect("token");
        let opt_in = tokens::TokenChange {
            opt_in: true,
            mcp_actions: None,
        };
        tokens::update(&state, &uid, &created.row.id, opt_in)
            .await
            .expect("opt in");
        let token = created.token;

        // Seeding done: the release binary serves the data directory from here on.
        state.shutdown.trigger();
        drop(state);
        let mut served = serve(&config_path, &dir.path().join("switchboard.log"));
        let pid = served.0.id();
        let base = format!("http://127.0.0.1:{port}");
        let probe = reqwest::Client::new();
        let began = Instant::now();
        while !probe
            .get(format!("{base}/api/attestation"))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            if let Ok(Some(status)) = served.0.try_wait() {
                panic!(
                    "switchboard exited: {status}; see {}/switchboard.log",
                    dir.path().display()
                );
            }
            assert!(
                began.elapsed() < Duration::from_secs(60),
                "the server did not start"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(conns)
            .build()
            .expect("client");
        let duration = Duration::from_secs(secs);
        let server_cpu = || load::process_cpu_secs(pid);
        let trivial = load::run(
            &client,
            &format!("{base}/api/attestation"),
            None,
            conns,
            duration,
            &server_cpu,
        )
        .await;
        println!("{conns} connections, {secs} s per line, release binary (pid {pid})");
        trivial.print("GET /api/attestation");
        let common = word(0);
        let mid = word(300);
        let rare = word(2_000);
        let queries = [
            ("common word", format!("q={common}")),
            ("mid-frequency word", format!("q={mid}")),
            ("rare word", format!("q={rare}")),
            ("prefix (4 chars)", format!("q={}", &mid[..4])),
            ("phrase", "q=%22lighthouse%20keeper%22".to_owned()),
            ("two words, AND", format!("q={mid}%20{rare}")),
            (
                "word + roomId filter",
                format!("q={mid}&roomId=%21room7%3Abench"),
            ),
        ];
        for (what, q) in queries {
            let url = format!("{base}/api/search?{q}&limit=20");
            let first: serde_json::Value = client
                .get(&url)
                .bearer_auth(&token)
                .send()
                .await
                .expect("search")
                .json()
                .await
                .expect("json");
            let hits = first["results"].as_array().map_or(0, Vec::len);
            let out = load::run(&client, &url, Some(&token), conns, duration, &server_cpu).await;
            out.print(&format!("search: {what} ({hits} hits/page)"));
            println!(
                "{:<36} {:.1}x the trivial route's p50, {:.0}% of its req/s",
                "",
                load::ms(out.percentile(0.5)) / load::ms(trivial.percentile(0.5)).max(1e-9),
                100.0 * out.rate() / trivial.rate().max(1e-9)
            );
        }
        println!("load average after: {}", loadavg());
    });
}
