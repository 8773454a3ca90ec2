//! E-mail benchmark (issue #10): initial sync of a large mailbox from a real Dovecot, then
//! the thread list from the cache next to the trivial endpoint of the same binary.
//!
//! `scripts/bench-mail.sh` (builds this in release mode, needs `dovecot-imapd`), or
//! `cargo run --release --example bench_mail`.
//!
//! 1. Starts a throw-away Dovecot with `scripts/dovecot.sh`, adds a user and APPENDs
//!    `BENCH_MAIL_MESSAGES` (10,000) messages to its INBOX, in threads of three.
//! 2. Connects the mailbox through the service (a real IMAP login and SMTP check against a
//!    local stand-in SMTP listener) and lets the mailbox sync worker fetch all of it;
//!    prints messages per second of that first sync.
//! 3. Serves the application and drives `BENCH_CONNS` (64) connections for `BENCH_SECS`
//!    (10) s against `GET /api/attestation` and `GET /api/email/threads` with a personal
//!    token; prints req/s, p99 and the ratio (target >= 0.5).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use poem::listener::{Acceptor, Listener, TcpListener};
use poem::Server;
use switchboard::clients::mail::imap::{self, Endpoint, Security};
use switchboard::config::{HumanDuration, PrivateHosts};
use switchboard::services::email::accounts::{self, AccountInput, EndpointInput};
use switchboard::services::{tokens, users};
use switchboard::store::users as user_store;
use switchboard::{api, AppState, Config};

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn root() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn main() {
    let count = env_or("BENCH_MAIL_MESSAGES", 10_000);
    let secs = env_or("BENCH_SECS", 10);
    let conns = env_or("BENCH_CONNS", 64) as usize;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(env_or("BENCH_SERVER_THREADS", 2) as usize)
        .enable_all()
        .build()
        .expect("runtime");

    // 1. Dovecot with a filled INBOX.
    let dir = tempfile::tempdir().expect("temp dir");
    let port = free_port();
    let script = root().join("scripts/dovecot.sh");
    let run = |args: &[&str]| {
        let out = std::process::Command::new("bash")
            .arg(&script)
            .args(args)
            .output()
            .expect("bash");
        assert!(out.status.success(), "scripts/dovecot.sh {args:?}: {out:?}");
    };
    let ddir = dir.path().join("dovecot");
    let ddir_s = ddir.to_string_lossy().into_owned();
    run(&[&ddir_s, &port.to_string()]);
    let _stop = Stop(script.clone(), ddir.clone());
    let user = "bench@example.test";
    run(&["--add-user", &ddir_s, user, "bench-password"]);
    let ep = Endpoint {
        host: "127.0.0.1".into(),
        port,
        security: Security::None,
        username: user.into(),
        password: "bench-password".into(),
    };
    let filled = Instant::now();
    rt.block_on(async {
        let cfg = switchboard::config::EmailConfig {
            allow_private_hosts: PrivateHosts::All,
            ..Default::default()
        };
        let mut s = imap::connect(&ep, &cfg, "bench")
            .await
            .expect("login");
        for i in 0..count {
            let root_id = i - i % 3;
            let mut m = format!(
                "From: Sender {root_id} <s{root_id}@example.org>\r\nTo: {user}\r\n\
                 Subject: Topic {root_id}\r\nMessage-ID: <m{i}@bench>\r\n\
                 Date: Tue, 1 Jul 2025 10:00:00 +0000\r\n"
            );
            if i != root_id {
                m.push_str(&format!("In-Reply-To: <m{}@bench>\r\nReferences: <m{root_id}@bench>\r\n", i - 1));
            }
            m.push_str(&format!(
                "Content-Type: text/plain\r\n\r\nMessage {i}: are we still meeting at the usual place tomorrow?\r\n"
            ));
            imap::append(&mut s, "INBOX", "()", m.as_bytes()).await.expect("APPEND");
        }
        imap::logout(s).await;
    });
    println!(
        "appended {count} messages to Dovecot in {:.1} s",
        filled.elapsed().as_secs_f64()
    );

    // 2. The application, a user with a personal token, the mailbox connected.
    let mut config = Config::default();
    config.storage.data_dir = dir.path().join("data");
    config.rate_limit.requests = 1_000_000_000;
    config.rate_limit.window = HumanDuration(Duration::from_secs(60));
    config.email.first_sync_limit = count as u32 + 100;
    // Dovecot and the SMTP stand-in listen on loopback.
    config.email.allow_private_hosts = PrivateHosts::All;
    let state = AppState::build(config).expect("application state");
    let smtp_port = rt.block_on(smtp_standin());
    let (uid, token) = rt.block_on(async {
        let u = users::new_user(&state, "owner@example.test", None);
        let uid = u.id.clone();
        state
            .store
            .run(move |c| user_store::insert(c, &u).map_err(switchboard::store::StoreError::from))
            .await
            .expect("user");
        let token = tokens::create(&state, &uid, "bench", None)
            .await
            .expect("token")
            .token;
        (uid, token)
    });
    let began = Instant::now();
    let account = rt
        .block_on(accounts::connect(
            &state,
            &uid,
            AccountInput {
                email: user.into(),
                display_name: None,
                imap: EndpointInput {
                    host: "127.0.0.1".into(),
                    port,
                    security: "none".into(),
                    username: Some(user.into()),
                    password: Some("bench-password".into()),
                },
                smtp: EndpointInput {
                    host: "127.0.0.1".into(),
                    port: smtp_port,
                    security: "none".into(),
                    username: None,
                    password: None,
                },
            },
        ))
        .expect("connect");
    rt.block_on(async {
        switchboard::workers::mailbox::spawn(&state);
        loop {
            let list = accounts::list(&state, &uid).await.expect("accounts");
            let a = list.iter().find(|a| a.id == account.id).expect("account");
            if a.status == "ok" {
                break;
            }
            assert!(a.status == "syncing", "sync failed: {a:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    let took = began.elapsed().as_secs_f64();
    println!(
        "initial sync: {count} messages in {took:.1} s = {:.0} msgs/s (fetch, parse, thread, seal, store)",
        count as f64 / took
    );

    // 3. Thread list vs trivial route.
    let addr = rt.block_on(serve(state.clone()));
    let base = format!("http://{addr}");
    rt.block_on(async {
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(conns)
            .http1_only()
            .build()
            .expect("client");
        let first: serde_json::Value = client
            .get(format!("{base}/api/email/threads"))
            .bearer_auth(&token)
            .send()
            .await
            .expect("threads")
            .json()
            .await
            .expect("json");
        assert_eq!(
            first["threads"].as_array().map(Vec::len),
            Some(50),
            "{first}"
        );
        assert_eq!(first["threads"][0]["messageCount"], 3, "{first}");
        let warm = Duration::from_secs(1);
        let d = Duration::from_secs(secs);
        let trivial = format!("{base}/api/attestation");
        let threads = format!("{base}/api/email/threads");
        load(&client, &trivial, None, conns, warm).await;
        let (att, att_p99) = load(&client, &trivial, None, conns, d).await;
        load(&client, &threads, Some(&token), conns, warm).await;
        let (thr, thr_p99) = load(&client, &threads, Some(&token), conns, d).await;
        println!("{conns} connections, {secs} s per route");
        println!(
            "{:<44} {:>8} {:>8} {:>9}",
            "route", "req/s", "p99 ms", "x trivial"
        );
        println!(
            "{:<44} {:>8.0} {:>8.2} {:>9.3}",
            "trivial /api/attestation", att, att_p99, 1.0
        );
        let ratio = thr / att;
        println!(
            "{:<44} {:>8.0} {:>8.2} {:>9.3}  >= 0.5 {}",
            "thread list (personal token, 50 threads)",
            thr,
            thr_p99,
            ratio,
            if ratio >= 0.5 { "PASS" } else { "FAIL" }
        );
    });
}

struct Stop(std::path::PathBuf, std::path::PathBuf);

impl Drop for Stop {
    fn drop(&mut self) {
        let _ = std::process::Command::new("bash")
            .arg(&self.0)
            .arg("--stop")
            .arg(&self.1)
            .output();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// A minimal SMTP greeter for the connection check (EHLO, QUIT): this benchmark sends
/// nothing.
async fn smtp_standin() -> u16 {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let l = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = l.local_addr().expect("addr").port();
    tokio::spawn(async move {
        while let Ok((sock, _)) = l.accept().await {
            tokio::spawn(async move {
                let (r, mut w) = sock.into_split();
                let mut lines = BufReader::new(r).lines();
                let _ = w.write_all(b"220 bench ESMTP\r\n").await;
                while let Ok(Some(line)) = lines.next_line().await {
                    let cmd = line.to_ascii_uppercase();
                    let reply: &[u8] = if cmd.starts_with("EHLO") {
                        b"250 bench\r\n"
                    } else if cmd.starts_with("QUIT") {
                        let _ = w.write_all(b"221 bye\r\n").await;
                        break;
                    } else {
                        b"250 OK\r\n"
                    };
                    let _ = w.write_all(reply).await;
                }
            });
        }
    });
    port
}

async fn serve(state: AppState) -> SocketAddr {
    let acceptor = TcpListener::bind("127.0.0.1:0")
        .into_acceptor()
        .await
        .expect("bind");
    let addr = *acceptor.local_addr()[0].as_socket_addr().expect("tcp");
    tokio::spawn(Server::new_with_acceptor(acceptor).run(api::app(state)));
    addr
}

/// `conns` loops of sequential GETs for `d`: (successful req/s, p99 ms). Errors panic.
async fn load(
    client: &reqwest::Client,
    url: &str,
    token: Option<&str>,
    conns: usize,
    d: Duration,
) -> (f64, f64) {
    let start = Instant::now();
    let deadline = start + d;
    let url: Arc<str> = url.into();
    let token: Option<Arc<str>> = token.map(Into::into);
    let tasks: Vec<_> = (0..conns)
        .map(|_| {
            let (client, url, token) = (client.clone(), url.clone(), token.clone());
            tokio::spawn(async move {
                let mut lat = Vec::new();
                while Instant::now() < deadline {
                    let began = Instant::now();
                    let mut req = client.get(&*url);
                    if let Some(t) = &token {
                        req = req.bearer_auth(&**t);
                    }
                    let resp = req.send().await.expect("request");
                    assert!(resp.status().is_success(), "{}", resp.status());
                    resp.bytes().await.expect("body");
                    lat.push(began.elapsed());
                }
                lat
            })
        })
        .collect();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.expect("task"));
    }
    let rate = all.len() as f64 / start.elapsed().as_secs_f64();
    all.sort();
    let p99 = all
        .get((all.len() as f64 * 0.99) as usize)
        .copied()
        .unwrap_or_default();
    (rate, p99.as_secs_f64() * 1000.0)
}
