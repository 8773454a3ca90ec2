//! Shared flags read again after a sync response's copy was left out.
//!
//! A response whose request began before a local write of a flag finished has that flag
//! left out (`conversation::strip_overtaken`): it may predate the write. But it may also
//! carry a change another client made after the write, and the sync will not bring that
//! change again. So once no write of those flags is under way, the worker reads their
//! current values from the homeserver — with requests that begin after the writes
//! finished, so the values include them — and applies them as a response would.

use std::collections::BTreeSet;
use std::time::Instant;

use super::{upstream, Session};
use crate::clients::matrix::types::Event;
use crate::clients::matrix::{MatrixClient, SyncResponse};
use crate::error::AppResult;
use crate::events::ChangeEvent;
use crate::services::conversation::local_writes::SharedFlag;
use crate::services::Context;
use crate::workers::sync::conversation::{self, MARKED_UNREAD, MARKED_UNREAD_UNSTABLE};

impl Session {
    /// Reads and applies the flags left out of earlier responses, unless a write of one is
    /// still under way (then the next step tries again). A failed read keeps them for the
    /// next step too.
    pub(super) async fn recheck_stale(&mut self, state: &Context, matrix: &MatrixClient) {
        if self.stale.is_empty() {
            return;
        }
        let writing = self
            .stale
            .iter()
            .any(|(room, flag)| state.local_writes.in_flight(&self.user_id, room, *flag));
        if writing {
            return;
        }
        let began = Instant::now();
        let stale = std::mem::take(&mut self.stale);
        let resp = match self.read_current(matrix, &stale).await {
            Ok(resp) => resp,
            Err(e) => {
                tracing::warn!(user_id = %self.user_id, error = %e, "reading shared flags again failed; retrying after the next poll");
                self.stale = stale;
                return;
            }
        };
        match self.apply_current(state, resp, began).await {
            Ok((changed, still)) => {
                self.stale = still;
                for room_id in changed {
                    state
                        .events
                        .publish(&self.user_id, ChangeEvent::RoomUpdated { room_id });
                }
            }
            Err(e) => {
                tracing::warn!(user_id = %self.user_id, error = %e, "applying shared flags read again failed");
                self.stale = stale;
            }
        }
    }

    /// The current values of `stale`, shaped as a sync response carrying them.
    async fn read_current(
        &self,
        matrix: &MatrixClient,
        stale: &BTreeSet<(String, SharedFlag)>,
    ) -> AppResult<SyncResponse> {
        let (token, me) = (&self.token, self.reader.matrix_user_id.as_str());
        let mut resp = SyncResponse::default();
        for (room_id, flag) in stale {
            let (kind, content) = match flag {
                SharedFlag::PushLevel => {
                    if resp.account_data.events.is_empty() {
                        let rules = matrix.push_rules(token).await.map_err(upstream)?;
                        resp.account_data.events.push(event("m.push_rules", rules));
                    }
                    continue;
                }
                SharedFlag::Tags => {
                    let tags = matrix.room_tags(token, me, room_id).await;
                    ("m.tag", tags.map_err(upstream)?)
                }
                SharedFlag::MarkedUnread => {
                    let mut mark = None;
                    for kind in [MARKED_UNREAD, MARKED_UNREAD_UNSTABLE] {
                        let data = matrix.room_account_data(token, me, room_id, kind).await;
                        mark = data.map_err(upstream)?;
                        if mark.is_some() {
                            break;
                        }
                    }
                    let unread = serde_json::json!({"unread": false});
                    (MARKED_UNREAD, mark.unwrap_or(unread))
                }
            };
            let room = resp.rooms.join.entry(room_id.clone()).or_default();
            room.account_data.events.push(event(kind, content));
        }
        Ok(resp)
    }

    /// Applies what [`Self::read_current`] read, except flags written here since `began`
    /// (those stay stale); returns the rooms that changed and what stays stale.
    async fn apply_current(
        &self,
        state: &Context,
        mut resp: SyncResponse,
        began: Instant,
    ) -> AppResult<(Vec<String>, BTreeSet<(String, SharedFlag)>)> {
        let writes = state.local_writes.clone();
        self.who()
            .in_tx(state, Default::default(), move |tx, ctx, _dek| {
                let out = conversation::strip_overtaken(&writes, ctx.user_id, began, &mut resp);
                let mut changed = BTreeSet::new();
                for (room_id, room) in &resp.rooms.join {
                    if conversation::room_flags(tx, ctx, room_id, &room.account_data)? {
                        changed.insert(room_id.clone());
                    }
                }
                changed.extend(conversation::push_rules(tx, ctx, &resp.account_data)?);
                if let Some(rules) = &out.push_rules {
                    changed.extend(conversation::push_rules_except(tx, ctx, rules, &out.stale)?);
                }
                Ok((changed.into_iter().collect(), out.stale))
            })
            .await
    }
}

fn event(kind: &str, content: serde_json::Value) -> Event {
    Event {
        kind: kind.to_owned(),
        content,
        ..Default::default()
    }
}
