//! The background scorer: refines the heuristic scores of newly synced incoming messages
//! with the AI service, off the sync path.
//!
//! Sync workers hand over each committed batch with [`Scorer::submit`], which never
//! waits: others' unredacted messages (`NewMessage::scorable`) go into one bounded queue, and when it is full (the AI service is slower
//! than the traffic) the rest of the batch keeps its heuristic scores and a warning is
//! logged. One task, started with the first batch, takes jobs [`CONCURRENCY`] at a time.
//! For each message it reads the row again (skipping messages that became redacted or are
//! empty, and users whose keys were deleted), opens the content with the user's data
//! key, asks the AI service, and in one transaction stores the answer (unless the sealed
//! content changed meanwhile) and recomputes the room's importance; the room is then
//! announced with `room.updated`. A failed request leaves the heuristic values: the first
//! failure of a run of failures is a warning, the rest are debug lines. The task ends on
//! shutdown, abandoning the requests in flight.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use rusqlite::TransactionBehavior;
use tokio::sync::{mpsc, Semaphore};
use tokio::task::JoinSet;

use crate::clients::ai::{AiClient, AiError, ScoreRequest};
use crate::clock::unix_now;
use crate::config::AiConfig;
use crate::error::AppResult;
use crate::events::ChangeEvent;
use crate::services::conversations::open_message;
use crate::services::importance::NewMessage;
use crate::services::importance::{self, Reader, Rescorer, Score};
use crate::services::users;
use crate::services::Context;
use crate::store::{messages, rooms};

/// Messages waiting for the AI service; beyond this they keep the heuristic score.
pub const QUEUE_CAPACITY: usize = 512;
/// Requests to the AI service at the same time.
pub const CONCURRENCY: usize = 2;

/// One message to rescore.
struct Job {
    user_id: String,
    reader: Arc<Reader>,
    event_id: String,
}

/// What the AI service needs to know about a stored message, and what must still hold
/// when its answer is stored.
struct Loaded {
    message_id: String,
    room_id: String,
    content_enc: Vec<u8>,
    text: String,
    msgtype: String,
    is_direct: bool,
    mentions_reader: bool,
}

/// Shared by the task and its requests.
struct Shared {
    client: AiClient,
    /// Whether the last request failed (a warning was logged for this run of failures).
    failing: AtomicBool,
}

/// The [`Rescorer`] in the [`Context`]: present when `[ai]` is configured.
pub struct Scorer {
    shared: Arc<Shared>,
    queue: OnceLock<mpsc::Sender<Job>>,
}

impl Scorer {
    /// `None` without an `[ai]` section.
    pub fn new(config: Option<&AiConfig>, http: &reqwest::Client) -> Option<Self> {
        let client = AiClient::new(config?, http.clone());
        Some(Self {
            shared: Arc::new(Shared {
                client,
                failing: AtomicBool::new(false),
            }),
            queue: OnceLock::new(),
        })
    }
}

impl Rescorer for Scorer {
    /// Queues the new messages of a committed and published sync batch for rescoring;
    /// never waits. Starts the background task on first use (from within the runtime).
    fn submit(&self, state: &Context, user_id: &str, reader: &Reader, new: &[NewMessage]) {
        if !new.iter().any(|m| m.scorable) {
            return;
        }
        let queue = self.queue.get_or_init(|| {
            let (tx, rx) = mpsc::channel(QUEUE_CAPACITY);
            tokio::spawn(run(state.clone(), self.shared.clone(), rx));
            tx
        });
        let reader = Arc::new(reader.clone());
        let mut dropped = 0usize;
        for m in new.iter().filter(|m| m.scorable) {
            let job = Job {
                user_id: user_id.to_owned(),
                reader: reader.clone(),
                event_id: m.event_id.clone(),
            };
            match queue.try_send(job) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(_)) => dropped += 1,
                // The task ended: shutting down.
                Err(mpsc::error::TrySendError::Closed(_)) => return,
            }
        }
        if dropped > 0 {
            tracing::warn!(%user_id, dropped, "AI scoring queue is full; these messages keep their heuristic scores");
        }
    }
}

/// Takes jobs [`CONCURRENCY`] at a time until shutdown.
async fn run(state: Context, shared: Arc<Shared>, mut queue: mpsc::Receiver<Job>) {
    let slots = Arc::new(Semaphore::new(CONCURRENCY));
    let mut running = JoinSet::new();
    loop {
        let next = async {
            let slot = slots.clone().acquire_owned().await.ok()?;
            Some((slot, queue.recv().await?))
        };
        let (slot, job) = tokio::select! {
            next = next => match next {
                Some(next) => next,
                None => break,
            },
            _ = state.shutdown.wait() => break,
        };
        let (state, shared) = (state.clone(), shared.clone());
        running.spawn(async move {
            rescore(&state, &shared, job).await;
            drop(slot);
        });
        while running.try_join_next().is_some() {}
    }
    running.abort_all();
    tracing::debug!("AI scorer stopped");
}

/// Rescores one message; every failure leaves the heuristic score.
async fn rescore(state: &Context, shared: &Shared, job: Job) {
    let loaded = match load(state, &job).await {
        Ok(Some(loaded)) => loaded,
        Ok(None) => return,
        Err(error) => {
            tracing::warn!(user_id = %job.user_id, %error, "cannot read a message for AI scoring");
            return;
        }
    };
    let request = ScoreRequest {
        text: &loaded.text,
        msgtype: &loaded.msgtype,
        is_direct: loaded.is_direct,
        mentions_reader: loaded.mentions_reader,
        categories: importance::CATEGORIES,
    };
    let score = match shared.client.score(&request).await {
        Ok(verdict) => {
            shared.succeeded();
            Score::from(verdict)
        }
        Err(error) => return shared.failed(&error),
    };
    let (user_id, room_id) = (job.user_id.clone(), loaded.room_id.clone());
    match save(state, job.user_id, loaded, score).await {
        Ok(true) => {
            state.events.publish(
                &user_id,
                ChangeEvent::RoomUpdated {
                    room_id: room_id.to_owned(),
                },
            );
        }
        Ok(false) => {
            tracing::debug!(%user_id, %room_id, "message changed while AI scoring; kept its new score");
        }
        Err(error) => tracing::warn!(%user_id, %error, "cannot store an AI score"),
    }
}

impl Shared {
    fn succeeded(&self) {
        if self.failing.swap(false, Ordering::Relaxed) {
            tracing::info!("the AI service answers again; AI scoring resumed");
        }
    }

    fn failed(&self, error: &AiError) {
        if self.failing.swap(true, Ordering::Relaxed) {
            tracing::debug!(%error, "AI scoring failed; heuristic score kept");
        } else {
            tracing::warn!(%error, "AI scoring failed; messages keep their heuristic scores until it answers again");
        }
    }
}

/// The message as the AI service should see it; `None` when it is not to be scored.
async fn load(state: &Context, job: &Job) -> AppResult<Option<Loaded>> {
    let master = state.master.clone();
    let (uid, event_id, reader) = (
        job.user_id.clone(),
        job.event_id.clone(),
        job.reader.clone(),
    );
    state
        .db(move |c| {
            let Some(user) = crate::store::users::find(c, &uid)? else {
                return Ok(None);
            };
            let Some(row) = messages::find_by_event(c, &uid, &event_id)? else {
                return Ok(None);
            };
            // After a key deletion nothing is read on the user's behalf (docs/security.md).
            if row.is_mine || row.redacted || user.keys_shredded {
                return Ok(None);
            }
            let is_direct = rooms::find(c, &uid, &row.room_id)?.is_some_and(|r| r.is_direct);
            let dek = users::data_key(&master, &user)?;
            let content = open_message(&dek, &row.id, &row.content_enc)?;
            if content.body.trim().is_empty() {
                return Ok(None);
            }
            let mentioned = importance::mentioned_ids(&content.content);
            Ok(Some(Loaded {
                mentions_reader: importance::is_mentioned(&reader, &content.body, &mentioned),
                message_id: row.id,
                room_id: row.room_id,
                content_enc: row.content_enc,
                text: content.body,
                msgtype: row.msgtype,
                is_direct,
            }))
        })
        .await
}

/// Stores the AI's score and the room's recomputed importance in one transaction;
/// `false` when the message was edited, redacted or deleted meanwhile.
async fn save(state: &Context, user_id: String, m: Loaded, score: Score) -> AppResult<bool> {
    state
        .db(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let updated = messages::set_ai_score(
                &tx,
                &m.message_id,
                &m.content_enc,
                score.importance,
                score.category,
                score.is_question,
            )?;
            if !updated {
                return Ok(false);
            }
            if let Some(room) = rooms::find(&tx, &user_id, &m.room_id)? {
                let importance = importance::unread_room_importance(&tx, &room, unix_now() as i64)?;
                rooms::set_importance(&tx, &user_id, &m.room_id, importance, unix_now() as i64)?;
            }
            tx.commit()?;
            Ok(true)
        })
        .await
}
