//! Files uploaded for outgoing mail (`POST /api/email/attachments`). The bytes are
//! streamed to `<data_dir>/email-uploads/<uploadId>` as they arrive, never held whole,
//! in the sealed chunks of [`super::spool`] (the row keeps the size the reader checks).
//! Name and type are sealed in the row. Sending reads the file back the same way, one
//! chunk at a time, as the message goes out.
//!
//! An upload lives until its message is sent, and at most 24 h ([`TTL_MS`]) otherwise
//! (a message held for undo keeps its files until it has gone out or was cancelled).

use std::io;
use std::path::PathBuf;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};

use super::mime::{Content, File};
use super::spool::{Sealer, Spooled};
use super::{now_ms, parse_id, user_key};
use crate::crypto::{Aad, DataKey};
use crate::error::{AppError, AppResult};
use crate::services::Context;
use crate::store::email::outgoing::{self as store, UploadRow};

pub use super::spool::{CHUNK, T};
/// Unused uploads are dropped this long after they were made.
pub const TTL_MS: i64 = 24 * 60 * 60 * 1000;
/// Uploads one user may have spooled at once.
pub const MAX_UPLOADS_PER_USER: i64 = 100;
/// Longest file name kept (characters).
pub const MAX_NAME_CHARS: usize = crate::services::file_names::MAX_CHARS;

#[derive(Debug, Clone)]
pub struct Upload {
    pub id: String,
    pub name: String,
    pub mimetype: String,
    pub size: u64,
}

pub fn spool_dir(state: &Context) -> PathBuf {
    state.config.storage.data_dir.join("email-uploads")
}

/// A file name for the MIME part: its last path segment, control characters dropped.
fn clean_name(name: Option<&str>) -> String {
    crate::services::file_names::clean(name, "attachment")
}

/// `type/subtype` as lettre reads it; no type means `application/octet-stream`.
fn clean_type(ctype: Option<&str>) -> AppResult<String> {
    let t = ctype.map(str::trim).unwrap_or_default();
    if t.is_empty() {
        return Ok("application/octet-stream".to_owned());
    }
    let essence = t
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_lowercase();
    match lettre::message::header::ContentType::parse(&essence) {
        Ok(_) if essence.contains('/') && essence.len() <= 127 => Ok(essence),
        _ => Err(AppError::invalid(
            "file",
            "its Content-Type must be a media type such as application/pdf",
        )),
    }
}

fn too_large(state: &Context) -> AppError {
    AppError::TooLarge {
        message: format!(
            "attachments may add up to at most {} MiB per message ([email] max_attachments_mb)",
            state.config.email.max_attachments_mb
        ),
    }
}

/// Streams one file into the spool; 413 past `[email] max_attachments_mb` (the partial
/// file is removed), 400 for an empty file.
pub async fn store(
    state: &Context,
    user_id: &str,
    filename: Option<&str>,
    content_type: Option<&str>,
    stream: impl Stream<Item = io::Result<Bytes>> + Unpin,
) -> AppResult<Upload> {
    let dek = user_key(state, user_id).await?;
    let name = clean_name(filename);
    let mimetype = clean_type(content_type)?;
    check_room(state, user_id).await?;
    let id = uuid::Uuid::new_v4().to_string();
    let dir = spool_dir(state);
    let part = dir.join(format!("{id}.part"));
    let spooled = async {
        let size = spool_stream(state, &dek, &id, &part, stream).await?;
        tokio::fs::rename(&part, dir.join(&id))
            .await
            .map_err(AppError::internal)?;
        Ok::<_, AppError>(size)
    }
    .await;
    let size = match spooled {
        Ok(s) => s,
        Err(e) => {
            let _ = tokio::fs::remove_file(&part).await;
            return Err(e);
        }
    };
    let row = UploadRow {
        name_enc: dek.seal_str(&name, &Aad::new(T, "name", &id)),
        mimetype_enc: dek.seal_str(&mimetype, &Aad::new(T, "mimetype", &id)),
        id: id.clone(),
        user_id: user_id.to_owned(),
        size: size as i64,
        created_at: now_ms(),
    };
    state
        .db(move |c| Ok(store::insert_upload(c, &row)?))
        .await?;
    Ok(Upload {
        id,
        name,
        mimetype,
        size,
    })
}

/// 413 when the user already has [`MAX_UPLOADS_PER_USER`] uploads or four messages' worth
/// of files waiting.
async fn check_room(state: &Context, user_id: &str) -> AppResult<()> {
    let max = state.config.email.max_attachments_bytes();
    let uid = user_id.to_owned();
    let (used, count) = state.db(move |c| Ok(store::upload_usage(c, &uid)?)).await?;
    if count >= MAX_UPLOADS_PER_USER || used as u64 >= max * 4 {
        return Err(AppError::TooLarge {
            message: format!(
                "at most {MAX_UPLOADS_PER_USER} uploads and {} MiB may wait to be sent; \
                 send or wait for older ones to expire (24 h)",
                max * 4 / (1024 * 1024)
            ),
        });
    }
    Ok(())
}

/// Writes the body into `part` in sealed chunks as it arrives, synced to disk; returns its
/// size (413 past the cap, 400 when empty).
async fn spool_stream(
    state: &Context,
    dek: &DataKey,
    id: &str,
    part: &std::path::Path,
    mut stream: impl Stream<Item = io::Result<Bytes>> + Unpin,
) -> AppResult<u64> {
    let max = state.config.email.max_attachments_bytes();
    tokio::fs::create_dir_all(spool_dir(state))
        .await
        .map_err(AppError::internal)?;
    let mut file = tokio::fs::File::create(part)
        .await
        .map_err(AppError::internal)?;
    let mut sealer = Sealer::new(dek.clone(), id);
    let mut size = 0u64;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| AppError::invalid("file", e.to_string()))?;
        size += chunk.len() as u64;
        if size > max {
            return Err(too_large(state));
        }
        for frame in sealer.push(&chunk) {
            write_frame(&mut file, &frame).await?;
        }
    }
    if size == 0 {
        return Err(AppError::invalid("file", "is empty"));
    }
    if let Some(frame) = sealer.finish() {
        write_frame(&mut file, &frame).await?;
    }
    tokio::io::AsyncWriteExt::flush(&mut file)
        .await
        .map_err(AppError::internal)?;
    file.sync_all().await.map_err(AppError::internal)?;
    Ok(size)
}

async fn write_frame(file: &mut tokio::fs::File, frame: &[u8]) -> AppResult<()> {
    use tokio::io::AsyncWriteExt;
    file.write_all(frame).await.map_err(AppError::internal)
}

/// The rows of these uploads of the user (404 naming the first unknown one; another
/// user's upload is unknown here).
pub async fn rows(state: &Context, user_id: &str, ids: &[String]) -> AppResult<Vec<UploadRow>> {
    let mut parsed = Vec::with_capacity(ids.len());
    for id in ids {
        parsed.push(parse_id("upload", id)?);
    }
    let uid = user_id.to_owned();
    state
        .db(move |c| {
            parsed
                .iter()
                .map(|id| {
                    store::find_upload(c, &uid, id)?
                        .ok_or_else(|| AppError::not_found(&format!("upload {id}")))
                })
                .collect()
        })
        .await
}

/// Total size of these uploads; 413 past the per-message cap together with `extra`.
pub fn check_total(state: &Context, rows: &[UploadRow], extra: u64) -> AppResult<()> {
    let total: u64 = rows.iter().map(|r| r.size as u64).sum::<u64>() + extra;
    if total > state.config.email.max_attachments_bytes() {
        return Err(too_large(state));
    }
    Ok(())
}

/// An upload as a file of an outgoing message: its name and type opened, its bytes left
/// in the spool (read as the message goes out).
pub fn file(state: &Context, dek: &DataKey, row: &UploadRow) -> File {
    File {
        name: dek
            .open_string(&row.name_enc, &Aad::new(T, "name", &row.id))
            .unwrap_or_else(|_| "attachment".to_owned()),
        mimetype: dek
            .open_string(&row.mimetype_enc, &Aad::new(T, "mimetype", &row.id))
            .unwrap_or_else(|_| "application/octet-stream".to_owned()),
        content: Content::Spooled(Spooled {
            path: spool_dir(state).join(&row.id),
            id: row.id.clone(),
            size: row.size as u64,
            dek: dek.clone(),
        }),
    }
}

/// Spools bytes already in memory (a draft's or a forwarded mail's files) as an upload.
pub async fn store_bytes(
    state: &Context,
    user_id: &str,
    name: &str,
    mimetype: &str,
    bytes: Vec<u8>,
) -> AppResult<Upload> {
    let body = futures_util::stream::iter(
        bytes
            .chunks(CHUNK)
            .map(|c| Ok(Bytes::copy_from_slice(c)))
            .collect::<Vec<_>>(),
    );
    store(state, user_id, Some(name), Some(mimetype), body).await
}

/// Drops uploads (rows and files).
pub async fn discard(state: &Context, ids: Vec<String>) -> AppResult<()> {
    let dir = spool_dir(state);
    for id in &ids {
        let _ = tokio::fs::remove_file(dir.join(id)).await;
    }
    state
        .db(move |c| Ok(store::delete_uploads(c, &ids)?))
        .await?;
    Ok(())
}

/// Drops uploads older than [`TTL_MS`] that no held message needs, and spool files without
/// a row (left by a stop mid-upload) older than an hour. Returns how many uploads went.
pub async fn purge(state: &Context) -> AppResult<usize> {
    let now = now_ms();
    let (old, held, known) = state
        .db(move |c| {
            Ok((
                store::uploads_before(c, now - TTL_MS)?,
                store::held_upload_ids(c)?,
                store::all_upload_ids(c)?,
            ))
        })
        .await?;
    let expired: Vec<String> = old
        .into_iter()
        .map(|(id, _)| id)
        .filter(|id| !held.contains(id))
        .collect();
    let n = expired.len();
    discard(state, expired).await?;
    let dir = spool_dir(state);
    if let Ok(mut entries) = tokio::fs::read_dir(&dir).await {
        while let Ok(Some(e)) = entries.next_entry().await {
            let name = e.file_name().to_string_lossy().into_owned();
            let stem = name.trim_end_matches(".part");
            let stale = e
                .metadata()
                .await
                .ok()
                .and_then(|m| m.modified().ok())
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age.as_secs() > 3600);
            if stale && (name.ends_with(".part") || !known.iter().any(|k| k == stem)) {
                let _ = tokio::fs::remove_file(e.path()).await;
            }
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_types_are_cleaned() {
        assert_eq!(clean_name(Some("C:\\docs\\a\r\nb.pdf")), "ab.pdf");
        assert_eq!(clean_name(Some("../../etc/passwd")), "passwd");
        assert_eq!(clean_name(None), "attachment");
        assert_eq!(clean_type(None).unwrap(), "application/octet-stream");
        assert_eq!(clean_type(Some("Image/PNG; x=1")).unwrap(), "image/png");
        assert!(clean_type(Some("not a type")).is_err());
    }
}
