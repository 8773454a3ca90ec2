//! One user's sync loop: long-poll `/sync`, ingest in one transaction with the new
//! `since` (recording timeline gaps, filled when paged into), publish change events,
//! accept the invites of the configured bridges (bots and their ghosts; see
//! `bridges::identity`).
//!
//! Homeserver or database errors never stop the loop: it records `last_error`, backs off
//! (1 s doubling to 60 s) and tries again from the stored position; the API keeps
//! serving what is stored. The loop ends on shutdown, or when the user no longer has a
//! Matrix account.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::crypto_rooms;
use super::e2ee::{self as decrypt, Syncer};
use super::filter::sync_filter;
use super::homeserver::Homeserver;
use super::ingest::{self, IngestOutcome};
use super::room::{DirectRooms, RoomHint};
use crate::clients::matrix::e2ee::UserCrypto;
use crate::clients::matrix::{MatrixClient, MatrixError, SyncResponse};
use crate::clients::provisioning::identity::BridgeIdentities;
use crate::clock::unix_now;
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::conversation::local_writes::SharedFlag;
use crate::services::importance::Reader;
use crate::services::users;
use crate::services::Context;
use crate::store::{rooms, sync_state};
use publish::publish;

/// How long one `/sync` long-poll waits for news.
const POLL_MS: u64 = 30_000;
const BACKOFF_START: Duration = Duration::from_secs(1);
const BACKOFF_MAX: Duration = Duration::from_secs(60);
const CRYPTO_BACKOFF_START: Duration = Duration::from_secs(60);
const CRYPTO_BACKOFF_MAX: Duration = Duration::from_secs(3600);
const MAX_JOIN_ATTEMPTS: u32 = 5;

struct Backoff {
    next: Duration,
    start: Duration,
    max: Duration,
}

impl Backoff {
    fn new() -> Self {
        Self::between(BACKOFF_START, BACKOFF_MAX)
    }

    fn between(start: Duration, max: Duration) -> Self {
        Self {
            next: start,
            start,
            max,
        }
    }

    fn next(&mut self) -> Duration {
        let d = self.next;
        self.next = (self.next * 2).min(self.max);
        d
    }

    fn reset(&mut self) {
        self.next = self.start;
    }
}

/// Sleeps `d` unless shutdown comes first; returns false on shutdown.
async fn pause(state: &Context, d: Duration) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(d) => true,
        _ = state.shutdown.wait() => false,
    }
}

/// Runs until shutdown or until the user has no Matrix account.
pub async fn run(state: Context, matrix: MatrixClient, user_id: String) {
    let mut backoff = Backoff::new();
    // Opening the crypto machine failed (e.g. the homeserver refused even a new sync
    // device's keys): each attempt may log in another device, so these wait longer.
    let mut crypto_backoff = Backoff::between(CRYPTO_BACKOFF_START, CRYPTO_BACKOFF_MAX);
    let mut session: Option<Session> = None;
    let rounds = crate::metrics::global().worker_started(crate::metrics::WorkerKind::Matrix);
    while !state.shutdown.is_triggered() {
        let loading = session.is_none();
        let result = match session.as_mut() {
            Some(s) => s.step(&state, &matrix).await,
            None => match Session::load(&state, &matrix, &user_id).await {
                Ok(Some(s)) => {
                    tracing::info!(%user_id, matrix_user = %s.reader.matrix_user_id, resumed = s.since.is_some(), "sync worker started");
                    session = Some(s);
                    continue;
                }
                Ok(None) => {
                    tracing::info!(%user_id, "user has no Matrix account; sync worker stops");
                    return;
                }
                Err(e) => Err(e),
            },
        };
        match result {
            Ok(()) => {
                rounds.round_ok();
                backoff.reset();
                crypto_backoff.reset();
            }
            Err(e) => {
                rounds.round_failed();
                let crypto = loading && e.error_code() == ErrorCode::EncryptionUnavailable;
                let wait = if crypto {
                    crypto_backoff.next()
                } else {
                    backoff.next()
                };
                // "code: message": the dashboard shows the code (`services::bridges`).
                let error = format!("{}: {e}", e.code());
                tracing::warn!(%user_id, %error, retry_in_secs = wait.as_secs(), "sync failed; retrying with backoff");
                // Reload token, key and position before the next attempt.
                session = None;
                let uid = user_id.clone();
                let now = unix_now() as i64;
                let _ = state
                    .store
                    .run(move |c| {
                        crate::store::epoch::scope_to_user(&uid);
                        sync_state::record_error(c, &uid, &error, now).map_err(AppError::from)
                    })
                    .await;
                if !pause(&state, wait).await {
                    return;
                }
            }
        }
    }
}

struct JoinAttempt {
    failures: u32,
    next_at: Instant,
}

/// What a worker keeps between polls.
struct Session {
    user_id: String,
    token: String,
    reader: Reader,
    since: Option<String>,
    direct: DirectRooms,
    bridges: BridgeIdentities,
    pending_joins: HashMap<String, JoinAttempt>,
    /// The sync device's end-to-end encryption machine.
    crypto: Arc<UserCrypto>,
    /// Shared flags left out of a response because a local write overtook it, to read
    /// again from the homeserver (`worker_recheck`).
    stale: BTreeSet<(String, SharedFlag)>,
}

impl Session {
    /// Token, identity, stored position and pending invites; `None` without a Matrix account.
    async fn load(
        state: &Context,
        matrix: &MatrixClient,
        user_id: &str,
    ) -> AppResult<Option<Self>> {
        let uid = user_id.to_owned();
        let (user, sync, invites) = state
            .store
            .run(move |c| {
                let user = crate::store::users::find(c, &uid)?;
                let sync = sync_state::find(c, &uid)?;
                let invites = rooms::invites(c, &uid)?;
                Ok::<_, AppError>((user, sync, invites))
            })
            .await?;
        let Some(user) = user else {
            return Ok(None);
        };
        let (Some(_), Some(mxid)) = (
            users::matrix_token_of(&state.master, &user)?,
            user.matrix_user_id.clone(),
        ) else {
            return Ok(None);
        };
        // The machine may replace the sync device (a destroyed crypto store): its token then.
        let Some(crypto) = crate::services::e2ee::machine_for(state, &user).await? else {
            return Ok(None);
        };
        let token = crypto.token();
        let since = sync.and_then(|s| s.since);
        let direct = stored_direct(matrix, &token, &mxid, since.is_some()).await?;
        let bridges = BridgeIdentities::from_config(&state.config.bridges);
        let pending_joins = trusted_invites(invites, &bridges);
        let session = Self {
            user_id: user.id.clone(),
            reader: Reader::new(&mxid, user.display_name.as_deref()),
            token,
            since,
            direct,
            bridges,
            pending_joins,
            crypto,
            stale: BTreeSet::new(),
        };
        // Cross-signing and the key backup (a new store restores from it); never fails.
        crate::services::e2ee_trust::ensure(state, matrix, &session.user_id, &session.crypto).await;
        // Keys stored before a restart may open messages stored undecryptable.
        session.retry_undecryptable(state, None).await;
        crypto_rooms::apply(state, matrix, &session.crypto, &session.user_id, None).await;
        Ok(Some(session))
    }

    /// One poll: sync, ingest, publish, join invites.
    async fn step(&mut self, state: &Context, matrix: &MatrixClient) -> AppResult<()> {
        if !state.e2ee.is_current(&self.crypto).await {
            return Err(AppError::Unavailable {
                code: ErrorCode::CryptoStoreReplaced,
                message: "the crypto store was destroyed; reloading the sync session".into(),
                retry_after_secs: None,
            });
        }
        // Device and one-time keys go up before the first sync and whenever they run low.
        self.send_key_requests(matrix).await;
        self.recheck_stale(state, matrix).await;
        // Flags the user changes here from now on win over this response's (see
        // `conversation::strip_overtaken`).
        let began = Instant::now();
        let Some(mut resp) = self.poll(state, matrix).await? else {
            return Ok(()); // shutting down
        };
        let Some(hints) = self.room_hints(state, matrix, &resp).await else {
            return Ok(());
        };
        for room in resp.rooms.join.keys() {
            self.pending_joins.remove(room);
        }
        let key_rooms = self.open_response(state, matrix, &mut resp).await?;
        let next_batch = resp.next_batch.clone();
        let started = Instant::now();
        let room_changes = crypto_rooms::RoomChanges::of(&resp);
        let outcome = self.ingest(state, resp, hints, began).await?;
        if !room_changes.is_empty() {
            crypto_rooms::apply(
                state,
                matrix,
                &self.crypto,
                &self.user_id,
                Some(&room_changes),
            )
            .await;
        }
        self.since = Some(next_batch);
        publish(state, &self.user_id, &outcome);
        if let Some(scorer) = &state.ai_scorer {
            scorer.submit(state, &self.user_id, &self.reader, &outcome.new_messages);
        }
        tracing::debug!(
            user_id = %self.user_id,
            messages = outcome.new_messages.len(),
            updated = outcome.updated_messages,
            rooms = outcome.changed_rooms.len(),
            ingest_ms = started.elapsed().as_millis() as u64,
            "ingested sync response"
        );
        self.queue_joins(outcome.invites);
        self.join_invites(state, matrix).await;
        self.retry_with_backup_keys(state, matrix, key_rooms).await;
        Ok(())
    }

    fn who(&self) -> Syncer<'_> {
        Syncer {
            user_id: &self.user_id,
            reader: &self.reader,
            bridges: &self.bridges,
        }
    }

    /// Decrypts stored undecryptable messages of `rooms` (all: `None`) whose keys arrived.
    async fn retry_undecryptable(&self, state: &Context, rooms: Option<&[String]>) {
        let who = self.who();
        if let Err(e) = decrypt::retry_undecryptable(state, &self.crypto, &who, rooms).await {
            tracing::warn!(user_id = %self.user_id, error = %e, "decrypting stored messages failed");
        }
    }

    /// Ingests in one IMMEDIATE transaction, opening the data key inside it so a
    /// concurrent key deletion cannot interleave.
    async fn ingest(
        &mut self,
        state: &Context,
        mut resp: SyncResponse,
        hints: HashMap<String, RoomHint>,
        began: Instant,
    ) -> AppResult<IngestOutcome> {
        let mut direct = self.direct.clone();
        let writes = state.local_writes.clone();
        let (outcome, direct, stale) = self
            .who()
            .in_tx(state, hints, move |tx, ctx, dek| {
                let overtaken =
                    super::conversation::strip_overtaken(&writes, ctx.user_id, began, &mut resp);
                let mut outcome = ingest::ingest(tx, ctx, dek, &mut direct, &resp)?;
                if let Some(rules) = &overtaken.push_rules {
                    let keep = &overtaken.stale;
                    let changed = super::conversation::push_rules_except(tx, ctx, rules, keep)?;
                    outcome.changed_rooms.extend(changed);
                }
                if outcome.is_quiet() {
                    // E.g. typing notices only: the cached pages of this user stay valid
                    // (20 notices a second would otherwise end them 20 times a second).
                    crate::store::epoch::no_cached_data_changed();
                }
                Ok((outcome, direct, overtaken.stale))
            })
            .await?;
        self.direct = direct;
        self.stale.extend(stale);
        Ok(outcome)
    }
}

/// The user's `m.direct` when the sync resumes: a first sync brings it itself, a resumed
/// one only brings changes.
async fn stored_direct(
    matrix: &MatrixClient,
    token: &str,
    mxid: &str,
    resumed: bool,
) -> AppResult<DirectRooms> {
    if !resumed {
        return Ok(DirectRooms::default());
    }
    let map = matrix.direct_rooms(token, mxid).await.map_err(upstream)?;
    Ok(DirectRooms::from_content(
        &serde_json::to_value(map).unwrap_or_default(),
    ))
}

/// Invites stored before a restart, to join now: only the trusted ones.
fn trusted_invites(
    invites: Vec<(String, Option<String>)>,
    bridges: &BridgeIdentities,
) -> HashMap<String, JoinAttempt> {
    let now = Instant::now();
    invites
        .into_iter()
        .filter(|(_, by)| by.as_deref().is_some_and(|b| bridges.is_trusted_inviter(b)))
        .map(|(room, _)| {
            let attempt = JoinAttempt {
                failures: 0,
                next_at: now,
            };
            (room, attempt)
        })
        .collect()
}

fn upstream(e: MatrixError) -> AppError {
    AppError::Unavailable {
        retry_after_secs: None,
        code: ErrorCode::HomeserverUnavailable,
        message: e.to_string(),
    }
}

#[path = "worker_joins.rs"]
mod joins;
#[path = "worker_poll.rs"]
mod poll;
#[path = "worker_publish.rs"]
mod publish;
#[path = "worker_recheck.rs"]
mod recheck;

#[cfg(test)]
#[path = "worker_tests.rs"]
mod tests;
