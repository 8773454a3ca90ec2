//! Adding an address to the caller's account group: the code is mailed to the address,
//! and a verified code either creates the user in the group or moves a stand-alone user
//! into it (the rules are in the parent module's documentation).

use rusqlite::Connection;

use super::{account_not_found, detach_row, load_caller, Account};
use crate::clock::unix_now;
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::auth::{self, CodePurpose};
use crate::services::users;
use crate::services::Context;
use crate::store::users::UserRow;
use crate::store::{self, login_codes};

fn already_added() -> AppError {
    AppError::bad_request(
        ErrorCode::AccountAlreadyAdded,
        "this e-mail address is already an account of your account group",
    )
}

fn in_other_group() -> AppError {
    AppError::bad_request(
        ErrorCode::AccountInOtherGroup,
        "this e-mail address belongs to another account group; remove it there first",
    )
}

/// Whether the existing user `candidate` may join the group `group_id`.
fn check_joinable(conn: &Connection, candidate: &UserRow, group_id: &str) -> AppResult<()> {
    if candidate.group_id() == group_id {
        return Err(already_added());
    }
    if candidate.primary_user_id.is_some()
        || store::users::list_group(conn, &candidate.id)?.len() > 1
    {
        return Err(in_other_group());
    }
    Ok(())
}

/// `POST /api/accounts/add/code`: mails an add-account code to `email`.
pub async fn request_add_code(state: &Context, caller_id: &str, email: &str) -> AppResult<()> {
    let email = auth::validate_email(email)?;
    let index = users::email_index(&state.master, &email);
    let uid = caller_id.to_owned();
    state
        .store
        .run(move |c| {
            let caller = load_caller(c, &uid)?;
            match store::users::find_by_email_index(c, &index)? {
                Some(candidate) => check_joinable(c, &candidate, caller.group_id()),
                None => Ok(()),
            }
        })
        .await?;
    auth::request_code(
        state,
        &email,
        CodePurpose::AddAccount,
        Some(caller_id.to_owned()),
    )
    .await
}

/// `POST /api/accounts/add/verify`: checks the code and adds the address to the caller's
/// group, creating the user (and its Matrix account) when the address is unknown.
pub async fn verify_add(
    state: &Context,
    caller_id: &str,
    email: &str,
    code: &str,
) -> AppResult<Account> {
    let email = auth::validate_email(email)?;
    auth::validate_code(code)?;
    let index = users::email_index(&state.master, &email);
    // Refuse ineligible addresses before the code is spent.
    let group_id = group_the_address_may_join(state, caller_id, index).await?;
    let (code_id, requested_by) =
        auth::check_code(state, &email, code, CodePurpose::AddAccount).await?;
    // The code must have been requested from this group, not by someone else who asked
    // to add the same address to theirs.
    if !requested_from_group(state, requested_by, &group_id).await? {
        release_code(state, code_id).await;
        return Err(AppError::bad_request(
            ErrorCode::InvalidCode,
            "invalid or expired verification code",
        ));
    }
    match add_to_group(state, &email, &group_id).await {
        Ok(user) => Account::of(state, user, caller_id),
        Err(e) => {
            release_code(state, code_id).await;
            Err(e)
        }
    }
}

/// The caller's group, when the address of `index` (if it is a user already) may join it.
async fn group_the_address_may_join(
    state: &Context,
    caller_id: &str,
    index: Vec<u8>,
) -> AppResult<String> {
    let uid = caller_id.to_owned();
    state
        .db(move |c| {
            let caller = load_caller(c, &uid)?;
            if let Some(candidate) = store::users::find_by_email_index(c, &index)? {
                check_joinable(c, &candidate, caller.group_id())?;
            }
            Ok(caller.group_id().to_owned())
        })
        .await
}

/// Whether the code was requested by a member of `group_id`.
async fn requested_from_group(
    state: &Context,
    requested_by: Option<String>,
    group_id: &str,
) -> AppResult<bool> {
    let gid = group_id.to_owned();
    state
        .db(move |c| {
            Ok(match requested_by {
                Some(by) => store::users::find(c, &by)?.is_some_and(|u| u.group_id() == gid),
                None => false,
            })
        })
        .await
}

/// Makes a spent code usable again (the add failed for a reason of ours, not the code's).
async fn release_code(state: &Context, code_id: i64) {
    let _ = state
        .store
        .query(move |c| login_codes::release(c, code_id))
        .await;
}

/// Adds the address to the group: a new user, or the existing one attached; either way
/// with its Matrix account. On failure the add is undone, so that a retry with the same
/// code starts from the same state.
async fn add_to_group(state: &Context, email: &str, group_id: &str) -> AppResult<UserRow> {
    let (user, is_new) =
        auth::find_or_create(state, email, Some(group_id.to_owned()), None).await?;
    let user = if is_new {
        user
    } else {
        attach(state, &user.id, group_id).await?
    };
    match auth::ensure_matrix_account(state, user.clone()).await {
        Ok(user) => Ok(user),
        Err(e) => {
            let id = user.id.clone();
            let _ = state
                .db(move |c| {
                    let tx = c.transaction()?;
                    if is_new {
                        store::users::delete(&tx, &id)?;
                    } else {
                        detach_row(&tx, &id)?;
                    }
                    tx.commit()?;
                    Ok(())
                })
                .await;
            Err(e)
        }
    }
}

/// Moves the stand-alone user `user_id` into the group `group_id` (re-checking the rules).
async fn attach(state: &Context, user_id: &str, group_id: &str) -> AppResult<UserRow> {
    let uid = user_id.to_owned();
    let gid = group_id.to_owned();
    state
        .store
        .run(move |c| {
            let tx = c.transaction()?;
            let mut user = store::users::find(&tx, &uid)?.ok_or_else(account_not_found)?;
            check_joinable(&tx, &user, &gid)?;
            let primary = store::users::find(&tx, &gid)?.ok_or_else(account_not_found)?;
            if primary.primary_user_id.is_some() {
                return Err(AppError::conflict(
                    ErrorCode::AccountGroupChanged,
                    "the account group changed; try again",
                ));
            }
            user.primary_user_id = Some(gid);
            user.updated_at = unix_now() as i64;
            store::users::update(&tx, &user)?;
            tx.commit()?;
            Ok(user)
        })
        .await
}
