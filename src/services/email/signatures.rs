//! Signatures: Switchboard's own (not on the mail server), name and text sealed.

use crate::crypto::{Aad, DataKey};
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::Context;
use crate::store::email::signatures::{self as store, SignatureRow};

use super::{now_ms, parse_id, user_key};

pub const MAX_NAME_CHARS: usize = 100;
pub const MAX_TEXT_CHARS: usize = 10_000;
pub const MAX_SIGNATURES: i64 = 50;

const T: &str = "email_signatures";

#[derive(Debug, Clone)]
pub struct Signature {
    pub id: String,
    pub name: String,
    pub text: String,
    pub is_default: bool,
}

fn open(dek: &DataKey, r: SignatureRow) -> Signature {
    Signature {
        name: dek
            .open_string(&r.name_enc, &Aad::new(T, "name", &r.id))
            .unwrap_or_default(),
        text: dek
            .open_string(&r.text_enc, &Aad::new(T, "text", &r.id))
            .unwrap_or_default(),
        id: r.id,
        is_default: r.is_default,
    }
}

fn validate(name: Option<&str>, text: Option<&str>) -> AppResult<(Option<String>, Option<String>)> {
    let name = match name {
        None => None,
        Some(n) => {
            let n = n.trim();
            if n.is_empty() || n.chars().count() > MAX_NAME_CHARS || n.chars().any(char::is_control)
            {
                return Err(AppError::invalid(
                    "name",
                    format!("must be 1 to {MAX_NAME_CHARS} characters without control characters"),
                ));
            }
            Some(n.to_owned())
        }
    };
    let text = match text {
        None => None,
        Some(t) => {
            if t.chars().count() > MAX_TEXT_CHARS {
                return Err(AppError::invalid(
                    "text",
                    format!("must be at most {MAX_TEXT_CHARS} characters"),
                ));
            }
            Some(t.to_owned())
        }
    };
    Ok((name, text))
}

pub async fn list(state: &Context, user_id: &str) -> AppResult<Vec<Signature>> {
    let dek = user_key(state, user_id).await?;
    let uid = user_id.to_owned();
    let rows = state
        .store
        .run(move |c| Ok::<_, AppError>(store::list(c, &uid)?))
        .await?;
    Ok(rows.into_iter().map(|r| open(&dek, r)).collect())
}

pub async fn get(state: &Context, user_id: &str, id: &str) -> AppResult<Signature> {
    let id = parse_id("signature", id)?;
    let dek = user_key(state, user_id).await?;
    let uid = user_id.to_owned();
    let row = state
        .store
        .run(move |c| store::find(c, &uid, &id)?.ok_or_else(|| AppError::not_found("signature")))
        .await?;
    Ok(open(&dek, row))
}

pub async fn create(
    state: &Context,
    user_id: &str,
    name: &str,
    text: &str,
    is_default: bool,
) -> AppResult<Signature> {
    let (name, text) = validate(Some(name), Some(text))?;
    let dek = user_key(state, user_id).await?;
    let id = uuid::Uuid::new_v4().to_string();
    let row = SignatureRow {
        name_enc: dek.seal_str(
            name.as_deref().unwrap_or_default(),
            &Aad::new(T, "name", &id),
        ),
        text_enc: dek.seal_str(
            text.as_deref().unwrap_or_default(),
            &Aad::new(T, "text", &id),
        ),
        id,
        user_id: user_id.to_owned(),
        is_default,
        created_at: now_ms(),
    };
    let saved = row.clone();
    state
        .store
        .run(move |c| {
            let tx = c.transaction()?;
            if store::count(&tx, &saved.user_id)? >= MAX_SIGNATURES {
                return Err(AppError::bad_request(
                    ErrorCode::TooManySignatures,
                    format!("at most {MAX_SIGNATURES} signatures"),
                ));
            }
            store::save(&tx, &saved)?;
            tx.commit()?;
            Ok(())
        })
        .await?;
    Ok(open(&dek, row))
}

pub async fn update(
    state: &Context,
    user_id: &str,
    id: &str,
    name: Option<&str>,
    text: Option<&str>,
    is_default: Option<bool>,
) -> AppResult<Signature> {
    let id = parse_id("signature", id)?;
    let (name, text) = validate(name, text)?;
    let dek = user_key(state, user_id).await?;
    let (uid, d) = (user_id.to_owned(), dek.clone());
    let row = state
        .store
        .run(move |c| {
            let tx = c.transaction()?;
            let mut row =
                store::find(&tx, &uid, &id)?.ok_or_else(|| AppError::not_found("signature"))?;
            if let Some(n) = name {
                row.name_enc = d.seal_str(&n, &Aad::new(T, "name", &row.id));
            }
            if let Some(t) = text {
                row.text_enc = d.seal_str(&t, &Aad::new(T, "text", &row.id));
            }
            if let Some(def) = is_default {
                row.is_default = def;
            }
            store::save(&tx, &row)?;
            tx.commit()?;
            Ok::<_, AppError>(row)
        })
        .await?;
    Ok(open(&dek, row))
}

pub async fn delete(state: &Context, user_id: &str, id: &str) -> AppResult<String> {
    let id = parse_id("signature", id)?;
    let _ = user_key(state, user_id).await?;
    let (uid, sid) = (user_id.to_owned(), id.clone());
    let n = state
        .store
        .run(move |c| Ok::<_, AppError>(store::delete(c, &uid, &sid)?))
        .await?;
    if n == 0 {
        return Err(AppError::not_found("signature"));
    }
    Ok(id)
}
