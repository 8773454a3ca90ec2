//! Full history: when a history page of one room reaches a stretch that is not stored
//! (a gap recorded at sync, see [`crate::store::history`]), the missing events are fetched
//! from the homeserver (`/rooms/{id}/messages?dir=b` with the user's Matrix token), stored
//! through the sync's own ingest path ([`TimelineSink`]) and the page is read again; the
//! next page continues from there, back to the room's creation.
//!
//! - Encrypted events are decrypted with the user's crypto machine first, as the sync does
//!   (those whose room key is missing are stored undecryptable and decrypted later).
//! - One fetch per room at a time: concurrent pagers of a room wait for the fetch under
//!   way and then read what it stored (a per-room async lock; the gap is read again
//!   under it, so the second pager finds it moved and fetches nothing).
//! - Back-filled messages are history, not news: no `message.created`, no push, no AI
//!   scoring (the local score of ingest applies). Stored rows end cached pages through the
//!   write epoch like every write.
//! - Homeserver down or slow: the page answers what is stored, and the room is not asked
//!   again for [`RETRY_AFTER`]; a refusal for good (403/404: the user may not see older
//!   events) closes the gap.

use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::future::BoxFuture;
use rusqlite::{Transaction, TransactionBehavior};

use super::history_gaps::after;
pub use super::history_gaps::{
    above_gap, all_rooms_rows, gap_crossed, gap_crossed_any, Fill, PageSpan, PlacedRow,
};
use super::users;
use crate::clients::matrix::e2ee::UserCrypto;
use crate::clients::matrix::history::MessagesPage;
use crate::clients::matrix::types::Event;
use crate::clients::matrix::{MatrixClient, MatrixError};
use crate::clock::unix_now;
use crate::crypto::DataKey;
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::Context;
use crate::store::history::{self as stored, Gap};
use crate::store::users::UserRow;

/// Events asked for per `/messages` page.
const FETCH: u32 = 100;
/// At most this many pages are fetched while one history page waits.
const MAX_FETCHES_PER_PAGE: usize = 5;
/// After a failed fetch, a room's pages answer what is stored for this long.
const RETRY_AFTER: Duration = Duration::from_secs(10);

/// Stores back-filled events: implemented by the sync worker's ingest, so that they take
/// exactly the path of synced events (sealing, scoring, edits, redactions, decryption).
pub trait TimelineSink: Send + Sync {
    /// The `/messages` filter: the event types the sync timeline asks for.
    fn filter(&self) -> &str;
    /// Decrypts the `m.room.encrypted` events of `room_id` in place, as the sync does
    /// before ingest; those without a key stay encrypted (stored undecryptable).
    fn decrypt<'a>(
        &'a self,
        crypto: &'a UserCrypto,
        room_id: &'a str,
        events: &'a mut [Event],
    ) -> BoxFuture<'a, usize>;
    /// Stores a page of back-filled events; returns the messages added.
    fn ingest(&self, tx: &Transaction<'_>, page: &BackFill<'_>) -> rusqlite::Result<usize>;
    /// Stores a room the API has just created or joined, from its full current state, as
    /// the sync stores a joined room (`services::chats`): listed and readable before the
    /// next sync brings its timeline.
    fn ingest_joined(&self, tx: &Transaction<'_>, room: &JoinedState<'_>) -> rusqlite::Result<()>;
}

/// A room just joined through the API, for [`TimelineSink::ingest_joined`].
pub struct JoinedState<'a> {
    pub user: &'a UserRow,
    pub dek: &'a DataKey,
    pub room_id: &'a str,
    /// Every current state event (`GET /rooms/{id}/state`).
    pub state: Vec<Event>,
    /// The user's `m.direct` content (`{partner: [room ids]}`).
    pub direct: &'a serde_json::Value,
    /// Members to name the room after while none but the user has joined (an invitee).
    pub heroes: Vec<String>,
    /// Unix seconds.
    pub now: i64,
}

/// Back-filled events of one stored room, for [`TimelineSink::ingest`].
pub struct BackFill<'a> {
    pub user: &'a UserRow,
    pub dek: &'a DataKey,
    pub room_id: &'a str,
    /// Oldest first.
    pub events: &'a [Event],
    /// The member state of the page's senders after its newest event (`/messages`
    /// `state`), from which each message gets its sender's name of then.
    pub state: &'a [Event],
    /// Unix seconds.
    pub now: i64,
}

/// A rendered page, or the gap it would have to cross first.
pub enum Rendered {
    Page(Bytes),
    Gap(Gap),
}

/// Renders a page with `render(fill)`; while it reports a gap, fills the gap and renders
/// again. `render` must return a page unless `fill` is [`Fill::Allowed`].
pub async fn render_filling<F, Fut>(
    state: &Context,
    user_id: &str,
    mut render: F,
) -> AppResult<Bytes>
where
    F: FnMut(Fill) -> Fut,
    Fut: Future<Output = AppResult<Rendered>>,
{
    let mut fetches = 0;
    let mut fill = Fill::Allowed;
    loop {
        match render(fill).await? {
            Rendered::Page(body) => return Ok(body),
            Rendered::Gap(gap) if fill == Fill::Allowed => {
                fetches += 1;
                if !self::fill(state, user_id, gap).await {
                    fill = Fill::Stalled;
                } else if fetches == MAX_FETCHES_PER_PAGE {
                    fill = Fill::Exhausted;
                }
            }
            Rendered::Gap(_) => return Err(AppError::internal("page renderer ignored Fill")),
        }
    }
}

type RoomLocks = moka::sync::Cache<(String, String), Arc<tokio::sync::Mutex<Option<Instant>>>>;

/// One lock per (user, room); it holds when the last fetch failed.
fn room_lock(user_id: &str, room_id: &str) -> Arc<tokio::sync::Mutex<Option<Instant>>> {
    static LOCKS: OnceLock<RoomLocks> = OnceLock::new();
    LOCKS
        .get_or_init(|| {
            moka::sync::Cache::builder()
                .max_capacity(10_000)
                .time_to_idle(Duration::from_secs(60))
                .build()
        })
        .get_with((user_id.to_owned(), room_id.to_owned()), Default::default)
}

/// Fetches and stores one page of `gap` (or finds where an untracked room's history
/// continues); returns whether the gap moved (by this call or
/// by another pager meanwhile), i.e. whether reading the page again can show more.
async fn fill(state: &Context, user_id: &str, gap: Gap) -> bool {
    let lock = room_lock(user_id, &gap.room_id);
    let mut failed_at = lock.lock().await;
    if failed_at.is_some_and(|t| t.elapsed() < RETRY_AFTER) {
        return false;
    }
    let fetched = if gap.id == stored::UNTRACKED {
        super::history_start::start_tracking(state, user_id, &gap).await
    } else {
        fetch_and_store(state, user_id, &gap).await
    };
    match fetched {
        Ok(moved) => {
            *failed_at = None;
            moved
        }
        Err(e) => {
            tracing::warn!(%user_id, room_id = %gap.room_id, error = %e,
                "cannot fetch older history; answering what is stored");
            *failed_at = Some(Instant::now());
            false
        }
    }
}

async fn fetch_and_store(state: &Context, user_id: &str, gap: &Gap) -> AppResult<bool> {
    let Some(matrix) = state.matrix.clone() else {
        return Ok(false);
    };
    let (uid, id) = (user_id.to_owned(), gap.id);
    let (user, current) = state
        .store
        .run(move |c| {
            let user = crate::store::users::find(c, &uid)?;
            Ok::<_, AppError>((user, stored::find_gap(c, &uid, id)?))
        })
        .await?;
    // Moved or closed by another pager while this one waited: read the page again.
    let Some(gap) = current.filter(|g| g == gap) else {
        return Ok(true);
    };
    let Some(user) = user else {
        return Ok(false);
    };
    let Some(token) = users::matrix_token_of(&state.master, &user)? else {
        return Ok(false);
    };
    let sink = state.history.clone();
    let mut page = fetch_page(&matrix, &token, user_id, &gap, sink.filter()).await?;
    if page.chunk.iter().any(|e| e.kind == "m.room.encrypted") {
        decrypt_page(state, &user, &gap.room_id, &mut page.chunk).await;
    }
    let (fetched, room_id) = (page.chunk.len(), gap.room_id.clone());
    let added = store_page(state, user_id, gap, page).await?;
    tracing::info!(%user_id, %room_id, events = fetched, messages = added,
        "fetched older history from the homeserver");
    Ok(true)
}

/// One page of `gap` from the homeserver; an empty one when it refuses for good (the
/// user may not see older events: the gap is closed then).
async fn fetch_page(
    matrix: &MatrixClient,
    token: &str,
    user_id: &str,
    gap: &Gap,
    filter: &str,
) -> AppResult<MessagesPage> {
    let to = gap.to_token.as_deref();
    match matrix
        .messages_back(token, &gap.room_id, &gap.from_token, to, FETCH, filter)
        .await
    {
        Ok(page) => Ok(page),
        Err(MatrixError::Http {
            status: 400 | 403 | 404,
            message,
            ..
        }) => {
            tracing::info!(%user_id, room_id = %gap.room_id, %message,
                "the homeserver refuses older history of this room; gap closed");
            Ok(MessagesPage::default())
        }
        Err(e) => Err(AppError::Unavailable {
            code: ErrorCode::HomeserverUnavailable,
            retry_after_secs: None,
            message: e.to_string(),
        }),
    }
}

/// Decrypts a page's encrypted events with the user's crypto machine, as the sync does;
/// those it cannot open are stored undecryptable and decrypted later.
async fn decrypt_page(state: &Context, user: &UserRow, room_id: &str, events: &mut [Event]) {
    match super::e2ee::machine_for(state, user).await {
        Ok(Some(crypto)) => {
            state.history.decrypt(&crypto, room_id, events).await;
        }
        Ok(None) => {}
        // Stored undecryptable then, and decrypted when the machine works again.
        Err(e) => tracing::warn!(user_id = %user.id, %room_id, error = %e,
            "cannot open the crypto store for back-filled history"),
    }
}

/// Stores a fetched page (oldest first, through the sink) and moves or closes the gap, in
/// one transaction; returns the messages added.
async fn store_page(
    state: &Context,
    user_id: &str,
    gap: Gap,
    page: MessagesPage,
) -> AppResult<usize> {
    let (master, uid, sink) = (
        state.master.clone(),
        user_id.to_owned(),
        state.history.clone(),
    );
    state
        .store
        .run(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let Some(user) = crate::store::users::find(&tx, &uid)? else {
                return Ok(0);
            };
            let dek = users::data_key(&master, &user)?;
            let mut events = page.chunk;
            events.reverse();
            let now = unix_now() as i64;
            let page_in = BackFill {
                user: &user,
                dek: &dek,
                room_id: &gap.room_id,
                events: &events,
                state: &page.state,
                now,
            };
            let added = sink.ingest(&tx, &page_in)?;
            advance(&tx, &uid, &gap, events.first(), page.end.as_deref(), now)?;
            tx.commit()?;
            Ok::<_, AppError>(added)
        })
        .await
}

/// Moves the gap below the stored page (`oldest` is its oldest event), or closes it when
/// the homeserver has nothing older (`end` absent) or the room's creation was reached.
fn advance(
    tx: &Transaction<'_>,
    user_id: &str,
    gap: &Gap,
    oldest: Option<&Event>,
    end: Option<&str>,
    now: i64,
) -> rusqlite::Result<()> {
    let created = oldest.is_some_and(|e| e.kind == "m.room.create");
    match end {
        Some(end) if !created && end != gap.from_token => {
            let mut edge = (gap.before_ts, gap.before_event.clone());
            if let Some(e) = oldest {
                let ts = e.origin_server_ts.unwrap_or(now * 1000);
                let id = e.event_id.clone().unwrap_or_default();
                if after((ts, &id), (edge.0, &edge.1)) {
                    edge = (ts, id);
                }
            }
            stored::narrow_gap(tx, gap.id, edge.0, &edge.1, end)
        }
        _ => stored::close_gap(tx, user_id, gap),
    }
}
