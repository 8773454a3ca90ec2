//! Attachments (docs/design.md): `GET /api/rooms/{roomId}/media/{eventId}` streams an
//! attachment's bytes from the homeserver's authenticated media API as the user (those
//! of encrypted rooms spooled, checked against their SHA-256 and only then decrypted:
//! [`decrypt`]), and [`upload`] sends new ones. What an attachment is
//! and where it lives (its `mxc://` URI, or the `file` object with key, iv and hashes)
//! is part of the message content, sealed at rest like the text; the bytes are never
//! stored.

use crate::services::users::load_row;
use std::io;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use matrix_sdk_crypto::MediaEncryptionInfo;
use serde_json::Value;

use super::messages::parse_room_id;
use super::messages::rich::{self, media_of};
use super::messages::send::{matrix_token, parse_event_id};
use super::{conversations, users, Context};
use crate::clients::matrix::media::Mxc;
use crate::clients::matrix::MatrixError;
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::upstream::homeserver_error;

mod avatar;
mod decrypt;
mod image_upload;
pub mod pipe;
pub mod preview;
pub mod spool;
mod spooled;
mod upload;
mod voice;
pub use avatar::member_avatar;
pub use image_upload::{upload_image, UploadedImage};
pub use spooled::body_timeout;
pub use upload::{upload, UploadForm, UploadPart};

/// An attachment on its way to the client.
pub struct Download {
    /// Safe to serve (never an active type such as `text/html`: those become
    /// `application/octet-stream`).
    pub content_type: String,
    /// The attachment's file name as the sender gave it (the API layer makes it safe).
    pub filename: String,
    /// Bytes, when the homeserver announced them (also for encrypted attachments: the
    /// cipher keeps the length).
    pub length: Option<u64>,
    pub body: pipe::Output,
}

/// Where the bytes are.
enum Source {
    Plain(Mxc),
    Encrypted(Mxc, Box<MediaEncryptionInfo>),
    /// An unencrypted image the homeserver scales itself.
    ServerThumbnail(Mxc),
}

fn malformed() -> AppError {
    AppError::BadGateway {
        code: ErrorCode::HomeserverError,
        message: "the attachment's event names no usable source (url: an mxc:// URI of a \
                  server name and a media id, never `.` or `..`; file: v2 key, iv, sha256)"
            .into(),
    }
}

fn plain(uri: &Value) -> AppResult<Source> {
    uri.as_str()
        .and_then(Mxc::parse)
        .map(Source::Plain)
        .ok_or_else(malformed)
}

fn encrypted(file: &Value) -> AppResult<Source> {
    let mxc = file["url"]
        .as_str()
        .and_then(Mxc::parse)
        .ok_or_else(malformed)?;
    let info: MediaEncryptionInfo =
        serde_json::from_value(file.clone()).map_err(|_| malformed())?;
    Ok(Source::Encrypted(mxc, Box::new(info)))
}

/// The source and declared type of an attachment (or of its thumbnail); `None` when the
/// event has no thumbnail.
fn source_of(
    msgtype: &str,
    content: &Value,
    thumbnail: bool,
) -> AppResult<Option<(Source, Option<String>)>> {
    let info = &content["info"];
    if !thumbnail {
        let declared = info["mimetype"].as_str().map(str::to_owned);
        let src = if content["file"].is_object() {
            encrypted(&content["file"])?
        } else {
            plain(&content["url"])?
        };
        return Ok(Some((src, declared)));
    }
    let declared = info["thumbnail_info"]["mimetype"]
        .as_str()
        .map(str::to_owned);
    if info["thumbnail_file"].is_object() {
        return Ok(Some((encrypted(&info["thumbnail_file"])?, declared)));
    }
    if info["thumbnail_url"].is_string() {
        return Ok(Some((plain(&info["thumbnail_url"])?, declared)));
    }
    if content["url"].is_string() && matches!(msgtype, "m.image" | "m.sticker") {
        let Source::Plain(mxc) = plain(&content["url"])? else {
            return Err(malformed());
        };
        return Ok(Some((Source::ServerThumbnail(mxc), None)));
    }
    Ok(None)
}

/// Types a browser would run or render as a document: never served as themselves.
fn safe_content_type(declared: Option<&str>) -> String {
    const FALLBACK: &str = rich::UNKNOWN_MIMETYPE;
    let Some(essence) = declared
        .map(|d| {
            d.split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
        })
        .filter(|e| !e.is_empty())
    else {
        return FALLBACK.to_owned();
    };
    let token = |s: &str| {
        !s.is_empty()
            && s.len() <= 127
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&^_.+-".contains(&b))
    };
    let well_formed = essence
        .split_once('/')
        .is_some_and(|(t, sub)| token(t) && token(sub));
    let active = ["html", "xml", "script", "svg"]
        .iter()
        .any(|a| essence.contains(a))
        || essence.starts_with("multipart/")
        || essence == "text/css";
    if !well_formed || active {
        return FALLBACK.to_owned();
    }
    essence
}

/// Ends the stream with an error once more than `max` bytes came through, and passes
/// the homeserver's chunks on in pieces of at most [`decrypt::PIECE_BYTES`] (views of the
/// same buffer, not copies): hyper reads up to ~500 KiB at once, and handing the client
/// smaller writes keeps the two sockets flowing at the same time instead of in turns.
fn capped<S>(input: S, max: u64) -> impl Stream<Item = io::Result<Bytes>> + Send + 'static
where
    S: Stream<Item = reqwest::Result<Bytes>> + Send + 'static,
{
    let mut seen = 0u64;
    input
        .map(move |chunk| {
            let chunk = chunk.map_err(io::Error::other)?;
            seen += chunk.len() as u64;
            if seen > max {
                return Err(io::Error::new(
                    io::ErrorKind::FileTooLarge,
                    "attachment larger than [media] max_download_mb",
                ));
            }
            Ok(chunk)
        })
        .flat_map(|item| futures_util::stream::iter(pieces(item)))
}

/// `item` cut into pieces of at most [`decrypt::PIECE_BYTES`].
fn pieces(item: io::Result<Bytes>) -> Vec<io::Result<Bytes>> {
    let Ok(mut chunk) = item else {
        return vec![item];
    };
    let mut out = Vec::with_capacity(chunk.len() / decrypt::PIECE_BYTES + 1);
    while chunk.len() > decrypt::PIECE_BYTES {
        out.push(Ok(chunk.split_to(decrypt::PIECE_BYTES)));
    }
    out.push(Ok(chunk));
    out
}

/// 413 `payload_too_large`: `what` is larger than `limit` bytes.
pub(crate) fn too_large(limit: u64, what: &str) -> AppError {
    AppError::TooLarge {
        message: format!("{what} ({} MiB at most)", limit / (1024 * 1024)),
    }
}

/// `GET /api/rooms/{roomId}/media/{eventId}[?thumbnail=true]`. 404 unless `eventId` is a
/// stored attachment message of the caller's room `roomId` (and, for a thumbnail, one
/// that has a thumbnail).
pub async fn download(
    state: &Context,
    user_id: &str,
    room_id: &str,
    event_id: &str,
    thumbnail: bool,
) -> AppResult<Download> {
    let room_id = parse_room_id("roomId", room_id)?;
    let event_id = parse_event_id("eventId", event_id)?;
    let matrix = state.matrix.clone().ok_or_else(|| AppError::Unavailable {
        retry_after_secs: None,
        code: ErrorCode::HomeserverUnavailable,
        message: "no Matrix homeserver is configured on this server".into(),
    })?;
    let (content, msgtype, token) = attachment_message(state, user_id, room_id, event_id).await?;
    let media = media_of(&msgtype, &content).ok_or_else(|| AppError::not_found("media"))?;
    let (source, declared) = source_of(&msgtype, &content, thumbnail)?
        .ok_or_else(|| AppError::not_found("thumbnail"))?;
    let max = state.config.media.max_download_bytes();
    if !thumbnail && media.size.is_some_and(|n| n > max) {
        return Err(too_large_to_serve(max));
    }
    let (mxc, key, server_thumb) = match source {
        Source::Plain(m) => (m, None, false),
        Source::Encrypted(m, k) => (m, Some(k), false),
        Source::ServerThumbnail(m) => (m, None, true),
    };
    let stream = matrix
        .media_download(&token, &mxc, server_thumb)
        .await
        .map_err(media_error)?;
    if stream.length.is_some_and(|n| n > max) {
        return Err(too_large_to_serve(max));
    }
    let declared = declared.or(if key.is_none() {
        stream.content_type.clone()
    } else {
        None
    });
    let stream_length = stream.length;
    let input = Box::pin(capped(stream.into_stream(), max));
    let (length, body): (Option<u64>, pipe::Output) = match key {
        None => (stream_length, input),
        Some(info) => {
            let params = decrypt::CipherParams::of(&info).ok_or_else(malformed)?;
            let (n, body) = decrypt::verified(state, input, params, max).await?;
            (Some(n), body)
        }
    };
    let prefix = if thumbnail { "thumbnail-" } else { "" };
    Ok(Download {
        content_type: safe_content_type(declared.as_deref()),
        filename: format!("{prefix}{}", media.name),
        length,
        body,
    })
}

/// The content and msgtype of the caller's stored, readable, unredacted message
/// `event_id` of `room_id` (404 otherwise), and the caller's Matrix token.
async fn attachment_message(
    state: &Context,
    user_id: &str,
    room_id: String,
    event_id: String,
) -> AppResult<(Value, String, String)> {
    let (uid, st) = (user_id.to_owned(), state.clone());
    state
        .db(move |c| {
            let user = load_row(c, &uid)?;
            conversations::require_readable(&user)?;
            let row = crate::store::messages::find_by_event(c, &uid, &event_id)?
                .filter(|m| m.room_id == room_id && !m.redacted)
                .ok_or_else(|| AppError::not_found("message"))?;
            let dek = users::data_key(&st.master, &user)?;
            let content = conversations::open_message(&dek, &row.id, &row.content_enc)
                .map_err(|_| AppError::not_found("message"))?;
            Ok((content.content, row.msgtype, matrix_token(&st, &user)?))
        })
        .await
}

fn too_large_to_serve(max: u64) -> AppError {
    too_large(max, "the attachment is larger than this server serves")
}

/// The homeserver's "no such media" is the client's 404; other refusals are 502.
fn media_error(e: MatrixError) -> AppError {
    match &e {
        MatrixError::Http { status: 404, .. } => {
            AppError::not_found("the attachment on the homeserver")
        }
        _ => homeserver_error(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn active_and_malformed_types_are_never_served_as_themselves() {
        assert_eq!(safe_content_type(Some("image/png")), "image/png");
        assert_eq!(
            safe_content_type(Some("Audio/Ogg; codecs=opus")),
            "audio/ogg"
        );
        for bad in [
            "text/html",
            "application/xhtml+xml",
            "image/svg+xml",
            "text/javascript",
            "text/css",
            "multipart/mixed",
            "nonsense",
            "a/b c",
            "",
        ] {
            assert_eq!(
                safe_content_type(Some(bad)),
                "application/octet-stream",
                "{bad}"
            );
        }
        assert_eq!(safe_content_type(None), "application/octet-stream");
    }

    #[test]
    fn chunks_are_passed_on_in_pieces() {
        let big = Bytes::from(vec![1u8; 2 * decrypt::PIECE_BYTES + 5]);
        let lens: Vec<usize> = pieces(Ok(big))
            .into_iter()
            .map(|p| p.unwrap().len())
            .collect();
        assert_eq!(lens, [decrypt::PIECE_BYTES, decrypt::PIECE_BYTES, 5]);
        assert_eq!(pieces(Ok(Bytes::from_static(b"abc"))).len(), 1);
        assert!(pieces(Err(io::Error::other("x")))[0].is_err());
    }
}
