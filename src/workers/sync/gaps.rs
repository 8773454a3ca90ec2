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

use rusqlite::Transaction;

use super::context::IngestContext;
use crate::clients::matrix::types::Timeline;
use crate::store::history::{self, NewGap};

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
