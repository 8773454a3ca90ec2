//! `POST /api/rooms/{roomId}/media`: a file from the client to the homeserver, then the
//! matching `m.image` / `m.video` / `m.audio` / `m.file` event.
//!
//! The homeserver needs the length before the bytes (Synapse refuses an upload without
//! `Content-Length`) and a multipart part does not say it, so the file is spooled while
//! it arrives: through `matrix-sdk-crypto`'s attachment encryptor (AES-256-CTR under a
//! fresh key held only in memory) into an unlinked file in the data directory. The spool
//! is ciphertext whose key never leaves the process and it is gone when the request ends
//! (or the process dies). In an encrypted room the spool is uploaded as it is (it is the
//! Matrix encrypted attachment; its key goes into the end-to-end encrypted event); in a
//! plain room it is decrypted on the way out. Memory stays at a few chunks either way.

use std::io;

use bytes::Bytes;
use futures_util::Stream;
use serde_json::{json, Value};

use super::spooled::{copy_info, send_spool, spool, Spool};
use crate::clients::matrix::MatrixClient;
use crate::error::{AppError, AppResult};
use crate::services::e2ee;
use crate::services::messages::send::{
    self, parse_event_id, validate_txn_id, Action, Outbound, Sent, Target, TargetRule,
};
use crate::services::messages::{parse_room_id, rich::UNKNOWN_MIMETYPE};
use crate::services::Context;

/// Longest caption, in characters (as a text message).
const MAX_CAPTION_CHARS: usize = send::MAX_TEXT_CHARS;
/// The text fields of the form (they come before `file`).
#[derive(Debug, Clone, Default)]
pub struct UploadForm {
    pub txn_id: Option<String>,
    pub caption: Option<String>,
    pub reply_to: Option<String>,
    /// `durationMs` as the client sent it (checked by [`upload`]).
    pub duration_ms: Option<String>,
    /// `voice` (`true`/`false`) and `waveform` (a JSON array): a voice note
    /// ([`super::voice`]).
    pub voice: Option<String>,
    pub waveform: Option<String>,
}

/// The `file` part: what the client says about it, and its bytes.
pub struct UploadPart<S> {
    pub filename: Option<String>,
    pub content_type: Option<String>,
    pub stream: S,
}

/// Spelling variants of the same type, and container types a sniffer names differently.
fn same_type(claimed: &str, sniffed: &str) -> bool {
    fn norm(t: &str) -> &str {
        match t {
            "image/jpg" | "image/pjpeg" => "image/jpeg",
            "audio/mp3" | "audio/x-mp3" | "audio/mpeg3" => "audio/mpeg",
            "audio/x-m4a" | "audio/mp4" | "audio/aac" => "audio/m4a",
            "audio/wav" | "audio/wave" | "audio/vnd.wave" => "audio/x-wav",
            "audio/flac" => "audio/x-flac",
            "audio/x-ogg" | "audio/opus" => "audio/ogg",
            "audio/webm" => "video/webm",
            "image/x-icon" => "image/vnd.microsoft.icon",
            other => other,
        }
    }
    let (c, s) = (norm(claimed), norm(sniffed));
    c == s || (c == "audio/m4a" && s == "video/mp4")
}

/// The type to announce: the claimed one when the bytes agree (images and audio must be
/// recognisable as what they claim), the sniffed one when nothing (or only
/// `application/octet-stream`) was claimed. 400 naming `file` otherwise.
pub(super) fn resolve_type(claimed: Option<&str>, head: &[u8]) -> AppResult<String> {
    let sniffed = infer::get(head).map(|t| t.mime_type());
    let claimed = claimed
        .map(|c| {
            c.split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
        })
        .filter(|c| !c.is_empty() && c != UNKNOWN_MIMETYPE);
    let Some(claimed) = claimed else {
        return Ok(sniffed.unwrap_or(UNKNOWN_MIMETYPE).to_owned());
    };
    let checked = claimed.starts_with("image/") || claimed.starts_with("audio/");
    if checked && !sniffed.is_some_and(|s| same_type(&claimed, s)) {
        return Err(AppError::invalid(
            "file",
            format!(
                "the content type claimed ({claimed}) does not match the file's bytes ({})",
                sniffed.unwrap_or("not a recognised image or audio format")
            ),
        ));
    }
    Ok(claimed)
}

fn msgtype_of(mimetype: &str) -> &'static str {
    match mimetype.split('/').next() {
        Some("image") => "m.image",
        Some("video") => "m.video",
        Some("audio") => "m.audio",
        _ => "m.file",
    }
}

/// A file name without path parts or control characters, at most 255 characters.
fn clean_name(name: Option<&str>) -> String {
    crate::services::file_names::clean(name, "file")
}

/// The largest upload: `[media] max_upload_mb`, never above the homeserver's
/// `m.upload.size` (when it announces one and can be asked).
async fn upload_cap(state: &Context, matrix: &MatrixClient, token: &str) -> u64 {
    let ours = state.config.media.max_upload_bytes();
    match matrix.media_upload_limit(token).await {
        Ok(Some(theirs)) => ours.min(theirs),
        Ok(None) => ours,
        Err(e) => {
            tracing::warn!(error = %e, "homeserver media config unavailable; using [media] max_upload_mb");
            ours
        }
    }
}

/// `POST /api/rooms/{roomId}/media`: spools, uploads and sends the attachment once per
/// (user, `txnId`); a repeat returns the first event and uploads nothing.
pub async fn upload<S>(
    state: &Context,
    user_id: &str,
    room_id: &str,
    form: UploadForm,
    part: UploadPart<S>,
) -> AppResult<Sent>
where
    S: Stream<Item = io::Result<Bytes>> + Send + Unpin + 'static,
{
    let room_id = parse_room_id("roomId", room_id)?;
    let fields = Fields::check(form)?;
    let mut out = Outbound {
        room_id: room_id.clone(),
        txn_id: fields.txn_id.clone(),
        action: Action::Send {
            event_type: "m.room.message",
            content: Value::Null,
        },
        target: fields.reply_to.clone().map(|event_id| Target {
            field: "replyTo",
            event_id,
            rule: TargetRule::ReplyIn,
        }),
    };
    let token = match send::precheck(state, user_id, &out).await? {
        Ok(duplicate) => return Ok(duplicate),
        Err(token) => token,
    };
    let matrix = state
        .matrix
        .clone()
        .ok_or_else(|| AppError::internal("no homeserver"))?;
    let max = upload_cap(state, &matrix, &token).await;
    let encrypted = e2ee::room_is_encrypted(state, &matrix, user_id, &token, &room_id).await?;
    let name = clean_name(part.filename.as_deref());
    // Held until the upload is sent: the spool file lives as long.
    let reservation = super::spool::Reservation::new(state);
    let (head, spool) = spool(state, part.stream, max, reservation.clone()).await?;
    let mimetype = resolve_type(part.content_type.as_deref(), &head)?;
    let msgtype = msgtype_of(&mimetype);
    fields.audio.check_type(msgtype, &mimetype)?;
    let info = file_info(&mimetype, msgtype, &head, spool.length, &fields.audio);
    let mut content = json!({"msgtype": msgtype, "info": info});
    let sent = Sending {
        matrix: &matrix,
        token: &token,
        mimetype: &mimetype,
        name: &name,
    };
    sent.spool_into(&mut content, spool, encrypted).await?;
    fields.describe(&mut content, &name);
    out.action = Action::Send {
        event_type: "m.room.message",
        content,
    };
    send::send_once(state, user_id, out).await
}

/// Where and as what the spool is uploaded.
struct Sending<'a> {
    matrix: &'a MatrixClient,
    token: &'a str,
    mimetype: &'a str,
    name: &'a str,
}

impl Sending<'_> {
    /// Uploads the spool and points the event at it: in an encrypted room the spool as it
    /// is (it is the Matrix encrypted attachment) with its key in `file`; in a plain room
    /// decrypted on the way out, at `url`.
    async fn spool_into(
        &self,
        content: &mut Value,
        spool: Spool,
        encrypted: bool,
    ) -> AppResult<()> {
        let key = copy_info(&spool.info)?;
        if encrypted {
            let mxc = send_spool(
                self.matrix,
                self.token,
                spool,
                None,
                UNKNOWN_MIMETYPE,
                self.name,
            )
            .await?;
            let mut file = serde_json::to_value(&key).map_err(AppError::internal)?;
            file["url"] = json!(mxc);
            content["file"] = file;
        } else {
            let mxc = send_spool(
                self.matrix,
                self.token,
                spool,
                Some(key),
                self.mimetype,
                self.name,
            )
            .await?;
            content["url"] = json!(mxc);
        }
        Ok(())
    }
}

/// The text fields of the form, checked.
struct Fields {
    txn_id: String,
    caption: Option<String>,
    audio: super::voice::AudioFields,
    reply_to: Option<String>,
}

impl Fields {
    fn check(form: UploadForm) -> AppResult<Self> {
        let txn_id = form
            .txn_id
            .ok_or_else(|| AppError::invalid("txnId", "is required (before file in the form)"))?;
        validate_txn_id(&txn_id)?;
        let caption = caption_of(form.caption)?;
        let audio = super::voice::AudioFields::parse(
            form.duration_ms.as_deref(),
            form.voice.as_deref(),
            form.waveform.as_deref(),
        )?;
        let reply_to = form
            .reply_to
            .map(|r| parse_event_id("replyTo", &r))
            .transpose()?;
        Ok(Self {
            txn_id,
            caption,
            audio,
            reply_to,
        })
    }

    /// The event's body and file name, the voice marks and the reply.
    fn describe(self, content: &mut Value, name: &str) {
        name_the_file(content, self.caption, name);
        self.audio.mark(content);
        if let Some(reply) = self.reply_to {
            content["m.relates_to"] = json!({"m.in_reply_to": {"event_id": reply}});
        }
    }
}

/// The caption: none when blank, 400 when longer than a text message may be.
fn caption_of(caption: Option<String>) -> AppResult<Option<String>> {
    let caption = caption.filter(|c| !c.trim().is_empty());
    if caption
        .as_ref()
        .is_some_and(|c| c.chars().count() > MAX_CAPTION_CHARS)
    {
        return Err(AppError::invalid(
            "caption",
            format!("must be at most {MAX_CAPTION_CHARS} characters"),
        ));
    }
    Ok(caption)
}

/// The event's `info`: type and size, an image's dimensions (read from its first bytes),
/// an audio or video's duration.
fn file_info(
    mimetype: &str,
    msgtype: &str,
    head: &[u8],
    size: u64,
    audio: &super::voice::AudioFields,
) -> Value {
    let mut info = json!({"mimetype": mimetype, "size": size});
    if msgtype == "m.image" {
        if let Ok(dim) = imagesize::blob_size(head) {
            info["w"] = json!(dim.width);
            info["h"] = json!(dim.height);
        }
    }
    if let Some(ms) = audio
        .duration_ms
        .filter(|_| matches!(msgtype, "m.audio" | "m.video"))
    {
        info["duration"] = json!(ms);
    }
    info
}

/// `body` is the caption when there is one (the file name then in `filename`), else the
/// file name.
fn name_the_file(content: &mut Value, caption: Option<String>, name: &str) {
    match caption {
        Some(caption) => {
            content["body"] = json!(caption);
            content["filename"] = json!(name);
        }
        None => content["body"] = json!(name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = &[
        0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, b'I', b'H', b'D', b'R', 0, 0,
        0, 3, 0, 0, 0, 2, 8, 6, 0, 0, 0,
    ];

    #[test]
    fn claimed_types_must_match_the_bytes() {
        assert_eq!(resolve_type(Some("image/png"), PNG).unwrap(), "image/png");
        assert_eq!(resolve_type(None, PNG).unwrap(), "image/png");
        assert_eq!(
            resolve_type(Some("application/octet-stream"), PNG).unwrap(),
            "image/png"
        );
        let err = resolve_type(Some("image/jpeg"), PNG).unwrap_err();
        assert!(err.to_string().starts_with("file: "), "{err}");
        assert!(resolve_type(Some("audio/ogg"), b"plain text").is_err());
        assert_eq!(
            resolve_type(Some("text/plain"), b"plain text").unwrap(),
            "text/plain"
        );
        assert_eq!(resolve_type(None, b"plain text").unwrap(), UNKNOWN_MIMETYPE);
        assert!(same_type("audio/webm", "video/webm"));
        assert!(same_type("image/jpg", "image/jpeg"));
        let dim = imagesize::blob_size(PNG).unwrap();
        assert_eq!((dim.width, dim.height), (3, 2));
    }

    #[test]
    fn names_and_types() {
        assert_eq!(clean_name(Some("../../etc/passwd")), "passwd");
        assert_eq!(clean_name(Some("C:\\a\\b.png")), "b.png");
        assert_eq!(clean_name(None), "file");
        assert_eq!(clean_name(Some("a\u{0}b")), "ab");
        assert_eq!(msgtype_of("audio/ogg"), "m.audio");
        assert_eq!(msgtype_of("application/pdf"), "m.file");
    }
}
