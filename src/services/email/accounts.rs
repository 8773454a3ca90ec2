//! Connecting mailboxes: a real IMAP login and SMTP EHLO (+AUTH) before anything is
//! stored; credentials sealed under the user's data key.

use crate::clients::mail::imap::{self, Endpoint, Security};
use crate::clients::mail::{dial, smtp};
use crate::crypto::{Aad, DataKey};
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::upstream::{imap_connect_error, smtp_connect_error};
use crate::services::Context;
use crate::store::email::{self as store, AccountRow};

use super::{now_ms, parse_id, seal_json, user_key, Settings, T_ACCOUNTS};

/// Mailboxes one user may connect.
pub const MAX_ACCOUNTS: usize = 20;

#[derive(Debug, Clone)]
pub struct EndpointInput {
    pub host: String,
    pub port: u16,
    pub security: String,
    pub username: Option<String>,
    pub password: Option<String>,
}

#[derive(Debug, Clone)]
pub struct AccountInput {
    pub email: String,
    pub display_name: Option<String>,
    pub imap: EndpointInput,
    pub smtp: EndpointInput,
}

#[derive(Debug, Clone)]
pub struct Account {
    pub id: String,
    pub email: String,
    pub display_name: Option<String>,
    pub status: String,
    pub last_sync_at: Option<i64>,
    pub error: Option<String>,
    /// `(fetched, to fetch)` while a mailbox is being synced.
    pub progress: Option<(u64, u64)>,
    /// `(bytes of mail cached for the user, [email] quota)`.
    pub quota: (u64, u64),
}

fn open(state: &Context, dek: &DataKey, a: AccountRow, used: u64) -> Account {
    let email = dek
        .open_string(&a.email_enc, &Aad::new(T_ACCOUNTS, "email", &a.id))
        .unwrap_or_default();
    let display_name = a.display_name_enc.as_ref().and_then(|d| {
        dek.open_string(d, &Aad::new(T_ACCOUNTS, "display_name", &a.id))
            .ok()
    });
    let error = a
        .error_enc
        .as_ref()
        .and_then(|e| {
            dek.open_string(e, &Aad::new(T_ACCOUNTS, "error", &a.id))
                .ok()
        })
        .or(a.error);
    Account {
        progress: state.email.progress(&a.id),
        id: a.id,
        email,
        display_name,
        status: a.status,
        last_sync_at: a.last_sync_at,
        error,
        quota: (used, state.config.email.quota_bytes()),
    }
}

async fn used_bytes(state: &Context, user_id: &str) -> AppResult<u64> {
    let uid = user_id.to_owned();
    state
        .store
        .run(move |c| Ok::<_, AppError>(crate::store::email::messages::bytes_of_user(c, &uid)?))
        .await
}

fn too_many_accounts() -> AppError {
    AppError::bad_request(
        ErrorCode::TooManyMailAccounts,
        format!("at most {MAX_ACCOUNTS} mailboxes can be connected"),
    )
}

fn text(field: &str, value: &str, max: usize) -> AppResult<String> {
    let v = value.trim();
    if v.is_empty() || v.chars().count() > max || v.chars().any(char::is_control) {
        return Err(AppError::invalid(
            field,
            format!("must be 1 to {max} characters without control characters"),
        ));
    }
    Ok(v.to_owned())
}

fn endpoint(prefix: &str, e: &EndpointInput, need_login: bool) -> AppResult<Endpoint> {
    let host = text(&format!("{prefix}.host"), &e.host, 253)?;
    if host.contains(char::is_whitespace) {
        return Err(AppError::invalid(
            &format!("{prefix}.host"),
            "must be a host name",
        ));
    }
    if e.port == 0 {
        return Err(AppError::invalid(
            &format!("{prefix}.port"),
            "must be 1 to 65535",
        ));
    }
    let security = Security::parse(e.security.trim()).ok_or_else(|| {
        AppError::invalid(
            &format!("{prefix}.security"),
            "must be tls, starttls or none",
        )
    })?;
    let username = match e.username.as_deref() {
        Some(u) if !u.trim().is_empty() => text(&format!("{prefix}.username"), u, 320)?,
        _ if need_login => {
            return Err(AppError::invalid(
                &format!("{prefix}.username"),
                "is required",
            ))
        }
        _ => String::new(),
    };
    let password = e.password.clone().unwrap_or_default();
    if password.len() > 1024 || password.contains(['\r', '\n', '\0']) {
        return Err(AppError::invalid(
            &format!("{prefix}.password"),
            "must be at most 1024 bytes on one line",
        ));
    }
    if need_login && password.is_empty() {
        return Err(AppError::invalid(
            &format!("{prefix}.password"),
            "is required",
        ));
    }
    Ok(Endpoint {
        host,
        port: e.port,
        security,
        username,
        password,
    })
}

pub async fn connect(state: &Context, user_id: &str, input: AccountInput) -> AppResult<Account> {
    let email = input.email.trim().to_owned();
    if email.parse::<lettre::Address>().is_err() || email.len() > 320 {
        return Err(AppError::invalid("email", "must be an e-mail address"));
    }
    let display_name = match input.display_name.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(d) => Some(text("displayName", d, 255)?),
    };
    let settings = Settings {
        imap: endpoint("imap", &input.imap, true)?,
        smtp: endpoint("smtp", &input.smtp, false)?,
    };
    let dek = user_key(state, user_id).await?;
    let uid = user_id.to_owned();
    let count = state
        .store
        .run(move |c| Ok::<_, AppError>(store::accounts_of(c, &uid)?.len()))
        .await?;
    if count >= MAX_ACCOUNTS {
        return Err(too_many_accounts());
    }
    let cfg = &state.config.email;
    for (field, ep) in [("imap", &settings.imap), ("smtp", &settings.smtp)] {
        cleartext_check(field, ep, cfg).await?;
    }
    let session = imap::connect(&settings.imap, cfg, user_id)
        .await
        .map_err(imap_connect_error)?;
    imap::logout(session).await;
    smtp::check(&settings.smtp, cfg)
        .await
        .map_err(smtp_connect_error)?;
    let id = uuid::Uuid::new_v4().to_string();
    let row = AccountRow {
        email_enc: dek.seal_str(&email, &Aad::new(T_ACCOUNTS, "email", &id)),
        display_name_enc: display_name
            .as_ref()
            .map(|d| dek.seal_str(d, &Aad::new(T_ACCOUNTS, "display_name", &id))),
        settings_enc: seal_json(&dek, &settings, T_ACCOUNTS, "settings", &id),
        id,
        user_id: user_id.to_owned(),
        status: "syncing".into(),
        error: None,
        error_enc: None,
        last_sync_at: None,
        created_at: now_ms(),
    };
    let saved = row.clone();
    state
        .store
        .run(move |c| {
            // Counted and inserted in one write transaction: connections made in parallel
            // cannot pass the cap together.
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            if store::accounts_of(&tx, &saved.user_id)?.len() >= MAX_ACCOUNTS {
                return Err(too_many_accounts());
            }
            store::insert_account(&tx, &saved)?;
            tx.commit()?;
            Ok::<_, AppError>(())
        })
        .await?;
    state.email.wakeup.notify_one();
    let used = used_bytes(state, user_id).await?;
    Ok(open(state, &dek, row, used))
}

/// `security: "none"` only for a host that resolves to allowed private addresses: 400
/// naming `<field>.security` otherwise (other resolution failures are left to the
/// connection, which reports them).
async fn cleartext_check(
    field: &str,
    ep: &Endpoint,
    cfg: &crate::config::EmailConfig,
) -> AppResult<()> {
    if ep.security != Security::None {
        return Ok(());
    }
    match dial::resolve_for(&ep.host, ep.port, &cfg.allow_private_hosts, true).await {
        Err(e @ dial::DialError::Cleartext { .. }) => Err(AppError::invalid(
            &format!("{field}.security"),
            e.to_string(),
        )),
        _ => Ok(()),
    }
}

pub async fn list(state: &Context, user_id: &str) -> AppResult<Vec<Account>> {
    let dek = user_key(state, user_id).await?;
    let uid = user_id.to_owned();
    let rows = state
        .store
        .run(move |c| Ok::<_, AppError>(store::accounts_of(c, &uid)?))
        .await?;
    let used = used_bytes(state, user_id).await?;
    Ok(rows
        .into_iter()
        .map(|a| open(state, &dek, a, used))
        .collect())
}

/// Removes the account and (by cascade) its cached mailboxes, threads and messages.
pub async fn remove(state: &Context, user_id: &str, id: &str) -> AppResult<String> {
    let id = parse_id("mail account", id)?;
    let uid = user_id.to_owned();
    let aid = id.clone();
    let n = state
        .store
        .run(move |c| {
            let n = store::delete_account(c, &uid, &aid)?;
            // The AI-search vectors of its mails go with them.
            crate::store::search_index::drop_orphan_vectors(c, &uid)?;
            Ok::<_, AppError>(n)
        })
        .await?;
    if n == 0 {
        return Err(AppError::not_found("mail account"));
    }
    // The sync task holds its own handle: wake it (it sees the account gone and ends),
    // then drop what the process kept for the account.
    state.email.poke(&id);
    state.email.forget(&id);
    Ok(id)
}

/// The account of the user to act with: `account_id` when given (404 when not theirs),
/// else their first.
pub async fn pick(
    state: &Context,
    user_id: &str,
    account_id: Option<&str>,
) -> AppResult<AccountRow> {
    let uid = user_id.to_owned();
    let wanted = match account_id {
        Some(a) => Some(parse_id("mail account", a)?),
        None => None,
    };
    state
        .store
        .run(move |c| {
            let found = match wanted {
                Some(a) => store::find_account(c, &uid, &a)?,
                None => store::accounts_of(c, &uid)?.into_iter().next(),
            };
            found.ok_or_else(|| AppError::not_found("mail account"))
        })
        .await
}

/// Records the outcome of a round on the account (`ok` with the time, or the failure);
/// the failure (the server's words) is sealed under the user's data key.
pub async fn set_status(
    state: &Context,
    dek: &DataKey,
    account_id: &str,
    status: &'static str,
    error: Option<String>,
) {
    let id = account_id.to_owned();
    let synced = (status == "ok").then(now_ms);
    let sealed = error.map(|e| dek.seal_str(&e, &Aad::new(T_ACCOUNTS, "error", &id)));
    let _ = state
        .store
        .run(move |c| {
            Ok::<_, AppError>(store::set_status(
                c,
                &id,
                status,
                sealed.as_deref(),
                synced,
            )?)
        })
        .await;
}
