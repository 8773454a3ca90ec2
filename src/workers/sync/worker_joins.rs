//! The sync worker's invitations: trusted invites (bridges invite users to their portal
//! rooms) are joined, retried with backoff.

use std::time::Instant;

use super::{Session, BACKOFF_START, MAX_JOIN_ATTEMPTS};
use crate::clients::matrix::MatrixClient;
use crate::error::AppError;
use crate::services::Context;
use crate::store::rooms;

impl Session {
    /// Accepts pending trusted invites (bridges invite users to their portal rooms),
    /// retrying failures with backoff up to [`MAX_JOIN_ATTEMPTS`] times.
    pub(super) async fn join_invites(&mut self, state: &Context, matrix: &MatrixClient) {
        let now = Instant::now();
        let due: Vec<String> = self
            .pending_joins
            .iter()
            .filter(|(_, a)| a.next_at <= now)
            .map(|(r, _)| r.clone())
            .collect();
        if due.is_empty() {
            return;
        }
        // The user may have declined (or accepted) one meanwhile: join only what is
        // still an invitation.
        let uid = self.user_id.clone();
        let still = match state
            .store
            .run(move |c| rooms::invites(c, &uid).map_err(AppError::from))
            .await
        {
            Ok(still) => still,
            Err(e) => {
                tracing::warn!(user_id = %self.user_id, error = %e, "cannot read invites; joining later");
                return;
            }
        };
        for room_id in due {
            if !still.iter().any(|(r, _)| *r == room_id) {
                self.pending_joins.remove(&room_id);
                continue;
            }
            let joined = tokio::select! {
                r = matrix.join(&self.token, &room_id) => r,
                _ = state.shutdown.wait() => return,
            };
            match joined {
                Ok(()) => {
                    tracing::info!(user_id = %self.user_id, %room_id, "accepted room invite");
                    self.pending_joins.remove(&room_id);
                }
                Err(error) => {
                    let Some(attempt) = self.pending_joins.get_mut(&room_id) else {
                        continue;
                    };
                    attempt.failures += 1;
                    if attempt.failures >= MAX_JOIN_ATTEMPTS {
                        tracing::warn!(user_id = %self.user_id, %room_id, %error, "giving up on room invite");
                        self.pending_joins.remove(&room_id);
                    } else {
                        tracing::info!(user_id = %self.user_id, %room_id, %error, "joining failed; will retry");
                        attempt.next_at = now + BACKOFF_START * 5 * 2u32.pow(attempt.failures);
                    }
                }
            }
        }
    }
}
