//! Operator actions shared by `/api/admin/*` and `switchboard user …`.

use chrono::{DateTime, NaiveDate, Utc};

use super::users::{email_of, find_by_id_or_email};
use crate::error::{AppError, AppResult};
use crate::ratelimit::unix_now;
use crate::state::AppState;
use crate::store::users::{self, UserRow};

#[derive(Debug, clap::Subcommand)]
pub enum UserCommand {
    /// List users (id, e-mail, admin flag, subscription).
    List,
    /// Show one user, by id or e-mail.
    Show { user: String },
    /// Make a user an administrator (may use /api/admin/*).
    Promote { user: String },
    /// Set a user's personal-token subscription.
    Subscription {
        user: String,
        /// Active until this date (YYYY-MM-DD) or RFC 3339 time.
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

pub async fn set_subscription(
    state: &AppState,
    who: String,
    change: SubscriptionChange,
) -> AppResult<UserRow> {
    let master = state.master.clone();
    state
        .store
        .run(move |c| {
            let mut user = find_by_id_or_email(c, &master, &who)?;
            match change {
                SubscriptionChange::ActiveUntil(until) => {
                    user.subscription_active = true;
                    user.subscription_until = Some(until);
                }
                SubscriptionChange::ActiveForever => {
                    user.subscription_active = true;
                    user.subscription_until = None;
                }
                SubscriptionChange::Lapse => {
                    user.subscription_active = false;
                }
            }
            user.updated_at = unix_now() as i64;
            users::update(c, &user)?;
            Ok(user)
        })
        .await
}

pub async fn promote(state: &AppState, who: String) -> AppResult<UserRow> {
    let master = state.master.clone();
    state
        .store
        .run(move |c| {
            let mut user = find_by_id_or_email(c, &master, &who)?;
            user.is_admin = true;
            user.updated_at = unix_now() as i64;
            users::update(c, &user)?;
            Ok(user)
        })
        .await
}

fn describe(state: &AppState, u: &UserRow) -> String {
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
pub async fn run_cli(state: &AppState, command: UserCommand) -> AppResult<String> {
    match command {
        UserCommand::List => {
            let rows = state
                .store
                .run(|c| Ok::<_, AppError>(users::list(c, i64::MAX, 0)?))
                .await?;
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
            Ok(format!("subscription updated: {}", describe(state, &row)))
        }
    }
}
