//! A message read without its files: its flags, size, header and structure in one FETCH
//! ([`outline`]), then chosen pieces of its parts in another ([`fetch_pieces`]): the MIME
//! header of a part (`BODY.PEEK[<part>.MIME]`) or a range of its body
//! (`BODY.PEEK[<part>]<offset.length>`). Both responses are read by async-imap's parser;
//! which pieces to ask for is the caller's choice.

use async_imap::imap_proto::{MessageSection, SectionPath};

use super::messages::{flags_of, for_each_fetch};
use super::parts::{convert, Part};
use super::{ImapError, Result, Session};

/// What one FETCH says about a message before any of its body is read.
#[derive(Debug, Clone)]
pub struct Outline {
    pub uid: u32,
    pub seen: bool,
    pub flagged: bool,
    /// RFC822.SIZE.
    pub size: u64,
    /// The message's header, with the blank line that ends it.
    pub header: Vec<u8>,
    /// The structure; `None` when the server sent none, or one nested too deep to follow.
    pub structure: Option<Part>,
}

/// `UID FETCH <uid> (UID FLAGS RFC822.SIZE BODYSTRUCTURE BODY.PEEK[HEADER])`, at most
/// `budget` bytes of header; `None` when the server has no such message (any more).
pub async fn outline(s: &mut Session, uid: u32, budget: u64) -> Result<Option<Outline>> {
    let mut out = None;
    let query = "(UID FLAGS RFC822.SIZE BODYSTRUCTURE BODY.PEEK[HEADER])";
    for_each_fetch(s, &uid.to_string(), query, |f| {
        if f.uid != Some(uid) {
            return Ok(());
        }
        let header = f.header().unwrap_or_default();
        if header.len() as u64 > budget {
            return Err(ImapError::Protocol(format!(
                "the server sent a header of more than {budget} bytes"
            )));
        }
        let (seen, flagged) = flags_of(f);
        // A structure too deep to follow is no structure: the caller reads the message
        // another way, on this same session.
        let structure = f
            .bodystructure()
            .and_then(|b| convert(b, Vec::new(), 0).ok());
        out = Some(Outline {
            uid,
            seen,
            flagged,
            size: u64::from(f.size.unwrap_or(0)),
            header: header.to_vec(),
            structure,
        });
        Ok(())
    })
    .await?;
    Ok(out)
}

/// One piece of a part to fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// The MIME header of a part (`BODY.PEEK[<part>.MIME]`), blank line included.
    Mime(Vec<u32>),
    /// `length` bytes of a part's body from `offset`, as it is encoded.
    Body {
        section: Vec<u32>,
        offset: u64,
        length: u32,
    },
}

fn dotted(section: &[u32]) -> String {
    section
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(".")
}

impl Piece {
    fn query(&self) -> String {
        match self {
            Self::Mime(s) => format!("BODY.PEEK[{}.MIME]", dotted(s)),
            Self::Body {
                section,
                offset,
                length,
            } => format!("BODY.PEEK[{}]<{offset}.{length}>", dotted(section)),
        }
    }

    fn path(&self) -> SectionPath {
        match self {
            Self::Mime(s) => SectionPath::Part(s.clone(), Some(MessageSection::Mime)),
            Self::Body { section, .. } => SectionPath::Part(section.clone(), None),
        }
    }
}

/// Fetches `pieces` of message `uid` (selected) in one FETCH: each piece's bytes, in the
/// order asked (empty when the server sent nothing for it). At most `budget` bytes in all,
/// and no body range longer than asked; a server sending more is cut off with an error.
/// `None` when the server has no such message (any more). A section asked for twice must
/// not be: the response names a section, not the range.
pub async fn fetch_pieces(
    s: &mut Session,
    uid: u32,
    pieces: &[Piece],
    budget: u64,
) -> Result<Option<Vec<Vec<u8>>>> {
    if pieces.is_empty() {
        return Ok(Some(Vec::new()));
    }
    let query = format!(
        "(UID {})",
        pieces
            .iter()
            .map(Piece::query)
            .collect::<Vec<_>>()
            .join(" ")
    );
    let mut out = None;
    for_each_fetch(s, &uid.to_string(), &query, |f| {
        if f.uid != Some(uid) {
            return Ok(());
        }
        let mut total = 0u64;
        let mut got = Vec::with_capacity(pieces.len());
        for p in pieces {
            let data = f.section(&p.path()).unwrap_or_default();
            total += data.len() as u64;
            let over_range =
                matches!(p, Piece::Body { length, .. } if data.len() > *length as usize);
            if over_range || total > budget {
                return Err(ImapError::Protocol(
                    "the server sent more of a message's parts than was asked for".into(),
                ));
            }
            got.push(data.to_vec());
        }
        out = Some(got);
        Ok(())
    })
    .await?;
    Ok(out)
}
