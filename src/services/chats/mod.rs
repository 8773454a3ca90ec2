//! `POST /api/chats`: starts a conversation with someone the user has not talked to yet,
//! on a bridge ([`bridge`]: `resolve_identifier` then `create_dm`) or on plain Matrix
//! ([`matrix_dm`]: an encrypted direct room with the person invited).
//!
//! - The identifier is checked and normalised first ([`identifier`]); nothing invalid
//!   reaches a bridge or the homeserver.
//! - Each call that passes those checks counts against the user's budget of
//!   `[rate_limit] new_chats_per_hour` (every token and session together), so a leaked
//!   token can neither spam new chats nor enumerate phone numbers quickly: 429 with
//!   `Retry-After` beyond it.
//! - One start per user at a time (a per-user lock), so two concurrent calls for the same
//!   person end in one room.
//! - The room is stored before the answer ([`joined`]), so it is in the room list and
//!   readable at once; the sync brings its timeline as for any newly joined room.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::users;
use crate::services::Context;
use crate::store::users::UserRow;

mod bridge;
mod group;
pub mod identifier;
pub(crate) mod joined;
mod matrix_dm;

pub use identifier::Target;

/// The window of the per-user new-chat budget.
pub const NEW_CHAT_WINDOW: Duration = Duration::from_secs(3600);

/// A started (or found) conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewChat {
    pub room_id: String,
    /// False when the conversation existed already (the same room is returned).
    pub created: bool,
}

/// Most participants of a new group besides the user.
pub const MAX_GROUP_PARTICIPANTS: usize = 100;
/// Longest group name, in characters.
pub const MAX_GROUP_NAME_CHARS: usize = 255;

/// Who acts: the user, its Matrix ID and Matrix access token.
pub(crate) struct Acting {
    pub user: UserRow,
    pub mxid: String,
    pub token: String,
}

/// `POST /api/chats {platform, identifier}`.
pub async fn start(
    state: &Context,
    user_id: &str,
    platform: &str,
    identifier: &str,
) -> AppResult<NewChat> {
    let target = Target::parse(platform)?;
    let identifier = identifier::normalise(target, identifier)?;
    if let Target::Bridge(p) = target {
        state.bridges.clients.get(p)?;
    }
    let matrix = state.matrix.clone().ok_or_else(|| {
        AppError::unavailable(
            ErrorCode::HomeserverUnavailable,
            "no Matrix homeserver is configured on this server",
        )
    })?;
    charge(state, user_id).await?;
    let acting = acting(state, user_id).await?;
    let lock = lock_of(user_id);
    let _one_at_a_time = lock.lock().await;
    let chat = match target {
        Target::Bridge(p) => bridge::start(state, &matrix, &acting, p, &identifier).await?,
        Target::Matrix => matrix_dm::start(state, &matrix, &acting, &identifier).await?,
    };
    tracing::info!(%user_id, platform = target.id(), room_id = %chat.room_id,
        created = chat.created, "conversation started");
    Ok(chat)
}

/// `POST /api/chats {platform, participants, name}`: a new group with `participants` (1 to
/// [`MAX_GROUP_PARTICIPANTS`] besides the user), each checked like the identifier of a
/// direct chat. Always a new room (`created: true`); one call counts once against the
/// new-chat budget.
pub async fn start_group(
    state: &Context,
    user_id: &str,
    platform: &str,
    participants: &[String],
    name: Option<&str>,
) -> AppResult<NewChat> {
    let target = Target::parse(platform)?;
    let participants = group_participants(target, participants)?;
    let name = group_name(name)?;
    if let Target::Bridge(p) = target {
        state.bridges.clients.get(p)?;
    }
    let matrix = state.matrix.clone().ok_or_else(|| {
        AppError::unavailable(
            ErrorCode::HomeserverUnavailable,
            "no Matrix homeserver is configured on this server",
        )
    })?;
    let acting = acting(state, user_id).await?;
    if let Some(i) = participants.iter().position(|p| *p == acting.mxid) {
        return Err(AppError::invalid(
            &format!("participants[{i}]"),
            "is the user's own Matrix ID (the user is in the group already)",
        ));
    }
    charge(state, user_id).await?;
    let lock = lock_of(user_id);
    let _one_at_a_time = lock.lock().await;
    let name = name.as_deref();
    let chat = match target {
        Target::Bridge(p) => {
            group::start_bridge(state, &matrix, &acting, p, &participants, name).await?
        }
        Target::Matrix => group::start_matrix(state, &matrix, &acting, &participants, name).await?,
    };
    tracing::info!(%user_id, platform = target.id(), room_id = %chat.room_id,
        participants = participants.len(), "group created");
    Ok(chat)
}

/// The participants checked and normalised, each error naming `participants[i]`;
/// the same person twice is refused.
fn group_participants(target: Target, raw: &[String]) -> AppResult<Vec<String>> {
    if raw.is_empty() || raw.len() > MAX_GROUP_PARTICIPANTS {
        return Err(AppError::invalid(
            "participants",
            format!("must name 1 to {MAX_GROUP_PARTICIPANTS} people besides the user"),
        ));
    }
    let mut out: Vec<String> = Vec::with_capacity(raw.len());
    for (i, value) in raw.iter().enumerate() {
        let field = format!("participants[{i}]");
        let normal = identifier::normalise(target, value).map_err(|e| {
            let why = e.to_string();
            let why = why.strip_prefix("identifier: ").unwrap_or(&why).to_owned();
            AppError::invalid(&field, why)
        })?;
        if let Some(j) = out.iter().position(|o| *o == normal) {
            return Err(AppError::invalid(
                &field,
                format!("repeats participants[{j}]"),
            ));
        }
        out.push(normal);
    }
    Ok(out)
}

/// The group's name: trimmed, blank is none, at most [`MAX_GROUP_NAME_CHARS`] characters
/// without control characters.
pub fn group_name(raw: Option<&str>) -> AppResult<Option<String>> {
    let Some(name) = raw.map(str::trim).filter(|n| !n.is_empty()) else {
        return Ok(None);
    };
    if name.chars().count() > MAX_GROUP_NAME_CHARS {
        return Err(AppError::invalid(
            "name",
            format!("must be at most {MAX_GROUP_NAME_CHARS} characters"),
        ));
    }
    if name.chars().any(char::is_control) {
        return Err(AppError::invalid(
            "name",
            "must not contain control characters",
        ));
    }
    Ok(Some(name.to_owned()))
}

/// Counts one call against the user's new-chat budget (429 beyond it).
async fn charge(state: &Context, user_id: &str) -> AppResult<()> {
    let limit = state.config.rate_limit.new_chats_per_hour;
    let key = format!("new-chats:{user_id}");
    match state.limiter.hit(&key, limit, NEW_CHAT_WINDOW).await {
        Ok(_) => Ok(()),
        Err(quota) => Err(AppError::rate_limited(
            format!(
                "at most {limit} new conversations can be started per hour; retry in {} s",
                quota.retry_after()
            ),
            quota.retry_after(),
        )),
    }
}

pub(crate) async fn acting(state: &Context, user_id: &str) -> AppResult<Acting> {
    let mut user = users::load(state, user_id).await?;
    if user.matrix_user_id.is_none() {
        user = crate::services::auth::ensure_matrix_account(state, user).await?;
    }
    let missing = || {
        AppError::conflict(
            ErrorCode::MatrixAccountMissing,
            "this account has no Matrix session yet; sign in again in the native app",
        )
    };
    let mxid = user.matrix_user_id.clone().ok_or_else(missing)?;
    let token = users::matrix_token_of(&state.master, &user)?.ok_or_else(missing)?;
    Ok(Acting { user, mxid, token })
}

/// The user's lock for starting chats.
fn lock_of(user_id: &str) -> Arc<tokio::sync::Mutex<()>> {
    type Locks = moka::sync::Cache<String, Arc<tokio::sync::Mutex<()>>>;
    static LOCKS: OnceLock<Locks> = OnceLock::new();
    LOCKS
        .get_or_init(|| {
            moka::sync::Cache::builder()
                .max_capacity(100_000)
                .time_to_idle(Duration::from_secs(600))
                .build()
        })
        .get_with(user_id.to_owned(), Default::default)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clients::provisioning::Platform;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn group_participants_are_normalised_bounded_and_named_by_index() {
        let wa = Target::Bridge(Platform::Whatsapp);
        assert_eq!(
            group_participants(wa, &strings(&["+49 155 50001", "4915550002"])).unwrap(),
            ["+4915550001", "+4915550002"]
        );
        let message = |r: AppResult<Vec<String>>| r.unwrap_err().to_string();
        assert!(message(group_participants(wa, &[])).starts_with("participants: "));
        let many: Vec<String> = (0..=MAX_GROUP_PARTICIPANTS)
            .map(|i| format!("+49155{i:05}"))
            .collect();
        assert!(message(group_participants(wa, &many)).starts_with("participants: "));
        assert!(group_participants(wa, &many[..MAX_GROUP_PARTICIPANTS]).is_ok());
        let bad = group_participants(wa, &strings(&["4915550001", "../x"]));
        assert!(message(bad).starts_with("participants[1]: "));
        let twice = group_participants(wa, &strings(&["4915550001", "+49 155 50001"]));
        assert_eq!(message(twice), "participants[1]: repeats participants[0]");
        let mx = group_participants(Target::Matrix, &strings(&["@a:x.org", "b"]));
        assert!(message(mx).starts_with("participants[1]: "));
    }

    #[test]
    fn group_names_are_trimmed_and_bounded() {
        assert_eq!(
            group_name(Some("  Family ")).unwrap().as_deref(),
            Some("Family")
        );
        assert_eq!(group_name(Some("   ")).unwrap(), None);
        assert_eq!(group_name(None).unwrap(), None);
        assert!(group_name(Some(&"é".repeat(255))).is_ok());
        let long = group_name(Some(&"é".repeat(256))).unwrap_err();
        assert!(long.to_string().starts_with("name: "), "{long}");
        assert!(group_name(Some("a\nb")).is_err());
    }
}
