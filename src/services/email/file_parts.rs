//! A message's files on the IMAP server, one part at a time: the parts of its
//! `BODYSTRUCTURE` that are the files mail-parser listed when the message was cached
//! (checked against the cached list), each fetched alone and decoded as it arrives
//! ([`super::part_decode`]): for a download, or into the sealed spool for a forward.
//! Neither downloads the message's text or its other parts.

use super::actions::{self, account_ctx, open_session};
use super::mailboxes;
pub use super::part_decode::{attachment_parts, fetch_decoded, Fetched, Sink, CHUNK};
use super::sync::AccountCtx;
use super::threads::Message as Cached;
use super::AttachmentMeta;
use crate::clients::mail::imap::{self, Part};
use crate::error::{AppError, AppResult};
use crate::services::upstream::imap_error;
use crate::services::Context;

/// A session on the message's mailbox, selected: `(session, uid)`; `None` when the cache
/// knows no place of it (any more).
pub async fn open_at(
    state: &Context,
    m: &Cached,
) -> AppResult<Option<(AccountCtx, imap::Session, u32)>> {
    let ctx = account_ctx(state, &m.account_id).await?;
    let (mid, key) = (m.id.clone(), ctx.dek.clone());
    let locations = state
        .db(move |c| mailboxes::locations(c, &key, &[mid]))
        .await?;
    let Some((_, mailbox, uid)) = locations.into_iter().next() else {
        return Ok(None);
    };
    let Ok(uid) = u32::try_from(uid) else {
        return Ok(None);
    };
    let (mut s, _) = open_session(state, &ctx).await?;
    if let Err(e) = imap::select(&mut s, &mailbox, false).await {
        imap::logout(s).await;
        return Err(imap_error(e));
    }
    Ok(Some((ctx, s, uid)))
}

/// What the server's structure of a message says about its files.
pub enum Structure {
    /// The server has no such message (any more).
    Gone,
    /// Its file parts do not read like the cached list (count or types): a malformed part
    /// the parser repaired; the whole message must be read instead.
    Differs,
    /// The file parts, in the order of the cached list.
    Files(Vec<Part>),
}

/// The file parts of message `uid` (selected), checked against the cached list `metas`.
pub async fn file_parts(
    s: &mut imap::Session,
    uid: u32,
    metas: &[AttachmentMeta],
) -> AppResult<Structure> {
    let Some(root) = imap::structure(s, uid).await.map_err(imap_error)? else {
        return Ok(Structure::Gone);
    };
    let parts: Vec<Part> = attachment_parts(&root).into_iter().cloned().collect();
    Ok(if matches_cached(&parts, metas) {
        Structure::Files(parts)
    } else {
        Structure::Differs
    })
}

/// Fetches attachment `index` of a message from the IMAP server (its part alone, see
/// [`one`]): `(content type, filename, bytes)`.
pub async fn attachment(
    state: &Context,
    user_id: &str,
    message_id: &str,
    index: u32,
) -> AppResult<(String, Option<String>, Vec<u8>)> {
    let (m, meta) = super::threads::attachment_meta(state, user_id, message_id, index).await?;
    actions::refuse_truncated(state, &m)?;
    if let Some(bytes) = one(state, &m, &meta).await? {
        return Ok((meta.content_type, meta.filename, bytes));
    }
    let raw = actions::fetch_raw(state, &m).await?;
    let (ctype, name, bytes) = super::parse::attachment(&raw, index as usize)
        .ok_or_else(|| AppError::not_found("attachment"))?;
    Ok((
        if ctype.is_empty() {
            meta.content_type
        } else {
            ctype
        },
        name,
        bytes,
    ))
}

/// One file of a cached message, for download: its part fetched alone and decoded (at most
/// `[email] max_message_mb`). `None` when it is to be read from the whole message instead:
/// the structure differs from the cached list, the part does not decode, or it came back
/// empty though the cache says it holds bytes (each is logged). 404 when the message is no
/// longer on the server.
pub async fn one(state: &Context, m: &Cached, meta: &AttachmentMeta) -> AppResult<Option<Vec<u8>>> {
    let Some((_, mut s, uid)) = open_at(state, m).await? else {
        return Err(AppError::not_found("message"));
    };
    let r = one_of(state, &mut s, uid, m, meta).await;
    imap::logout(s).await;
    r
}

async fn one_of(
    state: &Context,
    s: &mut imap::Session,
    uid: u32,
    m: &Cached,
    meta: &AttachmentMeta,
) -> AppResult<Option<Vec<u8>>> {
    let metas = &m.body.attachments;
    let parts = match file_parts(s, uid, metas).await? {
        Structure::Gone => return Err(AppError::not_found("message")),
        Structure::Differs => {
            tracing::info!("a message's structure differs from its cached files; fetched whole");
            return Ok(None);
        }
        Structure::Files(parts) => parts,
    };
    let at = metas.iter().position(|a| a.index == meta.index);
    let part = at
        .and_then(|i| parts.get(i))
        .ok_or_else(|| AppError::not_found("attachment"))?;
    let room = state.config.email.max_message_bytes();
    let mut bytes = Vec::new();
    match fetch_decoded(s, uid, part, room, &mut bytes).await? {
        Fetched::Done if bytes.is_empty() && meta.size > 0 => {
            tracing::info!(
                section = ?part.section,
                "an attachment's part came back empty; fetching the whole message once"
            );
            Ok(None)
        }
        Fetched::Done => Ok(Some(bytes)),
        Fetched::Gone => Err(AppError::not_found("message")),
        Fetched::Undecodable => {
            tracing::info!("an attachment's part does not decode; fetched whole");
            Ok(None)
        }
        Fetched::TooLarge => Err(actions::too_large_to_fetch(state)),
    }
}

fn matches_cached(parts: &[Part], metas: &[AttachmentMeta]) -> bool {
    parts.len() == metas.len()
        && parts
            .iter()
            .zip(metas)
            .all(|(p, m)| p.mimetype.eq_ignore_ascii_case(&m.content_type))
}
