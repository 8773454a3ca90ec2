//! Many-users mode of `bench_messages` (`BENCH_USERS=N` or `--users N`; issue 13): N Matrix
//! users with `BENCH_USER_ROOMS` (50) rooms each on the real Synapse, all synced by the
//! release `switchboard serve` binary running as its own process (`server.rs`). Prints the time until
//! every user's first sync is stored, then the process's idle CPU over `BENCH_IDLE_SECS`
//! (30) from /proc/<pid>/stat and its RSS from /proc/<pid>/status, against the targets
//! (idle CPU < 1% of one core, RSS <= 150 MiB).

use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use switchboard::services::users;
use switchboard::store::users as user_store;
use switchboard::AppState;

use super::server::{self, Setup};
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
    let stored_rooms = server::count(&db, "SELECT COUNT(*) FROM rooms");
    println!(
        "all first syncs: {synced}/{n} users synced {:.1} s after `switchboard serve` started ({stored_rooms} rooms stored)",
        first_syncs.as_secs_f64()
    );

    // 4. Idle: nothing happens on Synapse; the workers wait in their long polls.
    std::thread::sleep(Duration::from_secs(5));
    let (t0, c0) = (Instant::now(), server.cpu_secs());
    std::thread::sleep(Duration::from_secs(idle_secs));
    let cpu = (server.cpu_secs() - c0) / t0.elapsed().as_secs_f64() * 100.0;
    let (rss, _) = server.rss_mib();
    let verdict = |ok: bool| if ok { "PASS" } else { "FAIL" };
    println!(
        "idle CPU of switchboard over {idle_secs} s: {cpu:.2}% of one core (target < 1%) {}",
        verdict(cpu < 1.0)
    );
    println!(
        "RSS of switchboard: {rss:.1} MiB (target <= 150 MiB) {}",
        verdict(rss <= 150.0)
    );
    drop(server);
}
