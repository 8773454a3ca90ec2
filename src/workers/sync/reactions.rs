//! `m.reaction` annotations: stored per reaction event (key sealed), removed when their
//! event is redacted. They arrive through the same timeline path as messages (sync,
//! gap pages, back-fill; decrypted first in encrypted rooms), so every path keeps them.

use super::context::Pass;
use super::room::RoomView;
use crate::clients::matrix::types::Event;
use crate::services::conversations::seal_reaction_key;
use crate::store::reactions::{self, ReactionRow};

/// Longest annotation key stored, in bytes (the API sends at most 64; other clients'
/// longer keys are kept up to this).
const MAX_STORED_KEY_BYTES: usize = 256;

/// The annotation of a reaction event: (target event id, key).
pub(crate) fn annotation(content: &serde_json::Value) -> Option<(&str, &str)> {
    let rel = &content["m.relates_to"];
    if rel["rel_type"] != "m.annotation" {
        return None;
    }
    let key = rel["key"].as_str()?;
    let target = rel["event_id"].as_str()?;
    (!key.is_empty() && key.len() <= MAX_STORED_KEY_BYTES).then_some((target, key))
}

impl Pass<'_, '_> {
    /// Stores one `m.reaction` (unless redacted already or malformed); returns whether it
    /// was new.
    pub(super) fn apply_reaction(&mut self, view: &RoomView, ev: &Event) -> rusqlite::Result<bool> {
        let (Some(event_id), Some(sender)) = (ev.event_id.as_deref(), ev.sender.as_deref()) else {
            return Ok(false);
        };
        if ev
            .unsigned
            .as_ref()
            .is_some_and(|u| u.get("redacted_because").is_some())
        {
            return Ok(false);
        }
        let Some((target, key)) = annotation(&ev.content) else {
            return Ok(false);
        };
        let user_id = self.ctx.user_id;
        let row = ReactionRow {
            user_id: user_id.to_owned(),
            event_id: event_id.to_owned(),
            room_id: view.row.room_id.clone(),
            target_event_id: target.to_owned(),
            sender_id: sender.to_owned(),
            key_enc: seal_reaction_key(self.dek, user_id, event_id, key),
            ts: ev.origin_server_ts.unwrap_or(self.ctx.now * 1000),
        };
        let new = reactions::insert_if_new(self.tx, &row)?;
        if new {
            self.out.updated_messages += 1;
        }
        Ok(new)
    }

    /// Drops the reaction a redaction of `target` removes; returns whether there was one.
    pub(super) fn remove_reaction(
        &mut self,
        view: &RoomView,
        target: &str,
    ) -> rusqlite::Result<bool> {
        let tx = self.tx;
        match reactions::delete(tx, self.ctx.user_id, target)? {
            Some(r) if r.room_id != view.row.room_id => {
                // A redaction from another room does not apply: put it back.
                reactions::insert_if_new(tx, &r)?;
                Ok(false)
            }
            Some(_) => {
                self.out.updated_messages += 1;
                Ok(true)
            }
            None => Ok(false),
        }
    }
}
