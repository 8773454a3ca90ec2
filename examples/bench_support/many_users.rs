//! Many-users mode of `bench_messages` (`BENCH_USERS=N` or `--users N`; issue 13): N Matrix
//! users with `BENCH_USER_ROOMS` (50) rooms each on the real Synapse, all synced by the
//! release `switchboard serve` binary running as its own process. Prints the time until
//! every user's first sync is stored, then the process's idle CPU over `BENCH_IDLE_SECS`
//! (30) from /proc/<pid>/stat and its RSS from /proc/<pid>/status, against the targets
//! (idle CPU < 1% of one core, RSS <= 150 MiB).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use switchboard::services::users;
use switchboard::store::users as user_store;
use switchboard::{AppState, Config};

use super::synapse::{Account, Homeserver};

pub fn main(hs: Homeserver, n: u64, rooms: u64, idle_secs: u64) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    // 1. The Matrix side: N accounts, each creating its rooms (8 accounts at a time).
    let began = Instant::now();
    let run = uuid::Uuid::new_v4().simple().to_string()[..6].to_owned();
    let accounts: Vec<Account> = rt.block_on(async {
        futures_util::stream::iter(0..n)
            .map(|u| {
                let (hs, run) = (hs.clone(), run.clone());
                async move {
                    let who = hs
                        .register(&format!("many_{run}_{u}"), "bench-password")
                        .await;
                    for r in 0..rooms {
                        hs.create_room(&who, &format!("Room {r} of user {u}")).await;
                    }
                    if (u + 1) % 10 == 0 {
                        eprintln!("  {} users with their rooms created", u + 1);
                    }
                    who
                }
            })
            .buffer_unordered(8)
            .collect()
            .await
    });
    println!(
        "created {n} Matrix users with {rooms} rooms each ({} rooms) on Synapse in {:.1} s",
        n * rooms,
        began.elapsed().as_secs_f64()
    );

    // 2. The Switchboard side: one user per Matrix account, as sign-in leaves it (the
    // Matrix access token sealed under the user's data key).
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let mut config = Config::default();
    config.storage.data_dir = data.clone();
    {
        let state = AppState::build(config).expect("state");
        let rows: Vec<_> = accounts
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let mut u = users::new_user(&state, &format!("many{i}@example.test"), None);
                u.matrix_access_token_enc =
                    Some(users::seal_matrix_token(&state.master, &u, &a.token).expect("seal"));
                u.matrix_user_id = Some(a.user_id.clone());
                u
            })
            .collect();
        rt.block_on(state.store.run(move |c| {
            let tx = c.transaction()?;
            for u in &rows {
                user_store::insert(&tx, u)?;
            }
            Ok::<_, switchboard::store::StoreError>(tx.commit()?)
        }))
        .expect("seed users");
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let config_path = dir.path().join("switchboard.toml");
    std::fs::write(
        &config_path,
        format!(
            "[server]\nlisten = \"127.0.0.1:{port}\"\n[storage]\ndata_dir = \"{}\"\n\
             [matrix]\nhomeserver_url = \"{}\"\nserver_name = \"{}\"\nregistration_shared_secret = \"{}\"\n",
            data.display(),
            hs.base,
            hs.server_name,
            hs.secret
        ),
    )
    .expect("config");

    // 3. The real binary, until every user's first sync is stored.
    let bin = std::env::var("BENCH_SWITCHBOARD_BIN")
        .unwrap_or_else(|_| "target/release/switchboard".into());
    let log = std::fs::File::create(dir.path().join("switchboard.log")).expect("log");
    let started = Instant::now();
    let child = Command::new(&bin)
        .arg("--config")
        .arg(&config_path)
        .arg("serve")
        .stdout(log.try_clone().expect("log"))
        .stderr(log)
        .stdin(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("start {bin}: {e}"));
    let mut child = Killed(child);
    let pid = child.0.id();
    let db = data.join("switchboard.db");
    let (mut synced, mut stored_rooms) = (0, 0);
    while started.elapsed() < Duration::from_secs(900) {
        if let Some(status) = child.0.try_wait().expect("wait") {
            panic!(
                "switchboard exited: {status}; log {}",
                dir.path().join("switchboard.log").display()
            );
        }
        (synced, stored_rooms) = progress(&db);
        if synced >= n {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let first_syncs = started.elapsed();
    println!(
        "all first syncs: {synced}/{n} users synced {:.1} s after `switchboard serve` started ({stored_rooms} rooms stored)",
        first_syncs.as_secs_f64()
    );

    // 4. Idle: nothing happens on Synapse; the workers wait in their long polls.
    std::thread::sleep(Duration::from_secs(5));
    let (t0, c0) = (Instant::now(), cpu_ticks(pid));
    std::thread::sleep(Duration::from_secs(idle_secs));
    let cpu = (cpu_ticks(pid) - c0) as f64 / 100.0 / t0.elapsed().as_secs_f64() * 100.0;
    let rss = rss_mib(pid);
    let verdict = |ok: bool| if ok { "PASS" } else { "FAIL" };
    println!(
        "idle CPU of switchboard over {idle_secs} s: {cpu:.2}% of one core (target < 1%) {}",
        verdict(cpu < 1.0)
    );
    println!(
        "RSS of switchboard: {rss:.1} MiB (target <= 150 MiB) {}",
        verdict(rss <= 150.0)
    );
    drop(child);
}

/// Kills the child process when dropped (also on a panic).
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Users whose first sync is stored, and rooms stored (read-only look at the database).
fn progress(db: &Path) -> (u64, u64) {
    let Ok(c) =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
    else {
        return (0, 0);
    };
    let count = |sql: &str| c.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap_or(0) as u64;
    (
        count("SELECT COUNT(*) FROM sync_state WHERE since IS NOT NULL"),
        count("SELECT COUNT(*) FROM rooms"),
    )
}

/// utime + stime of `pid` in clock ticks (100 per second on Linux).
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let Some(close) = stat.rfind(')') else {
        return 0;
    };
    let f: Vec<&str> = stat[close + 2..].split(' ').collect();
    f.get(11).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0)
        + f.get(12).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0)
}

fn rss_mib(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kib| kib / 1024.0)
}
