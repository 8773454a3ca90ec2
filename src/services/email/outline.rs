//! Caching a large message without fetching its files. A mail whose announced size is above
//! `[email] large_message_kb` is read as: its flags, size, header and `BODYSTRUCTURE` (one
//! FETCH), then the MIME header of every part, the body of every text part that is not a
//! file (its text or HTML, at most [`budget::partial_body`] each) and of every small file
//! (another FETCH). Those pieces, put back together in the message's own order and with its
//! own boundaries, are the message with the bodies of its large files left out; mail-parser
//! reads that as it reads a whole message, so the cached document (header, date, text,
//! snippet, the files' names and types) comes from the same parser by the same rules. Only
//! the sizes of the files left out come from elsewhere: the structure's encoded size, with
//! a base64 file's lines and padding read from its last bytes ([`base64_size`]), or (for
//! irregular base64 and quoted-printable) the part streamed through the decoder in pieces
//! and counted.
//!
//! Whenever the pieces do not read like the structure (no structure, a multipart without a
//! boundary, files mail-parser lists differently from [`attachment_parts`]), [`read`] says
//! so and the message is fetched whole as before.

use std::collections::BTreeSet;

use super::budget;
use super::ingest::{ingest, Incoming};
use super::parse::parse;
use super::part_decode::{attachment_parts, fetch_decoded, Fetched, Sink};
use super::{AccountCtx, SyncError};
use crate::clients::mail::imap::{self, Part, PartKind, Piece, Session};
use crate::config::EmailConfig;
use crate::services::Context;

/// A file part up to this many encoded bytes goes into the copy as it is (mail-parser then
/// measures it itself); a larger one is left out.
const SMALL_FILE: u64 = 16 * 1024;
/// Bytes read from the end of a large base64 file to see its line length and padding.
const TAIL: u32 = 512;
/// MIME headers of one message's parts, in all.
const HEADERS_BUDGET: u64 = 1024 * 1024;
/// Parts of one message read this way; a message with more is fetched whole.
const MAX_PARTS: usize = 500;

/// What becomes of one leaf part in the copy.
enum Fill {
    /// Its body as fetched: `(piece index, cut at a line end)`.
    Body(usize, bool),
    /// Left out: the file at `file` in mail-parser's list, its size found by [`Size`].
    LeftOut { file: usize, size: Size },
}

/// How the size of a file left out is known.
enum Size {
    /// The encoded size is the size (7bit, 8bit, binary, or an encoding mail-parser keeps
    /// as it is).
    Octets(u64),
    /// Base64: from the part's last bytes (piece index).
    Base64Tail(usize),
    /// Streamed through its decoder and counted.
    Count,
}

/// The pieces to fetch, and for every leaf part (by section) where its body comes from.
struct Plan {
    pieces: Vec<Piece>,
    mime: Vec<(Vec<u32>, usize)>,
    leaves: Vec<(Vec<u32>, Fill)>,
}

impl Plan {
    /// The body bytes its pieces may bring (MIME headers are counted apart).
    fn bytes(&self) -> u64 {
        self.pieces
            .iter()
            .map(|p| match p {
                Piece::Body { length, .. } => u64::from(*length),
                Piece::Mime(_) => 0,
            })
            .sum()
    }
    fn mime_of(&self, section: &[u32]) -> Option<usize> {
        self.mime
            .iter()
            .find(|(s, _)| s == section)
            .map(|(_, i)| *i)
    }
    fn fill_of(&self, section: &[u32]) -> Option<&Fill> {
        self.leaves
            .iter()
            .find(|(s, _)| s == section)
            .map(|(_, f)| f)
    }
}

fn plan(root: &Part, cfg: &EmailConfig) -> Option<Plan> {
    let files = attachment_parts(root);
    let mut p = Plan {
        pieces: Vec::new(),
        mime: Vec::new(),
        leaves: Vec::new(),
    };
    let text_room = budget::partial_body(cfg);
    let mut stack = vec![(root, true)];
    while let Some((part, is_root)) = stack.pop() {
        if p.mime.len() + p.leaves.len() > MAX_PARTS {
            return None;
        }
        if !is_root {
            p.mime.push((part.section.clone(), p.pieces.len()));
            p.pieces.push(Piece::Mime(part.section.clone()));
        }
        if part.kind == PartKind::Multipart {
            stack.extend(part.children.iter().rev().map(|c| (c, false)));
            continue;
        }
        let file = files.iter().position(|f| f.section == part.section);
        let fill = match file {
            Some(file) if part.octets > SMALL_FILE => left_out(part, file, &mut p.pieces),
            _ => {
                let room = if file.is_some() {
                    SMALL_FILE
                } else {
                    text_room
                };
                let length = part.octets.min(room) as u32;
                p.pieces.push(Piece::Body {
                    section: part.section.clone(),
                    offset: 0,
                    length,
                });
                Fill::Body(p.pieces.len() - 1, part.octets > room)
            }
        };
        p.leaves.push((part.section.clone(), fill));
    }
    Some(p)
}

fn left_out(part: &Part, file: usize, pieces: &mut Vec<Piece>) -> Fill {
    let size = match part.encoding.as_str() {
        "base64" => {
            pieces.push(Piece::Body {
                section: part.section.clone(),
                offset: part.octets.saturating_sub(u64::from(TAIL)),
                length: TAIL,
            });
            Size::Base64Tail(pieces.len() - 1)
        }
        "quoted-printable" => Size::Count,
        _ => Size::Octets(part.octets),
    };
    Fill::LeftOut { file, size }
}

/// The decoded size of a base64 part of `octets` encoded bytes whose last bytes are
/// `tail`, when its lines are regular: every line but the last as long as the one before
/// it, each ended by CRLF. `None` when the tail does not show that (the caller counts).
pub(super) fn base64_size(octets: u64, tail: &[u8]) -> Option<u64> {
    let ends_crlf = tail.ends_with(b"\r\n");
    let body = if ends_crlf {
        &tail[..tail.len() - 2]
    } else {
        tail
    };
    let mut lines = body.rsplit(|b| *b == b'\n');
    let last = lines.next()?;
    let full = lines.next()?.strip_suffix(b"\r")?;
    // The line before the full one must end inside the tail: the full line is whole.
    lines.next()?;
    let alphabet = |l: &[u8]| {
        l.iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
    };
    let (len, r) = (full.len() as u64, last.len() as u64);
    if len == 0 || r == 0 || r > len || !alphabet(full) || !alphabet(last) {
        return None;
    }
    let trailing = if ends_crlf { 2 } else { 0 };
    let before_last = octets.checked_sub(trailing + r)?;
    if before_last % (len + 2) != 0 {
        return None;
    }
    let chars = octets - trailing - 2 * (before_last / (len + 2));
    if chars % 4 != 0 {
        return None;
    }
    let pad = last.iter().rev().take_while(|b| **b == b'=').count() as u64;
    (pad <= 2).then(|| chars / 4 * 3 - pad)
}

/// The message put back together from its pieces, large files left out.
fn assemble(
    out: &mut Vec<u8>,
    part: &Part,
    header: &[u8],
    plan: &Plan,
    got: &[Vec<u8>],
) -> Option<()> {
    out.extend_from_slice(header);
    if part.kind == PartKind::Multipart {
        let boundary = part.param("boundary")?;
        for child in &part.children {
            out.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
            let h = got.get(plan.mime_of(&child.section)?)?;
            assemble(out, child, h, plan, got)?;
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
        return Some(());
    }
    if let Fill::Body(i, cut) = plan.fill_of(&part.section)? {
        let body = got.get(*i)?;
        // A body cut short ends at its last whole line, where its encoding can stop.
        let end = if *cut {
            body.iter().rposition(|b| *b == b'\n').map_or(0, |e| e + 1)
        } else {
            body.len()
        };
        out.extend_from_slice(&body[..end]);
    }
    Some(())
}

/// Counts what goes into it.
struct Counter(u64);

impl Sink for Counter {
    fn put(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.0 += bytes.len() as u64;
        Ok(())
    }
    fn size(&self) -> u64 {
        self.0
    }
}

/// The decoded size of each file left out, in mail-parser's order; `None` when one cannot
/// be known (the message is then fetched whole).
async fn sizes(
    s: &mut Session,
    cfg: &EmailConfig,
    (uid, root): (u32, &Part),
    plan: &Plan,
    got: &[Vec<u8>],
) -> Result<Option<Vec<(usize, u64)>>, SyncError> {
    let files = attachment_parts(root);
    let mut out = Vec::new();
    for (section, fill) in &plan.leaves {
        let Fill::LeftOut { file, size } = fill else {
            continue;
        };
        let Some(part) = files.get(*file).filter(|f| &f.section == section) else {
            return Ok(None);
        };
        let known = match size {
            Size::Octets(n) => Some(*n),
            Size::Base64Tail(i) => {
                base64_size(part.octets, got.get(*i).map_or(&[][..], Vec::as_slice))
            }
            Size::Count => None,
        };
        let n = match known {
            Some(n) => n,
            None => {
                let mut count = Counter(0);
                match fetch_decoded(s, uid, part, cfg.max_message_bytes(), &mut count).await? {
                    Fetched::Done => count.0,
                    _ => return Ok(None),
                }
            }
        };
        out.push((*file, n));
    }
    Ok(Some(out))
}

/// Message `uid` (selected) read from its structure, ready to cache; `None` when it is to
/// be fetched whole instead (logged, with the reason), or is gone.
pub(super) async fn read(
    s: &mut Session,
    cfg: &EmailConfig,
    uid: u32,
) -> Result<Option<Incoming>, SyncError> {
    let Some(o) = imap::outline(s, uid, HEADERS_BUDGET).await? else {
        return Ok(None);
    };
    let fall_back = |why: &str| -> Result<Option<Incoming>, SyncError> {
        tracing::info!(uid, size = o.size, "a large mail is fetched whole: {why}");
        Ok(None)
    };
    let Some(root) = o.structure.as_ref() else {
        return fall_back("the server sent no structure");
    };
    let Some(plan) = plan(root, cfg) else {
        return fall_back("too many parts");
    };
    let room = plan.bytes() + HEADERS_BUDGET;
    let Some(got) = imap::fetch_pieces(s, uid, &plan.pieces, room).await? else {
        return Ok(None);
    };
    let mut copy = Vec::new();
    if assemble(&mut copy, root, &o.header, &plan, &got).is_none() {
        return fall_back("its parts do not fit its structure");
    }
    let Some(mut parsed) = parse(&copy) else {
        return fall_back("its parts do not read as a message");
    };
    let files = attachment_parts(root);
    let listed = &parsed.body.attachments;
    let same = listed.len() == files.len()
        && listed
            .iter()
            .zip(&files)
            .all(|(a, f)| a.content_type.eq_ignore_ascii_case(&f.mimetype));
    if !same {
        return fall_back("its structure and its parts list different files");
    }
    let Some(sizes) = sizes(s, cfg, (uid, root), &plan, &got).await? else {
        return fall_back("the size of a file could not be read");
    };
    for (file, n) in sizes {
        parsed.body.attachments[file].size = n;
    }
    tracing::debug!(uid, size = o.size, "cached a large mail from its structure");
    Ok(Some(Incoming {
        uid,
        seen: o.seen,
        flagged: o.flagged,
        size: o.size,
        parsed,
    }))
}

/// Caches the messages of `large` (`(uid, announced size)`, each above `[email]
/// large_message_kb`) of the selected mailbox `(id, validity)` from their structure, one
/// at a time, adding the threads touched to `changed`; returns those to fetch whole
/// instead. A message whose reading failed on the connection (the session may be over) is
/// remembered, so that the next sync fetches it whole rather than fail on it again.
pub(super) async fn cache_large(
    state: &Context,
    ctx: &AccountCtx,
    s: &mut Session,
    (mailbox_id, validity): (&str, i64),
    large: &[(u32, u64)],
    changed: &mut BTreeSet<String>,
) -> Result<Vec<(u32, u64)>, SyncError> {
    let cfg = &state.config.email;
    let mut whole = Vec::new();
    for &(uid, size) in large {
        let at = (mailbox_id.to_owned(), validity, uid);
        if state.email.is_whole_only(&ctx.account_id, &at) {
            whole.push((uid, size));
            continue;
        }
        let incoming = match read(s, cfg, uid).await {
            Ok(Some(m)) => m,
            Ok(None) => {
                whole.push((uid, size));
                continue;
            }
            Err(e) => {
                tracing::info!(uid, size, "reading a large mail from its structure failed; it is fetched whole next time: {e}");
                state.email.mark_whole_only(&ctx.account_id, at);
                return Err(e);
            }
        };
        let (ctx2, mbid) = (ctx.clone(), mailbox_id.to_owned());
        let thread = state
            .db(move |c| {
                let tx = c.transaction()?;
                let t = ingest(&tx, &ctx2, &mbid, validity, incoming)?;
                tx.commit()?;
                Ok(t)
            })
            .await?;
        changed.insert(thread);
    }
    Ok(whole)
}

#[cfg(test)]
#[path = "outline_tests.rs"]
mod tests;
