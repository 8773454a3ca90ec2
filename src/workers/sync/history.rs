//! What a joined timeline leaves out, recorded so that paging back fetches it
//! ([`crate::store::history`], filled by [`crate::services::history`]).
//!
//! - A room's first timeline (the first sync, a newly joined room, or a room stored before
//!   history was tracked) holds only its latest events: everything before them, back to the
//!   room's creation, is a gap starting at the timeline's `prev_batch` (none when the
//!   timeline begins with `m.room.create`).
//! - A `limited` timeline later on (the worker was down, or more happened between two
//!   polls than one timeline holds) skips what happened between the previous `since` and
//!   its first event: a gap from its `prev_batch` back to that `since`.

use std::collections::HashMap;

use futures_util::future::BoxFuture;
use rusqlite::Transaction;

use super::ingest::{self, IngestContext};
use crate::clients::matrix::e2ee::UserCrypto;
use crate::clients::matrix::types::{Event, Timeline};
use crate::clients::provisioning::identity::BridgeIdentities;
use crate::config::BridgesConfig;
use crate::services::history::{BackFill, JoinedState, TimelineSink};
use crate::services::importance::Reader;
use crate::store::history::{self, NewGap};

/// Back-filled events into [`ingest::ingest_history`]: the services' [`TimelineSink`].
pub struct HistoryIngest {
    bridges: BridgeIdentities,
}

impl HistoryIngest {
    pub fn new(config: &BridgesConfig) -> Self {
        Self {
            bridges: BridgeIdentities::from_config(config),
        }
    }
}

impl TimelineSink for HistoryIngest {
    fn filter(&self) -> &str {
        super::filter::history_filter()
    }

    fn decrypt<'a>(
        &'a self,
        crypto: &'a UserCrypto,
        room_id: &'a str,
        events: &'a mut [Event],
    ) -> BoxFuture<'a, usize> {
        Box::pin(super::e2ee::decrypt_events(crypto, room_id, events))
    }

    fn ingest(&self, tx: &Transaction<'_>, page: &BackFill<'_>) -> rusqlite::Result<usize> {
        let user = page.user;
        let Some(mxid) = user.matrix_user_id.as_deref() else {
            return Ok(0);
        };
        let reader = Reader::new(mxid, user.display_name.as_deref());
        let hints = HashMap::new();
        let ctx = IngestContext {
            user_id: &user.id,
            reader: &reader,
            bridges: &self.bridges,
            hints: &hints,
            now: page.now,
        };
        let out = ingest::ingest_history(tx, &ctx, page.dek, page.room_id, page.events)?;
        Ok(out.new_messages.len())
    }

    fn ingest_joined(&self, tx: &Transaction<'_>, room: &JoinedState<'_>) -> rusqlite::Result<()> {
        let user = room.user;
        let Some(mxid) = user.matrix_user_id.as_deref() else {
            return Ok(());
        };
        let reader = Reader::new(mxid, user.display_name.as_deref());
        let hints = HashMap::new();
        let ctx = IngestContext {
            user_id: &user.id,
            reader: &reader,
            bridges: &self.bridges,
            hints: &hints,
            now: room.now,
        };
        let direct = super::room::DirectRooms::from_content(room.direct);
        ingest::ingest_joined_state(tx, &ctx, room.dek, &direct, room)
    }
}

/// Records the gap before `timeline` (ingested just before, in the same transaction).
/// `since`: the position before this response; `stored_until`: the room's last message
/// time before it.
pub fn note_timeline(
    tx: &Transaction<'_>,
    ctx: &IngestContext<'_>,
    room_id: &str,
    timeline: &Timeline,
    since: Option<&str>,
    stored_until: Option<i64>,
) -> rusqlite::Result<()> {
    let tracked = history::tracked(tx, ctx.user_id, room_id)?;
    let creates = timeline.events.iter().any(|e| e.kind == "m.room.create");
    let Some(prev_batch) = timeline.prev_batch.as_deref() else {
        if !tracked && creates {
            history::track(tx, ctx.user_id, room_id, None, ctx.now)?;
        }
        return Ok(());
    };
    // The gap ends just after the timeline's first event, in the order of history pages
    // (`ts DESC, event_id ASC`); an empty timeline leaves everything to fetch.
    let (before_ts, before_event) = timeline.events.first().map_or((i64::MAX, ""), |e| {
        (
            e.origin_server_ts.unwrap_or(ctx.now * 1000),
            e.event_id.as_deref().unwrap_or(""),
        )
    });
    let mut gap = NewGap {
        before_ts,
        before_event,
        from_token: prev_batch,
        to_token: None,
        after_ts: None,
    };
    if !tracked {
        return history::track(
            tx,
            ctx.user_id,
            room_id,
            (!creates).then_some(&gap),
            ctx.now,
        );
    }
    match since {
        Some(since) if timeline.limited => {
            gap.to_token = Some(since);
            gap.after_ts = Some(stored_until.unwrap_or(0));
            tracing::info!(user_id = ctx.user_id, %room_id, "recorded a timeline gap; filled when paging back");
            history::add_gap(tx, ctx.user_id, room_id, &gap, ctx.now)
        }
        _ => Ok(()),
    }
}
