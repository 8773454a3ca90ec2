//! Paging back: the services' [`TimelineSink`] that stores back-filled events through the
//! same ingest path as a sync. What a sync's timeline leaves out is recorded by
//! [`super::gaps`].

use std::collections::HashMap;

use futures_util::future::BoxFuture;
use rusqlite::Transaction;

use super::ingest::{self, IngestContext};
use crate::clients::matrix::e2ee::UserCrypto;
use crate::clients::matrix::types::Event;
use crate::clients::provisioning::identity::BridgeIdentities;
use crate::config::BridgesConfig;
use crate::services::history::{BackFill, JoinedState, TimelineSink};
use crate::services::importance::Reader;

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
        let out =
            ingest::ingest_history(tx, &ctx, page.dek, page.room_id, page.events, page.state)?;
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
