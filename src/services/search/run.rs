//! One search: validate, look up candidates, decrypt and verify, render the page.

use crate::services::users::load_row;
use rusqlite::Connection;

use super::query::{snippet, Highlight, Query};
use super::terms::SearchKey;
use super::{open_item, Cursor, KIND_EMAIL};
use crate::crypto::{self, DataKey};
use crate::error::{AppError, AppResult};
use crate::services::conversations;
pub use crate::services::params::{parse_limit, parse_time};
use crate::services::public_key::validate_public_key;
use crate::services::senders::{Sender, Senders};
use crate::services::session::Principal;
use crate::services::users;
use crate::services::Context;
use crate::store::search_index::{self, Candidate, Filters};
use crate::store::user_keys;

pub const DEFAULT_LIMIT: i64 = 20;
pub const MAX_LIMIT: i64 = 100;
pub use crate::services::indexing::MAX_SCAN;
const PLATFORMS: [&str; 4] = ["whatsapp", "telegram", "discord", "matrix"];

/// The query of `GET /api/search`, as received.
#[derive(Debug, Clone, Default)]
pub struct SearchParams {
    pub q: Option<String>,
    pub room_id: Option<String>,
    pub platform: Option<String>,
    pub sender: Option<String>,
    pub after: Option<String>,
    pub before: Option<String>,
    pub cursor: Option<String>,
    pub limit: Option<i64>,
}

/// A snippet as text (personal tokens; native users without a registered key) or sealed
/// to the user's X25519 key (native sessions): `(ephemeralPubkey, nonce, ciphertext)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SnippetText {
    Plain(String),
    Sealed {
        ephemeral_pubkey: String,
        nonce: String,
        ciphertext: String,
    },
}

/// A message result's sender name and avatar route: as text where the snippet is text,
/// else sealed with it (the JSON `{"senderName", "senderAvatarUrl"}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SenderText {
    Plain(Sender),
    Sealed {
        ephemeral_pubkey: String,
        nonce: String,
        ciphertext: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    pub kind: &'static str,
    pub id: String,
    /// Room id of a message; thread id of an e-mail.
    pub scope: String,
    pub sender_id: Option<String>,
    /// Of a message: who sent it, named as in the history ([`Senders`]); `None` for mail.
    pub sender: Option<SenderText>,
    pub timestamp: i64,
    pub snippet: SnippetText,
    pub highlights: Vec<Highlight>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SearchPage {
    pub results: Vec<SearchHit>,
    pub next_cursor: Option<String>,
}

/// A verified match before rendering.
#[derive(Debug, Clone)]
pub struct Verified {
    pub candidate: Candidate,
    pub text: String,
    pub hits: Vec<(usize, usize)>,
    /// A message's sender ([`name_senders`]); `None` for mail.
    pub sender: Option<Sender>,
}

/// Names the senders of the message matches that have none yet, from the user's own
/// stored names exactly as the history does ([`Senders`]): the name sealed into the
/// message row when it was stored, else the member's stored profile of that room, else
/// the localpart. Everything read is the user's (rows and profiles are keyed by user and
/// sealed under the user's data key), so no other user's name for a member can show.
pub fn name_senders(
    c: &Connection,
    dek: &DataKey,
    user_id: &str,
    found: &mut [Verified],
) -> AppResult<()> {
    let mut senders = Senders::new(c, dek, user_id);
    for v in found
        .iter_mut()
        .filter(|v| v.sender.is_none() && v.candidate.kind == super::KIND_MESSAGE)
    {
        if let Some(row) = search_index::message_by_id(c, user_id, &v.candidate.item_id)? {
            v.sender = Some(senders.of(&row)?);
        }
    }
    Ok(())
}

fn parse_text(field: &str, raw: Option<&str>, max: usize) -> AppResult<Option<String>> {
    let Some(v) = raw.map(str::trim) else {
        return Ok(None);
    };
    if v.is_empty() || v.chars().count() > max || v.chars().any(char::is_control) {
        return Err(AppError::invalid(
            field,
            format!("must be 1 to {max} characters without control characters"),
        ));
    }
    Ok(Some(v.to_owned()))
}

/// Validated query, filters, position and page size.
pub fn parse(p: &SearchParams) -> AppResult<(Query, Filters, Option<Cursor>, i64)> {
    let q =
        p.q.as_deref()
            .ok_or_else(|| AppError::invalid("q", "is required"))?;
    let query = Query::parse(q)?;
    let limit = parse_limit(p.limit, DEFAULT_LIMIT, MAX_LIMIT)?;
    let platform = parse_text("platform", p.platform.as_deref(), 16)?;
    if let Some(pl) = &platform {
        if !PLATFORMS.contains(&pl.as_str()) {
            return Err(AppError::invalid(
                "platform",
                "must be one of whatsapp, telegram, discord, matrix",
            ));
        }
    }
    let filters = Filters {
        scope: parse_text("roomId", p.room_id.as_deref(), 255)?,
        sender: parse_text("sender", p.sender.as_deref(), 255)?,
        platform,
        after: parse_time("after", p.after.as_deref())?,
        before: parse_time("before", p.before.as_deref())?,
    };
    let cursor = p.cursor.as_deref().map(Cursor::decode).transpose()?;
    Ok((query, filters, cursor, limit))
}

/// Candidates from the blind index, decrypted and checked, newest first: at most
/// `limit` matches with their senders named, and the position to continue from (`None`
/// at the end).
pub fn verified_matches(
    c: &Connection,
    user_id: &str,
    dek: &DataKey,
    query: &Query,
    filters: &Filters,
    from: Option<(i64, i64)>,
    limit: usize,
) -> AppResult<(Vec<Verified>, Option<Cursor>)> {
    let (mut found, next) = checked_matches(c, user_id, dek, query, filters, from, limit)?;
    name_senders(c, dek, user_id, &mut found)?;
    Ok((found, next))
}

/// [`verified_matches`] before the senders are named.
fn checked_matches(
    c: &Connection,
    user_id: &str,
    dek: &DataKey,
    query: &Query,
    filters: &Filters,
    from: Option<(i64, i64)>,
    limit: usize,
) -> AppResult<(Vec<Verified>, Option<Cursor>)> {
    let key = SearchKey::of(dek);
    let tag = crate::services::messages::cache::KeyTag::of(dek);
    let terms: Vec<_> = query
        .lookup_words()
        .into_iter()
        .map(|w| key.query_term(w))
        .collect();
    let batch = (limit as i64 * 2).max(50);
    let mut from = from;
    let mut scanned = 0usize;
    let mut found = Vec::new();
    loop {
        let cands = search_index::candidates(c, user_id, &terms, filters, from, batch)?;
        let exhausted = (cands.len() as i64) < batch;
        for cand in cands {
            scanned += 1;
            let here = (cand.ts, cand.doc);
            if let Some(text) = open_item(c, dek, tag, user_id, &cand)? {
                if let Some(hits) = query.matches(&text) {
                    found.push(Verified {
                        candidate: cand,
                        text,
                        hits,
                        sender: None,
                    });
                    if found.len() == limit {
                        return Ok((found, Some(Cursor::at(here.0, here.1))));
                    }
                }
            }
            from = Some(here);
            if scanned >= MAX_SCAN {
                return Ok((found, from.map(|(t, d)| Cursor::at(t, d))));
            }
        }
        if exhausted {
            return Ok((found, None));
        }
    }
}

/// `GET /api/search` for `principal`.
pub async fn search(
    state: &Context,
    principal: &Principal,
    params: SearchParams,
) -> AppResult<SearchPage> {
    let (query, filters, cursor, limit) = parse(&params)?;
    let master = state.master.clone();
    let uid = principal.user_id().to_owned();
    let native = !principal.is_api_token();
    state
        .store
        .run(move |c| {
            let user = load_row(c, &uid)?;
            conversations::require_readable(&user)?;
            let dek = users::data_key(&master, &user)?;
            // One more than the page: whether another page exists without a second query.
            let (mut found, mut next) = verified_matches(
                c,
                &uid,
                &dek,
                &query,
                &filters,
                cursor.map(Cursor::position),
                limit as usize + 1,
            )?;
            if found.len() > limit as usize {
                found.truncate(limit as usize);
                next = found
                    .last()
                    .map(|v| Cursor::at(v.candidate.ts, v.candidate.doc));
            }
            let recipient = if native {
                user_keys::find(c, &uid)?
                    .map(|k| validate_public_key(&k.public_key))
                    .transpose()
                    .map_err(|_| AppError::internal("stored public key is malformed"))?
            } else {
                None
            };
            render(found, recipient, next)
        })
        .await
}

/// Renders verified matches: snippets as text, or sealed under one ephemeral key per page
/// to `recipient`, as history pages are (`services::messages::sealed`).
pub fn render(
    found: Vec<Verified>,
    recipient: Option<[u8; 32]>,
    next: Option<Cursor>,
) -> AppResult<SearchPage> {
    let sealer = match recipient {
        Some(r) if !found.is_empty() => {
            Some(crypto::Sealer::to(&r).map_err(|_| AppError::internal("cannot seal to the key"))?)
        }
        _ => None,
    };
    let results = found
        .into_iter()
        .map(|v| {
            let (text, highlights) = snippet(&v.text, &v.hits);
            let kind = if v.candidate.kind == KIND_EMAIL {
                KIND_EMAIL
            } else {
                super::KIND_MESSAGE
            };
            SearchHit {
                kind,
                id: v.candidate.item_id,
                scope: v.candidate.scope,
                sender_id: v.candidate.sender,
                sender: v.sender.map(|s| sender_text(sealer.as_ref(), s)),
                timestamp: v.candidate.ts,
                snippet: snippet_text(sealer.as_ref(), text),
                highlights,
            }
        })
        .collect();
    Ok(SearchPage {
        results,
        next_cursor: next.map(Cursor::encode),
    })
}

/// A snippet as text, or sealed with the page's sealer.
fn snippet_text(sealer: Option<&crypto::Sealer>, text: String) -> SnippetText {
    let Some(s) = sealer else {
        return SnippetText::Plain(text);
    };
    let (ephemeral_pubkey, nonce, ciphertext) = s.seal(text.as_bytes()).to_base64();
    SnippetText::Sealed {
        ephemeral_pubkey,
        nonce,
        ciphertext,
    }
}

/// A message's sender as text, or sealed with the page's sealer as the JSON
/// `{"senderName", "senderAvatarUrl"}` (the keys of message objects).
fn sender_text(sealer: Option<&crypto::Sealer>, sender: Sender) -> SenderText {
    let Some(s) = sealer else {
        return SenderText::Plain(sender);
    };
    let json = serde_json::json!({
        "senderName": sender.name,
        "senderAvatarUrl": sender.avatar_url,
    });
    let (ephemeral_pubkey, nonce, ciphertext) = s.seal(json.to_string().as_bytes()).to_base64();
    SenderText::Sealed {
        ephemeral_pubkey,
        nonce,
        ciphertext,
    }
}
