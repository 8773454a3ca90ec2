//! Benchmark of encrypted search (issue 14): `GET /api/search` over 100,000 messages of one
//! user next to `GET /api/attestation` (the cheapest route), same binary, same run.
//!
//! `cargo run --example bench_search` (add `--release` for production numbers; the debug
//! build is several times slower but the ratios still tell). Self-contained: no homeserver.
//! The messages are sealed and indexed exactly as the sync ingest stores them
//! (`seal_message` + `services::search::index_message`), 8 to 16 words each drawn from a
//! Zipf-like vocabulary of 5,000 words, spread over 50 rooms and a year. Then the app is
//! served in-process and `BENCH_CONNS` (16) connections drive each query for `BENCH_SECS`
//! (5) seconds; it prints req/s, p50, p99 and the ratio to the trivial route, plus the
//! index size. Knobs: `BENCH_MESSAGES` (100000), `BENCH_SECS`, `BENCH_CONNS`.

use std::time::{Duration, Instant};

use switchboard::services::conversations::{seal_message, MessageContent};
use switchboard::services::{search, tokens, users};
use switchboard::store::messages::{insert_if_new, MessageRow};
use switchboard::{AppState, Config};

#[allow(dead_code)] // shared with bench_messages; this one measures no server CPU
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

fn main() {
    let total = env_or("BENCH_MESSAGES", 100_000);
    let secs = env_or("BENCH_SECS", 5);
    let conns = env_or("BENCH_CONNS", 16) as usize;
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = Config::default();
    config.storage.data_dir = dir.path().join("data");
    config.rate_limit.requests = u32::MAX / 2;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("server")
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
        tokens::opt_in(&state, &uid, &created.row.id)
            .await
            .expect("opt in");
        let token = created.token;

        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("port")
            .port();
        let app = switchboard::api::app(state.clone());
        tokio::spawn(
            poem::Server::new(poem::listener::TcpListener::bind(format!(
                "127.0.0.1:{port}"
            )))
            .run(app),
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
        let base = format!("http://127.0.0.1:{port}");
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(conns)
            .build()
            .expect("client");
        let duration = Duration::from_secs(secs);
        let no_cpu = || 0.0;
        let trivial = load::run(
            &client,
            &format!("{base}/api/attestation"),
            None,
            conns,
            duration,
            &no_cpu,
        )
        .await;
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
            let out = load::run(&client, &url, Some(&token), conns, duration, &no_cpu).await;
            out.print(&format!("search: {what} ({hits} hits/page)"));
            println!(
                "{:<36} {:.1}x the trivial route's p50, {:.0}% of its req/s",
                "",
                load::ms(out.percentile(0.5)) / load::ms(trivial.percentile(0.5)).max(1e-9),
                100.0 * out.rate() / trivial.rate().max(1e-9)
            );
        }
        state.shutdown.trigger();
    });
}
