//! The user's Matrix identity at the bridges and the local record of their logins
//! (`bridge_logins`): reconciling what a bridge reports and publishing `bridge.state`.

use super::*;

/// Parses a `{platform}` path value: 400 `invalid_platform` outside the three.
pub fn parse_platform(value: &str) -> AppResult<Platform> {
    Platform::parse(value).ok_or_else(|| {
        AppError::bad_request(
            ErrorCode::InvalidPlatform,
            format!("platform: {value:?} is not one of whatsapp, telegram, discord"),
        )
    })
}

/// The user and the Matrix ID the bridge acts for (created first if missing).
pub(super) async fn acting_user(state: &Context, user_id: &str) -> AppResult<(UserRow, String)> {
    let mut user = users::load(state, user_id).await?;
    if user.matrix_user_id.is_none() {
        user = crate::services::auth::ensure_matrix_account(state, user).await?;
    }
    match user.matrix_user_id.clone() {
        Some(mxid) => Ok((user, mxid)),
        None => Err(AppError::Unavailable {
            retry_after_secs: None,
            code: ErrorCode::MatrixAccountMissing,
            message: "the account has no Matrix user (no homeserver is configured), so no \
                      bridge can act for it"
                .into(),
        }),
    }
}

pub(super) fn row_key(user_id: &str, platform: Platform, login_id: &str) -> String {
    format!("{user_id}/{}/{login_id}", platform.id())
}

pub(super) fn open_row(dek: Option<&DataKey>, row: &BridgeLoginRow) -> LoginInfo {
    let key = format!("{}/{}/{}", row.user_id, row.platform, row.login_id);
    let open = |column: &str, sealed: Option<&Vec<u8>>| -> Option<String> {
        dek?.open_string(sealed?, &Aad::new("bridge_logins", column, &key))
            .ok()
    };
    let remote_profile = open("remote_profile", row.remote_profile_enc.as_ref())
        .and_then(|s| serde_json::from_str::<serde_json::Map<String, Value>>(&s).ok())
        .unwrap_or_default();
    LoginInfo {
        id: row.login_id.clone(),
        remote_name: open("remote_name", row.remote_name_enc.as_ref()).filter(|n| !n.is_empty()),
        remote_profile,
        logged_in: !LOGGED_OUT_STATES.contains(&row.state_event.as_str()),
        state_event: row.state_event.clone(),
        error: row.error.clone().or_else(|| row.error_code.clone()),
        error_code: row.error_code.clone(),
        updated_at: row.updated_at,
    }
}

/// The stored logins of the user on a platform.
pub(super) async fn stored_logins(
    state: &Context,
    user: &UserRow,
    platform: Platform,
) -> AppResult<Vec<LoginInfo>> {
    let uid = user.id.clone();
    let rows = state
        .store
        .query(move |c| bridge_logins::list(c, &uid, platform.id()))
        .await?;
    let dek = users::data_key(&state.master, user).ok();
    Ok(rows.iter().map(|r| open_row(dek.as_ref(), r)).collect())
}

/// What the bridge says about one login, in the record's terms.
pub(super) struct Observed {
    pub(super) login_id: String,
    pub(super) remote_name: String,
    pub(super) remote_profile: serde_json::Map<String, Value>,
    pub(super) state_event: String,
    pub(super) error_code: Option<String>,
    pub(super) error: Option<String>,
    pub(super) state_ts: Option<i64>,
}

impl Observed {
    pub(super) fn from_whoami(l: &WhoamiLogin) -> Self {
        let state = l.state.clone().unwrap_or_default();
        let nonempty = |s: Option<String>| s.filter(|v| !v.trim().is_empty());
        let profile = match &l.profile {
            Some(Value::Object(map)) => map.clone(),
            _ => serde_json::Map::new(),
        };
        Self {
            login_id: l.id.clone(),
            remote_name: l.name.clone(),
            remote_profile: profile,
            state_event: l.state_event().to_owned(),
            error_code: nonempty(state.error),
            error: nonempty(state.message),
            state_ts: state.timestamp.filter(|t| *t > 0.0).map(|t| t as i64),
        }
    }
}

/// A `bridge.state` change to publish.
pub(super) struct StateChange {
    pub(super) login_id: String,
    pub(super) state_event: String,
    pub(super) error: Option<String>,
}

/// Writes `observed` into the local record of `platform` and publishes a `bridge.state`
/// event per changed or added login; with `complete` (`observed` is the bridge's whole
/// whoami list) logins missing from it are removed and published as `LOGGED_OUT`.
pub(super) async fn reconcile(
    state: &Context,
    user: &UserRow,
    platform: Platform,
    observed: Vec<Observed>,
    complete: bool,
) -> AppResult<()> {
    let master = state.master.clone();
    let uid = user.id.clone();
    let now = unix_now() as i64;
    let changes = state
        .db(move |c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            // Sealed under the data key as it is in this transaction (`user` was read before
            // the bridge round trip; the keys may have been deleted since).
            let current = crate::services::users::load_row(&tx, &uid)?;
            let dek = users::data_key(&master, &current)?;
            let old = bridge_logins::list(&tx, &uid, platform.id())?;
            let mut changes = Vec::new();
            for o in &observed {
                let prev = old.iter().find(|r| r.login_id == o.login_id);
                let (same_state, same_info) = compare(&dek, prev, o);
                if !same_state {
                    changes.push(StateChange {
                        login_id: o.login_id.clone(),
                        state_event: o.state_event.clone(),
                        error: o.error.clone().or_else(|| o.error_code.clone()),
                    });
                }
                if same_state && same_info {
                    continue;
                }
                let created_at = prev.map_or(now, |p| p.created_at);
                let row = sealed_row(&dek, &uid, platform, o, created_at, now);
                bridge_logins::upsert(&tx, &row)?;
            }
            let missing = old
                .iter()
                .filter(|r| complete && !observed.iter().any(|o| o.login_id == r.login_id));
            for gone in missing {
                bridge_logins::delete(&tx, &uid, platform.id(), &gone.login_id)?;
                changes.push(StateChange {
                    login_id: gone.login_id.clone(),
                    state_event: "LOGGED_OUT".into(),
                    error: None,
                });
            }
            tx.commit()?;
            Ok(changes)
        })
        .await?;
    for change in changes {
        publish_state(state, &user.id, platform, change);
    }
    Ok(())
}

/// Whether the stored row of a login (if any) has the observed state, and the observed
/// remote name, profile and state time.
fn compare(
    dek: &crate::crypto::DataKey,
    prev: Option<&bridge_logins::BridgeLoginRow>,
    o: &Observed,
) -> (bool, bool) {
    let same_state = prev.is_some_and(|p| {
        p.state_event == o.state_event && p.error == o.error && p.error_code == o.error_code
    });
    let same_info = prev.is_some_and(|p| {
        let info = open_row(Some(dek), p);
        info.remote_name.unwrap_or_default() == o.remote_name
            && info.remote_profile == o.remote_profile
            && p.state_ts == o.state_ts
    });
    (same_state, same_info)
}

/// The stored row of an observed login, its remote name and profile sealed under the
/// user's data key (bound to the row by its key).
fn sealed_row(
    dek: &crate::crypto::DataKey,
    uid: &str,
    platform: Platform,
    o: &Observed,
    created_at: i64,
    now: i64,
) -> BridgeLoginRow {
    let key = row_key(uid, platform, &o.login_id);
    BridgeLoginRow {
        user_id: uid.to_owned(),
        platform: platform.id().to_owned(),
        login_id: o.login_id.clone(),
        remote_name_enc: Some(dek.seal_str(
            &o.remote_name,
            &Aad::new("bridge_logins", "remote_name", &key),
        )),
        remote_profile_enc: Some(dek.seal_str(
            &Value::Object(o.remote_profile.clone()).to_string(),
            &Aad::new("bridge_logins", "remote_profile", &key),
        )),
        state_event: o.state_event.clone(),
        error_code: o.error_code.clone(),
        error: o.error.clone(),
        state_ts: o.state_ts,
        created_at,
        updated_at: now,
    }
}

pub(super) fn publish_state(
    state: &Context,
    user_id: &str,
    platform: Platform,
    change: StateChange,
) {
    state.events.publish(
        user_id,
        ChangeEvent::BridgeState {
            platform: platform.id(),
            login_id: change.login_id,
            state_event: change.state_event,
            error: change.error,
        },
    );
}

/// Removes logins from the record (after a logout) and publishes them as `LOGGED_OUT`.
pub(super) async fn forget_logins(
    state: &Context,
    user_id: &str,
    platform: Platform,
    login_id: Option<&str>,
) -> AppResult<Vec<String>> {
    let uid = user_id.to_owned();
    let only = login_id.map(str::to_owned);
    let removed = state
        .db(move |c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let ids: Vec<String> = bridge_logins::list(&tx, &uid, platform.id())?
                .into_iter()
                .map(|r| r.login_id)
                .filter(|id| only.as_ref().is_none_or(|o| o == id))
                .collect();
            for id in &ids {
                bridge_logins::delete(&tx, &uid, platform.id(), id)?;
            }
            tx.commit()?;
            Ok(ids)
        })
        .await?;
    state
        .bridges
        .snapshots
        .invalidate(&(user_id.to_owned(), platform))
        .await;
    for id in &removed {
        publish_state(
            state,
            user_id,
            platform,
            StateChange {
                login_id: id.clone(),
                state_event: "LOGGED_OUT".into(),
                error: None,
            },
        );
    }
    Ok(removed)
}
