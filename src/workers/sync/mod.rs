//! Homeserver sync: one worker task per user with a Matrix account, kept running by a
//! supervisor.
//!
//! The supervisor starts with [`spawn`] (from `serve()`), loads every user with a Matrix
//! access token and starts a worker for each one not running yet; it rescans whenever
//! `state.sync_wakeup` is notified (a new Matrix account) and every minute (restarting
//! workers that ended). Workers spend their time awaiting the homeserver's long-poll, so a
//! few hundred users cost a few hundred idle tasks. Everything stops on `state.shutdown`.

use std::collections::HashMap;
use std::time::Duration;

use tokio::task::JoinHandle;

use crate::error::AppError;
use crate::services::Context;
use crate::store::sync_state;

mod amend;
mod context;
mod conversation;
mod crypto_rooms;
pub mod e2ee;
mod filter;
mod gaps;
pub mod history;
pub mod homeserver;
pub mod ingest;
mod membership;
mod past_senders;
mod reactions;
pub mod room;
mod worker;

#[cfg(test)]
mod tests;

pub use history::HistoryIngest;

/// How often the supervisor rescans without being woken.
const RESCAN: Duration = Duration::from_secs(60);

/// Starts the supervisor (when a homeserver is configured). Call once per `Context`,
/// from within the runtime.
pub fn spawn(state: Context) {
    let Some(matrix) = state.matrix.clone() else {
        tracing::info!("no homeserver configured; sync workers are off");
        return;
    };
    tokio::spawn(supervise(state, matrix));
}

async fn supervise(state: Context, matrix: crate::clients::matrix::MatrixClient) {
    let mut workers: HashMap<String, JoinHandle<()>> = HashMap::new();
    loop {
        workers.retain(|_, handle| !handle.is_finished());
        let ids = state
            .store
            .run(|c| sync_state::syncable_user_ids(c).map_err(AppError::from))
            .await;
        match ids {
            Ok(ids) => {
                for id in ids {
                    if workers.contains_key(&id) {
                        continue;
                    }
                    let task = worker::run(state.clone(), matrix.clone(), id.clone());
                    workers.insert(id, tokio::spawn(task));
                }
            }
            Err(e) => tracing::warn!(error = %e, "sync supervisor cannot list users"),
        }
        tokio::select! {
            _ = state.sync_wakeup.notified() => {}
            _ = tokio::time::sleep(RESCAN) => {}
            _ = state.shutdown.wait() => break,
        }
    }
    tracing::debug!(workers = workers.len(), "sync supervisor stopped");
}
