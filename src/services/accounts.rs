//! Account groups: several e-mail identities under one sign-in.
//!
//! A group is a primary user (`primary_user_id` NULL) plus the users whose
//! `primary_user_id` is the primary's id. Every account is a full user with its own
//! e-mail, Matrix account and tokens; the *active* account is the one whose access token
//! makes the request.
//!
//! Rules decided here (the contract leaves them open):
//! - An address can be added when it is unknown (a new user is created in the group) or
//!   belongs to a stand-alone user (no group of its own: not a member elsewhere, no members
//!   of its own); that user then joins the caller's group. An address that is already an
//!   account of the caller's group is 400 `account_already_added`; one that is a member of
//!   another group, or the primary of a group with added accounts, is 400
//!   `account_in_other_group`.
//! - Any account of a group may add, list, switch to, edit and remove accounts of its group.
//! - Removing an account detaches it: it becomes a stand-alone user again (its data, Matrix
//!   account and personal tokens stay; signing in with its e-mail still works) and its
//!   refresh tokens are revoked, so sessions opened by switching to it end, and their
//!   Matrix devices are logged out on the homeserver. The primary
//!   cannot be removed (400 `cannot_remove_primary`).
//! - Path ids must be UUIDs (400 `invalid_request` otherwise); an id outside the caller's
//!   group is 404, whether or not such a user exists.
//! - An add-account code only works for the group that requested it; used from another
//!   group it is 400 `invalid_code` and stays valid for the requester.

use rusqlite::Connection;

mod add;

pub use add::{request_add_code, verify_add};

use super::auth::{self, Session};
use super::matrix_sessions;
use super::users::{self, Profile};
use crate::clock::unix_now;
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::Context;
use crate::store::users::UserRow;
use crate::store::{self, matrix_logouts, refresh_tokens};

/// One account of a group as its owner sees it.
#[derive(Debug, Clone)]
pub struct Account {
    pub id: String,
    pub email: String,
    pub display_name: Option<String>,
    pub avatar_url: Option<String>,
    pub is_primary: bool,
    pub is_active: bool,
}

impl Account {
    fn of(state: &Context, user: UserRow, caller_id: &str) -> AppResult<Self> {
        let Profile { user, email } = users::profile_of(&state.master, user)?;
        Ok(Self {
            is_primary: user.primary_user_id.is_none(),
            is_active: user.id == caller_id,
            id: user.id,
            email,
            display_name: user.display_name,
            avatar_url: user.avatar_url,
        })
    }
}

/// Every account of the caller's group, primary first.
pub struct AccountList {
    pub accounts: Vec<Account>,
    pub active: Account,
}

/// The result of switching to an account.
pub struct Switched {
    pub session: Session,
    pub account: Account,
}

fn account_not_found() -> AppError {
    AppError::not_found("account")
}

/// Normalizes a path id to the stored form (lower-case hyphenated UUID); 400 otherwise.
pub fn parse_account_id(id: &str) -> AppResult<String> {
    uuid::Uuid::parse_str(id.trim())
        .map(|u| u.hyphenated().to_string())
        .map_err(|_| AppError::invalid("id", "must be a UUID"))
}

fn load_caller(conn: &Connection, caller_id: &str) -> AppResult<UserRow> {
    store::users::find(conn, caller_id)?
        .ok_or_else(|| AppError::unauthorized("the signed-in user no longer exists"))
}

/// The account `id` when it belongs to the group of `caller`; 404 otherwise.
fn load_member(conn: &Connection, caller: &UserRow, id: &str) -> AppResult<UserRow> {
    store::users::find(conn, id)?
        .filter(|u| u.group_id() == caller.group_id())
        .ok_or_else(account_not_found)
}

/// `GET /api/accounts`.
pub async fn list(state: &Context, caller_id: &str) -> AppResult<AccountList> {
    let uid = caller_id.to_owned();
    let rows = state
        .db(move |c| {
            let caller = load_caller(c, &uid)?;
            Ok(store::users::list_group(c, caller.group_id())?)
        })
        .await?;
    let accounts = rows
        .into_iter()
        .map(|u| Account::of(state, u, caller_id))
        .collect::<AppResult<Vec<_>>>()?;
    let active = accounts
        .iter()
        .find(|a| a.is_active)
        .cloned()
        .ok_or_else(|| AppError::internal("caller missing from its own account group"))?;
    Ok(AccountList { accounts, active })
}

/// `GET /api/accounts/active`: the caller's account and the Matrix access token of the
/// caller's session (the Matrix account is created first when it does not exist yet; see
/// [`matrix_sessions::session_token`]).
pub async fn active(
    state: &Context,
    caller_id: &str,
    session_id: Option<&str>,
) -> AppResult<(Account, Option<String>)> {
    let user = users::load(state, caller_id).await?;
    let user = auth::ensure_matrix_account(state, user).await?;
    let token = matrix_sessions::session_token(state, &user, session_id).await?;
    Ok((Account::of(state, user, caller_id)?, token))
}

/// Makes `user_id` a stand-alone user again. Call it inside a transaction (it reads the
/// row and writes every column back).
fn detach_row(conn: &Connection, user_id: &str) -> AppResult<()> {
    if let Some(mut user) = store::users::find(conn, user_id)? {
        user.primary_user_id = None;
        user.updated_at = unix_now() as i64;
        store::users::update(conn, &user)?;
    }
    Ok(())
}

/// `POST /api/accounts/{id}/switch`: opens a session for an account of the caller's group.
pub async fn switch(state: &Context, caller_id: &str, id: &str, web: bool) -> AppResult<Switched> {
    let id = parse_account_id(id)?;
    let uid = caller_id.to_owned();
    let target = state
        .store
        .run(move |c| {
            let caller = load_caller(c, &uid)?;
            load_member(c, &caller, &id)
        })
        .await?;
    let target = auth::ensure_matrix_account(state, target).await?;
    let target_id = target.id.clone();
    let account = Account::of(state, target.clone(), &target_id)?;
    let session = auth::open_session(state, target, false, web).await?;
    Ok(Switched { session, account })
}

/// Changes to an account; `None` leaves a field as it is.
#[derive(Debug, Default, Clone)]
pub struct AccountChange {
    pub display_name: Option<String>,
    pub avatar_url: Option<String>,
}

/// `PATCH /api/accounts/{id}`.
pub async fn update(
    state: &Context,
    caller_id: &str,
    id: &str,
    change: AccountChange,
) -> AppResult<Account> {
    let id = parse_account_id(id)?;
    let display_name = change
        .display_name
        .as_deref()
        .map(users::validate_display_name)
        .transpose()?;
    let avatar_url = change
        .avatar_url
        .as_deref()
        .map(users::validate_avatar_url)
        .transpose()?;
    let uid = caller_id.to_owned();
    let row = state
        .db(move |c| {
            let tx = c.transaction()?;
            let caller = load_caller(&tx, &uid)?;
            let mut user = load_member(&tx, &caller, &id)?;
            if display_name.is_none() && avatar_url.is_none() {
                return Ok(user);
            }
            if let Some(name) = display_name {
                user.display_name = Some(name);
            }
            if let Some(url) = avatar_url {
                user.avatar_url = Some(url);
            }
            user.updated_at = unix_now() as i64;
            store::users::update(&tx, &user)?;
            tx.commit()?;
            Ok(user)
        })
        .await?;
    Account::of(state, row, caller_id)
}

/// `DELETE /api/accounts/{id}`: detaches an added account from the group. Returns its
/// e-mail address.
pub async fn remove(state: &Context, caller_id: &str, id: &str) -> AppResult<String> {
    let id = parse_account_id(id)?;
    let uid = caller_id.to_owned();
    let now = unix_now() as i64;
    let row = state
        .db(move |c| {
            let tx = c.transaction()?;
            let caller = load_caller(&tx, &uid)?;
            let user = load_member(&tx, &caller, &id)?;
            if user.primary_user_id.is_none() {
                return Err(AppError::bad_request(
                    ErrorCode::CannotRemovePrimary,
                    "the primary account cannot be removed from its account group; only added accounts can",
                ));
            }
            detach_row(&tx, &user.id)?;
            // Its connected mailboxes and cached mail go with it (their sync tasks stop
            // when they find their account gone).
            crate::store::email::drop_user_mail(&tx, &user.id)?;
            refresh_tokens::revoke_all(&tx, &user.id, now)?;
            matrix_logouts::queue_user_devices(&tx, &user.id, now)?;
            tx.commit()?;
            Ok(user)
        })
        .await?;
    super::e2ee::destroy(state, &row.id).await;
    matrix_sessions::log_out_queued(state, &row.id).await;
    users::email_of(&state.master, &row)
}
