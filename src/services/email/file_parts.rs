//! A message's files on the IMAP server, one part at a time: which parts of its
//! `BODYSTRUCTURE` are the files mail-parser listed when the message was cached
//! ([`attachment_parts`], the same rules), and one such part fetched alone in pieces of
//! [`CHUNK`] bytes and decoded as the pieces arrive (by mail-parser's base64 and
//! quoted-printable decoders) into a [`Sink`]: memory for a download, the sealed spool for
//! a forward. Neither downloads the message's text or its other parts.

use std::io;

use mail_parser::decoders::base64::base64_decode;
use mail_parser::decoders::quoted_printable::quoted_printable_decode;

use super::actions::{self, account_ctx, open_session};
use super::mailboxes;
use super::spool::SpoolWriter;
use super::sync::AccountCtx;
use super::threads::Message as Cached;
use super::AttachmentMeta;
use crate::clients::mail::imap::{self, ImapError, Part, PartKind};
use crate::error::{AppError, AppResult};
use crate::services::upstream::imap_error;
use crate::services::Context;

/// Bytes of a part asked for in one FETCH.
pub const CHUNK: u32 = 1024 * 1024;

/// Where a decoded file goes, piece by piece.
pub trait Sink {
    fn put(&mut self, bytes: &[u8]) -> io::Result<()>;
    /// Bytes put so far.
    fn size(&self) -> u64;
}

impl Sink for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.extend_from_slice(bytes);
        Ok(())
    }
    fn size(&self) -> u64 {
        self.len() as u64
    }
}

impl Sink for SpoolWriter {
    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        // A short write to local disk, inside the fetch loop (its callback is synchronous).
        self.write(bytes)
    }
    fn size(&self) -> u64 {
        SpoolWriter::size(self)
    }
}

/// How fetching one part ended (other than by an error of the server).
#[derive(Debug, PartialEq, Eq)]
pub enum Fetched {
    /// Decoded whole into the sink.
    Done,
    /// The server returned nothing for the message: it is gone.
    Gone,
    /// Its transfer encoding is unknown or does not decode.
    Undecodable,
    /// It decodes to more than the room given.
    TooLarge,
}

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

const UNDECODABLE: &str = "a part does not decode";
const TOO_LARGE: &str = "a part is larger than allowed";
const SINK_FAILED: &str = "a file could not be kept";

/// One part of message `uid` (selected), decoded into `sink`; at most `room` decoded bytes.
pub async fn fetch_decoded(
    s: &mut imap::Session,
    uid: u32,
    part: &Part,
    room: u64,
    sink: &mut impl Sink,
) -> AppResult<Fetched> {
    let Some(mut decoder) = Decoder::new(&part.encoding) else {
        return Ok(Fetched::Undecodable);
    };
    let mut out = Vec::new();
    // Encoded, a part is at most about 4/3 of its bytes plus line breaks.
    let max_encoded = room.saturating_mul(3) / 2 + 4096;
    let found = imap::fetch_part(s, uid, &part.section, CHUNK, max_encoded, |piece| {
        decoder
            .push(piece, &mut out)
            .ok_or_else(|| ImapError::Protocol(UNDECODABLE.into()))?;
        if sink.size() + out.len() as u64 > room {
            return Err(ImapError::Protocol(TOO_LARGE.into()));
        }
        sink.put(&out)
            .map_err(|e| ImapError::Protocol(format!("{SINK_FAILED}: {e}")))?;
        out.clear();
        Ok(())
    })
    .await;
    match found {
        Ok(true) => {
            if decoder.finish(&mut out).is_none() {
                return Ok(Fetched::Undecodable);
            }
            if sink.size() + out.len() as u64 > room {
                return Ok(Fetched::TooLarge);
            }
            sink.put(&out).map_err(AppError::internal)?;
            Ok(Fetched::Done)
        }
        Ok(false) => Ok(Fetched::Gone),
        Err(ImapError::Protocol(m)) if m == UNDECODABLE => Ok(Fetched::Undecodable),
        Err(ImapError::Protocol(m)) if m == TOO_LARGE => Ok(Fetched::TooLarge),
        Err(ImapError::Protocol(m)) if m.starts_with(SINK_FAILED) => Err(AppError::internal(m)),
        Err(e) => Err(imap_error(e)),
    }
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
#[path = "file_parts_tests.rs"]
mod tests;
