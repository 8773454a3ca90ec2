//! The files of a forwarded message (`includeAttachments`), taken from the IMAP server part
//! by part: the message's `BODYSTRUCTURE` says which parts are its files, each of them is
//! fetched alone in pieces of [`CHUNK`] bytes and decoded as the pieces arrive (by
//! mail-parser's base64 and quoted-printable decoders, the ones that read the message when
//! it was cached). So a forward never downloads the message's text or other parts, and a
//! large file sits in memory once, decoded, never next to its encoded form.
//!
//! The cached message lists its files as mail-parser found them; the parts picked from the
//! structure follow the same rules and are checked against that list (count and types).
//! A message whose structure reads differently (a malformed part the parser repaired) is
//! taken whole instead, as before parts were fetched alone (bounded by `[email]
//! max_message_mb`), so the files are the same either way.

use mail_parser::decoders::base64::base64_decode;
use mail_parser::decoders::quoted_printable::quoted_printable_decode;

use super::actions::{self, account_ctx, open_session};
use super::mailboxes;
use super::threads::Message as Cached;
use super::uploads::File;
use super::AttachmentMeta;
use crate::clients::mail::imap::{self, ImapError, Part, PartKind};
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::upstream::imap_error;
use crate::services::Context;

/// Bytes of a part asked for in one FETCH.
pub const CHUNK: u32 = 1024 * 1024;

/// The files of `o`, in the order the cached message lists them, with its names and types.
pub(super) async fn original_files(state: &Context, o: &Cached) -> AppResult<Vec<File>> {
    if o.body.attachments.is_empty() {
        return Ok(Vec::new());
    }
    actions::refuse_truncated(state, o)?;
    let ctx = account_ctx(state, &o.account_id).await?;
    let (mid, key) = (o.id.clone(), ctx.dek.clone());
    let locations = state
        .db(move |c| mailboxes::locations(c, &key, &[mid]))
        .await?;
    let (_, mailbox, uid) = locations.into_iter().next().ok_or_else(gone)?;
    let uid = u32::try_from(uid).map_err(|_| gone())?;
    let (mut s, _) = open_session(state, &ctx).await?;
    let fetched = by_part(state, &mut s, &mailbox, uid, &o.body.attachments).await;
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

/// The files fetched part by part; `None` when the structure does not match the cached list.
async fn by_part(
    state: &Context,
    s: &mut imap::Session,
    mailbox: &str,
    uid: u32,
    metas: &[AttachmentMeta],
) -> AppResult<Option<Vec<File>>> {
    imap::select(s, mailbox, false).await.map_err(imap_error)?;
    let root = imap::structure(s, uid)
        .await
        .map_err(imap_error)?
        .ok_or_else(gone)?;
    let parts = attachment_parts(&root);
    if !matches_cached(&parts, metas) {
        return Ok(None);
    }
    let cap = state.config.email.max_attachments_bytes();
    let mut total = 0u64;
    let mut files = Vec::with_capacity(parts.len());
    for (i, (part, meta)) in parts.iter().zip(metas).enumerate() {
        let Some(bytes) = fetch_decoded(s, uid, part, cap.saturating_sub(total)).await? else {
            return Ok(None);
        };
        total += bytes.len() as u64;
        files.push(File {
            name: meta
                .filename
                .clone()
                .unwrap_or_else(|| format!("attachment-{i}")),
            mimetype: mimetype(part, meta),
            bytes,
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

fn matches_cached(parts: &[&Part], metas: &[AttachmentMeta]) -> bool {
    parts.len() == metas.len()
        && parts
            .iter()
            .zip(metas)
            .all(|(p, m)| p.mimetype.eq_ignore_ascii_case(&m.content_type))
}

/// One part, decoded; at most `room` decoded bytes (413 beyond). `None` when its encoding
/// is unknown or does not decode (the whole message is read instead).
async fn fetch_decoded(
    s: &mut imap::Session,
    uid: u32,
    part: &Part,
    room: u64,
) -> AppResult<Option<Vec<u8>>> {
    let Some(mut decoder) = Decoder::new(&part.encoding) else {
        return Ok(None);
    };
    let mut out = Vec::with_capacity(part.octets.min(room) as usize);
    // Encoded, a part is at most about 4/3 of its bytes plus line breaks.
    let max_encoded = room.saturating_mul(3) / 2 + 4096;
    let found = imap::fetch_part(s, uid, &part.section, CHUNK, max_encoded, |piece| {
        decoder
            .push(piece, &mut out)
            .ok_or_else(|| ImapError::Protocol(UNDECODABLE.into()))?;
        if out.len() as u64 > room {
            return Err(ImapError::Protocol(TOO_LARGE.into()));
        }
        Ok(())
    })
    .await;
    match found {
        Ok(true) => Ok(decoder.finish(&mut out).map(|()| out)),
        Ok(false) => Err(gone()),
        Err(ImapError::Protocol(m)) if m == UNDECODABLE => Ok(None),
        Err(ImapError::Protocol(m)) if m == TOO_LARGE => Err(AppError::TooLarge {
            message: "the forwarded message's files add up to more than [email] \
                      max_attachments_mb"
                .into(),
        }),
        Err(e) => Err(imap_error(e)),
    }
}

const UNDECODABLE: &str = "a part does not decode";
const TOO_LARGE: &str = "the forwarded files are larger than allowed";

/// As before parts were fetched alone: the whole message, its files by mail-parser.
async fn whole(state: &Context, o: &Cached) -> AppResult<Vec<File>> {
    let raw = actions::fetch_raw(state, o).await?;
    Ok(super::parse::attachments(&raw)
        .into_iter()
        .enumerate()
        .map(|(i, (ctype, name, bytes))| File {
            name: name.unwrap_or_else(|| format!("attachment-{i}")),
            mimetype: ctype,
            bytes,
        })
        .collect())
}

/// A transfer decoder fed in pieces: each piece is cut where decoding can stop (a line end
/// for quoted-printable, a group of four for base64) and the rest kept for the next one,
/// so the pieces decode to exactly what the whole part decodes to.
enum Decoder {
    Identity,
    Base64(Vec<u8>),
    QuotedPrintable(Vec<u8>),
}

impl Decoder {
    fn new(encoding: &str) -> Option<Self> {
        match encoding {
            "7bit" | "8bit" | "binary" => Some(Self::Identity),
            "base64" => Some(Self::Base64(Vec::new())),
            "quoted-printable" => Some(Self::QuotedPrintable(Vec::new())),
            _ => None,
        }
    }

    fn push(&mut self, piece: &[u8], out: &mut Vec<u8>) -> Option<()> {
        match self {
            Self::Identity => out.extend_from_slice(piece),
            Self::Base64(rest) => {
                rest.extend(piece.iter().filter(|b| !b.is_ascii_whitespace()));
                let whole = rest.len() / 4 * 4;
                out.extend(base64_decode(&rest[..whole])?);
                rest.drain(..whole);
            }
            Self::QuotedPrintable(rest) => {
                rest.extend_from_slice(piece);
                if let Some(end) = rest.iter().rposition(|b| *b == b'\n') {
                    out.extend(quoted_printable_decode(&rest[..=end])?);
                    rest.drain(..=end);
                }
            }
        }
        Some(())
    }

    fn finish(self, out: &mut Vec<u8>) -> Option<()> {
        match self {
            Self::Identity => {}
            Self::Base64(rest) => out.extend(base64_decode(&rest)?),
            Self::QuotedPrintable(rest) => out.extend(quoted_printable_decode(&rest)?),
        }
        Some(())
    }
}

/// Where a part sits, for the rules below.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Parent {
    Message,
    Alternative,
    Related,
    Other,
}

/// Which bodies are still wanted at a level (mail-parser's `need_html_body`/`need_text_body`).
#[derive(Clone, Copy)]
struct Need {
    html: bool,
    text: bool,
}

/// The parts mail-parser lists as a message's attachments, in the same order, by its
/// rules: a non-text part (images too, even shown inline) and an enclosed message always;
/// a text part unless it is the message's text or HTML body (inline, not named in a
/// related group, and still wanted as a body at its level); text of any other subtype
/// always.
pub fn attachment_parts(root: &Part) -> Vec<&Part> {
    let mut out = Vec::new();
    let mut need = Need {
        html: true,
        text: true,
    };
    walk(root, Parent::Message, 1, false, &mut need, &mut out);
    out
}

fn walk<'a>(
    p: &'a Part,
    parent: Parent,
    index: usize,
    in_alternative: bool,
    need: &mut Need,
    out: &mut Vec<&'a Part>,
) {
    match p.kind {
        PartKind::Multipart => {
            let me = match p.mimetype.as_str() {
                "multipart/alternative" => Parent::Alternative,
                "multipart/related" => Parent::Related,
                _ => Parent::Other,
            };
            // Each level starts from its parent's wishes; what it takes stays at its level.
            let mut inner = *need;
            let in_alt = in_alternative || me == Parent::Alternative;
            for (i, c) in p.children.iter().enumerate() {
                walk(c, me, i + 1, in_alt, &mut inner, out);
            }
        }
        PartKind::Message | PartKind::Other => out.push(p),
        PartKind::Text => {
            if !is_body_text(p, parent, index, in_alternative, need) {
                out.push(p);
            }
        }
    }
}

fn is_body_text(p: &Part, parent: Parent, index: usize, in_alt: bool, need: &mut Need) -> bool {
    let html = p.mimetype == "text/html";
    if !html && p.mimetype != "text/plain" {
        return false;
    }
    if parent == Parent::Alternative {
        return true;
    }
    let inline = p.disposition.as_deref() != Some("attachment")
        && (index == 1 || parent != Parent::Related && p.param("name").is_none());
    if !inline {
        return false;
    }
    if in_alt && (need.text || need.html) {
        if html {
            need.text = false;
        } else {
            need.html = false;
        }
    }
    if html {
        need.html
    } else {
        need.text
    }
}

#[cfg(test)]
#[path = "forward_tests.rs"]
mod tests;
