//! One part of a message on the IMAP server fetched alone and decoded as it arrives, and
//! which parts of a `BODYSTRUCTURE` are the files mail-parser lists ([`attachment_parts`],
//! the same rules). A part comes in pieces of [`CHUNK`] bytes, each decoded by
//! mail-parser's base64 and quoted-printable decoders into a [`Sink`]: memory for a
//! download, the sealed spool for a forward, a counter for the size of a large mail's file
//! (`outline`). Used by [`super::file_parts`] (downloads, forwards) and `outline`.

use std::io;

use mail_parser::decoders::base64::base64_decode;
use mail_parser::decoders::quoted_printable::quoted_printable_decode;

use super::spool::SpoolWriter;
use crate::clients::mail::imap::{self, ImapError, Part, PartKind};
use crate::error::{AppError, AppResult};
use crate::services::upstream::imap_error;

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
