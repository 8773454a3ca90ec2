//! The files of a forwarded message (`includeAttachments`), taken from the IMAP server part
//! by part ([`super::file_parts`]): each file part is fetched alone and decoded as the
//! pieces arrive, straight into the sealed spool ([`super::spool`], as an upload would be);
//! the file then streams from there into the outgoing message like an upload, and the
//! spool files go when the send is over ([`TempFiles`]). So a forward never downloads the
//! message's text or other parts, and holds one fetched piece at a time.
//!
//! The cached message lists its files as mail-parser found them; the parts picked from the
//! structure follow the same rules and are checked against that list (count and types).
//! A message whose structure reads differently (a malformed part the parser repaired) is
//! taken whole instead, as before parts were fetched alone (bounded by `[email]
//! max_message_mb`), so the files are the same either way.

use super::actions;
use super::file_parts::{self, Fetched, Structure};
use super::mime::{Content, File};
use super::spool::{SpoolWriter, TempFiles};
use super::threads::Message as Cached;
use super::AttachmentMeta;
use crate::clients::mail::imap::{self, Part, PartKind};
use crate::crypto::DataKey;
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::Context;

/// The files of `o`, in the order the cached message lists them, with its names and types;
/// the spool files made for them are kept in `temp` (removed when it is dropped).
pub(super) async fn original_files(
    state: &Context,
    o: &Cached,
    temp: &mut TempFiles,
) -> AppResult<Vec<File>> {
    if o.body.attachments.is_empty() {
        return Ok(Vec::new());
    }
    actions::refuse_truncated(state, o)?;
    let (ctx, mut s, uid) = file_parts::open_at(state, o).await?.ok_or_else(gone)?;
    let fetched = by_part(state, &mut s, uid, &o.body.attachments, &ctx.dek, temp).await;
    imap::logout(s).await;
    match fetched? {
        Some(files) => Ok(files),
        None => {
            tracing::info!(
                "a forwarded message's structure differs from its cached files; fetched whole"
            );
            whole(state, o).await
        }
    }
}

/// 409: the original (or a part of it) is no longer on the server.
fn gone() -> AppError {
    AppError::Conflict {
        code: ErrorCode::ForwardedMessageGone,
        message: "forward: the message is no longer on the mail server (moved or deleted \
                  meanwhile); nothing was sent"
            .into(),
    }
}

fn too_large() -> AppError {
    AppError::TooLarge {
        message: "the forwarded message's files add up to more than [email] max_attachments_mb"
            .into(),
    }
}

/// The files fetched part by part into the spool; `None` when the structure does not
/// match the cached list or a part does not decode.
async fn by_part(
    state: &Context,
    s: &mut imap::Session,
    uid: u32,
    metas: &[AttachmentMeta],
    dek: &DataKey,
    temp: &mut TempFiles,
) -> AppResult<Option<Vec<File>>> {
    let parts = match file_parts::file_parts(s, uid, metas).await? {
        Structure::Gone => return Err(gone()),
        Structure::Differs => return Ok(None),
        Structure::Files(parts) => parts,
    };
    let dir = super::uploads::spool_dir(state);
    let cap = state.config.email.max_attachments_bytes();
    let mut total = 0u64;
    let mut files = Vec::with_capacity(parts.len());
    for (i, (part, meta)) in parts.iter().zip(metas).enumerate() {
        let id = format!("fwd-{}", uuid::Uuid::new_v4());
        let mut w = SpoolWriter::create(&dir, &id, dek).map_err(AppError::internal)?;
        match file_parts::fetch_decoded(s, uid, part, cap.saturating_sub(total), &mut w).await? {
            Fetched::Done => {}
            Fetched::Gone => return Err(gone()),
            Fetched::Undecodable => return Ok(None),
            Fetched::TooLarge => return Err(too_large()),
        }
        let spooled = w.finish().map_err(AppError::internal)?;
        temp.keep(&spooled);
        total += spooled.size;
        files.push(File {
            name: meta
                .filename
                .clone()
                .unwrap_or_else(|| format!("attachment-{i}")),
            mimetype: mimetype(part, meta),
            content: Content::Spooled(spooled),
        });
    }
    Ok(Some(files))
}

/// The cached type, with the charset of a text part (its bytes are sent as they are).
fn mimetype(part: &Part, meta: &AttachmentMeta) -> String {
    match (part.kind, part.param("charset")) {
        (PartKind::Text, Some(cs)) if cs.chars().all(|c| c.is_ascii_graphic() && c != ';') => {
            format!("{}; charset={cs}", meta.content_type)
        }
        _ => meta.content_type.clone(),
    }
}

/// As before parts were fetched alone: the whole message, its files by mail-parser.
async fn whole(state: &Context, o: &Cached) -> AppResult<Vec<File>> {
    let raw = actions::fetch_raw(state, o).await?;
    Ok(super::parse::attachments(&raw)
        .into_iter()
        .enumerate()
        .map(|(i, (ctype, name, bytes))| File {
            name: name.unwrap_or_else(|| format!("attachment-{i}")),
            mimetype: ctype,
            content: Content::Bytes(bytes),
        })
        .collect())
}
