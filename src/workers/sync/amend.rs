//! Changes to rows already stored: edits and redactions rewrite a message, read markers
//! move a room's unread state.

use rusqlite::Transaction;
use serde_json::json;

use super::context::*;
use super::room::RoomView;
use crate::clients::matrix::types::{Event, JoinedRoom};
use crate::services::conversations::{seal_message, MessageContent};
use crate::services::importance::Score;
use crate::store::messages::{self, MessageRow};

/// What a redacted message keeps: no text, no content, no score.
pub(super) fn redacted_content() -> (MessageContent, Score) {
    (
        MessageContent {
            body: String::new(),
            content: json!({}),
        },
        Score {
            importance: 0.0,
            category: "general",
            is_question: false,
        },
    )
}

impl Pass<'_, '_> {
    /// Re-seals `orig` with `content` and its new score (an edit or a redaction).
    pub(super) fn rewrite(
        &mut self,
        orig: &mut MessageRow,
        content: &MessageContent,
        s: Score,
    ) -> rusqlite::Result<bool> {
        orig.content_enc = seal_message(self.dek, &orig.id, content);
        (orig.importance, orig.is_question) = (s.importance, s.is_question);
        orig.category = s.category.to_owned();
        messages::update_content(self.tx, orig)?;
        crate::services::search::index_message(self.tx, self.dek, orig, &content.body)?;
        self.out.updated_messages += 1;
        Ok(true)
    }

    /// An edit rewrites the original (same sender, same room, not redacted) with
    /// `m.new_content`; no row is added for the edit event itself.
    pub(super) fn apply_edit(
        &mut self,
        view: &RoomView,
        ev: &Event,
        target: &str,
    ) -> rusqlite::Result<bool> {
        let Some(mut orig) = messages::find_by_event(self.tx, self.ctx.user_id, target)? else {
            return Ok(false);
        };
        let new_content = &ev.content["m.new_content"];
        if orig.redacted
            || orig.room_id != view.row.room_id
            || ev.sender.as_deref() != Some(orig.sender_id.as_str())
            || !new_content.is_object()
        {
            return Ok(false);
        }
        if let Some(t) = new_content["msgtype"].as_str() {
            orig.msgtype = t.to_owned();
        }
        let s = score(
            self.ctx,
            view.row.is_direct,
            new_content,
            &orig.msgtype,
            orig.is_mine,
        );
        let content = MessageContent {
            body: new_content["body"].as_str().unwrap_or_default().to_owned(),
            content: new_content.clone(),
        };
        orig.edited = true;
        orig.edited_at = orig.edited_at.max(ev.origin_server_ts);
        self.rewrite(&mut orig, &content, s)
    }

    /// A redaction empties the original: body "", content {}, `redacted`.
    pub(super) fn apply_redaction(
        &mut self,
        view: &RoomView,
        ev: &Event,
    ) -> rusqlite::Result<bool> {
        // Room versions up to 10 carry `redacts` at the top level, v11 in the content.
        let Some(target) = ev.redacts.as_deref().or(ev.content["redacts"].as_str()) else {
            return Ok(false);
        };
        if self.remove_reaction(view, target)? {
            return Ok(true);
        }
        let Some(mut orig) = messages::find_by_event(self.tx, self.ctx.user_id, target)? else {
            return Ok(false);
        };
        if orig.redacted || orig.room_id != view.row.room_id {
            return Ok(false);
        }
        orig.redacted = true;
        let (empty, s) = redacted_content();
        self.rewrite(&mut orig, &empty, s)
    }
}

/// The later of `m.fully_read` and the user's own read receipts (by message time when
/// both are stored messages; otherwise the newest to arrive).
pub(super) fn update_read_marker(
    tx: &Transaction<'_>,
    ctx: &IngestContext<'_>,
    view: &mut RoomView,
    room: &JoinedRoom,
) -> rusqlite::Result<()> {
    let me = ctx.reader.matrix_user_id.as_str();
    let mut candidates: Vec<&str> = room
        .account_data
        .events
        .iter()
        .filter(|e| e.kind == "m.fully_read")
        .filter_map(|e| e.content["event_id"].as_str())
        .collect();
    for ev in room
        .ephemeral
        .events
        .iter()
        .filter(|e| e.kind == "m.receipt")
    {
        for (event_id, receipts) in ev.content.as_object().into_iter().flatten() {
            if ["m.read", "m.read.private"]
                .iter()
                .any(|t| receipts[*t].get(me).is_some())
            {
                candidates.push(event_id);
            }
        }
    }
    for candidate in candidates {
        let later = match view.row.last_read_event_id.as_deref() {
            None => true,
            Some(current) if current == candidate => false,
            Some(current) => {
                let current_ts = messages::ts_of_event(tx, ctx.user_id, current)?;
                let candidate_ts = messages::ts_of_event(tx, ctx.user_id, candidate)?;
                match (current_ts, candidate_ts) {
                    (Some(a), Some(b)) => b >= a,
                    _ => true,
                }
            }
        };
        if later {
            view.row.last_read_event_id = Some(candidate.to_owned());
        }
    }
    Ok(())
}
