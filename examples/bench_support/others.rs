//! Other users writing (issue 21): `BENCH_OTHERS` (50) more Matrix accounts, each with
//! one room on Synapse and a Switchboard user synced by the same server. While a row runs
//! with `others` set, 20 messages a second arrive round-robin in *their* rooms; the bench
//! user's cached pages must survive those writes (per-user write epochs), so its readable
//! history keeps >= 0.8x its quiet rate of the same run.
//!
//! Also the access-log cost: the trivial route on a second server with `[log] access =
//! false`, against the main server (access on) of the same run.

use futures_util::StreamExt as _;
use switchboard::services::users;
use switchboard::store::users as user_store;
use switchboard::AppState;

use super::activity::Pulse;
use super::synapse::{Account, Homeserver};

/// The other users' Matrix accounts and rooms, made 8 at a time.
pub async fn register(hs: &Homeserver, n: u64) -> Vec<(Account, String)> {
    let run = uuid::Uuid::new_v4().simple().to_string()[..6].to_owned();
    futures_util::stream::iter(0..n)
        .map(|i| {
            let (hs, run) = (hs.clone(), run.clone());
            async move {
                let who = hs
                    .register(&format!("other_{run}_{i}"), "bench-password")
                    .await;
                let room = hs.create_room(&who, &format!("Room of other {i}")).await;
                (who, room)
            }
        })
        .buffer_unordered(8)
        .collect()
        .await
}

/// One Switchboard user per account, as sign-in leaves it (written before the server
/// starts; the server's sync workers then sync them).
pub async fn seed(state: &AppState, others: &[(Account, String)]) {
    let rows: Vec<_> = others
        .iter()
        .enumerate()
        .map(|(i, (a, _))| {
            let mut u = users::new_user(state, &format!("other{i}@example.test"), None);
            u.matrix_access_token_enc =
                Some(users::seal_matrix_token(&state.master, &u, &a.token).expect("seal"));
            u.matrix_user_id = Some(a.user_id.clone());
            u.matrix_device_id = Some(a.device_id.clone());
            u
        })
        .collect();
    state
        .store
        .run(move |c| {
            let tx = c.transaction()?;
            for u in &rows {
                user_store::insert(&tx, u)?;
            }
            Ok::<_, switchboard::store::StoreError>(tx.commit()?)
        })
        .await
        .expect("seed other users");
}

/// Messages round-robin into the other users' rooms, 20 a second while `pulse` is on.
pub async fn arrivals(pulse: Pulse, hs: Homeserver, others: Vec<(Account, String)>) {
    if others.is_empty() {
        return;
    }
    let run = uuid::Uuid::new_v4().simple().to_string();
    pulse
        .run(move |i| {
            let (who, room) = others[(i % others.len() as u64) as usize].clone();
            let (hs, txn) = (hs.clone(), format!("{run}o{i}"));
            async move {
                hs.send_text(&who, &room, &txn, &format!("Other {i}: see you"))
                    .await
            }
        })
        .await;
}

/// (hits, misses) of the page cache so far, from the server's `/metrics` (its
/// `[metrics] listen` address).
pub async fn page_cache(client: &reqwest::Client, metrics_url: &str) -> (f64, f64) {
    let text = match client.get(metrics_url).send().await {
        Ok(resp) => resp.text().await.unwrap_or_default(),
        Err(_) => String::new(),
    };
    let value = |result: &str| {
        let series =
            format!("switchboard_cache_requests_total{{cache=\"pages\",result=\"{result}\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(&series))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0.0)
    };
    (value("hit"), value("miss"))
}
