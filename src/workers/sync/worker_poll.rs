//! The phases of one sync step ([`Session::step`]): keys up, the `/sync` poll, the
//! homeserver's hints on rooms whose members changed, the response's keys and decryption
//! before ingest, and what follows it (invites to join, messages to decrypt again).

use std::collections::HashMap;
use std::time::Instant;

use super::{decrypt, sync_filter, upstream, Homeserver, JoinAttempt, Session, POLL_MS};
use crate::clients::matrix::{MatrixClient, SyncResponse};
use crate::error::AppResult;
use crate::services::Context;
use crate::workers::sync::room::RoomHint;

impl Session {
    /// Uploads keys and answers key requests; a failure is logged (the next step retries).
    pub(super) async fn send_key_requests(&self, matrix: &MatrixClient) {
        if let Err(e) = self.crypto.process_outgoing(matrix).await {
            tracing::warn!(user_id = %self.user_id, error = %e, "end-to-end encryption requests failed");
        }
    }

    /// The next `/sync` response; `None` when the server shuts down meanwhile.
    pub(super) async fn poll(
        &self,
        state: &Context,
        matrix: &MatrixClient,
    ) -> AppResult<Option<SyncResponse>> {
        let initial = self.since.is_none();
        let timeout = if initial { 0 } else { POLL_MS };
        let filter = sync_filter(initial);
        let sync = matrix.sync(&self.token, self.since.as_deref(), timeout, Some(filter));
        tokio::select! {
            r = sync => r.map(Some).map_err(upstream),
            _ = state.shutdown.wait() => Ok(None),
        }
    }

    /// What the homeserver says of the rooms whose members changed (none on a first sync);
    /// `None` when the server shuts down meanwhile.
    pub(super) async fn room_hints(
        &self,
        state: &Context,
        matrix: &MatrixClient,
        resp: &SyncResponse,
    ) -> Option<HashMap<String, RoomHint>> {
        if self.since.is_none() {
            return Some(HashMap::new());
        }
        let hs = Homeserver {
            http: &state.http,
            base: matrix.base_url(),
            token: &self.token,
        };
        // A limited timeline's gap is recorded by ingest and fetched when someone
        // pages back into it (`services::history`), not here: a long downtime does
        // not hold up the news, and nothing is skipped however long the gap is.
        tokio::select! {
            found = hs.room_hints(resp) => Some(found),
            _ = state.shutdown.wait() => None,
        }
    }

    /// Room keys and device changes before the position is stored (to-device events come
    /// once), then decryption, so ingest stores plaintext; returns the rooms that got keys.
    pub(super) async fn open_response(
        &self,
        state: &Context,
        matrix: &MatrixClient,
        resp: &mut SyncResponse,
    ) -> AppResult<Vec<String>> {
        let key_rooms = self
            .crypto
            .receive_sync(&decrypt::sync_crypto(resp))
            .await
            .map_err(crate::services::e2ee::error)?;
        self.send_key_requests(matrix).await;
        // Device verifications: answered (keys of new devices were queried just now) and announced.
        crate::services::verifications::settle(state, matrix, &self.user_id, &self.crypto).await;
        decrypt::decrypt_response(&self.crypto, resp).await;
        Ok(key_rooms)
    }

    /// Invites from trusted inviters, to be joined now.
    pub(super) fn queue_joins(&mut self, invites: Vec<String>) {
        let now = Instant::now();
        for room in invites {
            self.pending_joins.entry(room).or_insert(JoinAttempt {
                failures: 0,
                next_at: now,
            });
        }
    }

    /// Tries the undecryptable messages again in the rooms that got keys, with the keys
    /// messages lacked looked up in the key backup.
    pub(super) async fn retry_with_backup_keys(
        &self,
        state: &Context,
        matrix: &MatrixClient,
        mut key_rooms: Vec<String>,
    ) {
        key_rooms.extend(
            crate::services::e2ee_trust::fetch_wanted(matrix, &self.user_id, &self.crypto).await,
        );
        key_rooms.sort();
        key_rooms.dedup();
        if !key_rooms.is_empty() {
            self.retry_undecryptable(state, Some(&key_rooms)).await;
        }
    }
}
