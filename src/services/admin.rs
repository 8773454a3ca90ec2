//! Operator actions shared by `/api/admin/*` and `switchboard user …`.

use chrono::{DateTime, NaiveDate, Utc};

use super::session::Principal;
use super::users::{email_of, find_by_id_or_email, load, profile_of, Profile};
use crate::clock::unix_now;
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::Context;
use crate::store::users::{self, UserRow};

#[derive(Debug, clap::Subcommand)]
pub enum UserCommand {
    /// List users (id, e-mail, admin flag, subscription).
    List,
    /// Show one user, by id or e-mail.
    Show { user: String },
    /// Make a user an administrator (may use /api/admin/*).
    Promote { user: String },
    /// Set a user's personal-token subscription. Returns once the change is in effect on a
    /// running server too (about one second: servers trust a verified token that long).
    Subscription {
        user: String,
        /// Active until this date (YYYY-MM-DD, end of that day UTC) or RFC 3339 time, in the
        /// future.
        #[arg(long, conflicts_with_all = ["lapse", "forever"])]
        until: Option<String>,
        /// Active with no end date.
        #[arg(long, conflicts_with = "lapse")]
        forever: bool,
        /// Lapsed: every personal-token request answers 403 subscription_expired.
        #[arg(long)]
        lapse: bool,
    },
}

/// How a subscription should be set.
#[derive(Debug, Clone, Copy)]
pub enum SubscriptionChange {
    ActiveUntil(i64),
    ActiveForever,
    Lapse,
}

/// Parses `YYYY-MM-DD` (end of that day, UTC) or an RFC 3339 time into Unix seconds.
pub fn parse_until(text: &str) -> AppResult<i64> {
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Ok(t.timestamp());
    }
    if let Ok(d) = NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        if let Some(t) = d.and_hms_opt(23, 59, 59) {
            return Ok(t.and_utc().timestamp());
        }
    }
    Err(AppError::invalid(
        "until",
        "expected YYYY-MM-DD or an RFC 3339 date-time",
    ))
}

impl SubscriptionChange {
    /// The change an admin asked for through the API: `active` with an optional `until`
    /// (RFC 3339, or `YYYY-MM-DD` for the end of that day UTC). `until` must be in the
    /// future, and is meaningless with `active: false`.
    pub fn from_request(active: bool, until: Option<&str>) -> AppResult<Self> {
        match (active, until) {
            (true, Some(text)) => Ok(Self::ActiveUntil(parse_until(text)?)),
            (true, None) => Ok(Self::ActiveForever),
            (false, None) => Ok(Self::Lapse),
            (false, Some(_)) => Err(AppError::invalid(
                "until",
                "only allowed with \"active\": true",
            )),
        }
    }

    /// Writes the change into `user` (validated: an end date must lie in the future).
    fn apply(self, user: &mut UserRow, now: i64) -> AppResult<()> {
        match self {
            Self::ActiveUntil(until) => {
                if until <= now {
                    return Err(AppError::invalid("until", "must be in the future"));
                }
                user.subscription_active = true;
                user.subscription_until = Some(until);
            }
            Self::ActiveForever => {
                user.subscription_active = true;
                user.subscription_until = None;
            }
            Self::Lapse => {
                user.subscription_active = false;
            }
        }
        user.updated_at = now;
        Ok(())
    }
}

/// Sets the subscription of a user given by id or e-mail (the CLI).
pub async fn set_subscription(
    state: &Context,
    who: String,
    change: SubscriptionChange,
) -> AppResult<UserRow> {
    // One transaction: see `set_user_subscription`.
    update_user(state, who, move |user, now| change.apply(user, now)).await
}

/// Reads the user given by id or e-mail, applies `change` and writes it back, in one
/// transaction.
async fn update_user(
    state: &Context,
    who: String,
    change: impl FnOnce(&mut UserRow, i64) -> AppResult<()> + Send + 'static,
) -> AppResult<UserRow> {
    let master = state.master.clone();
    state
        .store
        .run(move |c| {
            let tx = c.transaction()?;
            let mut user = find_by_id_or_email(&tx, &master, &who)?;
            change(&mut user, unix_now() as i64)?;
            users::update(&tx, &user)?;
            tx.commit()?;
            Ok(user)
        })
        .await
}

/// Sets the subscription of the user with this id (the admin API). Takes effect on the
/// next personal-token request of the user: the gate reads the tier on every request.
pub async fn set_user_subscription(
    state: &Context,
    user_id: &str,
    change: SubscriptionChange,
) -> AppResult<UserRow> {
    let uid = user_id.to_owned();
    state
        .store
        .run(move |c| {
            // Read and write back in one IMMEDIATE transaction, so a profile change or key
            // deletion committed meanwhile is not reverted by this full-row write.
            let tx = c.transaction()?;
            let mut user = crate::services::users::load_row(&tx, &uid)?;
            change.apply(&mut user, unix_now() as i64)?;
            users::update(&tx, &user)?;
            tx.commit()?;
            Ok(user)
        })
        .await
}

/// The caller if it is an administrator: a native session of a user whose `is_admin` flag
/// is set (by `auth.admin_emails` at sign-up or `switchboard user promote`). Personal
/// tokens get 403 `forbidden_for_api_token`, other users 403 `admin_required`.
pub async fn require_admin(state: &Context, principal: &Principal) -> AppResult<UserRow> {
    let user_id = match principal {
        Principal::User { user_id, .. } => user_id.clone(),
        Principal::ApiToken { .. } => {
            return Err(AppError::forbidden(
                ErrorCode::ForbiddenForApiToken,
                "operator endpoints are not available to personal API tokens",
            ))
        }
    };
    let user = state.store.query(move |c| users::find(c, &user_id)).await?;
    match user {
        Some(u) if u.is_admin => Ok(u),
        _ => Err(AppError::forbidden(
            ErrorCode::AdminRequired,
            "this endpoint is for administrators only",
        )),
    }
}

/// Largest page of `/api/admin/users`.
pub const MAX_PAGE: i64 = 100;
/// Default page size of `/api/admin/users`.
pub const DEFAULT_PAGE: i64 = 50;

/// A page of users, oldest first.
#[derive(Debug, Clone)]
pub struct UserPage {
    pub users: Vec<Profile>,
    pub total: i64,
    pub limit: i64,
    pub offset: i64,
}

impl UserPage {
    pub fn has_more(&self) -> bool {
        self.offset + (self.users.len() as i64) < self.total
    }
}

/// Lists users; `limit` 1 to 100 (default 50), `offset` at least 0 (default 0); values
/// outside are 400, not clamped.
pub async fn list_users(
    state: &Context,
    limit: Option<i64>,
    offset: Option<i64>,
) -> AppResult<UserPage> {
    let limit = limit.unwrap_or(DEFAULT_PAGE);
    if !(1..=MAX_PAGE).contains(&limit) {
        return Err(AppError::invalid(
            "limit",
            format!("must be 1 to {MAX_PAGE}"),
        ));
    }
    let offset = offset.unwrap_or(0);
    if offset < 0 {
        return Err(AppError::invalid("offset", "must be at least 0"));
    }
    let (rows, total) = state
        .db(move |c| {
            let tx = c.transaction()?;
            let rows = users::list(&tx, limit, offset)?;
            let total = users::count(&tx)?;
            tx.commit()?;
            Ok((rows, total))
        })
        .await?;
    let users = rows
        .into_iter()
        .map(|u| profile_of(&state.master, u))
        .collect::<AppResult<Vec<_>>>()?;
    Ok(UserPage {
        users,
        total,
        limit,
        offset,
    })
}

/// One user by id; 404 when unknown (ids are UUIDs: anything else is simply not found).
pub async fn show_user(state: &Context, user_id: &str) -> AppResult<Profile> {
    profile_of(&state.master, load(state, user_id).await?)
}

/// Makes the user with this id an administrator (the admin API; ids only, 404 when
/// unknown). Promoting an administrator again changes nothing.
pub async fn promote_by_id(state: &Context, user_id: &str) -> AppResult<UserRow> {
    let user = load(state, user_id).await?;
    promote(state, user.id).await
}

pub async fn promote(state: &Context, who: String) -> AppResult<UserRow> {
    update_user(state, who, |user, now| {
        user.is_admin = true;
        user.updated_at = now;
        Ok(())
    })
    .await
}

fn describe(state: &Context, u: &UserRow) -> String {
    let email = email_of(&state.master, u).unwrap_or_else(|_| "<unreadable>".to_owned());
    let now = unix_now() as i64;
    let subscription = match (u.subscription_is_active(now), u.subscription_until) {
        (true, None) => "active".to_owned(),
        (true, Some(until)) => format!("active until {}", fmt_time(until)),
        (false, _) => "lapsed".to_owned(),
    };
    format!(
        "{}  {}  admin={}  subscription={}  matrix={}  created={}\n",
        u.id,
        email,
        u.is_admin,
        subscription,
        u.matrix_user_id.as_deref().unwrap_or("-"),
        fmt_time(u.created_at)
    )
}

pub fn fmt_time(secs: i64) -> String {
    DateTime::<Utc>::from_timestamp(secs, 0)
        .map(|t| t.to_rfc3339())
        .unwrap_or_default()
}

/// Runs a `switchboard user …` command and returns what to print.
pub async fn run_cli(state: &Context, command: UserCommand) -> AppResult<String> {
    match command {
        UserCommand::List => {
            let rows = state.db(|c| Ok(users::list(c, i64::MAX, 0)?)).await?;
            if rows.is_empty() {
                return Ok("no users yet\n".to_owned());
            }
            Ok(rows.iter().map(|u| describe(state, u)).collect())
        }
        UserCommand::Show { user } => {
            let master = state.master.clone();
            let row = state
                .store
                .run(move |c| find_by_id_or_email(c, &master, &user))
                .await?;
            Ok(describe(state, &row))
        }
        UserCommand::Promote { user } => {
            let row = promote(state, user).await?;
            Ok(format!("promoted to admin: {}", describe(state, &row)))
        }
        UserCommand::Subscription {
            user,
            until,
            forever,
            lapse,
        } => {
            let change = match (until, forever, lapse) {
                (Some(text), _, _) => SubscriptionChange::ActiveUntil(parse_until(&text)?),
                (None, true, _) => SubscriptionChange::ActiveForever,
                (None, false, true) => SubscriptionChange::Lapse,
                (None, false, false) => {
                    return Err(AppError::invalid(
                        "subscription",
                        "give --until DATE, --forever or --lapse",
                    ))
                }
            };
            let row = set_subscription(state, user, change).await?;
            // A running server trusts what it verified for up to this long; returning only
            // afterwards means the change is in effect everywhere once the command is done.
            tokio::time::sleep(super::session::AUTH_CACHE_MAX_AGE).await;
            Ok(format!("subscription updated: {}", describe(state, &row)))
        }
    }
}
