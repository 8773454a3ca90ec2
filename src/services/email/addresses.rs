//! Addresses for completion in the compose form (`GET /api/email/addresses?q=`): every
//! From, To and Cc of the user's cached mail (one use each) and every recipient of what
//! the user sends (two uses each: people one writes to rank above those who write).
//! Address and name are sealed; one row per address by keyed hash of its lowercased form.

use lettre::message::Mailbox;
use rusqlite::Connection;

use super::AccountCtx;
use super::{now_ms, ref_hash, user_key, Person};
use crate::crypto::{Aad, DataKey};
use crate::error::{AppError, AppResult};
use crate::services::Context;
use crate::store::email::addresses::{self as store, AddressRow};

pub const T: &str = "email_addresses";
/// Addresses kept per user; past it known ones are still counted, new ones not added.
pub const MAX_PER_USER: i64 = 5000;
pub const MAX_LIMIT: i64 = 100;
const SENT_WEIGHT: i64 = 2;

pub struct Address {
    pub name: Option<String>,
    pub address: String,
    pub last_used_at: i64,
}

/// Counts `people` (in the caller's transaction).
pub fn remember_in(
    c: &Connection,
    dek: &DataKey,
    user_id: &str,
    people: &[Person],
    weight: i64,
    at: i64,
) -> AppResult<()> {
    let mut room: Option<i64> = None;
    for p in people {
        let address = p.email.trim();
        if address.is_empty() || address.len() > 320 || !address.contains('@') {
            continue;
        }
        let hash = ref_hash(dek, "addr", address);
        let name = p.name.as_deref().map(str::trim).filter(|n| !n.is_empty());
        match store::find(c, user_id, &hash)? {
            Some((id, has_name)) => {
                let name_enc = match (has_name, name) {
                    (false, Some(n)) => Some(dek.seal_str(n, &Aad::new(T, "name", &id))),
                    _ => None,
                };
                store::bump(c, &id, weight, at, name_enc.as_deref())?;
            }
            None => {
                let left = match room {
                    Some(r) => r,
                    None => MAX_PER_USER - store::count(c, user_id)?,
                };
                if left <= 0 {
                    room = Some(0);
                    continue;
                }
                room = Some(left - 1);
                let id = uuid::Uuid::new_v4().to_string();
                let row = AddressRow {
                    address_enc: dek.seal_str(address, &Aad::new(T, "address", &id)),
                    name_enc: name.map(|n| dek.seal_str(n, &Aad::new(T, "name", &id))),
                    id,
                    uses: weight,
                    last_used_at: at,
                };
                store::insert(c, user_id, &hash, &row)?;
            }
        }
    }
    Ok(())
}

/// Counts the recipients of a sent message.
pub async fn remember_sent(state: &Context, ctx: &AccountCtx, to: &[Mailbox]) -> AppResult<()> {
    let people: Vec<Person> = to
        .iter()
        .map(|m| Person {
            name: m.name.clone(),
            email: m.email.to_string(),
        })
        .collect();
    let (dek, uid) = (ctx.dek.clone(), ctx.user_id.clone());
    state
        .db(move |c| {
            let tx = c.transaction()?;
            remember_in(&tx, &dek, &uid, &people, SENT_WEIGHT, now_ms())?;
            tx.commit()?;
            Ok(())
        })
        .await
}

/// The user's addresses whose address or name contains `q` (any case), most used first;
/// `limit` 1 to 100 (default 10).
pub async fn search(
    state: &Context,
    user_id: &str,
    q: Option<&str>,
    limit: Option<&str>,
) -> AppResult<Vec<Address>> {
    let limit = match limit {
        None => 10,
        Some(l) => match l.trim().parse::<i64>() {
            Ok(n) if (1..=MAX_LIMIT).contains(&n) => n,
            _ => {
                return Err(AppError::invalid(
                    "limit",
                    format!("must be a whole number from 1 to {MAX_LIMIT}"),
                ))
            }
        },
    };
    let q = q.unwrap_or_default().trim().to_lowercase();
    if q.chars().count() > 200 {
        return Err(AppError::invalid("q", "must be at most 200 characters"));
    }
    let dek = user_key(state, user_id).await?;
    // The user's own mailboxes are in every mail: never a completion.
    let own: Vec<String> = super::accounts::list(state, user_id)
        .await?
        .into_iter()
        .map(|a| a.email.to_lowercase())
        .collect();
    let uid = user_id.to_owned();
    let rows = state
        .db(move |c| Ok(store::ranked(c, &uid, MAX_PER_USER)?))
        .await?;
    let mut out = Vec::new();
    for r in rows {
        let Ok(address) = dek.open_string(&r.address_enc, &Aad::new(T, "address", &r.id)) else {
            continue;
        };
        let name = r
            .name_enc
            .as_ref()
            .and_then(|n| dek.open_string(n, &Aad::new(T, "name", &r.id)).ok());
        if own.contains(&address.to_lowercase()) {
            continue;
        }
        let hit = q.is_empty()
            || address.to_lowercase().contains(&q)
            || name.as_ref().is_some_and(|n| n.to_lowercase().contains(&q));
        if hit {
            out.push(Address {
                name,
                address,
                last_used_at: r.last_used_at,
            });
            if out.len() as i64 >= limit {
                break;
            }
        }
    }
    Ok(out)
}
