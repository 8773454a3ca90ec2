//! The query of a thread list (`GET /api/email/threads`): `limit`, `cursor`, `label` and
//! `q`, checked, and the cursor's form (the last thread's time and id, base64url).

use base64::Engine;

use crate::error::{AppError, AppResult};

pub(super) fn encode_cursor(at: i64, id: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("{at}|{id}"))
}

fn decode_cursor(c: &str) -> AppResult<(i64, String)> {
    let bad = || AppError::invalid("cursor", "is not a cursor this server issued");
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(c.trim())
        .map_err(|_| bad())?;
    let s = String::from_utf8(raw).map_err(|_| bad())?;
    let (at, id) = s.split_once('|').ok_or_else(bad)?;
    Ok((at.parse().map_err(|_| bad())?, id.to_owned()))
}

pub fn parse_limit(limit: Option<&str>) -> AppResult<i64> {
    match limit.map(str::trim) {
        None | Some("") => Ok(50),
        Some(l) => l
            .parse::<i64>()
            .ok()
            .filter(|n| (1..=100).contains(n))
            .ok_or_else(|| AppError::invalid("limit", "must be 1 to 100")),
    }
}

/// A thread list request, checked.
pub(super) struct Query {
    pub limit: i64,
    pub after: Option<(i64, String)>,
    pub label: Option<String>,
    pub q: Option<String>,
}

/// 400 naming `limit`, `cursor`, `label` or `q` when one is malformed or too long.
pub(super) fn check_query(
    label: Option<&str>,
    q: Option<&str>,
    cursor: Option<&str>,
    limit: Option<&str>,
) -> AppResult<Query> {
    let limit = parse_limit(limit)?;
    let after = match cursor.map(str::trim) {
        None | Some("") => None,
        Some(c) => Some(decode_cursor(c)?),
    };
    let label = label
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned);
    if label.as_ref().is_some_and(|l| l.len() > 1000) {
        return Err(AppError::invalid("label", "is too long"));
    }
    let q = q
        .map(str::trim)
        .filter(|q| !q.is_empty())
        .map(str::to_owned);
    if q.as_ref().is_some_and(|q| q.chars().count() > 200) {
        return Err(AppError::invalid("q", "must be at most 200 characters"));
    }
    Ok(Query {
        limit,
        after,
        label,
        q,
    })
}
