//! E-mailed one-time codes: what proves a person at sign-in, when adding an account, and
//! before a recovery-key reset. Kept apart from sessions ([`super::auth`]) so that what
//! asks for a fresh code does not depend on sign-in.
//!
//! Codes: 6 digits, argon2-hashed, single use, expiring after `auth.code_ttl`; five wrong
//! tries burn a code; requesting a new code kills every older one, used or not; at most
//! three codes per ten minutes and 20 wrong codes per 24 hours per address.

use std::time::Duration;

use super::users;
use crate::clock::unix_now;
use crate::crypto;
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::Context;
use crate::store::login_codes::{self, LoginCodeRow};

pub const MAX_CODE_ATTEMPTS: i64 = 5;
pub const CODES_PER_WINDOW: usize = 3;
pub const CODE_WINDOW_SECS: i64 = 600;
/// `auth.max_code_failures` (20 by default) wrong codes per address per this window. With
/// one-in-a-million codes, a guesser gets 20 × 365 = 7,300 tries a year: a 0.73% chance of
/// ever getting in. The price: whoever knows the address can spend its tries and lock its
/// owner out of signing in (not of sessions already open) for up to a day.
pub const FAILURE_WINDOW_SECS: i64 = 86_400;
/// How long a request waits for a hashing slot before it is told the server is busy.
const HASH_QUEUE_WAIT: Duration = Duration::from_secs(5);

/// Argon2 is deliberately costly: it runs on blocking threads, never while holding a
/// database connection, and at most on half the cores at once, so a flood of sign-in
/// requests cannot starve everyone else of connections or CPU.
static HASH_SLOTS: std::sync::LazyLock<tokio::sync::Semaphore> = std::sync::LazyLock::new(|| {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    tokio::sync::Semaphore::new((cores / 2).max(1))
});

async fn in_hash_slot<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> AppResult<T> {
    let permit = tokio::time::timeout(HASH_QUEUE_WAIT, HASH_SLOTS.acquire())
        .await
        .map_err(|_| AppError::busy("too many sign-in requests at once; retry in a moment"))?
        .map_err(AppError::internal)?;
    let out = tokio::task::spawn_blocking(work)
        .await
        .map_err(AppError::internal)?;
    drop(permit);
    Ok(out)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodePurpose {
    SignIn,
    AddAccount,
}

impl CodePurpose {
    fn as_str(self) -> &'static str {
        match self {
            Self::SignIn => "sign_in",
            Self::AddAccount => "add_account",
        }
    }

    fn wording(self) -> &'static str {
        match self {
            Self::SignIn => "sign in to Switchboard",
            Self::AddAccount => "add this address as an account in Switchboard",
        }
    }
}

/// Checks the syntax of an e-mail address and returns it normalized.
pub fn validate_email(email: &str) -> AppResult<String> {
    let normalized = crypto::normalize_email(email);
    if normalized.len() > 254 || normalized.parse::<lettre::Address>().is_err() {
        return Err(AppError::invalid("email", "not a valid e-mail address"));
    }
    Ok(normalized)
}

/// Checks that a code is exactly six digits.
pub fn validate_code(code: &str) -> AppResult<()> {
    if code.len() != 6 || !code.bytes().all(|b| b.is_ascii_digit()) {
        return Err(AppError::invalid("code", "must be exactly 6 digits"));
    }
    Ok(())
}

/// Creates a code for `email`, stores its hash and mails it.
pub async fn request_code(
    state: &Context,
    email: &str,
    purpose: CodePurpose,
    requested_by: Option<String>,
) -> AppResult<()> {
    let email = validate_email(email)?;
    let index = users::email_index(&state.master, &email);
    let code = crypto::generate_code();
    let code_for_hash = code.clone();
    let ttl = state.config.auth.code_ttl.0;
    let now = unix_now() as i64;
    // The per-address limit is checked before the costly hash, and again with the insert.
    let check_index = index.clone();
    state
        .store
        .run(move |c| check_code_budget(c, &check_index, now))
        .await?;
    let hash = in_hash_slot(move || crypto::hash_code(&code_for_hash)).await?;
    let id = state
        .db(move |c| {
            let tx = c.transaction()?;
            check_code_budget(&tx, &index, now)?;
            let expires = now + ttl.as_secs() as i64;
            let id = login_codes::insert(
                &tx,
                &index,
                purpose.as_str(),
                requested_by.as_deref(),
                &hash,
                expires,
                now,
            )?;
            tx.commit()?;
            Ok(id)
        })
        .await?;
    if let Err(e) = state
        .mailer
        .send_code(&email, &code, purpose.wording(), ttl)
        .await
    {
        // Not sent, so it must not count against the address or be usable.
        let _ = state.store.query(move |c| login_codes::delete(c, id)).await;
        // The mail server's words (and address) go to the log, not to the caller.
        tracing::warn!(error = %e, "sign-in code could not be mailed");
        return Err(AppError::Unavailable {
            retry_after_secs: None,
            code: ErrorCode::MailUnavailable,
            message: "the code could not be mailed; try again in a moment".to_owned(),
        });
    }
    Ok(())
}

/// Checks `code` against the newest usable code of `email`; consumes it on success.
/// Returns the code's row id and who requested it.
pub async fn check_code(
    state: &Context,
    email: &str,
    code: &str,
    purpose: CodePurpose,
) -> AppResult<(i64, Option<String>)> {
    let email = validate_email(email)?;
    validate_code(code)?;
    let index = users::email_index(&state.master, &email);
    let code = code.to_owned();
    let now = unix_now() as i64;
    let max_failures = i64::from(state.config.auth.max_code_failures);
    let (row, failure_id) = state
        .store
        .run(move |c| take_an_attempt(c, &index, purpose, now, max_failures))
        .await?
        .ok_or_else(invalid_code)?;
    let hash = row.code_hash.clone();
    if !in_hash_slot(move || crypto::verify_code(&code, &hash)).await? {
        return Err(invalid_code());
    }
    let (id, requested_by) = (row.id, row.requested_by);
    state
        .store
        .run(move |c| {
            let tx = c.transaction()?;
            if !login_codes::consume(&tx, id, now)? {
                return Err(invalid_code());
            }
            login_codes::forget_failure(&tx, failure_id)?;
            tx.commit()?;
            Ok((id, requested_by))
        })
        .await
}

fn invalid_code() -> AppError {
    AppError::bad_request(
        ErrorCode::InvalidCode,
        "invalid or expired verification code",
    )
}

/// One transaction: the address's failure budget (429 past it), the code's own tries,
/// and a failure recorded in advance (taken back once the code proves right), so that
/// concurrent guesses cannot together exceed either limit. The newest usable code and
/// that failure's id; `None` when there is no code left to try.
fn take_an_attempt(
    c: &mut rusqlite::Connection,
    index: &[u8],
    purpose: CodePurpose,
    now: i64,
    max_failures: i64,
) -> AppResult<Option<(LoginCodeRow, i64)>> {
    let tx = c.transaction()?;
    let (failures, oldest) = login_codes::failures_since(&tx, index, now - FAILURE_WINDOW_SECS)?;
    if failures >= max_failures {
        let retry = (oldest.unwrap_or(now) + FAILURE_WINDOW_SECS - now).max(1) as u64;
        return Err(AppError::TooManyRequests {
            code: ErrorCode::TooManyAttempts,
            message: format!(
                "too many wrong codes for this address ({max_failures} per 24 h); retry in {retry} s"
            ),
            retry_after_secs: Some(retry),
        });
    }
    let Some(row) = login_codes::newest_usable(&tx, index, purpose.as_str(), now)? else {
        return Ok(None);
    };
    if login_codes::take_attempt(&tx, row.id, MAX_CODE_ATTEMPTS)?.is_none() {
        return Ok(None);
    }
    let failure_id = login_codes::record_failure(&tx, index, now)?;
    tx.commit()?;
    Ok(Some((row, failure_id)))
}

/// 429 when three codes were sent to this address in the last ten minutes.
fn check_code_budget(c: &rusqlite::Connection, index: &[u8], now: i64) -> AppResult<()> {
    let recent = login_codes::sent_since(c, index, now - CODE_WINDOW_SECS)?;
    if recent.len() >= CODES_PER_WINDOW {
        let retry = (recent[0] + CODE_WINDOW_SECS - now).max(1) as u64;
        return Err(AppError::TooManyRequests {
            code: ErrorCode::RateLimited,
            message: format!(
                "at most {CODES_PER_WINDOW} codes per 10 minutes for one address; retry in {retry} s"
            ),
            retry_after_secs: Some(retry),
        });
    }
    Ok(())
}

/// Lifetime of codes, for messages.
pub fn code_ttl(state: &Context) -> Duration {
    state.config.auth.code_ttl.0
}
