//! `/api/rooms/{roomId}/media*`: attachments of messages, both ways (docs/design.md). The
//! bytes are streamed; Switchboard keeps none of them.

use std::io;

use tokio::time::Instant;

use bytes::Bytes;
use futures_util::StreamExt;
use poem::web::Data;
use poem::Body;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::{Binary, Json, Response};
use poem_openapi::{Object, OpenApi};

use super::messages::SendResult;
use super::security::TokenAuth;
use super::ApiTags;
use crate::error::AppError;
use crate::services::media::{self, UploadForm, UploadPart};
use crate::state::AppState;

/// Longest text field of the upload form, in bytes.
const MAX_FIELD_BYTES: usize = 64 * 1024;

/// The fields of `POST /api/rooms/{roomId}/media` (multipart/form-data). Put the text
/// fields before `file`: the file is streamed on as it arrives.
#[derive(Debug, Object)]
#[oai(rename = "MediaUploadForm", rename_all = "camelCase")]
#[allow(dead_code)]
pub struct MediaUploadForm {
    /// Client transaction id (1 to 255 of `A-Z a-z 0-9 . _ ~ -`): a repeat uploads and
    /// sends nothing and returns the first event.
    pub txn_id: String,
    /// Text shown with the attachment (at most 65536 characters and 64 KiB of UTF-8).
    pub caption: Option<String>,
    /// Event id of a message of this room the attachment replies to.
    pub reply_to: Option<String>,
    /// Length of a voice note, audio or video file in whole milliseconds (0 to
    /// 86400000), as the client recorded it: sent as the event's `info.duration` and read
    /// back as `media.durationMs`. Ignored for other types; 400 naming `durationMs` when
    /// not such a number.
    pub duration_ms: Option<String>,
    /// `true`: the audio file is a voice note recorded by the user (sent as `m.audio` with
    /// `org.matrix.msc3245.voice` and `org.matrix.msc1767.audio {duration, waveform}`, so
    /// the bridges deliver it as the network's own voice note). Needs `durationMs` and an
    /// audio file (400 naming `durationMs` or `voice` otherwise); `false` or absent: an
    /// ordinary attachment. 400 naming `voice` for another value.
    pub voice: Option<String>,
    /// The voice note's waveform, with `voice=true` only: a JSON array of at most 1024
    /// whole numbers from 0 to 1024 (loudness over the note, evenly spaced), e.g.
    /// `[0,120,512,1024]`. 400 naming `waveform` when malformed, too long, out of range or
    /// sent without `voice=true`.
    pub waveform: Option<String>,
    /// The file (binary), last. Its part's `filename` names it and its `Content-Type` is
    /// the claimed type: images and audio must be what they claim (checked against the
    /// bytes; 400 naming `file` otherwise); without a type the bytes decide.
    #[oai(rename = "file")]
    pub file: String,
}

/// The multipart body, read field by field as it arrives.
pub type MediaUpload = crate::api::streamed_form::StreamedForm<MediaUploadForm>;

/// A field's text, bounded ([`MAX_FIELD_BYTES`]), read before `deadline`.
async fn field_text(
    field: poem::web::Field,
    name: &str,
    deadline: Instant,
) -> Result<String, AppError> {
    let mut out = Vec::new();
    let mut reader = field.into_async_read();
    let mut buf = [0u8; 8192];
    loop {
        let n = tokio::time::timeout_at(
            deadline,
            tokio::io::AsyncReadExt::read(&mut reader, &mut buf),
        )
        .await
        .map_err(|_| media::body_timeout())?
        .map_err(|e| AppError::invalid(name, e.to_string()))?;
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
        if out.len() > MAX_FIELD_BYTES {
            return Err(AppError::invalid(name, "is too long (64 KiB at most)"));
        }
    }
    String::from_utf8(out).map_err(|_| AppError::invalid(name, "must be UTF-8 text"))
}

/// The file part as a stream of chunks; past `deadline` it ends with a `TimedOut` error.
pub(crate) fn field_stream(
    field: poem::web::Field,
    deadline: Instant,
) -> impl futures_util::Stream<Item = io::Result<Bytes>> + Send + Unpin + 'static {
    let reader = field.into_async_read();
    Box::pin(futures_util::stream::unfold(
        Some(reader),
        move |reader| async move {
            let mut reader = reader?;
            let mut buf = vec![0u8; media::pipe::CHUNK_BYTES];
            let read = tokio::time::timeout_at(
                deadline,
                tokio::io::AsyncReadExt::read(&mut reader, &mut buf),
            )
            .await
            .unwrap_or_else(|_| Err(io::Error::new(io::ErrorKind::TimedOut, "body deadline")));
            match read {
                Ok(0) => None,
                Ok(n) => {
                    buf.truncate(n);
                    Some((Ok(Bytes::from(buf)), Some(reader)))
                }
                Err(e) => Some((Err(e), None)),
            }
        },
    ))
}

/// `attachment; filename="<ASCII>"; filename*=UTF-8''<percent-encoded>` (RFC 6266).
fn content_disposition(name: &str) -> String {
    let ascii: String = name
        .chars()
        .map(|c| {
            if (c.is_ascii_graphic() || c == ' ') && c != '"' && c != '\\' {
                c
            } else {
                '_'
            }
        })
        .take(200)
        .collect();
    let encoded = crate::clients::matrix::encode(&name.chars().take(200).collect::<String>());
    format!("attachment; filename=\"{ascii}\"; filename*=UTF-8''{encoded}")
}

pub struct MediaApi;

#[OpenApi(prefix_path = "/api/rooms", tag = "ApiTags::Messages")]
impl MediaApi {
    /// Download an attachment
    ///
    /// The bytes of the attachment of message `eventId` (an `m.image`, `m.file`,
    /// `m.audio`, `m.video` or `m.sticker` message of the caller's room `roomId`), fetched
    /// from the homeserver's authenticated media API as the caller and streamed; in an
    /// encrypted room decrypted on the way (its SHA-256 is checked: a mismatch ends the
    /// response before its last bytes, short of `Content-Length`). `thumbnail=true`: the
    /// thumbnail instead (`media.hasThumbnail`). `Content-Type` is the event's (an active
    /// type such as `text/html` or SVG is sent as `application/octet-stream`), always
    /// with `Content-Disposition: attachment` and `X-Content-Type-Options: nosniff`.
    /// Nothing is stored. 404 for an unknown event, a message of another room or user, a
    /// message without an attachment (or thumbnail), or media the homeserver no longer
    /// has; 413 `payload_too_large` past `[media] max_download_mb`; 502 when the
    /// homeserver refuses.
    #[oai(
        path = "/:roomId/media/:eventId",
        method = "get",
        operation_id = "rooms_media_download"
    )]
    async fn download(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        /// Matrix room id (URL-encoded).
        #[oai(name = "roomId")]
        room_id: Path<String>,
        /// Matrix event id of the message (URL-encoded).
        #[oai(name = "eventId")]
        event_id: Path<String>,
        /// `true` for the thumbnail.
        thumbnail: Query<Option<bool>>,
    ) -> Result<Response<Binary<Body>>, AppError> {
        let d = media::download(
            &state,
            auth.user_id(),
            &room_id,
            &event_id,
            thumbnail.0.unwrap_or(false),
        )
        .await?;
        let body = Body::from_bytes_stream(d.body.map(|c| c.map_err(io::Error::other)));
        let mut resp = Response::new(Binary(body))
            .header("Content-Type", d.content_type)
            .header("X-Content-Type-Options", "nosniff")
            .header("Content-Disposition", content_disposition(&d.filename))
            .header("Cache-Control", "private, no-store");
        if let Some(n) = d.length {
            resp = resp.header("Content-Length", n);
        }
        Ok(resp)
    }

    /// Send an attachment
    ///
    /// multipart/form-data with `txnId`, optional `caption`, `replyTo`, `durationMs`,
    /// `voice` and `waveform`, then `file` (the text fields first). `voice=true` with
    /// `durationMs` (and optionally `waveform`) sends an audio file as a voice note. The
    /// file is uploaded to the homeserver as the caller
    /// (encrypted first with the Matrix attachment cipher in an encrypted room; spooled
    /// meanwhile only as ciphertext under a key kept in memory) and sent as `m.image`,
    /// `m.video`, `m.audio` or `m.file` by its type, with `info` (`mimetype`, `size`,
    /// `w`/`h` for images whose header says them). Idempotent per `txnId` like text
    /// sends. 400 naming the field: no `file`, an empty file, no `txnId`, a claimed image
    /// or audio type the bytes do not match, an unknown `replyTo`. 413
    /// `payload_too_large` past `[media] max_upload_mb` (and never above the homeserver's
    /// `m.upload.size`). 404, 409 and 502/503 as for text sends.
    ///
    /// Limits that keep an upload from holding the server: each text field at most once
    /// and at most 64 KiB (400 naming it); the whole body (`Content-Length` or as it
    /// streams) at most `max_upload_mb` plus 1 MiB for the form (413); the whole body
    /// within `[media] upload_timeout` (10 min; 408 `request_timeout`); at most `[media]
    /// max_concurrent_uploads` (4) uploads of one user at once (429 `too_many_uploads`);
    /// the spool space of all uploads and encrypted downloads at most `[media]
    /// max_spool_mb` (503 `spool_full` with Retry-After).
    #[oai(
        path = "/:roomId/media",
        method = "post",
        operation_id = "rooms_media_upload"
    )]
    async fn upload(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        /// Matrix room id (URL-encoded).
        #[oai(name = "roomId")]
        room_id: Path<String>,
        form: MediaUpload,
    ) -> Result<Json<SendResult>, AppError> {
        let _slot = media::spool::upload_slot(&state, auth.user_id())?;
        let deadline = Instant::now() + state.config.media.upload_timeout.0;
        let mut multipart = form.0;
        let mut fields = UploadForm::default();
        loop {
            let field = tokio::time::timeout_at(deadline, multipart.next_field())
                .await
                .map_err(|_| media::body_timeout())?
                .map_err(|e| AppError::invalid("body", format!("malformed multipart: {e}")))?;
            let Some(field) = field else {
                return Err(AppError::invalid("file", "is required"));
            };
            let name = field.name().unwrap_or_default().to_owned();
            let slot =
                match name.as_str() {
                    "txnId" => &mut fields.txn_id,
                    "caption" => &mut fields.caption,
                    "replyTo" => &mut fields.reply_to,
                    "durationMs" => &mut fields.duration_ms,
                    "voice" => &mut fields.voice,
                    "waveform" => &mut fields.waveform,
                    "file" => {
                        let part = UploadPart {
                            filename: field.file_name().map(str::to_owned),
                            content_type: field.content_type().map(str::to_owned),
                            stream: field_stream(field, deadline),
                        };
                        let sent =
                            media::upload(&state, auth.user_id(), &room_id, fields, part).await?;
                        return Ok(Json(SendResult {
                            event_id: sent.event_id,
                            room_id: sent.room_id,
                            txn_id: sent.txn_id,
                            duplicate: sent.duplicate,
                        }));
                    }
                    other => return Err(AppError::invalid(
                        other,
                        "is not a field of this form (txnId, caption, replyTo, durationMs, voice, \
                         waveform, file)",
                    )),
                };
            // Each text field once: a client repeating one could keep the upload open
            // with text that is read and thrown away.
            if slot.is_some() {
                return Err(AppError::invalid(&name, "is given more than once"));
            }
            *slot = Some(field_text(field, &name, deadline).await?);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dispositions_are_attachments_with_safe_names() {
        assert_eq!(
            content_disposition("a \"b\".png"),
            "attachment; filename=\"a _b_.png\"; filename*=UTF-8''a%20%22b%22.png"
        );
        let d = content_disposition("voix\r\nX: y.ogg");
        assert!(!d.contains('\r') && !d.contains('\n'), "{d}");
    }
}
