//! Status reads: the bridge's whoami through the per-user cache, degraded to the local
//! record when the bridge cannot be read.

use super::*;

/// The bridge's whoami for the user, through the cache; a fresh answer is reconciled into
/// the record. `fresh` skips the cache.
pub(super) async fn snapshot(
    state: &Context,
    user: &UserRow,
    mxid: &str,
    platform: Platform,
    fresh: bool,
) -> Arc<Snapshot> {
    let key = (user.id.clone(), platform);
    if fresh {
        state.bridges.snapshots.invalidate(&key).await;
    }
    state
        .bridges
        .snapshots
        .get_with(key, async {
            let result = match state.bridges.clients.get(platform) {
                Ok(client) => client.whoami(mxid).await,
                Err(e) => Err(e),
            };
            if let Ok(whoami) = &result {
                let observed = whoami.logins.iter().map(Observed::from_whoami).collect();
                if let Err(e) = reconcile(state, user, platform, observed, true).await {
                    tracing::warn!(platform = platform.id(), error = %e, "could not record bridge logins");
                }
            } else if let Err(e) = &result {
                tracing::warn!(platform = platform.id(), error = %e, "bridge whoami failed");
            }
            Arc::new(Snapshot {
                checked_at: unix_now() as i64,
                result,
            })
        })
        .await
}

pub(super) async fn status_of(
    state: &Context,
    user: &UserRow,
    platform: Platform,
) -> AppResult<PlatformStatus> {
    let configured = state.bridges.clients.is_configured(platform);
    let (reachable, last_checked_at, problem) = match (&user.matrix_user_id, configured) {
        (_, false) => (false, None, None),
        (None, true) => (
            false,
            None,
            Some("the account has no Matrix user yet".to_owned()),
        ),
        (Some(mxid), true) => {
            let snap = snapshot(state, user, mxid, platform, false).await;
            match &snap.result {
                Ok(_) => (true, Some(snap.checked_at), None),
                Err(e) => (false, Some(snap.checked_at), Some(e.public_message())),
            }
        }
    };
    let logins = stored_logins(state, user, platform).await?;
    Ok(PlatformStatus {
        platform,
        configured,
        reachable,
        connected: logins.iter().any(LoginInfo::is_connected),
        logins,
        last_checked_at,
        problem,
    })
}

/// One platform: configuration, reachability (live whoami through the cache) and the
/// logins; degrades to the stored logins when the bridge cannot be read.
pub async fn platform_status(
    state: &Context,
    user_id: &str,
    platform: Platform,
) -> AppResult<PlatformStatus> {
    let user = users::load(state, user_id).await?;
    status_of(state, &user, platform).await
}

/// All three platforms, read concurrently.
pub async fn all_statuses(state: &Context, user_id: &str) -> AppResult<Vec<PlatformStatus>> {
    let user = users::load(state, user_id).await?;
    let reads = Platform::ALL.map(|p| status_of(state, &user, p));
    futures_util::future::join_all(reads)
        .await
        .into_iter()
        .collect()
}

/// The live status: errors (503/502) when the bridge cannot be read.
pub async fn live_status(
    state: &Context,
    user_id: &str,
    platform: Platform,
) -> AppResult<PlatformStatus> {
    state.bridges.clients.get(platform)?;
    let (user, mxid) = acting_user(state, user_id).await?;
    let snap = snapshot(state, &user, &mxid, platform, false).await;
    if let Err(e) = &snap.result {
        return Err(e.clone().into());
    }
    let mut status = status_of(state, &user, platform).await?;
    status.last_checked_at = Some(snap.checked_at);
    Ok(status)
}

/// Id and name of the entry that counts plain Matrix rooms (no bridge) in chat counts.
pub const PLAIN_MATRIX: (&str, &str) = ("matrix", "Matrix");

/// Visible non-archived conversations per platform, counted by the room list's own
/// filter ([`crate::services::rooms::visible_room_counts_by_platform`]): every bridge
/// platform, then plain Matrix rooms ([`PLAIN_MATRIX`]), so that the counts add up to
/// what the room list shows. Returns (platform id, name, count).
pub async fn chat_counts(
    state: &Context,
    user_id: &str,
) -> AppResult<Vec<(&'static str, &'static str, i64)>> {
    let mut counts =
        crate::services::rooms::visible_room_counts_by_platform(state, user_id).await?;
    let mut out: Vec<_> = Platform::ALL
        .into_iter()
        .map(|p| (p.id(), p.name(), counts.remove(p.id()).unwrap_or(0)))
        .collect();
    // Everything else is a conversation without a (configured) bridge.
    out.push((PLAIN_MATRIX.0, PLAIN_MATRIX.1, counts.values().sum()));
    Ok(out)
}
