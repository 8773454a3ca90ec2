//! Many-users mode of `bench_messages` (`BENCH_USERS=N` or `--users N`; issues 13 and 36):
//! N Matrix users with `BENCH_USER_ROOMS` (50) rooms each on the real Synapse, the first
//! `BENCH_ENCRYPTED_ROOMS` (5) of each user's rooms with end-to-end encryption on, all synced
//! by the release `switchboard serve` binary running as its own process (`server.rs`).
//! Prints the time until every user's first sync is stored and the CPU that took, then the
//! process's idle CPU over `BENCH_IDLE_SECS` (30, after `BENCH_SETTLE_SECS`, 35) from
//! /proc/<pid>/stat, its RSS from /proc/<pid>/status and its thread count, against the targets (idle CPU <= 0.5% of one
//! core, RSS <= 120 MiB), and the cost of one user: the RSS above that of the same binary
//! serving no user at all (measured first, on its own data directory), divided by N.

use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use switchboard::services::users;
use switchboard::store::users as user_store;
use switchboard::AppState;

use super::server::{self, Setup};
use super::synapse::{Account, Homeserver};

/// Targets of issue 36.
const IDLE_CPU_TARGET: f64 = 0.5;
const RSS_TARGET_MIB: f64 = 120.0;

pub fn main(hs: Homeserver, n: u64, rooms: u64, idle_secs: u64) {
    let encrypted = std::env::var("BENCH_ENCRYPTED_ROOMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5u64)
        .min(rooms);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    // 0. The same binary with no user: what the process costs before anyone signs in.
    let (empty_rss, empty_threads) = {
        let setup = Setup::new(&hs, "");
        let server = setup.start();
        wait_answering(&rt, setup.port);
        std::thread::sleep(Duration::from_secs(5));
        (server.rss_mib().0, server.threads())
    };
    println!("switchboard serve with no user: RSS {empty_rss:.1} MiB, {empty_threads} threads");
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
                        let name = format!("Room {r} of user {u}");
                        hs.create_room_with(&who, &name, r < encrypted).await;
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
        "created {n} Matrix users with {rooms} rooms each ({} rooms, {encrypted} of each user's \
         encrypted) on Synapse in {:.1} s",
        n * rooms,
        began.elapsed().as_secs_f64()
    );

    // 2. The Switchboard side: one user per Matrix account, as sign-in leaves it (the
    // Matrix access token sealed under the user's data key).
    let setup = Setup::new(&hs, "");
    {
        let state = AppState::build(setup.config()).expect("state");
        let rows: Vec<_> = accounts
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let mut u = users::new_user(&state, &format!("many{i}@example.test"), None);
                u.matrix_access_token_enc =
                    Some(users::seal_matrix_token(&state.master, &u, &a.token).expect("seal"));
                u.matrix_user_id = Some(a.user_id.clone());
                u.matrix_device_id = Some(a.device_id.clone());
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

    // 3. The real binary, until every user's first sync is stored.
    let mut server = setup.start();
    let db = setup.database();
    let synced = server::wait_for(
        &mut server,
        &db,
        "SELECT COUNT(*) FROM sync_state WHERE since IS NOT NULL",
        n,
        Duration::from_secs(900),
    );
    let first_syncs = server.started.elapsed();
    let sync_cpu = server.cpu_secs();
    let stored_rooms = server::count(&db, "SELECT COUNT(*) FROM rooms");
    let encrypted_rooms = server::count(&db, "SELECT COUNT(*) FROM rooms WHERE encrypted != 0");
    println!(
        "all first syncs: {synced}/{n} users synced {:.1} s after `switchboard serve` started \
         ({stored_rooms} rooms stored, {encrypted_rooms} of them encrypted; {:.2} s of CPU, \
         {:.0} ms per user)",
        first_syncs.as_secs_f64(),
        sync_cpu,
        sync_cpu * 1000.0 / n.max(1) as f64
    );

    // 4. Idle: nothing happens on Synapse; the workers wait in their long polls. The first
    // long poll after a first sync still ends with a full step (the crypto machine is fed
    // once more before it rests), so the idle figure is taken after one poll period
    // (`BENCH_SETTLE_SECS`, 35), and what that settling took is printed beside it.
    let settle = std::env::var("BENCH_SETTLE_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(35u64);
    let (s0, sc0) = (Instant::now(), server.cpu_secs());
    std::thread::sleep(Duration::from_secs(settle));
    let settle_cpu = (server.cpu_secs() - sc0) / s0.elapsed().as_secs_f64() * 100.0;
    println!(
        "CPU of switchboard over the {settle} s after the first syncs (each worker's first \
         long poll ends): {settle_cpu:.2}% of one core"
    );
    let (t0, c0) = (Instant::now(), server.cpu_secs());
    std::thread::sleep(Duration::from_secs(idle_secs));
    let cpu = (server.cpu_secs() - c0) / t0.elapsed().as_secs_f64() * 100.0;
    let (rss, peak) = server.rss_mib();
    let threads = server.threads();
    let verdict = |ok: bool| if ok { "PASS" } else { "FAIL" };
    println!(
        "idle CPU of switchboard over {idle_secs} s: {cpu:.2}% of one core (target <= \
         {IDLE_CPU_TARGET}%) {}",
        verdict(cpu <= IDLE_CPU_TARGET)
    );
    println!(
        "RSS of switchboard: {rss:.1} MiB (peak {peak:.1} MiB during the first syncs; target \
         <= {RSS_TARGET_MIB} MiB) {}; {threads} threads",
        verdict(rss <= RSS_TARGET_MIB)
    );
    println!(
        "per user: {:.0} KiB of RSS above the server with no user ({empty_rss:.1} MiB), \
         {:.4}% of a core idle",
        (rss - empty_rss).max(0.0) * 1024.0 / n.max(1) as f64,
        cpu / n.max(1) as f64
    );
    drop(server);
}

/// Waits (at most 60 s) until the server on `port` answers `/api/attestation`.
fn wait_answering(rt: &tokio::runtime::Runtime, port: u16) {
    let url = format!("http://127.0.0.1:{port}/api/attestation");
    let client = reqwest::Client::new();
    let began = Instant::now();
    rt.block_on(async {
        while client.get(&url).send().await.is_err() {
            assert!(
                began.elapsed() < Duration::from_secs(60),
                "the server did not answer"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
}
